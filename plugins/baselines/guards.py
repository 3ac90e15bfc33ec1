"""What keeps a learned baseline from saturating: its outputs stay in the training range, and a design it
has not seen the like of is flagged.

* **Outputs clipped to the training targets' range.** Training records, per metric, the smallest and largest
  log-target of the training split (``config.json``: ``target_log_range``, natural log). Each log-prediction
  is clipped into it: a baseline cannot predict more cycles than any training design had, nor fewer. A
  checkpoint from before these ranges were recorded uses the training mean +- :data:`FALLBACK_STD` (4)
  standard deviations of each log-target, from the normalisation buffers the model carries (the shipped
  checkpoints record theirs: 22 .. 3.16e8 cycles, 3,017 .. 4.87e10 pJ; docs/baselines.md).
* **Features never varied in training** read as their training value (``models._standard``): the model
  learned nothing about them. Such a feature of the *design* (a node, step or statement of a kind training
  never had) makes the design out of distribution; one of the *architecture* (e.g. a unit class no training
  architecture had, which the design may not even use) is only noted.
* **Out of distribution, low confidence.** Training also records the range of every input feature
  (``feature_range``: per-feature min and max over the training rows, for the design's vectors ``x`` and
  the architecture vector ``g``). A feature that varied in training and lies outside its range by more
  than :data:`RANGE_MARGIN` (a quarter) of the training span, a design feature never varied in training
  that differs here, or a prediction that had to be clipped, flags the design: its confidence is at most
  :data:`OOD_CONFIDENCE` (0.2; a clipped metric's falls with how far it was clipped) and a note names the
  feature or metric and why. The features of a unit class the architecture lacks and the design's statements
  never name (a `mac` for a kernel without multiply-accumulate) are only noted: nothing the design runs reads
  them (before, every design on an architecture without a mac unit was flagged: an outside probe).

  Checkpoints without recorded feature ranges (those shipped before v14e30; today's record theirs) fall back
  to standardised values: a varied feature more than :data:`Z_FAR_ARCH` (8) training standard deviations away in the
  architecture vector, or :data:`Z_FAR_DESIGN` (15) in the design's vectors, except a zero (the featurisers'
  "absent") and the 0/1 of a feature whose mean and std are those of a 0/1 variable. That is a weak proxy,
  and the thresholds are set to flag only the far-out. Measured on the 106 library designs against the
  feature ranges of the shipped checkpoints' training rows (rebuilt from data/synth-v1: 1,758 of the 1,761
  rows, their means within 0.002-0.02 of the checkpoints' buffers), the ranges flag 6-10 designs per model;
  a flat |z| > 6 flags 24-53, most of them inside the training range (rare one-hot values and skewed counts
  reach |z| = 20 there); these thresholds flag 0-9, 0-3 of them inside the range, and miss most of the
  others. A huge unit count (1e12 MAC units) is flagged either way. Retraining records the real ranges.
  A design that is not flagged reports no confidence (a baseline has no calibrated one).
* **Power from energy and time.** ``power_mw`` is derived from the (clipped) energy and cycles as the
  analytical model and hlsim define it (:func:`llmulator.results.power_mw`: energy, leakage included, over
  cycles / clock); it is not clipped on its own (that would break the relation), and a derived power outside
  the training range of power is flagged like a clipped metric.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

FALLBACK_STD = 4.0
RANGE_MARGIN = 0.25
Z_FAR_ARCH = 8.0  # fallback threshold on the architecture vector (one row per training design)
Z_FAR_DESIGN = 15.0  # and on the design's node/step/statement vectors (rare one-hots, skewed counts)
OOD_CONFIDENCE = 0.2
CONSTANT_STD = 1e-3  # models._Base.set_stats clamps a never-varied feature's std here


def training_ranges(metrics: tuple[str, ...], x: np.ndarray, g: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """What training records in ``config.json``: the log-target range per metric, the feature ranges."""
    def mm(a: np.ndarray) -> list[list[float]]:
        a = np.asarray(a, dtype=np.float64)
        return [[round(float(v), 6) for v in a.min(0)], [round(float(v), 6) for v in a.max(0)]]
    y = np.asarray(y, dtype=np.float64)
    return {"target_log_range": {m: [float(y[:, i].min()), float(y[:, i].max())] for i, m in enumerate(metrics)},
            "feature_range": {"x": mm(x), "g": mm(g)}}


def target_log_range(config: dict[str, Any], metrics: tuple[str, ...], y_mean: np.ndarray,
                     y_std: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    """(low, high, where from) of each metric's log-prediction."""
    rec = config.get("target_log_range")
    if rec and all(m in rec for m in metrics):
        lo = np.array([rec[m][0] for m in metrics], dtype=np.float64)
        hi = np.array([rec[m][1] for m in metrics], dtype=np.float64)
        return lo, hi, "the training targets' range"
    y_mean, y_std = np.asarray(y_mean, np.float64), np.asarray(y_std, np.float64)
    return (y_mean - FALLBACK_STD * y_std, y_mean + FALLBACK_STD * y_std,
            f"the training mean +- {FALLBACK_STD:g} std (this checkpoint records no target range)")


