"""The llm's calibrated 90 % interval (plugins/llm/interval.py): split-conformal factors, and the estimator
reading them from a checkpoint."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from llmulator_plugins.llm.interval import MIN_ROWS, apply, calibrate


def _rows(ratios):
    preds = [{"metrics": {"cycles": 100.0, "energy_pj": 10.0}} for _ in ratios]
    truths = [{"cycles": 100.0 * r, "energy_pj": 10.0, "power_mw": 1.0, "area_um2": 1.0} for r in ratios]
    return preds, truths


def test_the_factors_are_the_5th_and_95th_percentiles_of_label_over_prediction():
    ratios = np.exp(np.linspace(np.log(0.8), np.log(1.25), 201))
    cal = calibrate(*_rows(ratios))
    lo, hi = cal["factors"]["cycles"]
    assert lo == pytest.approx(np.exp(np.quantile(np.log(ratios), 0.05)))
    assert hi == pytest.approx(np.exp(np.quantile(np.log(ratios), 0.95)))
    assert cal["factors"]["energy_pj"] == [0.99, 1.01]  # exact labels: the +-1 % floor
    got = apply({"metrics": {"cycles": 50.0}, "interval": {"cycles": (50.0, 100.0)}}, cal)
    assert got["interval"]["cycles"] == pytest.approx((50.0 * lo, 50.0 * hi))
    # the labels below the prediction are covered: the digits' [v, 2v] could not cover any of them
    inside = [50.0 * lo <= 50.0 * r <= 50.0 * hi for r in ratios]
    assert 0.88 <= np.mean(inside) <= 0.92


def test_too_few_rows_keep_the_digits_interval():
    cal = calibrate(*_rows([0.9, 1.1] * ((MIN_ROWS - 1) // 2)))
    assert cal["factors"] == {}
    p = {"metrics": {"cycles": 5.0}, "interval": {"cycles": (5.0, 10.0)}}
    assert apply(p, cal) == p


def test_the_estimator_reports_the_checkpoint_s_calibrated_interval(tmp_path):
    from llmulator.library import resolve
    from llmulator_plugins.llm.estimator import LLMEstimator
    from llmulator_plugins.llm.residual import PRIOR_NOTES
    from test_analytical_agreement import named
    src = LLMEstimator().path
    ckpt = tmp_path / "model"
    shutil.copytree(src, ckpt)
    meta = json.loads((ckpt / "llmulator.json").read_text())
    meta["interval"] = {"factors": {"cycles": [0.5, 3.0]}, "rows": 100, "split": "val"}
    (ckpt / "llmulator.json").write_text(json.dumps(meta))
    assert resolve("mapping", "bfs-plain")
    d = named("hls-fpga", "bfs", "bfs-plain")
    e = LLMEstimator(ckpt).estimate([d])[0]
    assert not set(PRIOR_NOTES.values()) & set(e.notes)  # the model ran, not the prior
    v = e.metrics["cycles"]
    assert e.interval["cycles"] == pytest.approx((0.5 * v, 3.0 * v))
