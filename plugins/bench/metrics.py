"""Error and ranking statistics of predictions against measurements (pure numpy).

Kept apart from the runner so the numbers the report prints can be checked on
hand-computed examples. APE, its summary and Kendall's tau are
:mod:`llmulator.scoring`'s (importable from here too); this module adds the
statistics only ``bench`` reports.
"""

from __future__ import annotations

import numpy as np
from llmulator.scoring import ape, kendall_tau, summarise

__all__ = ["ape", "kendall_tau", "summarise", "confidence_quartiles", "pairs_by_key", "ranking_accuracy",
           "direction", "direction_accuracy", "interval_coverage", "beats_prior", "confident_misses", "mean_std"]


def confidence_quartiles(conf, errs) -> tuple[float, float] | None:
    """MAPE of the most confident quartile and of the least confident quartile (None if too few points).

    An informative confidence gives a top-quartile MAPE well below the bottom one.
    """
    c, e = np.asarray(conf, dtype=float), np.asarray(errs, dtype=float)
    if c.size < 4:
        return None
    q1, q3 = np.percentile(c, 25), np.percentile(c, 75)
    top, bottom = e[c >= q3], e[c <= q1]
    return float(top.mean()), float(bottom.mean())


# -- beyond MAPE: pairs, intervals, the analytical prior, confident misses ----------------------------

#: two values within this relative difference of each other are a tie
TIE = 0.01
#: fewer pairs than this: the pair statistics print "-" (and their n)
MIN_PAIRS = 5


def _tied(a: float, b: float, tie: float = TIE) -> bool:
    return abs(a - b) <= tie * max(abs(a), abs(b))


def pairs_by_key(keys, variants) -> list[tuple[int, int]]:
    """Index pairs ``(i, j)``, ``i < j``, of items with equal ``keys[i] == keys[j]`` and different ``variants``."""
    groups: dict = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    out = []
    for idx in groups.values():
        for a in range(len(idx)):
            for b in range(a + 1, len(idx)):
                i, j = idx[a], idx[b]
                if variants[i] != variants[j]:
                    out.append((i, j))
    return out


def ranking_accuracy(pred, truth, pairs, tie: float = TIE) -> tuple[float, int]:
    """(fraction, n): of the ``pairs`` whose measured values differ by more than ``tie`` (relative), the
    fraction where the design with the lower measured value also has the strictly lower prediction.

    A pair the measurement ties (within ``tie``) has no faster design and is left out of ``n``; a predicted
    tie (equal values) on a pair that is not tied counts as wrong. NaN when ``n`` is 0.
    """
    p, t = np.asarray(pred, dtype=float), np.asarray(truth, dtype=float)
    n = right = 0
    for i, j in pairs:
        if not (np.isfinite(p[i]) and np.isfinite(p[j])) or _tied(t[i], t[j], tie):
            continue
        n += 1
        right += int(np.sign(p[i] - p[j]) == np.sign(t[i] - t[j]))
    return (right / n if n else float("nan")), n


def direction(a: float, b: float, tie: float = TIE) -> int:
    """-1, 0 or +1: how the value moves from ``a`` to ``b`` (0 when within ``tie`` of each other)."""
    return 0 if _tied(a, b, tie) else int(np.sign(b - a))


def direction_accuracy(pred, truth, pairs, tie: float = TIE) -> tuple[float, int]:
    """(fraction, n): of the ``pairs`` (both predicted), the fraction where the prediction moves the same
    way as the measurement from item ``i`` to item ``j``: both up, both down, or both tied (within ``tie``).
    NaN when ``n`` is 0."""
    p, t = np.asarray(pred, dtype=float), np.asarray(truth, dtype=float)
    n = right = 0
    for i, j in pairs:
        if not (np.isfinite(p[i]) and np.isfinite(p[j])):
            continue
        n += 1
        right += int(direction(p[i], p[j], tie) == direction(t[i], t[j], tie))
    return (right / n if n else float("nan")), n


def interval_coverage(lo, hi, truth) -> tuple[float, int]:
    """(fraction, n): of the items with a finite interval, the fraction whose measured value lies in
    ``[lo, hi]`` (bounds included). NaN when no item has an interval."""
    lo_, hi_, t = (np.asarray(v, dtype=float) for v in (lo, hi, truth))
    has = np.isfinite(lo_) & np.isfinite(hi_)
    n = int(has.sum())
    if not n:
        return float("nan"), 0
    inside = (lo_[has] <= t[has]) & (t[has] <= hi_[has])
    return float(inside.mean()), n


def beats_prior(errs, prior_errs) -> tuple[float, int]:
    """(fraction, n): of the items where both errors are finite, the fraction where ``errs`` is strictly
    below ``prior_errs`` (an equal error does not beat the prior). NaN when ``n`` is 0."""
    e, q = np.asarray(errs, dtype=float), np.asarray(prior_errs, dtype=float)
    both = np.isfinite(e) & np.isfinite(q)
    n = int(both.sum())
    return (float((e[both] < q[both]).mean()) if n else float("nan")), n


def confident_misses(pred, truth, conf, factor: float = 3.0, above: float = 0.5) -> tuple[float, int]:
    """(fraction, n): of the items with a finite prediction and a confidence, the fraction off by more than
    ``factor`` times (``max(p/t, t/p) > factor``; a prediction <= 0 is off) with confidence above ``above``.
    NaN when no item has a confidence."""
    p, t, c = (np.asarray(v, dtype=float) for v in (pred, truth, conf))
    has = np.isfinite(p) & np.isfinite(c)
    n = int(has.sum())
    if not n:
        return float("nan"), 0
    p, t, c = p[has], t[has], c[has]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where((p > 0) & (t > 0), np.maximum(p / t, t / p), np.inf)
    return float(((ratio > factor) & (c > above)).mean()), n


def mean_std(values) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof 1) of the finite values; std NaN with fewer than two."""
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return float("nan"), float("nan")
    return float(a.mean()), (float(a.std(ddof=1)) if a.size > 1 else float("nan"))
