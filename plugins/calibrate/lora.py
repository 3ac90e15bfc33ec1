"""LoRA calibration state for the LLM estimator: trl updates on a peft adapter, cheap to save and to undo.

The base checkpoint is never modified: a LoRA adapter (rank ``rank`` on the
attention and MLP projections) is trained on the replay sample with trl's
``DPOTrainer``; the loss decides the calibrator:

* ``dpo`` — the DPO sigmoid loss on (prompt, profiled target, the model's own
  target) pairs plus the NLL of the profiled target (``loss_type=["sigmoid",
  "sft"]``, the RPO mix): plain DPO raises the preference margin but also lowers
  the likelihood of the preferred answer, which hurts greedy decoding; the NLL
  term keeps it up;
* ``sft`` — the NLL of the profiled target only (plain supervised fine-tuning
  on the feedback, the same trainer, steps and data).

With a pretrained adapter trl copies it into a frozen ``ref`` adapter: the
reference of each update is the previous calibrated model. Rolling back is
restoring the LoRA tensors of a snapshot. Settings that matter on a CPU:
``bf16=False`` and no activation checkpointing (see notes/ml-stack.md).
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from llmulator.errors import UserError
from llmulator.results import METRICS
from llmulator.scoring import ape

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
LOSSES = {"dpo": ["sigmoid", "sft"], "sft": ["sft"], "dpo-pure": ["sigmoid"]}


def check_estimator(estimator, calibrator: str) -> Path:
    """The estimator's checkpoint folder, after checking it is a digit-writing language model that can load
    (the ``LanguageModelEstimator`` capability of ``llmulator.hookspecs``: checkpoint, prompts, head, load)."""
    from llmulator.hookspecs import LanguageModelEstimator, why_unavailable
    path = estimator.path if isinstance(estimator, LanguageModelEstimator) else None
    if path is None:
        raise UserError(f"calibrator '{calibrator}' trains LoRA adapters of a language model and needs the llm "
                        f"estimator (got '{getattr(estimator, 'name', estimator)}'); use --calibrator scale for "
                        "other estimators")
    why = why_unavailable(estimator)
    if why:
        raise UserError(f"estimator '{estimator.name}' is not available: {why}")
    if estimator.head != "digits":
        raise UserError(f"calibrator '{calibrator}' needs an estimator that writes digits, not the "
                        f"'{estimator.head}' head of '{estimator.name}'; use --calibrator scale")
    return Path(path).resolve()


def fresh_copy(estimator):
    """A new instance of the estimator with its own model: adapters are injected into a model in place, so the
    registry's shared instance must not be the one that gets them. It is a transformers model (peft adapts
    those; the estimator's lean path shares one plain model per process)."""
    est = type(estimator)(estimator.path)
    est.backend = "transformers"
    return est


def with_adapter(estimator, adapter: str | Path, name: str):
    """An estimator like ``estimator`` whose model carries the LoRA adapter saved in folder ``adapter``."""
    from peft import PeftConfig, inject_adapter_in_model, set_peft_model_state_dict
    from safetensors.torch import load_file

    est = fresh_copy(estimator)
    model, _ = est.load()
    inject_adapter_in_model(PeftConfig.from_pretrained(str(adapter)), model)  # peft's low-level API: in place
    result = set_peft_model_state_dict(model, load_file(str(Path(adapter) / "adapter_model.safetensors")))
    missing = [k for k in getattr(result, "missing_keys", []) if "lora_" in k]
    if missing:
        raise UserError(f"adapter {adapter} does not fit the model at {estimator.path} (missing {missing[0]})")
    model.eval()
    est.name = name
    plain = est.estimate

    def estimate(designs):
        out = plain(designs)
        for e in out:
            e.notes.append(f"calibrated: LoRA adapter {adapter}")
        return out

    est.estimate = estimate
    return est


