"""Kernel analysis: the workload's HLS-C body parsed with pycparser into a loop tree.

The tree gives what every estimator, the renderer and the profiler need: labelled loops with bounds (static, or
data-dependent and marked so), their nesting, the statements of each body with the operations they perform (by
operator class) and the array accesses with affine index forms where the index is affine, branches with their
conditions (data-dependent ones marked). Positions in the kernel map back to lines of the workload YAML file.

This module holds the tree's records and ``analyze``; the reading is split by job: ``kernel_parse`` (the C body ->
the tree), ``kernel_heads`` (a ``for`` head -> a counted or a dynamic loop), ``kernel_expr`` (one statement -> its
operations, accesses and DAG; ``kernel_ctx`` what it knows there) and ``kernel_values`` (loop-variable values).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Union

import attrs
from pycparser import c_generator

from . import kernel_values as kv
from .errors import Diagnostic, SpecError
from .expr import ExprError, evaluate

C_TYPES = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
           "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "fp16": "_Float16",
           "fp32": "float", "fp64": "double"}

_PRELUDE = ("typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t; "
            "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t; "
            "typedef float _Float16;\n")

FUNC_CLASSES = {
    # transcendental functions: one table-plus-polynomial unit (class exp)
    **{f + suffix: "exp" for f in ("exp", "exp2", "log", "log2", "log10", "tanh", "erf", "pow", "sin", "cos",
                                   "tan", "atan", "atan2", "sinh", "cosh", "cbrt") for suffix in ("", "f")},
    "sqrtf": "sqrt", "sqrt": "sqrt", "hypot": "sqrt", "hypotf": "sqrt",
    # comparisons and their relatives
    **{f: "cmp" for f in ("fmaxf", "fminf", "fmax", "fmin", "fabsf", "fabs", "abs", "labs", "max", "min")},
    # rounding: the adder's normaliser
    **{f + suffix: "add" for f in ("floor", "ceil", "round", "trunc", "rint") for suffix in ("", "f")},
    "fmod": "div", "fmodf": "div",
}

BINOP_CLASSES = {"+": "add", "-": "add", "*": "mul", "/": "div", "%": "div", "<": "cmp", ">": "cmp",
                 "<=": "cmp", ">=": "cmp", "==": "cmp", "!=": "cmp", "&": "logic", "|": "logic",
                 "^": "logic", "&&": "logic", "||": "logic", "<<": "shift", ">>": "shift"}

_GEN = c_generator.CGenerator()

_COMMENT = re.compile(r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""", re.S)


def strip_comments(text: str) -> str:
    """The kernel without its ``//`` and ``/* */`` comments (pycparser reads preprocessed C, which has
    none), each replaced by spaces and the newlines it spans so that every line keeps its number;
    comment markers inside string and character literals are left alone."""
    def blank(m: re.Match) -> str:
        t = m.group(0)
        if t[0] in "\"'":
            return t
        return "".join("\n" if c == "\n" else " " for c in t)
    return _COMMENT.sub(blank, text)


@attrs.define
class Affine:
    """index = const + sum(coef[v] * v) over loop variables; const may be symbolic (text)."""
    coefs: dict[str, int]
    const: str

    def depends_on(self, var: str) -> bool:
        return self.coefs.get(var, 0) != 0


