"""What a loop nest moves: expected operation and access counts, tile footprints and tile transfers.

Shared by every model that prices a mapped nest: the analytical estimator
(expected counts from hints, B mappings at once as NumPy arrays of shape (B,))
and hlsim (the same tile transfers, with trip counts it measured). A nest's
loops, per-array index dependences, the mapped view of a batch of mappings
(``llmulator.nest``'s semantics: tile loops, point loops, fused groups) and the
levels' bandwidth time live here, once; tile footprints, how often a tile is
(re)loaded from the parent level (Timeloop's reuse rule) and the words and cycles
of those transfers in ``llmulator.transfers``.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from . import costs, sibling_tiles, while_span
from . import kernel_values as kv
from . import nest as lnest
from .array_use import ArrayUse, array_use, enclosing, scopes_of, scopes_within
from .design import Design, index_step
from .kernel import Branch, Loop
from .triangle_tiles import any_cut, longest, triangle_outer


@attrs.define
class Nest:
    """One top-level loop nest in the shape the vectorised model needs.

    ``loops`` are all loops of the nest in pre-order; for a perfect band
    (``is_band``) they are the band's loops outermost first and every
    statement sits in the innermost loop.
    """

    top: Loop
    loops: list[Loop]
    labels: list[str]
    trips: np.ndarray  # (L,) expected trips per entry
    arrays: list[ArrayUse]
    ops: dict[str, float]  # operator class -> expected executions over the nest
    is_band: bool
    ops_per_iter: dict[str, float]
    load_bits: float  # bits the nest's datapath loads (every operand passes the PE register file) and stores
    store_bits: float
    notes: list[str]
    # a triangular loop (`for (j = 0; j <= i; j++)`): loop index -> (the outer loops its bounds read, its most
    # trips per entry): a tile spans the most, where the array is not indexed by those outer loops as well
    spans: dict[int, tuple[list[int], float]] = attrs.field(factory=dict)
    written_before: frozenset[str] = frozenset()  # arrays something before this nest writes (they hold data)
    # (L,) how often each loop is entered over the nest's run (the branches around it as taken; a profiler's
    # count where it has one): a loop that does not run moves no tiles (``transfers.tile_loads``, hlsim 0.66-0.67)
    entries: np.ndarray | None = None
    # a triangular loop in ``spans``: its trips at every entry (``Design.trip_profile``; ``triangle_tiles``)
    profiles: dict[int, np.ndarray] = attrs.field(factory=dict)


def nest_of(design: Design, top: Loop, shares: dict | None = None) -> Nest:
    """Expected operation and access counts of one top-level nest (``shares``: ``Timing.copy_shares``)."""
    c = _Counts(design, shares or {})
    c.nodes([top], 1.0)
    loops = c.loops
    band = top.band()
    is_band = all(hasattr(n, "ops") and n.kind == "stmt" for n in band[-1].body) and len(band) == len(loops)
    labels = [lp.label for lp in loops]; trips = np.array([design.trips(lb) for lb in labels], dtype=float)  # noqa: E702
    scopes = scopes_of(loops)  # per loop: variable -> the loop it names there (sibling loops may reuse a name)
    # a loop over a segment its enclosing loops' data choose (`for (j = p[i]; j < p[i + 1]; j++)`): each outer
    # step moves the segment on by its length, CSR's disjoint rows; a triangular loop spans its most trips (spans)
    segments, spans, profiles = {}, {}, {}
    for i, lp in enumerate(loops):
        # the outer loops it sees (loops, not tile axes: each array takes their axes as it sees them, hlsim 0.65)
        var_index = {v: j for v, j in scopes.names[i].items() if j != i}
        outer = [var_index[v] for v in lp.depends_on_outer if v in var_index]
        if lp.data_dependent and not lp.is_while and lp.var:
            if not outer and (up := _enclosing(loops, lp)) is not None and _data_start(design, lp):
                outer = [up]  # a start the data give (`e = row_ptr[u]`, u from a queue): it moves
            segments[i] = [(oi, max(trips[i], 1.0)) for oi in outer]  # each entry (bfs read 2,289, moved 521)
        elif outer and (most := design.longest_trips(lp.label)) is not None:
            spans[i] = (outer, most)
            profiles[i] = np.asarray(design.trip_profile(lp.label), dtype=float)
            if slide := _slide(design, lp, loops, var_index):
                segments[i] = slide
    counters = while_span.counters(loops)
    arrays = []
    for name, u in c.per_array.items():  # each array sees the loops around its own accesses (``scopes_within``)
        def build(sub: dict, sc, name=name) -> ArrayUse:
            return array_use(design, name, sub, loops, sc, segments, counters)
        arr = build(u, scopes_within(scopes, loops, enclosing(loops, u["at"])))
        arr.split = sibling_tiles.of(u, loops, scopes, build, segments)
        arrays.append(arr)
    total = float(np.prod(trips)) if is_band else 1.0
    per_iter = {k: n / total for k, n in c.ops.items()} if is_band and total > 0 else {}
    return Nest(top, loops, labels, trips, arrays, c.ops, is_band, per_iter, c.load_bits, c.store_bits, c.notes, spans,
                written_before(design, top), _entries(design, loops, trips, c.entries), profiles)


def _entries(design: Design, loops: list[Loop], trips: np.ndarray, expected: list[float]) -> np.ndarray:
    """(L,) each loop's entries over the nest's run: its band head's (a profiler's measured count of the band,
    ``Design.measured_entries``, else the expected count with the branches' probabilities) times the trips of the
    band's loops above it (nothing can guard an inner loop of a perfect band)."""
    index = {id(lp): i for i, lp in enumerate(loops)}
    out = np.ones(len(loops))
    for i, lp in enumerate(loops):
        head, within = lp, 1.0
        while head.parent is not None and id(head.parent) in index and head.parent.perfect_child() is head:
            head = head.parent
            within *= max(float(trips[index[id(head)]]), 0.0)
        out[i] = float(design.measured_entries.get(head.label, expected[index[id(head)]])) * within
    return out


