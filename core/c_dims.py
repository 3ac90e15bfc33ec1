"""A local array's dimensions as C computes them, so the instrumented program and hlsim's bounds checks agree.

``validate`` admits a local array only where every dimension is a number or an expression of the parameters
(``kernel_parse``); this module computes it at a design's parameter values with C's integer rules (``/`` and
``%`` truncate toward zero), and the instrumented program declares the array with that number. Before, the
checks took the dimension from Python's evaluation of its text while C compiled the text itself: an outside
probe's `int t[(int) 12]` went unchecked (the text did not evaluate), `t[13 + (0 - N) % 3]` was checked as 15
elements and was 12 in C, and writes went past it onto the simulator's stack.
"""

from __future__ import annotations

import operator

from pycparser import c_ast, c_generator

_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "<<": operator.lshift, ">>": operator.rshift,
        "&": operator.and_, "|": operator.or_, "^": operator.xor}


def array_dim(e: c_ast.Node, sizes: dict) -> int:
    """The dimension ``e`` at parameter values ``sizes``; ValueError for anything but numbers, parameters and
    + - * / % << >> & | ^ ~ (no cast, no call, no local)."""
    if isinstance(e, c_ast.Constant) and e.type == "int":
        return int(e.value.rstrip("uUlL"), 0)
    if isinstance(e, c_ast.ID) and e.name in sizes:
        return int(sizes[e.name])
    if isinstance(e, c_ast.UnaryOp) and e.op in ("-", "+", "~"):
        v = array_dim(e.expr, sizes)
        return -v if e.op == "-" else v if e.op == "+" else ~v
    if isinstance(e, c_ast.BinaryOp) and (e.op in _OPS or e.op in ("/", "%")):
        a, b = array_dim(e.left, sizes), array_dim(e.right, sizes)
        if e.op in ("/", "%"):
            if b == 0:
                raise ValueError("a division by zero")
            q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C truncates toward zero
            return q if e.op == "/" else a - b * q
        if e.op in ("<<", ">>") and not 0 <= b < 63:
            raise ValueError(f"a shift by {b}")
        return _OPS[e.op](a, b)
    raise ValueError(f"'{c_generator.CGenerator().visit(e)}' is not a number or an expression of parameters")


def with_dims(decl: c_ast.Decl, values: tuple[int, ...]) -> c_ast.Decl:
    """A copy of the declaration of a local array whose dimensions are ``values`` (numbers, outermost first)."""
    def sized(t, k):
        if not isinstance(t, c_ast.ArrayDecl):
            return t
        return c_ast.ArrayDecl(sized(t.type, k + 1), c_ast.Constant("int", str(values[k])), t.dim_quals, t.coord)
    return c_ast.Decl(decl.name, decl.quals, decl.align, decl.storage, decl.funcspec, sized(decl.type, 0),
                      decl.init, decl.bitsize, decl.coord)


def fixed(e: c_ast.Node, params: set[str]) -> bool:
    """Whether ``e`` is in the grammar :func:`array_dim` computes (what ``validate`` admits as a dimension)."""
    if isinstance(e, c_ast.Constant):
        return e.type == "int"
    if isinstance(e, c_ast.ID):
        return e.name in params
    if isinstance(e, c_ast.UnaryOp):
        return e.op in ("-", "+", "~") and fixed(e.expr, params)
    if isinstance(e, c_ast.BinaryOp):
        return (e.op in _OPS or e.op in ("/", "%")) and fixed(e.left, params) and fixed(e.right, params)
    return False