class LoraState:
    """The base LM with the context's current adapter, and how to update, check, snapshot and save it."""

    def __init__(self, estimator, ctx_dir: Path, meta: dict[str, Any], loss: list[str], steps: int = 24,
                 lr: float = 5e-3, rank: int = 8, beta: float = 0.1, batch: int = 8, seed: int = 0,
                 threads: int | None = None):
        import torch
        from peft import LoraConfig, PeftModel, get_peft_model
        from transformers.utils import logging as hf_logging

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        self.ctx_dir = Path(ctx_dir)
        self.loss, self.steps, self.lr, self.beta, self.batch, self.seed = loss, steps, lr, beta, batch, seed
        if threads:
            torch.set_num_threads(threads)
        torch.manual_seed(seed)
        self.est = fresh_copy(estimator)
        base, self.tok = self.est.load()
        adapter = meta.get("adapter")
        if adapter and not (self.ctx_dir / adapter / "adapter_config.json").is_file():
            raise UserError(f"context {self.ctx_dir} names adapter '{adapter}', which is missing; remove the "
                            "context with `llmulator contexts --remove` and calibrate again")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # transformers deprecation noise raised inside peft
            if adapter:
                self.model = PeftModel.from_pretrained(base, str(self.ctx_dir / adapter), is_trainable=True)
            else:
                cfg = LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0, target_modules=TARGETS,
                                 task_type="CAUSAL_LM")
                self.model = get_peft_model(base, cfg)
        self.model.eval()
        self.adapter = adapter
        self._stale: list[str] = []
        for leftover in self.ctx_dir.iterdir():  # from a calibration killed mid-update: never committed
            if leftover.is_dir() and (leftover.name.startswith((".adapter-", "trl-")) or
                                      leftover.name.startswith("adapter-") and leftover.name != adapter):
                shutil.rmtree(leftover, ignore_errors=True)
        self._base_cache: dict[str, dict[str, float]] = {}
        self._priors: dict[str, dict[str, float] | None] = {}  # prompt -> its design's analytical prior

    # -- predictions -------------------------------------------------------------------------------------------
    def prompt(self, design) -> str:
        prior = self.est.priors([design])[0]
        text = self.est.prompts([design], [prior])[0]  # exactly what the estimator reads
        self._priors[text] = prior
        return text

    def _target(self) -> str:
        from llmulator_plugins.llm.residual import target_of
        return target_of(self.est.meta)

    def _prior(self, prompt: str) -> dict[str, float] | None:
        """The analytical prior a ``ratio`` checkpoint's digits multiply: the design's, at full precision,
        when this process wrote the prompt; else (feedback replayed from an earlier run) the prompt's own
        three-digit copy of it."""
        if prompt not in self._priors:
            from llmulator_plugins.llm import codec
            from llmulator_plugins.llm.decode import prior_draft
            draft = prior_draft(prompt)
            self._priors[prompt] = None if draft is None else {m: codec.decode(t) for m, t in draft.items()}
        return self._priors[prompt]

    def _decode(self, prompts: list[str]) -> list[dict[str, float]]:
        from llmulator_plugins.llm import residual
        from llmulator_plugins.llm.decode import decode_batch
        self.model.eval()
        target = self._target()
        draft = residual.ratio_draft if target == "ratio" else None
        out = []
        for k in range(0, len(prompts), 16):
            chunk = prompts[k:k + 16]
            preds = decode_batch(self.model, self.tok, chunk, draft=draft)
            out += [residual.from_target(p, self._prior(q), target)["metrics"]
                    for p, q in zip(preds, chunk, strict=True)]
        return out

    def estimate(self, design) -> dict[str, float]:
        from llmulator_plugins.llm.residual import copies_prior
        text = self.prompt(design)
        prior = self._prior(text)
        if prior is not None and copies_prior(design, self.est.meta):  # as the estimator: the prior itself
            m = {k: float(prior[k]) for k in METRICS}
        else:
            m = dict(self._decode([text])[0])
        m["latency_us"] = m["cycles"] / design.arch.clock_mhz
        return m

    def base_estimate(self, design) -> dict[str, float]:
        key = (design.name, getattr(design, "variant", None))
        if key not in self._base_cache:
            with self.model.disable_adapter():
                self._base_cache[key] = self.estimate(design)
        return self._base_cache[key]

    def check_error(self, entries: list[dict[str, Any]], metric: str) -> float:
        prompts = sorted({e["prompt"] for e in entries})
        preds = dict(zip(prompts, self._decode(prompts), strict=True))
        errs = [float(ape(preds[e["prompt"]][metric], e["truth"][metric])) for e in entries]
        return sum(errs) / len(errs)

    # -- snapshots ---------------------------------------------------------------------------------------------
    def _lora_params(self):
        return {n: p for n, p in self.model.named_parameters() if "lora_" in n and ".default" in n}

    def snapshot(self) -> dict[str, Any]:
        return {n: p.detach().clone() for n, p in self._lora_params().items()}

    def restore(self, snap: dict[str, Any]) -> None:
        import torch
        with torch.no_grad():
            for n, p in self._lora_params().items():
                p.copy_(snap[n])

    # -- updates -----------------------------------------------------------------------------------------------
    def pairs(self, entries: list[dict[str, Any]]) -> dict[str, list[str]]:
        from llmulator_plugins.llm.residual import to_target
        from llmulator_plugins.llm.text import target_text
        rows: dict[str, list[str]] = {"prompt": [], "chosen": [], "rejected": []}
        seen = set()
        target = self._target()
        for e in entries:
            prior = self._prior(e["prompt"]) if target != "absolute" else None
            good = to_target({m: e["truth"][m] for m in METRICS}, prior, target)
            bad = to_target({m: e["predicted"][m] for m in METRICS}, prior, target)
            if good is None or bad is None:
                continue  # a ratio checkpoint cannot write a design without a prior (it refuses to estimate it)
            chosen, rejected = target_text(good), target_text(bad)
            if chosen == rejected and self.loss != ["sft"]:
                continue  # nothing to prefer: the prediction already has the profiled digits
            if (e["prompt"], chosen, rejected) in seen:
                continue  # the same feedback twice (e.g. inputs whose profiles agree to 3 digits) is one pair
            seen.add((e["prompt"], chosen, rejected))
            rows["prompt"].append(e["prompt"])
            rows["chosen"].append(chosen)
            rows["rejected"].append(rejected)
        return rows

    def update(self, entries: list[dict[str, Any]]) -> dict[str, Any]:
        import torch
        from datasets import Dataset
        from datasets.utils.logging import disable_progress_bar
        from transformers.trainer_callback import PrinterCallback
        from trl import DPOConfig, DPOTrainer

        disable_progress_bar()

        rows = self.pairs(entries)
        if not rows["prompt"]:
            return {"skipped": True, "pairs": 0}
        t0 = time.perf_counter()
        base = self.model.get_base_model()
        had_forward = "forward" in base.__dict__
        out = tempfile.mkdtemp(prefix="trl-", dir=self.ctx_dir)
        try:
            args = DPOConfig(
                output_dir=out, per_device_train_batch_size=min(self.batch, len(rows["prompt"])),
                max_steps=self.steps, learning_rate=self.lr, beta=self.beta, loss_type=list(self.loss),
                max_length=2048, logging_steps=1, save_strategy="no", report_to="none", use_cpu=True,
                bf16=False, activation_checkpointing=False, lr_scheduler_type="constant", disable_tqdm=True,
                seed=self.seed, dataloader_num_workers=0, dataset_num_proc=None)
            with warnings.catch_warnings(), torch.enable_grad():
                # transformers deprecation noise raised inside trl (is_gradient_checkpointing)
                warnings.simplefilter("ignore", FutureWarning)
                trainer = DPOTrainer(model=self.model, args=args, train_dataset=Dataset.from_dict(rows),
                                     processing_class=self.tok)
                trainer.remove_callback(PrinterCallback)  # the loop reports per iteration; no per-step prints
                result = trainer.train()
            logs = [h for h in trainer.state.log_history if "loss" in h]
        finally:
            shutil.rmtree(out, ignore_errors=True)
            if "ref" in getattr(self.model, "peft_config", {}):
                self.model.delete_adapter("ref")
            self.model.set_adapter("default")
            if not had_forward:
                base.__dict__.pop("forward", None)  # trl's fused LM head patch; decoding wants the plain forward
            self.model.eval()
        loss = float(result.training_loss) if result is not None else math.nan
        return {"pairs": len(rows["prompt"]), "steps": self.steps, "loss": round(loss, 4),
                "first_loss": round(logs[0]["loss"], 4) if logs else None,
                "last_loss": round(logs[-1]["loss"], 4) if logs else None,
                "seconds": round(time.perf_counter() - t0, 3)}

    # -- persistence -------------------------------------------------------------------------------------------
    def save(self, meta: dict[str, Any]) -> dict[str, Any]:
        """Write the adapter to a new folder; context.json (written by the caller) makes it current."""
        n = int(meta.get("adapter_seq", 0)) + 1
        name = f"adapter-{n:04d}"
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=self.ctx_dir))
        self.model.save_pretrained(str(tmp), selected_adapters=["default"], safe_serialization=True)
        src = tmp / "default" if (tmp / "default").is_dir() else tmp
        os.replace(src, self.ctx_dir / name)
        shutil.rmtree(tmp, ignore_errors=True)
        if self.adapter and self.adapter != name:
            self._stale.append(self.adapter)
        self.adapter = name
        return {**meta, "adapter": name, "adapter_seq": n}

    def committed(self) -> None:
        for old in self._stale:
            shutil.rmtree(self.ctx_dir / old, ignore_errors=True)
        self._stale = []
