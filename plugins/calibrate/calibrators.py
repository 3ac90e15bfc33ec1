"""The ``dpo``, ``sft`` and ``scale`` calibrators: one loop, three ways to learn from profiler feedback.

Each implements the Calibrator protocol of ``llmulator.hookspecs``:
``calibrate(design, inputs, estimator, profiler, **options) -> CalibrationReport``,
``apply(estimator, context) -> estimator`` (used by ``estimate --context``) and
``contexts()`` (the saved contexts it made).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llmulator.errors import UserError

from . import loop, store

VERSION = "0.1"


def default_context(design) -> str:
    name = design.name + (f"-{design.variant}" if getattr(design, "variant", None) else "")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:100] or "default"


class _Calibrator:
    name = ""
    version = VERSION

    def available(self) -> str | None:
        return None

    def contexts(self) -> dict[str, dict[str, Any]]:
        return {n: m for n, m in store.list_contexts().items() if m.get("calibrator") == self.name}

    def _meta(self, context: str) -> dict[str, Any]:
        meta = store.read_context(context)
        if meta is None or meta.get("calibrator") != self.name:
            raise UserError(f"no '{self.name}' calibration context '{context}' under {store.contexts_dir()} "
                            "(see `llmulator contexts`)")
        return meta

    def model_of(self, estimator) -> str | None:
        return None

    def state(self, estimator, ctx_dir: Path, meta: dict[str, Any], options: dict[str, Any]):
        raise NotImplementedError

    def calibrate(self, design, inputs, estimator, profiler, context: str | None = None,
                  capacity: int = 256, seed: int = 0, on_iteration=None, **options) -> loop.CalibrationReport:
        loop.check_options(options)
        if inputs is None or not isinstance(inputs, Sequence):
            from llmulator.inputs import inputs_for
            inputs = [inputs if inputs is not None else inputs_for(design)]
        ctx = store.check_name(context or default_context(design))
        meta = store.open_context(ctx, self.name, estimator.name, self.model_of(estimator))
        ctx_dir = store.context_path(ctx)
        ctx_dir.mkdir(parents=True, exist_ok=True)
        store.write_context(ctx, meta)
        buffer = store.ReplayBuffer(ctx_dir / store.BUFFER_FILE, capacity=capacity, seed=seed)
        state = self.state(estimator, ctx_dir, meta, {**options, "seed": seed})
        return loop.run(self.name, state, design, list(inputs), profiler, ctx, meta, buffer,
                        on_iteration=on_iteration, **options)


class ScaleCalibrator(_Calibrator):
    """Per-context multiplicative correction per metric: the cheapest baseline, for any estimator."""

    name = "scale"

    def state(self, estimator, ctx_dir, meta, options):
        from .scale import ScaleState
        return ScaleState(estimator, meta.get("scale"))

    def apply(self, estimator, context: str):
        from .scale import ScaledEstimator
        meta = self._meta(context)
        if meta.get("estimator") != estimator.name:
            raise UserError(f"context '{context}' calibrates estimator '{meta.get('estimator')}', "
                            f"not '{estimator.name}'")
        return ScaledEstimator(estimator, dict(meta.get("scale") or {}), context)


class _LoraCalibrator(_Calibrator):
    loss_key = ""

    def available(self) -> str | None:
        from importlib.util import find_spec
        # installed is enough to say so: importing them here would cost seconds (`llmulator plugins` asks)
        missing = [m for m in ("torch", "transformers", "trl", "peft") if find_spec(m) is None]
        if missing:
            return (f"needs the ml extra ({', '.join(missing)} missing): pip install 'llmulator[ml]'")
        return None

    def model_of(self, estimator) -> str | None:
        from .lora import check_estimator
        return str(check_estimator(estimator, self.name))

    def state(self, estimator, ctx_dir, meta, options):
        from .lora import LOSSES, LoraState
        keys = ("steps", "lr", "rank", "beta", "batch", "seed", "threads")
        return LoraState(estimator, ctx_dir, meta, LOSSES[self.loss_key],
                         **{k: options[k] for k in keys if options.get(k) is not None})

    def apply(self, estimator, context: str):
        from .lora import check_estimator, with_adapter
        meta = self._meta(context)
        model = str(check_estimator(estimator, self.name))
        if meta.get("estimator") != estimator.name or meta.get("model") != model:
            raise UserError(f"context '{context}' was calibrated on {meta.get('estimator')} model "
                            f"{meta.get('model')}, but the estimator loads {model}")
        if not meta.get("adapter"):
            raise UserError(f"context '{context}' has no accepted update yet (every update was rolled back or "
                            "the calibration stopped before one); nothing to apply")
        adapter = store.context_path(context) / meta["adapter"]
        return with_adapter(estimator, adapter, name=f"{estimator.name}@{context}")


class DPOCalibrator(_LoraCalibrator):
    """Preference updates (profiled target over the model's own) with trl DPO on LoRA adapters."""

    name = "dpo"
    loss_key = "dpo"


class SFTCalibrator(_LoraCalibrator):
    """Supervised fine-tuning on the profiled targets: the same trainer, data and adapters, NLL loss only."""

    name = "sft"
    loss_key = "sft"
