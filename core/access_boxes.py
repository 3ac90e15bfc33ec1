"""Where each access of an array lies in a tile, for arrays whose accesses move differently as the loops run.

Why a module of its own: ``llmulator.transfers.footprints`` prices a tile of an array as one box per dimension,
the largest |coefficient| times the tile's extent plus the spread of the constant offsets. That is exact when
every access of the array has the same signed coefficients (``a[i]`` and ``a[i + 1]``: the box slides as one),
and wrong otherwise, because the box then depends on where the accesses start and on which tile it is: an
outside probe of hlsim 0.54 found `b[i] += a[3 - k] + a[k + 3]` (a[0..6], 7 words) moved as 4, `a[4 - k] + a[k]`
(a[0..4], 5) as 8, `x[0]` beside `x[k]` with k from 1 (x[0..4], 5) as 4, and `A[i][j] + A[j][i]` in 2 x 2 tiles
counts 3 x 3 per tile where a tile off the diagonal touches 8 elements.

For such an array, :func:`footprints` walks the tiles: per tile, each distinct access spans a box (its signed
coefficients times each loop's step over the tile's extent, from where the loops' first values put it); the
tile holds at most the bounding box of those boxes and at most their sum (boxes apart are moved apart). The
mean over the tiles is what each load moves on average; the largest is the room a tile needs.
"""

from __future__ import annotations

import itertools
import math

import attrs
import numpy as np

from . import kernel_values as kv
from .expr import ExprError, evaluate

GRID = 4096  # tile positions walked per mapping; beyond it, evenly spaced positions per loop stand for the rest


@attrs.define
class Boxes:
    """The distinct accesses of one array in one nest, per dimension: where each starts and how it moves."""

    base: np.ndarray  # (A, D) the element it names at every loop's first value (nan: unknown against the others)
    slope: np.ndarray  # (A, D, L) elements it moves per trip of loop l (signed: coefficient x the loop's step)
    stride: np.ndarray  # (D,) every access names every stride-th element from a common start (1: any element)
    axis: np.ndarray  # (L,) the tile axis each loop walks (sibling loops of one name share one: their tile index)
    # a triangular loop's trips at an entry, affine in the trip counters of the loops around it: trips0 + tripsw @ n
    # (nan rows: not triangular, or bounds that are not affine): :func:`_triangle_extents`
    trips0: np.ndarray | None = None  # (L,)
    tripsw: np.ndarray | None = None  # (L, L)


def of(design, accs, at: list[int], loops, scopes, shape) -> Boxes | None:
    """The array's :class:`Boxes`, or None where traffic's one box per dimension is exact (in every dimension all
    accesses have one signed coefficient vector over the same loops, and those loops start alike) or not ours to
    refine (a dimension without an affine form, an access under a loop whose step is not a constant addition).
    ``at``: per access, the loop whose scope names its variables (-1: outside every loop of the nest);
    ``scopes``: ``array_use.Scopes`` (slopes are kept per tile axis: sibling loops of one name share one)."""
    ndim = len(shape)
    rows: dict[tuple, tuple] = {}  # distinct accesses: per dim (signature, (loop or name, coefficient)s, constant)
    keys = [range_key(loops, scopes.names, li) for li in range(len(loops))]
    for acc, w in zip(accs, at, strict=True):
        if len(acc.affine) < ndim or any(a is None for a in acc.affine[:ndim]):
            return None
        dims = tuple(_resolved(a, scopes.names[w] if w >= 0 else {}, scopes.axis, keys) for a in acc.affine[:ndim])
        rows.setdefault(tuple((sig, const) for sig, _, const in dims), dims)
    if all(len({row[d][0] for row in rows.values()}) == 1 for d in range(ndim)) and not _apart_from_axis(
            rows.values(), scopes.axis, keys):
        return None
    values = _loop_values(design, loops, scopes.names)
    base, slope = np.zeros((len(rows), ndim)), np.zeros((len(rows), ndim, len(loops)))
    for d in range(ndim):
        unknown = [_place(design, row[d][1:], values, base[a, d:d + 1], slope[a, d])
                   for a, row in enumerate(rows.values())]
        if any(t != unknown[0] for t in unknown):  # starts that differ by what no number gives: unknown apart
            base[:, d] = np.nan
    if np.isnan(slope).any():
        return None
    return Boxes(base, slope, _strides(base, slope), np.asarray(scopes.axis), *_triangle_trips(design, loops,
                                                                                             scopes.names, values))


