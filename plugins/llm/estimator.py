"""The `llm` estimator: a causal LM reads the design's prompt and writes each metric digit by digit.

The checkpoint is a local folder (safetensors + config + tokenizer.json): the
one named by ``LLMULATOR_LLM_MODEL``, else the default model shipped inside
this package (``default_model/``). Nothing is downloaded and
``trust_remote_code`` is never set. The model is loaded once per process and
predictions are batched; torch is imported only when the estimator is used.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from llmulator.results import Estimate

DEFAULT_MODEL = Path(__file__).resolve().parent / "default_model"
VERSION = "0.1"


def model_dir() -> Path:
    env = os.environ.get("LLMULATOR_LLM_MODEL")
    return Path(env) if env else DEFAULT_MODEL


class LLMEstimator:
    name = "llm"
    version = VERSION

    def __init__(self, path: str | Path | None = None, batch_size: int = 32):
        self.path = Path(path) if path else model_dir()
        self.batch_size = batch_size
        self._model = None
        self._tok = None

    def available(self) -> str | None:
        if not (self.path / "config.json").is_file() or not (self.path / "tokenizer.json").is_file():
            return (f"no model at {self.path} (train one with `llmulator train llm`, or set "
                    "LLMULATOR_LLM_MODEL to a local checkpoint folder)")
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError:
            return "needs the ml extra: pip install 'llmulator[ml]'"
        return None

    def load(self):
        if self._model is None:
            import torch
            from transformers import AutoModelForCausalLM
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()

            from .text import load_tokenizer
            self._tok = load_tokenizer(self.path)
            self._model = AutoModelForCausalLM.from_pretrained(self.path, trust_remote_code=False)
            self._model.eval()
            torch.set_grad_enabled(False)
        return self._model, self._tok

    def estimate(self, designs: Sequence) -> list[Estimate]:
        from .decode import decode_batch
        from .text import model_prompt
        model, tok = self.load()
        out: list[Estimate] = []
        for k in range(0, len(designs), self.batch_size):
            chunk = designs[k:k + self.batch_size]
            t0 = time.perf_counter()
            preds = decode_batch(model, tok, [model_prompt(d) for d in chunk])
            dt = (time.perf_counter() - t0) / max(len(chunk), 1)
            for d, p in zip(chunk, preds, strict=True):
                m = dict(p["metrics"])
                m["latency_us"] = m["cycles"] / d.arch.clock_mhz
                out.append(Estimate(self.name, self.version, m, confidence=p["confidence"], interval=p["interval"],
                                    seconds=dt, design=d.name, notes=[f"model: {self.path}"]))
        return out