@attrs.define
class Access:
    """One array subscript in a statement (``A[i][k]``), with an affine form per dimension where it has one."""

    array: str  # the array's name
    index_text: tuple[str, ...]  # each dimension's subscript, C text
    affine: tuple[Affine | None, ...]  # None for a non-affine (indirect) dimension
    is_write: bool  # the statement stores to it
    is_read: bool  # the statement loads from it (``x[i] += ...`` both)
    conditional: bool = False  # only some evaluations of the statement make it (`c ? b[i] = 1 : 0`, `p && x[i]`)
    #: per dimension without an affine form, (numerator, divisor) where it is one divided by an integer (`i / 2`,
    #: `i >> 1`): the footprint models read its span from it (llmulator.kernel_affine.coarse); else None
    coarse: tuple[tuple[Affine, int] | None, ...] = ()
    #: per dimension without an affine form, the affine forms it takes one of where it is a choice between them
    #: (an edge clamp: `x[i < N - 1 ? i + 1 : N - 1]`, llmulator.kernel_affine.alternatives); else None
    alternatives: tuple[tuple[Affine, ...] | None, ...] = ()

    @property
    def indirect(self) -> bool:
        """Some dimension is not affine in the loop variables (``x[col[j]]``)."""
        return any(a is None for a in self.affine)

    def loop_vars(self) -> set[str]:
        """Loop variables the affine dimensions depend on."""
        out: set[str] = set()
        for a in self.affine:
            if a is not None:
                out |= {v for v, c in a.coefs.items() if c}
        return out


@attrs.define
class OpNode:
    """One operation in a statement's expression DAG (for depth / scheduling)."""

    op: str  # operator class, or 'load' / 'store'
    deps: list[int]
    array: str | None = None
    is_float: bool = False
    reads: tuple[str, ...] = ()  # locals this operation takes as operands (registers: no node of their own)
    acc: int = -1  # a mac's accumulated operand, when it is a node (a load); its locals are in ``reads``
    access: Access | None = None  # a load's or store's element (workload arrays and arrays declared in the kernel)
    factors: tuple[tuple[int, ...], tuple[str, ...]] = ((), ())  # a mac's product operands: nodes, locals
    value: int | str | None = None  # a store's value: its node, the local it stores, or None for a constant


@attrs.define
class Statement:
    """One C statement of the kernel with its operation counts, accesses and dataflow graph."""

    text: str  # the statement's C text
    line: int  # its line in the workload file
    ops: Counter  # operator class -> count (fused: x += a*b counts one 'mac', and 'mul'+'add' in ops_unfused)
    ops_unfused: Counter  # the same with every mac counted as a mul and an add (``Design.stmt_ops`` picks)
    accesses: list[Access]  # its array accesses, in evaluation order
    dag: list[OpNode]  # its operations as a graph (loads, stores, operator classes; ``deps`` by index)
    writes_local: str | None = None  # the local variable it assigns, if any
    reads_locals: set[str] = attrs.field(factory=set)  # local variables it reads
    kind: str = "stmt"  # node kind, for walking a tree: "stmt", "loop" or "branch"
    copies: str | None = None  # `x = y` of two locals: x takes y's value (no operation)
    reused: tuple[int, ...] = ()  # its reads an earlier statement of its run loaded or stored (load_reuse.mark)
    dead_stores: tuple[int, ...] = ()  # its stores a later statement of its run overwrites unread (load_reuse.mark)


@attrs.define
class Branch:
    """An ``if``/``else`` in the kernel; ``Design.branch_probability`` gives how often it is taken."""

    label: str | None  # its label (``L_b: if (...)``), the key of its hints; None when unlabelled
    cond_text: str  # the condition, C text
    line: int  # its line in the workload file
    data_dependent: bool  # the condition reads array data (else: loop indices and parameters only)
    cond: Statement  # the condition's evaluation as a statement (its loads and operations)
    then: list[Node]  # the nodes of the taken side
    orelse: list[Node]  # the nodes of the ``else`` side (empty without one)
    kind: str = "branch"  # node kind, for walking a tree
    index_text: str | None = None  # the condition over loop variables and parameters (locals substituted)
    ast: Any = attrs.field(default=None, eq=False, repr=False)  # its parsed ``if`` (pycparser)

    def descendants(self):
        """Every node on either side, nested ones included, in program order."""
        return _subtree(self)


