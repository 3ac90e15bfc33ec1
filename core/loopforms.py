"""What the kernel's locals hold at each point, and the loop forms a counted loop may take.

Why a module of its own: whether a loop's trip count is known before the run is a question of data
flow, not of names. ``int h = x[0]; ... h = N / 2; for (k = 0; k < h; k++)`` is a static loop (``h``
holds ``N / 2`` where the loop starts), ``for (k = 0; k < h; k++)`` inside a loop that doubles ``h``
is not (``h`` changes from one iteration to the next), and a bound that reads an array or a local
computed from one depends on the data. The kernel analysis (``llmulator.kernel``) walks the body in
program order with a :class:`Values` state; the functions here give the state's transfer rules
(assignment, branch join, loop entry) and read a ``for`` head's condition and increment.

A local's value is kept as a C expression over loop variables, parameters and scalars (locals
already substituted), so a loop bound ``k < h`` becomes ``k < ((1 << s) >> 1)`` and every static
model evaluates it like any bound written with parameters.
"""

from __future__ import annotations

import copy

import attrs
from pycparser import c_ast, c_generator

#: comparison operators of a counted loop's condition, and the operator seen from the other side
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!="}
#: geometric increments: ``i *= 2``, ``i <<= 1``, ``i >>= 1``, ``i /= 2`` (and ``i = i * 2`` ...)
GEOMETRIC = ("*", "/", "<<", ">>")
#: functions a static bound may call (``llmulator.expr`` evaluates them)
BOUND_FUNCS = {"min", "max"}


class _TextGen(c_generator.CGenerator):
    """An expression's text for ``llmulator.expr`` and the condition evaluator: casts dropped (bounds are
    evaluated as numbers), and C's ``c ? a : b``, ``&&``, ``||``, ``!`` written as Python reads them."""

    def visit_Cast(self, n):
        return "(" + self.visit(n.expr) + ")"

    def visit_TernaryOp(self, n):
        return f"(({self.visit(n.iftrue)}) if ({self.visit(n.cond)}) else ({self.visit(n.iffalse)}))"

    def visit_BinaryOp(self, n):
        if n.op in ("&&", "||"):
            return f"(({self.visit(n.left)}) {'and' if n.op == '&&' else 'or'} ({self.visit(n.right)}))"
        return super().visit_BinaryOp(n)

    def visit_UnaryOp(self, n):
        if n.op == "!":
            return f"(not ({self.visit(n.expr)}))"
        return super().visit_UnaryOp(n)


_TEXT = _TextGen()


def text_of(node: c_ast.Node) -> str:
    return _TEXT.visit(node)


@attrs.define
class Static:
    """The value of an expression at one point: a C expression over loop variables, parameters and
    scalars (``node``/``text``), or why there is none (``reason``; ``data`` when it reads array data)."""

    node: c_ast.Node | None
    reason: str | None = None
    data: bool = False

    @property
    def text(self) -> str | None:
        return None if self.node is None else text_of(self.node)


@attrs.define
class Values:
    """Per local: its value here (an expression, or None when not fixed), and which locals hold data."""

    static: dict[str, c_ast.Node | None] = attrs.field(factory=dict)
    data: set[str] = attrs.field(factory=set)
    changing: dict[str, str] = attrs.field(factory=dict)  # local -> label of the loop it changes in

    def copy(self) -> Values:
        return Values(dict(self.static), set(self.data), dict(self.changing))

    def join(self, other: Values) -> None:
        """After a branch: data if data on either side; an expression only if both sides agree."""
        self.data |= other.data
        for k in set(self.static) | set(other.static):
            a, b = self.static.get(k), other.static.get(k)
            if a is None or b is None or text_of(a) != text_of(b):
                self.static[k] = None
        for k, v in other.changing.items():
            self.changing.setdefault(k, v)

    def assign(self, name: str, value: Static) -> None:
        self.static[name] = value.node
        if value.data:
            self.data.add(name)
        else:
            self.data.discard(name)


