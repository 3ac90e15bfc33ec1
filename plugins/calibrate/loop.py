"""The calibration loop shared by every calibrator: estimate, profile, buffer, update, check, repeat.

Iteration 0 is the static estimate against the profile of the first input.
Iteration k (k >= 1) is the estimate after the k-th update against the
profile of the k-th input (inputs are cycled; an input already profiled is not
profiled again, so with a single input the loop costs one profiler run). Each
round

1. adds the feedback (prompt, profiled metrics, the estimate that was made)
   to the replay buffer, which is written to disk before anything else
   happens (a calibration killed later loses nothing it measured);
2. snapshots the calibrator's state and measures the error on the buffer's
   held-back check entries;
3. updates the state on a replay sample (newest feedback + older samples);
4. measures the check error again: if it got worse (by more than
   ``guard_slack`` percentage points, default 0.5: the last mantissa digit of
   a prediction is worth up to 1 %, and relative ``guard_margin``, default 0),
   the snapshot is restored (the previous adapter or scale stays in use) and
   the round is reported as rolled back; otherwise the new state is saved
   under the context.

It stops when the error of ``metric`` is under ``tol`` percent, after
``max_iters`` updates, or when the next round would need a profiler run beyond
``budget``.

In-sample or held out: each iteration's error is scored on one input's
profile. When feedback from that input is already in the replay buffer (with a
single input, every iteration after the first), the error is *in-sample*: it
says the update fitted the data it was given (a ``scale`` update fits one input
exactly: 0.00 %), not that it will be right on the next input. Iterations are
marked ``in_sample``, and the option ``holdout`` (inputs no feedback came from;
``llmulator calibrate`` adds one by default) is profiled after the loop to
measure the error of the uncalibrated and the calibrated estimator on data
the calibration never saw (``CalibrationReport.held_out``). Held-out profiles
are not counted against ``budget`` (``held_out["profiler_runs"]``).

A calibrator supplies a *state* object with ``estimate(design) -> metrics``,
``base_estimate(design) -> metrics`` (the uncalibrated estimator),
``prompt(design) -> str``, ``check_error(entries, metric) -> float``,
``snapshot()``, ``restore(snap)``, ``update(entries) -> dict`` and
``save(meta) -> meta``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from llmulator import scoring
from llmulator.results import METRICS

from . import store


def ape(pred: dict[str, float], truth: dict[str, float]) -> dict[str, float]:
    """Absolute percentage error per metric (``llmulator.scoring.ape``)."""
    return {m: float(scoring.ape(pred[m], truth[m])) for m in METRICS if m in pred and m in truth}


@attrs.define
class Iteration:
    iteration: int
    ape: dict[str, float]
    profiler_runs: int
    seconds: float
    inputs: str
    update: str = ""  # "", "accepted", "rolled back", "skipped"
    in_sample: bool = False  # scored on an input whose feedback was already in the replay buffer (fitted to it)
    check_before: float | None = None
    check_after: float | None = None
    train: dict[str, Any] = attrs.field(factory=dict)


@attrs.define
class CalibrationReport:
    calibrator: str
    context: str
    design: str
    metric: str
    tol: float
    iterations: list[Iteration] = attrs.field(factory=list)
    stopped: str = ""  # converged | max-iters | budget
    profiler_runs: int = 0
    seconds: float = 0.0
    buffer_entries: int = 0
    rollbacks: int = 0
    # inputs no feedback came from: {"inputs": [origin, ...], "static_ape": {metric: mean %},
    # "calibrated_ape": {metric: mean %}, "profiler_runs": n}; None when none were given
    held_out: dict[str, Any] | None = None

    @property
    def static_ape(self) -> float:
        return self.iterations[0].ape[self.metric]

    @property
    def final_ape(self) -> float:
        """The last iteration's error: in-sample when ``iterations[-1].in_sample`` (see ``held_out``)."""
        return self.iterations[-1].ape[self.metric]

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def check_options(options: dict[str, Any]) -> tuple[int, int, float, str]:
    from llmulator.errors import UserError
    max_iters, budget, tol = options.get("max_iters", 5), options.get("budget", 10), options.get("tol", 10.0)
    metric = options.get("metric", "cycles")
    if not isinstance(max_iters, int) or max_iters < 0:
        raise UserError(f"--max-iters must be a non-negative integer, got {max_iters!r}")
    if not isinstance(budget, int) or budget < 1:
        raise UserError(f"--budget must be a positive number of profiler runs, got {budget!r}")
    try:
        tol = float(tol)
    except (TypeError, ValueError):
        raise UserError(f"--tol must be a percentage, got {tol!r}") from None
    if not 0 < tol < 1000 or tol != tol:
        raise UserError(f"--tol must be a percentage above 0 (e.g. 10 for 10 %), got {tol!r}")
    if metric not in METRICS:
        raise UserError(f"unknown metric '{metric}' (one of: {', '.join(METRICS)})")
    return max_iters, budget, tol, metric


