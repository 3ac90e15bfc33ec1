"""What ``validate`` warns about beyond the spec files' rules: the static facts every estimator needs.

Why: ``validate`` must not accept a design that ``estimate`` then refuses without a word. The spec
files can be correct while a static estimator still cannot price the design — a loop whose trip
count only the run knows and that has no expected value — or while the mapping asks for more than
the hardware can do (an II below a loop-carried dependence). Neither is an error (a profiler
measures the first; the second runs, slower), so they are warnings with the file and line to fix;
the estimators raise the same facts as errors of their own, per estimator.
"""

from __future__ import annotations

import attrs

from .design import Design
from .design_checks import _mdiag
from .errors import Diagnostic, SpecError


def missing_hints(workload, tree=None, hints=None, design: Design | None = None) -> list[Diagnostic]:
    """Loops whose trip count only the run knows and that have no ``expected_trips`` hint (``hints``:
    the workload's, or a design's with its input variant applied). A loop whose trips a declared csr
    structure gives needs none: for a ``design`` exactly the loops its ``trip_profile`` prices (what the
    static estimators read), for a workload alone those of that loop shape (``structure_trips``)."""
    from .kernel import analyze
    tree = tree if tree is not None else analyze(workload)
    hints = workload.hints if hints is None else hints
    file = workload.source_map.file if workload.source_map else "<workload>"
    out = []
    from .structure_trips import csr_row_loop

    def from_structure(label: str) -> bool:
        if design is not None:
            return design.trip_profile(label) is not None
        return csr_row_loop(workload, tree, label) is not None

    for loop in tree.loops.values():
        if loop.static and design is not None:  # its bounds may follow a loop only the run counts
            try:
                design.trips(loop.label)
            except SpecError as e:
                out.extend(attrs.evolve(dg, severity="warning") for dg in e.diagnostics)
            continue
        if loop.static or "expected_trips" in hints.get(loop.label, {}) or from_structure(loop.label):
            continue
        out.append(Diagnostic(
            file, loop.line, None, f"workload.hints.{loop.label}",
            f"loop {loop.label} has a trip count only the run knows ({loop.dynamic_reason}); static estimators "
            "that read expected trip counts (analytical, llm) cannot price the design without one, profilers "
            "measure it",
            "an expected trip count per entry of the loop (a number or an expression over the parameters)",
            f"add under workload: `hints: {{{loop.label}: {{expected_trips: <expression>}}}}`",
            severity="warning"))
    return out


def unachievable_ii(d: Design) -> list[Diagnostic]:
    """Pipelined loops whose ``pipeline_ii`` the dependences, units or ports do not allow (the loop runs
    at the larger II the schedule finds; the note says which bound and why)."""
    from .instrument import instrumented
    from .timing import Timing
    try:
        timing = Timing(d, instrumented(d))
    except SpecError:
        return []  # a missing hint: reported by missing_hints
    out = []
    for note in timing.notes:
        label = note.split(":", 1)[0]
        if "output-stationary folds drain" in note:  # the PE's registers, not an II (an outside probe)
            out.append(attrs.evolve(_mdiag(d.mapping, ("loops", label), note.split(": ", 1)[1],
                                    "a PE register level (kind regfile, named PE_REG) that says what a PE holds",
                                    "declare PE_REG with room for one accumulator and the operands to price the "
                                    "drain as the rtl profiler builds it; without one a second accumulator is "
                                    "assumed", key=True), severity="warning"))
            continue
        if "runs fully unrolled inside" in note:  # an II the mapping sets where no loop is pipelined
            out.append(attrs.evolve(_mdiag(d.mapping, ("loops", label, "pipeline_ii"), note.split(": ", 1)[1],
                                    "pipeline_ii on a loop that runs as a loop (not inside another loop's "
                                    "pipelined or unrolled body)", "pipeline the outer loop, or drop its unroll"),
                                    severity="warning"))
            continue
        out.append(attrs.evolve(_mdiag(d.mapping, ("loops", label, "pipeline_ii"), note.split(": ", 1)[1],
                                "an II the loop's dependences, operator units and memory ports allow",
                                "raise pipeline_ii, or remove the dependence (e.g. accumulate into "
                                "several partial sums)"), severity="warning"))
    return out


_NUMERIC_CLASSES = ("add", "mul", "mac", "div", "sqrt", "exp", "cmp")  # a unit for one number format


def _statement_warnings(d: Design, findings) -> list[Diagnostic]:
    """One warning per statement line and operator class that ``findings(statement)`` yields as
    ``(class, message, expected, hint)``."""
    w = d.workload
    file = w.source_map.file if w.source_map else "<workload>"
    out, seen = [], set()
    for st, _loops in d.statements_with_loops():
        for cls, msg, expected, hint in findings(st):
            if (st.line, cls) not in seen:
                seen.add((st.line, cls))
                out.append(Diagnostic(file, st.line, None, "workload.kernel", msg, expected, hint, severity="warning"))
    return out


