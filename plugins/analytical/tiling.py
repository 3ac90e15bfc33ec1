"""Multi-level tiling: the analytical model's nest analysis for mappings with ``levels``.

A mapping with ``levels`` tiles a perfect loop nest across the storage hierarchy as Timeloop does:
every storage level has temporal loops (outer to inner) and spatial loops (its fan-out to the
instances of the next inner level, or to the MACs below the innermost level), and keeps or bypasses
each data space (array). This module computes, per level and data space, the reads, fills and
updates with Timeloop's rules (v0.4 dense model, as its reference outputs report them):

* tiles are axis-aligned boxes: a data space's extent along one of its dimensions is
  ``sum(coef * (extent_d - 1)) + 1`` over the problem dimensions its projection names;
* a level's accesses are the deltas its children ask for: each time the loops above a child tile
  advance, the child receives the part of its new tile it did not hold (sliding-window reuse along a
  single data-space dimension while the direction of motion stays the same; any other change
  re-sends the whole tile), evaluated as Timeloop extrapolates (iteration 0, then iteration 1
  weighted by the remaining trips, for every temporal loop);
* spatial fan-out multicasts: children whose tiles sit at the same data-space offset share one read
  (a spatial loop the data space does not depend on), and read-write data reduced spatially is one
  update per distinct offset;
* bypassed levels are removed after the analysis, their children served by the next level that keeps
  the data space (Timeloop's tile masking);
* read-write data: the first update of each element is not preceded by a read (first-read elision).

Energy is the accesses in blocks (``ceil(count / block)`` per action) times the level's energy per
action, plus leakage per cycle of every utilised instance, plus the MACs; cycles are the temporal
iterations of the MAC array, throttled by a level's words-per-cycle bandwidths when the
architecture gives them. See docs/timeloop-compat.md for the agreement with Timeloop's own outputs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class Space:
    """A data space (array): its projection, one entry per data-space dimension, each a list of
    (coefficient, problem dimension) terms; ``rw``: read-write (the accumulated output)."""

    name: str
    projection: list[list[tuple[int, str]]]
    rw: bool = False
    inout: bool = False  # its initial values are read (an ``inout`` array): no first-read elision


@dataclass
class Level:
    """One storage level of the tiling, outermost first in the list given to ``analyze``; or, with
    ``virtual``, a further spatial fan-out stage below the storage level before it (Timeloop's spatial
    container, a ``dummy_storage`` level): it keeps nothing, has no temporal loops and no energy, and is
    left out of the results, but its children's deltas are multicast within the stage only."""

    name: str
    instances: int = 1  # hardware instances of this level
    temporal: list[tuple[str, int]] = field(default_factory=list)  # (dimension, factor), outer to inner
    spatial: list[tuple[str, int]] = field(default_factory=list)  # fan-out to the next inner level / MACs
    keep: frozenset[str] | None = None  # data spaces stored here (None: all)
    block: int = 1  # words per access (width / word bits)
    read_pj: float = 0.0  # energy per (block) access, by action
    fill_pj: float = 0.0
    update_pj: float = 0.0
    leak_pj: float = 0.0  # leakage per cycle of one instance
    capacity_words: float | None = None  # per instance (None: unbounded)
    read_bw: float | None = None  # words per cycle per instance
    write_bw: float | None = None
    shared_bw: float | None = None
    cluster: int = 1  # instances sharing one physical access (Timeloop's cluster_size)
    split: int | None = None  # the first ``split`` spatial loops run along the mesh's X, the rest along Y
    virtual: bool = False  # a fan-out stage (no storage)
    mesh_x: int | None = None  # a stage's instances along X (export)
    phys: tuple[int, int] | None = None  # the physical fan-out (X, Y) to the next level or the MACs


@dataclass
class Result:
    macs: float
    utilized_macs: float
    cycles: float
    compute_cycles: float
    utilization: float
    #: level -> data space -> {reads, fills, updates, size, instances} (reads/fills/updates: totals
    #: over all utilised instances; ``per_instance`` of the same)
    accesses: dict[str, dict[str, dict[str, float]]]
    energy_pj: dict[str, float]  # level -> access + leakage energy; "MAC" -> compute
    energy_by_space: dict[str, dict[str, float]]
    leak_pj: dict[str, float]
    total_energy_pj: float
    throttle: float = 1.0


