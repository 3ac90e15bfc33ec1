"""An array that sibling loops touch, where a sibling is tiled on its own: each sibling moves its own tiles.

Why a module of its own: the tile model (``llmulator.transfers``) prices an array in a nest as one tile walked by
the nest's tile loops in pre-order, Timeloop's rule for a perfect nest. A nest with sibling loops is not one:
`for t { L_a (tiles of 2): o[i] = x[i]; L_b (tiles of 4): q[i] = x[i]; }` holds 2 elements of x while `L_a`
runs and 4 while `L_b` runs, 16 words a step, but the one tile took `L_a`'s 4 tiles as enclosing `L_b`'s 2 and
moved 8 loads of the union of both, 32 a step (an outside probe of hlsim 0.60; 2.7 % of generated rows have a
tiled loop beside a sibling). Here the accesses part where they part: under the innermost loop around them all
(the head), one group per child loop of it that holds some of them and one for its own statements. Each group
is an array use of its own whose tiles walk its own loops; where some group's tile changes inside one trip of
the head, every group loads its tiles again on each trip of the loops down to the head. Where none does, the
groups share one tile (the union of their boxes), as before.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np

from .array_use import ArrayUse, Scopes, common_chain, enclosing, loop_chain, scopes_within
from .kernel import Loop


@attrs.define
class Group:
    use: ArrayUse  # the group's accesses alone, its loops its own tile axes
    below: np.ndarray  # (L,) bool: the group's loops under the head (a tile of one changes its tile in a head trip)


@attrs.define
class Split:
    head: np.ndarray  # (L,) bool: the loops from the nest's top down to the innermost around every access
    groups: list[Group]


def of(u: dict, loops: list[Loop], scopes: Scopes, build: Callable[[dict, Scopes], ArrayUse],
       segments: dict) -> Split | None:
    """The array's accesses (``u``: ``traffic._Counts``' record of them) parted by sibling loop, or None where
    they do not part (all under one child loop of the innermost loop around them, or all in its own body), or
    where a group's loop moves with a loop outside the group (a data segment's outer loop: not priced apart).
    ``build``: an array use of some of the accesses under given scopes; each group is parted again below."""
    at = u["at"]
    if not at or min(at) < 0:
        return None
    index = {id(lp): i for i, lp in enumerate(loops)}
    chains = {w: loop_chain(loops, index, w) for w in set(at)}
    common = common_chain(list(chains.values()))
    key = {w: (c[len(common)] if len(c) > len(common) else -1) for w, c in chains.items()}
    keys = sorted(set(key.values()))
    if len(keys) < 2:
        return None
    head = np.zeros(len(loops), dtype=bool)
    head[common] = True
    groups = []
    for k in keys:
        pick = [n for n, w in enumerate(at) if key[w] == k]
        sub = {"accs": [u["accs"][n] for n in pick], "at": [at[n] for n in pick],
               "r": sum(u["each"][n][0] for n in pick), "w": sum(u["each"][n][1] for n in pick),
               "read": any(u["each"][n][2] for n in pick), "partly": any(u["each"][n][3] for n in pick),
               "each": [u["each"][n] for n in pick]}
        mask = enclosing(loops, sub["at"])
        if any(oi >= 0 and not mask[oi] for li in np.flatnonzero(mask) for oi, _ in segments.get(li, ())):
            return None
        use = build(sub, scopes_within(scopes, loops, mask))
        use.split = of(sub, loops, scopes, build, segments)
        groups.append(Group(use, _subtree(loops, index, k)))
    return Split(head, groups)


def _subtree(loops: list[Loop], index: dict, k: int) -> np.ndarray:
    """(L,) bool: loop ``k`` and the loops inside it (none for -1: the head's own statements)."""
    out = np.zeros(len(loops), dtype=bool)
    if k >= 0:
        for i in range(len(loops)):
            out[i] = k in loop_chain(loops, index, i)
    return out
