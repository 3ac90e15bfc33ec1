"""What the llm's digits mean: the metric itself, or its ratio to the analytical prior.

A checkpoint's ``llmulator.json`` records its ``target``:

* ``absolute`` (the first models) — the digits are the metric. The prompt carries the analytical prior
  in the same digits, so where the prior is right the model must copy it digit by digit; it copies at
  the format's three significant digits (up to 0.5 % off a prior that is exact), and every copying slip
  is an error the prior did not make. Measured on synth-v3 (hlsim 0.9): the prior's cycles are within
  0.5 % of the label on 87 % of test_app rows, so copying is most of what such a model learns, and the
  retrained models of issue 18 lost to their prior on 20-43 % of rows.
* ``ratio`` — the digits are ``label / prior`` (``+ 0 0 1 0 0`` where the prior is right), and the
  reported metric is the prior, at full precision, times the decoded ratio. A model that has learned
  nothing beyond "the prior is right" reproduces the prior exactly; all it can learn is *where and by
  how much the prior is wrong* (data-dependent loops, indirect accesses, bank waits), which is the
  residual the issue asks for. The 90 % interval is the ratio's interval times the prior. A design
  without a prior has nothing to scale: such rows are left out of training, and the estimator already
  reports them unavailable (``guards.prior_of``).

The lean decoder verifies a draft of the expected digits in one pass (``decode.py``): the prior's own
digits for ``absolute``, the digits of 1 for ``ratio``.
"""

from __future__ import annotations

import math
from typing import Any

from . import codec
from .text import METRICS

TARGETS = ("absolute", "ratio")
ONE = codec.encode(1.0)


def target_of(meta: dict[str, Any] | None) -> str:
    """A checkpoint's target (``absolute`` for the checkpoints written before targets existed)."""
    return (meta or {}).get("target", "absolute")


def ratio(value: float, prior: float) -> float | None:
    """``value / prior``; 1 where both are zero; None where it is undefined (no prior, or a zero prior
    under a positive value) — such a row cannot be written as a ratio."""
    value, prior = float(value), float(prior)
    if not (math.isfinite(value) and math.isfinite(prior)) or value < 0 or prior < 0:
        return None
    if prior == 0:
        return 1.0 if value == 0 else None
    return value / prior


def to_target(truth: dict[str, float], prior: dict[str, float] | None, target: str) -> dict[str, float] | None:
    """The values a checkpoint of ``target`` writes for a row with these labels (None: it cannot)."""
    if target == "absolute":
        return truth
    if prior is None:
        return None
    out = {}
    for m in METRICS:
        r = ratio(truth[m], prior.get(m, math.nan))
        if r is None:
            return None
        out[m] = r
    return out


def from_target(pred: dict[str, Any], prior: dict[str, float] | None, target: str) -> dict[str, Any]:
    """A decoded prediction (``metrics``, ``confidence``, ``interval``) in the metrics' own units."""
    if target == "absolute":
        return pred
    if prior is None:
        raise ValueError("a ratio checkpoint's prediction needs the design's analytical prior")
    metrics = {m: float(v) * float(prior[m]) for m, v in pred["metrics"].items()}
    interval = pred.get("interval")
    if interval:
        interval = {m: (lo * float(prior[m]), hi * float(prior[m])) for m, (lo, hi) in interval.items()}
    return {**pred, "metrics": metrics, "interval": interval}


def ratio_draft(prompt: str) -> dict[str, list[str]] | None:
    """The draft a ratio checkpoint's digits are verified against: 1 for every metric (None when the
    prompt carries no prior: such a prompt is decoded digit by digit)."""
    from .decode import prior_draft
    return None if prior_draft(prompt) is None else {m: list(ONE) for m in METRICS}


