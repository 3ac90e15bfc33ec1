"""Whether ``reduction: tree`` may split a loop's accumulators into partial results (reassociation legality).

Why: ``reduction: tree`` on an unrolled or pipelined loop gives each copy its own partial value of every local
the body carries from one iteration to the next, and combines the partials on exit. That is the same result
only when each update folds a value that does not depend on the accumulator into it with one associative
operation (``s += e``, ``s = s * e``, ``s = max(s, e)``, ``s ^= e``), and nothing else in the body reads the
running value. An outside user wrote ``s = s * C + x[i]`` (a Horner recurrence, each step a multiply and an
add after the previous one) with ``reduction: tree``: the schedule split it into independent copies and ran
256 steps in 456-1,024 cycles where the chain needs at least 1,792, and nothing said the mapping was wrong
(the functional check runs the sequential C, so it passed). Each statement is read back from its C text with
pycparser; what this accepts is a reassociation an HLS tool performs, what it refuses names the statement.
"""

from __future__ import annotations

import re

from pycparser import c_ast, c_generator, c_parser

from .load_reuse import written as _assigns  # every name a statement assigns (`y = acc++` too)

_ASSOC = {"+", "*", "&", "|", "^"}   # binary operators a chain of updates may regroup
_COMPOUND = {"+=", "-=", "*=", "&=", "|=", "^="}   # `s -= e` is `s += -e`
_MINMAX = {"max", "min", "fmax", "fmin", "fmaxf", "fminf"}
_PARSER = c_parser.CParser()
_GEN = c_generator.CGenerator()


def illegal_tree(design, label: str, tree: bool = True) -> str | None:
    """Why ``reduction: tree`` on loop ``label`` would change what the loop computes, as text, or None; with
    ``tree`` False, why no reordering of its iterations keeps it (``llmulator.order_legality``), in the same
    words less what partial results would do."""
    loop = design.tree.loops[label]
    stmts, conds = [], []
    for n in loop.descendants():
        if getattr(n, "kind", "") == "stmt":
            stmts.append(n)
        elif getattr(n, "kind", "") == "branch":
            conds.append(n.cond)
        if getattr(n, "cond_stmt", None) is not None:
            conds.append(n.cond_stmt)
    selects = _selects(loop)
    for s in _carried(loop, design.tree):
        ops = set()
        for st in stmts:
            if st.writes_local == s:
                op = _combines(selects.get(id(st), (st.text,))[0], s)
                if op is None:
                    return (f"`{st.text}` is not an associative update of `{s}`" + (
                        f" (`{s} += e`, `{s} *= e`, `{s} = max({s}, e)`, ... with `e` not reading `{s}`): its copies "
                        "cannot run apart" if tree else ", and carries it from one iteration to the next"))
                ops.add(op)
            elif s in _assigns(st):
                return f"`{st.text}` updates `{s}` inside an expression" + (
                    ", which partial results do not hold" if tree else ", carried from one iteration to the next")
            elif s in st.reads_locals:
                return f"`{st.text}` reads the running value of `{s}`" + (
                    ", which partial results do not hold" if tree else ", carried from one iteration to the next")
        if len(ops) > 1:
            return (f"`{s}` is updated by {len(ops)} different operations ({', '.join(sorted(ops))}): "
                    "a chain that mixes them cannot be regrouped")
        for c in conds:
            if s in c.reads_locals and not any(c is cond for _, cond in selects.values()):
                return f"the condition `{c.text}` reads the running value of `{s}`" + (
                    ", which partial results do not hold" if tree else ", carried from one iteration to the next")
    return None