def _box(space: Space, ext: dict[str, int]) -> list[int]:
    return [sum(c * (ext.get(d, 1) - 1) for c, d in dim) + 1 for dim in space.projection]


def _proj(space: Space, off: dict[str, int]) -> tuple[int, ...]:
    return tuple(sum(c * off.get(d, 0) for c, d in dim) for dim in space.projection)


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


class _Delta:
    """Timeloop's delta state of one child tile (``OperationSpace::SaveAndSubtractIfSameStride`` as it was
    until January 2025, the version that wrote the reference outputs): the last box and the translation
    of the last step, a vector over the data-space dimensions. The first step after a reset is always
    a delta (and records its translation, a zero vector included: a tile that stayed put); a later step
    by the same vector is a delta; any other step (standing still after a move included) re-sends the
    whole tile and resets the translation. So a tile that stays put while an inner loop runs re-sends
    itself whole on its next move."""

    def __init__(self, extent: list[int]):
        self.ext = extent
        self.size = _prod(extent)
        self.prev: tuple[int, ...] | None = None
        self.trans: tuple[int, ...] | None = None  # None: Timeloop's null translation

    def step(self, lo: tuple[int, ...]) -> int:
        return self.delta(lo)[0]

    def delta(self, lo: tuple[int, ...]) -> tuple[int, tuple | None]:
        """The size of the delta of the tile now at ``lo`` and the delta as a set, up to translation:
        ``(lo, None)`` for the whole tile, ``(lo, t)`` for the tile less its overlap with the one ``t``
        behind (same-shape boxes: the pair determines the set); None when empty."""
        prev, self.prev = self.prev, lo
        t = None if prev is None else tuple(a - b for a, b in zip(lo, prev, strict=True))
        if self.trans is None or t == self.trans:
            if self.trans is None:
                self.trans = t
            if t is None:
                return self.size, (lo, None)
            kept = _prod(max(0, e - abs(v)) for e, v in zip(self.ext, t, strict=True))
            n = self.size - kept
            return n, ((lo, t if kept else None) if n else None)
        self.trans = None
        return self.size, (lo, None)


def _fanout(sp: Space, sl: list[tuple[str, int, int]], lv: Level):
    """A level's spatial fan-out for one data space: (children, groups of children whose tiles sit at
    the same data-space offset, link table). ``sl``: its spatial loops (dim, factor, stride), innermost
    first. Children are numbered as Timeloop numbers them (the outermost loop most significant) and laid
    row-major on an X x Y mesh of max(physical, logical) extents, the first ``split`` loops along X; a
    child can take its delta from a mesh neighbour's previous delta (Timeloop's link transfers). The
    table maps the step between two consecutive deltas to (children served by a neighbour, groups and
    count of the others); None without a fan-out."""
    fan = _prod(n for _, n, _ in sl)
    offs: list[tuple[int, ...]] = []
    for k in range(fan):
        o: dict[str, int] = {}
        r = k
        for d, n, st in sl:
            o[d] = o.get(d, 0) + (r % n) * st
            r //= n
        offs.append(_proj(sp, o))
    groups = len(set(offs))
    if fan <= 1:
        return fan, groups, None
    nx = len(sl) if lv.split is None else min(lv.split, len(sl))
    lx = _prod(n for _, n, _ in sl[:nx])
    ly = _prod(n for _, n, _ in sl[nx:])
    px, py = lv.phys or (lx, ly)
    hs, vs = max(px, lx), max(py, ly)
    by_step: dict[tuple[int, ...], set[int]] = {}
    for i in range(fan):
        h, v = i % hs, i // hs
        for hh, vv in ((h - 1, v), (h + 1, v), (h, v - 1), (h, v + 1)):
            if 0 <= hh < hs and 0 <= vv < vs and (n := vv * hs + hh) < fan:
                by_step.setdefault(tuple(a - b for a, b in zip(offs[n], offs[i], strict=True)), set()).add(i)
    link = {}
    for step, matched in by_step.items():
        rest = [offs[i] for i in range(fan) if i not in matched]
        link[step] = (len(matched), len(set(rest)), len(rest))
    return fan, groups, link


