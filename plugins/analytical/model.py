"""The analytical model (Timeloop/Accelergy-style), vectorised over mappings.

For one top-level loop nest this module computes, for a batch of B mappings
at once (NumPy arrays of shape (B,)):

* per-level traffic from tile footprints and tile loads (``llmulator.traffic``,
  shared with hlsim);
* datapath transfers per array at its placement level, after spatial
  multicast (PEs along a dimension the array does not depend on share one
  read) and register reuse (innermost temporal loops that do not index the
  array keep the value in the PE);
* spatial-array compute cycles: stream steps x II + folds x fill/drain, with
  the systolic skew (R + C - 2) plus a preload of R + 1 cycles when an input
  operand is stationary and a drain of R cycles when the output stays in PEs
  without room for a shadow accumulator (``llmulator.nest.systolic_fill``, the
  generated RTL's per-fold cycles), or the PE pipeline depth on a broadcast
  array; the loop-nest semantics (which loops are folds, which
  stream, what a PE keeps in its register) is ``llmulator.nest``'s, shared
  with render and hlsim.

The scalar estimator calls the same functions with B = 1, so the batched and
the single-design answers are one code path. See docs/analytical-model.md.
"""

from __future__ import annotations

import numpy as np
from llmulator import nest as lnest
from llmulator.costs import combining_latency
from llmulator.design import Design
from llmulator.errors import Diagnostic, SpecError
from llmulator.fold_dependences import local_recurrence, stream_dependences, stream_rec_mii
from llmulator.timing import fold_body_schedule
from llmulator.traffic import BatchMappings, Nest, level_cycles, nest_time, overlapped, view
from llmulator.transfers import transfers
from llmulator.words import access_bits, flat_strides, moved_bits, per_word, word_factor


def spatial_compute(design: Design, nest: Nest, maps: BatchMappings) -> dict[str, np.ndarray]:
    """PE-array cycles for B mappings of a perfect band (``llmulator.nest``'s fold semantics).

    Each fold (one iteration of the tile loops) streams its temporal point loops through the array,
    one step per II, and pays the fill/drain of ``llmulator.nest.systolic_fill``: the systolic skew
    R + C - 2, plus a preload of R cycles and one cycle for the last partial sum to leave the array
    when an input operand is stationary (indexed by no temporal point loop), plus R cycles of drain
    when the output stays in PEs that have no room for a shadow accumulator; or the PE pipeline
    depth on a broadcast array. Edge tiles stream only what they hold:
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
    if deps := stream_dependences(design, nest.labels):   # a recurrence along the stream (fold_dependences)
        ii = np.maximum(ii, stream_rec_mii([nest.labels[g[0]] for g in v.groups], t, is_sp, v.pos, deps))
    ii = np.maximum(ii, local_recurrence(design, nest.labels))   # a local all PEs and steps accumulate into
    pe = arch.pe_array
    any_sp = is_sp.any(axis=1)
    last = np.zeros(B)
    if pe is not None and pe.interconnect == "systolic":
        stationary = np.zeros(B, dtype=bool)
        out_still = np.zeros(B, dtype=bool)
        for arr in nest.arrays:
            if arr.role == "in":
                stationary |= lnest.stationary(v.dep(arr), is_sp, t)
            elif arr.writes:
                out_still |= lnest.output_held(v.dep(arr), is_sp, t)
        stationary &= ~out_still  # output stationary: both inputs stream in, none is preloaded (nest.fold)
        preload = lnest.preload_pes(design, [v.dep(arr) for arr in nest.arrays if arr.writes], v.spatial)
        shadow = out_still & shadow_fits(design, nest)
        fill = lnest.systolic_fill(design, [], stationary, out_still & ~shadow, preload)
        last = np.where(shadow, lnest.last_drain(design), 0.0)  # the last fold's drain hides behind nothing
    elif pe is not None:
        fill = np.full(B, float(pe.pipeline_depth_cycles))
    else:
        fill = np.zeros(B)
    fill = np.where(any_sp, fill, 0.0)
    # the body's latency beyond one II (operand fetch to the last write-back) is paid once per nest
    depth = fold_body_schedule(design, [lp.label for lp in nest.top.band()]).depth
    latency = np.where(any_sp, np.maximum(depth - ii, 0.0) + lnest.array_io_cycles(design) + last, 0.0)
    compute = steps * ii + folds * fill + latency
    n_pe = pe.size if pe is not None else 1
    ideal = total_iters * ii.min() / n_pe
    return {"compute_cycles": compute, "ideal_cycles": np.full(B, ideal), "fill_drain_cycles": folds * fill + latency,
            "under_utilisation_cycles": steps * ii - ideal, "folds": folds, "stream": stream, "ii": ii,
            "pe_used": pe_used, "utilisation": ideal / np.maximum(compute, 1e-9)}


def shadow_fits(design: Design, nest: Nest) -> bool:
    """Whether the PEs can keep a shadow accumulator for the nest's output (llmulator.nest)."""
    written = [a for a in nest.arrays if a.writes]
    if not written:
        return True
    return lnest.shadow_accumulator_fits(design, max(a.bits for a in written),
                                         sum(a.bits for a in nest.arrays if not a.writes))