def written_before(design: Design, first) -> frozenset[str]:
    """Arrays the kernel writes before the node ``first`` (a top-level loop or statement): what they hold
    then is data a nest reading them must load (an ``out`` array a producer loop wrote)."""
    out = set()
    for n in design.tree.walk():
        if n is first:
            break
        st = n.cond if isinstance(n, Branch) else n if getattr(n, "kind", "") == "stmt" else None
        out.update(a.array for a in (st.accesses if st is not None else ()) if a.is_write)
    return frozenset(out)


class _Counts:
    """The expected executions of a nest's statements, walked with their multiplicity: operations per
    class, reads and writes per array (with the accesses), the bits loaded and stored, the loops in pre-order."""

    def __init__(self, design: Design, shares: dict):
        self.design, self.shares = design, shares
        self.loops: list[Loop] = []
        self.entries: list[float] = []
        self.notes: list[str] = []
        self.ops: dict[str, float] = {}
        self.per_array: dict[str, dict] = {}
        self.load_bits = self.store_bits = 0.0
        self.branches = 0  # how many branches enclose the statements being counted
        self.dead = 0  # how many loops that run no trip enclose them (their accesses touch nothing)
        self.inside: list[int] = []  # the loops (indices into ``loops``) enclosing the statements being counted

    def stmt(self, st, mult: float) -> None:
        if self.dead:
            return
        for c, n in self.design.stmt_ops(st).items():
            self.ops[c] = self.ops.get(c, 0.0) + n * mult
        for k, acc in enumerate(st.accesses):
            u = self.per_array.setdefault(acc.array, {"accs": [], "at": [], "r": 0.0, "w": 0.0, "each": []})
            u["accs"].append(acc)
            u["at"].append(self.inside[-1] if self.inside else -1)  # the loop whose scope names its variables
            bits = self.design.workload.arrays[acc.array].bits
            rs, ws = self.shares.get((id(st), k), (1.0, 1.0))  # (of an unrolled body's copies: the share moving memory)
            r = w = 0.0
            read = partly = False
            if acc.is_read and k not in st.reused and rs:  # (not a value the run before loaded or stored: load_reuse)
                r, read = mult * rs, True
                u["read"] = True  # (an array whose every read takes a value the run stored loads no tile)
                self.load_bits += mult * bits * rs
            if acc.is_write and k not in st.dead_stores and ws:  # (not a store the next one overwrites unread)
                w, partly = mult * ws, self.branches > 0
                self.store_bits += mult * bits * ws
                u["partly"] = u.get("partly", False) or partly
            u["r"] += r
            u["w"] += w
            # per access (reads, writes, whether a read counts, a write under a branch): a group of sibling loops'
            # accesses is priced on its own (``llmulator.sibling_tiles``)
            u["each"].append((r, w, read, partly))

    def tree_exit(self, loop: Loop, entries: float, trips: float) -> None:
        """A ``reduction: tree``'s combining steps, once per entry of each tile (``costs.tree_combining_ops``)."""
        if self.dead:
            return
        tile = self.design.mapping.loop(loop.label).tile
        entries *= math.ceil(trips / tile) if tile and trips > 0 else 1
        for c, n in costs.tree_combining_ops(self.design, loop.label).items():
            self.ops[c] = self.ops.get(c, 0.0) + n * entries

    def nodes(self, nodes, mult: float) -> float:
        """Count a pass over ``nodes`` run ``mult`` times; the probability that the pass ends in a ``continue``,
        ``break`` or ``return`` (what follows a branch that jumps runs on the other side's share only)."""
        return self._pass(nodes, mult)[0]

    def _pass(self, nodes, mult: float) -> tuple[float, float, float]:
        """:meth:`nodes`, and the probabilities that the pass ends in a ``break`` and in a ``return``: the loop's
        exit test is then not evaluated (a test counts as C runs it, as hlsim counts it), and a ``return`` ends
        the enclosing loops' passes too."""
        design = self.design
        live, ended, broke, returned = 1.0, 0.0, 0.0, 0.0
        for n in nodes:   # after an unconditional jump (live 0) the rest counts nothing, but is still seen
            if isinstance(n, Loop):
                self.loops.append(n)
                self.entries.append(mult * live)  # (expected entries: the branches around it taken)
                trips = design.trips(n.label)
                for st in n.init_stmts:  # a head's initialiser that reads an array: once per entry
                    self.stmt(st, mult * live)
                self.tree_exit(n, mult * live, trips)
                self.dead += trips <= 0
                self.inside.append(len(self.loops) - 1)
                _, b, r = self._pass(n.body, mult * live * trips)     # a continue or break in there is its own
                self.dead -= trips <= 0
                left = min(1.0, trips * r)  # the share of this loop's entries that return
                if n.cond_stmt is not None and (n.data_dependent or n.is_while) and not costs.counter_test(n.cond_stmt):
                    # a data-dependent bound is evaluated by the datapath (once more to exit, unless the entry
                    # ended in a jump; a do-while's test comes after each trip); counters are free
                    exits = 0.0 if n.do_while else 1.0 - min(1.0, trips * (b + r))
                    self.stmt(n.cond_stmt, mult * live * (trips + exits))
                self.inside.pop()
                ended += live * left
                returned += live * left
                live *= 1.0 - left
            elif isinstance(n, Branch):
                p, note = design.branch_probability(n)
                if note:
                    self.notes.append(note)
                self.stmt(n.cond, mult * live)
                self.branches += 1
                sides = self._pass(n.then, mult * live * p), self._pass(n.orelse, mult * live * (1 - p))
                self.branches -= 1
                e, b, r = (p * one + (1 - p) * other for one, other in zip(*sides, strict=True))
                ended += live * e
                broke += live * b
                returned += live * r
                live *= 1.0 - e
            elif n.kind == "jump":
                word = n.text.rstrip(";").strip().split()[0] if n.text.strip() else ""
                if word in ("continue", "break", "return"):
                    ended += live
                    broke += live if word == "break" else 0.0
                    returned += live if word == "return" else 0.0
                    live = 0.0
            elif n.kind == "stmt":
                self.stmt(n, mult * live)
        return ended, broke, returned


