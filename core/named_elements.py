"""How many elements an array's accesses can name over a tile, where a loop indexes two of its dimensions.

Why a module of its own: the per-dimension box (``transfers.footprints``) multiplies each dimension's span, which
counts a diagonal `L[i][i]` over N points as the N x N box; the elements the subscripts can name bound it (a
point names one element per distinct access, fewer where several accesses overlap or a divisor folds points
together). hlsim and the analytical model both take the smaller.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from . import shifted_union

if TYPE_CHECKING:
    from .traffic import ArrayUse


def cap(arr: ArrayUse, tiles: np.ndarray, out: np.ndarray) -> np.ndarray:
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
    divided = {div[0]: div for div in (arr.divided or []) if div is not None}
    points = np.prod([_distinct(tiles[:, li], step[li], divided.get(li)) + (li in counted)
                      for li in sorted(set(named))], axis=0)
    per_point = np.full(points.shape, float(min(math.prod(arr.patterns), arr.accesses)))
    if arr.shifts is not None and len(arr.shifts[2]) > 1 and list(arr.shifts[0]) == sorted(set(named)):
        (axes, coefs, offsets), cache = arr.shifts, {}
        for b, ext in enumerate(np.stack([np.maximum(np.round(tiles[:, li]), 1.0) for li in axes], axis=1)):
            if tuple(ext) not in cache:
                cache[tuple(ext)] = shifted_union.per_point(coefs, offsets, ext)
            per_point[b] = min(per_point[b], cache[tuple(ext)] or math.inf)
    return np.minimum(out, points * per_point)


def _distinct(trips: np.ndarray, step: float, div: tuple | None) -> np.ndarray:
    """Values a loop's index takes over a tile as a subscript sees them: every trip one (a step of at least one
    element), fewer where it is divided (`i / 2`: ``divided_count``; where no record gives the phase, the most
    any phase gives, the step's fraction's denominator less one over it)."""
    if step >= 1:
        return trips
    if div is not None:
        return divided_count((*div[:4], 0.0), trips)
    den = Fraction(step).limit_denominator(1 << 16).denominator
    return np.floor((den - 1 + step * den * (trips - 1)) / den) + 1


def divided_count(div: tuple, trips: np.ndarray) -> np.ndarray:
    """Elements `x[(c i + k) / d]` names over a tile of ``trips`` (``ArrayUse.divided``: axis, numerator units
    per trip, d, phase, spread): floor((phase + units x (trips - 1) + spread) / d) + 1, at the first trip's
    phase where every tile starts there (trips x units a multiple of d), else at the worst, d - 1."""
    _, units, d, phase, spread = div
    t = np.asarray(trips, dtype=float)
    rho = np.where((t == np.round(t)) & (np.mod(np.round(units * t), d) == 0), phase, d - 1.0)
    return np.floor((rho + units * (np.maximum(t, 1.0) - 1.0) + spread) / d) + 1.0
