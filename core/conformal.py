"""Split-conformal 90 % intervals from held-out residuals: one pair of factors per metric.

Why: a learned estimator's own spread (the llm's digit probabilities, none at all for the baselines) says
little about how far its predictions land from the labels. On held-out rows the 5th and 95th percentiles of
``label / prediction`` are the factors a new prediction is multiplied by to get an interval that holds the
label on 90 % of rows drawn like those (exchangeable with them). Measured once after training and stored
with the checkpoint; the llm (``llmulator_plugins.llm.interval``) and the learned baselines both use it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

QUANTILES = (0.05, 0.95)
MIN_ROWS = 30  # fewer held-out rows than this say too little about a 5 % tail
FLOOR = 0.01  # an interval spans at least +-1 %: a held-out split where a metric is exact says nothing about
#               an unseen architecture's


def factors(log_ratios: Mapping[str, Sequence[float]]) -> dict[str, list[float]]:
    """``{metric: [low, high]}`` multiplying factors from each metric's ``log(label / prediction)`` values
    (metrics with fewer than ``MIN_ROWS`` values get none)."""
    out = {}
    for m, r in log_ratios.items():
        r = [x for x in r if math.isfinite(x)]
        if len(r) >= MIN_ROWS:
            lo, hi = np.quantile(r, QUANTILES)
            out[m] = [min(1.0 - FLOOR, math.exp(lo)), max(1.0 + FLOOR, math.exp(hi))]
    return out


def interval(metrics: Mapping[str, float], calibration: Mapping | None) -> dict[str, tuple[float, float]]:
    """The calibrated interval of every metric in ``metrics`` the calibration has factors for."""
    f = (calibration or {}).get("factors") or {}
    return {m: (float(metrics[m]) * lo, float(metrics[m]) * hi) for m, (lo, hi) in f.items() if m in metrics}
