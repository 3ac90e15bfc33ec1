"""The mapped kernel as timed *sites*, and its cycle-annotated C for hlsim (counters and a harness).

The sites (nested as in the code: ``Instrumented.trees``) are what the analytical estimator walks
statically (``llmulator.expected_cycles``); hlsim compiles the C and runs it.

The mapped kernel (``llmulator.render.mapped_kernel``: tiling, order and loop
primitives applied on the pycparser AST) is re-emitted with instrumentation:

* every *site* (a run of straight-line statements, a branch condition, a
  loop) has five timing constants ``T[5s..5s+4]`` read from a file at run
  time, so one compiled binary serves every hardware variant of the same
  structure;
* outside pipelined regions, a straight-line run adds its scheduled latency
  each time it executes, a branch condition its latency (only the taken side's
  statements add theirs), a loop iteration its control overhead;
* a pipelined loop (``pipeline_ii``) and an unrolled loop are *regions*: their
  iterations are counted as they actually run, and on exit the region adds
  ``depth + (ceil(n / U) - 1) x II`` for the n iterations it ran (where a test
  the data decide ends the loop, not less than ``ceil(n / U) x II + test`` when
  that test starts a group of its own: the fourth constant after no trip, the
  fifth after some, whose operands the last group computes); the point
  loops of a band bound to the PE array are one region too (a *fold*,
  ``llmulator.nest``): it counts a stream step per iteration of the first PE
  and adds ``fill + steps x II`` per fold; statements inside a region add no
  cycles of their own (they are in the schedule);
* every site counts its executions (for operation and access counts, hence
  energy) and every loop its iterations and invocations (trip counts);
* each top-level statement's cycles are recorded separately (one per nest);
* every subscript of a workload array, and of an array the kernel declares with constant
  dimensions, is bounds-checked (``__CHK``: one unsigned compare per dimension): an index
  outside its extent, read or write, ends the run with exit status 5 and a line
  ``hlsim-oob <check id> <index value> <loop variable values...>`` on stderr, which
  ``Instrumented.checks`` turns back into the array, the index as written, its kernel line
  and the enclosing loop variables.

The harness reads the input arrays (raw little-endian files), zeroes the
outputs, runs the kernel, writes the outputs and the counters.
"""

from __future__ import annotations

import hashlib

import attrs
from pycparser import c_ast, c_generator

from . import c_dims, costs, element_marks, nest
from .c_names import LOOPS
from .design import Design
from .errors import InvariantError, UserError
from .hls import mapped_kernel  # not via render, which imports inputs (numpy data, the sandbox): ~4 ms
from .kernel import C_TYPES, Loop, Statement
from .loopforms import early_exit

_GEN = c_generator.CGenerator()


@attrs.define
class Site:
    id: int
    kind: str  # block | cond | loop | region
    nest: int
    stmts: list[Statement] = attrs.field(factory=list)
    label: str | None = None  # loop sites: the label as emitted (point, whole or tile loop)
    loop: str | None = None  # the kernel loop it belongs to (tile loops: their point loop)
    region: str | None = None  # region sites: 'pipeline', 'array' (a PE-array fold) or 'unroll'
    in_region: bool = False
    counted: bool = False  # loop sites that count their iterations and invocations (trip counts)
    body: list = attrs.field(factory=list)  # region sites: the mapped body (see _Emitter.block)
    region_id: int | None = None  # sites inside a region: that region's site id
    spatial_loops: tuple[str, ...] = ()  # sites inside PE-array loops: those loops' labels
    band: list[str] = attrs.field(factory=list)  # array regions: the band bound to the PE array
    free: bool = False  # loop sites whose control costs nothing (tile loops around a PE-array fold)
    children: list[Site] = attrs.field(factory=list, repr=False)  # sites nested in it (a cond: its then side)
    orelse: list[Site] = attrs.field(factory=list, repr=False)  # cond sites: the else side
    # cond sites: whether the then / the else side ends the pass over its loop's body (a `continue` of its own,
    # not inside a nested if or loop): what follows the cond in that body does not run after that side
    skips: tuple[bool, bool] = (False, False)
    # region sites: a test the data decide can end the loop (a while loop, a data-dependent bound; not a
    # do-while, nor a counter's test beside a break): that last test is evaluated after the last iteration,
    # where it ends the loop (``__region``'s flag: a break or return may end it first)
    exits_by_test: bool = False


@attrs.define
class Check:
    """One bounds-checked subscript: dimension ``dim`` of ``array`` at one place in the kernel."""

    id: int
    array: str
    dim: int
    extent: int
    index: str  # the subscript, as C text (e.g. ``i + 1000``)
    access: str  # the whole access (e.g. ``x[i + 1000]``)
    line: int | None  # the kernel statement's line in the workload file
    loop_vars: tuple[str, ...]  # the enclosing kernel loop variables in scope, outermost first
    kind: str = "read"  # read | write | read-modify-write (``+=``, ``++``)
    shape: tuple[int, ...] = ()  # the array's extents
    declared: tuple[str, ...] = ()  # ... as declared (``N``): a workload array's shape or a local's dimensions
    local: bool = False  # an array declared in the kernel, not a workload array