def _carried(loop, tree) -> list[str]:
    """Locals whose value one iteration of ``loop`` takes from an earlier one. (1) Read, by a statement or a
    condition in the body's order, where some path through this iteration has not written them yet:
    ``t = s * x; s = t + a[i]`` carries ``s`` through ``t`` (before, only a statement that both read and wrote
    the local was found: the tree ran a multiply-add chain 2.5-7x faster than its latency allows, an outside
    probe). (2) Written on some paths only and read outside the loop: which iteration wrote last is what the
    order decides (`if (x[i] > 0) last = x[i];`). Before 2026-12-08 a write under an `if` counted as a write on
    every path, and `acc` in `y = acc++` as not written: `validate` passed reorders whose run was wrong (b08,
    b09, g01 of an outside probe)."""
    names = set(tree.locals)
    written = {v for n in loop.descendants() if getattr(n, "kind", "") == "stmt" for v in _assigns(n) & names}
    out: set[str] = set()
    maybe = written - _flow(loop.body, set(), written, out)
    if maybe:
        inside = {id(n) for n in loop.descendants()} | {id(loop)}
        for n in tree.walk():
            if id(n) not in inside:
                out |= _reads(n) & maybe
    return sorted(out)


def _flow(nodes: list, seen: set[str], written: set[str], out: set[str]) -> set[str]:
    """The locals of ``written`` every path through ``nodes`` has written, given ``seen`` before them; adds to
    ``out`` those read before every path has. A loop inside the body is taken to run (as before)."""
    for n in nodes:
        kind = getattr(n, "kind", "")
        out |= (_reads(n) & written) - seen
        if kind == "stmt":
            seen = seen | (_assigns(n) & written)
        elif kind == "branch":
            seen = seen | (_flow(n.then, set(seen), written, out) & _flow(n.orelse, set(seen), written, out))
        else:
            seen = _flow(n.body, set(seen), written, out)
    return seen


def _reads(n) -> set[str]:
    """The locals node ``n`` itself reads: a statement's (its expression side effects too: `y = acc++`), a
    branch's condition, a loop's own `while` condition."""
    if getattr(n, "kind", "") == "stmt":
        return set(n.reads_locals) | (_assigns(n) - {n.writes_local})
    c = getattr(n, "cond", None) if getattr(n, "kind", "") == "branch" else getattr(n, "cond_stmt", None)
    return set(c.reads_locals) if c is not None else set()


_OP_OF = {"+=": "+", "-=": "+", "*=": "*", "&=": "&", "|=": "|", "^=": "^"}


def _selects(loop) -> dict[int, tuple[str, object]]:
    """``id(statement)`` -> (the ternary it means, the condition) for each `if (c) s = e;` whose condition reads
    the local ``s`` it assigns: `if (x[i] < m) m = x[i];` is `m = (x[i] < m) ? x[i] : m`, a min (before
    2026-12-07 the statement alone was read, a last-writer update, and its order refused; an outside probe)."""
    out = {}
    for n in loop.descendants():
        sel = select_text(n)
        if sel is not None and n.then[0].writes_local and n.then[0].writes_local in n.cond.reads_locals:
            out[id(n.then[0])] = (sel[0], n.cond)
    return out


def select_text(n) -> tuple[str, str] | None:
    """(`v = (c) ? (e) : v`, `v`) for a branch `if (c) v = e;` (no else, one assignment), else None: the update
    it means, which ``fold_op`` reads as a max or a min where c compares v and e."""
    if getattr(n, "kind", "") != "branch" or n.orelse or len(n.then) != 1 or getattr(n.then[0], "kind", "") != "stmt":
        return None
    try:
        a = _PARSER.parse("void f(void) { " + n.then[0].text.rstrip(";") + "; }").ext[0].body.block_items[0]
    except Exception:  # noqa: BLE001 - not a statement this reads back
        return None
    if not (isinstance(a, c_ast.Assignment) and a.op == "="):
        return None
    v = _GEN.visit(a.lvalue)
    return f"{v} = ({n.cond_text}) ? ({_GEN.visit(a.rvalue)}) : {v}", v


def folds_element(text: str, element: str) -> bool:
    """Whether the statement ``text`` folds into the array element ``element`` (`s[0]`) a value that does not read
    it, with one associative operation (`s[0] += x[p]`, `s[0] = s[0] * x[p]`): a reduction, which may run in any
    order (``llmulator.order_legality``); `s[0] = s[0] * 3 + x[p]` is not one."""
    return fold_op(text, element) is not None


