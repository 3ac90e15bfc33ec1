"""Physical lower bounds on a profile's cycles, checked on every hlsim run.

hlsim labels every dataset, so a schedule that reports fewer cycles than the
hardware could ever deliver must never become a number. After each profile,
these bounds are computed from what the run executed (its operation,
iteration and traffic counters) and the specs alone -- not from hlsim's
schedules -- and a violation raises :class:`llmulator.errors.InvariantError`
naming the design:

* **compute**: per nest and operator class, executed operations / the units
  that can execute them (a nest bound to the PE array: the bound PEs x each
  PE's units; a class shared by the array, or any other nest: ``count``); over
  the whole design, every nest's operations on all ``count`` units (dataflow
  overlap cannot create units);
* **bandwidth**: per level, the bits the run moved through it (datapath
  accesses, PE-array operands after multicast, tile transfers) / its
  bandwidth, per nest (on the backing store after its latency) and summed
  over the design;
* **recurrence**: a pipelined loop that carries a value from one iteration to
  the next needs the latency of its longest chain per iteration: through
  locals (over statements, ``_carried_latency``), or through memory where a
  statement loads what its own store wrote a certain number of iterations
  before (``_memory_latency``): (iterations - invocations) x latency, or per
  group of unrolled copies (iterations / unroll - invocations) x latency where
  ``reduction: tree`` gives each copy its own partial;
* **words** (:func:`check_words`): each ``in`` array on chip that the run read
  needs at least one word read from the backing store, and each ``out`` or
  ``inout`` array on chip that it wrote at least one word written back (a
  loop under a top-level ``if`` once moved none: a vector add with 0 DRAM words); and the
  backing store moved at least the distinct elements the run read (before writing them) and wrote
  (``llmulator.element_marks``: the instrumented run counts them).

The bounds are loose where the model is tight (they ignore latencies,
fill/drain and dependences other than accumulations): they prove the
absence of impossible numbers, not accuracy. docs/timing-model.md, section 6.
"""

from __future__ import annotations

import math
from collections import Counter

import attrs
from llmulator.costs import latency_from_local, level_latency, path_latency
from llmulator.design import Design
from llmulator.errors import InvariantError
from llmulator.expr import ExprError, evaluate
from llmulator.traffic import level_cycles, whole_cycles

SLACK = 1e-9  # relative tolerance for floating-point sums


@attrs.define
class NestRun:
    """What one top-level nest executed, as counted by the run."""

    label: str
    cycles: float
    ops: Counter = attrs.field(factory=Counter)  # operator class -> executions
    bits: Counter = attrs.field(factory=Counter)  # memory level -> bits moved through it
    band: list[str] | None = None  # the band bound to the PE array, if any
    pipelined: list[tuple[str, float, float]] = attrs.field(factory=list)  # (loop, iterations, invocations)
    busy: dict = attrs.field(factory=dict)  # schedule resource -> cycles its pipelines take it (dataflow sharing)
    rate: dict = attrs.field(factory=dict)  # schedule resource -> steady-state share of its issues per cycle


def bound_pes(design: Design, band: list[str]) -> float:
    """PEs a band keeps busy: the product of its spatial loops' point sizes."""
    n = 1.0
    for lb in band:
        lm = design.mapping.loop(lb)
        if lm.spatial:
            trips = 1.0
            for m in (lb,) + tuple(lm.fuse):  # a fused loop spans its members' trips
                trips *= design.trips(m)
            n *= min(float(lm.tile or trips), trips)
    return n


