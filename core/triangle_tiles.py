"""How a tiled triangular loop's entries split into tiles.

Why a module of its own: a triangular loop (`for j <= p`) runs a different number of trips at each entry, so
whether a tile cuts it, and into how many tiles, is a question of its entries, not of its mean trips. The tile
model asks here: ``longest`` and ``any_cut`` (whether a tile cuts a loop), ``tile_counts`` and ``triangle_outer``
(how many tiles each entry runs; ``llmulator.traffic.view``, ``llmulator.transfers``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .traffic import Nest


def longest(nest: Nest) -> np.ndarray:
    """(L,) the most trips an entry of each loop runs: a triangle's longest entry, else its trips. A tile below it
    cuts the loop: `for p < 7 { for j <= p (tiles of 4) }` runs 7 trips at p = 6 in two tiles, though its mean
    entry, 4, fits one (before hlsim 0.76 / analytical 0.89 the mean decided: one tile, held across p, 7 words
    where each pass reloads its own, 28; at p < 8 the mean 4.5 cut it: 36, and 2.4x the cycles for one more row)."""
    out = np.maximum(nest.trips.astype(float), 1.0)
    for li, (_, most) in nest.spans.items():
        out[li] = max(out[li], most)
    return out


def tile_counts(nest: Nest, tiles: np.ndarray, li: int) -> np.ndarray:
    """(B,) the tiles per entry of loop ``li`` cut in tiles of ``tiles`` (B,): the mean over a triangle's entries
    of each one's own (1, 1, 1, 1, 2, 2, 2 for j <= p < 7 in tiles of 4), else its trips over the tile."""
    profile = nest.profiles.get(li)
    if profile is None or not len(profile):
        return np.ceil(max(float(nest.trips[li]), 1.0) / tiles - 1e-9)
    return np.ceil(profile[None, :] / tiles[:, None] - 1e-9).mean(axis=1)


def any_cut(tiles: np.ndarray, under: list[int], most: np.ndarray) -> np.ndarray:
    """(B,) whether any of the loops ``under`` is cut into tiles (a tile below the most trips of an entry)."""
    return (tiles[:, under] < most[under][None, :] - 1e-9).any(axis=1)


def triangle_outer(nest: Nest, groups: list[list[int]], tiles: np.ndarray, t: np.ndarray, outer: np.ndarray
                   ) -> np.ndarray:
    """(B, L) which kernel loops the batch's ``tiles`` cut; ``outer`` (B, G, the tile loops' trips) set in place
    to the mean of each entry's own tiles for a triangular loop tiled on its own (``t``: (B, G) point sizes)."""
    cut = tiles < longest(nest)[None, :] - 1e-9
    for gi, g in enumerate(groups):
        if len(g) == 1 and g[0] in nest.profiles:
            outer[:, gi] = np.where(cut[:, g[0]], tile_counts(nest, t[:, gi], g[0]), outer[:, gi])
    return cut