def feature_names(kind: str, dim: int) -> list[str]:
    """A readable name for each design feature of baseline ``kind`` (a type one-hot by its type, else by index)."""
    from .features import OPS
    if kind == "gnn":
        from .graph import NODE_TYPES
        head, unit = [f"node type {t}" for t in NODE_TYPES], "node feature"
    elif kind == "tlp":
        from .sequence import STEP_TYPES
        head, unit = [f"step type {t}" for t in STEP_TYPES], "step feature"
    else:
        head = [f"statement {op} per execution" for op in OPS] + [f"statement {op} executions (lg)" for op in OPS]
        unit = "statement feature"
    return [head[k] if k < len(head) else f"{unit} {k}" for k in range(dim)]


def never_varied(std: np.ndarray) -> np.ndarray:
    """Features whose std is the clamp ``set_stats`` puts on a constant one (float32 1e-3 read as double)."""
    return np.asarray(std) <= CONSTANT_STD * (1 + 1e-4)


def _outside(v: np.ndarray, mean: np.ndarray, std: np.ndarray, rng: list | None,
             z_far: float) -> tuple[np.ndarray, np.ndarray]:
    """(flag, how far) per value of ``v`` (rows x features): features that varied in training only."""
    varied = ~never_varied(std)
    if rng is not None:
        lo, hi = np.asarray(rng[0], np.float64), np.asarray(rng[1], np.float64)
        span = np.maximum(hi - lo, 1e-9)
        beyond = np.maximum(lo - v, v - hi) / span  # in training spans; <= 0 inside the range
        return varied & (beyond > RANGE_MARGIN), beyond
    z = np.abs(v - mean) / std
    binary = (mean > 0) & (mean < 1) & (np.abs(std - np.sqrt(np.clip(mean * (1 - mean), 0, None))) <= 0.03 * std + 1e-3)
    plain = (v == 0) | (binary & ((v == 0) | (v == 1)))
    return varied & (z > z_far) & ~plain, z


def _fmt(v: float) -> str:
    return f"{v:.3g}"


