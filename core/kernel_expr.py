"""One kernel statement analysed: its operations by class, its array accesses (affine forms where the
index is affine) and its expression DAG (the context the analysis carries through the body: ``kernel_ctx``).

``expr_stmt`` is what ``llmulator.kernel_parse`` calls for every assignment,
declaration with an initialiser, branch condition and loop condition. Index
arithmetic is address generation (dedicated, strength-reduced counters in HLS):
it is not counted as datapath operations, but loads inside an index
(indirection) are, and so is arithmetic that combines a loaded value with
another value that varies (``b[a[i] * c[i]]``: a multiply after both loads).
``x += a * b`` is one fused ``mac`` (a ``mul`` and an ``add`` in the unfused
counts).
"""

from __future__ import annotations

from collections import Counter

from pycparser import c_ast

from .c_names import has_step, nodes
from .errors import SpecError
from .kernel import _GEN, BINOP_CLASSES, FUNC_CLASSES, Access, OpNode, Statement
from .kernel_affine import affine, alternatives, coarse
from .kernel_ctx import Ctx


def is_float(e: c_ast.Node, ctx: Ctx) -> bool:
    """Whether an expression computes in floating point (a float constant, array, local or scalar, a
    math function, a cast to float)."""
    if isinstance(e, c_ast.Constant):
        return e.type in ("float", "double")
    if isinstance(e, c_ast.ArrayRef):
        return _base(e) in ctx.float_arrays
    if isinstance(e, c_ast.ID):
        t = ctx.locals.get(e.name, "")
        return t in ("float", "double", "_Float16") or e.name in ctx.float_scalars
    if isinstance(e, c_ast.BinaryOp):
        return is_float(e.left, ctx) or is_float(e.right, ctx)
    if isinstance(e, c_ast.UnaryOp):
        return is_float(e.expr, ctx)
    if isinstance(e, c_ast.FuncCall):
        return True
    if isinstance(e, c_ast.Cast):
        return "float" in _GEN.visit(e.to_type) or "double" in _GEN.visit(e.to_type)
    if isinstance(e, c_ast.TernaryOp):
        return is_float(e.iftrue, ctx) or is_float(e.iffalse, ctx)
    return False


def expr_stmt(n: c_ast.Node, ctx: Ctx, decl_name: str | None) -> Statement:
    """Operations, accesses and the expression DAG of one statement (``decl_name``: the local a
    declaration initialises with ``n``)."""
    return _Builder(n, ctx).statement(decl_name)