@attrs.define
class Loop:
    """A labelled ``for``/``while`` loop of the kernel; ``Design.trips(label)`` gives its trips per entry."""

    label: str  # the C label (``L_k: for ...``): how mappings, hints and counters name the loop
    var: str | None  # the loop variable (None for a ``while`` loop without one)
    lower_text: str  # initial value of the variable, C text
    upper_text: str  # exclusive upper bound, C text
    step: int  # constant step (for an additive loop; see ``step_text`` and ``step_op`` otherwise)
    line: int  # its line in the workload file
    data_dependent: bool  # a bound reads array data: the trip count needs a hint (``expected_trips``)
    depends_on_outer: tuple[str, ...]  # outer loop variables its bounds use (a triangular loop)
    body: list[Node] = attrs.field(factory=list)  # the nodes inside it, in program order
    parent: Loop | None = attrs.field(default=None, repr=False)  # the loop around it (None at the top)
    is_while: bool = False  # a ``while`` loop (trip count from hints)
    do_while: bool = False  # ... a ``do``-``while``: the body runs before the first test (one test per trip)
    cond_stmt: Statement | None = None  # a ``while`` loop's condition, evaluated once per trip
    init_stmts: list[Statement] = attrs.field(factory=list)  # a ``for`` head's initialisers that read arrays
    kind: str = "loop"  # node kind, for walking a tree
    step_text: str | None = None  # a step that is an expression (``k += m``), or a geometric factor
    step_op: str = "+"  # "+" (additive), or "*", "/", "<<", ">>" (``i *= 2``, ``j >>= 1``)
    cond_op: str = ""  # "!=" for a loop that runs until its variable equals the bound; else by step sign
    simple: bool = True  # ``for (v = LO; v < HI; v += CONST)``: the form tiling and fusing rewrite
    dynamic_reason: str | None = None  # why the trip count is not known before the run
    induction: tuple[str, int] | None = None  # a while loop's counter local and its step (kernel_heads.while_counter)
    #: data-dependent only because a `break` or `return` may end it: its variable runs a prefix of its static range
    exits_early: bool = False

    @property
    def static(self) -> bool:
        """The trip count follows from parameters and outer loop variables (no hint needed)."""
        return not (self.data_dependent or self.is_while)

    def loops(self) -> list[Loop]:
        """The loops directly in its body (not those inside a branch; ``descendants`` has every node)."""
        return [n for n in self.body if isinstance(n, Loop)]

    def statements(self) -> list[Statement]:
        """The statements directly in its body."""
        return [n for n in self.body if isinstance(n, Statement)]

    def perfect_child(self) -> Loop | None:
        """The only child, if the body is exactly one loop (a perfect nest step)."""
        if len(self.body) == 1 and isinstance(self.body[0], Loop):
            return self.body[0]
        return None

    def band(self) -> list[Loop]:
        """This loop and its perfectly nested descendants, outermost first."""
        out, cur = [self], self
        while (c := cur.perfect_child()) is not None:
            out.append(c)
            cur = c
        return out

    def descendants(self):
        """Every node inside this loop, in program order (branches' sides included)."""
        return _subtree(self)

    def ancestors(self) -> list[Loop]:
        """The loops around it, outermost first."""
        out, cur = [], self.parent
        while cur is not None:
            out.append(cur)
            cur = cur.parent
        return out[::-1]


Node = Union[Loop, Statement, Branch]


