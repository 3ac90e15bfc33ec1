"""The llm's 90 % interval, calibrated on held-out rows of the checkpoint's own dataset.

Why: the decoder's own interval is the range of the leading digits and exponents that hold 90 % of the
model's probability (``decode._interval``). For a ratio checkpoint that writes ``1.00`` (the prior is
right) it is [1, 2) times the prior whatever the model believes: the digits cannot say "a little below
the prior", which is ``9.8`` at the next lower exponent. On the outside corpus (docs/generalisation.md) the
shipped model's interval was [prior, 2 x prior] on bitonic, insertion, kmp and binsearch, whose labels lie
0.5-2 % below the prior: 27 of 162 intervals missed the label, 83 % coverage for a "90 %" interval.

The calibrated interval is split conformal prediction, per metric: on the held-out rows the model answers
(not those where the prior is the answer, ``residual.prior_answer``), the 5th and 95th percentiles of
``label / prediction`` give the factors the prediction is multiplied by (at least +-1 %). The factors are
measured once, after training (``train.train``) or for a shipped checkpoint by
``benchmarks/llm_interval.py``, and stored in its ``llmulator.json`` (``interval``); a checkpoint without
them (or a metric with fewer than ``MIN_ROWS`` rows) keeps the digits' interval.
"""

from __future__ import annotations

import math
from typing import Any

from llmulator.conformal import FLOOR, MIN_ROWS, QUANTILES  # noqa: F401  (the llm's names for them)

from .text import METRICS


def calibrate(preds: list[dict[str, Any]], truths: list[dict[str, float]], split: str = "val") -> dict[str, Any]:
    """The interval factors of each metric from predictions (``metrics``) and their labels
    (``llmulator.conformal``)."""
    from llmulator.conformal import factors
    ratios = {m: [math.log(float(t[m]) / float(p["metrics"][m])) for p, t in zip(preds, truths, strict=True)
                  if m in p["metrics"] and float(p["metrics"][m]) > 0 and float(t[m]) > 0] for m in METRICS}
    return {"factors": factors(ratios), "rows": len(preds), "split": split, "quantiles": list(QUANTILES)}


def apply(pred: dict[str, Any], calibration: dict[str, Any] | None) -> dict[str, Any]:
    """``pred`` with the calibrated interval of every metric the calibration has factors for."""
    factors = (calibration or {}).get("factors") or {}
    if not factors:
        return pred
    interval = dict(pred.get("interval") or {})
    for m, (lo, hi) in factors.items():
        v = pred["metrics"].get(m)
        if v is not None:
            interval[m] = (float(v) * lo, float(v) * hi)
    return {**pred, "interval": interval}


def predict_items(model, tokenizer, items: list[tuple], meta: dict[str, Any], head_module=None,
                  batch: int = 16) -> list[dict[str, Any]]:
    """The model's predictions of ``train.examples`` tuples (prompt, target, labels, prior, answer), in batches."""
    from .train import predict
    preds = []
    for k in range(0, len(items), batch):
        chunk = items[k:k + batch]
        preds += predict(model, tokenizer, [c[0] for c in chunk], meta, head_module, priors=[c[3] for c in chunk])
    return preds


def calibrate_items(model, tokenizer, items: list[tuple] | None, meta: dict[str, Any], head_module=None,
                    batch: int = 16) -> dict[str, Any] | None:
    """The calibration on training's held-out examples (``train.examples`` tuples): the rows the model
    answers only; None where there are too few."""
    rows = [c for c in (items or []) if not c[4]]
    if len(rows) < MIN_ROWS:
        return None
    model.eval()
    return calibrate(predict_items(model, tokenizer, rows, meta, head_module, batch), [c[2] for c in rows])
