"""A loop's head read: a counted loop where it is one, else a loop whose trips only the run knows.

``for_head`` reads a ``for`` head (any affine or geometric step, bounds over
parameters, scalars, outer loop variables and locals that hold such expressions
there) and says why a loop is dynamic (``Loop.dynamic_reason``); ``enter``
marks what a loop's body changes from one iteration to the next.
"""

from __future__ import annotations

import re

from pycparser import c_ast

from . import loopforms as lf
from .expr import ExprError, evaluate
from .kernel import _GEN, Loop
from .kernel_ctx import Ctx


def for_head(node: c_ast.For, ctx: Ctx, parent: Loop | None, label: str, line: int) -> tuple[Loop, set[str]]:
    """A ``for`` loop's head read as a counted loop where it is one (any affine or geometric step,
    bounds over parameters, scalars, outer loop variables and locals that hold such expressions here),
    else as a loop whose trips only the run knows (``dynamic_reason`` says why)."""
    inits = _inits(node, ctx)
    var = lf.loop_variable(inits, node.cond, node.next)
    if var is None:  # for (;;) / for (; cond;): a loop without a counter, like a while
        changing = enter(node, ctx, label, None)
        return Loop(label, None, "0", "0", 1, line, True, (), parent=parent, is_while=True, simple=False,
                    dynamic_reason="a for loop without a loop variable: its trips are what its condition makes "
                                   "of the run's values"), changing
    if var not in ctx.locals:
        raise ctx.error(node, f"unknown name '{var}'", "a declared local variable")
    lo_node = dict(inits).get(var) if var in dict(inits) else c_ast.ID(var)  # for (; ...): its value here
    lower_value = ctx.value(lo_node)  # before the other head variables are marked as changing
    changing = enter(node, ctx, label, var)
    simple_init = len(inits) == 1 and inits[0][0] == var  # the one form tiling rewrites
    reasons: list[str] = []
    if lower_value.node is None:
        reasons.append(f"its start {lower_value.reason}")
    lower = lower_value.text if lower_value.node is not None else "0"
    upper, cond_op, simple = _bound(node, ctx, var, reasons)
    step, step_text, step_op, simple = _step(node, ctx, var, label, reasons, simple)
    if assigns_outside_shadows(node.stmt, var):
        reasons.append(f"its variable '{var}' is also assigned in the body")
    brk = lf.early_exit(node.stmt)
    if brk is not None:
        what = "break" if isinstance(brk, c_ast.Break) else "return"
        reasons.append(f"it may end early (the {what} at line {ctx.line(brk)})")
    names = (lf.ids(node.cond) | lf.ids(node.init) | lf.ids(node.next)) - {var}
    # outer loop variables the head reads, directly or through the locals it reads
    texts = " ".join(t for t in (lower, upper, step_text or "") if t)
    used = set(re.findall(r"[A-Za-z_]\w*", texts)) | names
    outer = tuple(v for v in ctx.loop_vars if v in used and v != var)
    dynamic = bool(reasons)
    return Loop(label, var, lower, upper, step, line, dynamic, outer, parent=parent, step_text=step_text,
                step_op=step_op, cond_op=cond_op, simple=simple and simple_init and not dynamic,
                dynamic_reason="; ".join(reasons) if reasons else None,
                exits_early=brk is not None and len(reasons) == 1), changing


