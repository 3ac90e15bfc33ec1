"""The kernel's C body parsed with pycparser and read into a ``LoopTree`` (``llmulator.kernel.analyze``).

``analyze_cached`` memoises the tree on everything the analysis reads;
``_check_subset`` refuses the C a kernel may not hold before anything compiles
it; ``_stmt`` reads statements, branches and declarations, ``_loop`` loops
(their heads: ``llmulator.kernel_heads``), and every expression statement is
analysed by ``llmulator.kernel_expr``.
"""

from __future__ import annotations

from collections import Counter

from pycparser import c_ast, c_parser

from . import c_dims, c_names, load_reuse
from . import loopforms as lf
from .c_switch import lower_switches
from .errors import Diagnostic, SpecError
from .kernel import _GEN, _PRELUDE, C_TYPES, FUNC_CLASSES, Branch, Loop, LoopTree, Node, Statement, strip_comments
from .kernel_ctx import Ctx
from .kernel_expr import expr_stmt
from .kernel_heads import enter, for_head, while_counter

_CACHE: dict[tuple, LoopTree] = {}
_CACHE_SIZE = 512
MAX_KERNEL_CHARS = 1 << 18  # 256 Ki characters: ~1 s of pycparser on this machine


def analyze_cached(workload, file: str | None = None, sizes: dict[str, int] | None = None) -> LoopTree:
    """Parse ``workload.kernel`` into a LoopTree; SpecError (with YAML line) on bad C.

    Results are memoised on everything the analysis reads (kernel text, declarations, file and
    line), so the many designs that share one kernel (a sweep, a synthesized dataset) parse it once.
    The returned tree is shared: treat it as read-only. ``sizes``: the parameters' values, which turn a
    parameter that multiplies a loop variable in a subscript (`m * K + k`) into its coefficient; without
    them such a subscript has no affine form.
    """
    smap = workload.source_map
    key = (file, smap.file if smap else None, smap.locate(("workload", "kernel")) if smap else None,
           workload.kernel, tuple((n, a.dtype, a.shape) for n, a in workload.arrays.items()),
           tuple(workload.parameters), tuple((k, v["dtype"]) for k, v in workload.scalars.items()),
           tuple(sorted((sizes or {}).items())))
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    tree = _analyze(workload, file, sizes)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = tree
    return tree


def _analyze(workload, file: str | None = None, sizes: dict[str, int] | None = None) -> LoopTree:
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
    ctx = Ctx(arrays, set(workload.scalars), set(workload.parameters), file, line0)
    ctx.param_values = {k: v for k, v in (sizes or {}).items() if k in workload.parameters}
    if len(workload.kernel) > MAX_KERNEL_CHARS:  # parsed in this process: its size bounds the time and memory
        raise ctx.error(None, f"the kernel is {len(workload.kernel):,} characters long",
                        f"at most {MAX_KERNEL_CHARS:,} characters", "large constant tables belong in the inputs "
                        "(an outside probe's 1.4 MB initializer took 5 s to parse)")
    ctx.float_arrays = {n for n, a in workload.arrays.items() if a.dtype.startswith("fp")}
    ctx.float_scalars = {n for n, v in workload.scalars.items() if str(v["dtype"]).startswith("fp")}
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
    lower_switches(func.body, ctx.error)
    body = func.body.block_items or []
    _check_subset(func.body, ctx)
    roots = _block(body, ctx, None)
    if not ctx.loops:
        raise ctx.error(None, "the kernel has no loops", "at least one labelled loop (L_i: for (...))")
    return LoopTree(roots=roots, loops=ctx.loops, locals=ctx.locals, source=workload.kernel, body=func.body)


def _check_subset(body: c_ast.Node, ctx: Ctx) -> None:
    """The C a kernel may hold, checked on the whole body before anything compiles it: arrays,
    scalars, locals and the allow-listed functions (``FUNC_CLASSES``); no function declarations or
    calls outside that list (so no ``system``, however declared), no pointers, address-of,
    dereference or pointer casts (nothing reaches memory outside the declared arrays), no ``extern``
    (nothing reaches the simulator's own variables), no names starting with ``__`` (reserved for the
    implementation and the simulator's instrumentation). The operating-system sandbox
    (``llmulator.sandbox``) confines whatever runs anyway; this check says early and precisely what
    is refused."""

    _Subset(ctx).visit(body)