def _triangle_trips(design, loops, names, values) -> tuple[np.ndarray, np.ndarray]:
    """(trips0 (L,), tripsw (L, L)): each triangular loop's trips at an entry as trips0 + tripsw @ n, n the trip
    counters of every loop (a constant step, both bounds affine in the outer loops: `j < i`, `j = i; j < N`);
    nan for the other loops."""
    L = len(loops)
    t0, tw = np.full(L, np.nan), np.full((L, L), np.nan)
    for li, lp in enumerate(loops):
        outer = [v for v in lp.depends_on_outer if names[li].get(v, li) != li]
        first, weights, unknown = values[li]
        if not outer or unknown or not lp.static or np.isnan(weights).any() or lp.step_op != "+":
            continue
        up = _affine(design, lp.upper_text, outer)
        if up is None:
            continue
        u0, uw = up[0], np.zeros(L)
        for v, a in up[1].items():
            o_first, o_weights, o_unknown = values[names[li][v]]
            u0, uw = u0 + a * o_first, uw + a * o_weights
            unknown = unknown or o_unknown
        own = weights.copy()
        own[li] = 0.0
        if not unknown and np.isfinite(uw).all():  # an entry's trips round up: at most (|step| - 1) / |step| more
            t0[li] = (u0 - first) / lp.step + (abs(lp.step) - 1.0) / abs(lp.step)
            tw[li] = (uw - own) / lp.step
    return t0, tw


