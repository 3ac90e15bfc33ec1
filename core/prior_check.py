"""The far-from-prior rule: a learned estimate more than :data:`FAR` (4x) away from the analytical model's, either
way, keeps at most a low confidence, its 90 % interval widened to cover the analytical value, and a note.

Why shared: the ``llm`` estimator corrects the analytical prior it reads and must never be wild against it; the
learned baselines (``gnn``, ``tlp``, ``tensetmlp``) do not read it, and an outside user found them 9-23x off on
designs they flagged as in distribution (a bit-reversal kernel: tlp 15,776 cycles, its interval 9,581-26,786,
hlsim 687). A design on which a learned model and the physics-based count disagree by more than 4x is one that
model has not learned to price, whatever its features say.
"""

from __future__ import annotations

import math

from .results import METRICS

FAR = 4.0  # a prediction further than this factor from the analytical estimate is flagged
FAR_CONFIDENCE = 0.2  # the most confidence such a prediction keeps (at exactly FAR; less beyond)


def far_ratio(value: float, prior: float) -> float:
    """How many times apart a prediction and its prior are (>= 1; inf when one is zero and the other not)."""
    if value == prior:
        return 1.0
    if value <= 0 or prior <= 0:
        return math.inf
    return max(value / prior, prior / value)


def confidence_cap(ratio: float) -> float:
    """The most confidence a prediction ``ratio`` times away from its prior keeps (1 within :data:`FAR`)."""
    if ratio <= FAR:
        return 1.0
    if math.isinf(ratio):
        return 0.0
    return FAR_CONFIDENCE / (1.0 + math.log2(ratio / FAR))


def check_against_prior(metrics: dict[str, float], confidence: dict[str, float] | None,
                        interval: dict[str, tuple[float, float]] | None, prior: dict[str, float],
                        which: tuple[str, ...] = METRICS) -> tuple[dict[str, float] | None, dict | None, list[str]]:
    """Cap the confidence and widen the interval of every metric (of ``which``) more than :data:`FAR` from the
    prior.

    Returns (confidence, interval, notes); a head that reports no confidence or interval gets them for the
    flagged metrics only."""
    notes = []
    for m in which:
        if m not in metrics or m not in prior:
            continue
        v, p = float(metrics[m]), float(prior[m])
        ratio = far_ratio(v, p)
        if ratio <= FAR:
            continue
        cap = confidence_cap(ratio)
        confidence = {} if confidence is None else confidence
        confidence[m] = min(confidence.get(m, 1.0), cap)
        interval = {} if interval is None else interval
        lo, hi = interval.get(m, (v, v))
        interval[m] = (min(lo, v, p), max(hi, v, p))
        apart = "one of them zero" if math.isinf(ratio) else \
            f"{ratio:.3g}x {'above' if v > p else 'below'} it, over {FAR:g}x apart"
        notes.append(f"{m} {v:.3g} against the analytical prior {p:.3g} ({apart}): confidence capped at "
                     f"{confidence[m]:.2g}, 90 % interval widened to cover the prior")
    return confidence, interval, notes