class Checker:
    """The out-of-distribution rules of one checkpoint (its normalisation buffers and ``config.json``)."""

    def __init__(self, kind: str, config: dict[str, Any], model, metrics: tuple[str, ...]):
        self.kind = kind
        self.metrics = metrics
        buf = {k: _float64(getattr(model, k)) for k in ("x_mean", "x_std", "g_mean", "g_std", "y_mean", "y_std")}
        self.buf = buf
        self.lo, self.hi, self.range_source = target_log_range(config, metrics, buf["y_mean"], buf["y_std"])
        rng = config.get("feature_range") or {}
        self.x_range = rng.get("x")
        self.g_range = rng.get("g")
        self.x_names = feature_names(kind, len(buf["x_mean"]))
        from .features import arch_feature_names
        self.g_names = arch_feature_names()

    def features(self, x: np.ndarray, x_off: np.ndarray, g: np.ndarray,
                 idle: list[set[int]] | None = None) -> list[tuple[list[str], list[str]]]:
        """Per design (design ``i`` has rows ``x[x_off[i]:x_off[i + 1]]`` and ``g[i]``): the reasons it is out
        of distribution, and notes that do not lower confidence. ``idle[i]``: columns of ``g`` nothing design
        ``i`` runs reads (``features.idle_arch_columns``): outside the range, a note only."""
        b = self.buf
        x = np.asarray(x, np.float64)
        g = np.asarray(g, np.float64)
        n = len(g)
        out: list[tuple[list[str], list[str]]] = [([], []) for _ in range(n)]
        g_off = np.arange(n + 1)
        for vals, off, mean, std, rng, names, where, z_far in (
                (x, x_off, b["x_mean"], b["x_std"], self.x_range, self.x_names, "design", Z_FAR_DESIGN),
                (g, g_off, b["g_mean"], b["g_std"], self.g_range, self.g_names, "architecture", Z_FAR_ARCH)):
            if len(vals) == 0:
                continue
            how = "its training range" if rng is not None else f"{z_far:g} training std"
            bad, far = _outside(vals, mean, std, rng, z_far)
            constant = never_varied(std) & (np.abs(vals - mean) > 1e-6)
            for i in range(n):
                a, z = int(off[i]), int(off[i + 1])
                bad_i, far_i, con_i = bad[a:z], far[a:z], constant[a:z]
                cols = sorted(idle[i]) if idle is not None and where == "architecture" else []
                if cols and (bad_i[:, cols].any() or con_i[:, cols].any()):
                    hit = [c for c in cols if bad_i[:, c].any() or con_i[:, c].any()]
                    bad_i, con_i = bad_i.copy(), con_i.copy()
                    bad_i[:, cols] = con_i[:, cols] = False
                    units = ", ".join(dict.fromkeys(names[c].split(" ")[0] for c in hit))
                    out[i][1].append(f"the architecture has no {units} unit, which the design does not use: "
                                     "its features read at their training values")
                if bad_i.any():
                    score = np.where(bad_i, far_i, -np.inf)
                    r, k = np.unravel_index(int(np.argmax(score)), score.shape)
                    if rng is not None:
                        seen = f"training range {_fmt(rng[0][k])} .. {_fmt(rng[1][k])}"
                    else:
                        seen = f"training mean {_fmt(mean[k])}, std {_fmt(std[k])}"
                    more = int(bad_i.any(0).sum()) - 1
                    out[i][0].append(f"{where} feature '{names[k]}' = {_fmt(vals[a + r, k])} is beyond {how} "
                                     f"({seen})" + (f"; {more} more feature(s) too" if more else ""))
                if con_i.any():
                    listed = [names[k] for k in np.flatnonzero(con_i.any(0))]
                    text = (f"{where} feature(s) never varied in training, read at their training value: "
                            + ", ".join(listed[:4]) + (f" and {len(listed) - 4} more" if len(listed) > 4 else ""))
                    (out[i][0] if where == "design" else out[i][1]).append(text)
        return out

    def clamped(self, packed: dict) -> dict:
        """``packed`` with every input feature clamped into its training range (where recorded): the network
        reads no value it never saw, so it cannot extrapolate past what training spanned (a tensetmlp trained on
        the hlsim 0.34 labels put merge-sort 10,000x over with its raw features, 507x at most clamped). The
        out-of-distribution flags are taken from the features as they were (:meth:`features`)."""
        out = dict(packed)
        for key, rng in (("x", self.x_range), ("g", self.g_range)):
            if rng is not None and key in out and len(out[key]):
                v = np.asarray(out[key])
                out[key] = np.clip(v, np.asarray(rng[0], v.dtype), np.asarray(rng[1], v.dtype))
        return out

    def outputs(self, raw_log: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(clipped log-predictions, factor by which each was clipped: 1 when it was not)."""
        raw = np.asarray(raw_log, np.float64)
        mid = (self.lo + self.hi) / 2
        finite = np.isfinite(raw)
        safe = np.where(finite, raw, mid)
        clipped = np.clip(safe, self.lo, self.hi)
        factor = np.where(finite, np.exp(np.abs(safe - clipped)), np.inf)
        return clipped, factor


def _float64(t) -> np.ndarray:
    """A normalisation buffer (a torch tensor, or a NumPy array from numpy_models) as a float64 array."""
    return np.array(t.detach().double().numpy() if hasattr(t, "detach") else t, dtype=np.float64)


def clip_confidence(factor: float) -> float:
    """The confidence of a metric that had to be clipped by ``factor`` (> 1): 0.2 just past, less beyond."""
    if math.isinf(factor):
        return 0.0
    return OOD_CONFIDENCE / (1.0 + math.log2(factor))
