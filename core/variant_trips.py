"""How far an input variant that sets scalar values moves a hinted loop whose control reads undeclared inputs.

``while (j < C && a[r][j] <= thr) j++;`` over an array ``a`` with no ``inputs.arrays`` entry cannot run on
draws of declared inputs (``llmulator.input_trips``), so its trips are the user's ``expected_trips`` hint.
The hint is a statement about the base data. A variant that moves only ``thr`` used to leave it, and every
estimate with it, flat while the run moved 43x (first-above: hlsim 3,026 / 14,795 / 342 cycles for the
base and two thresholds; every static estimate 2,632). The default fill of an undeclared input is what the
profilers draw for it, so it says how the count responds to the scalar even where it says nothing about the
count itself: the hint is scaled by the ratio of the loop's mean trips under the variant's scalars to those
under the base scalars, both on the default fill.

A ``taken_probability`` hint of a branch over undeclared inputs (``if (a[i] > thr)``) moves the same way, on
the log-odds scale (a probability stays in [0, 1]): logit(hint) + logit(share under the variant's scalars) -
logit(share under the base's), the shares clipped to half a lane from 0 and 1.

The hint stays as written where the variant changes no scalar value, names a hint of its own for the loop or
branch, or the hint's expression reads a changed scalar (it follows the variant already), and where the lanes
cannot run the control (a generator fills the inputs, the control is outside what they run).
"""

from __future__ import annotations

import json
import math
import re
import weakref

from .input_trips import MAX_LANES, default_fill

_CACHE: dict[tuple, float | None] = {}
_PER_DESIGN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # design -> {(label, line, key): _pair}
_CACHE_SIZE = 256


def variant_trip_scale(design, label: str) -> float:
    """The factor the design's variant moves loop ``label``'s hint by (1.0 where the rule above leaves it)."""
    loop = design.tree.loops[label]
    if not (loop.is_while or loop.data_dependent):
        return 1.0
    got = _pair(design, label, label, "expected_trips")
    return got[0] / got[1] if got is not None and got[1] else 1.0


def variant_branch_probability(design, br, p: float) -> float:
    """Branch ``br``'s ``taken_probability`` hint ``p`` moved by the design's variant (``p`` as written where the
    rule above leaves it)."""
    got = _pair(design, br.label or "", br, "taken_probability") if br.data_dependent else None
    if got is None or not 0.0 < p < 1.0:
        return p
    lo = 0.5 / MAX_LANES
    now, was = (min(max(x, lo), 1.0 - lo) for x in got)
    z = math.log(p / (1 - p)) + math.log(now / (1 - now)) - math.log(was / (1 - was))
    return 1.0 / (1.0 + math.exp(-z))


def variant_moves(design, node) -> bool:
    """Whether the design's variant moves the hint of loop or branch ``node`` (``analytical.variant_notes``: a note
    that the variant gives no hint there would say the estimate stays at the base's, which it does not)."""
    if getattr(node, "kind", "") == "loop":
        return variant_trip_scale(design, node.label) != 1.0
    p = (design.hints.get(node.label or "") or {}).get("taken_probability")
    return p is not None and variant_branch_probability(design, node, float(p)) != float(p)


def _pair(design, label: str, what, key: str) -> tuple[float, float] | None:
    """(under the variant's scalars, under the base's) of ``what`` on the default fill, or None where the rule
    leaves the hint as written."""
    if design.variant is None:
        return None
    memo = _PER_DESIGN.setdefault(design, {})  # Design.trips asks once per loop per pass: the gate runs once
    at = (label, getattr(what, "line", None), key)
    if at not in memo:
        memo[at] = _pair_of(design, label, what, key)
    return memo[at]


def _pair_of(design, label: str, what, key: str) -> tuple[float, float] | None:
    v, w = design.variant, design.workload
    if design.tree.body is None:
        return None
    from .inputs import resolve_inputs
    desc = resolve_inputs(w, v)
    own = ((w.inputs or {}).get("variants", {}).get(v) or {}).get("hints") or {}
    base = {k: s["value"] for k, s in (w.raw.get("scalars") or {}).items()}
    moved = {k for k, s in desc["scalars"].items() if k in base and base[k] != s["value"]}
    hint = str((design.hints.get(label) or {}).get(key, ""))
    if not moved or key in own.get(label, {}) or desc["generator"] or moved & set(re.findall(r"[A-Za-z_]\w*", hint)):
        return None
    ckey = (design.tree.source, label, getattr(what, "line", None), v, tuple(sorted(design.values.items())),
            json.dumps({k: desc[k] for k in ("arrays", "structures")}, sort_keys=True, default=str))
    if ckey not in _CACHE:
        now = default_fill(design, what, v, design.values)
        was = default_fill(design, what, None, {**design.values, **base})
        _CACHE[ckey] = (now, was) if now is not None and was is not None else None
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
    return _CACHE[ckey]
