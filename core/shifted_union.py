"""How many elements accesses that differ only by a constant offset name together over a tile's points.

Why a module of its own: ``named_elements.cap`` bounds a tile by one element per point of its loops per
distinct subscript, which is exact for `L[i][i]` alone but counts `A[i][i]` beside `A[i + 1][i + 1]` twice
where the two diagonals overlap (7 points: 14 where they name 8; an outside probe of hlsim 0.75). Accesses with
one linear part and offsets Δ_a name the union of the translates ``S p + Δ_a`` of one lattice of points; its size
is counted here by enumerating the points of a tile (``MAX_POINTS`` at most), and is unknown (None) beyond.
"""

from __future__ import annotations

import numpy as np

MAX_POINTS = 65_536  # points x accesses enumerated per tile shape; beyond, the per-subscript bound stands


def named(coefs: np.ndarray, offsets: np.ndarray, extents) -> int | None:
    """Elements that accesses ``offsets`` (A, D) of one linear part ``coefs`` (D, K: elements per trip of each of
    K loops) name over a tile of ``extents`` (K,) trips per loop (each loop's first trip at 0: the count does not
    depend on where the tile starts), or None where the enumeration would be larger than ``MAX_POINTS``."""
    ext = [max(int(round(e)), 1) for e in extents]
    if int(np.prod(ext, dtype=np.float64)) * len(offsets) > MAX_POINTS:
        return None
    grid = np.stack(np.meshgrid(*[np.arange(e) for e in ext], indexing="ij"), axis=-1).reshape(-1, len(ext))
    base = grid @ coefs.T  # (P, D)
    elements = (base[None, :, :] + offsets[:, None, :]).reshape(-1, coefs.shape[0])
    return int(np.unique(elements, axis=0).shape[0])


def per_point(coefs: np.ndarray, offsets: np.ndarray, extents) -> float | None:
    """:func:`named` per point of the tile (what ``named_elements.cap`` multiplies its points by)."""
    union = named(coefs, offsets, extents)
    return None if union is None else union / float(np.prod([max(int(round(e)), 1) for e in extents]))
