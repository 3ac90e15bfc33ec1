"""How many elements an array's accesses can name over a tile, where a loop indexes two of its dimensions.

Why a module of its own: the per-dimension box (``transfers.footprints``) multiplies each dimension's span, which
counts a diagonal `L[i][i]` over N points as the N x N box; the elements the subscripts can name bound it (a
point names one element per distinct access, fewer where several accesses overlap or a divisor folds points
together). hlsim and the analytical model both take the smaller. A dimension whose subscripts divide a loop's
index (`x[i / 2]`) is counted here too, group by group (``divided_count``, ``dim_count``, ``by_access``):
``transfers.footprints`` takes those counts in place of the box.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

import attrs
import numpy as np

from . import shifted_union

if TYPE_CHECKING:
    from .traffic import ArrayUse


def cap(arr: ArrayUse, shape: TileShape, out: np.ndarray) -> np.ndarray:
    """``out`` at most the elements the accesses can name: each distinct access one per point of the loops its
    subscripts use (`i / 2`: one per two points). It binds only where a loop indexes two dimensions, which the
    per-dimension box counts twice: a diagonal `L[i][i]` over N points names N elements, not the N x N box (before
    hlsim 0.74 / analytical 0.87 trisolv's diagonal loop moved the whole matrix, 3.2x its DRAM energy; an outside
    check). Accesses of one linear part a constant apart name the union of their translates (``shifted_union``,
    hlsim 0.77): `A[i][i]`, `A[i + 1][i + 1]` over 7 points name 8 (14 before). A while counter's dimension spans
    one step more than its trips, the exit test's (``while_span``; a probe)."""
    named = [li for d, c in enumerate(arr.coefs) if not arr.indirect_dims[d] for li, _ in c]
    if not arr.patterns or any(arr.indirect_dims) or len(set(named)) == len(named):
        return out
    counted = {li for d, c in enumerate(arr.coefs) if arr.patterns[d] == math.inf for li, _ in c}
    step = {li: max(c for cs in arr.coefs for lj, c in cs if lj == li) for li in set(named)}  # < 1: `i / 2`
    tiles = shape.tiles
    divided: dict[int, tuple] = {}
    for groups in arr.divided or []:
        for g in groups or ():
            divided[g[0]] = divided.get(g[0], ()) + (g,)
    points = np.prod([_distinct(tiles[:, li], step[li], divided.get(li), shape) + (li in counted)
                      for li in sorted(set(named))], axis=0)
    per_point = np.full(points.shape, float(min(math.prod(arr.patterns), arr.accesses)))
    if arr.shifts is not None and len(arr.shifts[2]) > 1 and list(arr.shifts[0]) == sorted(set(named)):
        (axes, coefs, offsets), cache = arr.shifts, {}
        for b, ext in enumerate(np.stack([np.maximum(np.round(tiles[:, li]), 1.0) for li in axes], axis=1)):
            if tuple(ext) not in cache:
                cache[tuple(ext)] = shifted_union.per_point(coefs, offsets, ext)
            per_point[b] = min(per_point[b], cache[tuple(ext)] or math.inf)
    return np.minimum(out, points * per_point)


def _distinct(trips: np.ndarray, step: float, groups: tuple | None, shape: TileShape) -> np.ndarray:
    """Values a loop's index takes over a tile as a subscript sees them: every trip one (a step of at least one
    element), fewer where it is divided (`i / 2`: the group of the most, ``divided_count``; where no group gives
    the phase, the most any phase gives, the step's fraction's denominator less one over it)."""
    if step >= 1:
        return trips
    if groups:
        return np.max([divided_count(g[:4] + (0.0, 1), shape) for g in groups], axis=0)
    den = Fraction(step).limit_denominator(1 << 16).denominator
    return np.floor((den - 1 + step * den * (trips - 1)) / den) + 1