def value_of(node: c_ast.Node | None, values: Values, loop_vars: list[str], known: set[str],
             locals_: set[str]) -> Static:
    """The value of an expression here: substituted locals, or the first reason it has none.

    ``known`` are parameters and scalars (fixed for the run); ``loop_vars`` the enclosing loops'
    variables, outermost first. Array reads and locals holding data make it data; a local whose
    value is not fixed here (it changes in an enclosing loop, or was assigned something not static)
    makes it unknown without being data.
    """
    if node is None:
        return Static(None, "no expression")
    reason: list[tuple[str, bool]] = []

    def sub(n: c_ast.Node) -> c_ast.Node:
        if isinstance(n, c_ast.ArrayRef):
            base = n
            while isinstance(base, c_ast.ArrayRef):
                base = base.name
            name = base.name if isinstance(base, c_ast.ID) else "?"
            reason.append((f"reads array '{name}'", True))
            return n
        if isinstance(n, c_ast.ID):
            if n.name in loop_vars or n.name in known:
                return n
            if n.name in values.data:
                reason.append((f"reads '{n.name}', which holds data read from an array", True))
                return n
            if n.name in locals_:
                v = values.static.get(n.name)
                if v is None:
                    where = values.changing.get(n.name)
                    why = (f"changes from one iteration of loop {where} to the next" if where else
                           "is not a fixed expression of loop variables and parameters here")
                    reason.append((f"reads local '{n.name}', which {why}", False))
                    return n
                return copy.deepcopy(v)
            reason.append((f"reads unknown name '{n.name}'", False))
            return n
        if isinstance(n, c_ast.FuncCall):
            fname = n.name.name if isinstance(n.name, c_ast.ID) else ""
            if fname not in BOUND_FUNCS:
                reason.append((f"calls {fname or 'a function'}", False))
                return n
            args = [sub(a) for a in (n.args.exprs if n.args else [])]
            return c_ast.FuncCall(n.name, c_ast.ExprList(args))
        if isinstance(n, c_ast.BinaryOp):
            return c_ast.BinaryOp(n.op, sub(n.left), sub(n.right))
        if isinstance(n, c_ast.UnaryOp):
            if n.op in ("p++", "++", "p--", "--", "sizeof", "&", "*"):
                reason.append((f"uses '{n.op.lstrip('p')}'", False))
                return n
            return c_ast.UnaryOp(n.op, sub(n.expr))
        if isinstance(n, c_ast.Cast):
            return c_ast.Cast(n.to_type, sub(n.expr))
        if isinstance(n, c_ast.TernaryOp):
            return c_ast.TernaryOp(sub(n.cond), sub(n.iftrue), sub(n.iffalse))
        if isinstance(n, c_ast.Constant):
            if n.type not in ("int", "unsigned int", "long int", "unsigned long int", "long long int",
                              "unsigned long long int", "double", "float"):
                reason.append((f"uses a {n.type} constant", False))
            return n
        reason.append((f"uses a {type(n).__name__}", False))
        return n

    out = sub(node)
    if reason:
        data = [r for r, d in reason if d]
        return Static(None, (data or [reason[0][0]])[0], bool(data))
    return Static(out)


def compound_value(op: str, lhs: c_ast.Node, rhs: c_ast.Node) -> c_ast.Node:
    """``x op= e`` as the expression ``x op e``."""
    return c_ast.BinaryOp(op, lhs, rhs)


def assigned_locals(node: c_ast.Node | None) -> set[str]:
    """Names assigned anywhere in a subtree (``x = ...``, ``x op= ...``, ``x++``); declarations are not
    assignments (a local declared in a loop body is a fresh variable each iteration)."""
    out: set[str] = set()
    if node is None:
        return out

    class V(c_ast.NodeVisitor):
        def visit_Assignment(self, n):
            if isinstance(n.lvalue, c_ast.ID):
                out.add(n.lvalue.name)
            self.generic_visit(n)

        def visit_UnaryOp(self, n):
            if n.op in ("p++", "++", "p--", "--") and isinstance(n.expr, c_ast.ID):
                out.add(n.expr.name)
            self.generic_visit(n)
    V().visit(node)
    return out


