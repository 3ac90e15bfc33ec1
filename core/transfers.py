"""Tile fills and write-backs between each on-chip level and its backing store, per nest.

Why a module of its own: hlsim and the analytical model charge a nest's transfers by the same rules (the
analytical model for B mappings at once), and the rules say what a nest does with each array, which an outside
user's hand counts checked: a nest loads what it reads when the array holds data by then (an input, an
``inout`` array, or an array something before it wrote) and writes back what it writes; an ``out`` array no
one wrote yet comes back only as partial sums. Before hlsim 0.27 the direction followed the array's role
alone: an ``inout`` matrix a nest only reads was written back (trisolv-plain: 3,240 DRAM writes against 1,640),
and an ``out`` array a consumer loop reads was never loaded. A nest that writes such an array only under a
branch loads it too (hlsim 0.28): its tile goes back whole, and the elements the branch skipped must hold what
they held (before, an ``inout`` array written under an ``if`` was written back without being loaded).
"""

from __future__ import annotations

import math

import numpy as np

from . import access_boxes, named_elements
from .array_use import scopes_of
from .design import Design
from .kernel import Loop
from .traffic import ArrayUse, Nest, View, mappings_from_design, nest_of, view
from .traffic import written_before as _written_before
from .triangle_tiles import tile_counts


def footprints(arr: ArrayUse, tiles: np.ndarray, counts: np.ndarray | None = None, how: str = "mean",
               spans: list | None = None, full: np.ndarray | None = None) -> np.ndarray:
    """Elements of ``arr`` in one tile (all point loops run once), (B,): per dimension the box its accesses span,
    at most the elements they name (a loop stepping by 3 over ``x[i]`` names every third element of its box: 4
    of 10; hlsim 0.46, when the box started taking the loop's step). Accesses that move apart as the loops run
    (``arr.boxes``) are priced tile by tile (``counts``: (B, L) tiles per loop; ``how``: their mean or the
    largest; ``spans``: triangular loops, ``_spans``): ``llmulator.access_boxes``, hlsim 0.57. ``full``: a full
    tile's trips where ``tiles`` is the mean tile (a divided subscript counts the edge tile apart)."""
    if arr.boxes is not None and counts is not None:
        return access_boxes.footprints(arr.boxes, arr.shape, tiles, counts, how, spans)
    out = np.ones(tiles.shape[0])
    shape = named_elements.TileShape(tiles, counts, how == "mean", full)
    dims = []  # each dimension's count, for named_elements.by_access
    for d, size in enumerate(arr.shape):
        if arr.indirect_dims[d]:
            out *= size
            dims.append(np.full(tiles.shape[0], float(size)))
            continue
        ext, points = np.ones(tiles.shape[0]), np.ones(tiles.shape[0])
        for li, c in arr.coefs[d]:
            ext += c * (tiles[:, li] - 1)
            points *= tiles[:, li]
        named = points * (arr.patterns[d] if arr.patterns else math.inf)
        groups = arr.divided[d] if arr.divided else None
        if groups and sorted(li for li, _ in arr.coefs[d]) == sorted({g[0] for g in groups}):
            ext = named_elements.dim_count(groups, shape) - arr.spread[d]  # the spread is in its count
            named = math.inf  # (the groups count each access's own elements)
        dims.append(np.minimum(size, np.minimum(ext + arr.spread[d], named)))
        out *= dims[-1]
    return named_elements.cap(arr, shape, np.minimum(out, named_elements.by_access(arr, shape, dims)))


def tile_loads(dep: np.ndarray, outer: np.ndarray, pos: np.ndarray, around: np.ndarray | None = None,
               floor: np.ndarray | None = None, reached: tuple | None = None) -> np.ndarray:
    """How many times the tile of an array whose index uses the mapped loops ``dep`` is (re)loaded
    from the parent level, (B,).

    Outer tile loops that do not index the array re-use the resident tile
    only when they sit inside the innermost outer loop that does (Timeloop's
    reuse rule); loops of one trip never matter. ``around``: (G,) the loops whose tiles can change the array's
    (around its accesses; a sibling's tile loop encloses none of them, hlsim 0.65); ``floor``: (B,) a position
    every loop down to which reloads it (the head of sibling groups, ``llmulator.sibling_tiles``); ``reached``:
    (per loop from the innermost around the array's accesses up, the mapped loops from it down; the tile positions;
    the loops' entries): see :func:`_entered_share`.
    """
    rel = dep[None, :] & (outer > 1) & (True if around is None else around[None, :])
    pstar = np.where(rel, pos, -1).max(axis=1)
    if floor is not None:
        pstar = np.maximum(pstar, floor)
    inside = (pos <= pstar[:, None]) & (True if around is None else around[None, :])
    loads = np.where(inside, outer, 1.0).prod(axis=1)
    return loads if reached is None else loads * _entered_share(inside, *reached)


