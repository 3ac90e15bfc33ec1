"""Timing constants of an instrumented design for one hardware variant.

Everything here is static (schedules of loop bodies); everything dynamic
(trip counts, branch outcomes) is counted by the compiled binary. The two
meet in ``T``: five numbers per site, written to a file the binary reads at
start-up, so a new architecture needs new constants but no new compile.
The analytical estimator walks the same sites with expected instead of measured
trips (``llmulator.expected_cycles``): the static twin of the run.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from . import costs, modulo
from . import list_schedule as ls
from . import nest as lnest
from . import schedule as sch
from .bank_spread import closed_form_uses
from .copy_reuse import CopyReuse, has_jump, uniform
from .costs import combining_latency, resource_cap
from .design import Design
from .fold_dependences import fold_rec_mii
from .instrument import SLOTS, Instrumented, Site
from .recurrence import recurrence_mii


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
    """Per-site constants T (``SLOTS`` per site: depth or cost, II or test, units or latency, exit test after no
    trip, exit test after one) and the
    static facts behind them."""

    def __init__(self, design: Design, inst: Instrumented):
        self.d = design
        self.inst = inst
        self.info: dict[int, dict[str, float]] = {}
        self.schedules: dict[int, ls.Schedule] = {}  # site -> its body's, block's or test's schedule (for area)
        self.folds: dict[int, dict] = {}  # array region site -> llmulator.nest.fold facts
        self.notes: list[str] = []  # pipelining the mapping asked for that the dependences or resources forbid, and
        # output-stationary drains overlapped with a shadow accumulator
        # (statement id, access) -> the shares of its reads and writes that move memory, where the copies of a
        # region's body share elements (llmulator.copy_reuse): the counts of hlsim's tally and the traffic model
        self.copy_shares: dict[tuple[int, int], tuple[float, float]] = {}
        self._bodies: dict[int, tuple] = {}  # pipelined region site -> (its graph, schedule, II) for its exit test
        self.T = np.zeros(SLOTS * max(len(inst.sites), 1))
        for s in inst.sites:
            self.T[SLOTS * s.id: SLOTS * s.id + 3] = self._site(s)
            self.T[SLOTS * s.id + 3: SLOTS * s.id + 5] = self._exit_test(s)

    def trips(self, kl: str | None, is_tile: bool) -> float:
        """Trips of a loop inside a region, as mapped: tile loops over tiles, point loops over a tile."""
        if kl is None:
            return 1.0
        lm = self.d.mapping.loop(kl)
        full = self.d.trips(kl)
        if not is_tile and (most := self.d.longest_trips(kl, guarded=False)) is not None:
            # unrolled inside a region: as many copies as its longest entry (predicated in the shorter ones); at
            # its mean trips the copies of `for (j = 0; j < i; j++)` chained 4 adds where the last entry chains 7
            full = most
        if is_tile:
            return math.ceil(full / lm.tile) if lm.tile else 1.0
        if lm.tile is not None and lm.tile < full:
            return float(lm.tile)
        return full

    def _site(self, s: Site) -> tuple[float, float, float]:
        d = self.d
        if s.kind == "loop":
            if s.in_region:
                self._unrolled_note(s)
            if s.in_region or s.free:
                return (0.0, 0.0, 1.0)
            # a test the datapath evaluates (a data-dependent bound) takes its schedule, the loop's control cycle
            # included: 1 cycle per iteration, the rest per evaluation (before hlsim 0.31 it took none: a while
            # loop whose test loads and divides cost 1 cycle a trip, its if-break twin 13)
            # (a counter's test, `j < N` of a for loop left by break, is the control's own: free)
            data = [st for st in s.stmts if st.accesses or st.reads_locals]
            sched = ls.list_schedule(d, _graph(d, data).nodes) if data else None
            if sched is not None:
                self.schedules[s.id] = sched  # its units (llmulator.area)
            test = sched.depth if sched is not None else 0
            return (1.0, float(max(test - 1, 0)), 1.0)
        if s.kind in ("block", "cond"):
            if s.in_region or not s.stmts:
                return (0.0, 0.0, 1.0)
            sched = ls.list_schedule(d, _graph(d, s.stmts).nodes)
            self.schedules[s.id], depth = sched, sched.depth
            self.info[s.id] = {"depth": depth}
            return (float(depth), 0.0, 1.0)
        # regions
        lm = d.mapping.loop(s.loop)
        loop = d.tree.loops[s.loop]
        if s.region == "array":
            return self._array(s)
        if s.region == "pipeline":
            u = max(1, lm.unroll or 1)
            sched, rec, g = self._schedule(s.body, u, loop, target=lm.pipeline_ii)
            self.schedules[s.id] = sched
            ii = ls.initiation_interval(d, sched, lm.pipeline_ii, rec)
            if sched.ii > ii["ii"]:  # no legal modulo placement below it (``modulo.modulo_schedule``)
                ii = {**ii, "ii": sched.ii, "slot_mii": sched.ii}
            if g is not None:
                self._bodies[s.id] = (g, sched, int(ii["ii"]))
            self.info[s.id] = {"depth": sched.depth, "units": u, **ii}
            if ii["ii"] > lm.pipeline_ii:
                self.notes.append(_ii_note(s.loop, lm.pipeline_ii, ii, rec[1]))
            return (float(sched.depth), float(ii["ii"]), float(u))
        u = max(1, lm.unroll or 1)
        sched, _, _ = self._schedule(s.body, u, loop, carried=False)
        self.schedules[s.id] = sched
        # each group runs its copies, the partials of a tree reduction meet once after the last (before 2026-12-06
        # every group paid the tree: at U 2 as many cycles as the serial chain; an outside probe)
        cost = sched.depth - sched.exit_tree + 1.0
        self.info[s.id] = {"depth": sched.depth, "units": u}
        return (cost + sched.exit_tree, cost, float(u))

    def _unrolled_note(self, s: Site) -> None:
        """Say so where the mapping pipelines a loop that runs fully unrolled inside another loop's region (an
        HLS tool unrolls what a pipelined or unrolled loop contains): its ``pipeline_ii`` has no effect (before,
        it was dropped without a word; an outside probe)."""
        lm = self.d.mapping.loop(s.loop) if s.loop is not None and s.label == s.loop else None
        region = self.inst.sites[s.region_id] if s.region_id is not None else None
        if lm is None or not lm.pipeline_ii or region is None or region.region not in ("pipeline", "unroll"):
            return  # (a PE-array fold's band takes its II from the band's pipeline_ii)
        outer = region.loop
        note = (f"{s.loop}: pipeline_ii {lm.pipeline_ii} has no effect: the loop runs fully unrolled inside {outer}'s "
                f"{'pipelined' if self.d.mapping.loop(outer).pipeline_ii else 'unrolled'} body; pipeline {outer} or "
                f"drop its unroll to pipeline {s.loop}")
        if note not in self.notes:
            self.notes.append(note)

    def _exit_test(self, s: Site) -> tuple[float, float]:
        """A pipelined or unrolled loop that a test the data decide ends: the cycles of its last evaluation,
        which starts where the next group would (a pipelined `while (k < M && y[k] > 0)` of 0 trips still loads
        y[0] and compares before it is left; before hlsim 0.38 it cost nothing, and the last test after n trips
        was never charged: an outside probe). Two figures: the test of a loop that ran no trip, and the test
        after a trip, whose operands the last group computes (its readers wait for them, less one II: a
        `while (k < N && s * s < T)` whose body computes s late decides when s is ready; hlsim 0.38 started it
        at the next group's slot whatever it read: an outside probe). (0, 0) for other sites."""
        if s.kind == "loop":  # the evaluation that ends it: its control cycle (instrument's FAIL_MARK)
            counted = s.stmts and not s.in_region and not costs.counter_test(s.stmts[0])
            return (1.0, 0.0) if counted else (0.0, 0.0)
        if s.kind != "region" or not s.exits_by_test:
            return 0.0, 0.0
        data = [st for st in s.stmts if st.accesses or st.reads_locals]
        tg = _graph(self.d, data)
        test = float(ls.list_schedule(self.d, tg.nodes).depth) if data else 1.0
        late = test
        release = _test_release(tg, *self._bodies[s.id]) if data and s.id in self._bodies else {}
        if release:
            late = float(ls.list_schedule(self.d, tg.nodes, None, release).depth)
        self.info.setdefault(s.id, {})["exit_test"] = test
        if late > test:
            self.info[s.id]["exit_test_after_trip"] = late
        return test, late

    def _schedule(self, body: list, copies: int, loop, carried: bool = True, target: int = 1
                  ) -> tuple[ls.Schedule, tuple, sch.GraphBuilder | None]:
        """List-schedule the body (``copies`` times, inner loops unrolled), find its recurrences and place the
        consumers of its carried dependences at the II they allow (``modulo.modulo_schedule``; the
        pipeline's ``target`` II); bodies too large to schedule node by node get the closed-form bound instead
        (see ``_bound``; no graph returned)."""
        d = self.d
        n = model_nodes(d, body, self.trips) * copies
        g = sch.GraphBuilder(d, loop if carried else None, copies)
        if n > sch.MAX_NODES:
            return *self._large(body, copies, loop, carried, g), None
        tree = copies > 1 and d.mapping.loop(loop.label).reduction == "tree"
        if not has_jump(loop):
            # what the copies share (llmulator.copy_reuse; a jump: the statement's own runs only); names fixed
            # over a region's iteration: the variables of its loop and the loops around it, parameters, arrays
            fixed = {lp.var for lp in [loop, *loop.ancestors()] if lp.var} | set(d.sizes) | set(d.workload.arrays)
            g.reuse = CopyReuse(frozenset(fixed))
        apart = not uniform(d, loop, copies, region=True)
        for k in range(copies):
            if loop.var is not None:
                # the k-th of the unrolled iterations of the region's loop (a geometric loop's: at no offset)
                g.env[loop.var] = k * loop.step if k == 0 or (loop.step_op == "+" and loop.step_text is None) else None
            if tree:
                g.copy_suffix = f"#{k}"
            if g.reuse is not None and apart and k:
                g.reuse.barrier({})
            if g.reuse is not None and k:
                g.reuse.copy(g.env)
            g.add_model(body, self.trips)
        if g.reuse is not None:
            self.copy_shares.update(g.reuse.shares())
        deps = g.carried() if carried else []
        rec = recurrence_mii(g.nodes, deps) if carried else (1, "")
        sched = ls.list_schedule(d, g.nodes)
        if carried:  # a pipelined body: placed in a modulo reservation table at the II it allows
            ii = int(ls.initiation_interval(d, sched, target, rec)["ii"])
            sched = modulo.modulo_schedule(d, g.nodes, deps, ii)
        if tree:  # the copies' partial results meet in a tree of combining operations on exit
            accs = [st for st in model_statements(body, []) if st.writes_local and st.writes_local in st.reads_locals]
            if accs:
                sched.exit_tree = math.ceil(math.log2(copies)) * max(combining_latency(d, st, tree=True) for st in accs)
                sched.depth += sched.exit_tree
        return sched, rec, g

    def _large(self, body: list, copies: int, loop, carried: bool, g: sch.GraphBuilder) -> tuple[ls.Schedule, tuple]:
        """A body too large to schedule node by node: the closed form of ``_bound``, no shorter than the chains
        its recurrences force (``_chain``: the region's copies chained through what one copy passes the next,
        unless ``reduction: tree`` gives each its own partial, and each inner loop's trips through its own), and
        the RecMII of a group of ``copies`` (one copy's recurrence, per iteration, times the copies it chains).
        Before hlsim 0.42 depth and RecMII came from one copy with every inner loop run once: `s += a[i]`
        unrolled 1,334 times ran in 4,672 cycles where its adds alone chain 16,384 (an outside probe)."""
        if loop.var is not None:
            g.env[loop.var] = 0
        g.add_model(body, lambda kl, is_tile: 1.0)
        sched = self._bound(body, copies, g, loop)
        one = sch.GraphBuilder(self.d, loop, 1)  # one copy as an iteration of the region's loop
        one.add_model(body, lambda kl, is_tile: 1.0)
        deps = one.carried()
        step, why = recurrence_mii(one.nodes, deps) if deps else (0, "")
        step = step if why else 0  # (a carried dependence on no cycle chains nothing)
        chained = 1 if copies > 1 and self.d.mapping.loop(loop.label).reduction == "tree" else copies
        sched.depth = int(max(sched.depth, chained * step, self._chain(body)))
        return sched, ((max(1, chained * step), why) if carried else (1, ""))

    def _chain(self, model: list) -> float:
        """The longest chain the inner loops of ``model`` force on one pass: a loop's trips times its
        recurrence per iteration (``recurrence_mii`` of its body with its own carried dependences)."""
        best = 0.0
        for e in model:
            if e[0] == "branch":
                best = max(best, self._chain(e[2]), self._chain(e[3]))
            elif e[0] == "loop":
                _, kl, is_tile, sub = e
                lp = self.d.tree.loops.get(kl) if kl is not None and not is_tile else None
                step = 0
                if lp is not None:
                    g = sch.GraphBuilder(self.d, lp, 1)
                    g.add_model(sub, lambda kl, is_tile: 1.0)
                    step, why = recurrence_mii(g.nodes, g.carried())
                    step = step if why else 0
                best = max(best, math.ceil(self.trips(kl, is_tile)) * step, self._chain(sub))
        return best

    def _bound(self, body: list, copies: int, one: sch.GraphBuilder, loop=None) -> ls.Schedule:
        """Closed form for very large unrolled bodies: the schedule of one pass with every inner loop
        run once (the dependence chain, ``one``) plus the cycles the busiest resource needs for the rest
        (memory: every bank of an array together, and each bank of a partitioned array on its own for the
        region's own statements, ``bank_uses``)."""
        d = self.d
        chain = ls.list_schedule(d, one.nodes)
        uses, issues = closed_form_uses(d, body, copies, loop, self.trips)
        busiest = 0
        for r, u in uses.items():
            cap = resource_cap(d, r)
            if cap != math.inf:
                busiest = max(busiest, math.ceil(u / cap))
        return ls.Schedule(chain.depth + max(0, busiest - 1), uses, chain.peak, int(issues))

    def _array(self, s: Site) -> tuple[float, float, float]:
        """A PE-array fold (``llmulator.nest``): each bound PE runs one innermost body per stream step.

        depth: the body's schedule on one PE (its own units; operands arrive over the array's network,
        so no memory ports); II: max(the band's largest ``pipeline_ii``, ResMII with per-PE units,
        the combining latency of an accumulator kept in the PE register across steps); per fold the
        systolic skew and stationary preload (or a broadcast array's pipeline depth).
        """
        d = self.d
        band = s.band
        f = lnest.fold(d, band)
        self.folds[s.id] = f
        stmts = d.tree.loops[band[-1]].statements()
        sched = fold_body_schedule(d, band)
        self.schedules[s.id] = sched
        ops: Counter = Counter()
        for st in stmts:
            for k, v in d.stmt_ops(st).items():
                ops[k] += v
        res_mii = lnest.array_res_mii(d, ops, f["lanes"])
        rec_mii = 1
        for st in stmts:
            for a in st.accesses:
                if a.is_write and f["reuse"].get(a.array, (1.0, 1.0))[1] > 1:
                    rec_mii = max(rec_mii, combining_latency(d, st))
        rec_mii = max(rec_mii, int(fold_rec_mii(d, band)))   # a recurrence along the stream (fold_dependences)
        target = max(d.mapping.loop(lb).pipeline_ii or 1 for lb in band)
        ii = max(target, res_mii, rec_mii)
        fill = float(lnest.systolic_fill(d, band, f["stationary"], f["output_drain"], f["preload"]))
        shadow = f["output_stationary"] and not f["output_drain"] and d.arch.pe_array is not None
        if shadow:
            note = (f"{s.loop}: output-stationary folds drain while the next accumulates (the PE registers hold a "
                    f"second accumulator), all but the last; a PE with one (the rtl profiler's) takes "
                    f"{d.arch.pe_array.rows} more cycles per fold but the last")
            if note not in self.notes:
                self.notes.append(note)
        # folds follow each other back to back (operands are prefetched while the previous fold drains):
        # each pays its fill and its steps; the body's latency beyond one II and the array's I/O registers are paid
        # once per nest, and so is the last fold's drain where a shadow accumulator hides the others (nothing
        # follows it: before hlsim 0.47 no drain at all, a one-fold 3x3 GEMM in 15 cycles where the rtl takes 18)
        latency = max(0.0, sched.depth - ii) + lnest.array_io_cycles(d) + (lnest.last_drain(d) if shadow else 0.0)
        self.info[s.id] = {"depth": sched.depth, "ii": ii, "res_mii": res_mii, "rec_mii": rec_mii, "fill": fill,
                           "lanes": f["lanes"]}
        return (fill + ii, float(ii), latency)


def _graph(d: Design, stmts: list) -> sch.GraphBuilder:
    """The data-flow graph of straight-line statements (a block, a condition, a loop's test)."""
    g = sch.GraphBuilder(d)
    for st in stmts:
        g.add_statement(st)
    return g


def _test_release(test: sch.GraphBuilder, body: sch.GraphBuilder, sched: ls.Schedule, ii: int) -> dict[int, int]:
    """The cycle, counted from the slot after the last group, before which each node of a loop's exit test may
    not issue: a local it reads is ready when the last group's producer finishes, an array it loads when the
    last group's stores that may write it finish (less the one II between that group's start and the slot)."""
    release: dict[int, int] = {}

    def wait(nodes, ready: int) -> None:
        for r in nodes:
            if ready - ii > release.get(r, 0):
                release[r] = ready - ii

    for v, readers in test.live_in.items():
        if body.local_def.get(v, -1) >= 0:
            wait(readers, sched.finish[body.local_def[v]])
    for array, loads in test.loads.items():
        for _, ns, _ in body.stores.get(array, []):
            wait([nl for _, nl, _ in loads], sched.finish[ns])
    return release


def fold_body_schedule(d: Design, band: list[str]) -> ls.Schedule:
    """The innermost body of a band bound to the PE array, scheduled on one PE: its own units, and
    operands arriving over the array's network (no memory ports). Its depth beyond one II is the
    pipeline latency a PE-array nest pays once."""
    g = sch.GraphBuilder(d)
    g.port_free = True
    for st in d.tree.loops[band[-1]].statements():
        g.add_statement(st)
    caps = {f"op:{c}": lnest.units_per_pe(d, c) for c in d.arch.operators if lnest.units_per_pe(d, c)}
    return ls.list_schedule(d, g.nodes, caps)


def _ii_note(label: str, target: int, ii: dict, why: str) -> str:
    """Why a pipelined loop runs at a larger II than the mapping asks for."""
    causes = []
    if ii["rec_mii"] > target:
        causes.append(f"a loop-carried dependence ({why}) needs II >= {ii['rec_mii']:g}")
    if ii["res_mii"] > target:
        causes.append(f"operator units need II >= {ii['res_mii']:g}")
    if ii["mem_mii"] > target:
        causes.append(f"memory ports need II >= {ii['mem_mii']:g}")
    if ii.get("slot_mii", 0) > max(target, ii["rec_mii"], ii["res_mii"], ii["mem_mii"]):
        causes.append(f"no placement of the body keeps every unit's issues per cycle and every carried dependence "
                      f"below II {ii['slot_mii']:g}")
    return f"{label}: pipeline_ii {target} is not achievable: " + "; ".join(causes) + f"; runs at II {ii['ii']:g}"


# ------------------------------------------------------------------------------------------------

