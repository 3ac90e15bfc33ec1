"""The llm estimator's lean path (lean.py, decode.decode_lean) against transformers, on the shipped checkpoint.

* the hand-written forward gives logits *identical* (bit for bit) to transformers' LlamaForCausalLM, at every
  pass of the reference decoding (prefill and cached steps, one prompt and a left-padded batch, float32 and
  bfloat16), and the lean tokenizer gives the same ids;
* the lean decoding (per-prompt prefill, the prior's digits verified as a draft) gives the same digits as the
  reference decoding with transformers on the library designs: identical metrics and intervals, confidences
  equal up to float rounding (a batch of 16 and a batch of 1 already differ that much in the reference);
* also where the draft is wrong (a prior that is off) and where there is none (one digit per pass);
* the estimate command never imports transformers, loads the model once per process, and the analytical
  estimator's memo hands out copies.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("safetensors")

import torch  # noqa: E402
from llmulator import library  # noqa: E402
from llmulator.design import load_design  # noqa: E402
from llmulator_plugins.llm import decode, lean  # noqa: E402
from llmulator_plugins.llm.estimator import DEFAULT_MODEL, LLMEstimator  # noqa: E402
from llmulator_plugins.llm.text import METRICS, load_tokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CONF_TOL = 1e-6  # float rounding of a probability (the reference differs by 3e-7 between batch sizes)


def _library_designs():
    out = []
    for m in library.entries("mapping"):
        if "architecture" in m and "workload" in m:
            out.append(load_design(library.resolve("architecture", m["architecture"]),
                                   library.resolve("workload", m["workload"]), m["path"]))
    return out


@pytest.fixture(scope="module")
def designs():
    return _library_designs()


@pytest.fixture(scope="module")
def prompts(designs):
    est = LLMEstimator(DEFAULT_MODEL)
    est.meta = est._meta()
    return est.prompts(designs)


@pytest.fixture(scope="module")
def hf_model():
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(DEFAULT_MODEL).eval()


@pytest.fixture(scope="module")
def lean_model():
    return lean.LeanLlama(DEFAULT_MODEL)


@pytest.fixture(scope="module")
def toks():
    return load_tokenizer(DEFAULT_MODEL), lean.LeanTokenizer(DEFAULT_MODEL)


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


class _Recorder:
    """A model wrapper that keeps the logits of every forward pass."""

    def __init__(self, model):
        self.model, self.logits = model, []

    def parameters(self):
        return self.model.parameters()

    def __call__(self, **kw):
        out = self.model(**kw)
        self.logits.append(out.logits.clone())
        return out


def _spread(prompts, n):
    """n prompts of different lengths (shortest to longest), so batches are left-padded."""
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    return [prompts[order[round(k * (len(order) - 1) / (n - 1))]] for k in range(n)]


def test_the_lean_tokenizer_gives_the_fast_tokenizers_ids(prompts, toks):
    fast, mine = toks
    assert fast(prompts, add_special_tokens=False)["input_ids"] == mine(prompts)["input_ids"]
    assert decode.allowed_ids(fast) == decode.allowed_ids(mine)
    assert [decode.symbol_id(fast, m) for m in decode.MARKERS] == [decode.symbol_id(mine, m) for m in decode.MARKERS]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("batch", [1, 4])
def test_lean_logits_are_identical_to_transformers(prompts, toks, hf_model, dtype, batch, one_thread):
    from transformers import AutoModelForCausalLM
    model = hf_model if dtype == "float32" else \
        AutoModelForCausalLM.from_pretrained(DEFAULT_MODEL).eval().to(torch.bfloat16)
    mine = lean.LeanLlama(DEFAULT_MODEL, getattr(torch, dtype))
    group = _spread(prompts, 4)[:batch] if batch > 1 else [_spread(prompts, 3)[1]]
    a, b = _Recorder(model), _Recorder(mine)
    ra = decode.decode_reference(a, toks[0], group)
    rb = decode.decode_reference(b, toks[1], group)
    assert len(a.logits) == len(b.logits) == 24  # prefill and 23 cached steps
    for i, (x, y) in enumerate(zip(a.logits, b.logits, strict=True)):
        # the same operations in the same order, but products of other shapes (lean multiplies q, k and v
        # in one product): on one prompt of the shipped checkpoint BLAS rounds the final hidden state up to
        # 2e-6 apart (the output projection itself is identical); batches and bfloat16 stay bit-identical
        tol = 0.0 if batch > 1 or dtype == "bfloat16" else 1e-5
        assert x.dtype == y.dtype and torch.allclose(x, y, rtol=0, atol=tol), \
            f"pass {i}: max |diff| {float((x - y).abs().max())}"
    assert ra == rb


def _same(ref: list[dict], got: list[dict], tol: float = CONF_TOL) -> None:
    for r, g in zip(ref, got, strict=True):
        assert g["metrics"] == r["metrics"]
        assert g["interval"] == r["interval"]
        for m in METRICS:
            assert g["confidence"][m] == pytest.approx(r["confidence"][m], abs=tol)


def test_lean_decoding_gives_the_reference_digits_on_a_spread_of_library_designs(prompts, toks, hf_model,
                                                                                lean_model, one_thread):
    group = _spread(prompts, 12)
    ref = decode.decode_reference(hf_model, toks[0], group)
    _same(ref, decode.decode_lean(lean_model, toks[1], group))  # one batch, left-padded caches
    _same(ref, [decode.decode_lean(lean_model, toks[1], [p])[0] for p in group])  # one at a time


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2])
def test_lean_decoding_gives_the_reference_digits_on_every_library_design(prompts, toks, hf_model, lean_model,
                                                                          threads):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for k in range(0, len(prompts), 16):
            group = prompts[k:k + 16]
            _same(decode.decode_reference(hf_model, toks[0], group), decode.decode_lean(lean_model, toks[1], group))
    finally:
        torch.set_num_threads(before)


def _with_prior(prompt: str, metric: str, symbols: str) -> str:
    return re.sub(rf"^static {metric} .*$", f"static {metric} {symbols}", prompt, count=1, flags=re.M)


def test_a_wrong_draft_and_no_draft_still_give_the_reference_digits(prompts, toks, hf_model, lean_model,
                                                                    one_thread):
    """A prior the model does not copy (the draft is rejected part way, the cache cut back) and a prompt with
    no prior at all (one digit per pass) decode as the reference does."""
    base = _spread(prompts, 3)
    wrong = [_with_prior(base[0], "cycles", "+ 0 5 9 9 9"), _with_prior(base[1], "energy_pj", "- 0 2 1 0 0"),
             _with_prior(_with_prior(base[2], "area_um2", "+ 0 9 1 1 1"), "cycles", "+ 0 1 1 0 0")]
    assert all(decode.prior_draft(p) is not None for p in wrong)
    none = [re.sub(r"^static .*\n", "", p, flags=re.M) for p in base[:2]]
    assert all(decode.prior_draft(p) is None for p in none)
    for group in (wrong, none, wrong[:1], none[:1], [wrong[0], none[0]]):
        _same(decode.decode_reference(hf_model, toks[0], group), decode.decode_lean(lean_model, toks[1], group))


def test_drafts_save_passes(prompts, toks, lean_model, one_thread):
    """On a design whose digits agree with its prior, the lean decoding needs the prefill and one pass."""
    calls = []
    real = lean.LeanLlama.__call__

    def counting(self, *a, **kw):
        calls.append(kw["input_ids"].shape)
        return real(self, *a, **kw)

    lean.LeanLlama.__call__ = counting
    try:
        decode.decode_lean(lean_model, toks[1], prompts[:1])
    finally:
        lean.LeanLlama.__call__ = real
    assert 2 <= len(calls) <= 24  # prefill, then at most one pass per digit


def test_the_estimator_shares_one_lean_model_per_process_and_calibration_gets_its_own():
    from llmulator_plugins.calibrate.lora import fresh_copy
    a, b = LLMEstimator(), LLMEstimator()
    assert a.available() is None and a._lean()
    ma, _ = a.load()
    mb, _ = b.load()
    assert ma is mb and getattr(ma, "lean", False)
    c = fresh_copy(a)  # LoRA adapters are injected into a transformers model, in place: never the shared one
    mc, _ = c.load()
    assert mc is not ma and not getattr(mc, "lean", False) and isinstance(mc, torch.nn.Module)


def test_estimate_with_the_llm_does_not_import_transformers():
    code = ("import sys\n"
            "from llmulator.cli import main\n"
            "rc = main(['estimate', 'systolic-16x16', 'gemm', 'gemm-ws-16x16', '--json'])\n"
            "assert rc == 0, rc\n"
            "assert 'transformers' not in sys.modules, 'transformers was imported'\n"
            "print('clean')\n")
    env = {k: v for k, v in os.environ.items() if k != "LLMULATOR_LLM_BACKEND"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("clean")


def test_the_analytical_memo_hands_out_copies(designs):
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    d = designs[0]
    (e1,) = AnalyticalEstimator().estimate([d])
    e1.metrics["cycles"] = -1.0
    e1.notes.append("changed by a caller")
    (e2,) = AnalyticalEstimator().estimate([d])
    assert e2.metrics["cycles"] > 0 and "changed by a caller" not in e2.notes
