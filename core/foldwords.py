"""The flattened strides of a PE-array fold's arrays, for :func:`llmulator.words.word_factor` (one design's
fold, ``llmulator.nest.fold``; the analytical model's batch builds the same from ``llmulator.traffic``)."""

from __future__ import annotations

import numpy as np


def fold_strides(design, arr: str, per_dim: list[dict[str, int]], heads: list[str],
                 t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(G,) the elements each mapped loop's step moves ``arr``'s flattened address by (a fused loop: its
    innermost member that indexes the array) and (1, G) that kernel loop's iterations within a tile.
    ``per_dim``: per dimension of ``arr``, loop variable -> the largest |coefficient| of any access."""
    from .nest import members, point_extent
    loops = design.tree.loops
    shape = design.workload.shape(arr, design.sizes)
    flat: dict[str, int] = {}
    row = 1
    for d in range(len(shape) - 1, -1, -1):
        for v, c in (per_dim[d].items() if d < len(per_dim) else ()):
            flat[v] = flat.get(v, 0) + c * row
        row *= max(int(shape[d]), 1)
    stride = np.zeros(len(heads), dtype=np.int64)
    extent = t.copy()
    for g, lb in enumerate(heads):
        for mb in reversed(members(design, lb)):
            v = loops[mb].var
            if flat.get(v):
                stride[g] = flat[v]
                extent[0, g] = min(point_extent(design, mb), t[0, g])
                break
    return stride, extent
