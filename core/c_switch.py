"""``switch`` statements lowered to the ``if`` / ``else if`` chain they mean, before anything reads the kernel.

Why: a ``switch`` is ordinary textbook C (a bytecode interpreter's dispatch, a state machine), and every
consumer of the kernel (the loop tree, the instrumented program hlsim runs, the control the analytical model
runs on input draws) already understands ``if``. The lowering is the structured form an HLS tool builds too:
the selector is evaluated once into a local, each group of cases is one branch on it, ``default`` is the
final ``else`` wherever it is written. A ``break`` that ends a group is the group's end.

What is refused, with the line and a rewrite: a group that falls through into the next one after statements
of its own (C runs both; write the shared statements in both or merge the cases), and a ``break`` that leaves
the switch from inside a group's ``if`` (after lowering it would leave the enclosing loop instead).
"""

from __future__ import annotations

from collections.abc import Callable

from pycparser import c_ast

from .c_names import LOOPS


def lower_switches(body: c_ast.Compound, error: Callable[..., Exception]) -> None:
    """Replace every ``switch`` under ``body`` in place; ``error(node, msg, expected, hint)`` makes the
    exception raised for a form this does not lower."""
    _Lower(error).visit(body)


class _Lower(c_ast.NodeVisitor):
    def __init__(self, error):
        self.error, self.count = error, 0

    def generic_visit(self, node):
        for name, child in node.children():
            self.visit(child)
            if isinstance(node, c_ast.Label):
                continue  # a labelled switch is replaced where the label sits, the label kept on its chain
            if isinstance(child, c_ast.Switch) or (isinstance(child, c_ast.Label)
                                                  and isinstance(child.stmt, c_ast.Switch)):
                self._replace(node, name, child)

    def _replace(self, parent, name: str, child) -> None:
        label = child.name if isinstance(child, c_ast.Label) else None
        sw = child.stmt if label else child
        decl, chain = self._lower(sw)
        if label is not None:
            chain = c_ast.Label(label, chain, coord=child.coord)
        if isinstance(parent, c_ast.Compound) and name.startswith("block_items"):
            i = parent.block_items.index(child)
            parent.block_items[i:i + 1] = [decl, chain]
        else:  # the only statement of a loop body or a branch side: a block of two
            setattr(parent, name, c_ast.Compound([decl, chain], coord=sw.coord))

    def _lower(self, sw: c_ast.Switch) -> tuple[c_ast.Decl, c_ast.Node]:
        self.count += 1
        var = f"_sw{self.count}"
        decl = c_ast.Decl(var, [], [], [], [], c_ast.TypeDecl(var, [], None, c_ast.IdentifierType(["int"])),
                          sw.cond, None, coord=sw.coord)
        groups, default = self._groups(sw)
        chain: c_ast.Node | None = c_ast.Compound(default, coord=sw.coord) if default is not None else None
        for values, stmts, coord in reversed(groups):
            cond = None
            for v in values:
                test = c_ast.BinaryOp("==", c_ast.ID(var, coord=coord), v, coord=coord)
                cond = test if cond is None else c_ast.BinaryOp("||", cond, test, coord=coord)
            chain = c_ast.If(cond, c_ast.Compound(stmts, coord=coord), chain, coord=coord)
        return decl, chain if chain is not None else c_ast.Compound([], coord=sw.coord)

    def _groups(self, sw: c_ast.Switch) -> tuple[list[tuple[list, list, object]], list | None]:
        """(the case groups: their values, statements and place, in order; the default's statements)."""
        items = (sw.stmt.block_items or []) if isinstance(sw.stmt, c_ast.Compound) else [sw.stmt]
        groups, default, values, is_default = [], None, [], False
        for k, item in enumerate(items):
            if not isinstance(item, (c_ast.Case, c_ast.Default)):
                raise self.error(item, "a statement before the first case of a switch", "case VALUE: ... break;")
            if isinstance(item, c_ast.Case):
                values.append(item.expr)
            is_default = is_default or isinstance(item, c_ast.Default)
            stmts = list(item.stmts or [])
            if not stmts and k + 1 < len(items):
                continue  # `case 1: case 2:` one group of two values
            ended = bool(stmts) and isinstance(stmts[-1], (c_ast.Break, c_ast.Return, c_ast.Continue))
            if not ended and k + 1 < len(items):
                raise self.error(item, "a switch case that falls through into the next one after statements of "
                                 "its own", "each case group ending with break (or return, continue)",
                                 "end the case with break, and write the statements both cases share in each")
            if stmts and isinstance(stmts[-1], c_ast.Break):
                stmts = stmts[:-1]
            self._no_inner_break(stmts)
            if is_default:
                default = stmts  # `default` (and any case grouped with it) is the final else
            else:
                groups.append((values, stmts, item.coord))
            values, is_default = [], False
        return groups, default

    def _no_inner_break(self, stmts: list) -> None:
        """A ``break`` left inside a group (not in a loop of its own) leaves the switch in C; after lowering it
        would leave the enclosing loop."""
        todo = list(stmts)
        while todo:
            n = todo.pop()
            if isinstance(n, c_ast.Break):
                raise self.error(n, "a break that leaves a switch from inside one of its cases",
                                 "break only as the last statement of a case group",
                                 "put the rest of the case under an if (or else) instead of breaking out early")
            if not isinstance(n, (*LOOPS, c_ast.Switch)):
                todo.extend(child for _, child in n.children())
