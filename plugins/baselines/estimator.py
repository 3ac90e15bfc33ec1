"""The ``gnn``, ``tlp`` and ``tensetmlp`` estimators: one class, three featurisations and networks.

The checkpoint is a folder with ``model.safetensors`` and ``config.json``
(written by ``llmulator train <name>``): the folder named by
``LLMULATOR_<NAME>_MODEL``, else the one shipped in this package
(``default_model/<name>/``). ``estimate`` featurises every design (pure
Python), then runs one batched forward pass per ``batch_size`` designs;
torch is imported only when the estimator is used.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from llmulator.errors import UserError
from llmulator.results import Estimate

DEFAULT_MODELS = Path(__file__).resolve().parent / "default_model"
VERSION = "0.1"


class BaselineEstimator:
    name = ""
    version = VERSION
    title = ""

    def __init__(self, path: str | Path | None = None, batch_size: int = 256):
        env = os.environ.get(f"LLMULATOR_{self.name.upper().replace('-', '_')}_MODEL")
        self.path = Path(path) if path else Path(env) if env else DEFAULT_MODELS / self.name
        self.batch_size = batch_size
        self._model = None

    def available(self) -> str | None:
        if not (self.path / "model.safetensors").is_file() or not (self.path / "config.json").is_file():
            return (f"no model at {self.path} (train one with `llmulator train {self.name}`, or set "
                    f"LLMULATOR_{self.name.upper()}_MODEL to a checkpoint folder)")
        try:
            import safetensors  # noqa: F401
            import torch  # noqa: F401
        except ImportError:
            return "needs the ml extra: pip install 'llmulator[ml]'"
        return None

    def load(self):
        if self._model is None:
            from safetensors.torch import load_file

            from .data import FEATURE_VERSION
            from .models import build
            why = self.available()
            if why:
                raise UserError(f"estimator '{self.name}' is not available: {why}")
            config = json.loads((self.path / "config.json").read_text())
            if config.get("kind") != self.name or config.get("feature_version") != FEATURE_VERSION:
                raise UserError(f"{self.path}/config.json is a '{config.get('kind')}' model with features "
                                f"v{config.get('feature_version')}; the {self.name} estimator needs a "
                                f"'{self.name}' model with features v{FEATURE_VERSION} (retrain it)")
            model = build(config)
            model.load_state_dict(load_file(str(self.path / "model.safetensors")))
            model.eval()
            self._model = model
        return self._model

    def estimate(self, designs: Sequence) -> list[Estimate]:
        import torch

        from .data import DIMS, FEATURISERS, METRICS, pack, to_batch
        model = self.load()
        fn = FEATURISERS[self.name]
        out: list[Estimate] = []
        for k in range(0, len(designs), self.batch_size):
            chunk = list(designs[k:k + self.batch_size])
            t0 = time.perf_counter()
            packed = pack([fn(d) for d in chunk], DIMS[self.name])
            with torch.no_grad():
                logs = model.to_log(model(to_batch(packed))).double().exp().tolist()
            dt = (time.perf_counter() - t0) / max(len(chunk), 1)
            for d, vals in zip(chunk, logs, strict=True):
                m = dict(zip(METRICS, vals, strict=True))
                m["latency_us"] = m["cycles"] / d.arch.clock_mhz
                out.append(Estimate(self.name, self.version, m, seconds=dt, design=d.name,
                                    notes=[f"model: {self.path}"]))
        return out


class GNNEstimator(BaselineEstimator):
    name = "gnn"
    title = "GNN on the control/data-flow graph of the mapped kernel (GNN-HLS style)"


class TLPEstimator(BaselineEstimator):
    name = "tlp"
    title = "attention over the sequence of mapping primitives (TLP style)"


class TensetMLPEstimator(BaselineEstimator):
    name = "tensetmlp"
    title = "segment-sum MLP over per-statement features (Tenset-MLP style)"


ESTIMATORS = (GNNEstimator, TLPEstimator, TensetMLPEstimator)
