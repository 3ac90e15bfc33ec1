"""The context the kernel's analysis carries through the body: its arrays, scalars, parameters and locals (and
what each holds), the enclosing loop variables, and where the kernel sits in its YAML file (for diagnostics).
Split from ``kernel_expr``, which reads one statement in it; ``kernel_parse`` and ``kernel_heads`` carry it."""

from __future__ import annotations

from pycparser import c_ast

from . import loopforms as lf
from .errors import Diagnostic, SpecError
from .kernel import Loop


class Ctx:
    """What the analysis knows at a point of the kernel: its arrays, scalars, parameters, locals (and
    what each holds), the enclosing loop variables, the loops so far, and where the kernel sits in
    its YAML file (for diagnostics)."""

    def __init__(self, arrays: set[str], scalars: set[str], params: set[str], file: str, line0: int):
        self.arrays, self.scalars, self.params = arrays, scalars, params
        self.file, self.line0 = file, line0
        self.locals: dict[str, str] = {}
        self.loops: dict[str, Loop] = {}
        self.loop_vars: list[str] = []
        # loop variables their own loop's body also assigns (`if (x[i] > 4) i++;`): registers the datapath
        # updates, read and written like locals, so the next iteration's accesses wait for the body's update
        self.body_set_vars: set[str] = set()
        self.auto = 0
        self.float_arrays: set[str] = set()
        self.float_scalars: set[str] = set()  # an int32 scalar is an integer (before hlsim 0.40 every scalar was float)
        # the parameters' values where the tree is built for one design's sizes (``Design.tree``): a subscript
        # `m * K + k` then has the integer coefficient K (``kernel_affine``); empty: parameters stay symbolic
        self.param_values: dict[str, int] = {}
        self.values = lf.Values()  # what each local holds here (program order; see llmulator.loopforms)

    def value(self, node: c_ast.Node | None) -> lf.Static:
        return lf.value_of(node, self.values, self.loop_vars, self.params | self.scalars, set(self.locals))

    def assign(self, name: str, node: c_ast.Node | None) -> None:
        """``name = node`` here: the local now holds this value (or data, or something not fixed)."""
        self.values.assign(name, self.value(node) if node is not None else lf.Static(None, "not initialised"))

    def is_register(self, name: str) -> bool:
        """A local whose reads are data the schedule tracks: any but a loop's counter, which the loop control
        steps (a loop variable its body also assigns is a register like any local: before hlsim 0.50 it was
        a counter still, and `for (...; i++) { b[i] = x[i]; if (x[i] > 4) i++; }` ran at II 1 where the next
        iteration's load waits for this one's compare: an outside probe)."""
        return name not in self.loop_vars or name in self.body_set_vars

    def line(self, node: c_ast.Node) -> int:
        return (node.coord.line - 1 + self.line0) if node is not None and node.coord else self.line0

    def error(self, node: c_ast.Node | None, msg: str, expected: str = "", hint: str = "") -> SpecError:
        return SpecError(Diagnostic(self.file, self.line(node) if node is not None else None, None,
                                    "workload.kernel", msg, expected, hint))
