"""Kernel analysis: the workload's HLS-C body parsed with pycparser into a loop tree.

The tree gives what every estimator, the renderer and the profiler need:
labelled loops with bounds (static, or data-dependent and marked so), their
nesting, the statements of each body with the operations they perform (by
operator class) and the array accesses with affine index forms where the index
is affine, branches with their conditions (data-dependent ones marked).

Positions in the kernel are mapped back to lines of the workload YAML file, so
an error in a kernel is reported where the user wrote it.
"""

from __future__ import annotations

import ast
import functools
import math
import re
from collections import Counter
from typing import Any, Union

import attrs
from pycparser import c_ast, c_generator, c_parser

from . import loopforms as lf
from .errors import Diagnostic, SpecError
from .expr import ExprError, evaluate

C_TYPES = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
           "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "fp16": "_Float16",
           "fp32": "float", "fp64": "double"}

_PRELUDE = (
    "typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t; "
    "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t; "
    "typedef float _Float16;\n"
)

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
    cond_stmt: Statement | None = None  # a ``while`` loop's condition, evaluated once per trip
    kind: str = "loop"  # node kind, for walking a tree
    step_text: str | None = None  # a step that is an expression (``k += m``), or a geometric factor
    step_op: str = "+"  # "+" (additive), or "*", "/", "<<", ">>" (``i *= 2``, ``j >>= 1``)
    cond_op: str = ""  # "!=" for a loop that runs until its variable equals the bound; else by step sign
    simple: bool = True  # ``for (v = LO; v < HI; v += CONST)``: the form tiling and fusing rewrite
    dynamic_reason: str | None = None  # why the trip count is not known before the run

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

    def top_loops(self) -> list[Loop]:
        """The outermost loops (one per loop nest)."""
        return [n for n in self.roots if isinstance(n, Loop)]

    def static_trips(self, label: str, sizes: dict[str, float], hints: dict[str, Any] | None = None) -> float:
        """Expected trip count of one loop (per entry), using hints for data-dependent bounds."""
        loop = self.loops[label]
        hints = hints or {}
        if loop.data_dependent or loop.is_while:
            h = hints.get(label, {})
            if "expected_trips" not in h:
                raise KeyError(label)
            return float(evaluate(h["expected_trips"], sizes))
        names = dict(sizes)
        # outer variables the bounds need, directly or through an outer loop's own bounds
        # (k < j inside j < i needs the mean of j, which needs the mean of i)
        needed = set(loop.depends_on_outer)
        for anc in reversed(loop.ancestors()):
            if anc.var is not None and anc.var in needed:
                needed |= set(anc.depends_on_outer)
        for anc in loop.ancestors():
            # triangular bounds: an outer variable at its mean value
            if anc.var is not None and anc.var in needed:
                lo = _eval_c(anc.lower_text, names)
                if anc.data_dependent or anc.is_while:
                    # a data-dependent outer bound: the variable's mean over the expected trips
                    h = hints.get(anc.label, {})
                    if "expected_trips" not in h:
                        raise KeyError(anc.label)
                    n = float(evaluate(h["expected_trips"], sizes))
                    names[anc.var] = lo + anc.step * (n - 1) / 2.0
                    continue
                hi = _eval_c(anc.upper_text, names)
                names[anc.var] = (lo + hi - anc.step) / 2.0 if anc.step > 0 else (lo + hi) / 2.0
        if loop.step_op != "+" or loop.cond_op or loop.step_text is not None:
            # geometric, symbolic-step or run-until-equal loops: count the values at these outer values
            return float(len(_values(loop, {k: int(v) for k, v in names.items()})))
        lo = _eval_c(loop.lower_text, names)
        hi = _eval_c(loop.upper_text, names)
        if loop.step > 0:
            return max(0.0, (hi - lo) / loop.step) if _is_frac(names) else max(0.0, -(-(hi - lo) // loop.step))
        return max(0.0, (lo - hi) / -loop.step)

    def trip_profile(self, label: str, sizes: dict[str, float], limit: int = 200_000) -> list[int] | None:
        """Trips of every entry of a static loop whose bounds move with outer loop variables (a
        triangular loop), one per distinct combination of the outer variables it depends on, with
        the multiplicity of the loops in between folded in by enumeration; None for a rectangular or
        data-dependent loop, or when there would be more than ``limit`` entries to enumerate.

        Why: a triangular loop's mean trips are not its bounds at the outer variables' means once two
        such loops nest (``k < j < i``), and a pipelined loop's cost per entry is not linear in its
        trips (an entry of 0 trips costs nothing); static models need the exact distribution.
        """
        loop = self.loops[label]
        if loop.data_dependent or loop.is_while or not loop.depends_on_outer:
            return None
        ancestors = loop.ancestors()  # outermost first
        needed = set(loop.depends_on_outer)
        for anc in reversed(ancestors):  # innermost first: what their own bounds need
            if anc.var in needed or anc.depends_on_outer:
                needed |= set(anc.depends_on_outer)
        chain = [a for a in ancestors if (a.var is not None and a.var in needed) or a.depends_on_outer]
        if any(a.data_dependent or a.is_while for a in chain):
            return None
        envs: list[dict[str, float]] = [dict(sizes)]
        for anc in chain:
            grown = []
            for env in envs:
                for v in _values(anc, env):
                    grown.append({**env, anc.var: v} if anc.var is not None else env)
                if len(grown) > limit:
                    return None
            envs = grown
        return [len(_values(loop, env)) for env in envs]

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
                    grown = []
                    for env in envs:
                        try:
                            grown.extend({**env, n.var: v} for v in _values(n, env))
                        except (ExprError, ValueError, TypeError):
                            grown = []
                            break
                    if len(grown) > limit:
                        grown = grown[:: math.ceil(len(grown) / limit)]
                    visit(n.body, grown)
                elif isinstance(n, Branch):
                    taken: list[dict[str, float]] = []
                    other: list[dict[str, float]] = []
                    if not n.data_dependent and n.index_text is not None and envs:
                        try:
                            for env in envs:
                                (taken if _holds(n.index_text, env) else other).append(env)
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


_MAX_VALUES = 10_000_000


def _values(loop: Loop, names: dict[str, float]) -> range | list[int]:
    """The values a static loop's variable takes for these outer values (C semantics, integer bounds):
    a range for an additive step, the enumerated values for a geometric one or one that runs until its
    variable equals the bound. A loop that would not end (a zero step, a factor that cannot reach the
    bound) raises ValueError."""
    lo = int(_eval_c(loop.lower_text, names))
    hi = int(_eval_c(loop.upper_text, names))
    step = loop.step if loop.step_text is None else int(_eval_c(loop.step_text, names))
    if loop.step_op == "+" and not loop.cond_op:
        if step == 0:
            raise ValueError(f"loop {loop.label} steps by 0")
        return range(lo, hi, step)
    out: list[int] = []
    v = lo
    up = loop.step > 0
    while (v != hi) if loop.cond_op == "!=" else (v < hi if up else v > hi):
        out.append(v)
        if len(out) > _MAX_VALUES:
            raise ValueError(f"loop {loop.label} does not reach its bound")
        nv = _step_value(loop.step_op, v, step)
        if nv == v:
            raise ValueError(f"loop {loop.label} does not reach its bound (stuck at {v})")
        v = nv
    return out


def _step_value(op: str, v: int, step: int) -> int:
    if op == "+":
        return v + step
    if op == "*":
        return v * step
    if op == "/":
        return int(v / step) if step else v
    if op == "<<":
        return v << step
    return v >> step


def _is_frac(names: dict[str, float]) -> bool:
    return any(isinstance(v, float) and not float(v).is_integer() for v in names.values())


def _eval_c(text: str, names: dict[str, float]) -> float:
    """A bound's C text at these values; between integers ``/`` truncates as in C."""
    text = text.replace("(int)", "")
    if "/" in text and not _is_frac(names):
        text = text.replace("/", "//")
    return float(evaluate(text, names))


class _Ctx:
    def __init__(self, arrays: set[str], scalars: set[str], params: set[str], file: str, line0: int):
        self.arrays, self.scalars, self.params = arrays, scalars, params
        self.file, self.line0 = file, line0
        self.locals: dict[str, str] = {}
        self.loops: dict[str, Loop] = {}
        self.loop_vars: list[str] = []
        self.auto = 0
        self.float_arrays: set[str] = set()
        self.values = lf.Values()  # what each local holds here (program order; see llmulator.loopforms)

    def value(self, node: c_ast.Node | None) -> lf.Static:
        return lf.value_of(node, self.values, self.loop_vars, self.params | self.scalars, set(self.locals))

    def assign(self, name: str, node: c_ast.Node | None) -> None:
        """``name = node`` here: the local now holds this value (or data, or something not fixed)."""
        self.values.assign(name, self.value(node) if node is not None else lf.Static(None, "not initialised"))

    def line(self, node: c_ast.Node) -> int:
        return (node.coord.line - 1 + self.line0) if node is not None and node.coord else self.line0

    def error(self, node: c_ast.Node | None, msg: str, expected: str = "", hint: str = "") -> SpecError:
        return SpecError(Diagnostic(self.file, self.line(node) if node is not None else None, None,
                                    "workload.kernel", msg, expected, hint))


_CACHE: dict[tuple, LoopTree] = {}
_CACHE_SIZE = 512


def analyze(workload, file: str | None = None) -> LoopTree:
    try:
        return _analyze_cached(workload, file)
    except RecursionError:
        smap = workload.source_map
        raise SpecError(Diagnostic(file or (smap.file if smap else "<kernel>"), None, None, "workload.kernel",
                                   "the kernel nests expressions or statements too deeply",
                                   "at most a few hundred levels")) from None


def _analyze_cached(workload, file: str | None = None) -> LoopTree:
    """Parse ``workload.kernel`` into a LoopTree; SpecError (with YAML line) on bad C.

    Results are memoised on everything the analysis reads (kernel text, declarations, file and
    line), so the many designs that share one kernel (a sweep, a synthesized dataset) parse it once.
    The returned tree is shared: treat it as read-only.
    """
    smap = workload.source_map
    key = (file, smap.file if smap else None, smap.locate(("workload", "kernel")) if smap else None,
           workload.kernel, tuple((n, a.dtype, a.shape) for n, a in workload.arrays.items()),
           tuple(workload.parameters), tuple((k, v["dtype"]) for k, v in workload.scalars.items()))
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    tree = _analyze(workload, file)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = tree
    return tree


def _analyze(workload, file: str | None = None) -> LoopTree:
    smap = workload.source_map
    file = file or (smap.file if smap else "<kernel>")
    line0 = 1
    if smap is not None:
        ln, _ = smap.locate(("workload", "kernel"))
        # a block scalar ('|') starts on the next line
        text_line = (ln or 1)
        raw = workload.raw.get("kernel") if workload.raw else None
        line0 = text_line + 1 if raw is not None and _is_block_scalar(smap.file, text_line) else text_line
    arrays = set(workload.arrays)
    ctx = _Ctx(arrays, set(workload.scalars), set(workload.parameters), file, line0)
    ctx.float_arrays = {n for n, a in workload.arrays.items() if a.dtype.startswith("fp")}
    decls = []
    for p in workload.parameters:
        decls.append(f"int {p};")
    for s, v in workload.scalars.items():
        decls.append(f"{C_TYPES[v['dtype']]} {s};")
    for a in workload.arrays.values():
        dims = "".join("[1]" for _ in a.shape)
        decls.append(f"{C_TYPES[a.dtype]} {a.name}{dims};")
    header = _PRELUDE + " ".join(decls) + "\nvoid __kernel(void) {\n"
    src = header + strip_comments(workload.kernel) + "\n}\n"
    # the header occupies 3 source lines before the kernel's first line
    ctx.line0 = line0 - 3
    parser = c_parser.CParser()
    try:
        ast = parser.parse(src, filename=file)
    except c_parser.ParseError as e:
        msg = str(e)
        line = None
        parts = msg.split(":")
        if len(parts) >= 3 and parts[1].strip().isdigit():
            line = int(parts[1]) - 1 + ctx.line0
            msg = ":".join(parts[3:]).strip() if len(parts) > 3 else msg
        hint = "check semicolons and braces; the kernel is a function body"
        if msg.startswith("before:"):
            # pycparser names the token it could not place: say so plainly
            msg = f"unexpected '{msg[len('before:'):].strip()}'"
            hint = "a missing ';', ')' or operator just before it is the usual cause; " + hint
        raise SpecError(Diagnostic(file, line, None, "workload.kernel", f"C syntax error: {msg}",
                                   "HLS-C statements with labelled loops", hint)) from None
    func = ast.ext[-1]
    body = func.body.block_items or []
    _check_subset(func.body, ctx)
    roots = _block(body, ctx, None)
    if not ctx.loops:
        raise ctx.error(None, "the kernel has no loops", "at least one labelled loop (L_i: for (...))")
    return LoopTree(roots=roots, loops=ctx.loops, locals=ctx.locals, source=workload.kernel)


def _check_subset(body: c_ast.Node, ctx: _Ctx) -> None:
    """The C a kernel may hold, checked on the whole body before anything compiles it: arrays,
    scalars, locals and the allow-listed functions (``FUNC_CLASSES``); no function declarations or
    calls outside that list (so no ``system``, however declared), no pointers, address-of,
    dereference or pointer casts (nothing reaches memory outside the declared arrays), no ``extern``
    (nothing reaches the simulator's own variables), no names starting with ``__`` (reserved for the
    implementation and the simulator's instrumentation). The operating-system sandbox
    (``llmulator.sandbox``) confines whatever runs anyway; this check says early and precisely what
    is refused."""

    def refuse(node, what: str, hint: str = "") -> None:
        raise ctx.error(node, f"{what} is not allowed in a kernel", "arrays, scalars, locals and the math "
                        "functions listed under 'Operator classes' in docs/spec-reference.md", hint)

    class V(c_ast.NodeVisitor):
        def visit_Decl(self, n):
            if "extern" in (n.storage or []):
                refuse(n, f"the extern declaration of '{n.name}'")
            if n.name and n.name.startswith("__"):
                refuse(n, f"the name '{n.name}' (names starting with __ are reserved)")
            self.generic_visit(n)

        def visit_FuncDecl(self, n):
            refuse(n, "a function declaration", "call the math functions directly; they need no prototype")

        def visit_FuncDef(self, n):
            refuse(n, "a function definition")

        def visit_PtrDecl(self, n):
            refuse(n, "a pointer", "index the arrays instead (buf[i], not *p++)")

        def visit_UnaryOp(self, n):
            if n.op in ("&", "*"):
                refuse(n, f"the {'address-of' if n.op == '&' else 'dereference'} operator '{n.op}'",
                       "index the arrays instead")
            self.generic_visit(n)

        def visit_StructRef(self, n):
            refuse(n, "a struct or pointer member access (. or ->)", "use one array per field")

        def visit_ID(self, n):
            if n.name.startswith("__"):
                refuse(n, f"the name '{n.name}' (names starting with __ are reserved)")

        def visit_FuncCall(self, n):
            name = n.name.name if isinstance(n.name, c_ast.ID) else None
            if name not in FUNC_CLASSES:
                refuse(n, f"a call to '{name or _GEN.visit(n.name)}'",
                       "write it with operators (e.g. x > 0 ? x : 0) or a listed function")
            if n.args is not None:
                self.visit(n.args)

        def visit_Goto(self, n):
            refuse(n, "goto")

    V().visit(body)


def _is_block_scalar(path: str, line: int) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            for i, text in enumerate(f, 1):
                if i == line:
                    s = text.rstrip()
                    return s.endswith("|") or s.endswith("|-") or s.endswith(">") or s.endswith("|+")
    except OSError:
        pass
    return True


def _block(items: list[c_ast.Node], ctx: _Ctx, parent: Loop | None, label: str | None = None) -> list[Node]:
    out: list[Node] = []
    for it in items:
        out.extend(_stmt(it, ctx, parent))
    return out


def _stmt(node: c_ast.Node, ctx: _Ctx, parent: Loop | None, label: str | None = None) -> list[Node]:
    if isinstance(node, c_ast.Label):
        return _stmt(node.stmt, ctx, parent, node.name)
    if isinstance(node, c_ast.Compound):
        return _block(node.block_items or [], ctx, parent)
    if isinstance(node, (c_ast.For, c_ast.While, c_ast.DoWhile)):
        return [_loop(node, ctx, parent, label)]
    if isinstance(node, c_ast.If):
        cond = _expr_stmt(node.cond, ctx, None)
        held = ctx.value(node.cond)
        dd = held.data
        before = ctx.values.copy()
        then = _stmt(node.iftrue, ctx, parent) if node.iftrue else []
        after_then, ctx.values = ctx.values, before
        orelse = _stmt(node.iffalse, ctx, parent) if node.iffalse else []
        ctx.values.join(after_then)
        return [Branch(label, _GEN.visit(node.cond), ctx.line(node), dd, cond, then, orelse, index_text=held.text)]
    if isinstance(node, c_ast.Decl):
        ctype = _GEN.visit(node.type).strip() if node.type is not None else "int"
        ctx.locals[node.name] = ctype.split("[")[0].strip()
        if node.init is None:
            ctx.assign(node.name, None)
            return []
        if isinstance(node.init, c_ast.InitList):
            # a constant table (``const int T[4] = {...}``): a ROM filled when the design is built
            ctx.assign(node.name, None)
            return []
        st = _expr_stmt(node.init, ctx, node.name)
        ctx.assign(node.name, node.init)
        return [st]
    if isinstance(node, c_ast.Pragma):
        return []
    if isinstance(node, c_ast.EmptyStatement):
        return []
    if isinstance(node, (c_ast.Assignment, c_ast.UnaryOp, c_ast.FuncCall)):
        st = _expr_stmt(node, ctx, None)
        _track(node, ctx)
        return [st]
    if isinstance(node, (c_ast.Break, c_ast.Continue)):
        return [Statement(_GEN.visit(node), ctx.line(node), Counter(), Counter(), [], [], kind="jump")]
    if isinstance(node, c_ast.Return):
        if node.expr is not None:
            raise ctx.error(node, "the kernel returns nothing: `return` ends it, without a value",
                            "return;", "write the value to an out array first (out[0] = v; return;)")
        return [Statement("return", ctx.line(node), Counter(), Counter(), [], [], kind="jump")]
    raise ctx.error(node, f"unsupported statement: {type(node).__name__}",
                    "for/while loops, if, assignments and declarations")


def _track(node: c_ast.Node, ctx: _Ctx) -> None:
    """What an assignment statement (or ``x++``) leaves in its local."""
    if isinstance(node, c_ast.Assignment) and isinstance(node.lvalue, c_ast.ID) and node.lvalue.name in ctx.locals:
        rhs = node.rvalue if node.op == "=" else lf.compound_value(node.op[:-1], node.lvalue, node.rvalue)
        ctx.assign(node.lvalue.name, rhs)
    elif isinstance(node, c_ast.UnaryOp) and node.op in ("p++", "++", "p--", "--") and \
            isinstance(node.expr, c_ast.ID) and node.expr.name in ctx.locals:
        op = "+" if "++" in node.op else "-"
        ctx.assign(node.expr.name, c_ast.BinaryOp(op, node.expr, c_ast.Constant("int", "1")))
    elif isinstance(node, c_ast.ExprList):
        for x in node.exprs:
            _track(x, ctx)


def _loop(node, ctx: _Ctx, parent: Loop | None, label: str | None) -> Loop:
    if label is None:
        ctx.auto += 1
        label = f"_L{ctx.auto}"
    if label in ctx.loops:
        raise ctx.error(node, f"duplicate loop label '{label}'", "unique labels")
    line = ctx.line(node)
    if isinstance(node, c_ast.For):
        loop, changing = _for_head(node, ctx, parent, label, line)
    else:
        changing = _enter(node, ctx, label, None)
        loop = Loop(label, None, "0", "0", 1, line, True, (), parent=parent, is_while=True, simple=False,
                    dynamic_reason="a while loop: its trips are what its condition makes of the run's values")
    at_head = ctx.values.copy()
    if isinstance(node, c_ast.For):
        ctx.loop_vars.append(loop.var)
        ctx.locals.setdefault(loop.var, "int")
        loop.cond_stmt = _expr_stmt(node.cond, ctx, None) if node.cond is not None else None
    else:
        loop.cond_stmt = _expr_stmt(node.cond, ctx, None)
    ctx.loops[label] = loop
    loop.body = _stmt(node.stmt, ctx, loop) if node.stmt is not None else []
    if loop.var:
        ctx.loop_vars.pop()
        ctx.values.static[loop.var] = None  # after the loop: its exit value
        ctx.values.data.discard(loop.var)
        for n, held in list(ctx.values.static.items()):  # values written in terms of the ended loop's variable
            if held is not None and loop.var in lf.ids(held):
                ctx.values.static[n] = None
    # after the loop: the body may have run any number of times (zero included)
    ctx.values.join(at_head)
    for n in changing:
        ctx.values.static[n] = None
    return loop


def _enter(node, ctx: _Ctx, label: str, var: str | None) -> set[str]:
    """At a loop's head: the locals its body (or increment) assigns change from one iteration to the
    next, so they hold no fixed expression there, and hold data if any iteration may put data in them."""
    changing = lf.assigned_locals(node.stmt) | lf.assigned_locals(getattr(node, "next", None))
    changing = {n for n in changing if n in ctx.locals and n != var}
    carried = lf.carried_data([node.stmt, getattr(node, "next", None), getattr(node, "cond", None)], ctx.values)
    for n in changing:
        ctx.values.static[n] = None
        ctx.values.changing[n] = label
        if n in carried:
            ctx.values.data.add(n)
    return changing


def _for_head(node: c_ast.For, ctx: _Ctx, parent: Loop | None, label: str, line: int) -> tuple[Loop, set[str]]:
    """A ``for`` loop's head read as a counted loop where it is one (any affine or geometric step,
    bounds over parameters, scalars, outer loop variables and locals that hold such expressions here),
    else as a loop whose trips only the run knows (``dynamic_reason`` says why)."""
    inits = lf.read_inits(node.init)
    if inits is None:
        raise ctx.error(node, "unsupported for-loop initialiser",
                        "for (int i = LOW; ...), for (i = LOW, j = HIGH; ...) or for (; ...)")
    for v, _e in inits:
        if v in ctx.params or v in ctx.scalars or v in ctx.arrays:
            raise ctx.error(node, f"the for loop sets '{v}', a parameter, scalar or array", "local variables")
    types = {d.name: _GEN.visit(d.type).strip() for d in node.init.decls} \
        if isinstance(node.init, c_ast.DeclList) else {}
    for v, e in inits:  # what the head leaves in its variables before the first test
        if v in types:
            ctx.locals[v] = types[v] or "int"
        elif v not in ctx.locals:
            raise ctx.error(node, f"unknown name '{v}'", "a declared local variable",
                            "declare it before the loop, or in the head: for (int i = ...)")
        ctx.assign(v, e)
    var = lf.loop_variable(inits, node.cond, node.next)
    if var is None:  # for (;;) / for (; cond;): a loop without a counter, like a while
        changing = _enter(node, ctx, label, None)
        return Loop(label, None, "0", "0", 1, line, True, (), parent=parent, is_while=True, simple=False,
                    dynamic_reason="a for loop without a loop variable: its trips are what its condition makes "
                                   "of the run's values"), changing
    if var not in ctx.locals:
        raise ctx.error(node, f"unknown name '{var}'", "a declared local variable")
    lo_node = dict(inits).get(var) if var in dict(inits) else c_ast.ID(var)  # for (; ...): its value here
    lower_value = ctx.value(lo_node)  # before the other head variables are marked as changing
    changing = _enter(node, ctx, label, var)
    simple_init = len(inits) == 1 and inits[0][0] == var  # the one form tiling rewrites
    reasons: list[str] = []

    def static_text(n: c_ast.Node | None, what: str) -> str:
        v = ctx.value(n)
        if v.node is None:
            reasons.append(f"its {what} {v.reason}")
            return "0"
        return v.text

    if lower_value.node is None:
        reasons.append(f"its start {lower_value.reason}")
    lower = lower_value.text if lower_value.node is not None else "0"
    cond = lf.read_cond(node.cond, var)
    nxt = lf.read_next(node.next, var)
    upper, cond_op, step, step_text, step_op, simple = "0", "", 1, None, "+", False
    if cond is None:
        v = ctx.value(node.cond)
        reasons.append("its condition is not `VAR < BOUND` (nor <=, >, >=, !=)" if v.node is not None
                       else f"its condition {v.reason}")
    else:
        op, bound = cond
        upper = static_text(bound, "bound")
        if op == "<=":
            upper = f"({upper}) + 1"
        elif op == ">=":
            upper = f"({upper}) - 1"
        cond_op = "!=" if op == "!=" else ""
        simple = op != "!=" and isinstance(node.cond, c_ast.BinaryOp) and lf.is_id(node.cond.left, var)
    if nxt is None:
        reasons.append("its increment is not a step of the loop variable (i++, i += E, i *= C, i >>= C ...)")
    else:
        step_op, step_node, others = nxt
        st = static_text(step_node, "step")
        try:
            step = int(evaluate(st, {}))
            if step_op != "+":
                step_text = str(step)
                step = 1 if step_op in ("*", "<<") else -1
        except ExprError:
            step_text = st
            neg = isinstance(step_node, c_ast.UnaryOp) and step_node.op == "-"
            step = -1 if neg or step_op in ("/", ">>") else 1
        simple = simple and step_op == "+" and step_text is None and not others
        if step_op == "+" and step == 0:
            raise ctx.error(node, f"loop {label} steps by 0", "a non-zero step")
    if var in lf.assigned_locals(node.stmt):
        reasons.append(f"its variable '{var}' is also assigned in the body")
    brk = lf.early_exit(node.stmt)
    if brk is not None:
        what = "break" if isinstance(brk, c_ast.Break) else "return"
        reasons.append(f"it may end early (the {what} at line {ctx.line(brk)})")
    names = (lf.ids(node.cond) | lf.ids(node.init) | lf.ids(node.next)) - {var}
    # outer loop variables the head reads, directly or through the locals it reads
    texts = " ".join(t for t in (lower, upper, step_text or "") if t)
    used = set(re.findall(r"[A-Za-z_]\w*", texts)) | names
    outer = tuple(v for v in ctx.loop_vars if v in used and v != var)
    dynamic = bool(reasons)
    return Loop(label, var, lower, upper, step, line, dynamic, outer, parent=parent, step_text=step_text,
                step_op=step_op, cond_op=cond_op, simple=simple and simple_init and not dynamic,
                dynamic_reason="; ".join(reasons) if reasons else None), changing


def _py(n: c_ast.Node) -> str:
    """C expression text usable by llmulator.expr (ints, names, + - * / %)."""
    return _GEN.visit(n)


def _affine(n: c_ast.Node, ctx: _Ctx) -> Affine | None:
    """Affine form of an index over the enclosing loop variables, or None."""
    if isinstance(n, c_ast.Constant):
        try:
            return Affine({}, str(int(n.value, 0)))
        except ValueError:
            return None
    if isinstance(n, c_ast.ID):
        if n.name in ctx.loop_vars:
            return Affine({n.name: 1}, "0")
        if n.name in ctx.params:
            return Affine({}, n.name)
        held = ctx.values.static.get(n.name) if n.name in ctx.locals else None
        if held is not None:
            return _affine(held, ctx)  # a local holding an expression of loop variables and parameters
        return None  # a data-derived local: indirect
    if isinstance(n, c_ast.UnaryOp) and n.op == "-":
        a = _affine(n.expr, ctx)
        return None if a is None else Affine({k: -v for k, v in a.coefs.items()}, f"-({a.const})")
    if isinstance(n, c_ast.BinaryOp) and n.op in ("+", "-"):
        a, b = _affine(n.left, ctx), _affine(n.right, ctx)
        if a is None or b is None:
            return None
        sign = 1 if n.op == "+" else -1
        coefs = dict(a.coefs)
        for k, v in b.coefs.items():
            coefs[k] = coefs.get(k, 0) + sign * v
        return Affine(coefs, f"({a.const}) {n.op} ({b.const})")
    if isinstance(n, c_ast.BinaryOp) and n.op == "*":
        a, b = _affine(n.left, ctx), _affine(n.right, ctx)
        if a is None or b is None:
            return None
        if not a.coefs and a.const.lstrip("-").isdigit():
            k = int(a.const)
            return Affine({v: c * k for v, c in b.coefs.items()}, f"{k} * ({b.const})")
        if not b.coefs and b.const.lstrip("-").isdigit():
            k = int(b.const)
            return Affine({v: c * k for v, c in a.coefs.items()}, f"{k} * ({a.const})")
        if not a.coefs and not b.coefs:
            return Affine({}, f"({a.const}) * ({b.const})")
        return None
    return None


def _expr_stmt(n: c_ast.Node, ctx: _Ctx, decl_name: str | None) -> Statement:
    """Operations, accesses and the expression DAG of one statement."""
    dag: list[OpNode] = []
    addr_mode: list[bool] = []
    accesses: list[Access] = []
    reads_locals: set[str] = set()
    ops, unfused = Counter(), Counter()
    node_for_error = n

    def is_float(e: c_ast.Node) -> bool:
        if isinstance(e, c_ast.Constant):
            return e.type in ("float", "double")
        if isinstance(e, c_ast.ArrayRef):
            return _base(e) in ctx.float_arrays
        if isinstance(e, c_ast.ID):
            t = ctx.locals.get(e.name, "")
            return t in ("float", "double", "_Float16") or e.name in ctx.scalars
        if isinstance(e, c_ast.BinaryOp):
            return is_float(e.left) or is_float(e.right)
        if isinstance(e, c_ast.UnaryOp):
            return is_float(e.expr)
        if isinstance(e, c_ast.FuncCall):
            return True
        if isinstance(e, c_ast.Cast):
            return "float" in _GEN.visit(e.to_type) or "double" in _GEN.visit(e.to_type)
        if isinstance(e, c_ast.TernaryOp):
            return is_float(e.iftrue) or is_float(e.iffalse)
        return False

    # visit() returns a node index, -1 for a constant (or nothing), or -2 - k for local_refs[k]
    local_refs: list[str] = []

    def local(name: str) -> int:
        reads_locals.add(name)
        local_refs.append(name)
        return -2 - (len(local_refs) - 1)

    def add(op: str, deps: list[int], array: str | None = None, fl: bool = False, access: Access | None = None) -> int:
        reads = tuple(dict.fromkeys(local_refs[-2 - d] for d in deps if d <= -2))
        dag.append(OpNode(op, [d for d in deps if d >= 0], array, fl, reads, access=access))
        return len(dag) - 1

    def pick(a: int, b: int) -> int:
        """What an address computation depends on: a node if any, else a local."""
        return max(a, b) if max(a, b) >= 0 else min(a, b)

    def access(e: c_ast.ArrayRef, write: bool, read: bool) -> tuple[str, list[int], Access]:
        idx_nodes = []
        cur = e
        while isinstance(cur, c_ast.ArrayRef):
            idx_nodes.append(cur.subscript)
            cur = cur.name
        if not isinstance(cur, c_ast.ID):
            raise ctx.error(node_for_error, "unsupported array reference", "NAME[i][j]")
        name = cur.name
        if name not in ctx.arrays and name not in ctx.locals:
            raise ctx.error(node_for_error, f"unknown array '{name}'",
                            "one of: " + ", ".join(sorted(ctx.arrays)), "declare it under workload.arrays")
        idx_nodes.reverse()
        # index arithmetic is address generation (dedicated, strength-reduced counters in HLS):
        # it is not counted as datapath operations, but loads inside an index (indirection) are
        addr_mode.append(True)
        try:
            deps = [visit(i) for i in idx_nodes]
        finally:
            addr_mode.pop()
        acc = Access(name, tuple(_GEN.visit(i) for i in idx_nodes), tuple(_affine(i, ctx) for i in idx_nodes),
                     write, read)
        if name in ctx.arrays:  # the workload's arrays: what traffic and footprints count
            accesses.append(acc)
        return name, deps, acc

    def visit(e: c_ast.Node) -> int:
        if isinstance(e, c_ast.Constant):
            return -1
        if isinstance(e, c_ast.ID):
            if e.name in ctx.locals and e.name not in ctx.loop_vars:
                return local(e.name)
            elif (e.name not in ctx.loop_vars and e.name not in ctx.params and e.name not in ctx.scalars
                  and e.name not in ctx.arrays):
                raise ctx.error(node_for_error, f"unknown name '{e.name}'",
                                "a loop variable, local, parameter, scalar or array",
                                "declare locals before use; parameters go under workload.parameters")
            return -1
        if isinstance(e, c_ast.ArrayRef):
            name, deps, acc = access(e, False, True)
            return add("load", deps, name, access=acc)
        if isinstance(e, c_ast.BinaryOp):
            a, b = visit(e.left), visit(e.right)
            cls = BINOP_CLASSES.get(e.op)
            if cls is None:
                raise ctx.error(node_for_error, f"unsupported operator '{e.op}'")
            if addr_mode:
                return pick(a, b)
            ops[cls] += 1
            unfused[cls] += 1
            return add(cls, [a, b], fl=is_float(e))
        if isinstance(e, c_ast.UnaryOp):
            if e.op in ("p++", "++", "p--", "--"):
                target = visit(e.expr)
                ops["add"] += 1
                unfused["add"] += 1
                r = add("add", [target])
                if isinstance(e.expr, c_ast.ArrayRef):
                    name, deps, acc = access(e.expr, True, False)
                    add("store", [r] + deps, name, access=acc)
                return r
            if e.op == "sizeof":
                return -1
            a = visit(e.expr)
            if e.op == "-":
                ops["add"] += 1
                unfused["add"] += 1
                return add("add", [a], fl=is_float(e.expr))
            if e.op == "!" or e.op == "~":
                ops["logic"] += 1
                unfused["logic"] += 1
                return add("logic", [a])
            return a
        if isinstance(e, c_ast.Cast):
            return visit(e.expr)
        if isinstance(e, c_ast.TernaryOp):
            c, a, b = visit(e.cond), visit(e.iftrue), visit(e.iffalse)
            ops["select"] += 1
            unfused["select"] += 1
            return add("select", [c, a, b])
        if isinstance(e, c_ast.FuncCall):
            fname = e.name.name if isinstance(e.name, c_ast.ID) else _GEN.visit(e.name)
            args = [visit(x) for x in (e.args.exprs if e.args else [])]
            cls = FUNC_CLASSES.get(fname)
            if cls is None:
                raise ctx.error(node_for_error, f"unsupported function '{fname}'",
                                "one of: " + ", ".join(sorted(FUNC_CLASSES)),
                                "write it with operators (e.g. x > 0 ? x : 0) or a listed function")
            ops[cls] += 1
            unfused[cls] += 1
            return add(cls, args, fl=True)
        if isinstance(e, c_ast.Assignment):
            return assign(e)
        if isinstance(e, c_ast.ExprList):
            last = -1
            for x in e.exprs:
                last = visit(x)
            return last
        raise ctx.error(node_for_error, f"unsupported expression: {type(e).__name__}")

    def assign(e: c_ast.Assignment) -> int:
        rhs = e.rvalue
        fused = False
        if e.op in ("+=", "-=") and isinstance(rhs, c_ast.BinaryOp) and rhs.op == "*":
            fused = True
        if fused:
            a, b = visit(rhs.left), visit(rhs.right)
            unfused["mul"] += 1
            unfused["add"] += 1
            ops["mac"] += 1
            cur = visit_lhs_read(e.lvalue)
            r = add("mac", [a, b, cur], fl=is_float(rhs))
            dag[r].acc = cur if cur >= 0 else -1
        else:
            r = visit(rhs)
            if e.op != "=":
                cls = BINOP_CLASSES.get(e.op[:-1])
                if cls is None:
                    raise ctx.error(node_for_error, f"unsupported operator '{e.op}'")
                cur = visit_lhs_read(e.lvalue)
                ops[cls] += 1
                unfused[cls] += 1
                r = add(cls, [r, cur], fl=is_float(e.lvalue) or is_float(rhs))
        return store(e.lvalue, r)

    def visit_lhs_read(lv: c_ast.Node) -> int:
        if isinstance(lv, c_ast.ArrayRef):
            name, deps, acc = access(lv, False, True)
            return add("load", deps, name, access=acc)
        if isinstance(lv, c_ast.ID):
            return local(lv.name)
        return -1

    def store(lv: c_ast.Node, r: int) -> int:
        nonlocal written, copied
        if isinstance(lv, c_ast.ArrayRef):
            name, deps, acc = access(lv, True, False)
            return add("store", [r] + deps, name, access=acc)
        if isinstance(lv, c_ast.ID):
            if lv.name in ctx.arrays or lv.name in ctx.params:
                raise ctx.error(node_for_error, f"cannot assign to '{lv.name}'", "a local or an array element")
            if lv.name not in ctx.locals:
                raise ctx.error(node_for_error, f"unknown name '{lv.name}'", "a declared local variable")
            written = lv.name
            if r <= -2:
                copied = local_refs[-2 - r]
            return r
        raise ctx.error(node_for_error, "unsupported assignment target")

    written: str | None = None
    copied: str | None = None
    if decl_name is not None:
        r = visit(n)
        written = decl_name
        if r <= -2:
            copied = local_refs[-2 - r]
    else:
        visit(n)
    st = Statement(_GEN.visit(n) if decl_name is None else f"{decl_name} = {_GEN.visit(n)}",
                   ctx.line(n), ops, unfused, accesses, dag, written, reads_locals, copies=copied)
    return st


def _base(e: c_ast.ArrayRef) -> str:
    cur = e
    while isinstance(cur, c_ast.ArrayRef):
        cur = cur.name
    return cur.name if isinstance(cur, c_ast.ID) else ""


_ALLOWED = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.Compare,
            ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div,
            ast.FloorDiv, ast.Mod, ast.Constant, ast.Name, ast.Load, ast.BitAnd, ast.BitOr, ast.BitXor,
            ast.LShift, ast.RShift, ast.Invert, ast.IfExp, ast.Call)


class _CDivision(ast.NodeTransformer):
    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Div):  # integer loop indices: C's / truncates
            node.op = ast.FloorDiv()
        return node


@functools.lru_cache(maxsize=1024)
def _condition(cond: str):
    """A C condition over integer loop variables and parameters (``&&``, ``||``, ``!``, comparisons,
    + - * / %) compiled once; anything else (calls, array reads, fields) raises ExprError."""
    text = re.sub(r"!(?!=)", " not ", cond.replace("&&", " and ").replace("||", " or "))
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


def _holds(cond: str, names: dict[str, float]) -> bool:
    """Whether a C condition over loop variables and parameters holds for these values."""
    code, needed = _condition(cond)
    missing = [n for n in needed if n not in names]
    if missing:
        raise ExprError(f"condition {cond!r} reads {', '.join(missing)}, not a loop variable or parameter")
    return bool(eval(code, _SAFE, {n: names[n] for n in needed}))  # noqa: S307 - whitelisted AST


_SAFE = {"__builtins__": {}, "min": min, "max": max}