def units(design: Design, cls: str, band: list[str] | None) -> float:
    op = design.arch.operators[cls]
    pe = design.arch.pe_array
    if band and pe is not None and op.count >= pe.size:
        return bound_pes(design, band) * (op.count // pe.size)
    return float(op.count)


def _read_first(nodes, written: set, out: list) -> list:
    """Locals the nodes read before writing them (in program order): what an iteration takes from the one
    before."""
    for n in nodes:
        if hasattr(n, "band"):
            _read_first(n.body, written, out)
        elif getattr(n, "kind", "") == "branch":
            _read_first([n.cond] + n.then + n.orelse, written, out)
        elif getattr(n, "kind", "") == "stmt":
            out.extend(v for v in sorted(n.reads_locals) if v not in written and v not in out)
            if n.writes_local:
                written.add(n.writes_local)
    return out


def _chains(design: Design, nodes, dist: dict[str, int]) -> dict[str, int]:
    """``dist``: local -> cycles at least from the value an iteration started with to the local's value now;
    walked through ``nodes`` in program order (a statement's locals to its result at
    ``costs.latency_from_local``; a branch keeps the longer of its sides, as its pipelined datapath computes
    both; an inner loop, unrolled in the body, one trip where it runs any; a local written from nothing the
    chain reaches leaves the chain)."""
    for n in nodes:
        if hasattr(n, "band"):
            if design.trips(n.label) >= 1:
                dist = _chains(design, n.body, dist)
        elif getattr(n, "kind", "") == "branch":
            sides = _chains(design, n.then, dict(dist)), _chains(design, n.orelse, dict(dist))
            dist = {v: max(s[v] for s in sides if v in s) for v in set(sides[0]) | set(sides[1])}
        elif getattr(n, "kind", "") == "stmt" and n.writes_local:
            got = [dist[r] + latency_from_local(design, n, r) for r in n.reads_locals if r in dist]
            if n.copies in dist:
                got.append(dist[n.copies])
            dist = {**dist, n.writes_local: max(got)} if got else {v: t for v, t in dist.items() if v != n.writes_local}
    return dist


def _carried_latency(design: Design, label: str) -> int:
    """Cycles an iteration of loop ``label`` needs at least after the one before: the longest chain from a
    local the previous iteration left to the value of it this one leaves (``s += a[i]``: the add; ``t = s *
    c; s = t + a[i]``: the multiply and the add, where before 2026-12-06 each statement's own update alone
    counted, the mul off the chain; ``p = nx[p]``: the load), at least 1 where any local is carried.
    0 where none is."""
    body = design.tree.loops[label].body
    best = 0
    for v in _read_first(body, set(), []):
        end = _chains(design, body, {v: 0})
        if v in end and any(getattr(n, "writes_local", None) == v for n in design.tree.loops[label].descendants()):
            best = max(best, end[v], 1)
    return best


def _uniform_distance(design: Design, loop, store, load) -> int | None:
    """Iterations of ``loop`` from a store to the load of the same element, where every dimension of both is
    affine and they differ by a constant along the loop's variable alone (``a[i]`` stored, ``a[i - 2]``
    loaded: 2; ``y[0]`` both: 1); None where that is not certain (an indirect or symbolic index, a different
    coefficient, an inner loop's variable, another loop's offset)."""
    v, step, dist = loop.var, loop.step, None
    inner = {lp.var for lp in loop.descendants() if getattr(lp, "kind", "") == "loop" and lp.var}
    if len(store.affine) != len(load.affine) or (v is None and not loop.is_while) or step == 0 or loop.step_op != "+":
        return None
    for fs, fl in zip(store.affine, load.affine, strict=True):
        if fs is None or fl is None or fs.coefs != fl.coefs or inner & {k for k, c in fs.coefs.items() if c}:
            return None
        try:
            delta = evaluate(fs.const or "0", design.values) - evaluate(fl.const or "0", design.values)
        except ExprError:
            return None
        coef = fs.coefs.get(v, 0) if v is not None else 0
        if coef == 0:
            if delta != 0:
                return None
            continue
        k = delta / (coef * step)
        if k != int(k) or k < 1 or (dist is not None and int(k) != dist):
            return None
        dist = int(k)
    return dist if dist is not None else 1


def _memory_latency(design: Design, label: str, u: int = 1) -> float:
    """Cycles a group of ``u`` unrolled iterations of loop ``label`` needs at least where a statement loads an
    element an earlier iteration's store of the same statement wrote, at a certain distance d (``a[i] = a[i - 1]
    + b[i]``, ``y[0] += a[i]``, a row of an in-place stencil): the load, the operations from it to the stored value
    and the store's cycle, over d. Before 2026-12-06 no bound followed a chain through memory: a schedule that
    dropped those dependences passed every check (an outside probe removed them: 126 cycles where 2,048). The
    copies of a group pass the value in a register (hlsim 0.54, ``llmulator.copy_reuse``): a group chains one load,
    ``ceil(u / d)`` times the operations, and one store, and every ``d / u`` groups where d > u."""
    loop = design.tree.loops[label]
    best = 0.0
    for st in loop.descendants():
        if getattr(st, "kind", "") != "stmt":
            continue
        for j, n in enumerate(st.dag):
            if n.op != "store" or n.access is None or n.array not in design.workload.arrays:
                continue
            for k, m in enumerate(st.dag[:j]):
                if m.op == "load" and m.array == n.array and m.access is not None:
                    d = _uniform_distance(design, loop, n.access, m.access)
                    if d is not None:
                        load = level_latency(design, m.array)
                        ops = path_latency(design, st, k, j) - load
                        best = max(best, (load + math.ceil(u / d) * ops + 1) * min(1.0, u / d))
    return best


def lower_bounds(design: Design, nests: list[NestRun], cycles: float) -> list[tuple[str, float, float]]:
    """(what, bound, the cycles it must not exceed) for every bound of every nest and of the design
    (whose total is ``cycles``)."""
    arch = design.arch
    out: list[tuple[str, float, float]] = []
    total = Counter()
    total_bits = Counter()
    for nr in nests:
        for cls, n in nr.ops.items():
            if cls in arch.operators and cls != "select" and n > 0:
                b = n / units(design, cls, nr.band)
                out.append((f"nest {nr.label}: {n:g} {cls} operations on {units(design, cls, nr.band):g} units",
                            b, nr.cycles))
                total[cls] += n / arch.operators[cls].count
        for lv in arch.memory:
            bits = nr.bits.get(lv.name, 0.0)
            if bits > 0:
                # no word of the backing store arrives before its latency (hlsim 0.45: a streamed loop took the
                # bytes' time alone, and double buffering hid the first tile's latency behind nothing)
                lat = lv.latency_cycles if lv.name == arch.memory[0].name else 0
                out.append((f"nest {nr.label}: {bits / 8:g} bytes through {lv.name} at "
                            f"{lv.bandwidth_bytes_per_cycle:g} B/cycle" + (f" after {lat} cycles' latency" if lat
                                                                           else ""),
                            bits / 8 / lv.bandwidth_bytes_per_cycle + lat, nr.cycles))
                total_bits[lv.name] += bits
        rec = 0.0
        for label, iters, invs in nr.pipelined:
            lm = design.mapping.loop(label)
            lat = _carried_latency(design, label)
            mem = _memory_latency(design, label, max(1, lm.unroll or 1))
            if (lat or mem) and iters > 0:
                # copies of an unrolled body chain through the local unless a tree gives each its own partial
                # (before hlsim 0.42 every unroll divided: U times too weak for a serial accumulation); a chain
                # through memory is a chain whatever the mapping, one per group of copies (_memory_latency)
                u = max(1, lm.unroll or 1) if lm.reduction == "tree" else 1
                rec += max(max(0.0, iters / u - invs) * lat, max(0.0, iters / max(1, lm.unroll or 1) - invs) * mem)
        if rec > 0:
            out.append((f"nest {nr.label}: recurrences of its pipelined accumulations", rec, nr.cycles))
    for cls, b in total.items():
        out.append((f"design: {cls} operations of every nest on the architecture's units", b, cycles))
    for lv, bits in total_bits.items():
        bw = arch.level(lv).bandwidth_bytes_per_cycle
        lat = " after its latency" if lv == arch.memory[0].name else ""
        out.append((f"design: {bits / 8:g} bytes through {lv} at {bw:g} B/cycle{lat}",
                    float(level_cycles(design, arch.level(lv), bits)), cycles))
    return out


def shared_cycles(design: Design, nests: list[NestRun]) -> float:
    """Nests that overlap (``dataflow``) share the architecture's units and every level's bandwidth:
    the most any one of them needs when all nests' work goes through it, in whole cycles; no word of the backing
    store arrives before its latency (before hlsim 0.46 the bytes' time alone: two overlapped nests moving 1,024
    bytes on a 2-byte-a-cycle DRAM of 60 cycles' latency took 512 cycles)."""
    arch = design.arch
    ops, bits = Counter(), Counter()
    for nr in nests:
        for cls, n in nr.ops.items():
            if cls in arch.operators and cls != "select":
                ops[cls] += n / arch.operators[cls].count
        bits.update(nr.bits)
    need = [b for b in ops.values()]
    need += [float(level_cycles(design, arch.level(lv), b)) for lv, b in bits.items()]
    return float(whole_cycles(max(need, default=0.0)))


def check(design: Design, nests: list[NestRun], cycles: float) -> float:
    """Raise InvariantError if the profile's cycles break a physical bound; else return the tightest
    bound on the whole design (the cycles no schedule of this hardware could beat)."""
    found = lower_bounds(design, nests, cycles)
    bad = [(what, b, c) for what, b, c in found if b > c * (1 + SLACK) + 1e-6]
    longest = max((n.cycles for n in nests), default=0.0)
    if cycles + 1e-6 < longest * (1 - SLACK):
        bad.append(("total: its longest nest", longest, cycles))
    if bad:
        lines = "; ".join(f"{what}: needs >= {b:,.1f} cycles, has {c:,.1f}" for what, b, c in bad[:5])
        raise InvariantError(f"hlsim broke a physical bound on design {design.name}: {lines} "
                             "(this is a bug in llmulator's timing model; please report it with the three files)")
    if design.mapping.dataflow:
        return max([b for what, b, _ in found if what.startswith("design:")] + [0.0])
    per_nest: dict[str, float] = {}
    for what, b, _ in found:
        if what.startswith("nest "):
            key = what.split(":", 1)[0]
            per_nest[key] = max(per_nest.get(key, 0.0), b)
    return sum(per_nest.values())


def check_words(design: Design, touched: set[tuple[str, bool]], level_counts: dict[str, list[float]],
                marks: dict[str, tuple[float, float]] | None = None) -> dict[str, float]:
    """Raise InvariantError unless the backing store read at least one word of each ``in`` array held on chip
    that the run read, and wrote at least one of each ``out``/``inout`` array held on chip that it wrote
    (``touched``: (array, written); ``level_counts``: per level [reads, read bits, writes, write bits]).
    Also raise it where the backing store moved fewer words than the distinct elements the run read (of
    ``in``/``inout`` arrays, before writing them) or wrote (of ``out``/``inout`` arrays): ``marks``, per array,
    counted by the instrumented run (``llmulator.element_marks``). Returns :func:`distinct_words`."""
    backing = design.arch.memory[0].name
    need = {False: set(), True: set()}
    for name, write in touched:
        spec = design.workload.arrays.get(name)
        if spec is None or design.placement(name) == backing:
            continue
        if (spec.role == "in" and not write) or (spec.role in ("out", "inout") and write):
            need[write].add(name)
    reads, _, writes, _ = level_counts.get(backing, [0.0, 0.0, 0.0, 0.0])
    bad = [f"{what} {len(need[w])} on-chip arrays ({', '.join(sorted(need[w]))}) with {got:g} words"
           for w, what, got in ((False, "reads", reads), (True, "writes", writes)) if got + 1e-9 < len(need[w])]
    if bad:
        raise InvariantError(f"hlsim broke a physical bound on design {design.name}: the backing store "
                             f"{backing} {'; '.join(bad)} (this is a bug in llmulator's timing model; please "
                             "report it with the three files)")
    distinct = distinct_words(design, marks or {}, level_counts.get(backing, [0.0, 0.0, 0.0, 0.0]))
    short = [f"{what} {distinct[k] - distinct[k + '_short']:g} words where the run {what} {distinct[k]:g} distinct "
             "elements" for k, what in (("read", "read"), ("written", "wrote")) if distinct[k + "_short"] > 0]
    if short:
        raise InvariantError(f"hlsim broke a physical bound on design {design.name}: the backing store {backing} "
                             f"{'; '.join(short)} (this is a bug in llmulator's timing model; please report it "
                             "with the three files)")
    return distinct


def distinct_words(design: Design, marks: dict[str, tuple[float, float]], backing_counts: list[float]
                   ) -> dict[str, float]:
    """The distinct elements the run needed from the backing store (``in``/``inout`` arrays, read before written)
    and gave back to it (``out``/``inout`` arrays, written), and how many words short of them the tile model
    moved: ``{"read": n, "written": n, "read_short": n, "written_short": n}``. Every such element moves at least
    once whatever the tiles, reuse and forwarding; a shortfall is a bug of the tile model (hlsim 0.57 found
    bfs, fdtd-2d, geometric and symbolic steps and locals written inside an expression with it)."""
    arrays = design.workload.arrays
    need_r = sum(r for n, (r, _) in marks.items() if n in arrays and arrays[n].role in ("in", "inout"))
    need_w = sum(w for n, (_, w) in marks.items() if n in arrays and arrays[n].role in ("out", "inout"))
    reads, _, writes, _ = backing_counts
    short = {k: max(0.0, need - got) if got + 1e-6 * max(need, 1.0) < need else 0.0
             for k, need, got in (("read_short", need_r, reads), ("written_short", need_w, writes))}
    return {"read": need_r, "written": need_w, **short}