@attrs.define
class Instrumented:
    source: str
    sites: list[Site]
    nests: int
    arrays: list[str]  # kernel parameter order
    nest_loops: list[str | None] = attrs.field(factory=list)  # kernel loop at the top of each nest
    trees: list[list[Site]] = attrs.field(factory=list)  # per nest, its top-level sites (nested by children)
    checks: list[Check] = attrs.field(factory=list)  # bounds checks, by id (see ``__CHK``)

    @property
    def key(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:24]


class _Checked(c_generator.CGenerator):
    """C text with every subscript of an array of known shape (the workload's, the kernel's own with
    constant dimensions) wrapped in ``__CHK``, its bounds check."""

    def __init__(self, em: _Emitter):
        super().__init__()
        self.em = em
        self.writes: dict[int, str] = {}  # id(node) -> how an assignment or ++/-- writes it
        self.addressed: set[int] = set()  # id(node) of `&A[i]` operands: an address taken, no element accessed

    def visit_Assignment(self, n: c_ast.Assignment) -> str:
        self.writes[id(n.lvalue)] = "write" if n.op == "=" else "read-modify-write"
        return super().visit_Assignment(n)

    def visit_UnaryOp(self, n: c_ast.UnaryOp) -> str:
        if n.op in ("p++", "p--", "++", "--"):
            self.writes[id(n.expr)] = "read-modify-write"
        elif n.op in ("&", "sizeof"):
            self.addressed.add(id(n.expr))
        return super().visit_UnaryOp(n)

    def visit_ArrayRef(self, n: c_ast.ArrayRef) -> str:
        kind = self.writes.pop(id(n), "read")
        subs = []
        base = n
        while isinstance(base, c_ast.ArrayRef):
            subs.append(base.subscript)
            base = base.name
        arr = self.em.shapes.get(base.name) if isinstance(base, c_ast.ID) else None
        if arr is None:
            return super().visit_ArrayRef(n)
        shape = arr[0]
        subs.reverse()
        access = _GEN.visit(n)
        out = base.name
        for k, sub in enumerate(subs):
            idx = self.visit(sub)
            if k < len(shape):
                c = self.em.check(base.name, k, _GEN.visit(sub), access, kind)
                vals = "".join(f", (long long)({v})" for v in c.loop_vars)
                idx = f"__CHK({c.id}, {shape[k]}, ({idx}){vals})"
            out += f"[{idx}]"
        aid = self.em.marked.get(base.name)
        if aid is not None and not arr[2] and len(subs) == len(shape) and id(n) not in self.addressed:
            return element_marks.access(aid, kind, out)  # an element of a workload array: marked as it is used
        return out


