"""The `llm` estimator: a causal LM reads the design's prompt and writes each metric digit by digit.

The checkpoint is a local folder (safetensors + config + tokenizer.json +
``llmulator.json``): the one named by ``LLMULATOR_LLM_MODEL``, else the
default model shipped inside this package (``default_model/``). Nothing is
downloaded and ``trust_remote_code`` is never set. Torch is imported only when
the estimator is used (``available`` looks the packages up without importing
them).

A plain Llama checkpoint with our tokenizer (the shipped one) runs without
transformers, loaded once per process and shared by every estimator object
reading that checkpoint, on one of two backends:

* ``numpy`` (the default where the model computes in float32, as on this
  project's machines): ``lean_numpy.py``, the forward pass in NumPy from the
  safetensors weights and the lean decoding on it: no torch at all (its import
  alone is 1.5-3 s of a cold ``llmulator estimate``); logits equal to the torch
  forward's to float32 rounding, the same digits (tests/test_llm_numpy.py);
* ``lean`` (torch): ``lean.py``, logits identical to transformers', with
  ``decode.decode_lean`` (per-prompt prefill and the prior's digits verified as
  a draft); the default where the model computes in bfloat16 (a CPU with
  native bfloat16 products, which NumPy does not have).

Anything else (``--base-model`` checkpoints, the ablation heads, ``backend =
"transformers"`` as LoRA calibration asks) loads a transformers model of its
own. ``LLMULATOR_LLM_BACKEND`` (numpy | lean | transformers) overrides the
choice. Predictions are batched with the BLAS's or torch's threads set to the
idle cores unless ``threads`` says otherwise (``llmulator.threads``); a spinner
shows on stderr (a terminal only) while a model loads. Speed:
docs/benchmarks-llm.md, docs/benchmarks-estimate.md.

The ablation variants (``heads.py``: ``llm-mse``, ``llm-logmse``,
``llm-binned``) are the same class with another head; they ship no model and
read theirs from ``LLMULATOR_LLM_MSE_MODEL`` etc.

Every prediction is checked against the analytical prior (``guards.py``): a design the analytical model
cannot price is refused (``SpecError``, as every estimator refuses a design) when the checkpoint reads that
prior, a prediction more than 4x from it gets a low confidence, a wider interval and a note, and
``power_mw`` is derived from the predicted energy and cycles. A design whose control does not depend on its
input data, or whose input-dependent control the analytical model prices from the declared inputs, gets the
prior itself, without the model (``residual.copies_prior``: the analytical count is exact there, or the
expectation over the declared inputs), and a ``ratio`` checkpoint's digits are multiplied by the prior
(``residual.py``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from llmulator.results import Estimate

DEFAULT_MODEL = Path(__file__).resolve().parent / "default_model"
# 0.3: refuses a design without an analytical prior, flags predictions far from it, power from energy and time
# 0.4: a design whose control does not depend on its input gets the prior itself; ratio checkpoints
# 0.5: ... and so does a design whose input-dependent control is priced from its declared inputs (interval +-6 %)
# 0.6: "fixed" only where every branch that reads no array is priced too (an index condition, the kernel's scalar
#      control or draws), not a hint or 0.5; the 90 % interval from the checkpoint's val-calibrated factors
# 0.7: a drawn design's interval follows its own draws (residual.draw_spread)
# 0.8: more designs drawn (analytical 0.31 runs a guarded or ended lane's division), so more get the prior itself
# 0.9: a prior that rests on hints or the 0.5 default keeps at most 0.5 confidence (guards)
VERSION = "0.10"  # 0.10: a branch priced from its taken_probability hint counts as a guess too


def inference_dtype() -> str:
    """``LLMULATOR_LLM_DTYPE`` (float32 | bfloat16), else bfloat16 where the CPU has native bf16 dot products.

    Measured on this project's 2-core AVX512-BF16 machine: the prefill runs 1.8x faster and decoding
    as a whole 1.5x, with the same digits for nearly every design (docs/benchmarks-llm.md)."""
    env = os.environ.get("LLMULATOR_LLM_DTYPE", "auto")
    if env in ("float32", "bfloat16"):
        return env
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "float32"
    return "bfloat16" if (" avx512_bf16" in flags or " amx_bf16" in flags) else "float32"


# (checkpoint, its mtime, dtype, backend) -> (lean or numpy model, tokenizer, None): each loaded once per process
_LOADED: dict[tuple, tuple] = {}


def _mtime(path: Path) -> float:
    f = path / "model.safetensors"
    return f.stat().st_mtime if f.is_file() else 0.0


def loading(message: str):
    """A spinner with ``message`` on stderr while a model loads, when stderr is a terminal."""
    from llmulator.status import status
    return status(message)


def env_var(name: str) -> str:
    return f"LLMULATOR_{name.upper().replace('-', '_')}_MODEL"


class LLMEstimator:
    name = "llm"
    version = VERSION
    head = "digits"
    default_path: Path | None = DEFAULT_MODEL

    def __init__(self, path: str | Path | None = None, batch_size: int = 16, threads: int | None = None):
        env = os.environ.get(env_var(self.name))
        self.path = Path(path) if path else Path(env) if env else self.default_path
        self.batch_size = batch_size
        self.threads = threads
        self._model = None
        self._tok = None
        self._head = None
        self.meta: dict = {}
        # "auto": numpy (lean_numpy.py) or the torch lean path (lean.py) where the checkpoint allows it, else
        # transformers; "numpy", "lean": that one where the checkpoint allows it; "transformers": a
        # transformers model of this object's own (what LoRA calibration injects its adapters into)
        self.backend = "auto"

    def available(self) -> str | None:
        if self.path is None or not (self.path / "config.json").is_file() \
                or not (self.path / "tokenizer.json").is_file():
            return (f"no model at {self.path or '(none shipped)'} (train one with `llmulator train llm`, or set "
                    f"{env_var(self.name)} to a local checkpoint folder)")
        meta = self._meta()
        from .text import PROMPT_FORMAT
        if meta.get("format") != PROMPT_FORMAT:
            return (f"the checkpoint at {self.path} reads prompt format '{meta.get('format')}', this version "
                    f"writes '{PROMPT_FORMAT}': retrain it with `llmulator train llm`")
        if meta.get("head", "digits") != self.head:
            return f"the checkpoint at {self.path} has head '{meta.get('head')}', this estimator needs '{self.head}'"
        # find_spec, not import: torch alone takes seconds to import, and `available` runs for every estimate
        from importlib.util import find_spec
        needs = {"numpy": ("numpy", "safetensors", "tokenizers"), "lean": ("torch", "safetensors", "tokenizers"),
                 "transformers": ("torch", "safetensors", "tokenizers", "transformers")}[self._backend()]
        if any(find_spec(m) is None for m in needs):
            return "needs the ml extra: pip install 'llmulator[ml]'"
        return None

    def _lean(self) -> bool:
        """Whether the checkpoint runs without transformers (the ``numpy`` or the torch ``lean`` backend)."""
        return self._backend() != "transformers"

    def _backend(self) -> str:
        """``numpy``, ``lean`` (torch) or ``transformers``: ``backend`` "auto" (the default;
        ``LLMULATOR_LLM_BACKEND`` overrides it) takes numpy for every checkpoint the lean path supports when the
        model computes in float32, the torch lean path when in bfloat16 (NumPy has no bfloat16 products)."""
        backend = self.backend if self.backend != "auto" else os.environ.get("LLMULATOR_LLM_BACKEND", "auto")
        if backend == "torch":
            backend = "lean"
        if backend == "transformers" or self.head != "digits":
            return "transformers"
        from .lean import unsupported
        if unsupported(self.path) is not None:
            return "transformers"
        if backend in ("numpy", "lean"):
            return backend
        return "numpy" if inference_dtype() == "float32" else "lean"

    def _meta(self) -> dict:
        from .text import checkpoint_settings
        return checkpoint_settings(self.path)

    def load(self):
        """(model, tokenizer). A lean model is loaded once per process for each checkpoint and dtype and shared
        by every estimator object that reads it (nothing changes it); a transformers model is this object's own."""
        if self._model is None:
            self.meta = self._meta()
            backend = self._backend()
            key = (str(self.path.resolve()), _mtime(self.path), inference_dtype(), backend)
            if backend != "transformers" and key in _LOADED:
                self._model, self._tok, self._head = _LOADED[key]
            elif backend == "numpy":  # NumPy + safetensors + tokenizers: no torch (lean_numpy.py)
                from .lean import LeanTokenizer
                from .lean_numpy import NumpyLlama
                with loading(f"loading the {self.name} model"):
                    self._model, self._tok, self._head = NumpyLlama(self.path), LeanTokenizer(self.path), None
                _LOADED[key] = (self._model, self._tok, self._head)
            else:
                from llmulator.threads import torch_threads
                with loading(f"loading the {self.name} model"), torch_threads(self.threads):
                    self._model, self._tok, self._head = self._load(backend == "lean")
                if backend == "lean":
                    _LOADED[key] = (self._model, self._tok, self._head)
        return self._model, self._tok

    def _load(self, lean: bool):
        import torch
        dtype = torch.bfloat16 if inference_dtype() == "bfloat16" and self.head == "digits" else torch.float32
        if lean:  # torch + safetensors + tokenizers: logits identical to transformers' (lean.py)
            from .lean import LeanLlama, LeanTokenizer
            return LeanLlama(self.path, dtype), LeanTokenizer(self.path), None
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()

        from .text import load_tokenizer
        from .train import load_head
        tok = load_tokenizer(self.path)
        model = AutoModelForCausalLM.from_pretrained(self.path, trust_remote_code=False)
        model.eval()
        head = None
        if self.meta.get("head", "digits") != "digits":
            head = load_head(self.path, self.meta, model.config.hidden_size)
        elif dtype == torch.bfloat16:
            model.to(torch.bfloat16)
        return model, tok, head

    def prompts(self, designs: Sequence, priors: Sequence[dict | None] | None = None) -> list[str]:
        """The prompt of each design, exactly what the model reads (``text.checkpoint_prompts``; the model is
        not loaded); ``priors``: their analytical metrics, when the caller has them. ``UserError`` when the
        checkpoint is missing or reads another prompt format."""
        from .text import checkpoint_prompts
        return checkpoint_prompts(self.path, designs, priors, settings=self.meta or None)

    def reads_prior(self) -> bool:
        """Whether the checkpoint's prompts carry the analytical prior (then a design without one is refused)."""
        return self.meta.get("hints", "none") == "analytical"

    def priors(self, designs: Sequence) -> list[dict[str, float] | None]:
        """The analytical prior of each design. Raises ``SpecError`` for the first design the analytical model
        cannot price when the checkpoint reads the prior; else such a design gets None (nothing to check)."""
        from llmulator.errors import SpecError
        from llmulator_plugins.analytical.estimator import AnalyticalEstimator

        from .guards import prior_of
        analytical = AnalyticalEstimator()
        out: list[dict[str, float] | None] = []
        for d in designs:
            try:
                out.append(prior_of(d, analytical))
            except SpecError:
                if self.reads_prior():
                    raise
                out.append(None)
        return out

    def estimate(self, designs: Sequence) -> list[Estimate]:
        """Batched: prompts are grouped by length so a batch pads little, results come back in order.

        A design without an analytical prior (when the checkpoint reads it) raises ``SpecError`` before the
        model runs, for a batch as for one design: callers price the rest one at a time."""
        from .guards import cap_for_guesses, guard
        from .residual import PRIOR_NOTES, copies_prior, draw_spread, prior_prediction
        from .train import predict
        model, tok = self.load()
        if getattr(model, "numpy", False):
            from llmulator.npinfer import blas_threads as threads_of
        else:
            from llmulator.threads import torch_threads as threads_of
        t0 = time.perf_counter()
        priors = self.priors(designs)
        out: list[Estimate | None] = [None] * len(designs)
        for i, d in enumerate(designs):  # where the prior is the answer: the prior itself (residual.py), no prompt
            answer = copies_prior(d, self.meta) if priors[i] is not None else None
            if answer:
                p = prior_prediction(priors[i], answer, draw_spread(d) if answer == "drawn" else None)
                m, conf, interval, notes = guard(p["metrics"], p["confidence"], p["interval"], priors[i],
                                                 d.arch.clock_mhz)
                conf, more = cap_for_guesses(d, conf)
                notes += more
                out[i] = Estimate(self.name, self.version, m, confidence=conf, interval=interval,
                                  seconds=(time.perf_counter() - t0) / len(designs), design=d.name,
                                  notes=[f"model: {self.path}", PRIOR_NOTES[answer], *notes])
        rest = [i for i in range(len(designs)) if out[i] is None]
        prompts = dict(zip(rest, self.prompts([designs[i] for i in rest], [priors[i] for i in rest]), strict=True))
        render_s = (time.perf_counter() - t0) / max(len(designs), 1)
        order = sorted(rest, key=lambda i: len(prompts[i]))
        for k in range(0, len(order), self.batch_size):
            idx = order[k:k + self.batch_size]
            t0 = time.perf_counter()
            with threads_of(self.threads):  # the idle cores unless told (llmulator.threads)
                preds = predict(model, tok, [prompts[i] for i in idx], self.meta, self._head,
                                priors=[priors[i] for i in idx])
            dt = (time.perf_counter() - t0) / len(idx) + render_s
            for i, p in zip(idx, preds, strict=True):
                d = designs[i]
                m, conf, interval, notes = guard(p["metrics"], p["confidence"], p["interval"], priors[i],
                                                 d.arch.clock_mhz)
                if priors[i] is None:
                    notes.append("no analytical prior for this design: the prediction is not checked against one")
                else:
                    conf, more = cap_for_guesses(d, conf)
                    notes += more
                out[i] = Estimate(self.name, self.version, m, confidence=conf, interval=interval,
                                  seconds=dt, design=d.name, notes=[f"model: {self.path}", *notes])
        return out


class MSEEstimator(LLMEstimator):
    """Ablation: regression head, MSE on normalised targets."""
    name = "llm-mse"
    head = "mse"
    default_path = None


class LogMSEEstimator(LLMEstimator):
    """Ablation: regression head, MSE on normalised log10 targets."""
    name = "llm-logmse"
    head = "logmse"
    default_path = None


class BinnedEstimator(LLMEstimator):
    """Ablation: classification into log-spaced bins."""
    name = "llm-binned"
    head = "binned"
    default_path = None


ABLATIONS = (MSEEstimator, LogMSEEstimator, BinnedEstimator)
