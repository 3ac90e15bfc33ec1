"""The analytical model (Timeloop/Accelergy-style), vectorised over mappings.

For one top-level loop nest this module computes, for a batch of B mappings
at once (NumPy arrays of shape (B,)):

* tile footprints per array and the number of tile loads from the parent
  level (reuse: outer loops that do not index an array, inside the innermost
  one that does, re-use the resident tile);
* datapath transfers per array at its placement level, after spatial
  multicast (PEs along a dimension the array does not depend on share one
  read) and register reuse (innermost temporal loops that do not index the
  array keep the value in the PE);
* spatial-array compute cycles: stream steps x II + folds x fill/drain, with
  the systolic skew (R + C - 2) plus a preload of R cycles when an input
  operand is stationary (SCALE-Sim's per-fold model), or the PE pipeline depth
  on a broadcast array; the loop-nest semantics (which loops are folds, which
  stream, what a PE keeps in its register) is ``llmulator.nest``'s, shared
  with render and hlsim.

The scalar estimator calls the same functions with B = 1, so the batched and
the single-design answers are one code path. See docs/analytical-model.md.
"""

from __future__ import annotations

import attrs
import numpy as np
from llmulator import nest as lnest
from llmulator.costs import combining_latency
from llmulator.design import Design
from llmulator.errors import Diagnostic, SpecError
from llmulator.expr import ExprError, evaluate
from llmulator.kernel import Loop


@attrs.define
class ArrayUse:
    name: str
    bits: int
    role: str
    level: int  # index into arch.memory
    dep: np.ndarray  # (L,) bool: index depends on loop l
    coefs: list[list[tuple[int, int]]]  # per dim: (loop index, |coef|)
    spread: list[float]  # per dim: spread of constant offsets over accesses
    indirect_dims: list[bool]
    shape: tuple[int, ...]
    reads: float  # datapath reads of this array over the whole nest (expected)
    writes: float


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
    loads: float  # datapath loads over the nest
    stores: float
    notes: list[str]


def _prob(design: Design, br) -> tuple[float, str | None]:
    if br.label and br.label in design.workload.hints and "taken_probability" in design.workload.hints[br.label]:
        return float(design.workload.hints[br.label]["taken_probability"]), None
    return 0.5, (f"branch at line {br.line} (`{br.cond_text}`) has no taken_probability hint; assumed 0.5 "
                 "(label it and add workload.hints.<label>.taken_probability)")