class _Builder:
    """One statement's analysis under way. ``visit`` returns a node index of ``dag``, -1 for a constant
    (or nothing), or -2 - k for ``local_refs[k]`` (a local read: a register, no node of its own)."""

    def __init__(self, n: c_ast.Node, ctx: Ctx):
        self.n, self.ctx = n, ctx  # the statement (where errors point) and the analysis context
        self.dag: list[OpNode] = []
        # non-empty while visiting an index (address generation): per index, the operands its free arithmetic
        # combined (every one is something the access waits for)
        self.addr_mode: list[list[int]] = []
        self.accesses: list[Access] = []
        self.reads_locals: set[str] = set()
        self.ops, self.unfused = Counter(), Counter()
        self.local_refs: list[str] = []
        self.written: str | None = None  # the local the statement assigns
        self.copied: str | None = None  # the local it copies into ``written`` (``x = y``)
        self.loaded: dict[tuple[str, tuple[str, ...]], int] = {}  # element -> its load's node, until a store
        self.conditional = 0  # > 0 inside a ternary's sides or the right operand of && and ||

    def statement(self, decl_name: str | None) -> Statement:
        n, ctx = self.n, self.ctx
        if decl_name is not None:
            r = self.visit(n)
            self.written = decl_name
            if r <= -2:
                self.copied = self.local_refs[-2 - r]
        else:
            self.visit(n)
            if isinstance(n, c_ast.UnaryOp) and n.op in ("p++", "++", "p--", "--") and isinstance(n.expr, c_ast.ID) \
                    and n.expr.name in ctx.locals and ctx.is_register(n.expr.name):
                self.written = n.expr.name  # `k++;` assigns k as `k += 1` does: its next value needs this one
        return Statement(_GEN.visit(n) if decl_name is None else f"{decl_name} = {_GEN.visit(n)}",
                         ctx.line(n), self.ops, self.unfused, self.accesses, self.dag, self.written,
                         self.reads_locals, copies=self.copied)

    def error(self, msg: str, expected: str = "", hint: str = "") -> SpecError:
        return self.ctx.error(self.n, msg, expected, hint)

    def count(self, cls: str) -> None:
        self.ops[cls] += 1
        self.unfused[cls] += 1

    def local(self, name: str) -> int:
        self.reads_locals.add(name)
        self.local_refs.append(name)
        return -2 - (len(self.local_refs) - 1)

    def add(self, op: str, deps: list[int], array: str | None = None, fl: bool = False,
            access: Access | None = None) -> int:
        reads = tuple(dict.fromkeys(self.local_refs[-2 - d] for d in deps if d <= -2))
        self.dag.append(OpNode(op, [d for d in deps if d >= 0], array, fl, reads, access=access))
        return len(self.dag) - 1

    def add_store(self, r: int, deps: list[int], array: str, acc: Access) -> int:
        """A store of value ``r`` (a node, a local's reference, or -1: a constant); the node records which, so that
        a later statement that reads the element back takes the value itself (``load_reuse``: forwarding)."""
        i = self.add("store", [r] + deps, array, access=acc)
        self.dag[i].value = r if r >= 0 else self.local_refs[-2 - r] if r <= -2 else None
        return i

    @staticmethod
    def pick(a: int, b: int) -> int:
        """What an address computation depends on: a node if any, else a local."""
        return max(a, b) if max(a, b) >= 0 else min(a, b)

    def access(self, e: c_ast.ArrayRef, write: bool, read: bool) -> tuple[str, list[int], Access]:
        ctx = self.ctx
        idx_nodes = []
        cur = e
        while isinstance(cur, c_ast.ArrayRef):
            idx_nodes.append(cur.subscript)
            cur = cur.name
        if not isinstance(cur, c_ast.ID):
            raise self.error("unsupported array reference", "NAME[i][j]")
        name = cur.name
        if name not in ctx.arrays and name not in ctx.locals:
            raise self.error(f"unknown array '{name}'", "one of: " + ", ".join(sorted(ctx.arrays)),
                             "declare it under workload.arrays")
        idx_nodes.reverse()
        # index arithmetic is address generation (dedicated, strength-reduced counters in HLS):
        # it is not counted as datapath operations, but loads inside an index (indirection) are
        self.addr_mode.append([])
        try:
            deps = [self.visit(i) for i in idx_nodes]
        finally:
            combined = self.addr_mode.pop()
        deps = list(dict.fromkeys(deps + combined))
        forms = tuple(affine(i, ctx) for i in idx_nodes)
        acc = Access(name, tuple(_GEN.visit(i) for i in idx_nodes), forms, write, read,
                     conditional=self.conditional > 0,
                     coarse=tuple(coarse(i, ctx) if f is None else None for i, f in zip(idx_nodes, forms, strict=True)),
                     alternatives=tuple(alternatives(i, ctx) if f is None else None
                                        for i, f in zip(idx_nodes, forms, strict=True)))
        if name in ctx.arrays:  # the workload's arrays: what traffic and footprints count
            self.accesses.append(acc)
        return name, deps, acc

    def load(self, e: c_ast.ArrayRef) -> int:
        """A read of an array element; a second read of the same element in the statement, with no store
        to the array between, is the first one's value (``a[i] * a[i] + a[i]``: one load, one port, as HLS
        compiles it; before hlsim 0.28 each textual read took a port and a memory read)."""
        key = _element(e)
        if key is not None and key in self.loaded:
            return self.loaded[key]
        name, deps, acc = self.access(e, False, True)
        r = self.add("load", deps, name, access=acc)
        if key is not None:
            self.loaded[key] = r
        return r

    def visit(self, e: c_ast.Node) -> int:
        how = _VISIT.get(type(e))
        if how is None:
            raise self.error(f"unsupported expression: {type(e).__name__}")
        return how(self, e)

    def constant(self, e: c_ast.Constant) -> int:
        return -1

    def name(self, e: c_ast.ID) -> int:
        ctx = self.ctx
        if e.name in ctx.locals and ctx.is_register(e.name):
            return self.local(e.name)
        elif (e.name not in ctx.loop_vars and e.name not in ctx.params and e.name not in ctx.scalars
              and e.name not in ctx.arrays):
            raise self.error(f"unknown name '{e.name}'", "a loop variable, local, parameter, scalar or array",
                             "declare locals before use; parameters go under workload.parameters")
        return -1

    def binary(self, e: c_ast.BinaryOp) -> int:
        a, b = self.visit(e.left), self.sometimes(e.right) if e.op in ("&&", "||") else self.visit(e.right)
        cls = BINOP_CLASSES.get(e.op)
        if cls is None:
            raise self.error(f"unsupported operator '{e.op}'")
        if self.addr_mode:
            if a != -1 and b != -1 and max(a, b) >= 0:
                # a loaded value combined with another value that varies (a load, a local): no counter the tool
                # strength-reduces computes it, the datapath does, after both (before 2026-12-06 it was free and
                # waited for one of them: `a[i + 1] = b[a[i] * c[i]]` ran at II 1 where its chain needs 10,
                # an outside probe)
                self.count(cls)
                return self.add(cls, [a, b], fl=is_float(e, self.ctx))
            self.addr_mode[-1].extend(x for x in (a, b) if x != -1)  # (the access waits for every operand)
            return self.pick(a, b)
        if folded(e, self.ctx.params):
            return -1  # `H - 1`, `N / 2`: a constant the compiler folds, no operation
        self.count(cls)
        return self.add(cls, [a, b], fl=is_float(e, self.ctx))

    def assignable(self, lv: c_ast.Node) -> None:
        """Refuse a store to a workload name: the estimators take a parameter or scalar as fixed for the whole
        run (a scalar shifts a subscript as a constant does), so `k++` on a scalar would price another kernel."""
        ctx = self.ctx
        if isinstance(lv, c_ast.ID) and (lv.name in ctx.arrays or lv.name in ctx.params or lv.name in ctx.scalars):
            kind = "an array" if lv.name in ctx.arrays else "a parameter" if lv.name in ctx.params else "a scalar"
            ctype = "float" if lv.name in ctx.float_scalars else "int"
            hint = "" if kind == "an array" else f"copy it into a local first: {ctype} t = {lv.name};"
            raise self.error(f"cannot assign to '{lv.name}', {kind} of the workload", "a local or an array element",
                             hint)

    def unary(self, e: c_ast.UnaryOp) -> int:
        if e.op in ("p++", "++", "p--", "--"):
            self.assignable(e.expr)
            target = self.visit(e.expr)
            self.count("add")
            r = self.add("add", [target])
            if isinstance(e.expr, c_ast.ArrayRef):
                name, deps, acc = self.access(e.expr, True, False)
                self.loaded = {k: v for k, v in self.loaded.items() if k[0] != name}
                self.add_store(r, deps, name, acc)
            return r
        if e.op == "sizeof":
            return -1
        a = self.visit(e.expr)
        if e.op in ("-", "~") and folded(e.expr, self.ctx.params):
            return a  # `-1`, `-N`: a constant the compiler folds, no operation
        if e.op == "-":
            self.count("add")
            return self.add("add", [a], fl=is_float(e.expr, self.ctx))
        if e.op == "!" or e.op == "~":
            self.count("logic")
            return self.add("logic", [a])
        return a

    def cast(self, e: c_ast.Cast) -> int:
        return self.visit(e.expr)

    def sometimes(self, e: c_ast.Node) -> int:
        """An operand evaluated on some paths only (a ternary's side, the right of && and ||): its accesses are
        ``conditional``, so no later statement takes what it loads or stores as a value it holds (load_reuse)."""
        self.conditional += 1
        try:
            return self.visit(e)
        finally:
            self.conditional -= 1

    def ternary(self, e: c_ast.TernaryOp) -> int:
        c, a, b = self.visit(e.cond), self.sometimes(e.iftrue), self.sometimes(e.iffalse)
        self.count("select")
        return self.add("select", [c, a, b])

    def call(self, e: c_ast.FuncCall) -> int:
        fname = e.name.name if isinstance(e.name, c_ast.ID) else _GEN.visit(e.name)
        args = [self.visit(x) for x in (e.args.exprs if e.args else [])]
        cls = FUNC_CLASSES.get(fname)
        if cls is None:
            raise self.error(f"unsupported function '{fname}'", "one of: " + ", ".join(sorted(FUNC_CLASSES)),
                             "write it with operators (e.g. x > 0 ? x : 0) or a listed function")
        self.count(cls)
        return self.add(cls, args, fl=True)

    def expr_list(self, e: c_ast.ExprList) -> int:
        last = -1
        for x in e.exprs:
            last = self.visit(x)
        return last

    def assign(self, e: c_ast.Assignment) -> int:
        e = _as_compound(e)
        rhs = e.rvalue
        if e.op in ("+=", "-=") and isinstance(rhs, c_ast.BinaryOp) and rhs.op == "*":  # fused: a mac
            a, b = self.visit(rhs.left), self.visit(rhs.right)
            self.unfused["mul"] += 1
            self.unfused["add"] += 1
            self.ops["mac"] += 1
            cur = self.lhs_read(e.lvalue)
            r = self.add("mac", [a, b, cur], fl=is_float(rhs, self.ctx))
            self.dag[r].acc = cur if cur >= 0 else -1
            # what the product waits for, apart from the accumulator (a mac split into a mul and an add: the mul
            # waits for these, the add for the accumulator too; `a[i] += a[i] * c` shares one load between them)
            self.dag[r].factors = (tuple(x for x in (a, b) if x >= 0),
                                   tuple(dict.fromkeys(self.local_refs[-2 - x] for x in (a, b) if x <= -2)))
        else:
            r = self.visit(rhs)
            if e.op != "=":
                cls = BINOP_CLASSES.get(e.op[:-1])
                if cls is None:
                    raise self.error(f"unsupported operator '{e.op}'")
                cur = self.lhs_read(e.lvalue)
                self.count(cls)
                r = self.add(cls, [r, cur], fl=is_float(e.lvalue, self.ctx) or is_float(rhs, self.ctx))
        return self.store(e.lvalue, r)

    def lhs_read(self, lv: c_ast.Node) -> int:
        if isinstance(lv, c_ast.ArrayRef):
            return self.load(lv)
        if isinstance(lv, c_ast.ID):
            return self.local(lv.name)
        return -1

    def store(self, lv: c_ast.Node, r: int) -> int:
        ctx = self.ctx
        if isinstance(lv, c_ast.ArrayRef):
            name, deps, acc = self.access(lv, True, False)
            self.loaded = {k: v for k, v in self.loaded.items() if k[0] != name}
            return self.add_store(r, deps, name, acc)
        if isinstance(lv, c_ast.ID):
            self.assignable(lv)
            if lv.name not in ctx.locals:
                raise self.error(f"unknown name '{lv.name}'", "a declared local variable")
            self.written = lv.name
            if r <= -2:
                self.copied = self.local_refs[-2 - r]
            return r
        raise self.error("unsupported assignment target")


