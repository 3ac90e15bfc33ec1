"""How often the run entered each loop band: what tile transfers charge a guarded loop's tiles by.

Why a module of its own: the tile model counts a loop's tile loads from its enclosing loops' trips, as if every
loop ran on every iteration around it; a loop under `if (t == 0)` inside t ran once, and one under a branch never
taken not at all (an outside probe: 16 DRAM words where the run moved none). The instrumented program counts
each loop site's entries; a band's entries are those of its outermost mapped loop (a strip-mined loop's tile loop
runs outside the band's point loops, ``llmulator.nest.mapped_band``), which ``transfers._entered_share`` divides by
the entries its enclosing loops' trips give.
"""

from __future__ import annotations

from collections import Counter

from llmulator import nest
from llmulator.design import Design


def band_entries(d: Design, invs: Counter, tile_invs: Counter) -> dict[str, float]:
    """Band head label -> times the run entered the band (``invs``: a point or whole loop's entries per kernel
    loop; ``tile_invs``: a tile loop's), for the bands whose outermost mapped loop the run counted."""
    out: dict[str, float] = {}
    for label, lp in d.tree.loops.items():
        if lp.parent is not None and lp.parent.perfect_child() is lp:
            continue  # not the head of its band
        mapped = nest.mapped_band(d, nest.band_labels(d.tree, label))
        if not mapped:
            continue
        kind, first = mapped[0]
        seen = tile_invs if kind == "tile" else invs
        if first in seen:
            out[label] = float(seen[first])
    return out
