"""Per-operation and per-access costs of an architecture, shared by every static model.

The analytical estimator and the hlsim scheduler price the same things the
same way: an operator's latency (a ``mac`` without a mac unit is a mul then an
add), the latency of the level an array is placed on, the accesses per cycle
an array can serve given its level's ports and the mapping's partitioning, and
the latency of the operation that combines into an accumulator.
"""

from __future__ import annotations

import math


def op_latency(design, cls: str) -> int:
    ops = design.arch.operators
    if cls in ops:
        return ops[cls].latency_cycles
    if cls == "mac" and "mul" in ops and "add" in ops:
        return ops["mul"].latency_cycles + ops["add"].latency_cycles
    return 0 if cls == "select" else 1


def level_latency(design, array: str | None) -> int:
    """Latency of a load: the level the array is placed on (at least 1); locals live in registers (0)."""
    if array is None or array not in design.workload.arrays:
        return 0
    return max(1, design.arch.level(design.placement(array)).latency_cycles)


def array_ports(design, array: str) -> float:
    """Accesses per cycle one array can serve: ports per bank x banks from partitioning.

    A register-file array is unlimited; a DRAM array serves one access per cycle.
    """
    lv = design.arch.level(design.placement(array))
    if lv.kind == "regfile":
        return math.inf
    if lv.kind == "dram":
        return 1.0
    p = design.mapping.partition.get(array)
    banks = 1
    if p is not None:
        banks = design.workload.shape(array, design.sizes)[p.dim - 1] if p.type == "complete" else p.factor
    return float(lv.ports * banks)


def combining_latency(design, st, tree: bool = False) -> int:
    """Latency of combining a value into an accumulator: the longest path of the statement's operations from
    those that read the accumulator local to its result (``s += a*b`` unfused: the add, the product is off the
    path; ``s = s > x ? s : x``: the compare and the select, where before 2026-12-06 the last operation alone,
    the select of latency 0 taken as 1, made a tree of maxima shorter than any schedule: an outside probe).
    Without an accumulator local (an array element), the statement's last operation. A fused mac combines on
    itself; ``tree``: two partial sums meet on an adder where the architecture has one."""
    acc = st.writes_local if st.writes_local and st.writes_local in st.reads_locals else None
    if acc is None and (held := _element_path(design, st, tree)):
        return held
    if acc is None:
        comb = next((n.op for n in reversed(st.dag) if n.op not in ("store", "load")), "add")
        return max(1, op_latency(design, combiner(design, st, comb, tree)))
    path: dict[int, int] = {}
    for j in _accumulator_path(st, acc):
        before = [path[k] for k in st.dag[j].deps if k in path]
        path[j] = max(before, default=0) + op_latency(design, combiner(design, st, st.dag[j].op, tree))
    return max(1, max(path.values(), default=0))


def latency_from_local(design, st, local: str) -> int:
    """Cycles from ``local``'s value to the statement's result at least: the longest dependence path from an
    operation that reads it (a load whose index it is included, at its level's latency) to the result."""
    path: dict[int, int] = {}
    for j, n in enumerate(st.dag):
        if n.op == "store":
            continue
        before = [path[k] for k in n.deps if k in path]
        if local in n.reads or before:
            lat = level_latency(design, n.array) if n.op == "load" else op_latency(
                design, combiner(design, st, n.op, False))
            path[j] = max(before, default=0) + lat
    return max(path.values(), default=0)


def path_latency(design, st, first: int, last: int) -> int:
    """Cycles from the issue of the statement's node ``first`` to that of node ``last`` at least: the longest
    dependence path between them (``first``'s latency included; 0 if ``last`` does not depend on it)."""
    path: dict[int, int] = {}
    for j, n in enumerate(st.dag):
        before = [path[k] for k in n.deps if k in path]
        if j == first or before:
            start = max(before, default=0)
            if j == last:
                return start
            lat = level_latency(design, n.array) if n.op == "load" else 1 if n.op == "store" else op_latency(
                design, combiner(design, st, n.op, False))
            path[j] = start + lat
    return 0


def _element_path(design, st, tree: bool) -> int:
    """An array element the statement reads and stores back (``y[j] = y[j] * 3 + x[t][j]``): the latency of the
    operations from its load to the stored value, the chain one update waits for the last (0 where the statement
    stores no element it loads). Before hlsim 0.58 the last operation alone: a PE-array fold keeping ``y[j]`` in
    its register ran that update at II 2, the add, where the multiply before it makes 5 (an outside probe)."""
    store = next((n for n in st.dag if n.op == "store" and n.access is not None), None)
    if store is None:
        return 0
    key = (store.array, tuple(store.access.index_text))
    best = 0
    for i, n in enumerate(st.dag):
        if n.op != "load" or n.access is None or (n.array, tuple(n.access.index_text)) != key:
            continue
        path = {i: 0}
        for j in range(i + 1, len(st.dag)):
            m = st.dag[j]
            before = [path[k] for k in m.deps if k in path] + ([path[m.acc]] if m.acc in path else [])
            if not before:
                continue
            if m.op == "store":
                best = max(best, max(before)) if m is store else best
                continue
            path[j] = max(before) + (level_latency(design, m.array) if m.op == "load" else
                                     op_latency(design, combiner(design, st, m.op, tree)))
    return best


def _accumulator_path(st, acc: str) -> list[int]:
    """The statement's operations that read the accumulator local ``acc`` or a result of one that does."""
    on: list[int] = []
    for j, n in enumerate(st.dag):
        if n.op not in ("store", "load") and (acc in n.reads or any(k in on for k in n.deps)):
            on.append(j)
    return on