class _Subset(c_ast.NodeVisitor):
    """``_check_subset``'s walk: the first construct outside the kernel subset raises SpecError."""

    def __init__(self, ctx: Ctx):
        self.ctx = ctx

    def refuse(self, node, what: str, hint: str = "") -> None:
        raise self.ctx.error(node, f"{what} is not allowed in a kernel", "arrays, scalars, locals and the math "
                             "functions listed under 'Operator classes' in docs/spec-reference.md", hint)

    def visit_Decl(self, n):
        if "extern" in (n.storage or []):
            self.refuse(n, f"the extern declaration of '{n.name}'")
        if n.name and n.name.startswith("__"):
            self.refuse(n, f"the name '{n.name}' (names starting with __ are reserved)")
        ctx = self.ctx
        if n.name in ctx.params | ctx.scalars | set(ctx.arrays):
            # the checks size local arrays and bound subscripts by the workload's names: a local `int N = 1;` made
            # `int t[N]` one element in C while every check took the parameter's 4096 (an outside probe read and
            # wrote the simulator's stack through it, and forged its cycle count)
            kind = "parameter" if n.name in ctx.params else "scalar" if n.name in ctx.scalars else "array"
            self.refuse(n, f"a local named '{n.name}', the name of a workload {kind},", "a name of its own")
        self.generic_visit(n)

    def visit_Enum(self, n):
        # its constants are names the checks do not know (`enum { B = 1 }; int t[B];`: an outside probe)
        self.refuse(n, "an enum", "use the workload's parameters, or numbers")

    def visit_Struct(self, n):
        self.refuse(n, "a struct", "use one array per field")

    def visit_Union(self, n):
        self.refuse(n, "a union", "use one array per field")

    def visit_FuncDecl(self, n):
        self.refuse(n, "a function declaration", "call the math functions directly; they need no prototype")

    def visit_FuncDef(self, n):
        self.refuse(n, "a function definition")

    def visit_PtrDecl(self, n):
        self.refuse(n, "a pointer", "index the arrays instead (buf[i], not *p++)")

    def visit_UnaryOp(self, n):
        if n.op in ("&", "*"):
            self.refuse(n, f"the {'address-of' if n.op == '&' else 'dereference'} operator '{n.op}'",
                        "index the arrays instead")
        self.generic_visit(n)

    def visit_StructRef(self, n):
        self.refuse(n, "a struct or pointer member access (. or ->)", "use one array per field")

    def visit_ID(self, n):
        if n.name.startswith("__"):
            self.refuse(n, f"the name '{n.name}' (names starting with __ are reserved)")

    def visit_FuncCall(self, n):
        name = n.name.name if isinstance(n.name, c_ast.ID) else None
        if name not in FUNC_CLASSES:
            self.refuse(n, f"a call to '{name or _GEN.visit(n.name)}'",
                        "write it with operators (e.g. x > 0 ? x : 0) or a listed function")
        if n.args is not None:
            self.visit(n.args)

    def visit_Goto(self, n):
        self.refuse(n, "goto")


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


def _block(items: list[c_ast.Node], ctx: Ctx, parent: Loop | None, label: str | None = None) -> list[Node]:
    out: list[Node] = []
    for it in items:
        out.extend(_stmt(it, ctx, parent))
    if parent is not None:  # (outside every loop each statement is a nest of its own)
        load_reuse.mark(out)
    return out


def _stmt(node: c_ast.Node, ctx: Ctx, parent: Loop | None, label: str | None = None) -> list[Node]:
    if isinstance(node, c_ast.Label):
        return _stmt(node.stmt, ctx, parent, node.name)
    if isinstance(node, c_ast.Compound):
        return _block(node.block_items or [], ctx, parent)
    if isinstance(node, (c_ast.For, c_ast.While, c_ast.DoWhile)):
        return [_loop(node, ctx, parent, label)]
    if isinstance(node, c_ast.If):
        cond = expr_stmt(node.cond, ctx, None)
        held = ctx.value(node.cond)
        dd = held.data
        before = ctx.values.copy()
        then = _stmt(node.iftrue, ctx, parent) if node.iftrue else []
        after_then, ctx.values = ctx.values, before
        orelse = _stmt(node.iffalse, ctx, parent) if node.iffalse else []
        ctx.values.join(after_then)
        return [Branch(label, _GEN.visit(node.cond), ctx.line(node), dd, cond, then, orelse, index_text=held.text,
                       ast=node)]
    if isinstance(node, c_ast.Decl):
        _fixed_size(node, ctx)
        ctype = _GEN.visit(node.type).strip() if node.type is not None else "int"
        ctx.locals[node.name] = ctype.split("[")[0].strip()
        if node.init is None:
            ctx.assign(node.name, None)
            return []
        if isinstance(node.init, c_ast.InitList):
            # a constant table (``const int T[4] = {...}``): a ROM filled when the design is built
            ctx.assign(node.name, None)
            return []
        st = expr_stmt(node.init, ctx, node.name)
        ctx.assign(node.name, node.init)
        return [st]
    if isinstance(node, c_ast.Pragma):
        return []
    if isinstance(node, c_ast.EmptyStatement):
        return []
    if isinstance(node, (c_ast.Assignment, c_ast.UnaryOp, c_ast.FuncCall)):
        st = expr_stmt(node, ctx, None)
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
                    "for, while and do-while loops, if, switch, assignments, declarations, break, continue and return")


