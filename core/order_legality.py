"""Whether a mapping's ``order`` keeps every dependence of the band it permutes (loop interchange legality).

Why: ``order`` reorders the loops of a perfect band; when one iteration writes an element that a later
iteration (in the kernel's order) reads or writes, the new order must still run the writer first. A
wavefront ``A[i][j] = A[i - 1][j + 1] + 1`` under ``order: [L_j, L_i]`` reads ``A[i - 1][j + 1]`` before it is
written: hlsim runs the reordered program and its functional check fails, but nothing said which field of the
mapping was at fault. Here each pair of accesses to one array (statements and conditions), one of them a write,
whose subscripts are the same affine form up to constants gives distance vectors in iterations of the band's loops
(in kernel order; `a[p + t]` one per solution); the dependence holds in the new order when each vector, read in
that order, is still lexicographically positive. Runs of one fold of an element commute (`a[p + t] += x`, a max
written with `if`) and are let through. A local the band carries from one iteration to the next other than by
one associative update (`acc = acc * 3 + x[p]`) orders every pair of iterations. Not judged: indirect or
differently shaped subscripts, a coefficient only a parameter gives, writes in an expression (`acc++` inside
another), a local written under an `if`; and a dependence that holds only by the values (every sweep the same
function) is refused. What this reports is a dependence the mapping reverses; what it misses, hlsim's functional
check still catches (an outside probe of 135 bands, 2026-12-07: 125 judged as the mapped run computes).

Tiling reorders too: a band's tile loops run outside all its point loops (``llmulator.nest.mapped_band``), so
`for t { for p (tiles of 3) a[p] = a[p - 1] - a[p + 1]; }` runs p's tiles outside t, and the element t + 1
reads at p - 1 comes from the next tile, which t has not reached (an outside probe: `validate` passed, `profile`
failed its functional check). With ``tiles``, an iteration pair ``d`` apart lies ``floor(d / T)`` or
``ceil(d / T)`` tiles apart along a loop in tiles of T, and the dependence must run forwards for every such
combination, read as (tile distances in the sequence's order, then the point distances).
"""

from __future__ import annotations

import itertools
import math

from .expr import ExprError, evaluate
from .kernel import Loop
from .reduction_legality import fold_op, illegal_tree, select_text


def reversed_dependence(design, band: list[str], sequence: list[str], tiles: dict[str, int] | None = None
                        ) -> str | None:
    """The first dependence the loop ``sequence`` (a permutation of ``band``) runs backwards, as text, or None;
    ``tiles``: the band's loops strip-mined in tiles of that many trips, whose tile loops run outside every
    point loop."""
    loops = design.tree.loops
    var_of = {lb: loops[lb].var for lb in band}
    nodes = list(loops[band[-1]].descendants())
    stmts = [n for n in nodes if getattr(n, "kind", "") == "stmt"] + [  # (a condition's reads order too)
        n.cond for n in nodes if getattr(n, "kind", "") == "branch"]
    inner = [n for n in nodes if isinstance(n, Loop)]
    accesses = [(st, a) for st in stmts for a in st.accesses]
    updates = _updates(nodes)
    guarded = {id(m) for n in nodes if getattr(n, "kind", "") == "branch" for m in n.descendants()}
    for st, w in ((st, a) for st, a in accesses if a.is_write):
        for other, r in accesses:
            if r.array != w.array or _commute(updates.get(id(st), st), w, updates.get(id(other), other), r):
                continue
            for base in distance_vectors(design, w, r, var_of, band, inner):  # none: never one element, or not judged
                # any two iterations of the loops the subscripts do not use touch the element: they move together,
                # but for a write and its own next run (the element's last writer: the last iteration stays last),
                # one at a time, unless an `if` picks which runs write (a probe's `if (x > 0) s[0] = x`)
                together = r is not w or id(st) in guarded
                for dist in _with_free_loops(design, base, w.affine, var_of, band, together=together):
                    if (why := _reversed(design, dist, band, sequence, tiles)) is not None:
                        first, second = (_text(w), _text(r)) if why[0] else (_text(r), _text(w))
                        return f"`{first}` and, {why[1]} iterations later, `{second}` touch one element, and {why[2]}"
    if (chain := illegal_tree(design, band[-1], tree=False)) is not None:  # a local carried between iterations
        for dist in _with_free_loops(design, dict.fromkeys(band, 0), [], var_of, band, together=True):
            if (why := _reversed(design, dist, band, sequence, tiles)) is not None:
                return f"{chain}: of its runs {why[1]} iterations apart, {why[2]}"
    return None


