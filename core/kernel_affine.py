"""The affine form of an array subscript over the enclosing loop variables (``2*i + j - 1``), or None where
it has none (an indirect index: ``x[col[j]]``, a data-derived local). Footprints, reuse and dependence
distances are read from these forms; a subscript without one is priced as touching anything."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pycparser import c_ast

from .expr import ExprError, evaluate
from .kernel import Affine

if TYPE_CHECKING:
    from .kernel_ctx import Ctx


def affine(n: c_ast.Node, ctx: Ctx) -> Affine | None:
    """Affine form of an index over the enclosing loop variables, or None."""
    if isinstance(n, c_ast.Constant):
        try:
            return Affine({}, str(int(n.value, 0)))
        except ValueError:
            return None
    if isinstance(n, c_ast.ID):
        if n.name in ctx.body_set_vars:
            # a loop variable its body also assigns (`if (x[i] > 4) i++;`) is a register the data move, as a
            # local j would be: its accesses are indirect (footprint the array's extent, no stride; before hlsim
            # 0.51 the tile moved trips x step elements, 10 of x's 16 where the loop read across all 16)
            return None
        if n.name in ctx.loop_vars:
            return Affine({n.name: 1}, "0")
        if n.name in ctx.params or (n.name in ctx.scalars and n.name not in ctx.float_scalars):
            # an integer scalar is fixed for the run (a kernel cannot assign it), so it shifts the subscript as a
            # parameter does; its value, the variant's, is read where the constant is evaluated (Design.values).
            # Before hlsim 0.78 / analytical 0.92 `A[i + k][i + k]` had no affine form: priced as indirect, a tile
            # of A moved the whole array (20,736 words from DRAM where the loop reads 142: an outside probe)
            return Affine({}, n.name)
        held = ctx.values.static.get(n.name) if n.name in ctx.locals else None
        if held is not None:
            return affine(held, ctx)  # a local holding an expression of loop variables and parameters
        return None  # a data-derived local: indirect
    if isinstance(n, c_ast.UnaryOp) and n.op == "-":
        a = affine(n.expr, ctx)
        return None if a is None else Affine({k: -v for k, v in a.coefs.items()}, f"-({a.const})")
    if isinstance(n, c_ast.BinaryOp) and n.op in ("+", "-"):
        a, b = affine(n.left, ctx), affine(n.right, ctx)
        return None if a is None or b is None else _add(a, b, n.op)
    if isinstance(n, c_ast.BinaryOp) and n.op == "*":
        return _product(affine(n.left, ctx), affine(n.right, ctx), ctx.param_values)
    if isinstance(n, c_ast.BinaryOp) and n.op in ("/", ">>", "%", "<<"):
        return _integer_op(n.op, affine(n.left, ctx), affine(n.right, ctx), ctx.param_values)
    return None


def _integer_op(op: str, a: Affine | None, b: Affine | None, sizes: dict[str, int] | None) -> Affine | None:
    """``a op b`` for C's integer operators: of two constants (`A[len / 2]`, `A[N >> 1]`, parameters or scalars:
    a constant element, which before hlsim 0.79 was priced as indirect, the whole array with every tile), or a
    left shift of an affine form by a constant (`i << 1` is `2 * i`). A quotient of a loop variable has no affine
    form (``coarse`` reads its span)."""
    if a is None or b is None or b.coefs:
        return None
    if not a.coefs:
        return Affine({}, f"({a.const}) {'//' if op == '/' else op} ({b.const})")
    k = int(b.const) if b.const.isdigit() else _integer(b.const, sizes)
    if (op == "/" and k == 1) or (op == ">>" and k == 0):  # `i / 1`, `i >> 0`: i itself
        return a
    if op == "<<" and k is not None and 0 <= k < 31:
        return Affine({v: c << k for v, c in a.coefs.items()}, f"({a.const}) << {k}")
    return None


def _product(a: Affine | None, b: Affine | None, sizes: dict[str, int] | None = None) -> Affine | None:
    """The affine form of ``a * b``: one side a constant integer (a literal, or parameters whose values
    ``sizes`` gives: `A[m * K + k]` over a flattened matrix), or both free of loop variables."""
    if a is None or b is None:
        return None
    pairs = ((a, b), (b, a))
    for one, other in pairs:
        if not one.coefs and one.const.lstrip("-").isdigit():
            k = int(one.const)
            return Affine({v: c * k for v, c in other.coefs.items()}, f"{k} * ({other.const})")
    for one, other in pairs:
        if not one.coefs and other.coefs and (k := _integer(one.const, sizes)) is not None:
            return Affine({v: c * k for v, c in other.coefs.items()}, f"{k} * ({other.const})")
    if not a.coefs and not b.coefs:
        return Affine({}, f"({a.const}) * ({b.const})")
    return None


def _integer(const: str, sizes: dict[str, int] | None) -> int | None:
    """``const`` as an integer: a literal, or an expression of parameters at the design's ``sizes``. Before
    hlsim 0.74 / analytical 0.87 a parameter's value was not known here: `C[m * N + n] += A[m * K + k] * ...`
    (a matrix flattened into one dimension, as HLS code often writes it) had no affine form, its accesses were
    priced as indirect, and GEMM with k unrolled by 4 ran 5,120 cycles where the same kernel with `A[m][k]`, or
    with the literal `m * 16`, runs 2,480 (both models agreed with each other; an outside-code check)."""
    if not sizes:
        return None
    try:
        v = evaluate(const, sizes, c=True)
    except (ExprError, TypeError, ValueError, ZeroDivisionError):
        return None
    return int(v) if float(v).is_integer() else None


def coarse(n: c_ast.Node, ctx: Ctx) -> tuple[Affine, int] | None:
    """A subscript with no affine form that is one divided by a positive integer, ``(numerator, divisor)``:
    ``i / 2``, ``i >> 2`` (a divisor of 4), ``(i >> 2) + 8`` (the numerator ``i + 32``: floor((e + k c) / c) is
    floor(e / c) + k). Its elements over a range of the loop are the range's over the divisor, so the footprint
    models read it as coefficients divided by the divisor; the analyses that need every address exact (bank
    conflicts, dependences) still take it as indirect. Before hlsim 0.79 / analytical 0.93 such a subscript
    moved the whole array with every tile: `A[i / 2][i / 2]` over 52 rows, 2,704 words where the run reads 16
    (an outside probe); pooling and upsampling kernels index this way."""
    if isinstance(n, c_ast.ID):  # a local that holds a quotient (`int t = i / 2; x[t]`)
        held = ctx.values.static.get(n.name) if n.name in ctx.locals and n.name not in ctx.body_set_vars else None
        return coarse(held, ctx) if held is not None else None
    if isinstance(n, c_ast.BinaryOp) and n.op in ("/", ">>"):
        right = affine(n.right, ctx)
        k = None if right is None or right.coefs else \
            int(right.const) if right.const.isdigit() else _integer(right.const, ctx.param_values)
        div = k if n.op == "/" else (1 << k if k is not None and 0 <= k < 31 else None)
        if div is None or div < 1:
            return None
        inner = coarse(n.left, ctx)  # `i / 2 / 2`: floor(floor(e / a) / b) is floor(e / (a b)) for e >= 0
        if inner is not None:
            return inner[0], inner[1] * div
        num = affine(n.left, ctx)
        return (num, div) if num is not None and num.coefs and div > 1 else None
    if isinstance(n, c_ast.BinaryOp) and n.op in ("+", "-"):
        for one, other, flip in ((n.left, n.right, False), (n.right, n.left, n.op == "-")):
            part, shift = coarse(one, ctx), affine(other, ctx)
            if part is None or shift is None or shift.coefs:
                continue
            num, div = part
            if not flip:  # e / d + c is (e + c d) / d
                return Affine(dict(num.coefs), f"({num.const}) {n.op} {div} * ({shift.const})"), div
            # c - e / d spans what e / d spans, reflected: `N - 1 - i / 2` as (d c - e) / d, within an element
            return Affine({v: -c for v, c in num.coefs.items()}, f"{div} * ({shift.const}) - ({num.const})"), div
    return None


CLAMPS = ("min", "max", "fmin", "fmax", "fminf", "fmaxf")  # calls whose value is one of their arguments
MAX_ALTERNATIVES = 4


def alternatives(n: c_ast.Node, ctx: Ctx) -> tuple[Affine, ...] | None:
    """The affine forms a subscript without one takes one of, where it is a choice between them: an edge clamp
    `x[i < N - 1 ? i + 1 : N - 1]`, `x[min(max(i + d, 0), N - 1)]`, a local that holds one, or one of these plus a
    constant (at most ``MAX_ALTERNATIVES``). Its elements over a tile are within the union of theirs, so the
    footprint models price it as that many accesses (``array_use``); before hlsim 0.85 it was indirect: a 3 x 3
    box blur with clamped borders moved the whole image with every tile, 1,024 words where the tiles name 352
    (an outside probe). None where some choice has no affine form."""
    out = _choices(n, ctx, 0)
    return out if out is not None and 1 < len(out) <= MAX_ALTERNATIVES else None


def _choices(n: c_ast.Node, ctx: Ctx, depth: int) -> tuple[Affine, ...] | None:
    if depth > 6:
        return None
    if isinstance(n, c_ast.TernaryOp):
        a, b = _choices(n.iftrue, ctx, depth + 1), _choices(n.iffalse, ctx, depth + 1)
        return None if a is None or b is None else _distinct_forms(a + b)
    if isinstance(n, c_ast.FuncCall) and isinstance(n.name, c_ast.ID) and n.name.name in CLAMPS and n.args:
        parts = [_choices(x, ctx, depth + 1) for x in n.args.exprs]
        return None if any(p is None for p in parts) else _distinct_forms(tuple(f for p in parts for f in p))
    if isinstance(n, c_ast.ID) and n.name in ctx.locals and n.name not in ctx.body_set_vars:
        held = ctx.values.static.get(n.name)
        if held is not None and affine(n, ctx) is None:
            return _choices(held, ctx, depth + 1)
    if isinstance(n, c_ast.BinaryOp) and n.op in ("+", "-") and affine(n, ctx) is None:
        left, right = _choices(n.left, ctx, depth + 1), affine(n.right, ctx)
        if left is not None and right is not None:
            return _distinct_forms(tuple(_add(f, right, n.op) for f in left))
        if n.op == "+" and (right_alts := _choices(n.right, ctx, depth + 1)) is not None \
                and (left_form := affine(n.left, ctx)) is not None:
            return _distinct_forms(tuple(_add(f, left_form, "+") for f in right_alts))
        return None
    f = affine(n, ctx)
    return None if f is None else (f,)


def _add(a: Affine, b: Affine, op: str) -> Affine:
    """``a + b`` or ``a - b`` of two affine forms."""
    sign = 1 if op == "+" else -1
    coefs = dict(a.coefs)
    for k, v in b.coefs.items():
        coefs[k] = coefs.get(k, 0) + sign * v
    return Affine(coefs, f"({a.const}) {op} ({b.const})")


def _distinct_forms(forms: tuple[Affine, ...]) -> tuple[Affine, ...]:
    seen: dict[tuple, Affine] = {}
    for f in forms:
        seen.setdefault((tuple(sorted(f.coefs.items())), f.const), f)
    return tuple(seen.values())
