"""Static HLS-style cycle model for loop nests that are not bound to a PE array.

A pipelined loop (``pipeline_ii``) costs ``depth + (ceil(n/U) - 1) x II`` per
entry, with II = max(target, resource MII, memory-port MII, recurrence MII)
and loops inside it fully unrolled (HLS semantics). Other loops cost
``ceil(n/U) x (body + 1)``. A statement costs the critical path of its
expression DAG with the architecture's operator latencies and the memory
latency of the level each array is placed on. Data-dependent trip counts and
branch probabilities come from the workload's hints (expected values): this
model is static; profilers measure the real ones.
"""

from __future__ import annotations

import math
from collections import Counter

from llmulator.costs import array_ports, combining_latency, level_latency, op_latency
from llmulator.design import Design
from llmulator.kernel import Loop, Statement


def stmt_depth(design: Design, st: Statement) -> int:
    """Critical path of one statement's DAG, at least one cycle."""
    finish: list[int] = []
    unfused_mac = "mac" in st.ops and "mac" not in design.stmt_ops(st)
    for node in st.dag:
        start = max((finish[d] for d in node.deps), default=0)
        if node.op == "load":
            lat = level_latency(design, node.array)
        elif node.op == "store":
            lat = 1
        elif node.op == "mac" and unfused_mac:
            lat = op_latency(design, "mul") + op_latency(design, "add")
        else:
            lat = op_latency(design, node.op)
        finish.append(start + lat)
    return max(finish, default=1) or 1


class PipelineModel:
    """Cycles of a loop tree under the HLS model; records II and depth per pipelined loop."""

    def __init__(self, design: Design):
        self.d = design
        self.loop_info: dict[str, dict[str, float]] = {}
        self.notes: list[str] = []

    def prob(self, br) -> float:
        h = self.d.workload.hints.get(br.label or "", {})
        if "taken_probability" in h:
            return float(h["taken_probability"])
        note = (f"branch at line {br.line} (`{br.cond_text}`) has no taken_probability hint; assumed 0.5")
        if note not in self.notes:
            self.notes.append(note)
        return 0.5

    def cost(self, nodes) -> float:
        total = 0.0
        for n in nodes:
            if isinstance(n, Loop):
                total += self.loop_cycles(n)
            elif getattr(n, "kind", "") == "branch":
                p = self.prob(n)
                total += stmt_depth(self.d, n.cond) + p * self.cost(n.then) + (1 - p) * self.cost(n.orelse)
            elif n.kind == "stmt":
                total += stmt_depth(self.d, n)
        return total

    def loop_cycles(self, loop: Loop) -> float:
        lm = self.d.mapping.loop(loop.label)
        n = self.d.trips(loop.label)
        u = max(1, lm.unroll or 1)
        groups = math.ceil(n / u) if n > 0 else 0
        if lm.pipeline_ii:
            ii, depth, mii = self.pipelined(loop, u, lm.pipeline_ii)
            cyc = depth + max(groups - 1, 0) * ii if groups else 0.0
            self.loop_info[loop.label] = {"ii": ii, "depth": depth, "trips": n, **mii}
            return cyc
        body = self.cost(loop.body)
        if u > 1:
            ops = self.body_ops(loop.body, 1.0)
            res = max((math.ceil(c * u / self.d.arch.operators[k].count) for k, c in ops.items()
                       if k in self.d.arch.operators), default=0)
            body = max(body, res)
        cyc = groups * (body + 1)
        self.loop_info[loop.label] = {"trips": n, "body_cycles": body}
        return cyc

    def body_ops(self, nodes, mult: float, predicated: bool = True) -> Counter:
        """Operations per iteration of the enclosing loop (inner loops unrolled, branches predicated)."""
        ops: Counter = Counter()
        for n in nodes:
            if isinstance(n, Loop):
                ops.update(self.body_ops(n.body, mult * self.d.trips(n.label)))
            elif getattr(n, "kind", "") == "branch":
                ops.update(self.body_ops([n.cond], mult))
                ops.update(self.body_ops(n.then + n.orelse, mult))
            elif n.kind == "stmt":
                for k, v in self.d.stmt_ops(n).items():
                    ops[k] += v * mult
        return ops

    def _stmts(self, nodes, mult: float, out: list):
        for n in nodes:
            if isinstance(n, Loop):
                self._stmts(n.body, mult * self.d.trips(n.label), out)
            elif getattr(n, "kind", "") == "branch":
                out.append((n.cond, mult))
                self._stmts(n.then + n.orelse, mult, out)
            elif n.kind == "stmt":
                out.append((n, mult))

    def pipelined(self, loop: Loop, u: int, target: int) -> tuple[float, float, dict[str, float]]:
        stmts: list[tuple[Statement, float]] = []
        self._stmts(loop.body, 1.0, stmts)
        ops = self.body_ops(loop.body, 1.0)
        res_mii = 1.0
        for k, c in ops.items():
            unit = self.d.arch.operators.get(k)
            if unit is not None and k != "select":
                res_mii = max(res_mii, math.ceil(c * u / unit.count))
        per_array: Counter = Counter()
        for st, mult in stmts:
            for a in st.accesses:
                per_array[a.array] += mult
        mem_mii = 1.0
        for arr, cnt in per_array.items():
            ports = array_ports(self.d, arr)
            if ports != math.inf:
                mem_mii = max(mem_mii, math.ceil(cnt * u / ports))
        rec_mii = 1.0
        for st, _ in stmts:
            rec_mii = max(rec_mii, self.recurrence(st, loop))
        ii = float(max(target, res_mii, mem_mii, rec_mii))
        # depth: the body's statements in sequence; unrolled inner loops add a reduction tree
        depth = 0.0
        for n in loop.body:
            depth += self.node_depth(n)
        return ii, max(depth, 1.0), {"res_mii": res_mii, "mem_mii": mem_mii, "rec_mii": rec_mii}

    def node_depth(self, n) -> float:
        if isinstance(n, Loop):
            inner = sum(self.node_depth(c) for c in n.body)
            trips = max(1.0, self.d.trips(n.label))
            lat = max((op_latency(self.d, k) for st in n.statements() for k in st.ops), default=1)
            return inner + math.ceil(math.log2(trips)) * lat
        if getattr(n, "kind", "") == "branch":
            return stmt_depth(self.d, n.cond) + max([self.node_depth(c) for c in n.then + n.orelse], default=0)
        return float(stmt_depth(self.d, n))

    def recurrence(self, st: Statement, loop: Loop) -> float:
        """Recurrence MII of a statement in a pipelined loop (loop-carried dependence, distance 1)."""
        var = loop.var
        if st.writes_local and st.writes_local in st.reads_locals:
            return float(combining_latency(self.d, st))
        writes = [a for a in st.accesses if a.is_write]
        reads = [a for a in st.accesses if a.is_read]
        for w in writes:
            for r in reads:
                if r.array != w.array:
                    continue
                same = r.index_text == w.index_text
                depends = var is not None and any(a is not None and a.depends_on(var) for a in w.affine)
                if (same and not depends) or (not same and depends):
                    return float(stmt_depth(self.d, st))
        return 1.0
