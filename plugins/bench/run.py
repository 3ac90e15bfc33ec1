"""Run estimators over the drawn designs: batched accuracy run, failure accounting, single-query latency.

One :class:`Outcome` per estimator and split holds everything the report and
the plots need. An estimator's ``estimate`` is batched (the registry contract);
when a batch raises, each design is tried alone to find the ones it cannot
price, those are counted with their reasons, and the rest is estimated again as
one batch so that predictions per second still measure a batched call.

Refused or raised: a ``SpecError``/``UserError`` is the estimator declining a
design it cannot price (counted, nothing more). Any other exception is a bug in
the estimator's plugin: it is counted the same way, and the first one is kept
in ``Outcome.raised`` (exception, where, on how many designs) so that
``bench`` names it, with the plugin and package to blame, and exits with 3
after writing the others' results.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections import Counter
from typing import Any

import attrs
import numpy as np
from llmulator.dataset import designs_of
from llmulator.errors import SpecError, UserError
from llmulator.results import METRICS

from .data import SplitDesigns

BATCH_RUNS = 3
REPEAT_BELOW_S = 2.0


@attrs.define
class Outcome:
    """One estimator on one split's drawn designs.

    ``rows`` are the drawn rows whose specs rebuilt; every per-metric array is aligned with them. A design the
    estimator raised on, or returned no finite metric for, is counted in ``failed`` and has NaN everywhere;
    a design it priced but without some metric (an estimator may report only ``cycles``) has NaN for that
    metric and is counted in ``missing`` — it is not a failure, and each metric is scored on the rows that
    have it (:meth:`ok`).
    """

    estimator: str
    version: str
    split: str
    drawn: int
    not_rebuilt: int
    failed: Counter  # reason -> designs the estimator raised on or returned no finite metric for
    measured: dict[str, np.ndarray]  # the hlsim label of every row
    predicted: dict[str, np.ndarray]  # NaN where the estimator has no finite value
    confidence: dict[str, np.ndarray]  # NaN where the estimate carries no confidence for the metric
    batch_rate: float | None  # designs per second of the best batched run (None: no batched run succeeded)
    batch_note: str = ""
    batch_runs: int = 1  # batched seconds: the best of this many runs
    single_ms: float | None = None  # median wall time of a one-design call
    single_n: int = 0
    rows: list[dict[str, Any]] = attrs.field(factory=list)
    lower: dict[str, np.ndarray] = attrs.field(factory=dict)  # the 90 % interval's bounds; NaN: no interval
    upper: dict[str, np.ndarray] = attrs.field(factory=dict)
    missing: Counter = attrs.field(factory=Counter)  # metric -> priced designs without a finite value for it
    seed: int = 0
    # the first exception other than SpecError/UserError: {"error", "where", "designs"} (a bug in its plugin)
    raised: dict[str, Any] | None = None

    def ok(self, m: str) -> np.ndarray:
        """Mask of the rows with a finite prediction of metric ``m``."""
        return np.isfinite(self.predicted[m]) if m in self.predicted else np.zeros(len(self.rows), bool)

    def n_metric(self, m: str) -> int:
        return int(self.ok(m).sum())

    @property
    def n(self) -> int:
        """Designs with at least one finite metric."""
        if not self.predicted:
            return 0
        return int(np.any([np.isfinite(v) for v in self.predicted.values()], axis=0).sum()) if self.rows else 0


def model_env(name: str) -> str:
    """The environment variable a checkpointed estimator reads its default checkpoint from."""
    return f"LLMULATOR_{name.upper().replace('-', '_')}_MODEL"


def set_model_paths(models: dict[str, str]) -> None:
    """Point each named estimator at a checkpoint before it is built (and drop an instance built earlier)."""
    from llmulator import plugins
    reg = plugins.registry()["estimators"]
    for name, path in models.items():
        os.environ[model_env(name)] = path
        if name in reg:
            reg[name].instance = None


def _reason(e: BaseException) -> str:
    msg = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {msg[:100]}"


def is_bug(e: BaseException) -> bool:
    """An exception that is not the estimator declining a design (SpecError/UserError): its plugin's bug."""
    return not isinstance(e, (SpecError, UserError))


