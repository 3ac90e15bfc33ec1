"""hlsim: the default profiler. Run the mapped design on real input data and count every cycle.

profile(design, inputs) = instrument (mapped kernel + counters) -> compile (cached
by content hash) -> schedule every site for this architecture (timing constants)
-> run on the inputs under time and memory limits -> cycles from the counts,
static DRAM tile transfers overlapped (double buffering) or not, energy from
the actual operation and access counts, area from the units the schedules
allocate, and a functional check of the outputs against the NumPy reference.
The model is written down term by term in docs/timing-model.md. Every array subscript
(workload arrays, arrays the kernel declares) is bounds-checked as it runs: an access
outside the declared shape ends the profile with a SpecError (exit status 2) naming the
workload file and kernel line, the array, the index as written, its value and extent, and
the loop iteration.
"""

from __future__ import annotations

import time
from collections import Counter

import attrs
import numpy as np
from llmulator import banks, costs, dataflow_tasks, traffic, transfers
from llmulator import energy as accelergy
from llmulator.area import allocated_area
from llmulator.design import Design
from llmulator.errors import Diagnostic, SpecError, UserError
from llmulator.inputs import Inputs, inputs_for, resolve_inputs
from llmulator.instrument import Instrumented, instrumented
from llmulator.results import Profile
from llmulator.timing import Timing

from . import bounds, runner
from .entries import band_entries, triangle_trips
from .outputs_check import functional_check
from .tally import AccessTally, count_ops

# What each version changed in the labels: docs/hlsim-versions.md (bump VERSION with every change that moves one).
VERSION = "0.86"


