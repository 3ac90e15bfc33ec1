"""GNN-HLS-style graph of a design: the control/data-flow graph of the rendered, mapped kernel.

The kernel is taken as HLS C with the mapping applied (``llmulator.render.
mapped_kernel``: strip-mined tile and point loops, reordered bands, pipeline
and unroll pragmas) and walked with pycparser. Nodes:

* a **loop header** per loop of the mapped code (tile loops included), with
  its trip count per entry, how often its body runs, its pragmas (pipeline II,
  unroll factor), PE-array binding and whether it is a tile loop, a point loop
  or data-dependent;
* a **branch** per ``if``, with its taken probability (workload hints);
* a **load** / **store** per array access and an **operation** node per
  arithmetic operation (by operator class), with bit width, float/int, the
  execution count, and the hardware that serves it (the memory level the array
  is placed in, its bandwidth, latency, banks, ports and partitioning; the
  operator unit's count and latency).

Index arithmetic is address generation (as in ``llmulator.kernel``) and gets
no nodes; a load inside an index (indirection) does. Edges: **data**
(operand -> consumer, local definition -> use, store -> later load of the same
array), **control** (loop entry, statement sequence, loop back edge) and
**nesting** (loop or branch -> every node directly inside it). The
architecture enters as the graph-level vector (``features.arch_vector``).
"""

from __future__ import annotations

import re

import numpy as np
from llmulator.design import Design
from llmulator.kernel import BINOP_CLASSES, FUNC_CLASSES
from llmulator.render import mapped_kernel
from pycparser import c_ast, c_generator

from .features import (
    CTYPE_BITS,
    FLOAT_CTYPES,
    MEMORY_DIM,
    OPS,
    Featurised,
    arch_vector,
    branch_probability,
    lg,
    mapped_trips,
    memory_vector,
    one_hot,
    unit_vector,
)

_GEN = c_generator.CGenerator()
NODE_TYPES = ("loop", "branch", "load", "store") + OPS
DATA, CONTROL, NEST = 0, 1, 2
EDGE_TYPES = 3
# type one-hot | bits, float | log execs, log trips, depth | loop: tile, point, data-dep, while, pipelined, II,
# log unroll, rows, cols | branch: probability, data-dep | memory (11) | unit (3) | indirect
NODE_DIM = len(NODE_TYPES) + 2 + 3 + 9 + 2 + MEMORY_DIM + 3 + 1
_LOOPS = (c_ast.For, c_ast.While, c_ast.DoWhile)
_UNROLL = re.compile(r"HLS\s+UNROLL(?:\s+factor=(\d+))?", re.I)
_PIPE = re.compile(r"HLS\s+PIPELINE(?:\s+II=(\d+))?", re.I)