class _Emitter:
    def __init__(self, design: Design):
        self.d = design
        self.sites: list[Site] = []
        # bounds checks: the arrays in scope (name -> extents, declared dimensions, local or not): the
        # workload's, then the kernel's own as declared; the kernel line being emitted; the loop
        # variables in scope (loops' variables, fused loops' member declarations), outermost first
        w = design.workload
        self.shapes: dict[str, tuple[tuple[int, ...], tuple[str, ...], bool] | None] = {
            n: (w.shape(n, design.sizes), tuple(str(x) for x in a.shape), False) for n, a in w.arrays.items()}
        self.shadowed: list[tuple[str, tuple | None]] = []  # local array declarations, to undo at block end
        # the harness's arrays (not ``temp``: the kernel allocates those), in parameter order: their elements'
        # first reads and writes are counted (llmulator.element_marks)
        self.marked = {n: i for i, n in enumerate(n for n, a in w.arrays.items() if a.role != "temp")}
        self.checks: list[Check] = []
        self.gen = _Checked(self)
        self.line: int | None = None
        self.scope: list[str] = []
        self.kernel_vars = {lp.var for lp in design.tree.loops.values() if lp.var}
        self.by_text: dict[str, list[Statement]] = {}  # text -> the statements of that text, in kernel order
        for node in design.tree.walk():
            st = (node if getattr(node, "kind", "") == "stmt" else node.cond if getattr(node, "kind", "") == "branch"
                  else node.cond_stmt if isinstance(node, Loop) else None)
            if st is not None:
                self.by_text.setdefault(st.text, []).append(st)
        # a parsed node's line in the workload file: two branches on one condition (`if (!c[i])` twice) are
        # two sites, each with its own probability (the first one's used to stand for both)
        self.line_shift = next((n.line - n.ast.coord.line for n in design.tree.walk()
                                if getattr(n, "ast", None) is not None and n.ast.coord), None)
        self.nest = 0
        self.returns = False  # a `return` in the kernel: its body ends at the label __done
        self.tile_of: dict[str, str] = {}
        self.region_id: int | None = None
        self.spatial_stack: list[str] = []
        # PE-array folds (llmulator.nest): head point loop -> band; inside one, the first-lane tests
        self.array_heads: dict[str, list[str]] = {}
        for loop in design.tree.loops.values():
            if nest.band_head(design.tree, loop.label) is loop:
                band = [lp.label for lp in loop.band()]
                head = nest.array_head(design, band)
                if head is not None:
                    self.array_heads[head] = band
        self.lane0: list[str] | None = None
        self.array_counter: str = ""
        self.into: list[Site] = []  # where the next site goes (the enclosing site's children)

    def site(self, kind: str, in_region: bool, **kw) -> Site:
        s = Site(len(self.sites), kind, self.nest, in_region=in_region,
                 region_id=self.region_id if in_region else None, spatial_loops=tuple(self.spatial_stack), **kw)
        self.sites.append(s)
        self.into.append(s)
        return s

    def check(self, array: str, dim: int, index: str, access: str, kind: str) -> Check:
        seen: dict[str, None] = {}
        for v in self.scope:  # a shadowed name: its innermost declaration
            seen.pop(v, None)
            seen[v] = None
        shape, declared, local = self.shapes[array]
        c = Check(len(self.checks), array, dim, shape[dim], index, access, self.line, tuple(seen), kind, shape,
                  declared, local)
        self.checks.append(c)
        return c

    def declare(self, n: c_ast.Decl, values: tuple[int, ...] | None = None) -> None:
        """A declaration in the kernel: a fused loop's member variable comes into scope; a local array
        is checked from here on against its dimensions (``values``, else ``local_dims``)."""
        if n.init is not None and n.name in self.kernel_vars:
            self.scope.append(n.name)
        dims = []
        t = n.type
        while isinstance(t, c_ast.ArrayDecl):
            dims.append(t.dim)
            t = t.type
        if not dims:
            return
        self.shadowed.append((n.name, self.shapes.get(n.name)))
        self.shapes[n.name] = (values or self.local_dims(n), tuple(_GEN.visit(x) for x in dims), True)

    def local_dims(self, n: c_ast.Decl) -> tuple[int, ...]:
        """A local array's dimensions at this design's parameters, as C computes them (``llmulator.c_dims``): the
        checks use them and the program declares the array with them. Before, an array whose size did not
        evaluate here went unchecked (an outside probe wrote past `int t[(int) 4]`)."""
        dims, t = [], n.type
        while isinstance(t, c_ast.ArrayDecl):
            dims.append(t.dim)
            t = t.type
        try:
            values = tuple(c_dims.array_dim(x, self.d.sizes) for x in dims)
        except ValueError as e:
            raise UserError(f"kernel line {self.line}: local array '{n.name}': {e}") from None
        if not all(v > 0 for v in values):
            raise UserError(f"kernel line {self.line}: local array '{n.name}' has size {values} at these parameter "
                            "values; every dimension must be at least 1")
        return values

    def mark(self) -> tuple[int, int]:
        return len(self.scope), len(self.shadowed)

    def restore(self, mark: tuple[int, int]) -> None:
        """Leave a C block: its declarations go out of scope."""
        del self.scope[mark[0]:]
        while len(self.shadowed) > mark[1]:
            name, prev = self.shadowed.pop()
            self.shapes[name] = prev

    def text(self, node: c_ast.Node, stmt: Statement | None = None) -> str:
        """``node`` as checked C, its checks at ``stmt``'s line (default: the line being emitted)."""
        saved = self.line
        if stmt is not None:
            self.line = stmt.line
        try:
            return self.gen.visit(node)
        finally:
            self.line = saved

    def inside(self, sites: list[Site], emit):
        """Run ``emit()`` with new sites going into ``sites``."""
        saved, self.into = self.into, sites
        try:
            return emit()
        finally:
            self.into = saved

    def stmt_of(self, node: c_ast.Node) -> Statement | None:
        if isinstance(node, c_ast.Decl):
            if node.init is None:
                return None
            same = self.by_text.get(f"{node.name} = {_GEN.visit(node.init)}")
        else:
            same = self.by_text.get(_GEN.visit(node))
        if not same:
            return None
        if len(same) > 1 and self.line_shift is not None and node.coord is not None:
            return next((st for st in same if st.line == node.coord.line + self.line_shift), same[0])
        return same[0]

    # -- emission ---------------------------------------------------------------------------------
    def block(self, items: list[c_ast.Node], in_region: bool, ind: str, model: list | None = None,
              keep_scope: bool = False) -> str:
        """Emit a block; append its structure to ``model``: ('stmt', Statement) |
        ('loop', kernel label, is_tile, [model]) | ('branch', Statement, [then], [else])."""
        model = [] if model is None else model
        out: list[str] = []
        run: list[c_ast.Node] = []
        mark = self.mark()

        def flush():
            if not run:
                return
            of = [self.stmt_of(n) for n in run]
            stmts = [s for s in of if s is not None]
            if stmts:
                s = self.site("block", in_region, stmts=stmts)
                add = "" if in_region else f"__cyc += __T[{SLOTS * s.id}]; "
                out.append(f"{ind}{add}__cnt[{s.id}]++;\n")
                model.extend(("stmt", st) for st in stmts)
            for n, st in zip(run, of, strict=True):
                dims = self.local_dims(n) if _is_array(n) else None
                out.append(f"{ind}{self.text(c_dims.with_dims(n, dims) if dims else n, st)};\n")  # C's size: checked
                if isinstance(n, c_ast.Decl):
                    self.declare(n, dims)  # in scope for the rest of the block
            run.clear()

        for it in items:
            if isinstance(it, c_ast.Pragma):
                continue
            if isinstance(it, (c_ast.Assignment, c_ast.UnaryOp, c_ast.FuncCall, c_ast.Decl)):
                run.append(it)
                continue
            flush()
            out.append(self.stmt(it, in_region, ind, model=model))
        flush()
        if not keep_scope:
            self.restore(mark)
        return "".join(out)

    def stmt(self, node: c_ast.Node, in_region: bool, ind: str, label: str | None = None,
             model: list | None = None) -> str:
        model = [] if model is None else model
        if isinstance(node, c_ast.Label):
            return self.stmt(node.stmt, in_region, ind, node.name, model)
        if isinstance(node, c_ast.Compound):
            return f"{ind}{{\n{self.block(node.block_items or [], in_region, ind + '  ', model)}{ind}}}\n"
        if isinstance(node, LOOPS):
            return self.loop(node, in_region, ind, label, model)
        if isinstance(node, c_ast.If):
            cond = self.stmt_of(node.cond)
            s = self.site("cond", in_region, stmts=[cond] if cond is not None else [], label=label,
                          skips=(_continues(node.iftrue), _continues(node.iffalse)))
            add = "" if in_region else f"__cyc += __T[{SLOTS * s.id}]; "
            then_m: list = []
            else_m: list = []
            text = f"{ind}{add}__cnt[{s.id}]++;\n{ind}if ({self.text(node.cond, cond)})\n"
            text += self.inside(s.children, lambda: self.stmt(_compound(node.iftrue), in_region, ind, model=then_m))
            if node.iffalse is not None:
                text += f"{ind}else\n" + self.inside(
                    s.orelse, lambda: self.stmt(_compound(node.iffalse), in_region, ind, model=else_m))
            model.append(("branch", cond, then_m, else_m))
            return text
        if isinstance(node, (c_ast.Break, c_ast.Continue)):
            return f"{ind}{_GEN.visit(node)};\n"
        if isinstance(node, c_ast.Return):
            # the kernel ends here: an open pipelined region counts the iterations it ran, the nest its
            # cycles, and the later nests do not run
            self.returns = True
            flush = f"__region({self.region_id}, __n{self.region_id}, 0); " if self.region_id is not None else ""
            return f"{ind}{{ {flush}__nest[{self.nest}] += __cyc - __t0; goto __done; }}\n"
        if isinstance(node, c_ast.Pragma):
            return ""
        if isinstance(node, (c_ast.Switch, c_ast.Case, c_ast.Default, c_ast.Goto)):
            raise InvariantError(f"hlsim would run `{type(node).__name__}` uncounted (line {node.coord})")
        return f"{ind}{self.text(node)};\n"

    def _loop_label(self, label: str | None) -> str | None:
        """The kernel loop a (possibly tile) label belongs to."""
        if label is None:
            return None
        if label in self.d.tree.loops:
            return label
        for point, tile in self.tile_of.items():
            if tile == label:
                return point
        return None

    def loop(self, node, in_region: bool, ind: str, label: str | None, model: list) -> str:
        kl = self._loop_label(label)
        saved, mark = self.line, self.mark()
        if kl is not None:
            self.line = self.d.tree.loops[kl].line
        try:
            return self._loop(node, in_region, ind, label, kl, model)
        finally:
            self.line = saved
            self.restore(mark)

    def _loop(self, node, in_region: bool, ind: str, label: str | None, kl: str | None, model: list) -> str:
        is_tile = kl is not None and label != kl
        lm = self.d.mapping.loop(kl) if kl else None
        region = None
        if not in_region and lm is not None and not is_tile:
            if kl in self.array_heads:
                region = "array"
            elif lm.pipeline_ii:
                region = "pipeline"
            elif lm.unroll and lm.unroll > 1:
                region = "unroll"
        lab = f"{label}: " if label else ""
        inner_ind = ind + "    "
        sub: list = []
        kloop = self.d.tree.loops[kl] if kl and not is_tile else None
        # a data-dependent bound is a test the datapath evaluates every iteration (and once more to exit)
        test = kloop.cond_stmt if kloop is not None and kloop.cond_stmt is not None and (
            kloop.data_dependent or kloop.is_while) else None
        # a counter's test (`j < N` of a for left by break) is the loop control's own in a region too: not in the
        # scheduled body (it took a comparator slot there, II 2 on one comparator: an outside probe)
        scheduled_test = test is not None and (in_region or region is not None) and not costs.counter_test(test)
        if scheduled_test and not kloop.do_while:
            sub.append(("stmt", test))  # part of the scheduled body: a while loop's test comes first
        pre = ""  # a head's initialiser that reads an array (`j = p[i]`): a statement run once per entry
        if kloop is not None and kloop.init_stmts and not in_region and region != "array":
            at = self.site("block", False, stmts=list(kloop.init_stmts))
            model.extend(("stmt", st) for st in kloop.init_stmts)
            pre = f"{ind}__cyc += __T[{SLOTS * at.id}]; __cnt[{at.id}]++;\n"
        model.append(("loop", kl, is_tile, sub))
        after = [("stmt", test)] if scheduled_test and kloop.do_while else []  # a do-while's test follows its body
        spatial = lm is not None and not is_tile and bool(lm.spatial)
        if region == "array":
            return self.array(node, ind, label, kl, model)
        head, tail = self._head(node)  # TEST_MARK where a counter of the test's evaluations may go
        if not (test is not None and region is None and not in_region):
            head, tail = head.replace(TEST_MARK, ""), tail.replace(TEST_MARK, "")
        if not (test is not None and not in_region and region in (None, "pipeline", "unroll")):
            head, tail = head.replace(FAIL_MARK, ""), tail.replace(FAIL_MARK, "")
        var = kloop.var if kloop is not None else (
            _loop_var(node) if isinstance(node, c_ast.For) and node.init is not None else None)
        if var is not None and var in self.kernel_vars:
            self.scope.append(var)  # in scope in the body (the head's checks see the outer loops only)
        if region is not None:
            s = self.site("region", False, label=label, loop=kl, region=region,
                          stmts=[test] if scheduled_test else [])
            s.exits_by_test = test is not None and not kloop.do_while and (
                early_exit(node.stmt) is None or not costs.counter_test(test))
            fail = f" || (__x{s.id} = 1, 0)"  # the test ended it (not a break): its last evaluation is charged
            head, tail = head.replace(FAIL_MARK, fail), tail.replace(FAIL_MARK, fail)
            self.region_id = s.id
            if spatial:
                self.spatial_stack.append(kl)
            body = self.inside(s.children, lambda: self.block(_items(node), True, inner_ind, sub))
            sub.extend(after)
            if spatial:
                self.spatial_stack.pop()
            self.region_id = None
            s.body = sub
            n = f"__n{s.id}"
            return (f"{pre}{ind}{{\n{ind}  uint64_t {n} = 0; int __x{s.id} = 0;\n{ind}  {lab}{head} {{\n"
                    f"{inner_ind}{n}++;\n{body}{ind}  }}{tail}\n{ind}  __region({s.id}, {n}, __x{s.id});\n{ind}}}\n")
        in_array_band = kl is not None and any(kl in b for b in self.array_heads.values())
        s = self.site("loop", in_region, label=label, loop=kl, counted=self.lane0 is not None or not in_region,
                      free=in_array_band and not in_region)
        if in_region and self.lane0 is not None:  # inside a PE-array fold
            if spatial:
                self.spatial_stack.append(kl)
                self.lane0.append(f"{_loop_var(node)} == ({_init_text(node)})")
            items = _items(node)
            count = ""
            if not any(isinstance(_unlabel(it), LOOPS) for it in items):
                # innermost: one stream step per iteration of the first PE (every spatial index at its start)
                count = f"{inner_ind}if ({' && '.join(self.lane0) or '1'}) {self.array_counter}++;\n"
            body = self.inside(s.children, lambda: self.block(items, True, inner_ind, sub))
            sub.extend(after)
            if spatial:
                self.spatial_stack.pop()
                self.lane0.pop()
            return (f"{ind}__inv[{s.id}]++;\n{ind}{lab}{head} {{\n{inner_ind}__it[{s.id}]++;\n{count}{body}"
                    f"{ind}}}{tail}\n")
        if in_region:
            if spatial:
                self.spatial_stack.append(kl)
            body = self.inside(s.children, lambda: self.block(_items(node), True, inner_ind, sub))
            sub.extend(after)
            if spatial:
                self.spatial_stack.pop()
            return f"{ind}{lab}{head} {{\n{body}{ind}}}{tail}\n"
        count = f"__cnt[{s.id}]++; "
        if test is not None:  # __cnt counts the test's evaluations: a break or return skips the exit test
            s.stmts = [test]  # and each evaluation takes the test's schedule beyond the control cycle (__T[.+1])
            mark = f"__cnt[{s.id}]++, __cyc += __T[{SLOTS * s.id + 1}], "
            # the evaluation that ends the loop has no trip to share its control cycle with: one more
            # (before hlsim 0.64 none, so `while (n > 0)` of 0 trips ran its compare in 0 cycles: a probe)
            fail = f" || (__cyc += __T[{SLOTS * s.id + 3}], 0)"
            head, tail = head.replace(FAIL_MARK, fail), tail.replace(FAIL_MARK, fail)
            head, tail, count = head.replace(TEST_MARK, mark), tail.replace(TEST_MARK, mark), ""
        body = self.inside(s.children, lambda: self.block(_items(node), False, inner_ind, sub))
        return (f"{pre}{ind}__inv[{s.id}]++;\n{ind}{lab}{head} {{\n{inner_ind}__cyc += __T[{SLOTS * s.id}]; "
                f"__it[{s.id}]++; {count}\n{body}{ind}}}{tail}\n")

    def array(self, node, ind: str, label: str | None, kl: str, model: list) -> str:
        """A PE-array fold: the band's point loops run as written (every PE's work, for the outputs and
        the counts) while one counter takes a stream step per iteration of the first PE; on exit the
        fold adds fill + steps x II (``__fold``), and the nest its latency once (see ``instrument``)."""
        s = self.site("region", False, label=None, loop=kl, region="array")
        s.band = self.array_heads[kl]
        self.region_id = s.id
        n = f"__n{s.id}"
        self.lane0, self.array_counter = [], n
        sub: list = []
        text = self.inside(s.children, lambda: self.loop(node, True, ind + "  ", label, sub))
        self.lane0 = None
        self.region_id = None
        s.body = sub
        model.extend(sub)
        return f"{ind}{{\n{ind}  uint64_t {n} = 0;\n{text}{ind}  __fold({s.id}, {n});\n{ind}}}\n"

    def _head(self, node) -> tuple[str, str]:
        """The loop's text before its body's brace and after it: ``for (...)`` / ``while (...)`` and nothing,
        or ``do`` and `` while (...);`` (a do-while runs its body before the first test)."""
        if isinstance(node, c_ast.For):
            init = self.text(node.init) if node.init is not None else ""
            cond = f"({TEST_MARK}({self.text(node.cond)}){FAIL_MARK})" if node.cond is not None else ""
            nxt = self.text(node.next) if node.next is not None else ""
            return f"for ({init}; {cond}; {nxt})", ""
        if isinstance(node, c_ast.DoWhile):
            return "do", f" while ({TEST_MARK}({self.text(node.cond)}){FAIL_MARK});"
        return f"while ({TEST_MARK}({self.text(node.cond)}){FAIL_MARK})", ""