def _fixed_size(node: c_ast.Decl, ctx: Ctx) -> None:
    """A local array's dimensions must be numbers or expressions of the parameters: hlsim bounds-checks every
    subscript against them, and an unsized (`t[] = {...}`) or run-time sized (`float t[m]`) array would go
    unchecked (an outside review wrote past one onto the simulator's stack)."""
    t = node.type
    while isinstance(t, c_ast.ArrayDecl):
        if t.dim is None or not c_dims.fixed(t.dim, ctx.params):
            raise ctx.error(node, f"local array '{node.name}' has no size fixed before the run",
                            "a size that is a number or an expression of parameters, without casts (float t[N])",
                            "give every dimension a constant size; index within it")
        t = t.type


def _track(node: c_ast.Node, ctx: Ctx) -> None:
    """What an assignment statement (or ``x++``) leaves in its local; a local written inside it (`k = (j = j +
    1)`, `c[j++] = 1`) holds no fixed expression after it (before hlsim 0.57 `j = i` stayed `i`, and `a[j]`
    after such a write was priced as `a[i]`: 63 words where the run read 64 elements)."""
    for inner in _nested_writes(node):
        if inner in ctx.locals:
            ctx.assign(inner, None)
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


def _nested_writes(node: c_ast.Node) -> set[str]:
    """The names an expression statement assigns below its top (nested assignments, ``++`` in a subscript)."""
    if isinstance(node, c_ast.ExprList):  # (each of its expressions is tracked on its own)
        return set()
    return set().union(*(c_names.assigned(child) for _, child in node.children()))


def _loop(node, ctx: Ctx, parent: Loop | None, label: str | None) -> Loop:
    if label is None:
        ctx.auto += 1
        label = f"_L{ctx.auto}"
    if label in ctx.loops:
        raise ctx.error(node, f"duplicate loop label '{label}'", "unique labels")
    line = ctx.line(node)
    if isinstance(node, c_ast.For):
        # an initialiser that reads an array (`j = p[i]`, a CSR row's start) is a load once per entry
        heads = [expr_stmt(e, ctx, v) for v, e in (lf.read_inits(node.init) or [])]
        loop, changing = for_head(node, ctx, parent, label, line)
        loop.init_stmts = [st for st in heads if st.accesses]
    else:
        before = ctx.values.copy()
        changing = enter(node, ctx, label, None)
        loop = Loop(label, None, "0", "0", 1, line, True, (), parent=parent, is_while=True, simple=False,
                    do_while=isinstance(node, c_ast.DoWhile),
                    dynamic_reason="a while loop: its trips are what its condition makes of the run's values")
    at_head = ctx.values.copy()
    if isinstance(node, c_ast.For):
        ctx.loop_vars.append(loop.var)
        ctx.locals.setdefault(loop.var, "int")
        loop.cond_stmt = expr_stmt(node.cond, ctx, None) if node.cond is not None else None
    else:
        loop.cond_stmt = expr_stmt(node.cond, ctx, None)
    ctx.loops[label] = loop
    set_in_body = loop.var is not None and loop.var not in ctx.body_set_vars \
        and loop.var in lf.assigned_locals(node.stmt)
    if set_in_body:
        ctx.body_set_vars.add(loop.var)
    loop.body = _stmt(node.stmt, ctx, loop) if node.stmt is not None else []
    if set_in_body:
        ctx.body_set_vars.discard(loop.var)
    if not isinstance(node, c_ast.For) and node.stmt is not None:
        loop.induction = while_counter(node, before, ctx.loop_vars)
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
