"""Safe evaluation of the small integer expressions used in specs ('M + 1', 'NNZ / M').

Only numbers, names of parameters, + - * / // % and parentheses are allowed, and the integer
operators << >> & | ^ (a kernel's loop bounds such as ``1 << s``; operands are truncated to integers);
'/' between integers is true division (used for expected trip counts).
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Mapping

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_CMPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
         ast.Eq: operator.eq, ast.NotEq: operator.ne}
_INTOPS = {ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_,
           ast.BitOr: operator.or_, ast.BitXor: operator.xor}


class ExprError(ValueError):
    pass


def evaluate(expr: int | float | str, names: Mapping[str, float], c: bool = False) -> float:
    """Evaluate an expression over ``names``; raise ExprError with a readable reason. ``c``: ``//`` and ``%``
    as C's integer ``/`` and ``%`` (the quotient truncates toward zero: `(t - 3) / 2` is 0 at t = 2, and
    `(t - 3) % 2` is -1 at t = 0), for a kernel's bounds (before 2026-12-07 Python's floor: an outside probe)."""
    if isinstance(expr, bool):
        raise ExprError("expected a number or an expression, got a boolean")
    if isinstance(expr, (int, float)):
        return expr
    try:
        return _eval(_parse(str(expr)), names, str(expr), c)
    except (RecursionError, MemoryError):
        raise ExprError(f"expression {str(expr)[:60]!r}... is nested too deeply") from None


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> ast.AST:
    """Parsed once per distinct text: specs repeat a few expressions in every design of a sweep."""
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise ExprError(f"cannot parse expression {shown!r}") from None
    except (RecursionError, MemoryError):
        raise ExprError(f"expression {text[:60]!r}... is nested too deeply") from None


def _eval(node: ast.AST, names: Mapping[str, float], text: str, c: bool = False) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            known = ", ".join(sorted(names)) or "none"
            raise ExprError(f"unknown name '{node.id}' in {text!r} (parameters: {known})")
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _eval(node.left, names, text, c), _eval(node.right, names, text, c)
        if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and b == 0:
            raise ExprError(f"division by zero in {text!r}")
        if c and isinstance(node.op, (ast.FloorDiv, ast.Mod)):  # C: the quotient truncates toward zero
            return c_divmod(a, b)[0 if isinstance(node.op, ast.FloorDiv) else 1]
        return _BINOPS[type(node.op)](a, b)
    if isinstance(node, ast.BinOp) and type(node.op) in _INTOPS:
        a, b = int(_eval(node.left, names, text, c)), int(_eval(node.right, names, text, c))
        if isinstance(node.op, (ast.LShift, ast.RShift)) and not 0 <= b < 64:
            raise ExprError(f"shift by {b} in {text!r}")
        return _INTOPS[type(node.op)](a, b)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, names, text, c)
        return -v if isinstance(node.op, ast.USub) else v
    # a kernel's bounds may hold min/max and a C conditional (``i + 31 < n ? i + 31 : n``)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max") \
            and len(node.args) >= 2 and not node.keywords:
        vals = [_eval(a, names, text, c) for a in node.args]
        return min(vals) if node.func.id == "min" else max(vals)
    if isinstance(node, ast.IfExp):
        return _eval(node.body if _eval(node.test, names, text, c) else node.orelse, names, text, c)
    if isinstance(node, ast.Compare) and type(node.ops[0]) in _CMPS and len(node.ops) == 1:
        left, right = _eval(node.left, names, text, c), _eval(node.comparators[0], names, text, c)
        return int(_CMPS[type(node.ops[0])](left, right))
    if isinstance(node, ast.BoolOp):
        vals = [bool(_eval(v, names, text, c)) for v in node.values]
        return int(all(vals) if isinstance(node.op, ast.And) else any(vals))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return int(not _eval(node.operand, names, text, c))
    raise ExprError(f"unsupported syntax in {text!r}: only numbers, names, + - * / // % << >> & | ^ ( ), "
                    "min, max and comparisons")


def c_divmod(a, b) -> tuple:
    """C's integer quotient (truncated toward zero) and remainder (the dividend's sign): `(t - 3) % 2 == -1` holds
    at t = 0 and 2, which Python's floor never gives (the analytical model priced a guarded loop at 0 runs where
    the program made 2, an outside probe)."""
    q = abs(a) // abs(b) * (1 if (a >= 0) == (b > 0) else -1)
    return q, a - b * q


def as_int(value: float) -> int:
    iv = int(round(value))
    return iv