#: timing constants per site in ``T`` (``T[SLOTS * s .. SLOTS * s + 4]``, ``llmulator.timing``)
SLOTS = 5

TEST_MARK = "\x00"  # in a loop head from ``_head``: where ``__cnt[site]++, `` goes when the test is counted
FAIL_MARK = "\x01"  # ... after the test: what its failing evaluation (the one that ends the loop) also does


def _continues(node: c_ast.Node | None) -> bool:
    """Whether a branch side ends the pass over its block: a ``continue``, ``break`` or ``return`` of its own,
    directly or in a block or label of it (not inside a nested ``if``, whose own cond site says so, nor inside a
    loop, whose jumps are its own). What follows in the block runs on the other side's share only (before
    analytical 0.42 a ``break``'s breaking trip was charged the statements after it)."""
    node = _unlabel(node) if node is not None else None
    if isinstance(node, (c_ast.Continue, c_ast.Break, c_ast.Return)):
        return True
    if isinstance(node, c_ast.Compound):
        return any(_continues(it) for it in node.block_items or [])
    return False


def _unlabel(n: c_ast.Node) -> c_ast.Node:
    return n.stmt if isinstance(n, c_ast.Label) else n


def _loop_var(loop: c_ast.For) -> str | None:
    """The variable a ``for`` loop counts with (a fused loop's is the flattened index)."""
    init = loop.init
    if isinstance(init, c_ast.DeclList):
        return init.decls[0].name
    if isinstance(init, c_ast.Assignment):
        return _GEN.visit(init.lvalue)
    return None


