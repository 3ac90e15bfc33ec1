"""Result records shared by every estimator, profiler and calibrator.

One metric vocabulary everywhere: ``cycles``, ``energy_pj``, ``power_mw``,
``area_um2`` and the derived ``latency_us``. Breakdowns use the same names
with a component suffix (``energy_pj.GLB``, ``cycles.L_k``). All records are
attrs classes that serialise to JSON-ready dicts and back.
"""

from __future__ import annotations

from typing import Any

import attrs

METRICS = ("cycles", "energy_pj", "power_mw", "area_um2")
DERIVED = ("latency_us",)
UNITS = {"cycles": "cycles", "energy_pj": "pJ", "power_mw": "mW", "area_um2": "um^2", "latency_us": "us"}


def power_mw(energy_pj: float, cycles: float, clock_mhz: float) -> float:
    """Average power: energy over the run time (cycles / clock)."""
    if cycles <= 0:
        return 0.0
    return energy_pj * clock_mhz / cycles * 1e-3


def latency_us(cycles: float, clock_mhz: float) -> float:
    return cycles / clock_mhz


def _tuple_dict(d: dict[str, Any] | None) -> dict[str, tuple[float, float]] | None:
    if d is None:
        return None
    return {k: (float(v[0]), float(v[1])) for k, v in d.items()}


@attrs.define
class Estimate:
    """What an estimator predicts for one design."""

    estimator: str  # the estimator's name (its column in `llmulator estimate`)
    version: str  # the estimator's version
    #: metric -> value, named from the shared vocabulary (``cycles``, ``energy_pj``, ``power_mw``,
    #: ``area_um2``; ``latency_us`` is derived from cycles and the clock); any subset of them
    metrics: dict[str, float]
    confidence: dict[str, float] | None = None  # 0..1 per metric (shown next to the value), or None
    #: (low, high) per metric, a 90 % interval where the estimator has one; lists in JSON
    interval: dict[str, tuple[float, float]] | None = attrs.field(default=None, converter=_tuple_dict)
    #: parts of a metric by component: ``energy_pj.GLB``, ``cycles.L_k`` (shown by ``estimate --terms``)
    breakdown: dict[str, float] = attrs.field(factory=dict)
    terms: dict[str, float] = attrs.field(factory=dict)  # named intermediate quantities (``ideal_cycles``, ...)
    seconds: float = 0.0  # wall time of the estimate (set by the estimator; a batch may share it out)
    design: str = ""  # ``Design.name`` of the design estimated
    notes: list[str] = attrs.field(factory=list)  # one-line remarks printed under the table (assumptions made)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``from_dict`` reads it back)."""
        d = attrs.asdict(self)
        if self.interval is not None:
            d["interval"] = {k: list(v) for k, v in self.interval.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Estimate:
        return cls(**d)


@attrs.define
class Profile:
    """What a profiler measured for one design on concrete inputs."""

    profiler: str  # the profiler's name
    version: str  # the profiler's version
    metrics: dict[str, float]  # measured metrics, same vocabulary as ``Estimate.metrics``
    #: raw counts: ``trips.L`` (mean trips per entry), ``iterations.L`` and ``invocations.L`` (totals),
    #: ``reads.LEVEL``, ``writes.LEVEL``, ``ops.CLASS``, ...
    counters: dict[str, float] = attrs.field(factory=dict)
    breakdown: dict[str, float] = attrs.field(factory=dict)  # parts of a metric by component, as in Estimate
    functional_check: str = "not-run"  # "pass", "fail: ...", "not-run"
    inputs: str = ""  # the seed/variant or directory that made the inputs
    seconds: float = 0.0  # wall time of the run
    design: str = ""  # ``Design.name`` of the design measured
    notes: list[str] = attrs.field(factory=list)  # one-line remarks printed under the table

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``from_dict`` reads it back)."""
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Profile:
        return cls(**d)


@attrs.define
class Feedback:
    """(design, inputs, estimate, profile): what calibration learns from."""

    design: dict[str, Any]
    inputs: str
    estimate: Estimate
    profile: Profile

    def to_dict(self) -> dict[str, Any]:
        return {"design": self.design, "inputs": self.inputs, "estimate": self.estimate.to_dict(),
                "profile": self.profile.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Feedback:
        return cls(d["design"], d["inputs"], Estimate.from_dict(d["estimate"]),
                   Profile.from_dict(d["profile"]))