def _inits(node: c_ast.For, ctx: Ctx) -> list:
    """The head's initialisers (variable, expression), checked and assigned: what the head leaves in its
    variables before the first test."""
    inits = lf.read_inits(node.init)
    if inits is None:
        raise ctx.error(node, "unsupported for-loop initialiser",
                        "for (int i = LOW; ...), for (i = LOW, j = HIGH; ...) or for (; ...)")
    for v in sorted(lf.assigned_locals(node.next) & (ctx.params | ctx.scalars | set(ctx.arrays))):
        # `for (...; ...; i++, k++)`: the increment is no statement the kernel's checks visit (an outside probe's
        # `k++` there passed validate, was priced as a fixed shift and failed to compile in hlsim)
        kind = "parameter" if v in ctx.params else "scalar" if v in ctx.scalars else "array"
        raise ctx.error(node, f"the for loop's increment sets '{v}', a {kind} of the workload", "local variables")
    for v, _e in inits:
        if v in ctx.params or v in ctx.scalars or v in ctx.arrays:
            raise ctx.error(node, f"the for loop sets '{v}', a parameter, scalar or array", "local variables")
    types = {d.name: _GEN.visit(d.type).strip() for d in node.init.decls} \
        if isinstance(node.init, c_ast.DeclList) else {}
    for v, e in inits:  # what the head leaves in its variables before the first test
        if v in types:
            ctx.locals[v] = types[v] or "int"
        elif v not in ctx.locals:
            raise ctx.error(node, f"unknown name '{v}'", "a declared local variable",
                            "declare it before the loop, or in the head: for (int i = ...)")
        ctx.assign(v, e)
    return inits


def _static_text(n: c_ast.Node | None, ctx: Ctx, what: str, reasons: list[str]) -> str:
    """The C text of a head expression that is fixed on entry, else "0" and the reason it is not."""
    v = ctx.value(n)
    if v.node is None:
        reasons.append(f"its {what} {v.reason}")
        return "0"
    return v.text


def _bound(node: c_ast.For, ctx: Ctx, var: str, reasons: list[str]) -> tuple[str, str, bool]:
    """(exclusive upper bound text, ``cond_op``, whether the condition is the simple ``VAR < BOUND`` form)."""
    cond = lf.read_cond(node.cond, var)
    if cond is None:
        v = ctx.value(node.cond)
        reasons.append("its condition is not `VAR < BOUND` (nor <=, >, >=, !=)" if v.node is not None
                       else f"its condition {v.reason}")
        return "0", "", False
    op, bound = cond
    upper = _static_text(bound, ctx, "bound", reasons)
    if op == "<=":
        upper = f"({upper}) + 1"
    elif op == ">=":
        upper = f"({upper}) - 1"
    cond_op = "!=" if op == "!=" else ""
    simple = op != "!=" and isinstance(node.cond, c_ast.BinaryOp) and lf.is_id(node.cond.left, var)
    return upper, cond_op, simple


def _step(node: c_ast.For, ctx: Ctx, var: str, label: str, reasons: list[str],
          simple: bool) -> tuple[int, str | None, str, bool]:
    """(step, ``step_text``, ``step_op``, simple so far): a constant additive step, a geometric factor, or
    an expression step (``k += m``)."""
    step, step_text, step_op = 1, None, "+"
    nxt = lf.read_next(node.next, var)
    if nxt is None:
        reasons.append("its increment is not a step of the loop variable (i++, i += E, i *= C, i >>= C ...)")
        return step, step_text, step_op, simple
    step_op, step_node, others = nxt
    st = _static_text(step_node, ctx, "step", reasons)
    try:
        step = int(evaluate(st, {}))
        if step_op != "+":
            step_text = str(step)
            step = 1 if step_op in ("*", "<<") else -1
    except ExprError:
        step_text = st
        neg = isinstance(step_node, c_ast.UnaryOp) and step_node.op == "-"
        step = -1 if neg or step_op in ("/", ">>") else 1
    simple = simple and step_op == "+" and step_text is None and not others
    if step_op == "+" and step == 0:
        raise ctx.error(node, f"loop {label} steps by 0", "a non-zero step")
    return step, step_text, step_op, simple


def enter(node, ctx: Ctx, label: str, var: str | None) -> set[str]:
    """At a loop's head: the locals its body (or increment) assigns change from one iteration to the
    next, so they hold no fixed expression there, and hold data if any iteration may put data in them."""
    changing = lf.assigned_locals(node.stmt) | lf.assigned_locals(getattr(node, "next", None))
    changing = {n for n in changing if n in ctx.locals and n != var}
    carried = lf.carried_data([node.stmt, getattr(node, "next", None), getattr(node, "cond", None)], ctx.values)
    for n in changing:
        ctx.values.static[n] = None
        ctx.values.changing[n] = label
        if n in carried:
            ctx.values.data.add(n)
    return changing