def fold_op(text: str, element: str) -> str | None:
    """The operation with which ``text`` folds into ``element`` (``folds_element``), or None."""
    try:
        elem = _GEN.visit(_PARSER.parse("void f(void) { " + element + "; }").ext[0].body.block_items[0])
        stmt = _PARSER.parse("void f(void) { " + text.rstrip(";") + "; }").ext[0].body.block_items[0]
    except Exception:  # noqa: BLE001 - not a statement this reads back: not judged a reduction
        return None
    swapped = re.sub(r"(?<![\w\].])" + re.escape(elem), "__acc", _GEN.visit(stmt))
    return _combines(swapped, "__acc") if swapped != _GEN.visit(stmt) else None


def _combines(text: str, s: str) -> str | None:
    """The one associative operation with which ``text`` (one C statement) folds into ``s`` a value that does
    not read ``s`` (``+`` for ``s -= e`` and ``s++``, ``max``/``min`` for either spelling), or None."""
    try:
        stmt = _PARSER.parse("void f(void) { " + text.rstrip(";") + "; }").ext[0].body.block_items[0]
    except Exception:  # noqa: BLE001 - not a statement this reads back: not judged legal
        return None
    if isinstance(stmt, c_ast.UnaryOp) and stmt.op in ("p++", "p--", "++", "--"):
        return "+" if _is(stmt.expr, s) else None
    if not isinstance(stmt, c_ast.Assignment) or not _is(stmt.lvalue, s):
        return None
    if stmt.op in _COMPOUND:
        return None if _uses(stmt.rvalue, s) else _OP_OF[stmt.op]
    if stmt.op != "=":
        return None
    rv = stmt.rvalue
    if isinstance(rv, c_ast.FuncCall) and isinstance(rv.name, c_ast.ID) and rv.name.name in _MINMAX:
        args = rv.args.exprs if rv.args is not None else []
        ok = len(args) == 2 and sum(_is(a, s) for a in args) == 1 and not any(
            _uses(a, s) for a in args if not _is(a, s))
        return ("max" if "max" in rv.name.name else "min") if ok else None
    if isinstance(rv, c_ast.TernaryOp):
        return _ternary(rv, s)
    if isinstance(rv, c_ast.BinaryOp) and (rv.op in _ASSOC or rv.op == "-"):
        op = "+" if rv.op in ("+", "-") else rv.op
        terms = _chain(rv, op)
        mine = [(sign, t) for sign, t in terms if _uses(t, s)]
        return op if len(mine) == 1 and mine[0][0] and _is(mine[0][1], s) else None
    return None


def _ternary(rv, s: str) -> str | None:
    """``s = c ? s + e : s`` (a conditional accumulation: the update's own operation) or ``s = (e > s) ? e : s``
    (a max or min written out)."""
    sides = [rv.iftrue, rv.iffalse]
    other = [x for x in sides if not _is(x, s)]
    if len(other) != 1:
        return None
    if not _uses(rv.cond, s):
        return _combines(f"{s} = {_GEN.visit(other[0])}", s)
    if _uses(other[0], s) or not (isinstance(rv.cond, c_ast.BinaryOp) and rv.cond.op in ("<", ">", "<=", ">=")):
        return None
    # keeps the side the comparison favours: e when e > s (max), e when e < s (min), either way round
    greater = rv.cond.op in (">", ">=")
    e_left = not _uses(rv.cond.left, s)
    takes_e_when_true = rv.iftrue is other[0]
    return "max" if (greater == e_left) == takes_e_when_true else "min"


def _chain(e, op: str) -> list[tuple[bool, c_ast.Node]]:
    """The operands of a chain of ``op`` (``+`` includes ``-``), each with True where it is not subtracted."""
    if isinstance(e, c_ast.BinaryOp) and (e.op == op or (op == "+" and e.op == "-")):
        right = _chain(e.right, op)
        if e.op == "-":
            right = [(not sign, t) for sign, t in right]
        return _chain(e.left, op) + right
    return [(True, e)]


def _is(e, s: str) -> bool:
    while isinstance(e, c_ast.Cast):
        e = e.expr
    return isinstance(e, c_ast.ID) and e.name == s


def _uses(e, s: str) -> bool:
    if isinstance(e, c_ast.ID):
        return e.name == s
    return any(_uses(child, s) for _, child in e.children())