def memory_traffic(design: Design, nest: Nest, maps: BatchMappings, spatial: bool,
                   words_moved: dict[str, float] | None = None) -> dict[str, np.ndarray]:
    """Reads and writes per memory level (words and bits), tile occupancy and tile-transfer cycles, for B
    mappings: the datapath's accesses at each array's level (after multicast and register reuse on a PE
    array) plus the tile transfers between levels (``llmulator.transfers.transfers``). ``words_moved``
    (one mapping: level -> words its PE-array schedule moves, ``llmulator.banks.schedule``) replaces the
    closed-form word bound at those levels: the bandwidth carries the words the schedule fetches."""
    v = view(design, nest, maps)
    out = transfers(design, nest, v)
    out["transfer_cycles"] = out.pop("cycles")
    out["exposed_cycles"] = out.pop("exposed")
    B = maps.size
    element_bits: dict[str, np.ndarray] = {}
    for arr in nest.arrays:
        mcast = reuse = words = np.ones(B)
        level = design.arch.memory[arr.level]
        if spatial:
            mcast, reuse = lnest.operand_reuse(v.dep(arr), v.is_sp, v.t, v.pos)
            words = word_factor(v.dep(arr), *_strides(v, arr), v.is_sp, v.t, v.pos,
                                per_word(level.width_bits, arr.bits), tiles=v.outer)
        r = arr.reads / mcast / reuse
        w = arr.writes / mcast / reuse
        lv = level.name
        out[f"reads.{lv}"] = out[f"reads.{lv}"] + r
        out[f"writes.{lv}"] = out[f"writes.{lv}"] + w
        out[f"read_bits.{lv}"] = out[f"read_bits.{lv}"] + r * arr.bits
        out[f"write_bits.{lv}"] = out[f"write_bits.{lv}"] + w * arr.bits
        # the rest of the words the buffer moves for them: bandwidth, and energy (an SRAM access moves its whole
        # word; llmulator.words, core/energy.py)
        out[f"pad_bits.{lv}"] = out.get(f"pad_bits.{lv}", 0.0) + (r + w) * arr.bits * (words - 1.0)
        if not spatial:   # a scalar access takes its SRAM port for whole words (llmulator.words.access_bits)
            rest = access_bits(level, arr.bits) - arr.bits
            out[f"pad_read_bits.{lv}"] = out.get(f"pad_read_bits.{lv}", 0.0) + r * rest
            out[f"pad_write_bits.{lv}"] = out.get(f"pad_write_bits.{lv}", 0.0) + w * rest
        element_bits[lv] = element_bits.get(lv, 0.0) + (r + w) * arr.bits
    for lv, n in (words_moved or {}).items():
        if lv in element_bits:
            out[f"pad_bits.{lv}"] = n * design.arch.level(lv).width_bits - element_bits[lv]
    return out


def _strides(v, arr) -> tuple[np.ndarray, np.ndarray]:
    """(G,) the elements each mapped loop's step moves the array's flattened address by (a fused loop: its
    innermost member that indexes the array), and (B, G) the iterations of that kernel loop within a tile
    (``llmulator.words``)."""
    flat = flat_strides(arr.coefs, arr.shape, v.t_loops.shape[1])
    stride = np.zeros(len(v.groups), dtype=np.int64)
    extent = v.t.copy()
    for g, members in enumerate(v.groups):
        for li in reversed(members):
            if flat[li]:
                stride[g] = flat[li]
                extent[:, g] = np.minimum(v.t_loops[:, li], v.t[:, g])
                break
    if any(arr.indirect_dims):
        stride[:] = 0
    return stride, extent


def throttle(design: Design, traffic: dict[str, np.ndarray], compute: np.ndarray) -> dict[str, np.ndarray]:
    """Cycles of B mappings of a nest: compute, tile transfers and every level's bandwidth time combined
    as hlsim combines them (``llmulator.traffic.nest_time``), and whether the tiles fit every level."""
    arch = design.arch
    out: dict[str, np.ndarray] = {}
    valid = np.ones(compute.shape[0], dtype=bool)
    bw = np.zeros(compute.shape[0])
    for lv in arch.memory:
        bits = moved_bits(traffic, lv.name)
        cyc = level_cycles(design, lv, bits)
        out[f"cycles.{lv.name}"] = cyc
        bw = np.maximum(bw, cyc)
        if lv.capacity_kib is not None:
            cap = lv.capacity_bits * lv.instances
            nb = traffic[f"need_bits.{lv.name}"]
            valid &= nb <= cap
            out[f"occupancy.{lv.name}"] = nb / cap
    transfer = traffic["transfer_cycles"]
    exposed = np.broadcast_to(traffic.get("exposed_cycles", 0.0), np.shape(compute))
    total = nest_time(design, compute, transfer, bw, exposed)
    out["cycles"] = total
    out["exposed_cycles"] = exposed
    out["stall_cycles"] = total - compute
    out["transfer_cycles"] = transfer
    out["bandwidth_cycles"] = bw
    out["valid"] = valid
    return out


def explain_stall(design: Design, compute: float, transfer: float, bandwidth: dict[str, float],
                  exposed: float = 0.0) -> dict[str, float]:
    """Why a nest takes longer than its compute: the cycles its tile transfers (not hidden behind
    compute: ``transfer``) or its busiest memory level's bandwidth (``bandwidth.<level>``) add."""
    total = nest_time(design, compute, transfer, max(bandwidth.values(), default=0.0), exposed)
    if total <= compute:
        return {}
    hidden = overlapped(design)
    by_transfer = (max(compute + exposed, transfer) if hidden else compute + transfer) - compute
    busiest = max(bandwidth, key=bandwidth.get) if bandwidth else None
    out = {}
    if by_transfer > 0:
        out["transfer"] = by_transfer
    rest = total - compute - by_transfer
    if rest > 0 and busiest is not None:
        out[f"bandwidth.{busiest}"] = rest
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