def _commute(st, w, other, r) -> bool:
    """Whether runs of the two accesses may swap: a fold's own update of its element (`a[p + t] += x[t][p]`, the
    write and its own read or its next run: a sum in any order), or two statements that fold one element with
    the same operation. Before 2026-12-07 only a fold's runs at one element were let through (distance 0).
    (``st``, ``other``: statements, or (the update, its text) for an `if` that selects a max or a min.)"""
    if _text(w) != _text(r):
        return False
    op = fold_op(_text_of(st), _text(w))
    return op is not None and (other is st or fold_op(_text_of(other), _text(r)) == op)


def _updates(nodes: list) -> dict[int, tuple]:
    """``id`` of the statement and of the condition of each `if (s[0] < x) s[0] = x;` -> one (update, its text):
    `s[0] = (s[0] < x) ? (x) : s[0]`, a max whose runs commute (``_commute``; the condition's read of s[0] is
    the update's own, not a read of what another run wrote)."""
    out = {}
    for n in nodes:
        if (sel := select_text(n)) is not None:
            out[id(n.then[0])] = out[id(n.cond)] = (n.then[0], sel[0])
    return out


def _text_of(st) -> str:
    return st[1] if isinstance(st, tuple) else st.text


def _reversed(design, dist: dict[str, int], band: list[str], sequence: list[str], tiles: dict[str, int] | None
              ) -> tuple[bool, str, str] | None:
    """(whether the first access runs first in the kernel, the distance as text, how ``sequence`` swaps the two)
    for two iterations ``dist`` apart that run in the wrong order, or None: the same iteration, farther apart than
    a loop runs, or still in the kernel's order."""
    if not any(dist.values()) or any(abs(x) >= max(design.trips(lb), 1) for lb, x in dist.items()):
        return None
    forward = _positive([dist[lb] for lb in band])
    if not forward:  # the second access comes first in the kernel: it stays first
        dist = {lb: -x for lb, x in dist.items()}
    if all(_positive(v) for v in _orders(dist, sequence, tiles or {})):
        return None
    run = " > ".join([f"{lb}'s tiles" for lb in sequence if lb in (tiles or {})] + sequence)
    return forward, _vector(dist, band), f"{run} would run the later one first"


def _with_free_loops(design, base: dict[str, int], affine: list, var_of: dict[str, str | None], band: list[str],
                     together: bool = False):
    """``base`` with the band loops the subscripts do not use (of at least 2 trips) at -1, 0 and +1: any two of
    their iterations touch the element, so the pairs one step apart carry the dependence both ways (a time loop's
    `a[p + 1]` read at t + 1, p - 1). ``together``: every combination; else one loop at a time (a write and its own
    next run: only the last writer of the element matters, and a loop it does not use keeps it last)."""
    used = {v for aff in affine if aff is not None for v, c in aff.coefs.items() if c}
    free = [lb for lb in band if var_of[lb] not in used and design.trips(lb) >= 2]
    if together:
        for steps in itertools.product((-1, 0, 1), repeat=len(free)):
            yield {**base, **dict(zip(free, steps, strict=True))}
        return
    yield base
    for lb in free:
        yield {**base, lb: -1}
        yield {**base, lb: 1}


def band_tiles(design, band: list[str]) -> dict[str, int]:
    """The band's strip-mined loops (a fused member goes with its head) and their tiles."""
    from .nest import fused_into, strip_mined
    fused = fused_into(design)
    return {lb: int(design.mapping.loop(lb).tile) for lb in band if lb not in fused and strip_mined(design, lb)}


