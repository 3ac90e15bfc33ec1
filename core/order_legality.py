"""Whether a mapping's ``order`` keeps every dependence of the band it permutes (loop interchange legality).

Why: ``order`` reorders the loops of a perfect band; when one iteration writes an element that a later
iteration (in the kernel's order) reads or writes, the new order must still run the writer first. A
wavefront ``A[i][j] = A[i - 1][j + 1] + 1`` under ``order: [L_j, L_i]`` reads ``A[i - 1][j + 1]`` before it is
written: hlsim runs the reordered program and its functional check fails, but nothing said which field of the
mapping was at fault. Here each pair of accesses to one array, one of them a write, whose subscripts are the
same affine form up to constants gives a distance vector over the band's loops (in kernel order); the
dependence holds in the new order when the vector, read in that order, is still lexicographically positive.
Pairs this cannot compare (indirect or differently shaped subscripts) are not judged, and a band loop a
subscript does not use is compared at distance 0 (one of the iteration pairs that touch the element): what this
reports is a real violation, and it can miss others, which hlsim's functional check still catches.

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
from .reduction_legality import folds_element


def reversed_dependence(design, band: list[str], sequence: list[str], tiles: dict[str, int] | None = None
                        ) -> str | None:
    """The first dependence the loop ``sequence`` (a permutation of ``band``) runs backwards, as text, or None;
    ``tiles``: the band's loops strip-mined in tiles of that many trips, whose tile loops run outside every
    point loop."""
    loops = design.tree.loops
    var_of = {lb: loops[lb].var for lb in band}
    stmts = [n for n in loops[band[-1]].descendants() if getattr(n, "kind", "") == "stmt"]
    accesses = [(st, a) for st in stmts for a in st.accesses]
    for st, w in ((st, a) for st, a in accesses if a.is_write):
        for other, r in accesses:
            if r.array != w.array or r is w:
                continue
            base = distance_vector(design, w, r, var_of, band)
            if base is None:
                continue  # never the same element (or not comparable)
            # a statement that updates the element other than by one associative operation (`s[0] = s[0] * 3 +
            # x[p]`) orders every pair of its runs: its free loops move together too (a probe tiled p under t)
            chain = other is st and not any(base.values()) and not folds_element(st.text, _text(w))
            for dist in _with_free_loops(design, base, w, var_of, band, together=chain):
                if not any(dist.values()) or any(abs(x) >= max(design.trips(lb), 1) for lb, x in dist.items()):
                    continue  # within one iteration, or farther apart than a loop runs
                if not _positive([dist[lb] for lb in band]):  # r comes first in the kernel: the write stays after it
                    dist = {lb: -x for lb, x in dist.items()}
                if not all(_positive(v) for v in _orders(dist, sequence, tiles or {})):
                    run = " > ".join([f"{lb}'s tiles" for lb in sequence if lb in (tiles or {})] + sequence)
                    return (f"`{_text(w)}` and `{_text(r)}` touch one element {_vector(dist, band)} iterations "
                            f"apart, and {run} would run the later one first")
    return None


def _with_free_loops(design, base: dict[str, int], w, var_of: dict[str, str | None], band: list[str],
                     together: bool = False):
    """``base``, and ``base`` with one band loop the subscripts do not use (of at least 2 trips) at -1 and at +1:
    any two of its iterations touch the element, so the pairs one step apart carry the dependence both ways.
    Before 2026-12-07 such a loop was taken at 0 only, which misses a time loop's `a[p + 1]` read at t + 1, p - 1.
    One loop at a time: a reduction (`O[k][p][q] += ...` over c, r, s: its elements' subscripts alike) then has
    a single non-zero distance, which every order keeps; two at once, (r +1, s -1), would refuse reordering the
    sum, which a reduction allows (every refusal of 12 in 1,200 generated rows, in a first draft)."""
    used = {v for aff in w.affine if aff is not None for v, c in aff.coefs.items() if c}
    free = [lb for lb in band if var_of[lb] not in used and design.trips(lb) >= 2]
    if together:  # (``together``: every combination, for an update no reordering keeps)
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


def distance_vector(design, w, r, var_of: dict[str, str | None], band: list[str]) -> dict[str, int] | None:
    """Iterations of each band loop from ``w``'s access to ``r``'s of the same element, where each subscript
    is one band variable (coefficient 1) or none, the same in both, plus a constant; None otherwise."""
    if len(w.affine) != len(r.affine) or w.indirect or r.indirect:
        return None
    dist = {lb: 0 for lb in band}
    for aw, ar in zip(w.affine, r.affine, strict=True):
        if aw.coefs != ar.coefs:
            return None
        used = [v for v, c in aw.coefs.items() if c]
        if len(used) > 1 or any(aw.coefs[v] != 1 for v in used):
            return None
        try:
            delta = int(evaluate(aw.const, design.sizes)) - int(evaluate(ar.const, design.sizes))
        except (ExprError, TypeError, ValueError):
            return None
        if not used:
            if delta:
                return None  # different elements
            continue
        lb = next((b for b in band if var_of[b] == used[0]), None)
        if lb is None:
            if delta:
                return None
            continue
        dist[lb] = delta  # w at v touches element v + cw, r at v' element v' + cr: the same one when v' - v = cw - cr
    return dist


def _positive(vec: list[int]) -> bool:
    """Lexicographically positive: the first non-zero entry is > 0 (all zero: the same iteration, no carried
    dependence)."""
    return next((x > 0 for x in vec if x), False)


def _vector(dist: dict[str, int], band: list[str]) -> str:
    return "(" + ", ".join(f"{lb} {dist[lb]:+d}" for lb in band) + ")"


def _text(a) -> str:
    return a.array + "".join(f"[{t}]" for t in a.index_text)
