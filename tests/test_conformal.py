"""Split-conformal intervals (llmulator.conformal): the factors are the held-out quantiles of label /
prediction, and a learned baseline reports the interval its checkpoint's factors give, in distribution only."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from llmulator import conformal


def test_factors_are_the_held_out_quantiles_of_label_over_prediction():
    r = np.log(np.linspace(0.5, 2.0, 101))  # label / prediction from 0.5 to 2, evenly
    (lo, hi), = conformal.factors({"cycles": r.tolist()}).values()
    assert lo == pytest.approx(0.5 + 0.05 * 1.5) and hi == pytest.approx(0.5 + 0.95 * 1.5)


def test_an_exact_metric_keeps_a_one_percent_interval_and_few_rows_give_none():
    got = conformal.factors({"area_um2": [0.0] * 40, "cycles": [0.1] * (conformal.MIN_ROWS - 1)})
    assert got == {"area_um2": [0.99, 1.01]}
    assert conformal.interval({"area_um2": 200.0, "cycles": 5.0}, {"factors": got}) == {"area_um2": (198.0, 202.0)}


def test_a_baseline_reports_its_checkpoints_interval_only_in_distribution(tmp_path):
    pytest.importorskip("torch")
    from llmulator_plugins.baselines.estimator import ESTIMATORS
    from llmulator_plugins.baselines.train import train
    from llmulator_plugins.synth import driver
    data = tmp_path / "data"
    driver.run([2], 16, data, seed=11, shard_size=8, progress=False)
    out = tmp_path / "m"
    train("tensetmlp", data, out, epochs=2, batch=4, progress=False)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["interval"]["split"] == "val"  # written by training (16 rows: too few val rows for factors)
    cfg["interval"] = {"factors": {"cycles": [0.8, 1.25]}, "split": "val"}
    (out / "config.json").write_text(json.dumps(cfg))
    from test_baselines import _gemm
    (e,) = next(c for c in ESTIMATORS if c.name == "tensetmlp")(out).estimate([_gemm()])
    if e.confidence is None:  # in distribution: the prediction times the factors
        assert e.interval == {"cycles": pytest.approx((0.8 * e.metrics["cycles"], 1.25 * e.metrics["cycles"]))}
    else:  # flagged out of distribution: val's residuals do not describe it; only a metric more than 4x from
        # the analytical count gets an interval, one that spans both (baselines 0.5, llmulator.prior_check)
        assert all(c <= 0.2 for c in e.confidence.values())
        for m, (lo, hi) in (e.interval or {}).items():
            assert lo <= e.metrics[m] <= hi and any(n.startswith(m) and "over 4x apart" in n for n in e.notes)
    assert math.isfinite(e.metrics["cycles"])
