"""How predictions are scored against measurements: APE, its summaries, and Kendall's tau (pure numpy).

One definition for every consumer: ``llmulator bench``, the design-space
exploration's verification, calibration, training evaluations and the
benchmarks. Kendall's tau is tau-b (ties counted as in
``scipy.stats.kendalltau``'s default), computed here because scipy is not a
dependency of the project.
"""

from __future__ import annotations

import numpy as np


def ape(pred, truth) -> np.ndarray:
    """Absolute percentage error, in percent, of each prediction against its measurement (element-wise;
    a 0-d array for two scalars: ``float(ape(p, t))``)."""
    p, t = np.asarray(pred, dtype=float), np.asarray(truth, dtype=float)
    return np.abs(p - t) / np.maximum(np.abs(t), 1e-12) * 100.0


def summarise(errs) -> dict[str, float]:
    """MAPE, median and 90th-percentile APE (linear interpolation, as numpy's default percentile)."""
    a = np.asarray(errs, dtype=float)
    if a.size == 0:
        return {"mape": float("nan"), "median": float("nan"), "p90": float("nan")}
    return {"mape": float(a.mean()), "median": float(np.median(a)), "p90": float(np.percentile(a, 90))}


def kendall_tau(x, y, chunk: int = 1024) -> float:
    """Kendall's tau-b between two equally long sequences; NaN when either is constant or has < 2 items.

    tau-b = sum_{i<j} sgn(x_i-x_j) sgn(y_i-y_j) / sqrt(pairs untied in x * pairs untied in y).
    Computed on row blocks of the pair matrix, so memory stays O(chunk * n).
    """
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("kendall_tau needs two 1-D sequences of the same length")
    n = a.size
    if n < 2:
        return float("nan")
    num = nx = ny = 0.0
    for s in range(0, n, chunk):
        sx = np.sign(a[s:s + chunk, None] - a[None, :])
        sy = np.sign(b[s:s + chunk, None] - b[None, :])
        num += float((sx * sy).sum())
        nx += float(np.abs(sx).sum())
        ny += float(np.abs(sy).sum())
    # every unordered pair was counted twice (i,j and j,i); the factor cancels in the ratio
    if nx == 0 or ny == 0:
        return float("nan")
    return num / np.sqrt(nx * ny)