def _entered_share(inside: np.ndarray, below: list[np.ndarray], positions: np.ndarray, entries: np.ndarray
                   ) -> np.ndarray:
    """(B,) the share of the tile positions the loads count (one per tile of each loop down to the deepest that
    reloads the tile) in which the innermost loop around the array's accesses runs at all. Each loop X from it
    up to the nest's top bounds the positions entered: X's entries times the positions of the loops from X down
    (``below``: (G,) masks, X first at the innermost; ``positions``: (B, G) each mapped loop's tiles, the mean
    where its trips are a fractional mean, a triangle's, not rounded up; ``entries``: X's). The share is the
    least of those bounds over all the positions, at most 1. A loop under `if (t == 0)` inside t loads its tiles
    on one step of t; before hlsim 0.66 on every step (an outside probe). 0.66 took the share of enclosing
    iterations (4 words where the run read 8 elements; a second probe). 0.66-0.68 took the innermost loop's
    entries alone: a band under `if (t == 0)` whose outer loop is in tiles counted its inner loop's entries, one
    per row, against one position per tile of rows, and moved its tiles on every step of t, 128 words where 32;
    and a tile of 1 on a triangular loop of 2.5 mean trips counted 3 positions an entry (a third probe)."""
    total = np.where(inside & below[-1][None, :], positions, 1.0).prod(axis=1)
    entered = np.min([e * np.where(inside & m[None, :], positions, 1.0).prod(axis=1)
                      for e, m in zip(entries, below, strict=True)], axis=0)
    return np.minimum(1.0, entered / np.maximum(total, 1e-12))


def distinct_tiles(dep: np.ndarray, outer: np.ndarray) -> np.ndarray:
    return np.where(dep[None, :], outer, 1.0).prod(axis=1)


def _reached(nest: Nest, v: View, arr: ArrayUse) -> tuple[list[np.ndarray], np.ndarray, np.ndarray] | None:
    """``tile_loads``' ``reached`` for an array (see :func:`_entered_share`): for each loop from the innermost
    around its accesses up to the nest's top, (G,) the mapped loops from it down that chain; (B, G) each mapped
    loop's tile positions; the loops' entries. None where there is nothing to gate (no site loop, or one a fused
    loop flattens)."""
    if nest.entries is None or arr.site < 0:
        return None
    if len(next(g for g in v.groups if arr.site in g)) > 1:
        return None
    index = {id(lp): i for i, lp in enumerate(nest.loops)}
    chain, lp = [], nest.loops[arr.site]
    while lp is not None and id(lp) in index:
        chain.append(index[id(lp)])
        lp = lp.parent
    below = [np.array([bool(set(g) & set(chain[:k + 1])) for g in v.groups]) for k in range(len(chain))]
    whole = np.isclose(v.trips, np.round(v.trips))
    positions = np.where(whole[None, :], v.outer, np.maximum(v.trips, 1.0)[None, :] / v.t)
    return below, positions, nest.entries[chain]


def _mapped(v: View, mask: np.ndarray | None) -> np.ndarray | None:
    """(G,) a kernel-loop mask seen by mapped loop (a fused group: any member)."""
    return None if mask is None else np.array([bool(mask[g].any()) for g in v.groups])


def _spans(nest: Nest, v: View, arr: ArrayUse) -> list:
    """[(triangular loop, its outer loops' tile axes as ``arr`` sees them, (B,) its most trips where a tile runs it
    whole, else nan)]."""
    axis = arr.axis or range(len(nest.loops))
    return [(li, [axis[o] for o in outer], np.where(_spanned(nest, v, li, outer, arr), span, np.nan))
            for li, (outer, span) in nest.spans.items()]


