"""What keeps the ``llm`` estimator's output from being wild: its analytical prior, checked and compared.

The model reads the analytical estimator's four metrics in its prompt (``hints: analytical``) and learns a
correction to them. Three rules follow:

* **No prior, no estimate.** A design the analytical model cannot price (it raises, or gives cycles that are
  not finite and positive, or a non-finite energy or area) has no prior for the model to correct; the prompt
  would say ``static none`` and the model would write digits anyway (once 11 cycles at 99.9 % confidence for a
  loop of unknown length). :func:`prior_of` raises :class:`~llmulator.errors.SpecError` instead, with the
  analytical model's own diagnostics: the way every estimator in this project refuses a design it cannot
  price (``llmulator estimate`` lists it under *refused* and keeps the other estimators' results; a batch
  that holds such a design raises, and callers price the rest one at a time). Checkpoints that do not read
  the prior (``hints: none | static``) are not refused; the prior, when there is one, is still the reference
  of the next rule.
* **Far from the prior, low confidence.** A prediction more than :data:`FAR` (4x) away from the prior, either
  way, gets a confidence of at most ``0.2 / (1 + log2(ratio / 4))`` (0.2 at 4x, 0.1 at 8x, 0.067 at 16x;
  0 for a zero against a positive prior), its 90 % interval is widened to cover the prior as well (the
  model and the prior disagree; the truth has been on either side), and a note says which metric, how far
  and in which direction.
* **Power from energy and time.** The model writes a power figure of its own, which need not agree with its
  energy and cycles. The reported ``power_mw`` is derived as the analytical model and hlsim define it:
  energy (which includes the leakage over the run) over the run time, ``energy_pj * clock_mhz / cycles *
  1e-3`` (:func:`llmulator.results.power_mw`); its confidence is the lower of the energy's and the cycles'
  and its interval the range their intervals allow, both after their own far-from-prior check. The rule
  then applies to the derived power as to the others.
* **A prior built on guesses, at most half sure.** Where the prior rests on what no one measured (a
  data-dependent loop priced from the user's ``expected_trips`` hint, a branch priced from its
  ``taken_probability`` hint or at the 0.5 default), the
  model cannot know whether the guess holds, and it copies the prior (docs/llm-vs-prior.md): the
  cycles', energy's and power's confidence is capped at :data:`GUESS_CONFIDENCE` and a note names the loops
  and branches. An outside user's heap kernel with a wrong hint was 17-34x off at 0.9995
  confidence before.
"""

from __future__ import annotations

import math
from typing import Any

from llmulator.errors import Diagnostic, SpecError
from llmulator.prior_check import FAR, FAR_CONFIDENCE, check_against_prior, confidence_cap, far_ratio  # noqa: F401 - the far-from-prior rule, shared with the baselines
from llmulator.results import METRICS, power_mw


def _file_of(d) -> str:
    smap = getattr(d.workload, "source_map", None)
    return smap.file if smap is not None else "<workload>"


def unavailable(d, why: str, cause: list[Diagnostic] | None = None) -> SpecError:
    """The refusal: a lead diagnostic naming the design and why, then the analytical model's own."""
    lead = Diagnostic(_file_of(d), None, None, "",
                      f"no analytical prior for design '{d.name}' ({why}), and the llm estimator corrects that "
                      "prior: it reports the design unavailable rather than guess",
                      hint="make the design one the analytical estimator can price (`llmulator estimate ... "
                           "--estimator analytical` shows what it needs), or use a profiler")
    return SpecError([lead, *(cause or [])])


def prior_of(d, analytical=None) -> dict[str, float]:
    """The analytical estimator's metrics of ``d``; raises the refusal when it cannot price it."""
    if analytical is None:
        from llmulator_plugins.analytical.estimator import AnalyticalEstimator
        analytical = AnalyticalEstimator()
    try:
        metrics = dict(analytical.estimate([d])[0].metrics)
    except SpecError as e:
        raise unavailable(d, "the analytical model cannot price it", e.diagnostics) from None
    except Exception as e:  # noqa: BLE001 - any failure of the prior leaves nothing to correct: refused, named
        raise unavailable(d, f"the analytical model failed: {type(e).__name__}: {e}") from None
    cycles = metrics.get("cycles")
    if not isinstance(cycles, int | float) or not math.isfinite(cycles) or cycles <= 0:
        raise unavailable(d, f"the analytical model gives {cycles!r} cycles")
    for m in ("energy_pj", "area_um2"):
        v = metrics.get(m)
        if not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            raise unavailable(d, f"the analytical model gives {m} = {v!r}")
    return metrics


