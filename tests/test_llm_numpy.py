"""The llm estimator's NumPy backend (lean_numpy.py) against the torch lean forward (lean.py), shipped checkpoint.

* logits of every pass of the lean decoding (the per-prompt prefills, the batched draft passes over
  left-padded caches) equal torch's to float32 rounding;
* the decoded estimates are the same on a spread of library designs: identical metrics and intervals,
  confidences equal up to float rounding; also where the draft is rejected part way and where there is none;
* the estimator takes the NumPy backend by default on a float32 machine, and the estimate command with every
  bundled estimator imports neither torch nor transformers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")

from llmulator import library  # noqa: E402
from llmulator.design import load_design  # noqa: E402
from llmulator_plugins.llm import lean_numpy  # noqa: E402
from llmulator_plugins.llm.estimator import DEFAULT_MODEL, LLMEstimator  # noqa: E402
from llmulator_plugins.llm.lean import LeanTokenizer  # noqa: E402
from llmulator_plugins.llm.text import METRICS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CONF_TOL = 1e-6  # float rounding of a probability
LOGIT_TOL = 5e-4  # float32 rounding of logits of magnitude ~10-20, summed over 3 layers (seen: 5e-5; 2.1e-4 on
# one pass over the library prompts at analytical 0.68, whose priors changed the text; a wrong kernel is off by >1e-2)


def _spread(prompts, n):
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    return [prompts[order[round(k * (len(order) - 1) / (n - 1))]] for k in range(n)]


@pytest.fixture(scope="module")
def prompts():
    designs = []
    for m in library.entries("mapping"):
        if "architecture" in m and "workload" in m:
            designs.append((m["architecture"], m["workload"], m["path"]))
    picked = [designs[round(k * (len(designs) - 1) / 11)] for k in range(12)]
    ds = [load_design(library.resolve("architecture", a), library.resolve("workload", w), p) for a, w, p in picked]
    est = LLMEstimator(DEFAULT_MODEL)
    est.meta = est._meta()
    return est.prompts(ds)


@pytest.fixture(scope="module")
def tok():
    return LeanTokenizer(DEFAULT_MODEL)


@pytest.fixture(scope="module")
def np_model():
    return lean_numpy.NumpyLlama(DEFAULT_MODEL)


@pytest.fixture(scope="module")
def torch_model():
    pytest.importorskip("torch")
    from llmulator_plugins.llm import lean
    return lean.LeanLlama(DEFAULT_MODEL)


@pytest.fixture
def one_thread():
    torch = pytest.importorskip("torch")
    from llmulator.npinfer import blas_threads
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    with blas_threads(1):
        yield
    torch.set_num_threads(before)


class _Recorder:
    """Delegates to a model and keeps the logits of every forward pass (as a float32 NumPy array)."""

    def __init__(self, model):
        self.model, self.logits = model, []

    def __getattr__(self, name):
        return getattr(self.model, name)

    def __call__(self, *a, **kw):
        out = self.model(*a, **kw)
        lg = out.logits
        self.logits.append(np.array(lg.float().numpy() if hasattr(lg, "numpy") else lg, dtype=np.float32))
        return out


def _same(ref: list[dict], got: list[dict], tol: float = CONF_TOL) -> None:
    for r, g in zip(ref, got, strict=True):
        assert g["metrics"] == r["metrics"]
        assert g["interval"] == r["interval"]
        for m in METRICS:
            assert g["confidence"][m] == pytest.approx(r["confidence"][m], abs=tol)


def _torch_decode(model, tok, group):
    import torch
    from llmulator_plugins.llm import decode
    with torch.inference_mode():
        return decode.decode_lean(model, tok, group)


def test_numpy_logits_match_torch_at_every_pass(prompts, tok, np_model, torch_model, one_thread):
    group = _spread(prompts, 4)  # left-padded caches of different lengths
    a, b = _Recorder(torch_model), _Recorder(np_model)
    ra = _torch_decode(a, tok, group)
    rb = lean_numpy.decode_numpy(b, tok, group)
    assert len(a.logits) == len(b.logits) >= len(group) + 1  # the prefills and the same draft passes
    for i, (x, y) in enumerate(zip(a.logits, b.logits, strict=True)):
        assert x.shape == y.shape, i
        assert float(np.abs(x - y).max()) <= LOGIT_TOL, f"pass {i}: max |diff| {float(np.abs(x - y).max())}"
    _same(ra, rb)


def test_a_full_prefill_matches_torch(prompts, tok, np_model, torch_model, one_thread):
    """Every position's logits (no last-position shortcut, no cache given), one prompt."""
    import torch
    ids = tok([prompts[0]])["input_ids"][0]
    n = len(ids)
    with torch.inference_mode():
        ref = torch_model(torch.tensor([ids]), torch.ones(1, n, dtype=torch.long), torch.arange(n)[None]).logits
    got = np_model(np.asarray([ids]), np.ones((1, n)), np.arange(n)[None]).logits
    assert got.shape == tuple(ref.shape) and got.dtype == np.float32
    assert float(np.abs(ref.numpy() - got).max()) <= LOGIT_TOL