def float_on_int_units(d: Design) -> list[Diagnostic]:
    """Floating-point operations on classes the architecture declares ``numeric: int``: they are priced on
    that integer unit (its latency, energy and area), which a float operation does not run on in hardware.
    A warning, not an error: the design is priced, but on figures its author may not have meant."""
    ops = d.arch.operators
    afile = f" in {d.arch.source_map.file}" if d.arch.source_map else ""

    def findings(st):
        runs_on = d.stmt_ops(st)
        fl = {n.op for n in st.dag if n.is_float}
        if "mac" in fl and "mac" not in runs_on:
            fl |= {"mul", "add"}  # an unfused mac runs on the adder and multiplier
        for cls in sorted(c for c in fl if c in _NUMERIC_CLASSES and runs_on.get(c) and c in ops):
            if ops[cls].numeric == "int":
                yield (cls, f"`{st.text}` does floating-point {cls}, and architecture '{d.arch.name}' declares its "
                       f"'{cls}' units numeric: int: it is priced on an integer {cls} (latency, energy and area)",
                       f"a '{cls}' unit of the statement's number format",
                       f"set `numeric: float` on compute.operators.{cls}{afile} if the hardware has a float unit, "
                       "or use integer arrays in the workload")
    return _statement_warnings(d, findings)


#: the integer operator classes whose operands ``operands_wider_than_units`` compares with the unit, and their verb
_WIDTH_CHECKED = {"mac": "multiplies", "mul": "multiplies", "add": "adds", "div": "divides", "cmp": "compares"}


def operands_wider_than_units(d: Design) -> list[Diagnostic]:
    """Integer multiplies, adds, divides and compares whose operands are wider than the unit's ``bits``: they are
    priced as one operation of that unit (an 8-bit MAC's energy and area for int16 operands, one 32-bit add's
    latency for an int64 add, where the hardware chains two), which does not describe the hardware that would
    run them (the adds, divides and compares since 2026-12-06: an outside probe found an int64 add on a 32-bit
    adder priced as one, silently). The operands are the arrays a statement reads and does not write (an
    accumulator is wider than its operands by design)."""
    ops, w = d.arch.operators, d.workload
    afile = f" in {d.arch.source_map.file}" if d.arch.source_map else ""

    def findings(st):
        written = {a.array for a in st.accesses if a.is_write}
        reads = {a.array for a in st.accesses if not a.is_write and a.array in w.arrays and a.array not in written
                 and not w.arrays[a.array].dtype.startswith("fp")}  # integer operands: the PE arrays' MACs
        bits = max((w.arrays[a].bits for a in reads), default=0)
        for cls, verb in _WIDTH_CHECKED.items():
            unit = ops.get(cls)
            if d.stmt_ops(st).get(cls) and unit is not None and bits > unit.bits:
                yield (cls, f"`{st.text}` {verb} {bits}-bit operands on the {unit.bits}-bit '{cls}' units of "
                       f"architecture '{d.arch.name}': priced on their figures (latency, energy, area)",
                       f"'{cls}' units of at least {bits} bits",
                       f"set `bits: {bits}` on compute.operators.{cls}{afile} if the hardware {verb} that wide, "
                       "or use narrower arrays in the workload")
    return _statement_warnings(d, findings)


def idle_tree_reductions(d: Design) -> list[Diagnostic]:
    """``reduction: tree`` on a loop whose body accumulates into no local: the unrolled copies keep one partial
    sum each only for a local accumulator (``acc += ...``); an array element (``y[i] += ...``) stays one serial
    chain, as an HLS tool keeps a memory location, and the tree buys nothing."""
    out = []
    for label, loop in d.tree.loops.items():
        lm = d.mapping.loop(label)
        if lm is None or lm.reduction != "tree":
            continue
        stmts = [n for n in loop.descendants() if getattr(n, "kind", "") == "stmt"]
        if any(st.writes_local and st.writes_local in st.reads_locals for st in stmts):
            continue
        into = [a for st in stmts for a in st.accesses if a.is_write and any(
            b.array == a.array and not b.is_write and b.index_text == a.index_text for b in st.accesses)]
        what = (f"accumulates into the array element `{into[0].array}[{']['.join(into[0].index_text)}]`, which "
                "stays one serial chain" if into else "accumulates into nothing")
        out.append(attrs.evolve(_mdiag(d.mapping, ("loops", label, "reduction"), f"reduction: tree on loop "
                                       f"{label} has no effect: its body {what}; the copies keep partial sums of a "
                                       "local accumulator only", "a local accumulator in the loop's body",
                                       "accumulate into a local (`acc += ...;` in the loop, `y[i] = acc;` after it)"),
                                severity="warning"))
    return out