def tree_combining_ops(design, label: str) -> dict[str, float]:
    """Operations per invocation of loop ``label`` that combine its ``reduction: tree`` partials on exit.

    Each local the U unrolled copies accumulate is held as U partial values, which U - 1 combining steps
    reduce to one: a step is one operation of each class on the statement's accumulator path (a sum's add,
    a maximum's compare and select; a fused mac's partial products meet on an adder where there is one).
    Before hlsim 0.44 these steps lengthened the exit but were not operations: no energy, and a mac tree
    allocated no adder (an outside probe counted 32 adds where a sum of 32 unrolled 8 ways runs 39)."""
    lm = design.mapping.loop(label)
    loop = design.tree.loops.get(label)
    u = max(1, lm.unroll or 1) if lm is not None else 1
    if loop is None or lm.reduction != "tree" or u <= 1 or lm.spatial:
        return {}
    for up in loop.ancestors():   # inside another region it runs fully unrolled there: no tree of its own
        um = design.mapping.loop(up.label)
        if um.pipeline_ii or (um.unroll or 1) > 1 or um.spatial:
            return {}
    out: dict[str, float] = {}
    seen: set[str] = set()
    for st in loop.descendants():
        acc = getattr(st, "writes_local", None) if getattr(st, "kind", "") == "stmt" else None
        if acc is None or acc not in st.reads_locals or acc in seen:
            continue
        seen.add(acc)   # (partials per local: every update of it combines with the same operation)
        for cls in {combiner(design, st, st.dag[j].op, True) for j in _accumulator_path(st, acc)}:
            out[cls] = out.get(cls, 0.0) + (u - 1)
    return out


def combiner(design, st, op: str, tree: bool) -> str:
    """The class a combining operation runs on: an unfused mac's add; a tree's partial sums on an adder."""
    if op == "mac" and ("mac" not in design.stmt_ops(st) or tree and "add" in design.arch.operators):
        return "add"
    return op


def _bank(design, array: str, index_value: int | None) -> str:
    p = design.mapping.partition.get(array)
    if p is None:
        return ""
    if index_value is None:
        return "#*"  # a dynamic index may hit any bank: it takes a port of every bank (read all, multiplex)
    size = design.workload.shape(array, design.sizes)[p.dim - 1]
    if p.type == "cyclic":
        return f"#{index_value % p.factor}"
    if p.type == "block":
        return f"#{(index_value // math.ceil(size / p.factor)) % p.factor}"
    return f"#{index_value % size}"  # complete: one element per bank


def memory_resource(design, array: str, index_value: int | None = None) -> str | None:
    """The memory port an access takes in a schedule: None for a register file (no limit), one shared
    channel per DRAM level (``mem:@LEVEL``), else the array's bank holding the element
    (``mem:ARRAY#BANK``; ``#*`` for an index not known statically). ``index_value``: the index along
    the partitioned dimension (its affine offset; the symbolic part is taken as bank-aligned). An array the
    kernel declares lives in registers (:func:`access_words`): no port (before hlsim 0.46 it took the DRAM
    channel's, the level a workload array without a placement gets: II 5 where 1; an outside probe)."""
    if array not in design.workload.arrays:
        return None
    lv = design.arch.level(design.placement(array))
    if lv.kind == "regfile":
        return None
    if lv.kind == "dram":
        return f"mem:@{lv.name}"
    return f"mem:{array}{_bank(design, array, index_value)}"


def port_words(level, bits: int) -> int:
    """Words one scalar access of a ``bits``-wide element takes at ``level``: an SRAM port and a DRAM channel
    move whole words of their width (an int64 on a 32-bit port: two; an int8 on a 64-bit bus: one word, the
    whole transfer), a register file one element. The one rule behind the port schedule (:func:`access_words`)
    and the energy (``llmulator.words.access_bits``). A DRAM access was priced at the element's bits until
    hlsim 0.40, while its schedule took the channel for a whole transfer (an outside probe: int8 loads from a
    64-bit bus 8x below the transfers that move them)."""
    return -(-bits // level.width_bits) if level.kind in ("sram", "dram") else 1


def access_words(design, array: str) -> int:
    """Port issues one scalar access of ``array`` takes (:func:`port_words` at the array's level; an array the
    kernel declares is not a workload array: it lives in registers, one issue)."""
    spec = design.workload.arrays.get(array)
    return 1 if spec is None else port_words(design.arch.level(design.placement(array)), spec.bits)


def resource_cap(design, resource: str) -> float:
    """Issues per cycle of a schedule resource: an operator class's units, a bank's or a DRAM
    channel's ports (``#*``: the ports every bank shares for dynamic indices; ``#all``: every bank
    of the array together)."""
    if resource.startswith("op:"):
        unit = design.arch.operators.get(resource[3:])
        return float(unit.count) if unit is not None else math.inf
    name = resource[4:]
    if name.startswith("@"):
        return float(design.arch.level(name[1:]).ports)
    array, _, bank = name.partition("#")
    if bank == "all":  # every bank of the array together (closed-form bounds)
        return array_ports(design, array)
    return float(design.arch.level(design.placement(array)).ports)


def counter_test(st) -> bool:
    """A loop's test that reads neither an array nor a local (`j < N` of a ``for`` left by ``break``): the loop
    control's own counter compare, no cycle (``llmulator.timing``), no unit (``llmulator.area``) and, from hlsim
    0.44, no datapath operation (before, its compare was counted on each evaluation, so a ``break`` doubled a
    loop's compares: an outside probe against gcov's counts). Inside a pipelined or unrolled region too, from
    hlsim 0.48: it was in the scheduled body there, took a comparator slot (a pipelined loop with a break ran at
    II 2 on one comparator where the same loop without it ran at II 1) and counted twice per trip (an outside
    probe)."""
    return not (st.accesses or st.reads_locals)