def test_numpy_decoding_gives_the_torch_digits_on_library_designs(prompts, tok, np_model, torch_model, one_thread):
    _same(_torch_decode(torch_model, tok, prompts), lean_numpy.decode_numpy(np_model, tok, prompts))
    group = _spread(prompts, 3)
    _same(_torch_decode(torch_model, tok, group), [lean_numpy.decode_numpy(np_model, tok, [p])[0] for p in group])


def _with_prior(prompt: str, metric: str, symbols: str) -> str:
    return re.sub(rf"^static {metric} .*$", f"static {metric} {symbols}", prompt, count=1, flags=re.M)


def test_a_wrong_draft_and_no_draft_give_the_torch_digits(prompts, tok, np_model, torch_model, one_thread):
    base = _spread(prompts, 3)
    wrong = [_with_prior(base[0], "cycles", "+ 0 5 9 9 9"), _with_prior(base[1], "energy_pj", "- 0 2 1 0 0"),
             _with_prior(_with_prior(base[2], "area_um2", "+ 0 9 1 1 1"), "cycles", "+ 0 1 1 0 0")]
    none = [re.sub(r"^static .*\n", "", p, flags=re.M) for p in base[:2]]
    for group in (wrong, none, [wrong[0], none[0]]):
        _same(_torch_decode(torch_model, tok, group), lean_numpy.decode_numpy(np_model, tok, group))


def test_predict_and_the_estimator_take_the_numpy_model(monkeypatch, prompts, tok, np_model):
    from llmulator_plugins.llm import codec, interval, residual
    from llmulator_plugins.llm import estimator as est_mod
    from llmulator_plugins.llm.decode import prior_draft
    from llmulator_plugins.llm.train import predict
    meta = LLMEstimator(DEFAULT_MODEL)._meta()
    # a ratio checkpoint's digits multiply the prior (here the prompt's own three-digit copy of it)
    priors = [{m: codec.decode(t) for m, t in prior_draft(p).items()} for p in prompts[:2]]
    raw = lean_numpy.decode_numpy(np_model, tok, prompts[:2], draft=residual.ratio_draft)
    want = [interval.apply(residual.from_target(r, q, residual.target_of(meta)), meta.get("interval"))
            for r, q in zip(raw, priors, strict=True)]  # the checkpoint's calibrated interval (interval.py)
    got = predict(np_model, tok, prompts[:2], meta, priors=priors)
    # the same digits and intervals; confidences to float rounding (a second pass over a prompt takes its prefix
    # from the model's prefix cache, and BLAS sums the cached and fresh parts in another order: 3e-8 apart)
    assert [(g["metrics"], g["interval"]) for g in got] == [(w["metrics"], w["interval"]) for w in want]
    for g, w in zip(got, want, strict=True):
        assert g["confidence"] == pytest.approx(w["confidence"], abs=1e-6)
    monkeypatch.delenv("LLMULATOR_LLM_BACKEND", raising=False)
    monkeypatch.setattr(est_mod, "inference_dtype", lambda: "float32")
    e = LLMEstimator()
    assert e._backend() == "numpy" and e.available() is None
    model, _ = e.load()
    assert getattr(model, "numpy", False) and model is LLMEstimator().load()[0]  # loaded once per process
    monkeypatch.setattr(est_mod, "inference_dtype", lambda: "bfloat16")  # NumPy has no bfloat16 products
    assert LLMEstimator()._backend() == "lean"
    monkeypatch.setenv("LLMULATOR_LLM_BACKEND", "numpy")
    assert LLMEstimator()._backend() == "numpy"


def test_estimate_with_every_estimator_imports_no_torch():
    code = ("import sys\n"
            "from llmulator.cli import main\n"
            "rc = main(['estimate', 'systolic-16x16', 'gemm', 'gemm-ws-16x16', '--json'])\n"
            "assert rc == 0, rc\n"
            "bad = [m for m in ('torch', 'transformers') if m in sys.modules]\n"
            "assert not bad, bad\n"
            "print('clean')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("LLMULATOR_LLM_BACKEND", "LLMULATOR_BASELINES_BACKEND",
                                                            "LLMULATOR_LLM_DTYPE")}
    env["LLMULATOR_LLM_DTYPE"] = "float32"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("clean")
    assert '"estimator": "llm"' in r.stdout and '"estimator": "gnn"' in r.stdout