def _init_text(loop: c_ast.For) -> str:
    """The first value of a ``for`` loop's variable, as C text."""
    init = loop.init
    if isinstance(init, c_ast.DeclList):
        return _GEN.visit(init.decls[0].init)
    return _GEN.visit(init.rvalue)


def _compound(n: c_ast.Node) -> c_ast.Node:
    return n if isinstance(n, c_ast.Compound) else c_ast.Compound([n])


def _items(loop) -> list[c_ast.Node]:
    st = loop.stmt
    if st is None:
        return []
    if isinstance(st, c_ast.Compound):
        return st.block_items or []
    return [st]


def _param_decl(ctype: str, name: str, shape: tuple[int, ...]) -> str:
    if len(shape) == 1:
        return f"{ctype} *restrict {name}"
    return f"{ctype} (*restrict {name})" + "".join(f"[{n}]" for n in shape[1:])


HARNESS = r"""
static int __read(const char *dir, const char *name, void *buf, size_t bytes) {
  char path[4096]; snprintf(path, sizeof path, "%s/%s.bin", dir, name);
  FILE *f = fopen(path, "rb"); if (!f) { fprintf(stderr, "hlsim: cannot open %s\n", path); return 1; }
  size_t got = fread(buf, 1, bytes, f); fclose(f);
  if (got != bytes) { fprintf(stderr, "hlsim: %s has %zu bytes, expected %zu\n", path, got, bytes); return 1; }
  return 0;
}
static int __write(const char *dir, const char *name, const void *buf, size_t bytes) {
  char path[4096]; snprintf(path, sizeof path, "%s/%s.out", dir, name);
  FILE *f = fopen(path, "wb"); if (!f) { fprintf(stderr, "hlsim: cannot write %s\n", path); return 1; }
  fwrite(buf, 1, bytes, f); fclose(f); return 0;
}
int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: sim INPUT_DIR TIMING_FILE COUNTERS_FILE\n"); return 2; }
  FILE *tf = fopen(argv[2], "rb");
  if (!tf) { fprintf(stderr, "hlsim: cannot open timing file\n"); return 2; }
  __T = (double *)__alloc(sizeof(double) * __SLOTS * __NSITES);
  if (fread(__T, sizeof(double), __SLOTS * __NSITES, tf) != __SLOTS * __NSITES) {
    fprintf(stderr, "hlsim: bad timing file\n"); return 2;
  }
  fclose(tf);
"""