def carried_data(nodes: list[c_ast.Node], values: Values) -> set[str]:
    """Locals that may hold data at the head of a loop whose body (and increment) are ``nodes``: those
    holding data before it, grown by every assignment in the body from array data or such locals, to
    a fixed point (flow-insensitive within the body: any iteration may reach any assignment)."""
    tainted = set(values.data)
    pairs: list[tuple[str, c_ast.Node, bool]] = []  # (target, right-hand side, target read too)

    class V(c_ast.NodeVisitor):
        def visit_Assignment(self, n):
            if isinstance(n.lvalue, c_ast.ID):
                pairs.append((n.lvalue.name, n.rvalue, n.op != "="))
            self.generic_visit(n)

        def visit_Decl(self, n):
            if n.init is not None:
                pairs.append((n.name, n.init, False))
            self.generic_visit(n)
    for n in nodes:
        if n is not None:
            V().visit(n)

    def reads_data(e: c_ast.Node) -> bool:
        found = False

        class R(c_ast.NodeVisitor):
            def visit_ArrayRef(self, n):
                nonlocal found
                found = True

            def visit_ID(self, n):
                nonlocal found
                found = found or n.name in tainted
        R().visit(e)
        return found

    grew = True
    while grew:
        grew = False
        for target, rhs, rmw in pairs:
            if target not in tainted and (reads_data(rhs) or (rmw and target in tainted)):
                tainted.add(target)
                grew = True
    return tainted


@attrs.define
class Head:
    """A ``for`` head read as a counted loop: ``var`` from ``lower`` while ``var cond bound``, stepping
    by ``step`` (``+``: add ``step``; a geometric ``op``: ``var = var op step``)."""

    var: str
    lower: c_ast.Node
    cond: str  # < <= > >= !=
    bound: c_ast.Node
    op: str  # "+" or one of GEOMETRIC
    step: c_ast.Node
    others: list[c_ast.Node]  # further expressions of a comma increment (``i++, log++``)


def read_inits(init: c_ast.Node | None) -> list[tuple[str, c_ast.Node | None]] | None:
    """The variables a ``for`` head sets: ``int i = LOW``, ``i = LOW``, ``int i = 0, j = N - 1``,
    ``i = 0, j = N - 1`` (an empty list for ``for (; ...)``); None for any other initialiser."""
    if init is None:
        return []
    if isinstance(init, c_ast.DeclList):
        return [(d.name, d.init) for d in init.decls]
    parts = list(init.exprs) if isinstance(init, c_ast.ExprList) else [init]
    out = []
    for p in parts:
        if not (isinstance(p, c_ast.Assignment) and p.op == "=" and isinstance(p.lvalue, c_ast.ID)):
            return None
        out.append((p.lvalue.name, p.rvalue))
    return out


def loop_variable(inits: list[tuple[str, c_ast.Node | None]], cond: c_ast.Node | None,
                  nxt: c_ast.Node | None) -> str | None:
    """The variable a ``for`` loop counts with: the one its increment steps and its condition compares
    (``for (i = 0, j = n - 1; i < j; i++, j--)``: i), else the one it steps, else None (``for (;;)``)."""
    stepped = [v for v in _stepped(nxt)]
    for v in stepped:
        if read_cond(cond, v) is not None:
            return v
    named = [v for v, _ in inits]
    return next((v for v in stepped if v in named), stepped[0] if stepped else None)


def _stepped(nxt: c_ast.Node | None) -> list[str]:
    parts = list(nxt.exprs) if isinstance(nxt, c_ast.ExprList) else [nxt] if nxt is not None else []
    out = []
    for p in parts:
        target = p.expr if isinstance(p, c_ast.UnaryOp) else p.lvalue if isinstance(p, c_ast.Assignment) else None
        if isinstance(target, c_ast.ID) and target.name not in out:
            out.append(target.name)
    return out


