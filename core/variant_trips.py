"""How far an input variant that sets scalar values moves a hinted loop whose control reads undeclared inputs.

``while (j < C && a[r][j] <= thr) j++;`` over an array ``a`` with no ``inputs.arrays`` entry cannot run on
draws of declared inputs (``llmulator.input_trips``), so its trips are the user's ``expected_trips`` hint.
The hint is a statement about the base data. A variant that moves only ``thr`` used to leave it, and every
estimate with it, flat while the run moved 43x (first-above: hlsim 3,026 / 14,795 / 342 cycles for the
base and two thresholds; every static estimate 2,632). The default fill of an undeclared input is what the
profilers draw for it, so it says how the count responds to the scalar even where it says nothing about the
count itself: the hint is scaled by the ratio of the loop's mean trips under the variant's scalars to those
under the base scalars, both on the default fill.

The hint stays as written where the variant changes no scalar value, names a hint of its own for the loop, or
the hint's expression reads a changed scalar (it follows the variant already), and where the lanes cannot run
the control (a generator fills the inputs, the control is outside what they run).
"""

from __future__ import annotations

import json
import re

from .input_trips import default_fill_mean

_CACHE: dict[tuple, float] = {}
_CACHE_SIZE = 256


def variant_trip_scale(design, label: str) -> float:
    """The factor the design's variant moves loop ``label``'s hint by (1.0 where the rule above leaves it)."""
    loop, v, w = design.tree.loops[label], design.variant, design.workload
    if v is None or design.tree.body is None or not (loop.is_while or loop.data_dependent):
        return 1.0
    from .inputs import resolve_inputs
    desc = resolve_inputs(w, v)
    own = ((w.inputs or {}).get("variants", {}).get(v) or {}).get("hints") or {}
    base = {k: s["value"] for k, s in (w.raw.get("scalars") or {}).items()}
    moved = {k for k, s in desc["scalars"].items() if k in base and base[k] != s["value"]}
    hint = str((design.hints.get(label) or {}).get("expected_trips", ""))
    if not moved or label in own or desc["generator"] or moved & set(re.findall(r"[A-Za-z_]\w*", hint)):
        return 1.0
    key = (design.tree.source, label, v, tuple(sorted(design._names.items())),
           json.dumps({k: desc[k] for k in ("arrays", "structures")}, sort_keys=True, default=str))
    if key not in _CACHE:
        now = default_fill_mean(design, label, v, design._names)
        was = default_fill_mean(design, label, None, {**design._names, **base})
        _CACHE[key] = now / was if now is not None and was else 1.0
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
    return _CACHE[key]