class _Builder:
    def __init__(self, d: Design):
        self.d = d
        self.tree = d.tree
        self.rows: list[list[float]] = []
        self.types: list[str] = []
        self.edges: list[tuple[int, int, int]] = []
        self.locals = dict(self.tree.locals)
        self.last_def: dict[str, int] = {}
        self.last_store: dict[str, int] = {}

    # -- nodes and edges

    def node(self, kind: str, execs: float, depth: int, bits: float = 32.0, is_float: bool = False,
             trips: float = 0.0, loop: list[float] | None = None, branch: list[float] | None = None,
             array: str | None = None, indirect: bool = False, parent: int | None = None) -> int:
        unit = unit_vector(self.d, kind) if kind in OPS else [0.0, 0.0, 0.0]
        mem = memory_vector(self.d, array) if kind in ("load", "store") else [0.0] * MEMORY_DIM
        row = [*one_hot(kind, NODE_TYPES), bits / 32.0, float(is_float), lg(execs), lg(trips), float(depth),
               *(loop or [0.0] * 9), *(branch or [0.0, 0.0]), *mem, *unit, float(indirect)]
        self.rows.append(row)
        self.types.append(kind)
        i = len(self.rows) - 1
        if parent is not None:
            self.edges.append((parent, i, NEST))
        return i

    def edge(self, src: int | None, dst: int | None, kind: int) -> None:
        if src is not None and dst is not None and src != dst:
            self.edges.append((src, dst, kind))

    # -- expressions: return (result node or None, bits, is_float)

    def array_bits(self, name: str) -> tuple[float, bool]:
        a = self.d.workload.arrays.get(name)
        if a is not None:
            return float(a.bits), a.dtype.startswith("fp")
        ctype = self.locals.get(name, "int")
        return float(CTYPE_BITS.get(ctype, 32)), ctype in FLOAT_CTYPES

    def expr(self, e, ctx: dict, addr: bool = False):
        if e is None or isinstance(e, c_ast.Constant):
            return None, 0.0, isinstance(e, c_ast.Constant) and e.type in ("float", "double")
        if isinstance(e, c_ast.ID):
            if e.name in self.d.workload.scalars:
                dt = self.d.workload.scalars[e.name].get("dtype", "fp32")
                return None, 32.0, str(dt).startswith("fp")
            src = self.last_def.get(e.name)
            bits, fl = self.array_bits(e.name) if e.name in self.locals else (0.0, False)
            return src, bits, fl
        if isinstance(e, c_ast.ArrayRef):
            return self.access(e, ctx, write=False)
        if isinstance(e, c_ast.BinaryOp):
            a, ab, af = self.expr(e.left, ctx, addr)
            b, bb, bf = self.expr(e.right, ctx, addr)
            if addr:
                return (a if a is not None else b), max(ab, bb), af or bf
            cls = BINOP_CLASSES.get(e.op, "logic")
            return self.op(cls, [a, b], max(ab, bb) or 32.0, af or bf, ctx)
        if isinstance(e, c_ast.UnaryOp):
            if e.op in ("p++", "++", "p--", "--"):
                cur, bits, fl = self.expr(e.expr, ctx, addr)
                r = self.op("add", [cur], bits or 32.0, fl, ctx)[0]
                if isinstance(e.expr, c_ast.ArrayRef):
                    self.access(e.expr, ctx, write=True, value=r)
                elif isinstance(e.expr, c_ast.ID):
                    self.last_def[e.expr.name] = r
                return r, bits, fl
            if e.op == "sizeof":
                return None, 0.0, False
            a, bits, fl = self.expr(e.expr, ctx, addr)
            if addr or e.op not in ("-", "!", "~"):
                return a, bits, fl
            return self.op("add" if e.op == "-" else "logic", [a], bits or 32.0, fl, ctx)
        if isinstance(e, c_ast.Cast):
            r, bits, fl = self.expr(e.expr, ctx, addr)
            to = " ".join(getattr(getattr(e.to_type.type, "type", None), "names", None) or ["int"])
            return r, float(CTYPE_BITS.get(to, bits or 32)), to in FLOAT_CTYPES
        if isinstance(e, c_ast.TernaryOp):
            c = self.expr(e.cond, ctx, addr)[0]
            a, ab, af = self.expr(e.iftrue, ctx, addr)
            b, bb, bf = self.expr(e.iffalse, ctx, addr)
            return self.op("select", [c, a, b], max(ab, bb) or 32.0, af or bf, ctx)
        if isinstance(e, c_ast.FuncCall):
            fname = e.name.name if isinstance(e.name, c_ast.ID) else ""
            args = [self.expr(x, ctx, addr) for x in (e.args.exprs if e.args else [])]
            bits = max((b for _, b, _ in args), default=32.0) or 32.0
            if addr:
                return next((r for r, _, _ in args if r is not None), None), bits, False
            return self.op(FUNC_CLASSES.get(fname, "cmp"), [r for r, _, _ in args], bits, True, ctx)
        if isinstance(e, c_ast.Assignment):
            return self.assign(e, ctx)
        if isinstance(e, c_ast.ExprList):
            last = (None, 0.0, False)
            for x in e.exprs:
                last = self.expr(x, ctx, addr)
            return last
        return None, 0.0, False

    def op(self, cls: str, deps, bits: float, fl: bool, ctx: dict):
        i = self.node(cls, ctx["execs"], ctx["depth"], bits, fl, parent=ctx["parent"])
        for dep in deps:
            self.edge(dep, i, DATA)
        return i, bits, fl

    def access(self, e: c_ast.ArrayRef, ctx: dict, write: bool, value: int | None = None):
        subs, cur = [], e
        while isinstance(cur, c_ast.ArrayRef):
            subs.append(cur.subscript)
            cur = cur.name
        name = cur.name if isinstance(cur, c_ast.ID) else None
        deps = [self.expr(s, ctx, addr=True)[0] for s in subs]
        bits, fl = self.array_bits(name) if name else (32.0, False)
        indirect = any(dep is not None for dep in deps)
        i = self.node("store" if write else "load", ctx["execs"], ctx["depth"], bits, fl, array=name,
                      indirect=indirect, parent=ctx["parent"])
        for dep in deps:
            self.edge(dep, i, DATA)
        if write:
            self.edge(value, i, DATA)
            if name:
                self.last_store[name] = i
        elif name in self.last_store:
            self.edge(self.last_store[name], i, DATA)
        return i, bits, fl

    def assign(self, e: c_ast.Assignment, ctx: dict):
        r, bits, fl = self.expr(e.rvalue, ctx)
        lv = e.lvalue
        if e.op != "=":
            if isinstance(lv, c_ast.ArrayRef):
                cur, lb, lf = self.access(lv, ctx, write=False)
            else:
                cur, lb, lf = self.expr(lv, ctx)
            cls = BINOP_CLASSES.get(e.op[:-1], "logic")
            r, bits, fl = self.op(cls, [r, cur], max(bits, lb) or 32.0, fl or lf, ctx)
        if isinstance(lv, c_ast.ArrayRef):
            return self.access(lv, ctx, write=True, value=r)
        if isinstance(lv, c_ast.ID):
            self.last_def[lv.name] = r
        return r, bits, fl

    # -- statements

    def block(self, items, ctx: dict, owner: int | None) -> None:
        prev = owner
        first = True
        for it in items or []:
            anchor = self.stmt(it, ctx)
            if anchor is None:
                continue
            self.edge(prev, anchor, CONTROL)  # loop entry for the first item, then sequence
            prev = anchor
            first = False
        if owner is not None and not first:
            self.edge(prev, owner, CONTROL)  # back edge

    def stmt(self, node, ctx: dict, label: str | None = None) -> int | None:
        if isinstance(node, c_ast.Label):
            return self.stmt(node.stmt, ctx, node.name)
        if isinstance(node, _LOOPS):
            return self.loop(node, ctx, label)
        if isinstance(node, c_ast.Compound):
            start = len(self.rows)
            self.block(node.block_items, ctx, None)
            return start if len(self.rows) > start else None
        if isinstance(node, c_ast.If):
            return self.branch(node, ctx, label)
        if isinstance(node, c_ast.Decl):
            if node.init is None:
                return None
            r = self.expr(node.init, ctx)[0]
            self.last_def[node.name] = r
            return r
        if isinstance(node, (c_ast.Assignment, c_ast.UnaryOp, c_ast.FuncCall, c_ast.ExprList)):
            return self.expr(node, ctx)[0]
        return None  # pragmas, empty statements, break/continue

    def branch(self, node: c_ast.If, ctx: dict, label: str | None) -> int:
        p = branch_probability(self.d, _GEN.visit(node.cond))
        cond_dd = self._reads_memory(node.cond)
        i = self.node("branch", ctx["execs"], ctx["depth"], branch=[p, float(cond_dd)], parent=ctx["parent"])
        c = self.expr(node.cond, ctx)[0]
        self.edge(c, i, DATA)
        for part, prob in ((node.iftrue, p), (node.iffalse, 1 - p)):
            if part is None:
                continue
            sub = dict(ctx, execs=ctx["execs"] * prob, parent=i)
            items = part.block_items if isinstance(part, c_ast.Compound) else [part]
            self.block(items, sub, i)
        return i

    def _reads_memory(self, e) -> bool:
        found = []

        class V(c_ast.NodeVisitor):
            def visit_ArrayRef(self, n):
                found.append(n)
        V().visit(e)
        return bool(found)

    def loop_label(self, node, label: str | None) -> tuple[str | None, bool]:
        """(kernel loop label, is tile loop) of a loop of the mapped code."""
        if label is not None:
            if label in self.tile_of:
                return self.tile_of[label], True
            if label in self.tree.loops:
                return label, False
        if self.unlabelled:
            cand = self.unlabelled[0]
            lp = self.tree.loops[cand]
            var = None
            if isinstance(node, c_ast.For) and isinstance(node.init, c_ast.DeclList):
                var = node.init.decls[0].name
            elif isinstance(node, c_ast.For) and isinstance(node.init, c_ast.Assignment):
                var = getattr(node.init.lvalue, "name", None)
            if var == lp.var or (lp.is_while and not isinstance(node, c_ast.For)):
                self.unlabelled.pop(0)
                return cand, False
        return None, False

    def loop(self, node, ctx: dict, label: str | None) -> int:
        kl, is_tile = self.loop_label(node, label)
        items = node.stmt.block_items if isinstance(node.stmt, c_ast.Compound) else [node.stmt]
        items = items or []
        ii, unroll, pipelined = 0.0, 0.0, False
        for it in items:
            if isinstance(it, c_ast.Pragma):
                if m := _PIPE.search(it.string):
                    pipelined, ii = True, float(m.group(1) or 1)
                elif m := _UNROLL.search(it.string):
                    unroll = float(m.group(1)) if m.group(1) else -1.0  # -1: full
        if kl is not None:
            point, tile = mapped_trips(self.d, kl)
            t = tile if is_tile else point
            strip = tile is not None
            lp = self.tree.loops[kl]
            dd, wh = lp.data_dependent, lp.is_while
            spatial = None if is_tile else self.d.mapping.loop(kl).spatial
        else:
            t, strip, dd, wh, spatial = 1.0, False, True, not isinstance(node, c_ast.For), None
        if unroll < 0:
            unroll = t
        execs = ctx["execs"] * t
        feats = [float(is_tile), float(strip and not is_tile), float(dd), float(wh), float(pipelined), ii, lg(unroll),
                 float(spatial == "rows"), float(spatial == "cols")]
        i = self.node("loop", execs, ctx["depth"], 0.0, trips=t, loop=feats, parent=ctx["parent"])
        if dd or wh:
            c = self.expr(node.cond, dict(ctx, execs=execs, parent=i))[0]
            self.edge(c, i, DATA)
        self.block([it for it in items if not isinstance(it, c_ast.Pragma)],
                   dict(ctx, execs=execs, depth=ctx["depth"] + 1, parent=i), i)
        return i

    def build(self) -> Featurised:
        items, tile_labels = mapped_kernel(self.d)
        self.tile_of = {t: p for p, t in tile_labels.items()}
        present: set[str] = set()

        class V(c_ast.NodeVisitor):
            def visit_Label(self, n):
                present.add(n.name)
                self.generic_visit(n)
        for it in items:
            V().visit(it)
        self.unlabelled = [lb for lb in self.tree.loops if lb not in present]
        self.block(items, {"execs": 1.0, "depth": 0, "parent": None}, None)
        x = np.asarray(self.rows, dtype=np.float32).reshape(-1, NODE_DIM)
        e = np.asarray(self.edges, dtype=np.int64).reshape(-1, 3)
        return Featurised(x=x, g=arch_vector(self.d), edges=e)


def featurise(d: Design) -> Featurised:
    return _Builder(d).build()


def node_kinds(d: Design) -> list[str]:
    """The node type of every node of the design's graph, in order (for inspection and tests)."""
    b = _Builder(d)
    b.build()
    return b.types