def analyze(dims: dict[str, int], spaces: Sequence[Space], levels: Sequence[Level], mac_pj: float = 0.0,
            mac_instances: int | None = None) -> Result:
    """Reads, fills and updates per level and data space, cycles and energy (see the module doc).

    ``levels`` outermost first; every level's temporal and spatial factors multiply, per dimension,
    to the dimension's bound (checked by the caller)."""
    N = len(levels)
    inner = list(reversed(levels))  # 0 = innermost
    # the loop list innermost first, as Timeloop's nest: a level's spatial loops inside its temporal ones
    loops: list[tuple[int, str, int, bool]] = []  # (level index from the inside, dim, bound, spatial)
    first: list[int] = []  # index of each level's innermost loop
    last: list[int] = []  # index of each level's outermost loop (its storage boundary)
    for j, lv in enumerate(inner):
        first.append(len(loops))
        for d, n in lv.spatial:  # innermost first (Timeloop's permutation order: X loops, then Y)
            loops.append((j, d, n, True))
        for d, n in reversed(lv.temporal):
            loops.append((j, d, n, False))
        if len(loops) == first[-1]:
            loops.append((j, next(iter(dims)), 1, False))  # a level without loops: one trip
        last.append(len(loops) - 1)
    # stride of each loop: product of the same dimension's factors inside it
    stride: list[int] = []
    acc: dict[str, int] = {}
    ext_upto: list[dict[str, int]] = []  # extents of the sub-nest from loop 0 up to i
    for _, d, n, _ in loops:
        stride.append(acc.get(d, 1))
        acc[d] = acc.get(d, 1) * n
        ext_upto.append(dict(acc))
    macs = float(_prod(dims.values()))
    temporal_iters = float(_prod(n for _, _, n, sp in loops if not sp))
    utilized_macs = float(_prod(n for _, _, n, sp in loops if sp))
    # utilised instances of level j: product of the spatial loops of the levels above it
    util_inst = [float(_prod(n for (lj, _, n, sp) in loops if sp and lj > j)) for j in range(N)]

    out_acc: dict[str, dict[str, dict[str, float]]] = {lv.name: {} for lv in levels if not lv.virtual}
    for sp in spaces:
        size = [_prod(_box(sp, ext_upto[last[j]])) for j in range(N)]
        # per-instance accesses of level j (its children's deltas, one per distinct offset) and the
        # share each child receives (A: the representative child's delta sum)
        # per level j (0 = innermost): its children's deltas, walked as Timeloop extrapolates (A: what one
        # child receives), the accesses they cost it (C: one per group of equal deltas, or fewer where a
        # child takes its delta from a mesh neighbour, L), and the deliveries (W, the multicast-weighted sum)
        A = [0.0] * N
        C = [0.0] * N
        W = [0.0] * N
        L = [0.0] * N
        groups = [1] * N
        fan = [1] * N
        for j in range(N):
            fan[j], groups[j], link = _fanout(sp, [(d, n, stride[i]) for i, (lj, d, n, s) in enumerate(loops)
                                                   if lj == j and s], inner[j])
            above = [(d, n, stride[i]) for i in range(first[j], len(loops)) for (lj, d, n, s) in [loops[i]]
                     if not s]
            if j == 0 and link is None:
                A[0] = C[0] = W[0] = temporal_iters
                continue
            # the child's delta state (children of the innermost level are MACs: one operation point each)
            state = _Delta(_box(sp, ext_upto[last[j - 1]])) if j else None
            pos: dict[str, int] = {}
            prev: list = [None]
            acc = [0.0, 0.0, 0.0, 0.0]  # A, C, W, L

            def leaf(w: float, state=state, link=link, j=j, prev=prev, acc=acc, pos=pos) -> None:
                lo = _proj(sp, pos)
                n, key = state.delta(lo) if state is not None else (1, (lo, None))
                acc[0] += w * n
                if n == 0:
                    prev[0] = None
                    return
                c, wt, lt = groups[j] * n, fan[j] * n, 0.0
                if link is not None and prev[0] is not None and prev[0][1] == key[1]:
                    step = tuple(a - b for a, b in zip(key[0], prev[0][0], strict=True))
                    matched, distinct, unmatched = link.get(step, (0, groups[j], fan[j]))
                    if distinct < groups[j]:  # Timeloop uses the link transfers where they save reads
                        c, wt, lt = distinct * n, unmatched * n, matched * n
                prev[0] = key
                acc[1] += w * c
                acc[2] += w * wt
                acc[3] += w * lt

            def walk(k: int, w: float, above=above, pos=pos, leaf=leaf) -> None:
                if k < 0:
                    leaf(w)
                    return
                d, n, st = above[k]
                walk(k - 1, w)
                if n >= 2:
                    pos[d] = pos.get(d, 0) + st
                    walk(k - 1, w * (n - 1))
                    pos[d] -= st

            walk(len(above) - 1, 1.0)  # `above` is innermost first: walk from its outer end
            A[j], C[j], W[j], L[j] = acc
        content = list(C)
        weighted = list(W)
        # a child's share of its immediate parent's accesses (Timeloop takes it before masking)
        pas = [W[j + 1] / fan[j + 1] if j + 1 < N else 0.0 for j in range(N)]
        # partition sizes (shrink only across a spatial fan-out)
        part = [0.0] * N
        part[N - 1] = size[N - 1]
        for j in range(N - 2, -1, -1):
            if fan[j + 1] > 1 or any(lj == j + 1 and s for (lj, _, _, s) in loops):
                part[j] = part[j + 1] * size[j] / size_with_spatial(sp, ext_upto, first, j + 1, loops)
            else:
                part[j] = part[j + 1]
        # masking: bypassed levels hand their children to the next level that keeps the data space
        alive = [True] * N
        for j in range(N):
            keep = inner[j].keep
            if keep is None or sp.name in keep:
                continue
            outer = next((o for o in range(j + 1, N) if alive[o]), None)
            alive[j] = False
            if outer is None:
                break
            factor = content[j] * fan[outer] / weighted[outer] if weighted[outer] else 0.0
            content[outer] *= factor
            weighted[outer] *= factor
            if weighted[outer]:
                L[outer] = 0.0  # its children are gone: their links mean nothing
        top = max((j for j in range(N) if alive[j]), default=None)
        for j in range(N):
            if not alive[j] and (top is None or j > top):
                L[j] = 0.0  # outermost masked levels lose all their stats
        # a child that took data over links read it from a peer's copy: reads and fills there
        peer = [0.0] * N
        for j in range(N - 1, 0, -1):
            if L[j]:
                peer[j - 1] += L[j] / util_inst[j - 1]
        for j in range(N):
            lv = inner[j]
            if not alive[j] or lv.virtual:
                continue
            share = 0.0 if j == top else pas[j]
            if sp.rw:  # an inout array's first update reads its initial value (analytical 0.57: elided as
                pj = 0.0 if sp.inout else part[j]  # Timeloop's out; 0 DRAM reads of a `C +=` that must load C)
                updates = round(content[j])
                reads = round(content[j] + peer[j] - pj)
                fills = round(share + peer[j]) if j == top else round(share + peer[j] - pj)
            else:
                reads, updates, fills = round(content[j] + peer[j]), 0, round(share + peer[j])
            n_inst = util_inst[j]
            out_acc[lv.name][sp.name] = {
                "reads": reads * n_inst, "fills": fills * n_inst, "updates": updates * n_inst,
                "per_instance": {"reads": reads, "fills": fills, "updates": updates},
                "size": size[j], "instances": n_inst}
    # cycles: temporal iterations, throttled by bandwidth
    compute_cycles = temporal_iters
    throttle = 1.0
    for lv in levels:
        if lv.virtual:
            continue
        st = out_acc[lv.name].values()
        r = sum(s["per_instance"]["reads"] for s in st)
        w = sum(s["per_instance"]["fills"] + s["per_instance"]["updates"] for s in st)
        for need, bw in ((r, lv.read_bw), (w, lv.write_bw), (r + w, lv.shared_bw)):
            if bw:
                throttle = max(throttle, need / bw / compute_cycles)
    cycles = compute_cycles * throttle
    energy: dict[str, float] = {}
    by_space: dict[str, dict[str, float]] = {}
    leak: dict[str, float] = {}
    for lv in levels:
        if lv.virtual:
            continue
        st = out_acc[lv.name]
        e = 0.0
        by_space[lv.name] = {}
        for name, s in st.items():
            pi = s["per_instance"]
            b = max(lv.block, 1)
            # a cluster of instances shares one access: each utilised cluster pays it once
            payers = s["instances"] if lv.cluster <= 1 else min(s["instances"], lv.instances / lv.cluster)
            es = (math.ceil(pi["reads"] / b) * lv.read_pj + math.ceil(pi["fills"] / b) * lv.fill_pj
                  + math.ceil(pi["updates"] / b) * lv.update_pj) * payers
            by_space[lv.name][name] = es
            e += es
        inst = max([s["instances"] for s in st.values()] or [0.0])
        leak[lv.name] = lv.leak_pj * cycles * max(inst, 1.0)  # a level that keeps nothing leaks too
        energy[lv.name] = e + leak[lv.name]
    energy["MAC"] = macs * mac_pj
    total = sum(energy.values())
    n_macs = mac_instances or utilized_macs
    return Result(macs=macs, utilized_macs=utilized_macs, cycles=cycles, compute_cycles=compute_cycles,
                  utilization=macs / (n_macs * cycles) if cycles else 0.0, accesses=out_acc, energy_pj=energy,
                  energy_by_space=by_space, leak_pj=leak, total_energy_pj=total, throttle=throttle)


