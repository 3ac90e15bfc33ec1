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

# What each version changed: docs/analytical-versions.md (bump VERSION with every change to an estimate).
VERSION = "1.00"
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
