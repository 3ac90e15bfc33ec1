"""What a C statement or expression names: the scalars it assigns, the identifiers it reads, the arrays it
reads, and a walk over its nodes. The lane interpreter (``c_lanes``) and the slicers that decide what it
must run (``c_slice``, ``input_trips``, ``scalar_control``) ask these questions of the kernel's AST."""

from __future__ import annotations

from pycparser import c_ast

_STEP = ("p++", "++", "p--", "--")
LOOPS = (c_ast.For, c_ast.While, c_ast.DoWhile)  # the loop statements of the kernel subset


def has_step(node) -> bool:
    """Whether an expression increments or decrements something."""
    return any(isinstance(n, c_ast.UnaryOp) and n.op in _STEP for n in nodes(node))


def assigned(node) -> set[str]:
    """Scalars a statement may assign (declares, assigns or steps)."""
    out: set[str] = set()
    for n in nodes(node):
        if isinstance(n, c_ast.Assignment) and isinstance(n.lvalue, c_ast.ID):
            out.add(n.lvalue.name)
        elif isinstance(n, c_ast.UnaryOp) and n.op in _STEP and isinstance(n.expr, c_ast.ID):
            out.add(n.expr.name)
        elif isinstance(n, c_ast.Decl):
            out.add(n.name)
    return out


def array_writes(node) -> set[str]:
    """Arrays a statement may write (``A[i] = v``, ``A[i] += v``, ``A[i]++``)."""
    out: set[str] = set()
    for n in nodes(node):
        ref = n.lvalue if isinstance(n, c_ast.Assignment) else \
            n.expr if isinstance(n, c_ast.UnaryOp) and n.op in _STEP else None
        while isinstance(ref, c_ast.ArrayRef):
            ref = ref.name
            if isinstance(ref, c_ast.ID):
                out.add(ref.name)
    return out


def read_names(node) -> set[str]:
    """Every identifier a statement or expression mentions (function names excluded)."""
    out: set[str] = set()
    for n in nodes(node):
        if isinstance(n, c_ast.ID):
            out.add(n.name)
        elif isinstance(n, c_ast.FuncCall) and isinstance(n.name, c_ast.ID):
            out.discard(n.name.name)
    return out


def array_reads(node) -> set[str]:
    """Arrays an expression or statement reads (``A[i] = v`` writes ``A`` and reads ``i`` and ``v``;
    ``A[i] += v`` reads ``A`` too)."""
    out: set[str] = set()

    def visit(n, write: bool = False):
        if n is None:
            return
        if isinstance(n, c_ast.ArrayRef):
            for s in _subscripts(n):
                visit(s)
            base = n
            while isinstance(base, c_ast.ArrayRef):
                base = base.name
            if not write:
                out.add(base.name if isinstance(base, c_ast.ID) else "?")
            return
        if isinstance(n, c_ast.Assignment):
            visit(n.lvalue, write=n.op == "=")
            visit(n.rvalue)
            return
        for _, c in n.children():
            visit(c)
    visit(node)
    return out


def _subscripts(ref: c_ast.ArrayRef):
    while isinstance(ref, c_ast.ArrayRef):
        yield ref.subscript
        ref = ref.name


def nodes(node):
    """The node and every node under it."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n is None:
            continue
        yield n
        stack.extend(c for _, c in n.children())
