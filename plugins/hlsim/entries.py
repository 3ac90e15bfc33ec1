"""How often the run entered each loop band (what tile transfers charge a guarded loop's tiles by), and a
triangular loop's trips per entry of the kernel's loop.

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


def triangle_trips(d: Design, iters: Counter, invs: Counter, tile_invs: Counter) -> dict[str, float]:
    """A static triangular loop's measured trips per entry of the kernel's loop (``_kernel_entries``: a point
    loop is entered once per tile, and a tile loop between repeats it): under `if (t == 3)`
    its bound t + 1 gives 4, not the 2.5 of every t (before 0.68 the static mean; its tiles' words fell below
    what the run read, an outside probe). A loop of its band inside it that is cut into tiles runs its tile loop
    between this loop's tile and point loops, which repeats its iterations once per tile (8 counted where u ran
    4 times; a second probe): they are divided out. Where one of them has no static count, or the mapping orders
    one ahead of it, the static mean stands."""
    out: dict[str, float] = {}
    bands = None
    for lb, lp in d.tree.loops.items():
        if not (lp.depends_on_outer and not (lp.data_dependent or lp.is_while) and invs[lb]):
            continue
        bands = band_entries(d, invs, tile_invs) if bands is None else bands
        repeats, entries = _repeats(d, lb), _kernel_entries(d, lb, bands)
        if repeats and entries is not None:
            out[lb] = iters[lb] / repeats / entries if entries else 0.0
    return out


def _kernel_entries(d: Design, label: str, bands: dict[str, float]) -> float | None:
    """How often the kernel entered loop ``label``: its band's measured entries times the static trips of the
    band's loops above it (a point loop's own count repeats with the tile loops between: `if (t == 2)` around
    `L_a { L_b: j < t + 1 }`, both in tiles of 2, ran L_a's point loop 8 times for 4 rows, and 1.5 trips were
    taken for 3); None where one of them has no static count or the band's entries were not counted."""
    head = nest.band_head(d.tree, label)
    if head.label not in bands:
        return None
    n = bands[head.label]
    lp = d.tree.loops[label].parent
    while lp is not None and nest.band_head(d.tree, lp.label) is head:
        exact = nest.exact_trips(d, lp.label)
        if exact is None:
            return None
        n *= exact
        lp = lp.parent
    return n


def _repeats(d: Design, label: str) -> int | None:
    """How many times the point loop of ``label`` runs each of its kernel iterations in the mapped nest: the tiles
    of the strip-mined loops of its band inside it (None: one of them has no static count, or is ordered ahead;
    1 in a triangular band, strip-mined in place: no tile loop comes between, and `for j < i { for k (tiles of
    2) } }` was divided by 4, 12 words written where 24 elements were, a refusal).
    """
    band = nest.band_labels(d.tree, label)
    if nest.is_triangular(d, band):
        return 1
    inner = band[band.index(label) + 1:]
    seq = nest.loop_sequence(d.mapping.order, band)
    n = 1
    for b in inner:
        if seq.index(b) < seq.index(label):
            return None
        if nest.strip_mined(d, b):
            exact = nest.exact_trips(d, b)
            if exact is None:
                return None
            n *= -(-exact // d.mapping.loop(b).tile)
    return n
