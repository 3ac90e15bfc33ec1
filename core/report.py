"""Terminal tables for estimates: their content as a :class:`~llmulator.plaintable.Grid` (what ``estimate``
prints, without rich where it can: ``llmulator.plaintable``), or as a rich ``Table``."""

from __future__ import annotations

from typing import Any

from .plaintable import Grid
from .results import METRICS, UNITS, latency_us


def fmt(v: float) -> str:
    if v is None:
        return "-"
    av = abs(v)
    if av == 0:
        return "0"
    if av >= 1e6 or av < 1e-2:
        return f"{v:.4g}"
    if av >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def estimate_table(design, estimates, others: dict[str, str] | None = None) -> Any:
    """:func:`estimate_grid` as a rich ``Table``."""
    return estimate_grid(design, estimates, others).to_rich()


def terms_table(e) -> Any:
    """:func:`terms_grid` as a rich ``Table``."""
    return terms_grid(e).to_rich()


def estimate_grid(design, estimates, others: dict[str, str] | None = None) -> Grid:
    """One column per estimate; ``others`` (estimator name -> "failed" or "refused") get a column of
    their own that says so in every row (the reason is printed under the table)."""
    others = others or {}
    t = Grid(title=f"estimates for {design.name}")
    t.add_column("metric")
    t.add_column("unit")
    for e in estimates:
        t.add_column(e.estimator, justify="right")
    for n in others:
        t.add_column(n, justify="right", style="red")
    metrics = list(METRICS) + ["latency_us"]
    for m in metrics:
        row = [m, UNITS[m]]
        for e in estimates:
            if m == "latency_us" and "cycles" in e.metrics:
                v = e.metrics.get(m, latency_us(e.metrics["cycles"], design.arch.clock_mhz))
            else:
                v = e.metrics.get(m)
            cell = fmt(v) if v is not None else "-"
            if e.confidence and m in e.confidence:
                cell += f" ({e.confidence[m]:.0%})"
            row.append(cell)
        t.add_row(*row, *others.values())
    t.add_row("seconds", "s", *[f"{e.seconds:.4f}" for e in estimates], *["-" for _ in others])
    return t


def terms_grid(e) -> Grid:
    t = Grid(title=f"{e.estimator}: terms and breakdown")
    t.add_column("term")
    t.add_column("value", justify="right")
    for k, v in e.terms.items():
        t.add_row(k, fmt(v))
    for k, v in e.breakdown.items():
        t.add_row(k, fmt(v))
    return t
