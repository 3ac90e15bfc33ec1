"""The baselines' NumPy forward (numpy_models.py) against their torch modules (models.py), shipped checkpoints.

The network outputs of a batch of library designs agree to float32 rounding, and the estimates (metrics,
confidences, notes) are the same; the estimator runs NumPy by default.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("safetensors")

from llmulator import library  # noqa: E402
from llmulator.design import load_design  # noqa: E402
from llmulator_plugins.baselines.estimator import ESTIMATORS  # noqa: E402

NAMES = [cls.name for cls in ESTIMATORS]


@pytest.fixture(scope="module")
def designs():
    found = [(m["architecture"], m["workload"], m["path"]) for m in library.entries("mapping")
             if "architecture" in m and "workload" in m]
    picked = [found[round(k * (len(found) - 1) / 15)] for k in range(16)]
    return [load_design(library.resolve("architecture", a), library.resolve("workload", w), p) for a, w, p in picked]


def _pair(name: str):
    cls = next(c for c in ESTIMATORS if c.name == name)
    a, b = cls(), cls()
    a.backend, b.backend = "numpy", "torch"
    return a, b


@pytest.mark.parametrize("name", NAMES)
def test_numpy_forward_matches_torch(name, designs):
    pytest.importorskip("torch")
    from llmulator_plugins.baselines.data import DIMS, FEATURISERS, pack
    a, b = _pair(name)
    packed = pack([FEATURISERS[name](d) for d in designs], DIMS[name])
    got, ref = a._forward(a.load(), packed), b._forward(b.load(), packed)
    assert got.shape == ref.shape == (len(designs), 4) and got.dtype == np.float32
    assert float(np.abs(got - ref).max()) <= 1e-4 * max(1.0, float(np.abs(ref).max()))


@pytest.mark.parametrize("name", NAMES)
def test_numpy_estimates_are_torch_estimates(name, designs):
    pytest.importorskip("torch")
    a, b = _pair(name)
    for x, y in zip(a.estimate(designs), b.estimate(designs), strict=True):
        assert x.metrics == pytest.approx(y.metrics, rel=1e-5)
        assert (x.confidence is None) == (y.confidence is None)
        if x.confidence is not None:
            assert x.confidence == pytest.approx(y.confidence, abs=1e-6)
        assert x.notes == y.notes


def test_the_default_backend_is_numpy(monkeypatch):
    monkeypatch.delenv("LLMULATOR_BASELINES_BACKEND", raising=False)
    est = ESTIMATORS[0]()
    assert est.available() is None
    assert getattr(est.load(), "numpy", False)
    monkeypatch.setenv("LLMULATOR_BASELINES_BACKEND", "torch")
    assert ESTIMATORS[0]()._backend() == "torch"