def _spanned(nest: Nest, v: View, li: int, outer: list[int], arr) -> np.ndarray:
    """(B,) whether a tile of ``arr`` runs triangular loop ``li`` whole over more than one step of an outer loop its
    bounds read, or holds across such steps (the array's tile is not reloaded on them): only then does it span its
    most trips. A tile reloaded on every step holds that step's trips, whose mean over the tiles is the loop's
    mean: `for t { for i (tile 1) for j < t + 1 ... x[i][j] }` moves t + 1 elements a tile, 40 in all (before
    hlsim 0.68 the most, 4, every tile: 64; an outside probe). 0.68-0.69 took a step's trips also where the tile
    stays: `for i { for j < i + 1 (tiles of 3) ... v[j] }` holds v across i, and 2.5 words fell below the 4 the run
    reads (a refusal by the distinct-element bound; a second probe)."""
    reloaded = _reload_loops(nest, v, arr)
    whole = (v.t_loops[:, li] >= nest.trips[li]) & (True if v.cut is None else ~v.cut[:, li])
    return whole & ((v.t_loops[:, outer] > 1) | ~reloaded[:, outer]).any(axis=1)


def _reload_loops(nest: Nest, v: View, arr) -> np.ndarray:
    """(B, L) the kernel loops on whose steps the array's tile is reloaded (``tile_loads``' loops inside)."""
    around = _mapped(v, arr.encloses)
    rel = v.dep(arr)[None, :] & (v.outer > 1) & (True if around is None else around[None, :])
    pstar = np.where(rel, v.pos, -1).max(axis=1)
    inside = (v.pos <= pstar[:, None]) & (True if around is None else around[None, :])
    out = np.zeros((v.t.shape[0], len(nest.loops)), dtype=bool)
    for gi, g in enumerate(v.groups):
        out[:, g] = inside[:, gi:gi + 1]
    return out


def _tiles(nest: Nest, v: View, arr) -> np.ndarray:
    """(B, L) each loop's extent in one tile of ``arr``: its tile (a loop run 0 times: one), or for a
    triangular loop run whole its most trips per entry where the array is not indexed by the loops its
    bounds read (`a[j]` for `j <= i` spans all of a; `A[i][j]` spans the triangle row by row, as before)."""
    t = np.maximum(v.t_loops, 1.0)
    axis = arr.axis or range(len(nest.loops))
    for li, (outer, span) in nest.spans.items():
        if not any(axis[oi] in dict(cs) for cs in arr.coefs for oi in outer):
            t[:, li] = np.where(_spanned(nest, v, li, outer, arr), max(span, 1.0), t[:, li])
    if arr.boxes is None:
        _cover_siblings(nest, arr, t)
    return t


def _cover_siblings(nest: Nest, arr: ArrayUse, t: np.ndarray) -> None:
    """Set the extent in ``t`` (in place) of each tile axis whose sibling loops of another range the array's
    subscripts name to the most any of them runs per axis tile: one box per dimension prices an access by its
    axis loop, and where the access boxes do not apply (a segment the data start, a while's counter) a
    sibling's own trips were lost: `x[i]` under `for (i < n)` with n = 8 beside a later `for (i < n)` with
    n = 3 moved 3 words of the 8 read (hlsim 0.60, an outside probe)."""
    scopes = scopes_of(nest.loops)
    axis = arr.axis or scopes.axis  # (the array's own: a sibling of one name that does not touch it is no axis)
    keys = [access_boxes.range_key(nest.loops, scopes.names, li) for li in range(len(nest.loops))]
    trips = np.maximum(nest.trips, 1.0)
    for ax in {axis[li] for li in arr.named_loops if keys[li] != keys[axis[li]]}:
        per_axis = np.ceil(trips[ax] / t[:, ax] - 1e-9)
        runs = [np.minimum(t[:, li] * np.ceil(np.ceil(trips[li] / t[:, li] - 1e-9) / per_axis - 1e-9), trips[li])
                for li in arr.named_loops if axis[li] == ax]
        t[:, ax] = np.max(runs, axis=0)


