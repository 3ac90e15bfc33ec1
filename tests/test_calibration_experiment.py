"""The calibration experiment (benchmarks/calibration_experiment.py) fits on TRAIN designs and measures on others:
the train and test designs of an application are disjoint, the context is fed only train designs, and the test
error is the fitted context's on the test designs. ``scale`` calibrator on the analytical estimator: no torch."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import pytest
from llmulator import plugins

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def ce():
    spec = importlib.util.spec_from_file_location("calibration_experiment",
                                                  ROOT / "benchmarks" / "calibration_experiment.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(spec.name, None)


def test_the_grid_splits_into_disjoint_train_and_test_designs(ce, tmp_path):
    # spmv-csr has one hls-fpga mapping in the library: the plain one is derived (no loop or partition pragmas)
    app = ce.build_app("spmv-csr", "skewed", ("spmv-csr-hls-fpga", None), tmp_path)
    assert [c.size for c in app.train + app.test if c.mapping_index == 0] == ["mini", "default", "small", "medium"]
    plain = next(c.design for c in app.test if c.mapping_index == 1)
    assert plain.mapping.name == "spmv-csr-plain" and not plain.mapping.loops and not plain.mapping.partition
    assert {c.label for c in app.train} == {"mini/spmv-csr-hls-fpga", "default/spmv-csr-hls-fpga"}
    names = [c.design.name for c in app.train + app.test]
    assert len(set(names)) == len(names) == 8  # 4 sizes x 2 mappings, each design in exactly one set
    assert {c.design.name for c in app.train}.isdisjoint(c.design.name for c in app.test)
    assert all(c.design.variant is None for c in app.train + app.test)  # the estimator is not told the variant
    assert {c.novelty for c in app.test} == {"mapping", "size", "size+mapping"}
    # sizes with the same parameters are one size (topk's `small` is its default)
    topk = ce.build_app("topk", "ascending", ("topk-opt", None), tmp_path)
    assert sorted({c.size for c in topk.train + topk.test}) == ["default", "medium", "mini"]
    with pytest.raises(ValueError):  # a split that leaves no test design
        ce.build_app("topk", "ascending", ("topk-opt", None), tmp_path, train_sizes=3, train_mappings=2)


def test_the_scale_test_error_is_measured_on_designs_not_used_for_fitting(ce, tmp_path, monkeypatch):
    monkeypatch.setenv("LLMULATOR_HOME", str(tmp_path / "home"))
    from llmulator_plugins.calibrate import store
    app = ce.build_app("rle-decode", "long-runs", ("rle-decode-opt", None), tmp_path, presets=["mini", None])
    train, test = {c.design.name for c in app.train}, {c.design.name for c in app.test}
    assert len(train) == 1 and len(test) == 3 and train.isdisjoint(test)
    est = plugins.get("estimators", "analytical")
    prof = ce.CachedProfiler(plugins.get("profilers", "hlsim"))
    args = argparse.Namespace(rounds=2, test_seed=1000, tol=0.01, replay=8, steps=1, lr=5e-3, threads=1)
    res = ce.run_app(app, ["scale"], est, prof, args, log=lambda s: None)
    info = res["calibrators"]["scale"]
    # the context was fed, and its calibrations profiled, train designs only
    assert set(info["fitted"]) == train and set(info["buffer_designs"]) == train
    fitted = {name for phase, name in prof.log if phase.startswith("fit:")}
    assert fitted == train
    assert info["updates"] >= 1
    # the test error is the fitted factor's on the test designs, against their profiles on the test seed
    assert set(info["test"]) == {c.label for c in app.test}
    factor = store.read_context(info["context"])["scale"]["cycles"]
    assert factor != pytest.approx(1.0, abs=0.05)  # long runs: the static estimate is biased, the factor moves
    for c in app.test:
        truth = prof.base.profile(c.design, ce.inputs_of(c, "long-runs", 1000)).metrics["cycles"]
        pred = est.estimate([c.design])[0].metrics["cycles"]
        assert info["test"][c.label] == pytest.approx(abs(factor * pred - truth) / truth * 100, abs=1e-3)
        assert next(t for t in res["test"] if t["label"] == c.label)["static"] == \
            pytest.approx(abs(pred - truth) / truth * 100, abs=1e-3)
    text = ce.summary({"calibrators": ["scale"], "results": [res], "model": "analytical", "rounds": 2, "replay": 8,
                       "tol": 0.01, "test_seed": 1000, "steps": 1, "lr": 5e-3, "machine": "test", "threads": 1})
    assert "| rle-decode:long-runs | mini/rle-decode-opt | 3 |" in text