def size_with_spatial(sp: Space, ext_upto, first, j, loops) -> float:
    """Tile size of level ``j`` at its outermost spatial loop (the child tile plus the fan-out)."""
    idx = max(i for i in range(first[j], len(loops)) if loops[i][0] == j and loops[i][3])
    return float(_prod(_box(sp, ext_upto[idx])))


# -- from a Design ----------------------------------------------------------------------------------------
def _mdiag(d, path: tuple, msg: str, expected: str = "", hint: str = ""):
    from llmulator.errors import SpecError
    from llmulator.yamlsrc import SourceMap

    smap = d.mapping.source_map or SourceMap("<mapping>")
    return SpecError(smap.diag(("mapping",) + path, msg, expected, hint))


def problem_of(d) -> tuple[dict[str, int], list[Space], list[str]]:
    """The design's perfect loop nest as a tiling problem: dimensions are loop labels (bound: trips),
    data spaces are arrays (projections from their affine subscripts); and the labels outermost first."""
    tops = d.tree.top_loops()
    if len(tops) != 1 or len(d.tree.roots) != 1:
        raise _mdiag(d, ("levels",), "multi-level tiling needs a workload with a single perfect loop nest")
    band = tops[0].band() if hasattr(tops[0], "band") else [tops[0]]
    labels = [lp.label for lp in band]
    var_of = {lp.var: lp.label for lp in band}
    dims = {lb: int(round(d.trips(lb))) for lb in labels}
    spaces: dict[str, Space] = {}
    for acc, _loops in d.accesses():
        proj = []
        for aff in acc.affine:
            if aff is None:
                raise _mdiag(d, ("levels",), f"array {acc.array}: a subscript that is not affine in the loop "
                             "indices; multi-level tiling needs affine subscripts")
            terms = []
            for v, c in aff.coefs.items():
                if v in var_of and c:
                    terms.append((abs(int(c)), var_of[v]))
            proj.append(terms)
        sp = spaces.get(acc.array)
        if sp is None:
            spaces[acc.array] = Space(acc.array, proj, acc.is_write, d.workload.arrays[acc.array].role == "inout")
        else:
            sp.rw = sp.rw or acc.is_write
    return dims, list(spaces.values()), labels


