"""The values a loop variable takes and the conditions over them, evaluated without running the kernel.

C semantics on integer loop variables and parameters: ``/`` truncates between
integers, a loop enumerates its variable's values for given outer values (an
additive step, a geometric one, or one that runs until its variable equals its
bound), and an ``if`` over loop variables and parameters is compiled once from
a whitelisted Python AST. ``LoopTree`` (``llmulator.kernel``) counts trips and
branch probabilities with these.
"""

from __future__ import annotations

import ast
import functools
import math
import re

from .errors import UserError
from .expr import ExprError, c_divmod, evaluate

MAX_VALUES = 10_000_000


class EndlessLoop(UserError, ValueError):
    """A loop that never ends at the design's sizes: the user's to fix (exit 2, not an internal error), and a
    ValueError to the callers that already fall back on one."""


def values(loop, names: dict[str, float]) -> range | list[int]:
    """The values a static loop's variable takes for these outer values (C semantics, integer bounds):
    a range for an additive step, the enumerated values for a geometric one or one that runs until its
    variable equals the bound. A loop that would not end (a zero step, a factor that cannot reach the
    bound) raises ValueError."""
    lo = int(eval_c(loop.lower_text, names))
    hi = int(eval_c(loop.upper_text, names))
    step = loop.step if loop.step_text is None else int(eval_c(loop.step_text, names))
    if loop.step_op == "+" and not loop.cond_op:
        if step == 0:
            raise EndlessLoop(f"loop {loop.label} (line {loop.line}) steps by 0")
        return range(lo, hi, step)
    out: list[int] = []
    v = lo
    up = loop.step > 0
    while (v != hi) if loop.cond_op == "!=" else (v < hi if up else v > hi):
        out.append(v)
        if len(out) > MAX_VALUES:
            raise EndlessLoop(f"loop {loop.label} (line {loop.line}) does not reach its bound at these sizes "
                              f"(its variable steps past {hi}: a `!=` test needs a step that lands on it)")
        nv = step_value(loop.step_op, v, step)
        if nv == v:
            raise EndlessLoop(f"loop {loop.label} (line {loop.line}) does not reach its bound (stuck at {v})")
        v = nv
    return out


def step_value(op: str, v: int, step: int) -> int:
    if op == "+":
        return v + step
    if op == "*":
        return v * step
    if op == "/":
        return int(v / step) if step else v
    if op == "<<":
        return v << step
    return v >> step


def is_frac(names: dict[str, float]) -> bool:
    return any(isinstance(v, float) and not float(v).is_integer() for v in names.values())


def eval_c(text: str, names: dict[str, float]) -> float:
    """A bound's C text at these values; between integers ``/`` truncates as in C."""
    text = text.replace("(int)", "")
    if "/" in text and not is_frac(names):
        text = text.replace("/", "//")
    return float(evaluate(text, names, c=True))


_ALLOWED = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.Compare,
            ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div,
            ast.FloorDiv, ast.Mod, ast.Constant, ast.Name, ast.Load, ast.BitAnd, ast.BitOr, ast.BitXor,
            ast.LShift, ast.RShift, ast.Invert, ast.IfExp, ast.Call)


class _CDivision(ast.NodeTransformer):
    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)):  # integer loop indices: C's / and % truncate
            fn = "_cmod" if isinstance(node.op, ast.Mod) else "_cdiv"
            return ast.copy_location(ast.Call(ast.Name(fn, ast.Load()), [node.left, node.right], []), node)
        if isinstance(node.op, (ast.LShift, ast.RShift)):  # C's shifts stay within a word (as ``expr`` bounds them)
            fn = "_shl" if isinstance(node.op, ast.LShift) else "_shr"
            return ast.copy_location(ast.Call(ast.Name(fn, ast.Load()), [node.left, node.right], []), node)
        return node


def _shift(a, b, left: bool):
    """``a << b`` or ``a >> b`` with ``b`` in [0, 64): Python's integers would build `1 << 1073741824` (a branch
    condition of an outside probe hung ``validate`` and ``estimate`` in the parent), and C leaves it undefined."""
    if not 0 <= b < 64:
        raise ExprError(f"shift by {b} in a condition (a shift count must be 0 to 63)")
    return int(a) << int(b) if left else int(a) >> int(b)


@functools.lru_cache(maxsize=1024)
def condition(cond: str):
    """A C condition over integer loop variables and parameters (``&&``, ``||``, ``!``, comparisons,
    + - * / %) compiled once; anything else (calls, array reads, fields) raises ExprError."""
    text = _python_text(cond)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ExprError(f"cannot read condition {cond!r}") from None
    bad = next((n for n in ast.walk(tree) if not isinstance(n, _ALLOWED) or
                (isinstance(n, ast.Constant) and not isinstance(n.value, (int, float))) or
                (isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name) and n.func.id in ("min", "max")
                                                  and not n.keywords))), None)
    if bad is not None:
        raise ExprError(f"condition {cond!r} reads more than loop variables and parameters")
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}
    names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - calls)
    code = compile(ast.fix_missing_locations(_CDivision().visit(tree)), "<condition>", "eval")
    return code, names


def holds(cond: str, names: dict[str, float]) -> bool:
    """Whether a C condition over loop variables and parameters holds for these values."""
    code, needed = condition(cond)
    missing = [n for n in needed if n not in names]
    if missing:
        raise ExprError(f"condition {cond!r} reads {', '.join(missing)}, not a loop variable or parameter")
    return bool(eval(code, _SAFE, {n: names[n] for n in needed}))  # noqa: S307 - whitelisted AST


_SAFE = {"__builtins__": {}, "min": min, "max": max, "_shl": lambda a, b: _shift(a, b, True),
         "_shr": lambda a, b: _shift(a, b, False), "_cdiv": lambda a, b: c_divmod(a, b)[0],
         "_cmod": lambda a, b: c_divmod(a, b)[1]}