def derive_power(metrics: dict[str, float], confidence: dict[str, float] | None,
                 interval: dict[str, tuple[float, float]] | None, clock_mhz: float) -> None:
    """``power_mw`` (value, confidence, interval) from energy and cycles, in place."""
    metrics["power_mw"] = power_mw(metrics["energy_pj"], metrics["cycles"], clock_mhz)
    if confidence is not None:  # as trustworthy as the less trustworthy of the two it is derived from
        given = [confidence[k] for k in ("cycles", "energy_pj") if k in confidence]
        if given:
            confidence["power_mw"] = min(given)
        else:
            confidence.pop("power_mw", None)
    if interval is not None and "cycles" in interval and "energy_pj" in interval:
        (e_lo, e_hi), (c_lo, c_hi) = interval["energy_pj"], interval["cycles"]
        p = metrics["power_mw"]
        if c_lo > 0:
            interval["power_mw"] = (min(power_mw(e_lo, c_hi, clock_mhz), p), max(power_mw(e_hi, c_lo, clock_mhz), p))
        else:  # a zero lower bound on time bounds no power
            interval.pop("power_mw", None)
    elif interval is not None:
        interval.pop("power_mw", None)


GUESS_CONFIDENCE = 0.5  # the most confidence a prediction whose prior rests on hints or default guesses keeps


def guesses(d) -> list[str]:
    """What the design's analytical prior takes on trust: data-dependent loops priced from a hint (no control
    run, structure or measurement gives their trips) and branches priced from a ``taken_probability`` hint or at
    0.5 (before llm 0.10 a hinted branch kept its confidence: an outside probe's sparse-matrix kernel, hint 0.5
    where its rows are 90 % full, was 1.4x off at 0.96)."""
    loops = [lb for lb, lp in d.tree.loops.items() if not lp.static and lb not in d.measured_trips
             and d.trip_profile(lb) is None]
    branches = [br.label or f"line {br.line}" for br in d.tree.walk()
                if getattr(br, "kind", "") == "branch" and d.branch_guessed(br)]
    return ([f"loop(s) {', '.join(loops)} from their expected_trips hints"] if loops else []) + (
        [f"branch(es) {', '.join(branches)} from a taken_probability hint or the 0.5 default"] if branches else [])


def cap_for_guesses(d, confidence: dict[str, float] | None) -> tuple[dict[str, float] | None, list[str]]:
    """Confidence capped at :data:`GUESS_CONFIDENCE` where the prior rests on :func:`guesses`, with a note."""
    why = guesses(d)
    if not why:
        return confidence, []
    capped = dict(confidence or {m: 1.0 for m in METRICS})
    for m in ("cycles", "energy_pj", "power_mw"):  # what the run's control decides (the area does not follow it)
        capped[m] = min(float(capped.get(m, 1.0)), GUESS_CONFIDENCE)
    return capped, [f"the analytical prior takes {'; '.join(why)}: the model cannot tell whether they hold, "
                    f"confidence capped at {GUESS_CONFIDENCE:g}"]


def guard(metrics: dict[str, float], confidence: dict[str, Any] | None, interval: dict[str, Any] | None,
          prior: dict[str, float] | None, clock_mhz: float) -> tuple[dict, dict | None, dict | None, list[str]]:
    """Power derived from energy and time, latency from cycles, then the far-from-prior check.

    Returns (metrics, confidence, interval, notes), copies of the inputs."""
    metrics = dict(metrics)
    confidence = None if confidence is None else dict(confidence)
    interval = None if interval is None else {k: tuple(v) for k, v in interval.items()}
    notes: list[str] = []
    own = tuple(m for m in METRICS if m != "power_mw")
    if prior is not None:  # energy and cycles first: the power is derived from what they end up with
        confidence, interval, notes = check_against_prior(metrics, confidence, interval, prior, own)
    derive_power(metrics, confidence, interval, clock_mhz)
    metrics["latency_us"] = metrics["cycles"] / clock_mhz
    if prior is not None:
        confidence, interval, more = check_against_prior(metrics, confidence, interval, prior, ("power_mw",))
        notes += more
    return metrics, confidence, interval, notes