def instrument(design: Design) -> Instrumented:
    """The instrumented translation unit of a design (structure only: no timing constants)."""
    d = design
    items, tile_labels = mapped_kernel(d)
    em = _Emitter(d)
    em.tile_of = tile_labels
    body = []
    nest_loops: list[str | None] = []
    trees: list[list[Site]] = []
    for it in items:
        if isinstance(it, c_ast.Pragma):
            continue
        model: list = []
        first = len(em.sites)
        em.into = []
        trees.append(em.into)
        # (top-level declarations stay in scope for the rest of the kernel)
        text = em.block([it], False, "  ", model, keep_scope=True) if _simple(it) else em.stmt(it, False, "  ",
                                                                                                model=model)
        # a PE-array nest pays its pipeline latency (operand fetch to last write-back) once
        drain = "".join(f"  __cyc += __T[{SLOTS * s.id + 2}];\n" for s in em.sites[first:]
                        if s.region == "array")
        body.append(f"  __t0 = __cyc;\n{text}{drain}  __nest[{em.nest}] += __cyc - __t0;\n")
        top = next((e[1] for e in model if e[0] == "loop" and e[1]), None)
        if top is not None:
            loop = d.tree.loops[top]
            while loop.parent is not None:
                loop = loop.parent
            top = loop.label
        nest_loops.append(top)
        em.nest += 1
    if em.returns:
        body.append("  __done: ;\n")
    w = d.workload
    sizes = d.sizes
    params, temps, names = [], [], []
    for name, a in w.arrays.items():
        shape = w.shape(name, sizes)
        ctype = C_TYPES[a.dtype]
        if a.role == "temp":
            count = 1
            for n in shape:
                count *= n
            ptr = f"(*{name})" + "".join(f"[{n}]" for n in shape[1:])
            temps.append(f"  {ctype} {ptr} = __alloc(sizeof({ctype}) * {count}u);\n")
        else:
            params.append(_param_decl(ctype, name, shape))
            names.append(name)
    lines = ["#include <stdint.h>", "#include <stdio.h>", "#include <stdlib.h>", "#include <string.h>",
             "#include <math.h>", "#ifndef min", "#define min(a, b) ((a) < (b) ? (a) : (b))", "#endif",
             "#ifndef max", "#define max(a, b) ((a) > (b) ? (a) : (b))", "#endif"]
    # sizes as enumeration constants, not macros: a parameter named like a harness variable stays harmless
    if sizes:
        lines.append("enum { " + ", ".join(f"{p} = {v}" for p, v in sizes.items()) + " };")
    for sname, v in w.scalars.items():
        lines.append(f"static const {C_TYPES[v['dtype']]} {sname} = {float(v['value'])!r};")
    n_sites = max(1, len(em.sites))
    lines += [f"#define __NSITES {n_sites}", f"#define __NNESTS {max(1, em.nest)}", f"#define __SLOTS {SLOTS}",
              "static double *__T; static double __cyc, __t0; static double __nest[__NNESTS];",
              "static uint64_t __cnt[__NSITES], __it[__NSITES], __inv[__NSITES];",
              *element_marks.declarations(len(names)),
              "static void *__alloc(size_t bytes) {",
              "  void *p = calloc(1, bytes ? bytes : 1);",
              "  if (!p) { fprintf(stderr, \"hlsim: out of memory allocating %zu bytes\\n\", bytes); exit(3); }",
              "  return p;", "}",
              "static void __region(int __s, uint64_t __n, int __x) {",
              "  const double *__r = __T + __SLOTS * __s;",
              "  double __g = ceil((double)__n / __r[2]), __end = __n ? __r[0] + (__g - 1.0) * __r[1] : 0.0;",
              "  /* a test the data decide: the one that ends the loop starts when the next group would */",
              "  double __t = __n ? __r[4] : __r[3];",
              "  if (__x && __r[3] > 0.0 && __n % (uint64_t)__r[2] == 0 && __g * __r[1] + __t > __end)",
              "    __end = __g * __r[1] + __t;",
              "  __cyc += __end;",
              "  __it[__s] += __n; __inv[__s]++; __cnt[__s]++;", "}",
              "__attribute__((noreturn, cold, noinline))",
              "static void __oob(int __c, long long __x, const long long *__v, int __nv) {",
              "  fprintf(stderr, \"hlsim-oob %d %lld\", __c, __x);",
              "  for (int __k = 0; __k < __nv; __k++) fprintf(stderr, \" %lld\", __v[__k]);",
              "  fprintf(stderr, \"\\n\"); fflush(stderr); _Exit(5);", "}",
              "/* bounds check of one subscript: check id, extent, index, then the loop variables to report */",
              "#define __CHK(c, n, x, ...) ({ long long __x##c = (long long)(x); \\",
              "  if (__builtin_expect((unsigned long long)__x##c >= (unsigned long long)(n), 0)) { \\",
              "    const long long __v##c[] = {0, ##__VA_ARGS__}; \\",
              "    __oob(c, __x##c, __v##c + 1, (int)(sizeof __v##c / sizeof __v##c[0]) - 1); } \\",
              "  __x##c; })",
              "static void __fold(int __s, uint64_t __n) {",
              "  if (__n) __cyc += __T[__SLOTS * __s] + ((double)__n - 1.0) * __T[__SLOTS * __s + 1];",
              "  __it[__s] += __n; __inv[__s]++; __cnt[__s]++;", "}",
              f"static void kernel({', '.join(params)}) {{"]
    src = "\n".join(lines) + "\n" + "".join(temps) + "".join(body) + "}\n" + HARNESS
    main_lines = []
    for name in names:
        a = w.arrays[name]
        shape = w.shape(name, sizes)
        count = 1
        for n in shape:
            count *= n
        ctype = C_TYPES[a.dtype]
        main_lines.append(f"  {ctype} *{name} = ({ctype} *)__alloc(sizeof({ctype}) * {count}u);")
        main_lines += element_marks.setup(names.index(name), name, ctype, count)
        if a.role in ("in", "inout"):
            main_lines.append(f"  if (__read(argv[1], \"{name}\", {name}, sizeof({ctype}) * {count}u)) return 2;")
    casts = []
    for name in names:
        a = w.arrays[name]
        shape = w.shape(name, sizes)
        ctype = C_TYPES[a.dtype]
        casts.append(name if len(shape) == 1 else f"({ctype} (*)" + "".join(f"[{n}]" for n in shape[1:]) + f"){name}")
    main_lines.append(f"  kernel({', '.join(casts)});")
    for name in names:
        a = w.arrays[name]
        if a.role in ("out", "inout"):
            shape = w.shape(name, sizes)
            count = 1
            for n in shape:
                count *= n
            main_lines.append(f"  if (__write(argv[1], \"{name}\", {name}, sizeof({C_TYPES[a.dtype]}) * {count}u)) "
                              "return 2;")
    main_lines += [
        "  FILE *__cf = fopen(argv[3], \"w\"); if (!__cf) { fprintf(stderr, \"hlsim: cannot write counters\\n\"); "
        "return 2; }",
        "  fprintf(__cf, \"cycles %.17g\\n\", __cyc);",
        "  for (int __k = 0; __k < __NNESTS; __k++) fprintf(__cf, \"nest %d %.17g\\n\", __k, __nest[__k]);",
        "  for (int __s = 0; __s < __NSITES; __s++) fprintf(__cf, \"site %d %llu %llu %llu\\n\", __s, "
        "(unsigned long long)__cnt[__s], (unsigned long long)__it[__s], (unsigned long long)__inv[__s]);",
        *element_marks.report(len(names)),
        "  fclose(__cf);", "  return 0;", "}"]
    src += "\n".join(main_lines) + "\n"
    return Instrumented(src, em.sites, max(1, em.nest), names, nest_loops, trees, em.checks)