class HlsimProfiler:
    name = "hlsim"
    version = VERSION

    def __init__(self, time_limit_s: float = 60.0, mem_limit_mb: int = 2048, check_outputs: bool = True):
        self.time_limit_s = time_limit_s
        self.mem_limit_mb = mem_limit_mb
        #: compare the outputs with the workload's reference (the synth driver checks one sample per
        #: program+mapping group: the compiled kernel is the same for the group's other samples)
        self.check_outputs = check_outputs

    def available(self) -> str | None:
        try:
            runner.compiler()
        except UserError as e:
            return str(e)
        return None

    def instrumented(self, design: Design) -> Instrumented:
        """The instrumented source (``llmulator.instrument.instrumented``: memoised by content)."""
        return instrumented(design)

    def profile(self, design: Design, inputs: Inputs | dict[str, np.ndarray] | None = None) -> Profile:
        t0 = time.perf_counter()
        d = design
        if inputs is None:
            inputs = inputs_for(d)
        elif isinstance(inputs, dict):
            inputs = Inputs(inputs, "given arrays")
        d = _with_scalars(d, inputs)
        inst = self.instrumented(d)
        exe, compiled = runner.ensure_binary(inst.source, inst.key)
        timing = Timing(d, inst)
        w = d.workload
        outputs = {n: (_dtype(w, n), w.shape(n, d.sizes)) for n in inst.arrays if w.arrays[n].role in ("out", "inout")}
        args = {}
        for n in inst.arrays:
            if w.arrays[n].role in ("in", "inout"):
                if n not in inputs.arrays:
                    raise UserError(f"hlsim: no input data for array '{n}'")
                a = np.asarray(inputs.arrays[n])
                want = (_dtype(w, n), w.shape(n, d.sizes))
                if a.dtype != want[0] or a.shape != want[1]:
                    raise UserError(f"hlsim: input '{n}' is {a.dtype}{list(a.shape)}, the workload declares "
                                    f"{want[0]}{list(want[1])}")
                args[n] = a
        try:
            scalars, outs, sites = runner.run(exe, args, outputs, timing.T, self.time_limit_s, self.mem_limit_mb)
        except runner.OutOfBounds as e:
            raise out_of_bounds(d, inst, e, inputs.origin) from None
        check = (functional_check(d, inputs.arrays, outs) if self.check_outputs
                 else "not-run: checked on another sample of the same compiled kernel")
        prof = self._metrics(d, inst, timing, scalars, sites)
        prof.notes.extend(timing.notes)
        if d.mapping.levels:
            prof.notes.append(d.levels_note())
        prof.functional_check = check
        prof.inputs = inputs.origin
        prof.seconds = time.perf_counter() - t0
        prof.design = d.name
        prof.counters["compiled"] = float(compiled)
        return prof

    # -------------------------------------------------------------------------------------------
    def _metrics(self, d: Design, inst: Instrumented, timing: Timing, scalars: dict[str, float],
                 sites: list[tuple[int, int, int, int]]) -> Profile:
        arch = d.arch
        counts = {s: (c, it, inv) for s, c, it, inv in sites}
        # measured trip counts per kernel loop
        iters: Counter = Counter()
        invs: Counter = Counter()
        tile_invs: Counter = Counter()  # a strip-mined loop's tile loop: its entries are the loop's own
        for s in inst.sites:
            if s.kind in ("loop", "region") and s.loop and (s.counted or (s.kind == "region" and s.label)):
                c, it, inv = counts.get(s.id, (0, 0, 0))
                if s.label == s.loop:  # the point/whole loop, not its tile loop
                    iters[s.loop] += it
                    invs[s.loop] += inv
                else:
                    tile_invs[s.loop] += inv
        counters: dict[str, float] = {}
        for lb in iters:
            counters[f"iterations.{lb}"] = float(iters[lb])
            counters[f"invocations.{lb}"] = float(invs[lb])
            counters[f"trips.{lb}"] = iters[lb] / invs[lb] if invs[lb] else 0.0
        # operations and accesses actually executed
        ops: Counter = Counter()
        runs = [bounds.NestRun(top or f"stmt{k}", 0.0) for k, top in enumerate(inst.nest_loops)]
        tally = AccessTally.new(arch)   # what the datapath's accesses moved (tally.py)
        acc_bits = tally.acc_bits
        word_bits: Counter = Counter()  # level -> the bits of the whole words those accesses take
        for s in inst.sites:
            if s.region == "array":
                runs[s.nest].band = s.band
            elif s.region == "pipeline":
                _, it, inv = counts.get(s.id, (0, 0, 0))
                runs[s.nest].pipelined.append((s.loop, float(it), float(inv)))
            if s.region in ("pipeline", "unroll") and d.mapping.dataflow:  # overlapped tasks share what they issue to
                groups = counts.get(s.id, (0, 0, 0))[1] / max(1, d.mapping.loop(s.loop).unroll or 1)
                dataflow_tasks.issue_pressure(d, timing, s, groups, runs[s.nest].busy, runs[s.nest].rate)
            if s.region in ("pipeline", "unroll"):  # a tree reduction's partials meet on exit (llmulator.costs)
                count_ops(ops, runs[s.nest].ops, costs.tree_combining_ops(d, s.loop), counts.get(s.id, (0, 0, 0))[2])
            c = counts.get(s.id, (0, 0, 0))[0]
            if c == 0:
                continue
            if s.kind == "region" and s.stmts:
                # a data-dependent bound: every iteration, and once more to exit (a do-while tests after each)
                lp = d.tree.loops.get(s.loop) if s.loop else None
                c = counts[s.id][1] + (0 if lp is not None and lp.do_while else counts[s.id][2])
            # (a loop site's count is its test's evaluations, counted in the test: none after a break or return)
            for st in s.stmts:
                if s.kind == "loop" and not s.in_region and not (st.accesses or st.reads_locals):
                    continue  # a counter's test outside regions is the loop control's own (timing, area)
                count_ops(ops, runs[s.nest].ops, d.stmt_ops(st), c)
                for k, a in enumerate(st.accesses):
                    tally.access(d, timing.folds, s, st, k, a, c, runs[s.nest].bits,
                                 timing.copy_shares.get((id(st), k), (1.0, 1.0)))
        # static tile transfers between levels (DRAM <-> buffers), per nest
        # (the variant's hints are replaced by what was measured: the design below has no variant)
        # (and ``measured_trips`` wins over the design's own estimate from draws of the declared inputs)
        seen = {lb: counters.get(f"trips.{lb}", 0.0) for lb, lp in d.tree.loops.items()
                if lp.data_dependent or lp.is_while}
        seen.update(triangle_trips(d, iters, invs, tile_invs))
        measured = attrs.evolve(d.workload, hints={**d.hints, **{lb: {"expected_trips": v} for lb, v in seen.items()}})
        dm = attrs.evolve(d, workload=measured, variant=None, measured_trips=seen,
                          measured_entries=band_entries(d, invs, tile_invs))
        nest_cycles, nest_compute = [], []
        breakdown: dict[str, float] = {}
        # a PE-array nest waits for its banks where a step's words collide, and moves the words its
        # schedule fetches and writes back (banks.py; None: not such a design)
        sched = banks.schedule(d) if len(inst.nest_loops) == 1 else None
        array_steps = 0.0   # the cycles a PE array advances: its nests' compute without bank waits
        for k, top in enumerate(inst.nest_loops):
            comp = scalars.get(f"nest.{k}", 0.0)
            array_steps += comp if runs[k].band else 0.0
            transfer = 0.0
            level_bits = runs[k].bits
            label = top or f"stmt{k}"
            if sched is not None:
                breakdown[f"bank_wait_cycles.{label}"] = sched.waits
                comp += sched.waits
                for lv, words in sched.words.items():
                    level_bits[lv] = words * arch.level(lv).width_bits
            for lv, b in level_bits.items():  # the datapath's own, before the tile transfers join them
                breakdown[f"datapath_bits.{label}.{lv}"] = b
                word_bits[lv] += b
            if top is not None:  # (``exposed``: what double buffering cannot hide)
                transfer, moved, exposed = transfers.tile_transfers(dm, dm.tree.loops[top], timing.copy_shares)
            else:  # a top-level statement's elements come from and go back to the backing store
                ran = {sid for sid, c in counts.items() if c[0]}
                transfer, moved, exposed = transfers.ran_transfers(dm, [s for s in inst.sites if s.nest == k],
                                                                   ran, invs, timing.copy_shares)
            for lv, (r, rb, wr, wb) in moved.items():
                acc_bits[lv][0] += r
                acc_bits[lv][1] += rb
                acc_bits[lv][2] += wr
                acc_bits[lv][3] += wb
                level_bits[lv] += rb + wb
            # every level moves at most its bandwidth per cycle: datapath accesses and tile transfers
            bw_cycles = {lv.name: float(traffic.level_cycles(d, lv, level_bits[lv.name])) for lv in arch.memory}
            cyc = float(traffic.nest_time(d, comp, transfer, max(bw_cycles.values(), default=0.0), exposed))
            breakdown[f"cycles.{label}"] = cyc
            breakdown[f"compute_cycles.{label}"] = comp
            breakdown[f"transfer_cycles.{label}"] = transfer
            for lv, c in bw_cycles.items():
                breakdown[f"bandwidth_cycles.{label}.{lv}"] = c
            nest_cycles.append(cyc)
            nest_compute.append(dataflow_tasks.issuing_span(d, comp, transfer, exposed))
            runs[k].cycles = cyc
        if d.mapping.dataflow and nest_cycles:
            # tasks wait for the ones whose buffers they read, overlapping ones share their pipelines' resources; all
            # still share the units and every level's bandwidth
            cycles = max(dataflow_tasks.shared_path(nest_cycles, dataflow_tasks.waits_for(inst),
                                                    [r.busy for r in runs], [r.rate for r in runs], nest_compute),
                         bounds.shared_cycles(d, runs))
        else:
            cycles = sum(nest_cycles)
        breakdown["bound_cycles"] = bounds.check(dm, runs, cycles)
        marks = {name: (scalars.get(f"marks.{a}.read", 0.0), scalars.get(f"marks.{a}.written", 0.0))
                 for a, name in enumerate(inst.arrays)}
        distinct = bounds.check_words(dm, tally.touched, acc_bits, marks)
        counters["distinct_read"], counters["distinct_written"] = distinct["read"], distinct["written"]
        level_traffic = {}
        for lv in arch.memory:
            r, rb, wr, wb = acc_bits[lv.name]
            level_traffic[f"read_bits.{lv.name}"] = np.array([rb])
            level_traffic[f"write_bits.{lv.name}"] = np.array([wb])
            # the rest of the whole words the datapath's accesses take: an SRAM access moves its whole word (0.34)
            level_traffic[f"pad_bits.{lv.name}"] = np.array([word_bits[lv.name] - tally.elem[lv.name]])
            level_traffic[f"pad_read_bits.{lv.name}"] = np.array([tally.pad[lv.name][0]])
            level_traffic[f"pad_write_bits.{lv.name}"] = np.array([tally.pad[lv.name][1]])
            counters[f"reads.{lv.name}"] = r
            counters[f"writes.{lv.name}"] = wr
        for k, v in ops.items():
            counters[f"ops.{k}"] = float(v)
        area, area_parts, units = allocated_area(d, inst, timing)
        en = accelergy.energy(d, dict(ops), level_traffic, np.array([cycles]), datapath=(tally.loads, tally.stores),
                              units=units, array_steps=array_steps)
        for k, v in en.items():
            if k != "energy_pj":
                breakdown[k] = float(v[0])
        breakdown.update(area_parts)
        for s in inst.sites:
            if s.kind == "region":
                for k, v in timing.info.get(s.id, {}).items():
                    breakdown[f"{k}.{s.loop}"] = float(v)
        for k, v in units.items():
            counters[f"units.{k}"] = float(v)
        energy = float(en["energy_pj"][0])
        metrics = {"cycles": float(cycles), "energy_pj": energy,
                   "power_mw": energy * arch.clock_mhz / cycles * 1e-3 if cycles > 0 else 0.0,
                   "area_um2": area, "latency_us": cycles / arch.clock_mhz}
        return Profile(profiler=self.name, version=self.version, metrics=metrics, counters=counters,
                       breakdown=breakdown)