def _enclosing(loops: list[Loop], lp: Loop) -> int | None:
    """The index of the loop of the nest that directly encloses ``lp`` (None: it is the nest's top)."""
    return next((k for k, other in enumerate(loops) if other is lp.parent), None)


def _data_start(design: Design, lp: Loop) -> bool:
    """A loop whose first value the sizes cannot give (it reads an array or a local the data set)."""
    if any(a.is_read for st in lp.init_stmts for a in st.accesses):  # `e = row_ptr[u]`: its head reads an array
        return True
    try:
        kv.eval_c(lp.lower_text, {k: float(v) for k, v in design.values.items()})
    except Exception:  # a name the evaluator does not know: a local or an array element
        return True
    return False


def _slide(design: Design, lp: Loop, loops: list[Loop], var_index: dict[str, int]) -> list[tuple[int, float]]:
    """(outer loop index, elements its trip moves the first) for a loop whose lower bound moves with outer loops:
    a window, ``for (j = i; j < i + K; j++)``, slides over the array as i runs (before hlsim 0.46 its tile was
    the K elements of one window: 2 DRAM words where the loop reads 32; an outside probe)."""
    names = {k: float(v) for k, v in design.values.items()}
    base = {**names, **{v: 0.0 for v in lp.depends_on_outer}}
    out = []
    for v in lp.depends_on_outer:
        if v in var_index and lp.step_op == "+" and not lp.is_while:
            try:
                shift = kv.eval_c(lp.lower_text, {**base, v: 1.0}) - kv.eval_c(lp.lower_text, base)
            except Exception:  # a bound the evaluator cannot read: no slide assumed, as before
                continue
            if shift:
                out.append((var_index[v], abs(shift) * index_step(loops[var_index[v]])))
    return out