def _simple(node) -> bool:
    return isinstance(node, (c_ast.Assignment, c_ast.UnaryOp, c_ast.FuncCall, c_ast.Decl))


_MEMO: dict[tuple, tuple[object, Instrumented]] = {}


def instrumented(design: Design) -> Instrumented:
    """``instrument(design)``, memoised on what the instrumented program is made of (kernel,
    declarations, sizes, mapping) — not on the architecture, whose timing constants are computed
    separately — so hardware sweeps and repeated estimates of one design render it once. Keyed by
    content, not by the design's identity (ids of discarded designs are reused by Python); by where
    the kernel starts in its file (the bounds checks carry their statements' lines); and by the loop
    tree the result was built from: its ``trees`` are that tree's nodes, which the timing model
    matches by ``id()`` against the design's own tree (``llmulator.timing``). Two designs of the same
    kernel read through two paths (``workloads/x.yaml`` and the library's resolved path) have two
    trees; sharing one entry made the second design's branches unrecognised, and its cycles depend
    on which design came first in the process. The entry holds the tree, so its id is not reused."""
    w = design.workload
    where = w.source_map.locate(("workload", "kernel")) if w.source_map is not None else None
    key = (w.kernel, repr(w.arrays), repr(w.scalars), tuple(sorted(design.sizes.items())), repr(design.mapping),
           where, id(design.tree))
    hit = _MEMO.get(key)
    if hit is None or hit[0] is not design.tree:
        if len(_MEMO) >= 256:
            _MEMO.pop(next(iter(_MEMO)))
        hit = _MEMO[key] = (design.tree, instrument(design))
    return hit[1]


def _is_array(n) -> bool:
    return isinstance(n, c_ast.Decl) and isinstance(n.type, c_ast.ArrayDecl)
