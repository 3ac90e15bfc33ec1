"""The ``gnn``, ``tlp`` and ``tensetmlp`` estimators: one class, three featurisations and networks.

The checkpoint is a folder with ``model.safetensors`` and ``config.json``
(written by ``llmulator train <name>``): the folder named by
``LLMULATOR_<NAME>_MODEL``, else the one shipped in this package
(``default_model/<name>/``). ``estimate`` featurises every design (pure
Python), then runs one batched forward pass per ``batch_size`` designs. The
forward pass runs in NumPy (``numpy_models.py``, the torch modules' forward op
for op, equal to float32 rounding; no torch import, which alone costs 1.5-3 s
of a cold ``llmulator estimate``); ``backend = "torch"`` (or
``LLMULATOR_BASELINES_BACKEND=torch``) runs the torch module of ``models.py``
instead, which training uses.

Outputs are guarded (``guards.py``): log-predictions clipped to the range of
the training targets, ``power_mw`` derived from energy and cycles, and a
design out of the training distribution (features beyond their training
range, design features training never varied, a clipped prediction) reported
with a confidence of at most 0.2 and a note saying why. A prediction more than 4x from the analytical
estimator's count of the same design keeps at most 0.2 confidence too, its interval widened to cover that
count (``llmulator.prior_check``, the rule the ``llm`` estimator follows against its prior).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path

from llmulator.errors import UserError
from llmulator.results import Estimate

DEFAULT_MODELS = Path(__file__).resolve().parent / "default_model"
# 0.2: outputs clipped to the training range, out-of-distribution designs flagged, power from energy and time
# 0.3: a fused loop featurised over its members' trips (no crash where its head alone fits its tile); a loop
#      with no expected trips (no hint, control not run from declared inputs) flagged with a low confidence
#      (the dataset's feature cache stands: no synth-v3 mapping fuses loops)
# 0.4: a 90 % interval in distribution, split-conformal on val (llmulator.conformal), stored by training
# 0.5: a prediction more than 4x from the analytical count is flagged (llmulator.prior_check): an outside
#      bit-reversal kernel got tlp 15,776 cycles with an in-distribution interval of 9,581-26,786 (hlsim 687)
# 0.6: the input features are clamped into their training range before the network reads them
VERSION = "0.6"


class BaselineEstimator:
    name = ""
    version = VERSION
    title = ""

    def __init__(self, path: str | Path | None = None, batch_size: int = 256):
        env = os.environ.get(f"LLMULATOR_{self.name.upper().replace('-', '_')}_MODEL")
        self.path = Path(path) if path else Path(env) if env else DEFAULT_MODELS / self.name
        self.batch_size = batch_size
        self._model = None
        self._checker = None
        self.backend = "auto"  # "auto"/"numpy": numpy_models.py; "torch": models.py

    def _backend(self) -> str:
        backend = self.backend if self.backend != "auto" else os.environ.get("LLMULATOR_BASELINES_BACKEND", "auto")
        return "torch" if backend == "torch" else "numpy"

    def available(self) -> str | None:
        if not (self.path / "model.safetensors").is_file() or not (self.path / "config.json").is_file():
            return (f"no model at {self.path} (train one with `llmulator train {self.name}`, or set "
                    f"LLMULATOR_{self.name.upper()}_MODEL to a checkpoint folder)")
        # find_spec, not import: torch alone takes seconds to import, and `available` runs for every estimate
        from importlib.util import find_spec
        needs = ("numpy", "safetensors") + (("torch",) if self._backend() == "torch" else ())
        if any(find_spec(m) is None for m in needs):
            return "needs the ml extra: pip install 'llmulator[ml]'"
        return None

    def load(self):
        if self._model is None:
            from llmulator.status import status
            if self._backend() == "torch":
                from llmulator.threads import torch_threads as threads_of
            else:
                from llmulator.npinfer import blas_threads as threads_of
            with status(f"loading the {self.name} model"), threads_of():
                self._load()
        return self._model

    def _load(self) -> None:
        if self._model is None:
            from .data import FEATURE_VERSION
            why = self.available()
            if why:
                raise UserError(f"estimator '{self.name}' is not available: {why}")
            config = json.loads((self.path / "config.json").read_text())
            if config.get("kind") != self.name or config.get("feature_version") != FEATURE_VERSION:
                raise UserError(f"{self.path}/config.json is a '{config.get('kind')}' model with features "
                                f"v{config.get('feature_version')}; the {self.name} estimator needs a "
                                f"'{self.name}' model with features v{FEATURE_VERSION} (retrain it)")
            if self._backend() == "torch":
                from safetensors.torch import load_file

                from .models import build
                model = build(config)
                model.load_state_dict(load_file(str(self.path / "model.safetensors")))
                model.eval()
            else:
                from llmulator.npinfer import load_safetensors

                from .numpy_models import NumpyBaseline
                model = NumpyBaseline(config, load_safetensors(self.path / "model.safetensors"))
            from .data import METRICS
            from .guards import Checker
            self._checker = Checker(self.name, config, model, METRICS)
            self._calibration = config.get("interval")  # split-conformal factors from val (train.py), if any
            self._model = model

    def estimate(self, designs: Sequence) -> list[Estimate]:
        model = self.load()
        if getattr(model, "numpy", False):
            from llmulator.npinfer import blas_threads as threads_of
        else:
            from llmulator.threads import torch_threads as threads_of
        with threads_of():  # the idle cores (llmulator.threads): small passes, slowed by busy cores
            return self._estimate(model, designs)

    def _forward(self, model, packed):
        """The network's normalised log-metrics of a packed batch, a float32 array (either backend)."""
        import numpy as np
        if getattr(model, "numpy", False):
            from .numpy_models import batch_of
            return np.asarray(model(batch_of(packed)), np.float32)
        import torch

        from .data import to_batch
        with torch.no_grad():
            return np.asarray(model(to_batch(packed)).numpy(), np.float32)

    def _estimate(self, model, designs: Sequence) -> list[Estimate]:
        import numpy as np
        from llmulator.conformal import interval
        from llmulator.results import power_mw

        from .data import DIMS, FEATURISERS, METRICS, pack
        from .features import idle_arch_columns, unknown_trips
        from .guards import OOD_CONFIDENCE, clip_confidence
        check = self._checker
        fn = FEATURISERS[self.name]
        pw = METRICS.index("power_mw")
        out: list[Estimate] = []
        for k in range(0, len(designs), self.batch_size):
            chunk = list(designs[k:k + self.batch_size])
            t0 = time.perf_counter()
            packed = pack([fn(d) for d in chunk], DIMS[self.name])
            y_std, y_mean = (np.asarray(getattr(model, k), np.float64) for k in ("y_std", "y_mean"))
            raw = self._forward(model, check.clamped(packed)).astype(np.float64) * y_std + y_mean
            logs, factor = check.outputs(raw)
            flags = check.features(packed["x"], packed["x_off"], packed["g"], [idle_arch_columns(d) for d in chunk])
            dt = (time.perf_counter() - t0) / max(len(chunk), 1)
            for i, d in enumerate(chunk):
                m = {mt: float(np.exp(logs[i, j])) for j, mt in enumerate(METRICS)}
                # power as the analytical model and hlsim define it: energy (leakage included) over the run time
                m["power_mw"] = power_mw(m["energy_pj"], m["cycles"], d.arch.clock_mhz)
                m["latency_us"] = m["cycles"] / d.arch.clock_mhz
                reasons, notes = flags[i]
                guessed = unknown_trips(d)
                if guessed:
                    reasons = [*reasons, f"no expected trip count for loop(s) {', '.join(guessed)} (no hint, and their "
                               "control is not run from declared inputs): read as 1 trip"]
                caps = {mt: clip_confidence(float(factor[i, j])) for j, mt in enumerate(METRICS)
                        if mt != "power_mw" and factor[i, j] > 1.0 + 1e-9}
                for mt in list(caps):
                    j = METRICS.index(mt)
                    was = math.exp(min(float(raw[i, j]), 700.0))
                    reasons.append(f"{mt} predicted {was:.3g}, clipped to {m[mt]:.3g} ({check.range_source})")
                p_log = math.log(m["power_mw"]) if m["power_mw"] > 0 else -math.inf
                if not check.lo[pw] <= p_log <= check.hi[pw]:
                    beyond = max(check.lo[pw] - p_log, p_log - check.hi[pw])
                    caps["power_mw"] = clip_confidence(math.exp(min(beyond, 700.0)) if math.isfinite(beyond)
                                                       else math.inf)
                    reasons.append(f"power_mw {m['power_mw']:.3g} (derived from energy and cycles) is outside "
                                   f"{check.range_source} of power, {math.exp(check.lo[pw]):.3g} .. "
                                   f"{math.exp(check.hi[pw]):.3g}")
                if "cycles" in caps or "energy_pj" in caps:  # derived from them
                    caps["power_mw"] = min(caps.get("power_mw", 1.0), caps.get("cycles", 1.0),
                                           caps.get("energy_pj", 1.0))
                confidence = None
                # in distribution: the 90 % interval val's residuals give; out of it, none (they do not describe it)
                band = None if reasons else interval(m, getattr(self, "_calibration", None)) or None
                if reasons:
                    confidence = {mt: min(OOD_CONFIDENCE, caps.get(mt, 1.0)) for mt in METRICS}
                    notes = [f"out of the training distribution (confidence <= {OOD_CONFIDENCE:g}): "
                             + "; ".join(reasons), *notes]
                confidence, band, far = self._far_check(d, m, confidence, band)
                out.append(Estimate(self.name, self.version, m, confidence=confidence, interval=band, seconds=dt,
                                    design=d.name, notes=[f"model: {self.path}", *far, *notes]))
        return out

    def _far_check(self, d, m: dict, confidence, band) -> tuple:
        """More than 4x from the analytical count: not a design this model learned to price
        (``llmulator.prior_check``); no analytical count, no check."""
        from llmulator.prior_check import check_against_prior
        prior = self._analytical_metrics(d)
        return (confidence, band, []) if prior is None else check_against_prior(m, confidence, band, prior)

    def _analytical_metrics(self, d) -> dict[str, float] | None:
        """The analytical estimator's metrics of ``d``, the reference of the far-from-prior rule; None where it
        cannot price the design (the rule then does not apply)."""
        if getattr(self, "_analytical", None) is None:
            from llmulator_plugins.analytical.estimator import AnalyticalEstimator
            self._analytical = AnalyticalEstimator()
        try:
            return dict(self._analytical.estimate([d])[0].metrics)
        except Exception:  # noqa: BLE001 - no analytical count, no reference: the learned estimate stands alone
            return None


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