def tiling_violations(design, checked: set[str]) -> list[tuple[str, str]]:
    """(the band's first tiled loop, the dependence) for each band of at least two loops, other than those in
    ``checked`` (heads of bands ``order`` was checked on), whose tiles reverse a dependence. Triangular bands
    keep each tile loop in place (``nest.mapped_band``)."""
    from .nest import is_triangular, loop_sequence
    out = []
    for lp in design.tree.loops.values():
        if lp.parent is not None and lp.parent.perfect_child() is lp:
            continue  # not the head of its band
        band = [x.label for x in lp.band()]
        tiles = band_tiles(design, band)
        if band[0] in checked or not tiles or len(band) < 2 or is_triangular(design, band):
            continue
        why = reversed_dependence(design, band, loop_sequence(design.mapping.order, band), tiles)
        if why is not None:
            out.append((next(lb for lb in band if lb in tiles), why))
    return out


def _orders(dist: dict[str, int], sequence: list[str], tiles: dict[str, int]):
    """The distance as the mapped band runs it: per combination of tile distances (each strip-mined loop's
    floor or ceiling of its distance over its tile), those in the sequence's order, then the point distances."""
    strip = [lb for lb in sequence if lb in tiles]
    choices = [sorted({math.floor(dist[lb] / tiles[lb]), math.ceil(dist[lb] / tiles[lb])}) for lb in strip]
    for combo in itertools.product(*choices):
        yield list(combo) + [dist[lb] for lb in sequence]


def distance_vectors(design, w, r, var_of: dict[str, str | None], band: list[str], inner: list | None = None,
                     budget: int = 4096) -> list[dict[str, int]]:
    """The distances, in iterations of each band loop, from ``w``'s access to ``r``'s of the same element, where
    the two subscripts of each dimension are the same affine form (integer coefficients) up to a constant. A
    loop's coefficient counts its step (`a[p]` over p += 2 names even elements: `a[p - 1]` is never one of them).
    A dimension of one loop fixes its distance; the rest (`a[p + t]`, several loops) are solved: each unknown but
    the last over its trips, the last from the equations, at most ``budget`` combinations (before 2026-12-07 such
    a pair was not judged: `a[p + t] = a[p + t - 1] - a[p + t + 1]` tiled under t passed `validate`, and `profile`
    failed its functional check, an outside probe). ``inner``: loops inside the band's body, whose variables take
    any two of their values (not a distance the band orders). A loop outside the band keeps its value. Empty:
    never the same element, or not comparable (indirect, a step or constant only the run knows)."""
    if len(w.affine) != len(r.affine) or w.indirect or r.indirect:
        return []
    loops = {var_of[lb]: design.tree.loops[lb] for lb in band if var_of[lb]}
    loops.update({lp.var: lp for lp in inner or [] if lp.var and lp.var not in loops})
    rows = []  # ({variable: coefficient per iteration}, the constant their distances must sum to)
    for aw, ar in zip(w.affine, r.affine, strict=True):
        if aw.coefs != ar.coefs:
            return _enumerated(design, w, r, band, budget)
        try:
            delta = int(evaluate(aw.const, design.values)) - int(evaluate(ar.const, design.values))
        except (ExprError, TypeError, ValueError):
            return []
        coefs = {}
        for v, c in aw.coefs.items():
            if c and v in loops:
                if loops[v].step_op != "+" or loops[v].step_text or not loops[v].step:
                    return []
                coefs[v] = int(c) * loops[v].step
        if not coefs and delta:
            return []  # different elements
        rows.append((coefs, delta))
    unknowns = sorted({v for coefs, _ in rows for v in coefs}, key=list(loops).index)
    most = {v: max(int(math.ceil(max(design.trips(loops[v].label), 1))) - 1, 0) for v in unknowns}
    out = {}
    for cand in _solutions(rows, unknowns, most, budget):
        dist = {lb: cand.get(var_of[lb], 0) for lb in band}
        out.setdefault(tuple(dist.values()), dist)
    return sorted(out.values(), key=lambda v: sum(map(abs, v.values())))  # the nearest first: what a message names