def guessed_branches(d: Design) -> list[Diagnostic]:
    """Branches whose taken probability nothing gives (no hint, not over loop indices, declared inputs or
    scalars the kernel computes alone): every static estimator prices them at 0.5. ``estimate`` says so in a
    note; ``validate`` says it at the kernel's line too (an outside user's heap and relaxation kernels were
    priced at 0.5 by the analytical model, and repeated at 0.93-1.0 confidence by the llm, with no warning)."""
    file = d.workload.source_map.file if d.workload.source_map else "<workload>"
    out = []
    for br in d.tree.walk():
        if getattr(br, "kind", "") != "branch":
            continue
        if d.branch_probability(br)[1] is None:
            continue
        how = (f"add workload.hints.{br.label}.taken_probability" if br.label else
               "label it (`L_name: if (...)`) and add workload.hints.L_name.taken_probability")
        out.append(Diagnostic(file, br.line, None, "workload.hints", f"branch `{br.cond_text}` has no "
                              "taken_probability hint, and its condition is not one the estimators can run on "
                              "declared inputs: they price it taken half the time",
                              "a taken_probability for a branch the data decide", how, severity="warning"))
    return out


def partitions_beyond_banks(d: Design) -> list[Diagnostic]:
    """Partitions of the arrays on one level (an unpartitioned array is one) that outnumber its banks, where
    any is partitioned: the schedule gives each partition
    ports of its own (``llmulator.costs.array_ports``), so its II is optimistic there; the level's
    bandwidth still bounds the run (an outside user's three arrays at cyclic 8 on 4 single-port banks:
    II 1 in the schedule where the ports allow 6, the total caught by the bandwidth bound)."""
    out = []
    for lv in d.arch.memory:
        if lv.kind == "dram":
            continue
        parts = {}  # every array on the level is a memory of its own: one, or its partitions
        for arr in d.workload.arrays:
            p = d.mapping.partition.get(arr)
            if d.placement(arr) == lv.name:
                parts[arr] = 1 if p is None else (
                    d.workload.shape(arr, d.sizes)[p.dim - 1] if p.type == "complete" else p.factor)
        split = sorted(a for a in parts if a in d.mapping.partition)
        if split and sum(parts.values()) > lv.banks:
            first = split[0]
            out.append(attrs.evolve(_mdiag(d.mapping, ("partition", first), f"the partitions of "
                                           f"{', '.join(f'{a} ({n})' for a, n in sorted(parts.items()))} on "
                                           f"{lv.name} are {sum(parts.values())}, the level has {lv.banks} banks: "
                                           "the schedule gives each partition ports of its own, so its II is "
                                           "optimistic; the level's bandwidth still bounds the run",
                                           f"at most {lv.banks} partitions on {lv.name}",
                                           "lower the factors, or give the level more banks"), severity="warning"))
    return out


def design_warnings(d: Design) -> list[Diagnostic]:
    """Every warning ``validate`` prints for a whole design."""
    return (missing_hints(d.workload, d.tree, d.hints, d) + unachievable_ii(d) + float_on_int_units(d)
            + operands_wider_than_units(d) + idle_tree_reductions(d) + partitions_beyond_banks(d)
            + guessed_branches(d) + macs_short_of_pes(d))


def macs_short_of_pes(d: Design) -> list[Diagnostic]:
    """A PE array with fewer ``mac`` units than PEs, in a design that maps loops onto it: hlsim and the static
    estimators share the units among the PEs (a step takes more cycles), the rtl profiler builds one MAC per PE
    (an outside probe: 8 macs on a 4x4 array, hlsim 48 cycles, the RTL 39, and nothing said so)."""
    pe, mac = d.arch.pe_array, d.arch.operators.get("mac")
    if pe is None or mac is None or mac.count >= pe.size or not any(lm.spatial for lm in d.mapping.loops.values()):
        return []
    from .yamlsrc import SourceMap
    smap = d.arch.source_map or SourceMap("<architecture>")
    return [attrs.evolve(smap.diag(
        ("architecture", "compute", "operators", "mac", "count"),
        f"the {pe.rows}x{pe.cols} PE array has {pe.size} PEs and the architecture {mac.count} mac units: hlsim and "
        "the estimators share the units among the PEs (each step takes more cycles), the rtl profiler builds one "
        "MAC per PE", f"mac count {pe.size} (one per PE)", "set compute.operators.mac.count to rows x cols"),
        severity="warning")]