@attrs.define
class BatchMappings:
    """B mappings of one band: tiles, spatial binding (0 none, 1 rows, 2 cols), outer-loop positions."""

    tiles: np.ndarray  # (B, L) float
    spatial: np.ndarray  # (B, L) int
    pos: np.ndarray  # (B, L) int: position in the mapping sequence (tile and point loops), 0 = outermost

    @property
    def size(self) -> int:
        return self.tiles.shape[0]


def mappings_from_design(design: Design, nest: Nest) -> BatchMappings:
    """The design's own mapping of a nest as a batch of one."""
    m = design.mapping
    labels = nest.labels
    # a loop that encloses another loop's tile loop in the mapped nest is an outer loop as a whole, its own tile
    # too: `for i (tile 4) { if (i < 2) for j (tile 2) o[i][j] = x[j]; }` runs j's tile loop inside i's point
    # loop, so o's tile is one row, not four (before hlsim 0.68, 64 words written where the run wrote 16)
    most = longest(nest)  # (an untiled loop's tile is the whole loop: a triangle's most trips, not its mean)
    tiles = np.array([[1.0 if lnest.encloses_tile_loop(design, lb) else
                       m.loop(lb).tile or (lnest.mapped_trips(design, lb) if m.loop(lb).fuse else most[i])
                       for i, lb in enumerate(labels)]], dtype=float)
    spatial = np.array([[{"rows": 1, "cols": 2}.get(m.loop(lb).spatial or "", 0) for lb in labels]])
    pos = np.array([lnest.outer_positions(design, labels)])
    return BatchMappings(tiles, spatial, pos)


def _outer_whole(design: Design, nest: Nest, tiles: np.ndarray) -> np.ndarray:
    """(B, L) the batch's tiles with a loop whose point loop would hold a strip-mined loop's tile loop (one of a
    deeper band, or of its own in-place band) taken as an outer loop whole, tile 1, as the design's own mapping
    takes it (:func:`mappings_from_design`): a batch that tiles both loops of `for i { s = 0; for j ... }` prices
    what the code runs, not i's tile of rows (hlsim and analytical 0.68/0.81)."""
    fused = set(lnest.fused_into(design)) | {lb for lb in nest.labels if design.mapping.loop(lb).fuse}
    at = {lb: i for i, lb in enumerate(nest.labels)}
    most = longest(nest)
    out = tiles
    for i, lp in enumerate(nest.loops):
        if lp.label in fused:
            continue
        band = lnest.band_labels(design.tree, lp.label)
        in_place = lnest.is_triangular(design, band)
        under = [at[n.label] for n in lp.descendants()
                 if isinstance(n, Loop) and n.label in at and (n.label not in band or in_place)]
        if under and any_cut(out, under, most).any():
            out = out.copy() if out is tiles else out
            out[any_cut(out, under, most), i] = 1.0
    return out