def out_of_bounds(d: Design, inst: Instrumented, e: runner.OutOfBounds, inputs: str = "") -> SpecError:
    """The diagnostic of an out-of-bounds access: file and kernel line, array, index as written, its value
    and the declared extent, and the enclosing loop variables' values at that moment."""
    w = d.workload
    file = w.source_map.file if w.source_map is not None else f"<workload {w.name}>"
    if not 0 <= e.check < len(inst.checks):  # pragma: no cover - the program and its checks come together
        return SpecError(Diagnostic(file, None, None, "workload.kernel", str(e)))
    c = inst.checks[e.check]
    declared, shape = list(c.declared), [str(x) for x in c.shape]
    decl = f"[{', '.join(declared)}]" + (f" = [{', '.join(shape)}]" if declared != shape else "")
    if c.local:
        decl += " in the kernel"
    it = ", ".join(f"{v}={x}" for v, x in zip(c.loop_vars, e.loop_values, strict=False))
    where = f"{c.array}'s dimension {c.dim + 1}" if len(shape) > 1 else c.array
    what = {"read": "read of", "write": "write to"}.get(c.kind, f"{c.kind} of")
    at = f" at iteration {it}" if it else ""  # no loop variable in scope (a while loop's condition)
    msg = (f"out-of-bounds {what} {c.access}{at}: index {c.index} = {e.value} is outside {where} "
           f"(extent {c.extent}, valid 0..{c.extent - 1}; {c.array} is declared {decl})")
    hint = ("hlsim checks every array subscript (workload arrays and arrays declared in the kernel; reads "
            "and writes, each dimension) and stops at the first one out of bounds; fix the index or the "
            "array's declared shape")
    if inputs:
        hint += f" (inputs: {inputs}; design {d.name})"
    return SpecError(Diagnostic(file, c.line, None, "workload.kernel", msg, hint=hint))


def _with_scalars(d: Design, inputs: Inputs) -> Design:
    """The design with the scalar values its inputs were made for (an input variant may change them;
    ``Inputs.scalars``, else the design's variant): they compile into the kernel and reach the reference."""
    scalars = inputs.scalars if inputs.scalars is not None else resolve_inputs(d.workload, d.variant)["scalars"]
    if scalars == d.workload.scalars:
        return d
    return attrs.evolve(d, workload=attrs.evolve(d.workload, scalars=scalars))


def _dtype(w, name):
    from llmulator.inputs import np_dtype
    return np_dtype(w.arrays[name].dtype)
