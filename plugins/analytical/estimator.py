"""The analytical estimator: Timeloop/Accelergy-style, static, fast, and exposes its terms.

Per top-level loop nest: compute cycles from the PE-array model (nests with
spatially bound loops) or the HLS pipeline model (other nests); per-level
traffic from tile footprints and reuse; bandwidth-throttled cycles = max of
compute and every level's transfer time; energy = counts x energy per action
+ leakage x time; area = roll-up of units and memories. Nests run one after
another, or overlapped under ``dataflow``. No torch, no compilation.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence

import attrs
import numpy as np
from llmulator import banks, dataflow_tasks, traffic
from llmulator.area import allocated_area
from llmulator.design import Design
from llmulator.energy import energy
from llmulator.expected_cycles import expected_cycles
from llmulator.instrument import instrumented
from llmulator.results import Estimate
from llmulator.timing import Timing
from llmulator.variant_trips import variant_moves
from llmulator.words import moved_bits

from . import model, top_statements

# 0.3: arrays declared in the kernel are accesses of their own in the schedule; break and return end loops early
# 0.4: ws/is PE folds +1 cycle, os folds drain R without a 2nd PE accumulator; PE area/energy from measured PEs
# 0.5: a nest on a systolic array pays the array's I/O registers once (nest.array_io_cycles, 4 cycles)
# 0.6: a PE array's operand streams cost their level's bandwidth in whole words (llmulator.words)
# 0.7: ... and the lanes' lines also serve a packed window sliding along the word (conv inputs)
# 0.8: ... but a lane's line is its own: packing and a line do not multiply (0.7 under-counted windows)
# 0.9: a PE array waits for its banked buffers (llmulator.banks; one design at a time, not evaluate_batch)
# 0.10: a top-level statement's operations and accesses cost energy (before, only its cycles counted)
# 0.11: a branch on an input element takes its share from the declared distribution (llmulator.branch_inputs)
# 0.12: a loop over one row of a declared csr structure is priced row by row (llmulator.structure_trips)
# 0.13: a while loop whose control the declared inputs drive runs it on draws of them (llmulator.while_inputs)
# 0.14: ... also against a parenthesised constant (``a0[i] > (-0.5f)``, as C printers write a negative literal)
# 0.15: any other branch whose condition reads scalars and declared inputs: its share of draws (input_trips)
# 0.16: ... also a branch in the body of such a loop, counted on the trips that reach it
# 0.17: ... and loops and branches under branches, on the entries that take the branches' sides
# 0.18: a branch on a scalar the kernel carries across trips takes its share from one run of the kernel's scalar
#       control (llmulator.scalar_control); an index condition under a data branch, its share of draws; what follows
#       a top-level loop with a ``return`` runs on the share of runs it does not end (input_trips.input_return_share)
# 0.19: ... and a loop before it that sets one of its scalars, or one inside its slice, runs on the lanes too
# 0.20: a PE-array nest's buffers carry the words its bank schedule moves (llmulator.banks.schedule), as hlsim
#       0.10 charges them, not the closed-form word bound (the batch path keeps the bound)
# 0.21: the closed-form word bound (batch path, and nests the schedule cannot replay) lets strided lanes share
#       words and runs a line on across loops that continue it (llmulator.words): no longer above the schedule's
#       words on a stride-2 convolution's weights (dse's batch rows were up to 1.08x their exact cycles there)
# 0.22: ... and a walk the loop around it may bring back to the lane's word is charged the element bits
# 0.23: ... a walk's first fetch is free where the loop that starts it, or the next fold, may leave the lane in
#       its word (the dse batch rows of a stride-2 convolution on 32- to 256-bit buffers: none above the
#       one-design path's words)
# 0.24: ... also after a run that starts on a stride of a word or more
# 0.25: ... and PE-array energy on a measured table: the clock of the PE's own flip-flops in every cycle where the
#       data is narrower than the PE (llmulator.pecost; conv2d on int16 PEs)
# 0.26: ... lanes that run on across two spatial loops share words together (llmulator.words)
# 0.27: ... a stationary lane's word across folds; lanes and steps at two strides: at least a word per walk
# 0.28: ... and the buffer periphery of a systolic PE array on a measured table (llmulator.periphery; osu018)
# 0.29: ... and the buffers' crossbar in area (crosspoints x the measured xbar_in / xbar_out crosspoint; osu018);
#       the note on output-stationary folds that overlap their drain with a shadow accumulator
# 0.30: a `continue` skips the rest of its loop's body (cycles and operations follow the branch's share; the
#       control run on input draws follows it too, so a loop with `continue` and an early `return` needs no hint);
#       a do-while loop counted (hlsim 0.21)
# 0.31: `x = x + a*b` (and `a*b + x`, `x - a*b`) is one mac, as `x += a*b` is (hlsim 0.22); the control run on
#       input draws divides only on the lanes C runs the division on (Euclid's `v = t % v` on a lane whose loop
#       ended, `b ? a / b : 0`): such loops were left to their hint
# 0.32: branches predicated and temp arrays on chip as hlsim 0.23; two branches of one condition text each take
#       their own probability (the instrumented sites shared the first one's); a loop whose bounds follow a loop
#       only the run counts (`for (j = i*i; j < N; j += i)` in `for (i = 2; i*i < N; i++)`) reads its own hint;
#       a single-step PE-array stream as hlsim 0.23
# 0.33: edge tiles move the elements they hold (hlsim 0.24)
# 0.34: `k++` and constant folding as hlsim 0.25
# 0.35: a loop entry that ends in a `break` or `return` is not charged the exit test it never runs (as hlsim
#       0.24 counts it), and the statements after a branch that breaks or returns run on the other share only
# 0.36: top-level statements' DRAM words, CSR segments and the transposed preload as hlsim 0.26
# 0.37: a loop inside a loop whose trips the data decide runs on that loop's entries in the control run (run
#       lengths: `while (i < N && a[i] == c)` inside `while (i < N)` asked for a hint); `for (;;)` left by break
#       runs on the draws as its `while` form does
# 0.38: transfers by what a nest does, for-head loads and triangular spans as hlsim 0.27
# 0.39-0.44: as hlsim 0.28-0.33 (element reuse, partial writes, recurrences, split macs, leakage, operand bits,
#       variant ranges, loop tests, countdowns, unrolled varying loops); earlier_writes; a break ends its pass
# 0.45: as hlsim 0.34; top-level `if` statements and loops count their operations, accesses and words; overlapped
#       (dataflow) nests share the units and the levels' bandwidth
# 0.46: as hlsim 0.36 (whole SRAM words per scalar access, PE entries by accumulator width, SRAM default
#       energy per bank, skew registers shift on every step the array advances)
# 0.47-0.48: as hlsim 0.37-0.38 (whole bandwidth cycles; wide SRAM elements; producers; a region's exit test)
# 0.49: the exit-test floor only where a test the data decide ends the loop (0.48 put `groups x II` under static
#       loops whose depth is below their II: one cycle an entry)
# 0.50-0.57: as hlsim 0.39-0.46; 0.57: mapping.levels pays the backing store's latency (first read, last write)
# 0.58: a double-buffered level's tiles count twice against its capacity (occupancy; the dse batch path's validity)
# 0.59: as hlsim 0.47 (an output-stationary nest pays its last fold's drain where a shadow accumulator hides the rest)
# 0.60-0.61: as hlsim 0.48-0.49 (a counter's test no comparator in a region; loads past a branch; names assigned)
# 0.62-0.65: as hlsim 0.50-0.53 (body-assigned loop variables; inner loops unrolled; write energy; forwarding)
# 0.66-0.68: as hlsim 0.54-0.56 (the copies of an unrolled body share loaded and stored elements; dead stores)
# 0.69-0.70: as hlsim 0.57; a triangular loop in tiles runs each entry's own tiles (5, 4, ..., 0 in tiles of 2: 9)
# 0.71-0.84: as hlsim 0.58-0.71 (fold recurrences; a large body's banks; dataflow tasks; tiles; exit tests)
# 0.85-0.86: a triangle's trips over the entries its index-only `if`s let through (as hlsim 0.72-0.73)
# 0.87-0.89: as hlsim 0.74-0.76 (parameter strides; a triangle under an early exit; diagonals; triangle tiles)
# 0.90: a variant's scalars move a hint over undeclared inputs (variant_trips); 0.91-0.94: as hlsim 0.77-0.80
VERSION = "0.94"
# advances of the bank schedule replayed per design (hlsim replays 10x more): ~10-100 ms, within ~5 % of hlsim
BANK_BUDGET = 3000

_MEMO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # design object -> its estimate


def _copy(e: Estimate) -> Estimate:
    """A copy a caller may change without changing the memo."""
    return attrs.evolve(e, metrics=dict(e.metrics), breakdown=dict(e.breakdown), terms=dict(e.terms),
                        notes=list(e.notes), confidence=None if e.confidence is None else dict(e.confidence),
                        interval=None if e.interval is None else dict(e.interval))


class AnalyticalEstimator:
    name = "analytical"
    version = VERSION

    def available(self) -> str | None:
        return None

    def estimate(self, designs: Sequence[Design]) -> list[Estimate]:
        return [_copy(self._memo(d)) for d in designs]

    def _memo(self, d: Design) -> Estimate:
        """The estimate of ``d``, computed once per design object: the ``llm`` estimator reads it as its prior
        right after ``estimate`` printed it (a Design does not change; a design it cannot price raises each time)."""
        e = _MEMO.get(d)
        if e is None:
            e = _MEMO[d] = self._one(d)
        return e

    # -- one design ---------------------------------------------------------------------------
    def _one(self, d: Design) -> Estimate:
        t0 = time.perf_counter()
        arch = d.arch
        inst = instrumented(d)
        timing = Timing(d, inst)
        expected = expected_cycles(d, inst, timing)
        terms = {"ideal_cycles": 0.0, "under_utilisation_cycles": 0.0, "fill_drain_cycles": 0.0,
                 "stall_cycles": 0.0, "compute_cycles": 0.0}
        breakdown: dict[str, float] = {}
        notes: list[str] = list(timing.notes)
        notes.extend(n for n in expected.notes if n not in notes)
        notes.extend(variant_notes(d))
        notes.extend(declared_input_notes(d))
        ops_total: dict[str, float] = {}
        traffic_total: dict[str, float] = {}
        nest_cycles: list[float] = []
        nest_compute: list[float] = []  # their issuing part (``dataflow_tasks.shared_path``)
        loads = stores = 0.0
        array_steps = 0.0  # the cycles a PE array advances: its nests' compute without bank waits (as hlsim)
        runs = 1.0  # the share of runs that get this far: a ``return`` in an earlier loop ended the others
        for k, top_label in enumerate(inst.nest_loops):
            compute = expected.cycles[k]
            if top_label is None:  # a top-level statement: run once, its accesses at their arrays' levels
                own_ops: dict[str, float] = {}
                own_traffic: dict[str, float] = {}
                ld, st = top_statements.count(d, inst.trees[k], own_ops, own_traffic)
                moves, lld, lst, exposed = top_statements.loops(d, inst.trees[k], own_ops, own_traffic,
                                                                    timing.copy_shares)
                ld, st = ld + lld, st + lst
                cyc, serial = top_statements.cycles(d, inst.trees[k], compute, own_traffic, moves, exposed)
                nest_cycles.append(cyc * runs)
                nest_compute.append(serial * runs)
                terms["compute_cycles"] += compute * runs
                terms["ideal_cycles"] += compute * runs
                terms["stall_cycles"] += (cyc - compute) * runs
                for acc, own in ((ops_total, own_ops), (traffic_total, own_traffic)):
                    for key, v in own.items():
                        acc[key] = acc.get(key, 0.0) + v * runs
                loads += ld * runs
                stores += st * runs
                continue
            node = d.tree.loops[top_label]
            nest = traffic.nest_of(d, node, timing.copy_shares)
            notes.extend(n for n in nest.notes if n not in notes)
            maps = traffic.mappings_from_design(d, nest)
            spatial = bool((maps.spatial > 0).any())
            if spatial:
                model.require_spatial_band(d, nest)
                comp = model.spatial_compute(d, nest, maps)
                array_steps += compute * runs
                terms["ideal_cycles"] += float(comp["ideal_cycles"][0]) * runs
                terms["fill_drain_cycles"] += float(comp["fill_drain_cycles"][0]) * runs
                # PEs idle (partial folds) and the pipeline latency paid once per nest
                terms["under_utilisation_cycles"] += (compute - float(comp["ideal_cycles"][0]) -
                                                      float(comp["fill_drain_cycles"][0])) * runs
                breakdown[f"utilisation.{node.label}"] = float(comp["ideal_cycles"][0]) / max(compute, 1e-9)
                breakdown[f"folds.{node.label}"] = float(comp["folds"][0])
                # the array waiting for its banked buffers: the memory system's schedule, as hlsim replays it
                sched = banks.schedule(d, BANK_BUDGET) if len(inst.nest_loops) == 1 else None
                if sched is not None and sched.waits:
                    breakdown[f"bank_wait_cycles.{node.label}"] = sched.waits
                    terms["bank_wait_cycles"] = terms.get("bank_wait_cycles", 0.0) + sched.waits * runs
                    compute += sched.waits
            else:
                sched = None
                terms["ideal_cycles"] += compute * runs
            # the words the schedule moves, where it ran: the bandwidth the buffers carry (as hlsim charges it)
            level = model.memory_traffic(d, nest, maps, spatial, sched.words if sched is not None else None)
            thr = model.throttle(d, level, np.array([compute]))  # the batch path's rule, with B = 1
            transfer = float(thr["transfer_cycles"][0])
            bw = {lv.name: float(thr[f"cycles.{lv.name}"][0]) for lv in arch.memory}
            cyc = float(thr["cycles"][0])
            terms["compute_cycles"] += compute * runs
            terms["stall_cycles"] += (cyc - compute) * runs
            for cause, v in model.explain_stall(d, compute, transfer, bw, float(thr["exposed_cycles"][0])).items():
                breakdown[f"stall_cycles.{node.label}.{cause}"] = v
            breakdown[f"cycles.{node.label}"] = cyc
            breakdown[f"compute_cycles.{node.label}"] = compute
            breakdown[f"transfer_cycles.{node.label}"] = transfer
            for lv in arch.memory:
                breakdown[f"cycles.{node.label}.{lv.name}"] = bw[lv.name]
                if f"occupancy.{lv.name}" in thr:
                    breakdown[f"occupancy.{node.label}.{lv.name}"] = float(thr[f"occupancy.{lv.name}"][0])
            nest_cycles.append(cyc * runs)
            exposed = float(thr["exposed_cycles"][0])
            nest_compute.append(dataflow_tasks.issuing_span(d, compute, transfer, exposed) * runs)
            for key, v in nest.ops.items():
                ops_total[key] = ops_total.get(key, 0.0) + v * runs
            for key, v in level.items():
                if key not in ("transfer_cycles", "exposed_cycles"):
                    traffic_total[key] = traffic_total.get(key, 0.0) + float(v[0]) * runs
            loads += nest.load_bits * runs
            stores += nest.store_bits * runs
            returned = d.return_share(top_label)
            if returned:
                breakdown[f"return_share.{node.label}"] = returned
                runs *= 1.0 - returned
        if d.mapping.dataflow and len(nest_cycles) > 1:
            # overlapped nests still share the units and every level's bandwidth (as hlsim's bound; analytical
            # 0.45: before, the longest nest alone, below what the design's DRAM words need)
            ops_on = arch.operators
            shared = [n / ops_on[c].count for c, n in ops_total.items() if c in ops_on and c != "select"]
            shared += [float(traffic.level_cycles(d, lv, moved_bits(traffic_total, lv.name))) for lv in arch.memory]
            cycles = max(dataflow_tasks.shared_path(nest_cycles, dataflow_tasks.waits_for(inst), expected.busy,
                                                    expected.rate, nest_compute),
                         float(traffic.whole_cycles(max(shared, default=0.0))))
            terms["dataflow_overlap_cycles"] = sum(nest_cycles) - cycles
        else:
            cycles = sum(nest_cycles)
        # pipelined loops running slower than the mapping asked: cycles lost, per loop and cause
        for key, v in expected.stalls.items():
            breakdown[f"ii_stall_cycles.{key}"] = v
        if expected.stalls:
            terms["ii_stall_cycles"] = sum(expected.stalls.values())
        for s in inst.sites:
            if s.kind == "region" and s.region != "array":
                for key, v in timing.info.get(s.id, {}).items():
                    breakdown[f"{key}.{s.loop}"] = float(v)
                breakdown[f"trips.{s.loop}"] = d.trips(s.loop)
        tr = {key: np.array([v]) for key, v in traffic_total.items()}
        for lv in arch.memory:
            for key in ("read_bits", "write_bits", "need_bits"):
                tr.setdefault(f"{key}.{lv.name}", np.zeros(1))
        area_um2, ar, units = allocated_area(d, inst, timing)
        en = energy(d, ops_total, tr, np.array([cycles]), datapath=(loads, stores), units=units,
                    array_steps=array_steps)
        for lv in arch.memory:
            breakdown[f"reads.{lv.name}"] = traffic_total.get(f"reads.{lv.name}", 0.0)
            breakdown[f"writes.{lv.name}"] = traffic_total.get(f"writes.{lv.name}", 0.0)
        for key, v in en.items():
            if key != "energy_pj":
                breakdown[key] = float(v[0])
        for key, v in ar.items():
            breakdown[key] = float(v)
        for key, v in ops_total.items():
            breakdown[f"ops.{key}"] = v
        energy_pj = float(en["energy_pj"][0])
        metrics = {"cycles": float(cycles), "energy_pj": energy_pj,
                   "power_mw": energy_pj * arch.clock_mhz / cycles * 1e-3 if cycles > 0 else 0.0,
                   "area_um2": float(area_um2), "latency_us": cycles / arch.clock_mhz}
        if d.mapping.levels:  # multi-level tiling: the nest analysis's figures (plugins/analytical/tiling.py)
            from . import tiling
            tiling.apply(d, metrics, terms, breakdown, notes)
        return Estimate(estimator=self.name, version=self.version, metrics=metrics, terms=terms,
                        breakdown=breakdown, seconds=time.perf_counter() - t0, design=d.name, notes=notes)

    # -- many mappings of one design, vectorised -------------------------------------------------
    def evaluate_batch(self, d: Design, tiles: np.ndarray, spatial: np.ndarray | None = None,
                       order: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Metrics for B mappings of a single-nest design at once.

        ``tiles`` is (B, L) over the nest's loops (``nest_labels(d)``, outermost
        first); ``spatial`` (B, L) holds 0 (temporal), 1 (PE rows) or 2 (PE cols);
        ``order`` (B, L) the position of each loop in the mapping sequence, tile and point loops alike (0 =
        outermost). Returns arrays of shape (B,): cycles, energy_pj, power_mw,
        area_um2, valid (tiles fit every level), exact, and the model's terms.

        ``exact`` is False on the rows that bind loops to the PE array: their waits for the banked
        buffers (``llmulator.banks``, a replay of the memory system's schedule, ~5-100 ms a mapping)
        are not in this path, so their cycles and energy are lower bounds of ``estimate``'s (waits
        only add cycles, and energy grows with cycles). ``llmulator dse`` re-prices the rows it ranks
        first with ``estimate`` until the ranking it reports is the one-design path's.
        """
        inst = instrumented(d)
        timing = Timing(d, inst)
        nest = self._single_nest(d, timing.copy_shares)
        B, L = tiles.shape
        if L != len(nest.labels):
            raise ValueError(f"tiles must have {len(nest.labels)} columns ({', '.join(nest.labels)})")
        spatial = np.zeros((B, L), dtype=int) if spatial is None else spatial
        order = np.tile(np.arange(L), (B, 1)) if order is None else order
        maps = traffic.BatchMappings(np.asarray(tiles, dtype=float), spatial, order)
        if (spatial > 0).any():
            model.require_spatial_band(d, nest)
            comp = model.spatial_compute(d, nest, maps)
            compute = comp["compute_cycles"]
        else:
            # the pipeline schedule of the design's own mapping (tiles of a nest off the PE array move
            # data, not the schedule of its body)
            compute = np.full(B, expected_cycles(d, inst, timing).cycles[0])
            comp = {}
        use_sp = (spatial > 0).any(axis=1)
        level = model.memory_traffic(d, nest, maps, spatial=bool(use_sp.any()))
        thr = model.throttle(d, level, compute)
        area_um2, _, units = allocated_area(d, inst, timing)  # the units the design's schedules allocate
        en = energy(d, nest.ops, level, thr["cycles"], datapath=(nest.load_bits, nest.store_bits), units=units,
                    array_steps=np.where(use_sp, compute, 0.0))
        pe = d.arch.pe_array
        if pe is not None:
            rows = np.where(spatial == 1, tiles, 1).prod(axis=1)
            cols = np.where(spatial == 2, tiles, 1).prod(axis=1)
            fits = (rows <= pe.rows) & (cols <= pe.cols)
        else:
            fits = ~use_sp
        cycles = thr["cycles"]
        out = {"cycles": cycles, "energy_pj": en["energy_pj"], "area_um2": np.full(B, area_um2),
               "power_mw": en["energy_pj"] * d.arch.clock_mhz / np.maximum(cycles, 1e-9) * 1e-3,
               "valid": thr["valid"] & fits, "stall_cycles": thr["stall_cycles"], "compute_cycles": compute,
               "exact": ~use_sp}
        out.update({k: v for k, v in comp.items() if isinstance(v, np.ndarray)})
        return out

    def nest_labels(self, d: Design) -> list[str]:
        return self._single_nest(d).labels

    def _single_nest(self, d: Design, shares: dict | None = None) -> model.Nest:
        tops = d.tree.top_loops()
        if len(tops) != 1 or len(d.tree.roots) != 1:
            raise ValueError("evaluate_batch needs a workload with a single top-level loop nest")
        if d.mapping.levels:  # the nest analysis prices it (estimate); before 0.57 dse's batch took the flat loops
            raise ValueError("evaluate_batch does not price multi-level tiling (mapping.levels)")
        return traffic.nest_of(d, tops[0], shares)