def while_counter(node, before: lf.Values, loop_vars: list[str]) -> tuple[str, int] | None:
    """A ``while``/``do``-``while`` loop's counter: the one local its body steps by a constant exactly once, at
    the body's top level (``k++;``, ``k -= 2;``), that nothing else in the loop assigns, and that holds a fixed
    start at the head (an expression over parameters and scalars, not data, not an enclosing loop's
    variable): (name, step). The elements it indexes over an entry are then a run of trips x step, as a
    counted loop's are (a tile follows the trips that ran instead of the whole array)."""
    items = (node.stmt.block_items or []) if isinstance(node.stmt, c_ast.Compound) else [node.stmt]
    steps: dict[str, int] = {}
    for it in items:
        got = _step_of(it)
        if got is not None:
            steps[got[0]] = got[1] if got[0] not in steps else 0  # stepped twice: not a counter
    found = [(k, s) for k, s in steps.items() if s and _assignments(node, k) == 1]
    if len(found) != 1:
        return None
    name, step = found[0]
    start = before.static.get(name)
    if start is None or name in before.data or lf.ids(start) & set(loop_vars):
        return None
    return name, step


def _step_of(it) -> tuple[str, int] | None:
    if isinstance(it, c_ast.UnaryOp) and it.op in ("p++", "++", "p--", "--") and isinstance(it.expr, c_ast.ID):
        return it.expr.name, 1 if "++" in it.op else -1
    if isinstance(it, c_ast.Assignment) and it.op in ("+=", "-=") and isinstance(it.lvalue, c_ast.ID) and \
            isinstance(it.rvalue, c_ast.Constant) and it.rvalue.type == "int":
        try:
            c = int(it.rvalue.value.rstrip("uUlL"), 0)
        except ValueError:
            return None
        return it.lvalue.name, c if it.op == "+=" else -c
    return None


def _assignments(node, name: str) -> int:
    """How many times the loop's body and condition assign ``name`` (as written, not as run)."""
    count = 0

    class V(c_ast.NodeVisitor):
        def visit_Assignment(self, n):
            nonlocal count
            count += isinstance(n.lvalue, c_ast.ID) and n.lvalue.name == name
            self.generic_visit(n)

        def visit_UnaryOp(self, n):
            nonlocal count
            count += n.op in ("p++", "++", "p--", "--") and isinstance(n.expr, c_ast.ID) and n.expr.name == name
            self.generic_visit(n)

        def visit_Decl(self, n):
            nonlocal count
            count += 2 * (n.name == name)  # a local of the same name declared inside: not one counter
            self.generic_visit(n)
    for part in (node.stmt, node.cond):
        if part is not None:
            V().visit(part)
    return count


def assigns_outside_shadows(node: c_ast.Node | None, name: str) -> bool:
    """Whether a subtree assigns the local ``name`` itself: not a loop or block that declares its own ``name``
    (`for (int i = 0; i < 4; i++) { for (int i = 0; ...) ... }` is valid C, the inner ``i`` another variable;
    before 2026-12-07 its ``i++`` counted as the outer loop's variable assigned in the body, so the outer loop
    could not be tiled and its arrays were priced whole: an outside probe)."""
    if node is None:
        return False
    if isinstance(node, c_ast.For) and _declares(node.init, name):
        return False
    if isinstance(node, c_ast.Compound):
        for item in node.block_items or []:
            if _declares(item, name):
                return name in lf.assigned_locals(getattr(item, "init", None))  # the initialiser reads the outer one
            if assigns_outside_shadows(item, name):
                return True
        return False
    if isinstance(node, (c_ast.Assignment, c_ast.UnaryOp)) and name in lf.assigned_locals(node):
        return True
    return any(assigns_outside_shadows(child, name) for _, child in node.children())


def _declares(node, name: str) -> bool:
    decls = node.decls if isinstance(node, c_ast.DeclList) else [node]
    return any(isinstance(d, c_ast.Decl) and d.name == name for d in decls)