def _enumerated(design, w, r, band: list[str], budget: int) -> list[dict[str, int]]:
    """The distances between the band iterations at which ``w`` and ``r`` touch one element, from the elements
    each touches at every iteration of the band loops their subscripts use (at most ``budget`` iterations; loops
    of constant bounds and step): subscripts of different shapes, `a[t][p] = a[p][t] + 1`. Before 2026-12-08
    such a pair was not judged, and a reorder whose run was wrong passed `validate` (an outside probe's f09)."""
    loops = {design.tree.loops[lb].var: design.tree.loops[lb] for lb in band if design.tree.loops[lb].var}
    used = sorted({v for a in (*w.affine, *r.affine) for v, c in a.coefs.items() if c})
    values = []
    try:
        for v in used:
            lp = loops[v]  # KeyError: a loop outside the band
            if lp.step_op != "+" or lp.step_text or not lp.step or lp.depends_on_outer or not lp.static:
                return []
            lo = int(evaluate(lp.lower_text, design.values, c=True))
            values.append([lo + i * lp.step for i in range(int(design.trips(lp.label)))])
        consts = [[int(evaluate(a.const, design.values)) for a in acc.affine] for acc in (w, r)]
    except (KeyError, ExprError, TypeError, ValueError):
        return []
    if math.prod(map(len, values)) > budget:
        return []

    def touched(k: int, point: tuple[int, ...]) -> tuple[int, ...]:
        val = dict(zip(used, point, strict=True))
        return tuple(c + sum(x * val[v] for v, x in a.coefs.items() if x)
                     for c, a in zip(consts[k], (w, r)[k].affine, strict=True))

    spans = [range(len(x)) for x in values]
    point_of = {idx: tuple(x[i] for x, i in zip(values, idx, strict=True)) for idx in itertools.product(*spans)}
    writes: dict[tuple, list] = {}
    for idx, point in point_of.items():
        writes.setdefault(touched(0, point), []).append(idx)
    out = {}
    label = {v: loops[v].label for v in used}
    for idx, point in point_of.items():
        for widx in writes.get(touched(1, point), ()):
            dist = dict.fromkeys(band, 0) | {label[v]: i - j for v, i, j in zip(used, idx, widx, strict=True)}
            out.setdefault(tuple(dist.values()), dist)
    return sorted(out.values(), key=lambda v: sum(map(abs, v.values())))


def _solutions(rows: list, unknowns: list[str], most: dict[str, int], budget: int):
    """Integer assignments of ``unknowns`` (each within +-``most``) that satisfy every row (coefficients, sum)."""
    if not unknowns:
        if all(delta == 0 for _, delta in rows):
            yield {}
        return
    last, rest = unknowns[-1], unknowns[:-1]
    reach = max(1, int(budget ** (1 / max(len(rest), 1)) // 2))
    spans = [range(-min(most[v], reach), min(most[v], reach) + 1) for v in rest]
    for steps in itertools.product(*spans):
        cand = dict(zip(rest, steps, strict=True))
        for coefs, delta in rows:  # the first equation that names the last unknown fixes it
            if last in coefs:
                left = delta - sum(c * cand[v] for v, c in coefs.items() if v != last)
                if left % coefs[last] == 0 and abs(left // coefs[last]) <= most[last]:
                    cand[last] = left // coefs[last]
                break
        if last in cand and all(sum(c * cand[v] for v, c in coefs.items()) == delta for coefs, delta in rows):
            yield cand


def _positive(vec: list[int]) -> bool:
    """Lexicographically positive: the first non-zero entry is > 0 (all zero: the same iteration, no carried
    dependence)."""
    return next((x > 0 for x in vec if x), False)


def _vector(dist: dict[str, int], band: list[str]) -> str:
    return "(" + ", ".join(f"{lb} {dist[lb]:+d}" for lb in band) + ")"


def _text(a) -> str:
    return a.array + "".join(f"[{t}]" for t in a.index_text)