def read_cond(cond: c_ast.Node | None, var: str) -> tuple[str, c_ast.Node] | None:
    """``i < HIGH`` (or ``HIGH > i``, ``i != END``, a bare ``i`` meaning ``i != 0``): (op, bound)."""
    if isinstance(cond, c_ast.ID) and cond.name == var:
        return "!=", c_ast.Constant("int", "0")
    if not (isinstance(cond, c_ast.BinaryOp) and cond.op in _FLIP):
        return None
    if is_id(cond.left, var) and var not in _ids(cond.right):
        return cond.op, cond.right
    if is_id(cond.right, var) and var not in _ids(cond.left):
        return _FLIP[cond.op], cond.left
    return None


def read_next(nxt: c_ast.Node | None, var: str) -> tuple[str, c_ast.Node, list[c_ast.Node]] | None:
    """The increment of ``var``: ("+", STEP) for ``i++``, ``i -= E``, ``i = i + E`` ...; (op, FACTOR)
    for ``i *= 2``, ``i <<= 1``, ``i = i >> 1`` ...; with the comma expression's other parts."""
    parts = list(nxt.exprs) if isinstance(nxt, c_ast.ExprList) else [nxt]
    found, others = None, []
    for p in parts:
        r = _one_step(p, var)
        if r is None:
            if var in assigned_locals(p):
                return None  # the variable changes in a way that is not a step
            others.append(p)
        elif found is not None:
            return None
        else:
            found = r
    return None if found is None else (found[0], found[1], others)


def _one_step(p: c_ast.Node | None, var: str) -> tuple[str, c_ast.Node] | None:
    one = c_ast.Constant("int", "1")
    if isinstance(p, c_ast.UnaryOp) and p.op in ("p++", "++", "p--", "--") and is_id(p.expr, var):
        return ("+", one) if "++" in p.op else ("+", c_ast.UnaryOp("-", one))
    if not (isinstance(p, c_ast.Assignment) and is_id(p.lvalue, var)):
        return None
    rhs = p.rvalue
    if var in _ids(rhs) and p.op != "=":
        return None
    if p.op == "+=":
        return "+", rhs
    if p.op == "-=":
        return "+", c_ast.UnaryOp("-", rhs)
    if p.op[:-1] in GEOMETRIC:
        return p.op[:-1], rhs
    if p.op == "=" and isinstance(rhs, c_ast.BinaryOp):
        left_is, right_is = is_id(rhs.left, var), is_id(rhs.right, var)
        other = rhs.right if left_is else rhs.left
        if (left_is or right_is) and var not in _ids(other):
            if rhs.op == "+":
                return "+", other
            if rhs.op == "-" and left_is:
                return "+", c_ast.UnaryOp("-", other)
            if rhs.op == "*" or (rhs.op in ("/", "<<", ">>") and left_is):
                return rhs.op, other
    return None


def is_id(n, name: str) -> bool:
    """Whether ``n`` is the identifier ``name``."""
    return isinstance(n, c_ast.ID) and n.name == name



def _ids(n: c_ast.Node | None) -> set[str]:
    out: set[str] = set()
    if n is None:
        return out

    class V(c_ast.NodeVisitor):
        def visit_ID(self, node):
            out.add(node.name)
    V().visit(n)
    return out


def ids(n: c_ast.Node | None) -> set[str]:
    """Every identifier an expression names."""
    return _ids(n)


def early_exit(body: c_ast.Node | None) -> c_ast.Node | None:
    """A ``break`` that leaves this loop (not one of a loop inside it) or a ``return`` anywhere in it: the
    loop may end early, so its trips are not its bounds'."""
    stack = [(body, False)] if body is not None else []
    while stack:
        n, nested = stack.pop()
        if isinstance(n, c_ast.Return) or (isinstance(n, c_ast.Break) and not nested):
            return n
        inner = nested or isinstance(n, (c_ast.For, c_ast.While, c_ast.DoWhile)) and n is not body
        stack.extend((child, inner) for _, child in reversed(n.children()))
    return None