def nest_of(design: Design, top: Loop) -> Nest:
    """Expected operation and access counts of one top-level nest."""
    loops: list[Loop] = []
    notes: list[str] = []
    ops: dict[str, float] = {}
    per_array: dict[str, dict] = {}
    loads = stores = 0.0

    def visit_stmt(st, mult: float):
        nonlocal loads, stores
        for c, n in design.stmt_ops(st).items():
            ops[c] = ops.get(c, 0.0) + n * mult
        for acc in st.accesses:
            u = per_array.setdefault(acc.array, {"accs": [], "r": 0.0, "w": 0.0})
            u["accs"].append(acc)
            if acc.is_read:
                u["r"] += mult
                loads += mult
            if acc.is_write:
                u["w"] += mult
                stores += mult

    def rec(nodes, mult: float):
        for n in nodes:
            if isinstance(n, Loop):
                loops.append(n)
                trips = design.trips(n.label)
                if n.cond_stmt is not None and (n.data_dependent or n.is_while):
                    # a data-dependent bound is evaluated by the datapath; counters are free
                    visit_stmt(n.cond_stmt, mult * (trips + 1))
                rec(n.body, mult * trips)
            elif getattr(n, "kind", "") == "branch":
                p, note = _prob(design, n)
                if note:
                    notes.append(note)
                visit_stmt(n.cond, mult)
                rec(n.then, mult * p)
                rec(n.orelse, mult * (1 - p))
            elif n.kind == "stmt":
                visit_stmt(n, mult)

    rec([top], 1.0)
    band = top.band()
    is_band = all(hasattr(n, "ops") and n.kind == "stmt" for n in band[-1].body) and len(band) == len(loops)
    labels = [lp.label for lp in loops]
    trips = np.array([design.trips(lb) for lb in labels], dtype=float)
    var_index = {lp.var: i for i, lp in enumerate(loops) if lp.var}
    arrays = []
    for name, u in per_array.items():
        spec = design.workload.arrays[name]
        shape = design.workload.shape(name, design.sizes)
        ndim = len(shape)
        dep = np.zeros(len(loops), dtype=bool)
        coefs: list[list[tuple[int, int]]] = [[] for _ in range(ndim)]
        spread, indirect = [], []
        for d in range(ndim):
            best: dict[int, int] = {}
            consts, ind = [], False
            for acc in u["accs"]:
                aff = acc.affine[d] if d < len(acc.affine) else None
                if aff is None:
                    ind = True
                    continue
                for v, c in aff.coefs.items():
                    if c and v in var_index:
                        li = var_index[v]
                        dep[li] = True
                        best[li] = max(best.get(li, 0), abs(c))
                try:
                    consts.append(float(evaluate(aff.const, design.sizes)))
                except ExprError:
                    pass
            coefs[d] = sorted(best.items())
            spread.append((max(consts) - min(consts)) if consts else 0.0)
            indirect.append(ind)
        if any(indirect):
            dep[:] = True  # an indirect index may touch anything: no reuse assumed
        level = design.arch.level_index(design.placement(name))
        arrays.append(ArrayUse(name, spec.bits, spec.role, level, dep, coefs, spread, indirect, shape,
                               u["r"], u["w"]))
    total = float(np.prod(trips)) if is_band else 1.0
    per_iter = {c: n / total for c, n in ops.items()} if is_band and total > 0 else {}
    return Nest(top, loops, labels, trips, arrays, ops, is_band, per_iter, loads, stores, notes)


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
    # a loop that encloses another loop's tile loop in the mapped nest is an outer loop as a whole
    tiles = np.array([[m.loop(lb).tile or (1.0 if lnest.encloses_tile_loop(design, lb) else
                                           lnest.mapped_trips(design, lb) if m.loop(lb).fuse else nest.trips[i])
                       for i, lb in enumerate(labels)]], dtype=float)
    spatial = np.array([[{"rows": 1, "cols": 2}.get(m.loop(lb).spatial or "", 0) for lb in labels]])
    pos = np.array([lnest.outer_positions(design, labels)])
    return BatchMappings(tiles, spatial, pos)


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
    t = np.maximum(np.minimum(maps.tiles[:, heads], trips[None, :]), 1.0)
    outer = np.ceil(np.maximum(trips[None, :], 1.0) / t)
    t_loops = np.minimum(maps.tiles, nest.trips[None, :])
    for gi, g in enumerate(groups):
        if len(g) > 1:  # a tile of T flattened indices spans T of the innermost member, T / N of the next, ...
            rem = t[:, gi].copy()
            for li in sorted(g, reverse=True):
                t_loops[:, li] = np.minimum(rem, nest.trips[li])
                rem = np.ceil(rem / max(nest.trips[li], 1.0))
    return View(groups, trips, t, outer, maps.spatial[:, heads], maps.pos[:, heads], t_loops)


def footprints(arr: ArrayUse, tiles: np.ndarray) -> np.ndarray:
    """Elements of ``arr`` in one tile (all point loops run once), (B,)."""
    out = np.ones(tiles.shape[0])
    for d, size in enumerate(arr.shape):
        if arr.indirect_dims[d]:
            out *= size
            continue
        ext = np.ones(tiles.shape[0])
        for li, c in arr.coefs[d]:
            ext += c * (tiles[:, li] - 1)
        out *= np.minimum(size, ext + arr.spread[d])
    return out