_VISIT = {c_ast.Constant: _Builder.constant, c_ast.ID: _Builder.name, c_ast.ArrayRef: _Builder.load,
          c_ast.BinaryOp: _Builder.binary, c_ast.UnaryOp: _Builder.unary, c_ast.Cast: _Builder.cast,
          c_ast.TernaryOp: _Builder.ternary, c_ast.FuncCall: _Builder.call, c_ast.Assignment: _Builder.assign,
          c_ast.ExprList: _Builder.expr_list}


def _element(e: c_ast.ArrayRef) -> tuple[str, tuple[str, ...]] | None:
    """(array, each subscript's C text) of a read that names one element whatever else the statement does,
    else None: a subscript that assigns (``a[i++]``) or calls is read anew each time."""
    idx, cur = [], e
    while isinstance(cur, c_ast.ArrayRef):
        idx.append(cur.subscript)
        cur = cur.name
    if not isinstance(cur, c_ast.ID):
        return None
    if any(has_step(sub) or any(isinstance(n, (c_ast.Assignment, c_ast.FuncCall)) for n in nodes(sub))
           for sub in idx):
        return None
    return cur.name, tuple(_GEN.visit(i) for i in reversed(idx))


def _base(e: c_ast.ArrayRef) -> str:
    cur = e
    while isinstance(cur, c_ast.ArrayRef):
        cur = cur.name
    return cur.name if isinstance(cur, c_ast.ID) else ""