def transfers(d: Design, nest: Nest, v: View) -> dict[str, np.ndarray]:
    """Tile fills and write-backs between each on-chip level and the backing store for B mappings (``v``):
    words and bits read and written per level, the elements each level must hold (``need_bits``),
    and the transfer cycles (``cycles``): each array's transfers move at the parent's bandwidth (whole
    bytes per array) and pay the parent's latency once per burst (one burst per tile load or write-back); a
    double-buffered level hides every burst's latency but the first behind the previous tile's work. ``exposed``:
    what double buffering cannot hide (the first tiles in, the last out: ``traffic.nest_time``)."""
    arch, B = d.arch, v.t.shape[0]
    out = {f"{k}.{lv.name}": np.zeros(B) for lv in arch.memory
           for k in ("reads", "writes", "read_bits", "write_bits", "need_bits")}
    cycles = np.zeros(B)
    fill, drain, reads = np.zeros(B), np.zeros(B), np.zeros(B, dtype=bool)  # the first tiles in, the last out
    # a nest whose loop never runs moves only what its head reads (a while's test, a for head's initialiser: run
    # once); before hlsim 0.31 a tile of every array moved, and in 0.31 none, the test's element included
    head_reads = _head_reads(nest.top) if nest.trips.size and nest.trips[0] <= 0 else None
    for arr in nest.arrays:
        if arr.level == 0 or (head_reads is not None and arr.name not in head_reads):
            continue
        # the tile comes from (and goes back to) the nearest outer level that holds the array: with one
        # placement per array that is the backing store, the outermost level; the levels in between
        # are bypassed (Timeloop's bypass), not charged for data they never hold
        parent, level = arch.memory[0], arch.memory[arr.level]
        full, fp, cut = _tile_elements(nest, v, arr)
        out[f"need_bits.{level.name}"] += full * arr.bits * level.tile_copies(cut)  # two copies where db and cut
        bursts, words_in, words_out = _moves(nest, v, arr, level, head_reads is None, fp=fp)
        bits_in, bits_out = words_in * arr.bits, words_out * arr.bits
        fill += np.where(words_in > 0, full * arr.bits / 8.0, 0.0)
        drain += np.where(words_out > 0, full * arr.bits / 8.0, 0.0)
        reads |= words_in > 0
        lat = (np.minimum(bursts, 1.0) if level.double_buffered else bursts) * parent.latency_cycles
        cycles += np.ceil((bits_in + bits_out) / 8.0 / parent.bandwidth_bytes_per_cycle) + lat
        for lv, r, w in ((parent.name, words_in, words_out), (level.name, words_out, words_in)):
            out[f"reads.{lv}"] += r
            out[f"writes.{lv}"] += w
            out[f"read_bits.{lv}"] += r * arr.bits
            out[f"write_bits.{lv}"] += w * arr.bits
    out["cycles"] = cycles
    # double buffering overlaps every tile's transfer with the work on another, except the first tiles' (the
    # work waits for them: the backing store's latency and their bytes) and the last write-backs (after the
    # work: their bytes, and the latency until the last write lands, as the single-buffered rule charges it);
    # before hlsim 0.45 a nest whose compute outlasted its transfers paid none of it: 995 cycles where the first
    # element arrives at 200 and 1,195 is the least (an outside probe); in 0.45 the last write's latency was not
    # exposed, so a nest of one tile, which has nothing to overlap, ran 10 cycles faster double-buffered than
    # single-buffered (118; the same probe)
    bw, lat = arch.memory[0].bandwidth_bytes_per_cycle, arch.memory[0].latency_cycles
    out["exposed"] = (np.where(reads, lat, 0.0) + np.ceil(fill / bw - 1e-9)
                      + np.where(drain > 0, lat, 0.0) + np.ceil(drain / bw - 1e-9))
    return out


def _tile_elements(nest: Nest, v: View, arr) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(B,) each: a full tile's elements (the room it needs, the first in and the last out), the mean tile's
    (what moves, where a tile that does not divide its loop leaves a smaller edge tile: 5 columns in tiles of 2
    are 2 + 2 + 1, not 3 x 2 words written back), and whether the array's tiles differ at all."""
    t_full = _tiles(nest, v, arr)
    trips = np.maximum(nest.trips[None, :], 1.0)
    counts = np.ceil(trips / t_full - 1e-9)  # (B, L) tiles per loop
    own = np.zeros(trips.shape[1], dtype=bool)  # loops tiled on their own (a fused tile spans its members)
    own[[g[0] for g in v.groups if len(g) == 1]] = True
    cut = t_full < trips
    for li in nest.profiles:  # a triangle in tiles: the mean of each entry's own tiles (traffic.tile_counts)
        if own[li] and v.cut is not None:
            counts[:, li] = np.where(v.cut[:, li], tile_counts(nest, t_full[:, li], li), counts[:, li])
            cut[:, li] |= v.cut[:, li]
    mean = np.where(own & cut, trips / np.maximum(counts, 1e-9), t_full)
    spans = _spans(nest, v, arr)
    return (footprints(arr, t_full, counts, "max", spans), footprints(arr, mean, counts, "mean", spans, t_full),
            (arr.dep[None, :] & (t_full < trips)).any(axis=1))


