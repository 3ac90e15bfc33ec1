"""Which statements a condition depends on: the slice of a loop body or a prefix that ``input_trips`` runs.

Pure AST work on pycparser nodes (no lanes, no values): the chain of nodes down to a loop or branch, the
statements of a body that run as a whole, the scalars a condition needs through the assignments and the
branches that decide them (to a fixed point), and the statements before a loop or along a branch side that
set them. ``llmulator.input_trips`` runs what this keeps on ``llmulator.c_lanes``.
"""

from __future__ import annotations

from pycparser import c_ast

from .c_names import assigned, nodes, read_names

JUMPS = (c_ast.Break, c_ast.Continue, c_ast.Return)  # they decide what runs: always in the slice
LOOPS = (c_ast.For, c_ast.While, c_ast.DoWhile)


def chain_to(body, found) -> list | None:
    """The nodes from ``body`` down to the first node for which ``found`` holds, both included."""
    stack = [(body, [body])]
    while stack:
        node, chain = stack.pop()
        if found(node):
            return chain
        for _, child in node.children():
            if child is not None:
                stack.append((child, chain + [child]))
    return None


def leaves(node):
    """The statements of a body that run as a whole: through blocks and branches, not into inner loops."""
    if node is None:
        return
    if isinstance(node, c_ast.Compound):
        for it in node.block_items or []:
            yield from leaves(it)
    elif isinstance(node, c_ast.If):
        yield node
        yield from leaves(node.iftrue)
        yield from leaves(node.iffalse)
    elif isinstance(node, c_ast.Label):
        yield from leaves(node.stmt)
    else:
        yield node


def slice_body(body, control: set[str]) -> tuple[set[int], set[str]]:
    """The statements of ``body`` the control does not depend on (by ``id``: they are not run) and the scalars
    it does depend on: those the condition reads, and those read by whatever assigns them or decides
    (a branch around an assignment of one, or around a ``break``, ``continue`` or ``return``) whether it
    runs, to a fixed point. ``break`` is run (``c_lanes``), ``return`` in a loop at the kernel's top level (it
    ends the run like a ``break``, counted); ``continue``, and a ``return`` elsewhere, leave the loop to its
    hint."""
    stmts = list(leaves(body))
    needed = set(control)
    live: set[int] = set()
    changed = True
    while changed:
        changed = False
        for s in stmts:
            if id(s) in live:
                continue
            if isinstance(s, c_ast.If):
                inner = [x for x in leaves(s.iftrue)] + [x for x in leaves(s.iffalse)]
                # or its condition steps a scalar that is needed (``if (++c == 3)``): it must be evaluated
                hit = any(isinstance(x, JUMPS) or id(x) in live for x in inner) or bool(assigned(s.cond) & needed)
                reads = read_names(s.cond)
            else:
                # a return inside an inner loop ends the run too: that loop runs (and c_lanes refuses it there)
                hit = isinstance(s, JUMPS) or bool(assigned(s) & needed) or \
                    (isinstance(s, LOOPS) and any(isinstance(x, c_ast.Return) for x in nodes(s)))
                reads = read_names(s)
            if hit:
                live.add(id(s))
                needed |= reads
                changed = True
    return {id(s) for s in stmts if id(s) not in live}, needed


def kept_statements(body, skip: set[int]):
    return [s for s in leaves(body) if id(s) not in skip and not isinstance(s, c_ast.If)] + \
        [s.cond for s in leaves(body) if id(s) not in skip and isinstance(s, c_ast.If)]


def needed_prefix(prefix: list, needed: set[str]) -> list:
    """The statements before the loop that assign a scalar it needs (and, backwards, what those need)."""
    out = []
    need = set(needed)
    for st in reversed(prefix):
        if assigned(st) & need:
            out.append(st)
            need |= read_names(st)
    return out[::-1]


def narrow(prefix: list, steps: list, needed: set[str]) -> tuple[list, list]:
    """The statements of the prefix and of each branch side before the target that what follows needs
    (innermost first: a side's condition and kept statements need more of what precedes them)."""
    need, out = set(needed), []
    for before, node, then in reversed(steps):
        before = needed_prefix(before, need)
        need |= set().union(*(read_names(s) for s in before)) | read_names(node.cond)
        out.append((before, node, then))
    return needed_prefix(prefix, need), out[::-1]


def step_nodes(steps: list) -> list:
    """The statements and conditions the branch sides on the way run (what they read must be drawn)."""
    return [x for before, node, _ in steps for x in (*before, node.cond)]