def tile_loads(dep: np.ndarray, outer: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """How many times the tile of an array whose index uses the mapped loops ``dep`` is (re)loaded
    from the parent level, (B,).

    Outer tile loops that do not index the array re-use the resident tile
    only when they sit inside the innermost outer loop that does (Timeloop's
    reuse rule); loops of one trip never matter.
    """
    rel = dep[None, :] & (outer > 1)
    pstar = np.where(rel, pos, -1).max(axis=1)
    inside = pos <= pstar[:, None]
    return np.where(inside, outer, 1.0).prod(axis=1)


def distinct_tiles(dep: np.ndarray, outer: np.ndarray) -> np.ndarray:
    return np.where(dep[None, :], outer, 1.0).prod(axis=1)


def spatial_compute(design: Design, nest: Nest, maps: BatchMappings) -> dict[str, np.ndarray]:
    """PE-array cycles for B mappings of a perfect band (``llmulator.nest``'s fold semantics).

    Each fold (one iteration of the tile loops) streams its temporal point loops through the array,
    one step per II, and pays the fill/drain: the systolic skew R + C - 2, plus a preload of R cycles
    when an input operand is stationary (indexed by no temporal point loop: SCALE-Sim's per-fold
    model), or the PE pipeline depth on a broadcast array. Edge tiles stream only what they hold:
    over all folds, the steps are the product of the temporal loops' trips and the spatial loops'
    tile counts. II: each bound PE runs one body per step with its own units (shared classes serve
    every bound PE), an accumulator kept in the PE register across steps waits for its combining
    operation, and the largest ``pipeline_ii`` of the band is a floor.
    """
    arch = design.arch
    B = maps.size
    v = view(design, nest, maps)
    t, outer, is_sp = v.t, v.outer, v.is_sp
    trips = np.maximum(v.trips[None, :], 1.0)
    total_iters = float(np.prod(nest.trips))
    rows_used = np.where(v.spatial == 1, t, 1.0).prod(axis=1)
    cols_used = np.where(v.spatial == 2, t, 1.0).prod(axis=1)
    pe_used = rows_used * cols_used
    stream = np.where(~is_sp, t, 1.0).prod(axis=1)
    steps = np.where(is_sp, outer, trips).prod(axis=1)  # stream steps over all folds, edge tiles exact
    folds = outer.prod(axis=1)
    ii = np.ones(B)
    for cls, n in nest.ops_per_iter.items():
        unit = arch.operators.get(cls)
        if unit is None or cls == "select" or n <= 0:
            continue
        per = lnest.units_per_pe(design, cls)
        ii = np.maximum(ii, np.ceil(n / per) if per else np.ceil(n * pe_used / unit.count))
    target = max([design.mapping.loop(lb).pipeline_ii or 1 for lb in nest.labels])
    ii = np.maximum(ii, target)
    writer: dict[str, object] = {}  # array -> the first statement that writes it
    for st, _ in design.statements_with_loops():
        for a in st.accesses:
            if a.is_write:
                writer.setdefault(a.array, st)
    for arr in nest.arrays:
        if not arr.writes:
            continue
        _, reuse = lnest.operand_reuse(v.dep(arr), is_sp, t, v.pos)
        ii = np.where(reuse > 1, np.maximum(ii, combining_latency(design, writer[arr.name])), ii)
    pe = arch.pe_array
    any_sp = is_sp.any(axis=1)
    if pe is not None and pe.interconnect == "systolic":
        stationary = np.zeros(B, dtype=bool)
        for arr in nest.arrays:
            if arr.role == "in":
                stationary |= lnest.stationary(v.dep(arr), is_sp, t)
        fill = (pe.rows + pe.cols - 2) + np.where(stationary, pe.rows, 0)
    elif pe is not None:
        fill = np.full(B, float(pe.pipeline_depth_cycles))
    else:
        fill = np.zeros(B)
    fill = np.where(any_sp, fill, 0.0)
    compute = steps * ii + folds * fill
    n_pe = pe.size if pe is not None else 1
    ideal = total_iters * ii.min() / n_pe
    return {"compute_cycles": compute, "ideal_cycles": np.full(B, ideal), "fill_drain_cycles": folds * fill,
            "under_utilisation_cycles": steps * ii - ideal, "folds": folds, "stream": stream, "ii": ii,
            "pe_used": pe_used, "utilisation": ideal / np.maximum(compute, 1e-9)}


def memory_traffic(design: Design, nest: Nest, maps: BatchMappings, spatial: bool) -> dict[str, np.ndarray]:
    """Reads and writes per memory level (words and bits), and tile occupancy, for B mappings."""
    arch = design.arch
    B = maps.size
    v = view(design, nest, maps)
    nlev = len(arch.memory)
    reads, writes = np.zeros((nlev, B)), np.zeros((nlev, B))
    rbits, wbits = np.zeros((nlev, B)), np.zeros((nlev, B))
    need = np.zeros((nlev, B))
    for arr in nest.arrays:
        dep = v.dep(arr)
        mcast = np.ones(B)
        reuse = np.ones(B)
        if spatial:
            mcast, reuse = lnest.operand_reuse(dep, v.is_sp, v.t, v.pos)
        r = arr.reads / mcast / reuse
        w = arr.writes / mcast / reuse
        lv = arr.level
        reads[lv] += r
        writes[lv] += w
        rbits[lv] += r * arr.bits
        wbits[lv] += w * arr.bits
        if lv == 0:
            continue
        fp = footprints(arr, v.t_loops)
        need[lv] += fp * arr.bits
        loads = tile_loads(dep, v.outer, v.pos)
        parent = lv - 1
        if arr.reads or arr.role in ("in", "inout"):
            fill = loads * fp
            if arr.role == "out":  # only partial sums come back
                fill = np.maximum(loads - distinct_tiles(dep, v.outer), 0.0) * fp
            reads[parent] += fill
            rbits[parent] += fill * arr.bits
            writes[lv] += fill
            wbits[lv] += fill * arr.bits
        if arr.writes or arr.role in ("out", "inout"):
            wb = loads * fp
            writes[parent] += wb
            wbits[parent] += wb * arr.bits
            reads[lv] += wb
            rbits[lv] += wb * arr.bits
    out: dict[str, np.ndarray] = {}
    for i, lv in enumerate(arch.memory):
        out[f"reads.{lv.name}"] = reads[i]
        out[f"writes.{lv.name}"] = writes[i]
        out[f"read_bits.{lv.name}"] = rbits[i]
        out[f"write_bits.{lv.name}"] = wbits[i]
        out[f"need_bits.{lv.name}"] = need[i]
    return out


def throttle(design: Design, traffic: dict[str, np.ndarray], compute: np.ndarray) -> dict[str, np.ndarray]:
    """Bandwidth-throttled cycles: the slowest of compute and every level's transfer time."""
    arch = design.arch
    out: dict[str, np.ndarray] = {}
    total = compute.copy()
    valid = np.ones(compute.shape[0], dtype=bool)
    for lv in arch.memory:
        bits = traffic[f"read_bits.{lv.name}"] + traffic[f"write_bits.{lv.name}"]
        cyc = bits / 8.0 / lv.bandwidth_bytes_per_cycle
        out[f"cycles.{lv.name}"] = cyc
        if lv.capacity_kib is not None:
            cap = lv.capacity_bits * lv.instances
            nb = traffic[f"need_bits.{lv.name}"]
            valid &= nb <= cap
            out[f"occupancy.{lv.name}"] = nb / cap
        # transfers overlap compute (decoupled, double-buffered orchestration, as in Timeloop)
        total = np.maximum(total, cyc)
    out["cycles"] = total
    out["stall_cycles"] = total - compute
    out["valid"] = valid
    return out


def energy(design: Design, ops: dict[str, float], traffic: dict[str, np.ndarray], cycles: np.ndarray,
           datapath: tuple[float, float] | None = None) -> dict[str, np.ndarray]:
    """Energy = operation counts x energy per op + accesses x energy per access + leakage x time."""
    arch = design.arch
    B = cycles.shape[0]
    out: dict[str, np.ndarray] = {}
    total = np.zeros(B)
    for cls, n in ops.items():
        op = arch.operators.get(cls)
        if op is None and cls == "mac":
            e = (arch.operators["mul"].energy_pj + arch.operators["add"].energy_pj) * n
        else:
            e = (op.energy_pj if op is not None else 0.0) * n
        out[f"energy_pj.op.{cls}"] = np.full(B, e)
        total += e
    rf = [i for i, lv in enumerate(arch.memory) if lv.kind == "regfile"]
    for i, lv in enumerate(arch.memory):
        e = (traffic[f"read_bits.{lv.name}"] * lv.read_energy_pj
             + traffic[f"write_bits.{lv.name}"] * lv.write_energy_pj) / lv.width_bits
        if datapath is not None and rf and i == rf[-1]:
            # operands of every operation pass through the PE register file
            loads, stores = datapath
            e = e + (loads * lv.read_energy_pj + stores * lv.write_energy_pj) * min(1.0, 32 / lv.width_bits)
        out[f"energy_pj.{lv.name}"] = e
        total = total + e
    leak_mw = sum(o.leakage_mw * o.count for o in arch.operators.values()) + \
        sum(lv.leakage_mw * lv.instances for lv in arch.memory)
    leak = leak_mw * (cycles / arch.clock_mhz) * 1e3  # mW x us = nJ; x 1e3 -> pJ
    out["energy_pj.leakage"] = leak
    out["energy_pj"] = total + leak
    return out


def area(design: Design) -> dict[str, float]:
    """Area roll-up: every operator unit and every memory instance."""
    arch = design.arch
    out = {f"area_um2.op.{o.name}": o.area_um2 * o.count for o in arch.operators.values()}
    out.update({f"area_um2.{lv.name}": lv.area_um2 * lv.instances for lv in arch.memory})
    out["area_um2"] = sum(out.values())
    return out


def require_spatial_band(design: Design, nest: Nest) -> None:
    if nest.is_band:
        return
    m = design.mapping
    label = next((lb for lb in nest.labels if m.loop(lb).spatial), nest.labels[0])
    smap = m.source_map
    if smap is None:
        raise SpecError(Diagnostic("<mapping>", None, None, "", "spatial binding needs a perfect loop nest"))
    raise SpecError(smap.diag(("mapping", "loops", label, "spatial"),
                              f"spatial binding needs a perfect loop nest (nest {nest.top.label} has statements "
                              "or branches between its loops)", "spatial loops in a perfectly nested band",
                              "use unroll and pipeline_ii for imperfect nests"))
