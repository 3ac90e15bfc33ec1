"""Static scheduling of loop bodies for hlsim: resource-constrained list scheduling.

A body (the statements of one loop iteration, with inner loops of a
pipelined loop fully unrolled and the body replicated ``unroll`` times) is
turned into one data-flow graph of operation nodes. Nodes are list-scheduled
cycle by cycle in order of their longest path to the end, subject to

* the architecture's operator units: at most ``count`` issues of a class per
  cycle (units are fully pipelined), each taking ``latency_cycles``;
* memory ports: at most ``ports x banks`` accesses of one array per cycle,
  where banks come from the mapping's array partitioning (a register-file
  array has no limit; a DRAM array serves one access per cycle).

The schedule length is the body's *depth*. For a pipelined loop the
initiation interval is ``II = max(target, ResMII, MemMII, RecMII)`` (Rau's
modulo-scheduling bounds): ResMII = max over classes of ceil(uses / units),
MemMII = max over arrays of ceil(accesses / ports), RecMII from loop-carried
dependences (a scalar accumulator: the latency of its combining operation; a
read-modify-write of one array element across iterations: the load-to-store
path). See docs/timing-model.md.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import attrs
from llmulator.costs import array_ports, combining_latency, level_latency, op_latency
from llmulator.design import Design
from llmulator.kernel import Loop, Statement

MAX_NODES = 4_000  # beyond this, a closed-form bound (dependence chain + busiest resource) replaces the schedule


@attrs.define
class Node:
    op: str  # operator class, 'load', 'store'
    latency: int
    deps: list[int]
    resource: str | None  # 'op:<class>' or 'mem:<array>' or None (free)
    prio: int = 0


@attrs.define
class Schedule:
    depth: int
    uses: Counter  # resource -> issues in the body
    peak: Counter  # resource -> most issues in one cycle (units needed without sharing over time)
    nodes: int


class GraphBuilder:
    """Accumulates statements into one DAG, with dependences through locals and arrays."""

    def __init__(self, design: Design):
        self.d = design
        self.nodes: list[Node] = []
        self.local_def: dict[str, int] = {}  # local -> node producing its value
        self.port_free = False  # accesses inside PE-array loops reach the PEs through the array's operand network
        self.env: dict[str, int] = {}  # variable of an unrolled loop -> offset of the copy being built
        self.stores: dict[str, list[tuple]] = defaultdict(list)  # array -> [(address key, node)]
        self.loads: dict[str, list[tuple]] = defaultdict(list)

    def _append(self, node: Node) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def _key(self, acc) -> tuple | None:
        """Address of an access within the unrolled body: per dimension the symbolic part (variables
        that are not unrolled, constant text) and the numeric offset of this copy; None if not affine."""
        if acc is None or acc.indirect:
            return None
        key = []
        for a in acc.affine:
            sym = tuple(sorted((v, c) for v, c in a.coefs.items() if c and v not in self.env))
            num = sum(c * self.env[v] for v, c in a.coefs.items() if v in self.env)
            key.append((sym, a.const, num))
        return tuple(key)

    @staticmethod
    def _may_alias(k1: tuple | None, k2: tuple | None) -> bool:
        """Two accesses of one array may touch the same element unless their symbolic parts agree and
        their copy offsets differ in some dimension (then they are provably distinct)."""
        if k1 is None or k2 is None or len(k1) != len(k2):
            return True
        if any(a[:2] != b[:2] for a, b in zip(k1, k2, strict=True)):
            return True
        return all(a[2] == b[2] for a, b in zip(k1, k2, strict=True))

    def add_statement(self, st: Statement) -> None:
        d = self.d
        unfused = "mac" in st.ops and "mac" not in d.stmt_ops(st)
        local_deps = [self.local_def[v] for v in st.reads_locals if v in self.local_def]
        accesses = iter(st.accesses)  # in the same order as the statement's load and store nodes
        idx: dict[int, int] = {}
        for j, n in enumerate(st.dag):
            deps = [idx[k] for k in n.deps]
            ordered = not self.port_free  # PE-array operands flow through PE registers, not memory
            if n.op == "load":
                key = self._key(next(accesses, None))
                if ordered:
                    deps += [node for k, node in self.stores[n.array] if self._may_alias(k, key)]
                i = self._append(Node("load", level_latency(d, n.array), deps,
                                      None if self.port_free else f"mem:{n.array}"))
                self.loads[n.array].append((key, i))
            elif n.op == "store":
                key = self._key(next(accesses, None))
                deps += local_deps
                if ordered:
                    deps += [node for k, node in self.loads[n.array] if self._may_alias(k, key)]
                    deps += [node for k, node in self.stores[n.array] if self._may_alias(k, key)]
                i = self._append(Node("store", 1, deps, None if self.port_free else f"mem:{n.array}"))
                self.stores[n.array].append((key, i))
            elif n.op == "mac" and unfused:
                mul = self._append(Node("mul", op_latency(d, "mul"), deps + local_deps, "op:mul"))
                i = self._append(Node("add", op_latency(d, "add"), [mul] + local_deps, "op:add"))
            else:
                res = None if n.op == "select" else f"op:{n.op}"
                i = self._append(Node(n.op, op_latency(d, n.op), deps + local_deps, res))
            idx[j] = i
        for nd in self.nodes[-len(idx):] if idx else []:
            nd.deps = sorted(set(nd.deps))
        if st.writes_local and idx:
            self.local_def[st.writes_local] = max(idx.values())

    def add_model(self, model: list, trips) -> None:
        """Add a mapped body (see hlsim.instrument): inner loops unrolled ``trips(kl, is_tile)`` times."""
        for entry in model:
            kind = entry[0]
            if kind == "stmt":
                self.add_statement(entry[1])
            elif kind == "branch":
                if entry[1] is not None:
                    self.add_statement(entry[1])
                self.add_model(entry[2], trips)  # predicated: both sides
                self.add_model(entry[3], trips)
            else:
                _, kl, is_tile, sub = entry
                spatial = kl is not None and not is_tile and bool(self.d.mapping.loop(kl).spatial)
                saved = self.port_free
                self.port_free = saved or spatial
                loop = self.d.tree.loops.get(kl) if kl is not None and not is_tile else None
                var = loop.var if loop is not None else None
                for k in range(int(math.ceil(trips(kl, is_tile)))):
                    if var is not None:
                        self.env[var] = k * loop.step  # this copy's offset from the loop's first value
                    self.add_model(sub, trips)
                if var is not None:
                    self.env.pop(var, None)
                self.port_free = saved


def list_schedule(design: Design, nodes: list[Node], caps: dict[str, float] | None = None) -> Schedule:
    """Resource-constrained list scheduling; returns the schedule length and resource use.

    ``caps`` overrides the issues per cycle of some resources (one PE's own units)."""
    n = len(nodes)
    if n == 0:  # constants into registers: wiring, no cycle
        return Schedule(0, Counter(), Counter(), 0)
    succ: list[list[int]] = [[] for _ in range(n)]
    for i, nd in enumerate(nodes):
        for dep in nd.deps:
            succ[dep].append(i)
    for i in range(n - 1, -1, -1):  # deps point backwards: reverse order is a topological order
        nodes[i].prio = nodes[i].latency + max((nodes[s].prio for s in succ[i]), default=0)
    cap: dict[str, float] = dict(caps or {})
    for nd in nodes:
        r = nd.resource
        if r is None or r in cap:
            continue
        if r.startswith("op:"):
            unit = design.arch.operators.get(r[3:])
            cap[r] = unit.count if unit is not None else math.inf
        else:
            cap[r] = array_ports(design, r[4:])
    finish = [0] * n
    remaining = [len(nd.deps) for nd in nodes]
    ready_at = [0] * n
    ready = [i for i in range(n) if remaining[i] == 0]
    scheduled = cycle = depth = 0
    uses: Counter = Counter()
    peak: Counter = Counter()
    while scheduled < n:
        used: Counter = Counter()
        progress = True
        while progress:  # repeat within a cycle so zero-latency operations chain
            progress = False
            ready.sort(key=lambda i: -nodes[i].prio)
            keep: list[int] = []
            for i in ready:
                r = nodes[i].resource
                if ready_at[i] > cycle or (r is not None and used[r] >= cap[r]):
                    keep.append(i)
                    continue
                if r is not None:
                    used[r] += 1
                    uses[r] += 1
                finish[i] = cycle + nodes[i].latency
                depth = max(depth, finish[i])
                scheduled += 1
                progress = True
                for s_ in succ[i]:
                    remaining[s_] -= 1
                    ready_at[s_] = max(ready_at[s_], finish[i])
                    if remaining[s_] == 0:
                        keep.append(s_)
            ready = keep
        for r, k in used.items():
            peak[r] = max(peak[r], k)
        cycle += 1
    return Schedule(max(depth, 1) if n else 0, uses, peak, n)


def initiation_interval_from(design: Design, loop: Loop, sched: Schedule, target: int,
                             stmts: list[Statement], in_pe: bool = False) -> dict[str, float]:
    """II = max(target, ResMII, MemMII, RecMII) for a pipelined loop with this body schedule."""
    res_mii = mem_mii = 1
    for r, u in sched.uses.items():
        if r.startswith("op:"):
            unit = design.arch.operators.get(r[3:])
            if unit is not None:
                res_mii = max(res_mii, math.ceil(u / unit.count))
        elif r.startswith("mem:"):
            ports = array_ports(design, r[4:])
            if ports != math.inf:
                mem_mii = max(mem_mii, math.ceil(u / ports))
    rec_mii = 1
    for st in stmts:
        rec_mii = max(rec_mii, recurrence(design, st, loop, in_pe))
    ii = max(target, res_mii, mem_mii, rec_mii)
    return {"ii": ii, "res_mii": res_mii, "mem_mii": mem_mii, "rec_mii": rec_mii}


def statement_depth(design: Design, st: Statement) -> int:
    g = GraphBuilder(design)
    g.add_statement(st)
    return list_schedule(design, g.nodes).depth


def recurrence(design: Design, st: Statement, loop: Loop, in_pe: bool = False) -> int:
    """Loop-carried dependence bound of one statement in a pipelined loop (distance 1).

    A scalar accumulator, or (on a PE array, ``in_pe``) an array element that
    stays in the PE's register, is bounded by its combining operation's latency;
    a read-modify-write through memory by the statement's whole load-to-store path.
    """
    if st.writes_local and st.writes_local in st.reads_locals:
        return combining_latency(design, st)
    var = loop.var
    for w in (a for a in st.accesses if a.is_write):
        for r in (a for a in st.accesses if a.is_read and a.array == w.array):
            same = r.index_text == w.index_text
            varies = var is not None and any(a is not None and a.depends_on(var) for a in w.affine)
            if same and not varies and in_pe:
                return combining_latency(design, st)
            if (same and not varies) or (not same and varies):
                return statement_depth(design, st)
    return 1