@attrs.define
class LoopTree:
    """The analysed kernel: a tree of loops, branches and statements, in program order."""

    roots: list[Node]  # the top-level nodes (sibling loop nests, statements, branches)
    loops: dict[str, Loop]  # every loop by label, at any depth
    locals: dict[str, str]  # local variable -> C type
    source: str  # the kernel's C text
    body: Any = attrs.field(default=None, repr=False, eq=False)  # its parsed body (pycparser Compound)

    def walk(self):
        """Every node, depth first in program order (both sides of branches)."""
        stack = list(reversed(self.roots))
        while stack:
            n = stack.pop()
            yield n
            if isinstance(n, Loop):
                stack.extend(reversed(n.body))
            elif isinstance(n, Branch):
                stack.extend(reversed(n.then + n.orelse))

    def input_independent(self) -> bool:
        """No loop trip count or branch outcome depends on the input data: every run of the kernel executes
        the same operations, so a static count of them (the analytical model) needs no hint and no input."""
        return not any(isinstance(n, Branch) and n.data_dependent
                       or isinstance(n, Loop) and (n.data_dependent or n.is_while) for n in self.walk())

    def written_arrays(self) -> set[str]:
        """Arrays the kernel writes anywhere: no declared input says what they hold (``branch_inputs``...)."""
        stmts = [n.cond if isinstance(n, Branch) else n for n in self.walk()
                 if isinstance(n, Statement) or isinstance(n, Branch) and n.cond is not None]
        return {a.array for st in stmts for a in st.accesses if a.is_write}

    def top_loops(self) -> list[Loop]:
        """The outermost loops (one per loop nest)."""
        return [n for n in self.roots if isinstance(n, Loop)]

    def static_trips(self, label: str, sizes: dict[str, float], hints: dict[str, Any] | None = None) -> float:
        """Expected trip count of one loop (per entry), using hints for data-dependent bounds."""
        loop, hints = self.loops[label], hints or {}
        if loop.data_dependent or loop.is_while:
            if "expected_trips" not in hints.get(label, {}):
                raise KeyError(label)
            return float(evaluate(hints[label]["expected_trips"], sizes))
        names = dict(sizes)
        # outer variables the bounds need, directly or through an outer loop's own bounds
        # (k < j inside j < i needs the mean of j, which needs the mean of i)
        needed = set(loop.depends_on_outer)
        for anc in reversed(loop.ancestors()):
            if anc.var is not None and anc.var in needed:
                needed |= set(anc.depends_on_outer)
        own = hints.get(label, {}).get("expected_trips")
        if own is not None and any((a.data_dependent or a.is_while) and a.var in needed for a in loop.ancestors()):
            return float(evaluate(own, sizes))  # it follows a loop only the run counts: its own hint says more
        for anc in loop.ancestors():
            # triangular bounds: an outer variable at its mean value
            if anc.var is not None and anc.var in needed:
                lo = kv.eval_c(anc.lower_text, names)
                if anc.data_dependent or anc.is_while:
                    # a data-dependent outer bound: the variable's mean over the expected trips
                    h = hints.get(anc.label, {})
                    if "expected_trips" not in h:
                        raise KeyError(anc.label)
                    n = float(evaluate(h["expected_trips"], sizes))
                    names[anc.var] = lo + anc.step * (n - 1) / 2.0
                    continue
                hi = kv.eval_c(anc.upper_text, names)
                names[anc.var] = (lo + hi - anc.step) / 2.0 if anc.step > 0 else (lo + hi) / 2.0
        if loop.step_op != "+" or loop.cond_op or loop.step_text is not None:
            # geometric, symbolic-step or run-until-equal loops: count the values at these outer values
            return float(len(kv.values(loop, {k: int(v) for k, v in names.items()})))
        # whole trips both ways (`i = 9; i >= 0; i -= 3` runs 4 times; it was 3.33), means at fractional outer values
        span, step = kv.eval_c(loop.upper_text, names) - kv.eval_c(loop.lower_text, names), loop.step
        span, step = (span, step) if step > 0 else (-span, -step)
        return max(0.0, span / step) if kv.is_frac(names) else max(0.0, -(-span // step))

    def trip_profile(self, label: str, sizes: dict[str, float], limit: int = 200_000, guarded: bool = True,
                     prefix: dict[str, float] | None = None) -> list[int] | None:
        """Trips of every entry of a static loop whose bounds move with outer loop variables (a triangular loop),
        one per combination of the outer variables it depends on that the index-only `if`s around it let through,
        the loops in between folded in by enumeration; None for a rectangular or data-dependent loop, or above
        ``limit`` entries. Why: a triangular loop's mean trips are not its bounds at the outer variables' means
        once two nest (``k < j < i``), a pipelined loop's cost per entry is not linear in its trips, and under
        `if (t == 3)` it runs t + 1 = 4 trips, not the 2.5 of every t (taken before 2026-12-07: the analytical
        model's cycles 31 % under hlsim's, an outside probe). ``prefix``: the expected trips of loops around it
        that a `break` may end (``Loop.exits_early``), whose variable then runs that many of its first values."""
        loop, prefix = self.loops[label], prefix or {}
        if loop.data_dependent or loop.is_while or not loop.depends_on_outer:
            return None
        known = {a.var for a in loop.ancestors()
                 if a.var and (a.label in prefix or not (a.data_dependent or a.is_while))} | set(sizes)
        guards = [(t, side, r) for t, side, r in kv.index_guards(self.roots, loop) if r <= known] if guarded else []
        out = kv.entry_trips(loop, sizes, limit, guards, prefix) if guards else None
        return kv.entry_trips(loop, sizes, limit, [], prefix) if out is None else out

    def index_branch_probabilities(self, sizes: dict[str, float], limit: int = 100_000) -> dict[int, float]:
        """Taken probability of every branch whose condition reads only loop variables and parameters
        (``j - 1 >= 0 && i + 1 < N``), keyed by ``id(branch)``: the share of its executions on which the
        condition holds, found by running the loop nest's control (no data) over every combination of
        loop variables, conditioned on the enclosing branches' sides. Above ``limit`` combinations an
        even stride of them stands for the rest. Data-dependent branches, and branches under a
        data-dependent loop whose variable they read, are left out: their probability is a hint's.
        """
        out: dict[int, float] = {}

        def visit(nodes, envs: list[dict[str, float]]):
            for n in nodes:
                if isinstance(n, Loop) and not any(isinstance(b, Branch) for b in _subtree(n)):
                    continue  # no branch below: nothing to count
                if isinstance(n, Loop):
                    if n.data_dependent or n.is_while or n.var is None or not envs:
                        visit(n.body, [])  # variables below are unknown
                        continue
                    try:
                        per = [(env, kv.values(n, env)) for env in envs]
                    except (ExprError, ValueError, TypeError):
                        per = []
                    visit(n.body, kv.strided(per, n.var, limit))
                elif isinstance(n, Branch):
                    taken: list[dict[str, float]] = []
                    other: list[dict[str, float]] = []
                    if not n.data_dependent and n.index_text is not None and envs:
                        try:
                            for env in envs:
                                (taken if kv.holds(n.index_text, env) else other).append(env)
                            out[id(n)] = len(taken) / len(envs)
                        except (ExprError, ValueError, TypeError, ZeroDivisionError):
                            taken, other = [], []
                    visit(n.then, taken)
                    visit(n.orelse, other)

        visit(self.roots, [dict(sizes)])
        return out


def _subtree(node):
    """Every node under a loop or branch, in program order (pre-order)."""
    stack = list(reversed(node.body if isinstance(node, Loop) else node.then + node.orelse))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, Loop):
            stack.extend(reversed(n.body))
        elif isinstance(n, Branch):
            stack.extend(reversed(n.then + n.orelse))


def analyze(workload, file: str | None = None, sizes: dict[str, int] | None = None) -> LoopTree:
    """Parse ``workload.kernel`` into a LoopTree; SpecError (with YAML line) on bad C.

    Memoised on everything the analysis reads (``llmulator.kernel_parse.analyze_cached``): the
    returned tree is shared, treat it as read-only.
    """
    from .kernel_parse import analyze_cached  # the parser imports this module's records
    try:
        return analyze_cached(workload, file, sizes)
    except RecursionError:
        smap = workload.source_map
        raise SpecError(Diagnostic(file or (smap.file if smap else "<kernel>"), None, None, "workload.kernel",
                                   "the kernel nests expressions or statements too deeply",
                                   "at most a few hundred levels")) from None