def levels_of(d) -> tuple[dict[str, int], list[Space], list[Level], float, int]:
    """The design's mapping levels as ``Level`` records, checked (known levels and loops, factors that
    multiply to every loop's trips, tiles that fit every level)."""
    from llmulator import tech
    try:  # the design checks are moving out of llmulator.design into their own modules
        from llmulator.design_levels import level_diagnostics
    except ImportError:
        from llmulator.design import level_diagnostics
    from llmulator.errors import SpecError

    dims, spaces, labels = problem_of(d)
    arch = d.arch
    raw_mem = {m["name"]: m for m in arch.raw.get("memory", [])}
    diags = level_diagnostics(d)  # the same checks as ``llmulator validate``
    if diags:
        raise SpecError(diags)
    given = {e["level"]: (i, e) for i, e in enumerate(d.mapping.levels)}
    elem_bits = max(tech.DTYPE_BITS.get(a.dtype, 32) for a in d.workload.arrays.values())
    levels: list[Level] = []
    for lv in arch.memory:
        i, e = given.get(lv.name, (None, {"level": lv.name, "keep": []}))
        t = e.get("temporal", {})
        order = list(e.get("order", [])) + [lb for lb in t if lb not in e.get("order", [])]
        keep = e.get("keep")
        if keep is None:
            keep = [s.name for s in spaces if s.name not in e.get("bypass", [])]
        r = raw_mem.get(lv.name, {})
        wb = int(r.get("word_bits", elem_bits))
        cluster = int(r.get("cluster_size", 1))
        levels.append(Level(
            name=lv.name, instances=lv.instances, temporal=[(lb, int(t[lb])) for lb in order if lb in t],
            spatial=[(lb, int(n)) for lb, n in e.get("spatial", {}).items()], keep=frozenset(keep),
            block=max(lv.width_bits // (wb * cluster), 1), cluster=cluster, read_pj=lv.read_energy_pj,
            fill_pj=lv.write_energy_pj,
            update_pj=float(r.get("update_energy_pj", lv.write_energy_pj)),
            leak_pj=lv.leakage_mw * 1000.0 / arch.clock_mhz,
            capacity_words=None if lv.capacity_kib is None else lv.capacity_bits / wb,
            read_bw=r.get("read_bandwidth_words"), write_bw=r.get("write_bandwidth_words"),
            shared_bw=r.get("shared_bandwidth_words"), split=e.get("split"), mesh_x=r.get("mesh_x")))
        for st in e.get("fanout", []):
            up = levels[-1]
            levels.append(Level(name=st["name"], instances=int(st.get("instances") or up.instances
                                                                  * _prod(n for _, n in up.spatial)),
                                spatial=[(lb, int(n)) for lb, n in st.get("spatial", {}).items()],
                                keep=frozenset(), split=st.get("split"), virtual=True, mesh_x=st.get("mesh_x")))
    mac = arch.operators.get("mac")
    # physical fan-outs (X, Y): the mesh of the next level (or the MACs) over this one's
    raw_mac = (arch.raw.get("compute", {}).get("operators", {}) or {}).get("mac", {}) or {}
    meshes = [(L.instances, L.mesh_x or L.instances) for L in levels]
    meshes.append(((mac.count if mac else 1), raw_mac.get("mesh_x") or (mac.count if mac else 1)))
    for L, (n0, x0), (n1, x1) in zip(levels, meshes, meshes[1:], strict=False):
        if x0 and x1 % x0 == 0 and n0 % x0 == 0 and n1 % x1 == 0 and (n1 // x1) % (n0 // x0) == 0:
            L.phys = (x1 // x0, (n1 // x1) // (n0 // x0))
    return dims, spaces, levels, (mac.energy_pj if mac else 0.0), (mac.count if mac else 1)


def estimate(d) -> Result:
    """The nest analysis of a design whose mapping has ``levels``; raises SpecError for a mapping that
    ``validate`` refuses (``levels_of`` runs its checks; the tiles against each level's capacity among them,
    ``llmulator.design_levels``: one rule for both, where this module had its own until an outside probe found
    ``validate`` accepting what it refused)."""
    dims, spaces, levels, mac_pj, n_mac = levels_of(d)
    return analyze(dims, spaces, levels, mac_pj=mac_pj, mac_instances=n_mac)


def stated_bandwidth_cycles(d, r: Result) -> float:
    """The cycles the busiest level needs to move its words at the ``bandwidth_bytes_per_cycle`` its spec states
    (the whole level's): Timeloop throttles only by the per-instance ``*_bandwidth_words`` it knows, so before
    analytical 0.57 a level given in bytes a cycle did not limit the count at all. Imported Timeloop specs state
    no such figure, so their cycles stay Timeloop's."""
    from llmulator import tech
    raw = {m["name"]: m for m in d.arch.raw.get("memory", [])}
    elem_bits = max(tech.DTYPE_BITS.get(a.dtype, 32) for a in d.workload.arrays.values())
    worst = 0.0
    for lv in d.arch.memory:
        bw = raw.get(lv.name, {}).get("bandwidth_bytes_per_cycle")
        if not bw:
            continue
        bits = int(raw[lv.name].get("word_bits", elem_bits))
        words = sum(s["reads"] + s["fills"] + s["updates"] for s in r.accesses.get(lv.name, {}).values())
        worst = max(worst, words * bits / 8.0 / bw)
    return worst


def exposed_latency(d, r: Result) -> float:
    """Cycles the backing store's latency adds to Timeloop's pipelined count, which prices none: the MACs wait
    for the first word it sends, and the run ends when the last word written to it lands, as hlsim's double
    buffering charges them (``llmulator.transfers``). Before analytical 0.57 a GEMM on a DRAM of 2,000 cycles'
    latency took 512 cycles, below the 2,192 its 768 bytes and that latency need (an outside probe). Imported
    Timeloop specs state latency 0 on every level, so their cycles stay Timeloop's."""
    top = d.arch.memory[0]
    spaces = r.accesses.get(top.name, {}).values()
    read = any(s["reads"] > 0 for s in spaces)
    written = any(s["updates"] > 0 for s in spaces)
    return float(top.latency_cycles) * (int(read) + int(written))


def apply(d, metrics: dict, terms: dict, breakdown: dict, notes: list) -> None:
    """Replace the single-placement figures of an estimate by the multi-level nest analysis's."""
    r = estimate(d)
    exposed = exposed_latency(d, r)
    total_cycles = max(r.cycles, math.ceil(stated_bandwidth_cycles(d, r) - 1e-9)) + exposed
    energy = r.total_energy_pj + (sum(r.leak_pj.values()) / r.cycles * (total_cycles - r.cycles) if r.cycles else 0.0)
    metrics["cycles"] = total_cycles
    metrics["energy_pj"] = energy
    metrics["power_mw"] = energy * d.arch.clock_mhz / max(total_cycles, 1.0) * 1e-3
    metrics["latency_us"] = total_cycles / d.arch.clock_mhz
    terms.update({"compute_cycles": r.compute_cycles, "ideal_cycles": r.macs / max(1.0, d.arch.operators[
        "mac"].count if "mac" in d.arch.operators else 1.0), "stall_cycles": total_cycles - r.compute_cycles,
        "fill_drain_cycles": 0.0, "exposed_cycles": exposed, "timeloop_cycles": r.cycles})
    terms["under_utilisation_cycles"] = r.compute_cycles - terms["ideal_cycles"]
    for lv, spaces in r.accesses.items():
        for sp, v in spaces.items():
            for k in ("reads", "fills", "updates"):
                terms[f"accesses.{lv}.{sp}.{k}"] = float(v[k])
    for lv, e in r.energy_pj.items():
        terms[f"energy_pj.{lv}"] = float(e)
    breakdown["utilisation"] = r.utilization
    notes.append("multi-level tiling (mapping.levels): cycles, energy and accesses from the nest analysis "
                 "(llmulator_plugins.analytical.tiling, Timeloop's rules), no faster than the levels' stated "
                 "bandwidth_bytes_per_cycle, plus the backing store's latency for the first read and the last write; "
                 "the kernel's schedule is not used")