def _moves(nest: Nest, v: View, arr, level, ran: bool, floor=None, others_write: bool = False, fp=None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bursts, words in, words out) (B,) of one array's tiles: one burst per tile that moves, the partial sums
    that come back, not every visit (before hlsim 0.45 a burst per visit, 4 where 2 reloads; an outside probe).
    Where sibling loops tiled on their own touch it (``arr.split``), each sibling group moves its own tiles,
    again on each trip of the loops down to the head (``llmulator.sibling_tiles``; before hlsim 0.65 a tiled
    sibling's tile loop enclosed the siblings after it: 64 words where 32); ``floor``, ``others_write``: a
    group's head position, and whether another group writes the array (its tile then holds data); ``fp``: the
    mean tile's elements where the caller has them."""
    fp = _tile_elements(nest, v, arr)[1] if fp is None else fp
    loads, reloads, words_in, words_out = _moved_words(nest, v, arr, fp, level, ran, floor, others_write)
    bursts = np.where(words_in > 0, reloads, 0.0) + np.where(words_out > 0, loads, 0.0)
    split = arr.split
    if split is None:
        return bursts, words_in, words_out
    tiled = np.zeros(v.t.shape[0], dtype=bool)  # some group's tile changes inside one trip of the head
    for g in split.groups:
        tiled |= tile_loads(v.dep(g.use), v.outer, v.pos, _mapped(v, g.below)) > 1
    if not tiled.any():
        return bursts, words_in, words_out
    head = np.where(_mapped(v, split.head)[None, :], v.pos, -1).max(axis=1)
    writers = sum(g.use.written_here for g in split.groups)
    parts = [_moves(nest, v, g.use, level, ran, head, others_write or writers > g.use.written_here)
             for g in split.groups]
    return tuple(np.where(tiled, sum(p[k] for p in parts), x)
                 for k, x in enumerate((bursts, words_in, words_out)))


def _moved_words(nest: Nest, v: View, arr, fp, level, ran: bool, floor=None, others_write: bool = False) -> tuple:
    """(tile loads, loads that fetch, words in, words out) of one array for B mappings: a nest loads what it
    reads where the array holds data by then, writes back what it writes (``ran``: its loop runs), and an
    output no one wrote yet comes back as partial sums only."""
    B = v.t.shape[0]
    dep = v.dep(arr)
    loads = tile_loads(dep, v.outer, v.pos, _mapped(v, arr.encloses), floor, _reached(nest, v, arr))
    words_in = words_out = np.zeros(B)
    reloads = loads
    holds = arr.role in ("in", "inout") or arr.name in nest.written_before or others_write
    if holds and (arr.read_here or arr.written_partly):  # a tile partly written keeps the rest's values
        words_in = loads * fp
    elif arr.read_here and arr.written_here:  # an output no one wrote yet: only its partial sums come back
        reloads = np.maximum(loads - distinct_tiles(dep, v.outer), 0.0)
        words_in = reloads * fp
    if arr.written_here and ran:
        words_out = loads * fp
    if arr.role == "temp" and float(np.prod(arr.shape)) * arr.bits <= level.capacity_bits:
        words_in = words_out = np.zeros(B)  # scratch that fits its level lives there: nothing outside holds it
    return loads, reloads, words_in, words_out


def _head_reads(top: Loop) -> set[str]:
    """Arrays the head of a loop reads when it runs no trip: its data test (once) and its initialisers."""
    stmts = list(top.init_stmts) + ([top.cond_stmt] if top.cond_stmt is not None and (
        top.data_dependent or top.is_while) else [])
    return {a.array for st in stmts for a in st.accesses if a.is_read}


def statement_transfers(d: Design, stmts: list) -> tuple[float, dict[str, tuple[float, float, float, float]]]:
    """:func:`tile_transfers` for top-level statements (outside every loop, run once): each element they read
    comes from the backing store where the array holds data by then (an input, or written before), and each
    element they write goes back to it, as a nest's tiles do (before hlsim 0.26, `out[0] = s;` after a loop
    never reached DRAM, and `s = a[0];` before one came from nowhere). Arrays on the backing store itself, and
    ``temp`` arrays that fit their level, move nothing."""
    parent = d.arch.memory[0]
    moved: dict[str, list[float]] = {}
    cycles = 0.0
    elements = {(a.array, a.is_write, tuple(a.index_text)) for st in stmts for a in st.accesses
                if a.array in d.workload.arrays}
    first = next((n for n in d.tree.walk() if any(n is st or getattr(n, "cond", None) is st for st in stmts)), None)
    held = _written_before(d, first) if first is not None else frozenset()
    for name, write in sorted({(n, w) for n, w, _ in elements}):
        spec, level = d.workload.arrays[name], d.arch.level(d.placement(name))
        size = float(np.prod(d.workload.shape(name, d.sizes))) * spec.bits
        if level.name == parent.name or (spec.role == "temp" and size <= level.capacity_bits) or (
                not write and spec.role not in ("in", "inout") and name not in held):
            continue
        words = float(sum(1 for n, w, _ in elements if n == name and w == write))
        cycles += np.ceil(words * spec.bits / 8.0 / parent.bandwidth_bytes_per_cycle) + parent.latency_cycles
        for lv, k in ((parent.name, 2 if write else 0), (level.name, 0 if write else 2)):
            m = moved.setdefault(lv, [0.0, 0.0, 0.0, 0.0])
            m[k] += words
            m[k + 1] += words * spec.bits
    return float(cycles), {lv: tuple(v) for lv, v in moved.items()}


def tile_transfers(d: Design, top: Loop, shares: dict | None = None
                   ) -> tuple[float, dict[str, tuple[float, float, float, float]], float]:
    """Cycles and (reads, read bits, writes, write bits) per level of a nest's tile transfers under the
    design's own mapping (see :func:`transfers`), and the cycles of them double buffering cannot hide
    (``shares``: ``Timing.copy_shares``; an array whose every read an earlier copy's store gives loads no tile,
    as in the analytical model's traffic: before, hlsim loaded it, an outside probe)."""
    nest = nest_of(d, top, shares)
    t = transfers(d, nest, view(d, nest, mappings_from_design(d, nest)))
    moved = {lv.name: tuple(float(t[f"{k}.{lv.name}"][0]) for k in ("reads", "read_bits", "writes", "write_bits"))
             for lv in d.arch.memory}
    return float(t["cycles"][0]), {k: v for k, v in moved.items() if any(v)}, float(t["exposed"][0])


def ran_transfers(d: Design, sites: list, ran: set[int], invocations, shares: dict | None = None
                  ) -> tuple[float, dict[str, tuple], float]:
    """A top-level statement's transfers as a run executed it (``sites``: its instrumented sites; ``ran``: the
    ids of those that ran; ``invocations``: kernel loop -> entries): the statements and branch conditions
    that ran move their elements (:func:`statement_transfers`: under a top-level ``if`` too, hlsim 0.34), and
    each loop under its branches that ran is a nest of its own (:func:`tile_transfers`: a table built once,
    ``if (have_table == 0) { L_tab: for (...) ... }``; before, it moved nothing), whose exposed transfers (the
    first tiles in, the last out) are the third figure (before hlsim 0.45's second cut they were dropped here:
    a loop under `if (N > 0)` paid no DRAM latency where the same loop without the `if` did; an outside probe),
    with the statements' own transfers, which no work overlaps (before hlsim 0.46, double-buffered, `s = A[0];`
    took max(1, 201) cycles where the word arrives at 201 and the statement runs after it: an outside probe)."""
    labels = sorted({s.loop for s in sites if s.loop and invocations[s.loop] and d.tree.loops[s.loop].parent is None})
    inside = {id(getattr(n, "cond", n)) for lb in labels for n in d.tree.loops[lb].descendants()}
    stmts = [st for s in sites if s.kind in ("block", "cond") and s.id in ran for st in s.stmts if id(st) not in inside]
    cycles, moved = statement_transfers(d, stmts)
    out = {lv: list(v) for lv, v in moved.items()}
    exposed = cycles  # a statement's own elements: nothing to overlap them with (hlsim 0.46)
    for label in labels:
        t, mv, e = tile_transfers(d, d.tree.loops[label], shares)
        cycles += t
        exposed += e
        for lv, v in mv.items():
            out[lv] = [a + b for a, b in zip(out.get(lv, [0.0] * 4), v, strict=True)]
    return cycles, {lv: tuple(v) for lv, v in out.items()}, exposed