def variant_notes(d: Design) -> list[str]:
    """A static model sees an input variant through its hints, except where it prices the control from the declared
    inputs or moves a hint with the variant's scalars: say so where the variant leaves the base's expectation."""
    if d.variant is None:
        return []
    own = ((d.workload.inputs or {}).get("variants", {}).get(d.variant, {}) or {}).get("hints", {})
    missing = []
    for n in d.tree.walk():
        kind, label = getattr(n, "kind", ""), getattr(n, "label", None)
        dependent = (kind == "loop" and (n.data_dependent or n.is_while) and d.trip_profile(label) is None) or \
            (kind == "branch" and n.data_dependent and id(n) not in d._input_branches)
        if dependent and label and label not in own and not variant_moves(d, n):
            missing.append(label)
    if not missing:
        return []
    return [f"input variant '{d.variant}' gives no hint for {', '.join(missing)} (data-dependent): the "
            "estimate uses the workload's base expectation there; add the variant's expected values under "
            f"inputs.variants.{d.variant}.hints"]


def declared_input_notes(d: Design) -> list[str]:
    """Which data-dependent loops and hinted branches are priced from the inputs the workload declares rather
    than from a hint (``Design.trip_profile``: a csr structure, or the loop's control run on draws;
    ``Design.branch_probability``), with what it found and the hint it did not read: a user who wrote a hint
    learns why the estimate does not follow it."""
    from llmulator.structure_trips import csr_row_loop
    out = []
    for label, loop in d.tree.loops.items():
        if not (loop.data_dependent or loop.is_while):
            continue
        profile = d.trip_profile(label)
        if profile is None:
            continue
        mean = sum(profile) / len(profile) if profile else 0.0
        hint = d.hints.get(label, {}).get("expected_trips")
        unread = f"; its expected_trips hint ({hint}) is not read" if hint is not None else ""
        how = ("the row lengths of the declared csr structure" if csr_row_loop(d.workload, d.tree, label, d.variant)
               else f"its control run on {len(profile)} lanes (entries of the enclosing loops x draws of the "
               "declared inputs)")
        out.append(f"{label}: {mean:.3g} trips per entry on average, from {how}{unread}")
    for n in d.tree.walk():  # branches whose hint the declared inputs overrule
        if getattr(n, "kind", "") == "branch" and n.label and id(n) in d._input_branches:
            hint = d.hints.get(n.label, {}).get("taken_probability")
            if hint is not None:
                out.append(f"{n.label}: taken {d._input_branches[id(n)]:.3g} of the time, from the distributions "
                           f"its condition reads; its taken_probability hint ({hint}) is not read")
    return out
