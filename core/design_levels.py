"""A multi-level mapping (``mapping.levels``, Timeloop-style tiling) checked against the other two files.

``check_design`` runs ``level_diagnostics`` when a mapping has levels; the
analytical model's tiling runs the same checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .design_checks import _close, _mdiag
from .errors import Diagnostic, SpecError

if TYPE_CHECKING:
    from .design import Design


def level_diagnostics(d: Design) -> list[Diagnostic]:
    """A multi-level mapping's (``mapping.levels``) names checked against the other two files: memory
    levels that exist (once each), loop labels, arrays in keep/bypass, fan-out stage names, and every
    loop's factors multiplying to its trips. The analytical model's tiling runs the same checks."""
    m = d.mapping
    labels = [lb for lb in d.tree.loops if not lb.startswith("_")]
    diags: list[Diagnostic] = []
    seen: set[str] = set()
    prods: dict[str, int] = {}
    for i, e in enumerate(m.levels):
        diags.extend(_entry_diagnostics(d, i, e, labels, seen, prods))
    if diags:
        return diags
    diags.extend(_fanout_diagnostics(d))
    for lb in labels:
        try:
            trips = d.trips(lb)
        except SpecError:
            continue
        if prods.get(lb, 1) != trips:
            diags.append(_mdiag(m, ("levels",), f"the factors of loop {lb} over all levels multiply to "
                                f"{prods.get(lb, 1)}, but it has {trips:g} trips",
                                f"temporal and spatial factors whose product is {trips:g}"))
    return diags or _tile_diagnostics(d)


def _entry_diagnostics(d: Design, i: int, e: dict, labels: list[str], seen: set[str],
                       prods: dict[str, int]) -> list[Diagnostic]:
    """The names of level entry ``i``; its level name is added to ``seen`` and its factors multiplied
    into ``prods`` (loop label -> product over the levels so far)."""
    a, m = d.arch, d.mapping
    levels = [lv.name for lv in a.memory]
    arrays = sorted(d.workload.arrays)
    diags: list[Diagnostic] = []
    name = e.get("level")
    if name not in levels:
        diags.append(_mdiag(m, ("levels", i, "level"), f"unknown memory level '{name}' (architecture "
                            f"'{a.name}' has no such level)", "one of: " + ", ".join(levels),
                            _close(str(name), levels)))
    elif name in seen:
        diags.append(_mdiag(m, ("levels", i, "level"), f"level '{name}' appears twice in levels",
                            "each memory level at most once"))
    seen.add(name)
    stages = [("temporal", e.get("temporal") or {}, ("levels", i, "temporal")),
              ("spatial", e.get("spatial") or {}, ("levels", i, "spatial"))]
    for k, st in enumerate(e.get("fanout") or []):
        stages.append(("spatial", st.get("spatial") or {}, ("levels", i, "fanout", k, "spatial")))
        if st.get("name") in levels:
            diags.append(_mdiag(m, ("levels", i, "fanout", k, "name"), f"fan-out stage '{st.get('name')}' "
                                "has the name of a memory level", "a name of its own"))
    for _kind, factors, path in stages:
        for lb, n in factors.items():
            if lb not in labels:
                diags.append(_mdiag(m, path + (lb,), f"unknown loop label '{lb}'", "one of: "
                                    + ", ".join(labels), _close(lb, labels), key=True))
            else:
                prods[lb] = prods.get(lb, 1) * int(n)
    for j, lb in enumerate(e.get("order") or []):
        if lb not in labels:
            diags.append(_mdiag(m, ("levels", i, "order", j), f"unknown loop label '{lb}' in order",
                                "one of: " + ", ".join(labels), _close(lb, labels)))
    for key in ("keep", "bypass"):
        for j, arr in enumerate(e.get(key) or []):
            if arr not in arrays:
                diags.append(_mdiag(m, ("levels", i, key, j), f"unknown array '{arr}'",
                                    "one of: " + ", ".join(arrays), _close(arr, arrays)))
    return diags


def _fanout_diagnostics(d: Design) -> list[Diagnostic]:
    """Each level's spatial factors (its own and its fan-out stages') against the hardware below it: the next
    inner level's instances per instance of this one, and all of them together against the MAC units. Before
    analytical 0.57 a fan-out of 64 over one MAC unit was accepted and priced at 8 cycles for 512 MACs (an
    outside probe); Timeloop refuses such a mapping too."""
    a, m = d.arch, d.mapping
    given = {e.get("level"): (i, e) for i, e in enumerate(m.levels)}
    diags: list[Diagnostic] = []
    total, last = 1, None
    for k, lv in enumerate(a.memory):
        if lv.name not in given:
            continue
        i, e = given[lv.name]
        fan = 1
        for factors in [e.get("spatial") or {}] + [st.get("spatial") or {} for st in e.get("fanout") or []]:
            for n in factors.values():
                fan *= int(n)
        total *= fan
        last = i if fan > 1 else last
        nxt = a.memory[k + 1] if k + 1 < len(a.memory) else None
        if nxt is not None and fan > (room := nxt.instances // max(lv.instances, 1)):
            # a level the mapping leaves out is still in the hierarchy (Timeloop's bypass moves no data
            # through it, but its instances are where the fan-out lands): say so, or the message names a
            # level the user never wrote (an outside probe)
            unlisted = "" if nxt.name in given else (f" (level {nxt.name} is not listed in mapping.levels, but "
                                                     "it is still in the architecture's hierarchy below "
                                                     f"{lv.name})")
            diags.append(_mdiag(m, ("levels", i, "spatial"), f"the spatial factors at {lv.name} fan out to {fan} "
                                f"instances, but level {nxt.name}'s {nxt.instances} instance(s) give each of its "
                                f"{lv.instances} instance(s) {room}{unlisted}",
                                f"spatial factors whose product is at most {room}"))
    # the MAC lanes: mac units, else a multiplier with an adder each (an architecture without a `mac` operator
    # passed unchecked until an outside probe: a fan-out of 64 over 8 multipliers priced at 32 cycles for 512)
    mac = a.operators.get("mac")
    pair = [a.operators[c].count for c in ("mul", "add") if c in a.operators]
    lanes, what = (mac.count, "mac unit(s)") if mac is not None else (
        (min(pair), "multiplier-adder pair(s) (no mac operator)") if len(pair) == 2 else (None, ""))
    if lanes is not None and total > lanes:
        diags.append(_mdiag(m, ("levels", last, "spatial") if last is not None else ("levels",),
                            f"the spatial factors of all levels fan out to {total} MAC lanes, but the architecture "
                            f"has {lanes} {what}", f"spatial factors whose product is at most {lanes}"))
    return diags


def _tile_diagnostics(d: Design) -> list[Diagnostic]:
    """The tiles each listed level keeps against its capacity, Timeloop's one copy per instance: a level's tile
    of an array is the box its subscripts cover over the factors of that level and every level inside it. Before
    this, ``validate`` (and hlsim, which labels such designs) accepted tiles that ``estimate`` refused: only the
    analytical tiling checked them (an outside probe). The tiling runs these checks, so one rule serves both."""
    from . import tech

    a, m = d.arch, d.mapping
    var_label = {lp.var: lb for lb, lp in d.tree.loops.items()}
    spaces: dict[str, list[list[tuple[int, str]]]] = {}  # array -> per dimension (|coefficient|, loop label)
    for acc, _loops in d.accesses():
        if acc.array in spaces:
            continue
        if any(aff is None for aff in acc.affine):
            return []  # not a tiling problem: the analytical tiling refuses it with its own message
        spaces[acc.array] = [[(abs(int(c)), var_label[v]) for v, c in aff.coefs.items() if c and v in var_label]
                             for aff in acc.affine]
    given = {e.get("level"): (i, e) for i, e in enumerate(m.levels)}
    elem_bits = max(tech.DTYPE_BITS.get(x.dtype, 32) for x in d.workload.arrays.values())
    ext: dict[str, int] = {}  # loop label -> product of the factors at this level and inside it
    diags: list[Diagnostic] = []
    for lv in reversed(a.memory):
        i, e = given.get(lv.name, (None, {}))
        for factors in [e.get("temporal") or {}, e.get("spatial") or {}] + [
                st.get("spatial") or {} for st in e.get("fanout") or []]:
            for lb, n in factors.items():
                ext[lb] = ext.get(lb, 1) * int(n)
        if i is None or lv.capacity_kib is None:
            continue
        keep = e.get("keep")
        if keep is None:
            keep = [s for s in spaces if s not in (e.get("bypass") or [])]
        tiles = {s: _box(spaces[s], ext) for s in keep if s in spaces}
        words = lv.capacity_bits / int(_raw_level(a, lv.name).get("word_bits", elem_bits))
        need = sum(tiles.values())
        if need > words:
            detail = ", ".join(f"{s} {n:g}" for s, n in sorted(tiles.items(), key=lambda t: -t[1]))
            diags.append(_mdiag(m, ("levels", i), f"the tiles kept at {lv.name} need {need:g} words per instance "
                                f"({detail}), more than its capacity of {words:g} words",
                                f"tiles of at most {words:g} words at {lv.name}",
                                "smaller factors at or below this level, or bypass a data space here"))
    return diags


def _box(space: list[list[tuple[int, str]]], ext: dict[str, int]) -> int:
    """Elements of the box an array's subscripts cover when each loop runs ``ext`` trips."""
    n = 1
    for dim in space:
        n *= sum(c * (ext.get(lb, 1) - 1) for c, lb in dim) + 1
    return n


def _raw_level(a, name: str) -> dict:
    """The level's entry as written in the architecture file (``word_bits`` lives only there)."""
    return next((r for r in a.raw.get("memory", []) if r.get("name") == name), {})
