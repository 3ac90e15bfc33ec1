"""The flattened strides of a PE-array fold's arrays, for :func:`llmulator.words.word_factor` (one design's
fold, ``llmulator.nest.fold``; the analytical model's batch builds the same from ``llmulator.traffic``)."""

from __future__ import annotations

import numpy as np

from .words import flat_strides


def fold_strides(design, arr: str, per_dim: list[dict[str, int]], heads: list[str],
                 t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(G,) the elements each mapped loop's step moves ``arr``'s flattened address by (a fused loop: its
    innermost member that indexes the array) and (1, G) that kernel loop's iterations within a tile.
    ``per_dim``: per dimension of ``arr``, loop variable -> the largest |coefficient| of any access."""
    from .nest import members, point_extent
    loops = design.tree.loops
    member_of = [(g, mb) for g, lb in enumerate(heads) for mb in members(design, lb)]
    index = {loops[mb].var: i for i, (_g, mb) in enumerate(member_of)}
    flat = flat_strides([[(index[v], c) for v, c in dim.items() if v in index] for dim in per_dim],
                        design.workload.shape(arr, design.sizes), len(member_of))
    stride = np.zeros(len(heads), dtype=np.int64)
    extent = t.copy()
    for i in reversed(range(len(member_of))):   # innermost member first
        g, mb = member_of[i]
        if flat[i] and not stride[g]:
            stride[g] = flat[i]
            extent[0, g] = min(point_extent(design, mb), t[0, g])
    return stride, extent
