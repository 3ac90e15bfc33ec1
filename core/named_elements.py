"""How many elements an array's accesses can name over a tile, where a loop indexes two of its dimensions.

Why a module of its own: the per-dimension box (``transfers.footprints``) multiplies each dimension's span, which
counts a diagonal `L[i][i]` over N points as the N x N box; the elements the subscripts can name bound it (a
point names one element per distinct access, fewer where several accesses overlap or a divisor folds points
together). hlsim and the analytical model both take the smaller.
"""

from __future__ import annotations

import math
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
    points = np.prod([np.where(step[li] < 1, (tiles[:, li] - 1) * step[li] + 1, tiles[:, li] + (li in counted))
                      for li in sorted(set(named))], axis=0)
    per_point = np.full(points.shape, float(min(math.prod(arr.patterns), arr.accesses)))
    if arr.shifts is not None and len(arr.shifts[2]) > 1 and list(arr.shifts[0]) == sorted(set(named)):
        (axes, coefs, offsets), cache = arr.shifts, {}
        for b, ext in enumerate(np.stack([np.maximum(np.round(tiles[:, li]), 1.0) for li in axes], axis=1)):
            if tuple(ext) not in cache:
                cache[tuple(ext)] = shifted_union.per_point(coefs, offsets, ext)
            per_point[b] = min(per_point[b], cache[tuple(ext)] or math.inf)
    return np.minimum(out, points * per_point)