def _as_compound(e: c_ast.Assignment) -> c_ast.Assignment:
    """``x = x + a*b`` (or ``a*b + x``, ``x - a*b``) as the ``x += a*b`` it means, so both spellings are one mac.

    HLS tools see one expression either way (the DSP fuses both); pricing the long form as a mul and an add
    made the cost of a kernel depend on how its author spelled an accumulation. Only a product is rewritten:
    other ``x = x + e`` keep their own evaluation, whose cost already equals ``x += e``.
    """
    rhs = e.rvalue
    if e.op != "=" or not isinstance(rhs, c_ast.BinaryOp) or rhs.op not in ("+", "-"):
        return e
    target = _GEN.visit(e.lvalue)
    if "++" in target or "--" in target:  # evaluated twice in the long form: not the compound one
        return e
    if _GEN.visit(rhs.left) == target and _is_product(rhs.right):
        other = rhs.right
    elif rhs.op == "+" and _GEN.visit(rhs.right) == target and _is_product(rhs.left):
        other = rhs.left
    else:
        return e
    return c_ast.Assignment(rhs.op + "=", e.lvalue, other, e.coord)


def _is_product(e: c_ast.Node) -> bool:
    return isinstance(e, c_ast.BinaryOp) and e.op == "*"


def folded(e: c_ast.Node, params: set[str]) -> bool:
    """A literal, a parameter, or an expression of them (no call, no side effect): a constant at compile time,
    which an HLS tool folds (the rendered C defines the parameters)."""
    if isinstance(e, c_ast.Constant) or (isinstance(e, c_ast.ID) and e.name in params):
        return True
    if isinstance(e, c_ast.UnaryOp):
        return e.op in ("-", "+", "~", "!") and folded(e.expr, params)
    if isinstance(e, c_ast.BinaryOp):
        return folded(e.left, params) and folded(e.right, params)
    if isinstance(e, c_ast.Cast):
        return folded(e.expr, params)
    return False