def strided(per: list, var: str, limit: int) -> list[dict[str, float]]:
    """Every combination of an outer environment and a value of the loop's variable (``per``: each environment
    with the loop's values there), or above ``limit`` an even stride of them, built without the rest: before, all
    of them were built and then strided, and an outside probe's 9-line kernel took 24 GB (the values are ranges:
    their lengths are known without listing them)."""
    total = sum(len(vals) for _, vals in per)
    step = math.ceil(total / limit) if total > limit else 1
    out, start = [], 0
    for env, vals in per:
        out.extend({**env, var: vals[i]} for i in range((-start) % step, len(vals), step))
        start += len(vals)
    return out


def index_guards(roots: list, target) -> list[tuple[str, bool, set[str]]]:
    """The conditions on the path from the kernel's top to loop ``target`` that read loop variables and parameters
    only, with the side taken (True: the ``then`` side) and the names they read: what selects the entries of the
    loops around ``target`` on which it runs at all (``LoopTree.trip_profile``). An `if (c) continue;` before it in
    its loop's body counts as `if (!c)` around it, and the index-only terms of a condition `a && b` that also reads
    data select its then side (before 2026-12-07 neither did: the mean over every t, an outside probe)."""
    def walk(nodes, path):
        for n in nodes:
            if n is target:
                return path
            kind = getattr(n, "kind", "")
            if kind == "branch":
                guard = _readable(n.index_text) if not n.data_dependent and n.index_text is not None else []
                found = walk(n.then, path + [(t, True, r) for t, r in guard or _index_terms(n.cond_text)])
                if found is None:
                    found = walk(n.orelse, path + [(t, False, r) for t, r in guard])
                if found is None and _skips(n):  # the rest of this body runs where the condition does not hold
                    path = path + [(t, False, r) for t, r in guard]
            else:
                found = walk(getattr(n, "body", []), path) if hasattr(n, "body") else None
            if found is not None:
                return found
        return None
    return walk(roots, []) or []


def _skips(branch) -> bool:
    """`if (c) continue;`: no else side, and a `continue` its then side ends with."""
    then = branch.then
    return not branch.orelse and bool(then) and getattr(then[-1], "kind", "") == "jump" \
        and then[-1].text.rstrip(";").strip() == "continue"


def _python_text(cond: str) -> str:
    """A C condition in Python's spelling (`&&`, `||`, `!`), for ``ast``."""
    return re.sub(r"!(?!=)", " not ", cond.replace("&&", " and ").replace("||", " or "))


def _index_terms(cond: str) -> list[tuple[str, set[str]]]:
    """The terms of a condition `a && b && ...` that read loop variables and parameters only (``_readable``): each
    must hold on the then side, whatever the terms that read data decide."""
    text = _python_text(cond)
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return []
    terms = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And) else []
    return [g for t in terms for g in _readable(ast.unparse(t))]


def _readable(cond: str) -> list[tuple[str, set[str]]]:
    """[(``cond``, the names it reads)] where ``condition`` compiles it, else []."""
    try:
        return [(cond, set(condition(cond)[1]))]
    except ExprError:
        return []


def entry_trips(loop, sizes: dict[str, float], limit: int, guards: list[tuple[str, bool, set[str]]],
                prefix: dict[str, float] | None = None) -> list[int] | None:
    """``LoopTree.trip_profile`` of ``loop`` under ``guards`` (``index_guards``: the entries they let through);
    an enclosing loop in ``prefix`` (one a `break` may end) runs the first ``ceil(prefix[label])`` of its values
    (None: all of them, what the hardware is built for: a hint of 2 passes must not refuse a tile of 4 trips).
    Before hlsim 0.74 / analytical 0.87 such a loop hid the triangle inside it: a bubble sort's `j < N - 1 - p`
    under a pass loop that stops once nothing swaps had no profile, its tile took the mean 27.5 trips where the
    first pass runs 47, and hlsim read 28.5 words of an array whose 48 elements the run read (an outside probe)."""
    prefix = prefix or {}

    def vals(anc, env):
        out = values(anc, env)
        return out[:math.ceil(prefix[anc.label])] if prefix.get(anc.label) is not None else out

    ancestors = loop.ancestors()  # outermost first
    needed = set(loop.depends_on_outer).union(*(r for _, _, r in guards))
    for anc in reversed(ancestors):  # innermost first: what their own bounds need
        if anc.var in needed or anc.depends_on_outer:
            needed |= set(anc.depends_on_outer)
    chain = [a for a in ancestors if (a.var is not None and a.var in needed) or a.depends_on_outer]
    if any((a.data_dependent or a.is_while) and a.label not in prefix for a in chain):
        return None
    envs: list[dict[str, float]] = [dict(sizes)]
    for anc in chain:
        if guards and anc.var is not None:  # above ``limit``, an even stride of the combinations stands for them
            envs = strided([(env, vals(anc, env)) for env in envs], anc.var, limit)  # (a probe's 210,000)
            continue
        grown = []
        for env in envs:
            these = vals(anc, env)
            if len(grown) + len(these) > limit:  # (before listing them: a loop of 10^12 trips took 13 GB)
                return None
            grown.extend({**env, anc.var: v} if anc.var is not None else env for v in these)
        envs = grown
    try:
        kept = [env for env in envs if all(holds(t, env) == side for t, side, _ in guards)]
    except (ExprError, ValueError, TypeError, ZeroDivisionError):
        return None
    if guards and not kept and len(envs) >= limit:
        return None  # the stride missed every entry the guards let through: not a loop that never runs
    return [len(values(loop, env)) for env in kept]