@attrs.define
class View:
    """A batch of mappings seen mapped loop by mapped loop: loops fused by ``fuse`` are one loop.

    Without fusion every group is one kernel loop and the view is the batch itself.
    """

    groups: list[list[int]]  # mapped loop -> indices of its kernel loops in the nest (head first)
    trips: np.ndarray  # (G,) trips of each mapped loop
    t: np.ndarray  # (B, G) point sizes
    outer: np.ndarray  # (B, G) tile-loop trips
    spatial: np.ndarray  # (B, G) 0 temporal, 1 PE rows, 2 PE cols
    pos: np.ndarray  # (B, G) position in the mapping sequence
    t_loops: np.ndarray  # (B, L) extent of each kernel loop inside one tile (fused members: what a tile spans)
    cut: np.ndarray | None = None  # (B, L) each kernel loop cut into tiles (its tile below its longest entry)

    @property
    def is_sp(self) -> np.ndarray:
        return self.spatial > 0

    def dep(self, arr: ArrayUse) -> np.ndarray:
        return np.array([arr.dep[g].any() for g in self.groups])


def view(design: Design, nest: Nest, maps: BatchMappings) -> View:
    fused = lnest.fused_into(design)
    labels = nest.labels
    groups = [[i] + [labels.index(mb) for mb in design.mapping.loop(lb).fuse]
              for i, lb in enumerate(labels) if lb not in fused]
    heads = [g[0] for g in groups]
    trips = np.array([float(np.prod(nest.trips[g])) for g in groups])
    tiles = _outer_whole(design, nest, maps.tiles)
    t = np.maximum(np.minimum(tiles[:, heads], trips[None, :]), 1.0)
    outer = np.ceil(np.maximum(trips[None, :], 1.0) / t)
    cut = triangle_outer(nest, groups, tiles, t, outer)  # (B, L); a triangle in tiles: each entry its own
    t_loops = np.minimum(tiles, nest.trips[None, :])
    for gi, g in enumerate(groups):
        if len(g) > 1:  # a tile of T flattened indices spans T of the innermost member, T / N of the next, ...
            rem = t[:, gi].copy()
            for li in sorted(g, reverse=True):
                t_loops[:, li] = np.minimum(rem, nest.trips[li])
                rem = np.ceil(rem / max(nest.trips[li], 1.0))
    return View(groups, trips, t, outer, maps.spatial[:, heads], maps.pos[:, heads], t_loops, cut)


def overlapped(d: Design) -> bool:
    """Tile transfers overlap compute when every on-chip level holding an array is double-buffered."""
    held = {d.placement(a) for a in d.workload.arrays} - {d.arch.memory[0].name}
    return all(d.arch.level(n).double_buffered for n in held)


def whole_cycles(x):
    """The cycles a level needs to move ``x`` cycles' worth of bits (or a unit class to run ``x``
    cycles' worth of operations): hardware moves in whole cycles, so a level of 4 bytes per cycle
    moving 9 bytes takes 3, not 2.25. A relative slack of 1e-9 keeps a sum of floats that lands a hair
    over an integer on it."""
    x = np.asarray(x, dtype=float)
    return np.ceil(x - 1e-9 * np.maximum(np.abs(x), 1.0)) + 0.0  # + 0.0: no -0.0 for nothing moved


def nest_time(d: Design, compute, transfer, bandwidth, exposed=0.0):
    """Cycles of one nest from its compute, its tile transfers and its busiest level's bandwidth time
    (floats, or arrays over B mappings): transfers hide behind compute when double-buffered, but for
    ``exposed``, the first tiles in and the last out (``llmulator.transfers``), else they add to it; no
    level moves more than its bandwidth per cycle either way, in whole cycles (:func:`level_cycles`)."""
    bandwidth = whole_cycles(bandwidth)
    if overlapped(d):
        return np.maximum(np.maximum(compute + exposed, transfer), bandwidth)
    return np.maximum(compute + transfer, bandwidth)


def level_cycles(d: Design, level, bits):
    """Cycles ``level`` needs to move ``bits`` (a float or an array): at its bandwidth, and on the backing
    store after its latency, before which no word arrives (hlsim 0.45; before, a loop streaming 512 bytes from
    a DRAM of 4 bytes a cycle and 10 cycles' latency took 128 cycles: an outside probe)."""
    t = bits / 8.0 / level.bandwidth_bytes_per_cycle
    if level.name == d.arch.memory[0].name:
        t = t + np.where(np.asarray(bits) > 0, float(level.latency_cycles), 0.0)
    return t