def _triangle_extents(boxes: Boxes, t: np.ndarray, ext: np.ndarray, fixed: np.ndarray, count: np.ndarray,
                      pos: np.ndarray, moving: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P, A, L) each loop's extent at each tile position for the box (a triangular loop run whole: its most
    trips at the tile's entries) and for the elements an access names (their mean, at least what the tile's
    entries run on average; the most for an access that does not move with the loops the bounds read, as the
    spans rule has it, now tile by tile: before hlsim 0.63 the most over the whole nest, so `A[j][j]` beside
    `A[i][j]` in row tiles of 1 of a 256 x 256 triangle moved 255 diagonal elements a row, 1.33x a probe's
    hand count). Before hlsim 0.61 a triangular loop spanned its mean trips over the whole nest in
    every tile, so `A[i][j]` under `for (j < i)` beside `for (j = i; j < 8)` in row tiles of 2 (every row whole)
    had a bounding box short of the row: 58 words where the run reads 64 (an outside probe's LU row split)."""
    P, (A, L) = pos.shape[0], t.shape  # ext: (L,) each loop's extent in a tile, the trip counters' range there
    most, mean = np.broadcast_to(t, (P, A, L)).copy(), np.broadcast_to(t, (P, A, L)).copy()
    # a loop no access moves with is not walked (every position at its first tile): the array's tile stays
    # across all its trips, so its counter ranges over all of them (before hlsim 0.62 over the first tile's:
    # `B[j][k]` for j <= k < i in row tiles of 2 took the rows where k runs at most once, 8 words of 49; a probe)
    walked = np.zeros(L, dtype=bool)
    walked[moving] = True
    span = np.where(walked, ext, ext * np.maximum(np.ceil(count - 1e-9), 1.0)) - 1.0
    for li in np.flatnonzero(np.isfinite(boxes.trips0) & (count <= 1)):
        c = np.nan_to_num(boxes.tripsw[li])
        at = boxes.trips0[li] + (pos * ext[None]) @ c  # (P,) trips at the tile's first entry
        lo = at + np.minimum(c * span, 0.0).sum()
        hi = at + np.maximum(c * span, 0.0).sum()
        most[:, :, li] = np.maximum(np.ceil(hi - 1e-9), 1.0)[:, None]
        # an access that does not move with the loops the bounds read names the union of their entries' runs
        # (`A[j][j]` for j < i: the longest run in the tile), the others one run per entry (their mean)
        mean[:, :, li] = np.where(fixed[None, :, li], most[:, :, li],
                                  ((np.maximum(lo, 0.0) + np.maximum(hi, 0.0)) / 2.0)[:, None])
    return most, mean


def _resolved(aff, names: dict[str, int], axis: list[int], keys: list[tuple]) -> tuple:
    """(signature, ((loop index or name, coefficient), ...), constant text) of one dimension of an access: the
    signature names each loop by its tile axis and its range (:func:`range_key`: sibling loops of one range are
    one)."""
    terms = tuple(sorted(((names.get(v, v), c) for v, c in aff.coefs.items() if c), key=repr))
    sig = tuple((axis[li], c, keys[li]) if isinstance(li, int) else (li, c) for li, c in terms)
    return tuple(sorted(sig, key=repr)), terms, str(aff.const)


def _apart_from_axis(rows, axis: list[int], keys: list[tuple]) -> bool:
    """Whether an access moves with a loop whose range differs from that of its tile axis (the last sibling of
    its name): traffic's one box per dimension takes the axis loop's extent, so `o[i]` in `for (i < 8)` before a
    sibling `for (i < 3)` spanned 3 elements of the 8 it writes (hlsim 0.59; the distinct-element bound)."""
    return any(isinstance(li, int) and keys[li] != keys[axis[li]] for row in rows for dim in row for li, _ in dim[1])


def range_key(loops, names: list[dict[str, int]], li: int) -> tuple:
    """What fixes loop ``li``'s values: its head's text, and the same of each outer loop its bounds name (the
    text `i < p` means other values under `for (p < 8)` than under a sibling `for (p < 3)`: hlsim 0.60 took them
    as one, 2 words of the 7 read; an outside probe); a loop whose trips the data decide (`i < n`, n read from an
    array) is its own. Sibling loops of one key take the same values."""
    lp = loops[li]
    if not lp.static or lp.dynamic_reason:
        return ("data", li)
    outer = tuple(sorted((v, range_key(loops, names, names[li][v])) for v in lp.depends_on_outer
                         if names[li].get(v, li) != li))
    return (lp.lower_text, lp.upper_text, lp.step, lp.step_op, lp.step_text, lp.cond_op, outer)


def _strides(base: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """(D,) the largest step every access of a dimension keeps to: the gcd of their slopes and of the distances
    between their starts (`a[2 * k]` beside `a[6 - 2 * k]`: both name even elements only, 2)."""
    out = np.ones(base.shape[1])
    for d in range(base.shape[1]):
        steps = np.abs(slope[:, d, :]).ravel()
        gaps = np.abs(base[:, d] - base[0, d])
        values = np.concatenate([steps, gaps])
        if np.isfinite(values).all() and np.all(values == np.round(values)):
            out[d] = max(int(np.gcd.reduce(values.astype(np.int64))), 1)
    return out


def _place(design, dim: tuple, values: list, base: np.ndarray, slope: np.ndarray) -> dict:
    """One access's dimension (``_resolved``'s terms and constant) as the loops' trips run it: its start at every
    loop's first trip into ``base[0]``, elements per trip of each loop into ``slope``; the terms of the start no
    number gives, returned."""
    coefs, const = dim
    terms: dict = {}
    try:
        base[0] = float(evaluate(const, design.values))
    except ExprError:
        terms["const " + const] = 1
    for li, c in coefs:
        if not isinstance(li, int):  # a name that is no loop of the nest's: a value the nest does not move
            terms[li] = terms.get(li, 0) + c
            continue
        first, weights, unknown = values[li]
        base[0] += c * first
        slope += c * weights
        for k, n in unknown.items():
            terms[k] = terms.get(k, 0) + c * n
    return {k: n for k, n in terms.items() if n}


def _loop_values(design, loops, scopes) -> list[tuple[float, np.ndarray, dict]]:
    """Per loop: its variable as (the value at every loop's first trip, elements per trip of each loop (L,),
    unknown terms): ``j = i + 1`` starts one past i and moves with it; a loop without an initialiser, or one
    its evaluator cannot read, starts at a name of its own; a step that is not a constant addition: nan."""
    out: list[tuple[float, np.ndarray, dict]] = []
    for li, lp in enumerate(loops):
        weights = np.zeros(len(loops))
        weights[li] = lp.step if lp.step_op == "+" and lp.step_text is None and lp.step else np.nan
        first, terms = 0.0, {("first", li): 1}
        outer = [v for v in lp.depends_on_outer if scopes[li].get(v, li) != li]
        lower = _affine(design, lp.lower_text, outer) if lp.lower_text.strip() else None
        if lower is not None:
            first, terms = lower[0], {}
            for v, a in lower[1].items():
                o_first, o_weights, o_terms = out[scopes[li][v]]
                first += a * o_first
                weights = weights + a * o_weights
                terms.update({k: terms.get(k, 0) + a * n for k, n in o_terms.items()})
        out.append((first, weights, terms))
    return out


AFFINE_CHECKS = (2.0, 3.0, 5.0, 12.0, 97.0)  # values each outer variable takes to tell `i / 3` from 0 * i


def _affine(design, text: str, outer: list[str]) -> tuple[float, dict[str, float]] | None:
    """A loop bound as (constant, {outer variable: coefficient}) where it is affine in them, else None: checked at
    several values of each variable and of all together (before hlsim 0.62 at 0, 1 and 2 only, where `i / 3`
    and `i >> 2` are 0: a triangle `j < i / 3` read as no trips, 2 words where the run reads 9; a probe)."""
    names = {**{k: float(v) for k, v in design.sizes.items()}, **{v: 0.0 for v in outer}}
    try:
        a0 = kv.eval_c(text, names)
        coefs = {v: kv.eval_c(text, {**names, v: 1.0}) - a0 for v in outer}
        points = [{v: x} for v in outer for x in AFFINE_CHECKS]
        points += [{v: x + 7.0 * k for k, v in enumerate(outer)} for x in AFFINE_CHECKS]
        if any(abs(kv.eval_c(text, {**names, **pt}) - a0 - sum(coefs[v] * x for v, x in pt.items())) > 1e-9
               for pt in points):
            return None
    except Exception:  # a bound the evaluator cannot read (a local, an array): unknown, as traffic's _slide takes it
        return None
    return (a0, {v: c for v, c in coefs.items() if c}) if math.isfinite(a0) else None


def footprints(boxes: Boxes, shape, tiles: np.ndarray, counts: np.ndarray, how: str = "mean",
               spans: list | None = None) -> np.ndarray:
    """(B,) elements of one tile: the mean over the nest's tiles (``how="mean"``: what a load moves on average)
    or the largest (``"max"``: the room it needs). ``tiles``: (B, L) each loop's extent in a tile; ``counts``:
    (B, L) how many tiles each loop's trips make; ``spans``: [(triangular loop, its outer loops, (B,) its most
    trips where a tile runs it whole, else nan)]: an access that does not move with those outer loops spans the
    loop's most trips, not its mean (`A[j][j]` beside `A[i][j]` for j < i: a[0..4][0..4]'s diagonal, 5, not
    2.5; a second probe). The outer loops are tile axes: an access moves with an axis where it moves with any
    loop of it (before hlsim 0.61 only with the axis loop itself, so `x[p][i]` under a sibling `for (p ...)`
    spanned every row: 56 words where the triangle holds 28; an outside probe)."""
    moving = np.flatnonzero((boxes.slope != 0).any(axis=(0, 1)))
    out = np.empty(tiles.shape[0])
    cache: dict[tuple, float] = {}
    for b in range(tiles.shape[0]):
        extent, count = _per_axis_tiles(np.maximum(tiles[b], 1.0), counts[b], boxes.axis, moving)
        t = np.repeat(extent[None], boxes.slope.shape[0], axis=0)  # (A, L) per access
        fixed = np.zeros(t.shape, dtype=bool)  # an access's extent its most trips over the nest give
        for li, outer, most in spans or ():  # outer: tile axes; a slope is per loop (every loop of those axes)
            if np.isfinite(most[b]):
                fixed[(boxes.slope[:, :, np.isin(boxes.axis, outer)] == 0).all(axis=(1, 2)), li] = True
                t[fixed[:, li], li] = max(most[b], 1.0)
        key = tuple(t[:, moving].ravel()) + tuple(count[moving]) + tuple(count[boxes.axis[moving]])
        if key not in cache:
            pos = _positions(moving, boxes.axis, count)
            per = _per_tile(boxes, shape, t, pos, *(_triangle_extents(boxes, t, extent, fixed, count, pos, moving)
                                                    if boxes.trips0 is not None else (None, None)))
            cache[key] = float(per.mean() if how == "mean" else per.max())
        out[b] = cache[key]
    return out


def _per_axis_tiles(tiles: np.ndarray, counts: np.ndarray, axis: np.ndarray, moving: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(L,) each loop's extent in one tile and its tiles, where sibling loops of one name walk their axis's
    tiles: the tile model loads an array once per tile of the axis loop (``transfers.tile_loads`` counts that
    loop's tiles), so a sibling cut into more tiles than its axis spans as many of its own tiles per axis tile as
    it takes to cover its trips in the axis's count. Before hlsim 0.60 each position took one of the sibling's
    tiles and the mean over them was moved once per axis tile: fdtd-2d's `ex` with `L_ex_i` tiled by 5 (4 tiles)
    beside an untiled `L_hz_i` moved 577.5 of the 599 distinct elements the run read (the distinct-element
    bound refused it while generating data)."""
    extent, count = tiles.copy(), counts.copy()
    for li in moving:
        per_axis = max(math.ceil(counts[axis[li]] - 1e-9), 1)
        k = math.ceil(math.ceil(counts[li] - 1e-9) / per_axis)
        if k > 1:
            extent[li], count[li] = tiles[li] * k, math.ceil(math.ceil(counts[li] - 1e-9) / k)
    return extent, count


def _positions(moving: np.ndarray, axis: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(P, L) the tiles' positions (tile index per loop; 0 for loops no access moves with): one index per tile
    axis (sibling loops of one name take the same, each within its own tiles, as many positions as the axis
    loop has tiles: ``_per_axis_tiles``), every tile where there are at most GRID, else evenly spaced positions
    per axis."""
    axes = sorted({int(axis[li]) for li in moving})
    n = [max(int(math.ceil(counts[ax] - 1e-9)), 1) for ax in axes]
    per_axis = max(int(GRID ** (1.0 / max(len(n), 1))), 2)
    picks = [np.arange(k) if math.prod(n) <= GRID else np.unique(np.round(np.linspace(0, k - 1, min(k, per_axis))))
             for k in n]
    grid = np.zeros((max(math.prod(len(a) for a in picks), 1), len(counts)))
    last = np.maximum(np.ceil(counts - 1e-9), 1.0) - 1.0
    for p, point in enumerate(itertools.product(*picks)):
        at = dict(zip(axes, point, strict=True))
        for li in moving:
            grid[p, li] = min(at[int(axis[li])], last[li])
    return grid


def _per_tile(boxes: Boxes, shape, t: np.ndarray, pos: np.ndarray, most: np.ndarray | None = None,
              mean: np.ndarray | None = None) -> np.ndarray:
    """(P,) elements of the tile at each position (``t``: (A, L) each loop's extent for each access; ``most`` and
    ``mean``: (P, A, L) the same per position for the box and for the elements named, where a triangular loop's
    differ tile by tile): at most the bounding box of the accesses' boxes, at most their sum (an access's box:
    at most one element per trip of the loops that move it, so a triangle's rows, `j = i + 1 ...`, count their
    trips, not the rectangle around them), at most the array."""
    most = np.broadcast_to(t, (pos.shape[0],) + t.shape) if most is None else most
    mean = most if mean is None else mean
    moves = boxes.slope != 0
    step = boxes.slope * t[:, None, :]                              # (A, D, L) elements a tile moves the start
    start = boxes.base[None] + np.einsum("adl,pl->pad", step, pos)  # (P, A, D)
    span = boxes.slope[None] * (most[:, :, None, :] - 1.0)          # (P, A, D, L)
    lo = start + np.minimum(span, 0.0).sum(axis=3)
    hi = start + np.maximum(span, 0.0).sum(axis=3)
    size = np.asarray(shape, dtype=float)
    points = np.where(moves[None], most[:, :, None, :], 1.0).prod(axis=3)  # elements a stride skips are not named
    named = np.where(moves.any(axis=1)[None], mean, 1.0).prod(axis=2)  # (P, A) one element a trip
    each = np.minimum(np.minimum(np.minimum(np.abs(span).sum(axis=3) + 1.0, points), size).prod(axis=2), named)
    unknown = np.isnan(boxes.base).any(axis=0)  # (D,) starts unknown apart: the bounding box is the dimension
    own = np.zeros(pos.shape[0])
    for members in _same_slope(boxes):  # accesses a constant apart: their boxes' hull, where it is smaller
        hull = np.nan_to_num(hi[:, members].max(axis=1) - lo[:, members].min(axis=1)) / boxes.stride[None] + 1.0
        hull = np.where(unknown[None], size[None], np.minimum(hull, size[None])).prod(axis=1)
        own += np.minimum(each[:, members].sum(axis=1), hull)
    box = np.nan_to_num(hi.max(axis=1) - lo.min(axis=1)) / boxes.stride[None] + 1.0  # (P, D): every stride-th
    whole = np.where(unknown[None], size[None], np.minimum(box, size[None]))
    return np.minimum(own, whole.prod(axis=1))


def _same_slope(boxes: Boxes) -> list[list[int]]:
    """The accesses grouped by how they move (one slope in every dimension): a group's boxes are translates, so
    their union is within the hull of their boxes. Before hlsim 0.86 each access's box was added on its own:
    `x[i] + x[i + 1] + x[N - 1]` in tiles of 4 took 4 + 4 + 1 a tile where the tiles name 5 + 1 (67 words where
    the tiles of 32 elements name 39: an outside probe's edge clamp `x[min(i + 1, N - 1)]` priced as its choices)."""
    groups: dict[bytes, list[int]] = {}
    for a in range(boxes.slope.shape[0]):
        groups.setdefault(np.ascontiguousarray(boxes.slope[a]).tobytes(), []).append(a)
    return list(groups.values())