def run(calibrator: str, state, design, inputs: Sequence, profiler, context: str, meta: dict[str, Any],
        buffer: store.ReplayBuffer, on_iteration: Callable[[Iteration], None] | None = None,
        **options) -> CalibrationReport:
    max_iters, budget, tol, metric = check_options(options)
    if not inputs:
        from llmulator.errors import UserError
        raise UserError("calibration needs at least one input")
    t0 = time.perf_counter()
    report = CalibrationReport(calibrator, context, design.name, metric, tol)
    profiles: dict[str, Any] = {}
    variant = getattr(design, "variant", None)
    # inputs whose feedback for this design is in the buffer (from this run or an earlier one into the context)
    fitted = {e.get("inputs") for e in buffer.entries
              if e.get("design") == design.name and e.get("variant") == variant}
    holdout = list(options.get("holdout") or [])
    from llmulator.errors import UserError
    for h in holdout:
        if any(h.origin == i.origin for i in inputs):
            raise UserError(f"input '{h.origin}' is both calibrated on and held out; hold out another input")
        if h.origin in fitted:
            raise UserError(f"input '{h.origin}' is not held out: context '{context}' already holds feedback from "
                            "it; hold out another input")

    def measure(inp):
        p = profiler.profile(design, inp)
        if not (p.functional_check.startswith("pass") or p.functional_check.startswith("not-run")):
            raise UserError(f"profiling {design.name} on {inp.origin} failed its functional check: "
                            f"{p.functional_check}")
        return p

    def profile(k: int):
        inp = inputs[k % len(inputs)]
        if inp.origin not in profiles:
            profiles[inp.origin] = measure(inp)
            report.profiler_runs += 1
        return inp.origin, profiles[inp.origin]

    def row(k: int, est: dict[str, float], origin: str, prof, **kw) -> Iteration:
        it = Iteration(k, ape(est, prof.metrics), report.profiler_runs, round(time.perf_counter() - t_it, 3),
                       origin, in_sample=origin in fitted, **kw)
        report.iterations.append(it)
        if on_iteration:
            on_iteration(it)
        return it

    t_it = time.perf_counter()
    est = state.estimate(design)
    origin, prof = profile(0)
    it = row(0, est, origin, prof)
    base = state.base_estimate(design)
    prompt = state.prompt(design)
    k = 0
    while True:
        if it.ape[metric] < tol:
            report.stopped = "converged"
            break
        if k >= max_iters:
            report.stopped = "max-iters"
            break
        if inputs[(k + 1) % len(inputs)].origin not in profiles and report.profiler_runs >= budget:
            report.stopped = "budget"
            break
        t_it = time.perf_counter()
        fitted.add(origin)
        buffer.add({"design": design.name, "variant": variant, "inputs": origin,
                    "prompt": prompt, "truth": dict(prof.metrics), "predicted": dict(est), "base": dict(base),
                    "iteration": k, "calibrator": calibrator})
        train, check = buffer.split()
        before = state.check_error(check, metric)
        snap = state.snapshot()
        stats = state.update(buffer.sample(train, newest=options.get("newest", 1), older=options.get("replay", 7)))
        if stats.get("skipped"):
            outcome, after = "skipped", before
        else:
            after = state.check_error(check, metric)
            if after > before * (1 + options.get("guard_margin", 0.0)) + options.get("guard_slack", 0.5) + 1e-9:
                state.restore(snap)
                outcome = "rolled back"
                report.rollbacks += 1
                meta["rollbacks"] = meta.get("rollbacks", 0) + 1
            else:
                outcome = "accepted"
                meta["updates"] = meta.get("updates", 0) + 1
                meta = state.save(meta)
        meta.setdefault("log", []).append({"design": design.name, "inputs": origin, "update": outcome,
                                           "check_before": before, "check_after": after, "time": time.time()})
        meta["log"] = meta["log"][-200:]
        store.write_context(context, meta)
        if outcome == "accepted" and hasattr(state, "committed"):
            state.committed()  # the new state is named in context.json: older files can go
        k += 1
        est = state.estimate(design)
        origin, prof = profile(k)
        it = row(k, est, origin, prof, update=outcome, check_before=before, check_after=after, train=stats)
    if holdout:  # the error on inputs no feedback came from, before and after the calibration
        static, calibrated = state.base_estimate(design), state.estimate(design)
        before: dict[str, list[float]] = {}
        after: dict[str, list[float]] = {}
        for h in holdout:
            p = measure(h)
            for m, v in ape(static, p.metrics).items():
                before.setdefault(m, []).append(v)
            for m, v in ape(calibrated, p.metrics).items():
                after.setdefault(m, []).append(v)
        report.held_out = {"inputs": [h.origin for h in holdout],
                           "static_ape": {m: sum(v) / len(v) for m, v in before.items()},
                           "calibrated_ape": {m: sum(v) / len(v) for m, v in after.items()},
                           "profiler_runs": len(holdout)}
    report.seconds = round(time.perf_counter() - t0, 3)
    report.buffer_entries = len(buffer.entries)
    return report