def where(e: BaseException) -> str:
    """``file:line in function`` of the innermost frame an exception was raised at."""
    import traceback
    frames = traceback.extract_tb(e.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""


class _Bugs:
    """The first bug (an exception other than SpecError/UserError) an estimator raised, and how many designs."""

    def __init__(self):
        self.first: dict[str, Any] | None = None
        self.designs = 0

    def add(self, e: BaseException, designs: int = 1) -> None:
        if not is_bug(e):
            return
        if self.first is None:
            self.first = {"error": _reason(e), "where": where(e)}
        self.designs += designs

    def result(self) -> dict[str, Any] | None:
        return None if self.first is None else {**self.first, "designs": self.designs}


def _value(est: Any, m: str) -> float:
    """The estimate's finite value of metric ``m``, or NaN."""
    v = (est.metrics or {}).get(m) if est is not None else None
    try:
        v = float(v) if v is not None else math.nan
    except (TypeError, ValueError):
        return math.nan
    return v if math.isfinite(v) else math.nan


def _no_metric(est: Any) -> str | None:
    """Why an estimate is unusable (no finite metric at all), or None."""
    if any(math.isfinite(_value(est, m)) for m in METRICS):
        return None
    notes = [str(n) for n in (getattr(est, "notes", None) or [])]
    return "no finite metric" + (f" ({notes[0].splitlines()[0][:80]})" if notes and notes[0] else "")


def _estimate(est: Any, designs: list, bugs: _Bugs | None = None) -> tuple[list[Any | None], Counter, float | None,
                                                                          str]:
    """Estimates aligned with ``designs`` (None where it failed), failure reasons, batched designs/s, a note;
    exceptions that are bugs are recorded in ``bugs``."""
    bugs = bugs if bugs is not None else _Bugs()
    failed: Counter = Counter()
    if not designs:
        return [], failed, None, ""
    try:
        t0 = time.perf_counter()
        res = list(est.estimate(designs))
        dt = time.perf_counter() - t0
        if len(res) != len(designs):
            raise RuntimeError(f"estimate returned {len(res)} results for {len(designs)} designs")
        out: list[Any | None] = res
        rate = len(designs) / dt if dt > 0 else None
        note = ""
    except Exception:  # noqa: BLE001 - find the designs it fails on, one at a time
        out = []
        for d in designs:
            try:
                out.append(est.estimate([d])[0])
            except Exception as e:  # noqa: BLE001 - counted and reported
                failed[_reason(e)] += 1
                bugs.add(e)
                out.append(None)
        good = [i for i, e in enumerate(out) if e is not None]
        if not good:
            return out, failed, None, "every design failed"
        try:
            t0 = time.perf_counter()
            again = list(est.estimate([designs[i] for i in good]))
            dt = time.perf_counter() - t0
            rate = len(good) / dt if good and dt > 0 else None
            for i, e in zip(good, again, strict=True):
                out[i] = e
            note = "batch raised; failing designs removed and the rest re-run as one batch"
        except Exception:  # noqa: BLE001 - keep the one-at-a-time results
            rate = None
            note = "batch raised even without the failing designs; no batched speed"
    for i, e in enumerate(out):
        if e is not None and (why := _no_metric(e)):
            failed[why] += 1
            out[i] = None
    return out, failed, rate, note


def _per_metric(res: list[Any | None], field: str, m: str, k: int | None = None) -> np.ndarray:
    """One float per estimate from its ``field`` dict (``confidence``; ``interval`` with bound ``k``), NaN if none."""
    out = np.full(len(res), np.nan)
    for i, e in enumerate(res):
        d = getattr(e, field, None) if e is not None else None
        v = d.get(m) if d else None
        try:
            v = float(v if k is None else v[k]) if v is not None else math.nan
        except (TypeError, ValueError, IndexError):
            v = math.nan
        out[i] = v if math.isfinite(v) else math.nan
    return out


def run_one(name: str, est: Any, sd: SplitDesigns, single: int = 20, timing: bool = True, seed: int = 0) -> Outcome:
    """Estimate a split's designs; ``timing`` False skips the repeated batched runs and single queries
    (the extra seeds of ``--seeds`` measure accuracy only). An exception in a timing run (an estimator that
    raises now and then) ends the timing with a note; it never ends the bench."""
    rows = [r for r, _ in sd.pairs]
    designs = [d for _, d in sd.pairs]
    bugs = _Bugs()
    res, failed, rate, note = _estimate(est, designs, bugs)
    ok = [i for i, e in enumerate(res) if e is not None]
    measured = {m: np.array([float(r[m]) for r in rows]) for m in METRICS}
    predicted = {m: np.array([_value(e, m) for e in res]) for m in METRICS}
    missing = Counter({m: int(np.isnan(predicted[m][ok]).sum()) for m in METRICS})
    missing = +missing  # drop the zeros
    confidence = {m: _per_metric(res, "confidence", m) for m in METRICS}
    lower = {m: _per_metric(res, "interval", m, 0) for m in METRICS}
    upper = {m: _per_metric(res, "interval", m, 1) for m in METRICS}
    # Repeat a short batched run on freshly rebuilt designs and keep the best: other processes share the
    # cores, and interference only ever adds time. A run over REPEAT_BELOW_S is not repeated.
    runs, spent = 1, (len(ok) / rate if rate else 0.0)
    try:
        while timing and ok and rate and spent < REPEAT_BELOW_S and runs < BATCH_RUNS:
            again, _ = designs_of([rows[i] for i in ok])
            t0 = time.perf_counter()
            est.estimate([d for _, d in again])
            dt = time.perf_counter() - t0
            spent, runs = spent + dt, runs + 1
            if dt > 0:
                rate = max(rate, len(again) / dt)
    except Exception as e:  # noqa: BLE001 - the first run's speed stands
        bugs.add(e)
        note = (note + "; " if note else "") + f"a repeated run raised {_reason(e)}"
    # fresh Design objects: the batched run has filled each design's caches (parsed loop tree), and a
    # single query on a design seen before would not pay for that
    fresh, _ = designs_of([rows[i] for i in ok[:single]]) if timing else ([], None)
    times = []
    for _, d in fresh:
        t0 = time.perf_counter()
        try:
            est.estimate([d])
        except Exception as e:  # noqa: BLE001 - timed on the designs that did not raise
            bugs.add(e)
            continue
        times.append(time.perf_counter() - t0)
    return Outcome(name, str(getattr(est, "version", "")), sd.split, sd.drawn, sum(sd.not_rebuilt.values()), failed,
                   measured, predicted, confidence, rate, note, runs,
                   statistics.median(times) * 1e3 if times else None, len(times),
                   rows=rows, lower=lower, upper=upper, missing=missing, seed=seed, raised=bugs.result())


def warm_up(est: Any, sd_list: list[SplitDesigns]) -> None:
    """One untimed call, so that loading a model is not counted as prediction time."""
    tries = [d for sd in sd_list for _, d in sd.pairs][:5]
    for d in tries:
        try:
            est.estimate([d])
            return
        except Exception:  # noqa: BLE001 - try the next design; failures are counted in the timed run
            continue


def blame(kind: str, name: str) -> dict[str, Any]:
    """The plugin and package a component comes from, and whose bug its exception is."""
    from llmulator import plugins
    r = plugins.registry()[kind].get(name)
    return {"plugin": r.plugin if r else None, "package": r.distribution if r else None,
            "blame": plugins.blame(kind, name)}


def print_failures(kind: str, failed: dict[str, dict[str, Any]], file=None) -> None:
    """``error: estimator 'x' raised ...`` with the plugin and package to blame, one block per component."""
    import sys
    for n, f in failed.items():
        on = f" on {f['designs']} design{'s' if f['designs'] != 1 else ''}" if f.get("designs") else ""
        print(f"error: {kind} '{n}' raised {f['error']}{on}\n  {f['blame']}"
              + (f"\n  raised at {f['where']}" if f.get("where") else ""), file=file or sys.stderr)
