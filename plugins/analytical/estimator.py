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
from collections.abc import Sequence

import numpy as np
from llmulator.design import Design
from llmulator.results import Estimate

from . import model
from .pipeline import PipelineModel, stmt_depth

VERSION = "0.1"


class AnalyticalEstimator:
    name = "analytical"
    version = VERSION

    def available(self) -> str | None:
        return None

    def estimate(self, designs: Sequence[Design]) -> list[Estimate]:
        return [self._one(d) for d in designs]

    # -- one design ---------------------------------------------------------------------------
    def _one(self, d: Design) -> Estimate:
        t0 = time.perf_counter()
        arch = d.arch
        pm = PipelineModel(d)
        terms = {"ideal_cycles": 0.0, "under_utilisation_cycles": 0.0, "fill_drain_cycles": 0.0,
                 "stall_cycles": 0.0, "compute_cycles": 0.0}
        breakdown: dict[str, float] = {}
        notes: list[str] = []
        ops_total: dict[str, float] = {}
        traffic_total: dict[str, float] = {}
        nest_cycles: list[float] = []
        loads = stores = 0.0
        for node in d.tree.roots:
            if not hasattr(node, "band"):
                c = float(stmt_depth(d, node.cond if node.kind == "branch" else node)) if node.kind != "jump" else 0
                nest_cycles.append(c)
                continue
            nest = model.nest_of(d, node)
            notes.extend(n for n in nest.notes if n not in notes)
            maps = model.mappings_from_design(d, nest)
            spatial = bool((maps.spatial > 0).any())
            if spatial:
                model.require_spatial_band(d, nest)
                comp = model.spatial_compute(d, nest, maps)
                compute = comp["compute_cycles"]
                for k in ("ideal_cycles", "under_utilisation_cycles", "fill_drain_cycles"):
                    terms[k] += float(comp[k][0])
                breakdown[f"utilisation.{node.label}"] = float(comp["utilisation"][0])
                breakdown[f"folds.{node.label}"] = float(comp["folds"][0])
            else:
                c = pm.loop_cycles(node)
                compute = np.array([c])
                terms["ideal_cycles"] += c
            traffic = model.memory_traffic(d, nest, maps, spatial)
            thr = model.throttle(d, traffic, compute)
            cyc = float(thr["cycles"][0])
            terms["compute_cycles"] += float(compute[0])
            terms["stall_cycles"] += float(thr["stall_cycles"][0])
            breakdown[f"cycles.{node.label}"] = cyc
            for lv in arch.memory:
                breakdown[f"cycles.{node.label}.{lv.name}"] = float(thr[f"cycles.{lv.name}"][0])
            nest_cycles.append(cyc)
            for k, v in nest.ops.items():
                ops_total[k] = ops_total.get(k, 0.0) + v
            for k, v in traffic.items():
                traffic_total[k] = traffic_total.get(k, 0.0) + float(v[0])
            loads += nest.loads
            stores += nest.stores
        notes.extend(n for n in pm.notes if n not in notes)
        if d.mapping.dataflow and len(nest_cycles) > 1:
            cycles = max(nest_cycles)
            terms["dataflow_overlap_cycles"] = sum(nest_cycles) - cycles
        else:
            cycles = sum(nest_cycles)
        for label, info in pm.loop_info.items():
            for k, v in info.items():
                breakdown[f"{k}.{label}"] = float(v)
        tr = {k: np.array([v]) for k, v in traffic_total.items()}
        for lv in arch.memory:
            for k in ("read_bits", "write_bits", "need_bits"):
                tr.setdefault(f"{k}.{lv.name}", np.zeros(1))
        en = model.energy(d, ops_total, tr, np.array([cycles]), datapath=(loads, stores))
        ar = model.area(d)
        for lv in arch.memory:
            breakdown[f"reads.{lv.name}"] = traffic_total.get(f"reads.{lv.name}", 0.0)
            breakdown[f"writes.{lv.name}"] = traffic_total.get(f"writes.{lv.name}", 0.0)
        for k, v in en.items():
            if k != "energy_pj":
                breakdown[k] = float(v[0])
        for k, v in ar.items():
            if k != "area_um2":
                breakdown[k] = float(v)
        for k, v in ops_total.items():
            breakdown[f"ops.{k}"] = v
        energy_pj = float(en["energy_pj"][0])
        metrics = {"cycles": float(cycles), "energy_pj": energy_pj,
                   "power_mw": energy_pj * arch.clock_mhz / cycles * 1e-3 if cycles > 0 else 0.0,
                   "area_um2": float(ar["area_um2"]), "latency_us": cycles / arch.clock_mhz}
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
        area_um2, valid (tiles fit every level), and the model's terms.
        """
        nest = self._single_nest(d)
        B, L = tiles.shape
        if L != len(nest.labels):
            raise ValueError(f"tiles must have {len(nest.labels)} columns ({', '.join(nest.labels)})")
        spatial = np.zeros((B, L), dtype=int) if spatial is None else spatial
        order = np.tile(np.arange(L), (B, 1)) if order is None else order
        maps = model.BatchMappings(np.asarray(tiles, dtype=float), spatial, order)
        if (spatial > 0).any():
            model.require_spatial_band(d, nest)
            comp = model.spatial_compute(d, nest, maps)
            compute = comp["compute_cycles"]
        else:
            compute = np.full(B, PipelineModel(d).loop_cycles(nest.top))
            comp = {}
        use_sp = (spatial > 0).any(axis=1)
        traffic = model.memory_traffic(d, nest, maps, spatial=bool(use_sp.any()))
        thr = model.throttle(d, traffic, compute)
        en = model.energy(d, nest.ops, traffic, thr["cycles"], datapath=(nest.loads, nest.stores))
        ar = model.area(d)
        pe = d.arch.pe_array
        if pe is not None:
            rows = np.where(spatial == 1, tiles, 1).prod(axis=1)
            cols = np.where(spatial == 2, tiles, 1).prod(axis=1)
            fits = (rows <= pe.rows) & (cols <= pe.cols)
        else:
            fits = ~use_sp
        cycles = thr["cycles"]
        out = {"cycles": cycles, "energy_pj": en["energy_pj"], "area_um2": np.full(B, ar["area_um2"]),
               "power_mw": en["energy_pj"] * d.arch.clock_mhz / np.maximum(cycles, 1e-9) * 1e-3,
               "valid": thr["valid"] & fits, "stall_cycles": thr["stall_cycles"], "compute_cycles": compute}
        out.update({k: v for k, v in comp.items() if isinstance(v, np.ndarray)})
        return out

    def nest_labels(self, d: Design) -> list[str]:
        return self._single_nest(d).labels

    def _single_nest(self, d: Design) -> model.Nest:
        tops = d.tree.top_loops()
        if len(tops) != 1 or len(d.tree.roots) != 1:
            raise ValueError("evaluate_batch needs a workload with a single top-level loop nest")
        return model.nest_of(d, tops[0])
