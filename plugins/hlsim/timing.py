"""Timing constants of an instrumented design for one hardware variant.

Everything here is static (schedules of loop bodies); everything dynamic
(trip counts, branch outcomes) is counted by the compiled binary. The two
meet in ``T``: three numbers per site, written to a file the binary reads at
start-up, so a new architecture needs new constants but no new compile.
"""

from __future__ import annotations

import math

import numpy as np
from llmulator.design import Design

from . import schedule as sch
from .instrument import Instrumented, Site

NO_GROUPS = 1e18  # a region whose iterations all run in one group (fully unrolled)


def model_nodes(design: Design, model: list, trips) -> int:
    total = 0
    for e in model:
        if e[0] == "stmt":
            total += len(e[1].dag) + 1
        elif e[0] == "branch":
            total += (len(e[1].dag) if e[1] is not None else 0) + model_nodes(design, e[2] + e[3], trips)
        else:
            total += int(math.ceil(trips(e[1], e[2]))) * model_nodes(design, e[3], trips)
    return total


def model_statements(model: list, out: list) -> list:
    for e in model:
        if e[0] == "stmt":
            out.append(e[1])
        elif e[0] == "branch":
            if e[1] is not None:
                out.append(e[1])
            model_statements(e[2] + e[3], out)
        else:
            model_statements(e[3], out)
    return out


class Timing:
    """Per-site constants T (3 per site) and the static facts behind them."""

    def __init__(self, design: Design, inst: Instrumented):
        self.d = design
        self.inst = inst
        self.info: dict[int, dict[str, float]] = {}
        self.T = np.zeros(3 * len(inst.sites) if inst.sites else 3)
        for s in inst.sites:
            self.T[3 * s.id: 3 * s.id + 3] = self._site(s)

    def trips(self, kl: str | None, is_tile: bool) -> float:
        """Trips of a loop inside a region, as mapped: tile loops over tiles, point loops over a tile."""
        if kl is None:
            return 1.0
        lm = self.d.mapping.loop(kl)
        full = self.d.trips(kl)
        if is_tile:
            return math.ceil(full / lm.tile) if lm.tile else 1.0
        if lm.tile is not None and lm.tile < full:
            return float(lm.tile)
        return full

    def _site(self, s: Site) -> tuple[float, float, float]:
        d = self.d
        if s.kind == "loop":
            return (0.0 if s.in_region else 1.0, 0.0, 1.0)
        if s.kind in ("block", "cond"):
            if s.in_region or not s.stmts:
                return (0.0, 0.0, 1.0)
            g = sch.GraphBuilder(d)
            for st in s.stmts:
                g.add_statement(st)
            depth = sch.list_schedule(d, g.nodes).depth
            self.info[s.id] = {"depth": depth}
            return (float(depth), 0.0, 1.0)
        # regions
        lm = d.mapping.loop(s.loop)
        loop = d.tree.loops[s.loop]
        if s.region == "pipeline":
            u = max(1, lm.unroll or 1)
            sched = self._schedule(s.body, u, spatial_self=bool(lm.spatial))
            ii = sch.initiation_interval_from(d, loop, sched, lm.pipeline_ii,
                                              model_statements(s.body, []), in_pe=_has_spatial(d, s))
            depth = sched.depth + self._systolic_fill(s)
            self.info[s.id] = {"depth": depth, "units": u, **ii}
            return (float(depth), float(ii["ii"]), float(u))
        if s.region == "spatial":
            sched = self._schedule(s.body, int(math.ceil(self.trips(s.loop, False))), spatial_self=True)
            depth = sched.depth + self._systolic_fill(s)
            self.info[s.id] = {"depth": depth}
            return (float(depth), 0.0, NO_GROUPS)
        u = max(1, lm.unroll or 1)
        sched = self._schedule(s.body, u, spatial_self=False)
        cost = sched.depth + 1.0
        self.info[s.id] = {"depth": sched.depth, "units": u}
        return (cost, cost, float(u))

    def _schedule(self, body: list, copies: int, spatial_self: bool) -> sch.Schedule:
        d = self.d
        n = model_nodes(d, body, self.trips) * copies
        g = sch.GraphBuilder(d)
        g.port_free = spatial_self
        if n > sch.MAX_NODES:
            g.add_model(body, self.trips)
            one = sch.list_schedule(d, g.nodes)
            return sch.Schedule(one.depth, one.uses.__class__({k: v * copies for k, v in one.uses.items()}),
                                one.peak, one.nodes * copies)
        for _ in range(copies):
            g.add_model(body, self.trips)
        return sch.list_schedule(d, g.nodes)

    def _systolic_fill(self, s: Site) -> float:
        """Skew (R + C - 2) plus a stationary-operand preload (R) on a systolic array, per region entry."""
        pe = self.d.arch.pe_array
        if pe is None or pe.interconnect != "systolic" or not _has_spatial(self.d, s):
            return 0.0
        var = self.d.tree.loops[s.loop].var
        temporal = {var} if not self.d.mapping.loop(s.loop).spatial else set()
        stationary = False
        for st in model_statements(s.body, []):
            for a in st.accesses:
                if a.is_read and self.d.workload.arrays[a.array].role == "in" and not (a.loop_vars() & temporal):
                    stationary = True
        return float(pe.rows + pe.cols - 2 + (pe.rows if stationary else 0))


def _has_spatial(design: Design, s: Site) -> bool:
    if s.loop and design.mapping.loop(s.loop).spatial:
        return True

    def rec(model):
        for e in model:
            if e[0] == "loop":
                if e[1] and not e[2] and design.mapping.loop(e[1]).spatial:
                    return True
                if rec(e[3]):
                    return True
            elif e[0] == "branch" and (rec(e[2]) or rec(e[3])):
                return True
        return False
    return rec(s.body)