# -- where the prior is the answer ------------------------------------------------------------------------------
# A design whose control does not depend on its input data executes the same operations on every input, and
# the analytical model counts them: on synth-v3 its cycles are within 1 % of hlsim's on every one of the
# 36,338 such rows (docs/analytical-agreement.md), and the prior misses by more than 1 % on none of the
# 33,000 such rows of any split. There the residual is 1 by construction; a model asked anyway can only
# invent a correction, and on applications it never saw it did (ratio models trained on every row made 31 of
# 194 such test_app rows worse and none better), and a model that writes the metric itself can at best copy
# the prior to its three digits. Every checkpoint that reads the prior (hints ``analytical``) therefore
# corrects input-dependent designs only and returns the prior for the rest, without running the model.
#
# The same holds, in expectation, for a design whose input-dependent control the analytical model prices from
# what the workload declares (``Design.control_from_inputs``: branch shares of declared distributions, csr
# structures, loops run on draws of declared inputs): there the prior is the expectation over the declared
# inputs, and what it misses on one row is that row's draw. Measured on synth-v3 (analytical 0.13): on such
# rows the prior's signed cycles error averages +0.1 to +0.3 % (no bias to learn), and with the row's own
# draw instead of fresh ones the analytical count equals hlsim's on 150 of 150 test rows (largest difference
# 0.03 %): the rest is noise no model that reads the design, not the draw, can predict. Such designs get the
# prior too, with the spread of that noise as their interval (val's 90th percentile, 5.6 %).
ANSWERS = ("fixed", "drawn")  # why the prior is the answer: control independent of the input, or priced from it
PRIOR_CONFIDENCE = {"fixed": 0.99, "drawn": 0.9}
PRIOR_SPREAD = {"fixed": 0.01, "drawn": 0.06}  # the 90 % interval: the measured agreement, the draw's spread
PRIOR_NOTES = {
    "fixed": ("control independent of the input data: the analytical count itself (within 1 % of hlsim's cycles "
              "on every such dataset row, docs/analytical-agreement.md); the model corrects the designs whose "
              "input-dependent control rests on hints"),
    "drawn": ("input-dependent control priced from the declared inputs: the analytical expectation over them "
              "(one input's draw differs from it by up to ~6 % in 9 of 10 dataset rows); the model corrects the "
              "designs whose input-dependent control rests on hints")}


def prior_answer(design) -> str | None:
    """Why the analytical prior is a design's answer (``fixed`` or ``drawn``, above), or None: the model's."""
    if not design.control_from_inputs():
        return None  # some share or trip count rests on a hint or a default: the model's to correct
    return "fixed" if design.tree.input_independent() else "drawn"


def copies_prior(design, meta: dict[str, Any] | None) -> str | None:
    """Whether (and why: ``prior_answer``) a checkpoint (its ``llmulator.json``) returns the design's prior
    as it is: it reads the prior, and the prior is the design's answer."""
    return prior_answer(design) if (meta or {}).get("hints") == "analytical" else None


def draw_spread(design) -> float:
    """The half-width of a ``drawn`` design's 90 % interval: the dataset's spread (``PRIOR_SPREAD``), or wider
    where the design's own draws say one input moves its work more: 1.645 x the coefficient of variation,
    across draws of the declared inputs, of the trips of its input-dependent loops (the largest). Measured
    from outside: kernels whose loops run on few data-dependent elements (a Collatz count over 16-64 values)
    missed the fixed 6 % interval by 12-14 % with confidence 0.9."""
    from llmulator.input_trips import input_trip_draws
    spread = PRIOR_SPREAD["drawn"]
    for lp in design.tree.loops.values():
        if not (lp.is_while or lp.data_dependent):
            continue
        per = [t for t in (input_trip_draws(design, lp.label) or []) if t >= 0]
        if len(per) < 2 or sum(per) <= 0:
            continue
        mean = sum(per) / len(per)
        sd = math.sqrt(sum((t - mean) ** 2 for t in per) / (len(per) - 1))
        spread = max(spread, 1.645 * sd / mean)
    return min(spread, 0.9)


def prior_prediction(prior: dict[str, float], answer: str = "fixed", spread: float | None = None) -> dict[str, Any]:
    """The prior as a decoded prediction (``metrics``, ``confidence``, ``interval``) for the guards; ``spread``:
    the interval's half-width where the design gives its own (``draw_spread``), else the answer's."""
    metrics = {m: float(prior[m]) for m in METRICS}
    spread = PRIOR_SPREAD[answer] if spread is None else spread
    return {"metrics": metrics, "confidence": {m: PRIOR_CONFIDENCE[answer] for m in METRICS},
            "interval": {m: (v * (1 - spread), v * (1 + spread)) for m, v in metrics.items()}}