@attrs.frozen
class TileShape:
    """The tiles ``footprints`` prices: per loop (B, L) the trips of the tile it prices, the tiles per loop
    (None: one), whether it prices their mean (else one full tile), and a full tile's trips (for the mean: the
    full tiles and the smaller edge tile count apart)."""

    tiles: np.ndarray
    counts: np.ndarray | None = None
    mean: bool = False
    full: np.ndarray | None = None


def divided_count(group: tuple, shape: TileShape) -> np.ndarray:
    """Elements one group of `x[(c i + k) / d]` (``ArrayUse.divided``: axis, numerator units per trip u, d, phase,
    spread, offsets) names in a tile of T trips: floor((rho + u (T - 1) + spread) / d) + 1, rho the phase where
    every tile starts there (T u a multiple of d), else d - 1, the worst; at most each offset's own run (offsets
    far apart: `x[i / 2] + x[(i + 64) / 2]`), and at most one element a trip per offset (`x[2 * i]`). For the
    mean tile, the full tiles and the edge tile each so, averaged (`A[(i + 1) / 2]` over 64 trips in tiles of 6:
    ten of 4 and one of 3, 43 words; the mean tile of 5.8 trips, floored, gave 33: an outside probe); where trips
    are no whole numbers (a mean over data), the same bound unfloored at the worst phase, which no tile exceeds
    on average."""
    li, u, d, phase, spread, n_off = group
    t = np.maximum(np.asarray(shape.tiles[:, li], dtype=float), 1.0)

    def whole(trips, rho):  # the box, at most each offset's own run, at most one element a trip and offset
        box = np.floor((rho + u * (trips - 1.0) + spread) / d) + 1.0
        own = np.floor((np.where(n_off > 1, d - 1.0, rho) + u * (trips - 1.0)) / d) + 1.0
        return np.minimum(box, n_off * np.minimum(own, trips))

    full = t if shape.full is None else np.maximum(np.asarray(shape.full[:, li], dtype=float), 1.0)
    kept = (full == np.round(full)) & (np.mod(np.round(u * full), d) == 0)
    rho = np.where(kept, phase, d - 1.0)
    worst = np.minimum((d - 1.0 + u * (t - 1.0) + spread) / d + 1.0,
                       n_off * np.minimum((d - 1.0 + u * (t - 1.0)) / d + 1.0, t))
    if not shape.mean or shape.counts is None or shape.full is None:
        return np.where(t == np.round(t), whole(t, rho), worst)
    n = np.maximum(np.asarray(shape.counts[:, li], dtype=float), 1.0)
    total = t * n
    last = total - (n - 1.0) * full
    exact = (np.abs(total - np.round(total)) < 1e-9) & (n == np.round(n)) & (last >= 1.0 - 1e-9) & (last <= full)
    mean = ((n - 1.0) * whole(full, rho) + whole(np.round(last), rho)) / n
    return np.where(exact, mean, worst)


def dim_count(groups: tuple, shape: TileShape) -> np.ndarray:
    """A divided dimension's elements in a tile: its groups' counts added (exact for one group, at most the
    union's for several)."""
    return np.sum([divided_count(g, shape) for g in groups], axis=0)


def by_access(arr: ArrayUse, shape: TileShape, dims: list) -> np.ndarray:
    """The elements a tile holds counted access by access where groups split two dimensions: per distinct tuple of
    groups, their counts multiplied (a dimension without groups at its own count), added. The per-dimension
    counts multiplied pair one access's rows with another's columns: `A[i / 2 + k][j] + A[i][j / 4]` in 4 x 8
    tiles names 2 x 8 + 4 x 2 = 24 elements a tile, where (2 + 4) x (8 + 2) = 60 (an outside probe; 2.5x)."""
    split = [d for d, groups in enumerate(arr.divided or []) if groups and len(groups) > 1]
    if len(split) < 2 or not arr.divided_sets:
        return np.full(shape.tiles.shape[0], math.inf)
    total = np.zeros(shape.tiles.shape[0])
    for key in arr.divided_sets:
        part = np.ones(shape.tiles.shape[0])
        for d, g in enumerate(key):
            part = part * (divided_count(arr.divided[d][g], shape) if g is not None else dims[d])
        total += part
    return total
