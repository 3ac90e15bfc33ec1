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

# 0.3: arrays declared in the kernel are accesses of their own in the schedule; break and return end loops early
# 0.4: ws/is PE folds +1 cycle, os folds drain R without a 2nd PE accumulator; PE area/energy from measured PEs
# 0.5: a nest on a systolic array pays the array's I/O registers once (nest.array_io_cycles, 4 cycles)
# 0.6: a PE array's operand streams cost their level's bandwidth in whole words (llmulator.words)
# 0.7: ... and the lanes' lines also serve a packed window sliding along the word (conv inputs)
# 0.8: ... but a lane's line is its own: packing and a line do not multiply (0.7 under-counted windows)
# 0.9: a PE array waits for its banked buffers: bank conflicts from the memory system's schedule (banks.py)
# 0.10: ... and its buffers carry the words that schedule fetches and writes back (the closed-form bound
#       over-counted windows and strided lanes: a stride-2 conv 1.47x the RTL's words)
# 0.11: transfers, energy and bounds follow the trips the run measured (Design.measured_trips): since analytical
#       0.13 (same day) a loop whose control reads the inputs took the analytical model's estimate from draws
#       of the declared inputs there (Design.trip_profile), unversioned; the 0.9 labels made before are right
# 0.12-0.15: a PE-array nest the bank schedule cannot replay: the closed-form word bound lets strided lanes share
#       words, runs a lane's line on across loops, and charges a walk's first fetch where the lane may leave its word
# 0.16: a systolic PE array on a measured technology table: a cycle without a MAC costs the PE's own
#       flip-flops' clock also where the data is narrower than the PE (llmulator.pecost); only osu018 designs
# 0.17-0.18: lanes that run on across two spatial loops share words (llmulator.words._lanes); on the 465
#       replayable PE-array buffer rows of synth-v3 none above the replay (0.11: 188, up to 11.2x; word_bound.py)
# 0.19: the buffer periphery of a systolic PE array on a measured technology table: the memory system's
#       registers around the buffer (engines' rings and lines, the output queue), area and energy; osu018 only
# 0.20: ... and the buffers' crossbar in area (llmulator.periphery: crosspoints x measured ones); osu018 only
# 0.21: a do-while loop is counted (its sites were left out of the instrumented code: its body ran, its
#       cycles and operations were not counted), its test once per trip; no library or synth-v3 kernel has one
# 0.22: `x = x + a*b` (and `a*b + x`, `x - a*b`) is the mac `x += a*b` is (llmulator.kernel_expr): the library
#       GEMM written long ran 17,140 cycles on systolic-16x16 against 2,604 for `+=`, as the PE array takes a mac only
# 0.23: both sides of a branch are predicated from the locals as they were before it, and a local either side
#       writes leaves through a select (`if (c) a += x; else a = 0;` kept no recurrence: the schedule ran at II 1
#       and the bound check stopped the run; `... else a -= x;` was two adds deep); a `temp` array that fits its
#       level never moves to or from DRAM (the sieve's scratch was 81 % of its energy); a PE-array fold whose
#       stream is one step runs the plan the rtl runs (ws: no output drain, os: no preload), not both (+4-5
#       cycles per fold at 4x4: a matrix-vector product 202 against rtl's 154); `switch` lowered to if/else if
# 0.24: a loop's test is counted where it runs (no exit test after a break or return: one compare and its loads
#       per early exit); an edge tile moves the elements it holds (10 in tiles of 4: 10 words, not 12)
# 0.25: `k++;` assigns k as `k += 1` does (no recurrence before: an outside merge ran at II 1 with `i++`, II 4 with
#       `i = i + 1`); a constant expression of literals and parameters is folded (`r < H - 1` charged an add per
#       execution: +23 % on an outside stencil)
# 0.26: a statement outside every loop moves its elements to and from DRAM as a nest's tiles do (`out[0] = s;`
#       after a loop never left the chip); a loop over a segment its enclosing loop's data choose
#       (`for (j = p[i]; j < p[i + 1]; j++)`) reads a new segment per row (one row's worth stood for all: an
#       outside CSR sum 80 DRAM words against 1,089); a PE array whose partial sums travel along its columns
#       (the reduction on the columns) preloads along the columns, as the rtl's transposed plan does (13
#       cycles against rtl's 16 on a 1x4 array); the bound check takes a pointer chase's step for its load
# 0.27: a nest loads what it reads where the array holds data by then (an input, inout, or written before) and
#       writes back what it writes, not what its role says (an inout matrix only read was written back:
#       trisolv-plain 3,240 DRAM writes against 1,640; an out array a consumer loop reads was never loaded);
#       a for head's initialiser that reads an array (`j = p[i]`) is a load once per entry (never counted); a
#       triangular loop's tile spans its most trips where its array is not indexed by the outer loop (`a[j]`
#       for `j <= i` moved the mean, 16.5 of 32 words)
# 0.28: a statement reads an element once however often its text names it (no store between); a nest that
#       writes an array holding data only under a branch loads it before writing its tile back
# 0.29: RecMII over cycles through any number of carried dependences (two arrays or locals feeding each other, a
#       copied local, unrolled chains; each was tried alone, 64 at most); a pipelined while loop keeps its memory
#       recurrences (it kept none: histogram-opt 24,777 cycles, now 30,900); a branch's stores and selects wait
#       for its condition, and its two sides' accesses do not wait for each other
# 0.30: only the operator units the design allocates leak (as its area counts them); register-file operands
#       cost their bits; a PE array's switching follows the input variant's declared range
# 0.31: a data-dependent loop test takes its schedule each evaluation (it took none outside regions); countdowns
#       by more than 1 run whole trips; an inner loop of varying trips unrolls to its longest entry in a region;
#       a pipelined do-while tests after its body; a nest that never runs moves nothing
# 0.32: a counter's test (`j < N` of a for loop left by break) stays free; 0.33: a mac's mul waits for its own
#       operands (`s = s + s*x` had no multiply on its recurrence); a loop that runs no trip moves its head's reads
# 0.34: a fixed-start while counter moves the run its trips touched; top-level `if` statements move their
#       elements; backing-store words checked; a read the statement before loaded is reused; a branch's sides,
#       a block partition's moving index, a dynamic index and geometric copies share ports; PE-array waits
#       for the last fold's write-backs count; buffer energy by whole words
# 0.35-0.36: a scalar access takes its SRAM port for whole words; osu018 PE entries by accumulator width
#       too; SRAM default energy per bank; skew registers shift on every step the array advances
# 0.37: banks below 8 KiB priced by a power law (not a floor); a PE without an rtl plan still sign-extends
# 0.38: a level's bandwidth time and the dataflow shared bound in whole cycles (40.8 -> 41); an element wider than
#       its SRAM port holds the port once per word in the schedule (II), as its energy already counted; under
#       dataflow a nest waits for the nests whose buffers it reads; a region a data-dependent test ends pays that test
# 0.39-0.41: a carried dependence's consumer issues no earlier than its producer's finish less distance x II (its
#       producers first among ready nodes, releases recomputed until they settle); an int scalar is an integer; the
#       exit test after a trip waits for its operands; units from schedule peaks (plain runs, while tests, muxes);
#       a scalar DRAM access moves whole words of the bus; overlapped dataflow tasks keep their own units
# 0.42-0.43: modulo reservation table; branch load reuse; large bodies keep their chains; tree levels
# 0.44-0.49: tree combining steps are operations; a plain loop's counter test none (0.48: in regions too); index
#       arithmetic on loaded values; shorter modulo placements; double buffering exposes the first and last tiles
# 0.50: a loop variable its body also assigns is a register (its next trip waits for the body's update); an
#       indirect element (`x[j]`, `x[col[k]]`) the statement before loaded is not loaded again
# 0.51: an unlabelled inner loop of a region unrolls (it was one copy); such a loop variable's subscripts indirect
# 0.52: an SRAM level's write energy defaults to its stated read energy (the schema's rule), not the table's
# 0.53: a stored element read back later in the run is the stored value (forwarding), and a store the run
#       overwrites before any read of its array from memory is not made (dead-store elimination)
# 0.54-0.56: the copies of an unrolled body share an element one copy loaded or stored, and a store a later copy
#       overwrites unread is not made (GVN and dead-store elimination after unrolling: llmulator.copy_reuse); a
#       copy's address counts from its loop's first value (0.54, 0.55: relabels stopped by findings, not released)
# 0.57: a tile of accesses that move apart as the loops run (`a[3 - k]` beside `a[k + 3]`, `A[j][i]` beside
#       `A[i][j]`) holds each one's box, tile by tile (llmulator.access_boxes); an access names its own scope's
#       loops; a segment whose start the data give moves per entry (bfs); words >= distinct elements, every run
# 0.58-0.59: a fold's recurrences (an output kept in a PE waits for its whole update; one along the stream), a
#       spatial loop whose PEs read each other's results refused; a very large body's banks each on their own;
#       unrolled dataflow tasks share units and ports; a pipelined loop of 0 trips (fold_dependences, bank_spread)
# 0.60-0.61: sibling loops of one name whose ranges or tiles differ from their tile axis move what they touch; a
#       triangular loop's box follows its trips tile by tile (an LU row split moved 58 words of 64);
# 0.62-0.65: a triangle's counters over loops no access moves with; trips round up; exit tests; sibling tiles
# 0.66-0.67: a loop under a branch moves its tiles as often as it runs (per tile position: traffic.Nest.entries)
# 0.68: a loop whose point loop holds another band's tile loop is an outer loop whole; a triangular loop a
#       tile sees one step of spans that step's measured trips; 0.69: every loop around bounds a guard's share
# 0.70-0.71: a tile held across a triangle's outer loop spans its most trips; its measured trips per kernel entry;
# 0.72-0.73: a tile spans a triangle's most trips among the entries the index-only `if`s around it let through
#       (0.73: C's / and %, `if (c) continue;`, the index terms of `a && data`; 0.72's relabel was stopped)
# 0.74-0.76: parameter strides (`A[m * K + k]`); a triangle under an early-exit loop; a diagonal's elements;
#       0.76: a tile cuts a triangle its longest entry exceeds; 0.77: shifted diagonals, a while counter diagonal;
#       0.78: an integer scalar in a subscript shifts it as a constant does (`A[i + k]`: no indirect index);
#       0.79: a subscript divided by an integer (`i / 2`, `i >> 2`) spans its range over the divisor
VERSION = "0.79"  # (0.46: the last write's latency); the last os fold's drain; 0.48-0.49: loads past a branch


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
