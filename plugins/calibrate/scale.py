"""The ``scale`` state: one multiplicative correction per metric and context (no torch, any estimator).

The factor of a metric is the geometric mean of profiled / estimated over the
replay sample, so it is the cheapest possible feedback model: it fixes a
consistent bias of the estimator on this context and nothing else.
``latency_us`` follows the cycles factor.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
from llmulator.results import METRICS
from llmulator.scoring import ape


def scaled(metrics: dict[str, float], factors: dict[str, float]) -> dict[str, float]:
    return {m: v * factors.get("cycles" if m == "latency_us" else m, 1.0) for m, v in metrics.items()}


class ScaleState:
    def __init__(self, estimator, factors: dict[str, float] | None = None):
        self.estimator = estimator
        self.factors = dict(factors or {})
        self._base: dict[str, dict[str, float]] = {}

    def prompt(self, design) -> str:
        return ""  # the scale needs no prompt: it corrects the estimator's numbers

    def base_estimate(self, design) -> dict[str, float]:
        key = (design.name, getattr(design, "variant", None))
        if key not in self._base:
            self._base[key] = dict(self.estimator.estimate([design])[0].metrics)
        return self._base[key]

    def estimate(self, design) -> dict[str, float]:
        return scaled(self.base_estimate(design), self.factors)

    def check_error(self, entries: list[dict[str, Any]], metric: str) -> float:
        errs = []
        for e in entries:
            pred = e["base"][metric] * self.factors.get(metric, 1.0)
            errs.append(float(ape(pred, e["truth"][metric])))
        return sum(errs) / len(errs)

    def snapshot(self) -> dict[str, float]:
        return dict(self.factors)

    def restore(self, snap: dict[str, float]) -> None:
        self.factors = dict(snap)

    def update(self, entries: list[dict[str, Any]]) -> dict[str, Any]:
        for m in METRICS:
            logs = [math.log(e["truth"][m] / e["base"][m]) for e in entries
                    if e["base"].get(m, 0) > 0 and e["truth"].get(m, 0) > 0]
            if logs:
                self.factors[m] = math.exp(sum(logs) / len(logs))
        return {"samples": len(entries), "factors": {m: round(f, 6) for m, f in self.factors.items()}}

    def save(self, meta: dict[str, Any]) -> dict[str, Any]:
        return {**meta, "scale": dict(self.factors)}


@attrs.define
class ScaledEstimator:
    """An estimator whose predictions are the base estimator's times a context's factors."""

    base: Any
    factors: dict[str, float]
    context: str
    name: str = ""
    version: str = ""

    def __attrs_post_init__(self):
        self.name = self.name or f"{self.base.name}@{self.context}"
        self.version = self.version or str(getattr(self.base, "version", ""))

    def available(self) -> str | None:
        from llmulator.hookspecs import why_unavailable
        return why_unavailable(self.base)

    def estimate(self, designs):
        out = []
        for e in self.base.estimate(designs):
            e.estimator = self.name
            e.metrics = scaled(e.metrics, self.factors)
            if e.interval:
                e.interval = {m: tuple(x * self.factors.get("cycles" if m == "latency_us" else m, 1.0)
                                       for x in iv) for m, iv in e.interval.items()}
            e.breakdown, e.terms = {}, {}  # the base's breakdown no longer adds up to the scaled totals
            e.notes = [*e.notes, f"calibrated: context '{self.context}' (scale " +
                       ", ".join(f"{m} x{f:.3g}" for m, f in self.factors.items()) + ")"]
            out.append(e)
        return out
