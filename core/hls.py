"""The mapping applied to the kernel's C: the pycparser AST rewriter behind HLS C and hlsim.

The workload's kernel is re-parsed with pycparser and the design's mapping is applied on the AST
(strip-mining, tile-loop order, pipeline/unroll pragmas, PE-array binding, fused loops).
:func:`mapped_kernel` gives the rewritten block items (hlsim instruments them, the gnn baseline reads
them); :func:`mapped_body` the C text of the body, which :mod:`llmulator.render` wraps into an HLS
function and a translation unit.

Mapping semantics of the rendered code
--------------------------------------
``tile: T`` on a ``for`` loop whose exact trip count is larger than ``T`` (or
is not static: data-dependent or triangular bounds) strip-mines it into a tile
loop ``L_x_tile: for (int x_t = LO; x_t < HI; x_t += T)`` and the point loop
``L_x: for (int x = x_t; x < min(x_t + T, HI); x++)`` (``x < x_t + T`` when
``T`` divides the trip count); steps other than 1 and descending loops are
handled (``max`` bounds for the latter). Loop primitives (pipeline, unroll,
spatial) apply to the point loop. Where tile and point loops go is
:mod:`llmulator.nest`'s one definition, shared with hlsim and the analytical
model: a perfect band with a strip-mined loop or an ``order`` becomes its tile
loops then its point loops, both in ``order`` followed by the band's other
loops in kernel order; a triangular band keeps the kernel's nesting (and
refuses another order). ``tile`` on a ``while`` loop is ignored (the
cross-file checks reject it).
"""

from __future__ import annotations

import copy
import functools
import pickle

from pycparser import c_ast, c_generator, c_parser

from . import nest
from .c_names import LOOPS
from .c_switch import lower_switches
from .kernel import C_TYPES, strip_comments

_PRELUDE = (
    "typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t; "
    "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t; "
    "typedef float _Float16;\n"
)



class Comment(c_ast.Node):
    """A ``/* text */`` line in a block (pycparser has no comment node)."""

    __slots__ = ("text", "coord", "__weakref__")
    attr_names = ("text",)

    def __init__(self, text: str, coord=None):
        self.text = text
        self.coord = coord

    def children(self):
        return ()

    def __iter__(self):
        return iter(())


class _Gen(c_generator.CGenerator):
    """CGenerator with ``L: for (...) {`` on one line and braces K&R style."""

    def __init__(self):
        super().__init__(reduce_parentheses=True)

    def visit_Comment(self, n: Comment) -> str:
        return "/* " + n.text.replace("*/", "* /") + " */"

    def _stmts(self, items) -> str:
        return "".join(self._generate_stmt(x) for x in items or [])

    def _body(self, st) -> str:
        if isinstance(st, c_ast.Compound):
            self.indent_level += 2
            inner = self._stmts(st.block_items)
            self.indent_level -= 2
            return " {\n" + inner + self._make_indent() + "}\n"
        if st is None:
            return ";\n"
        return "\n" + self._generate_stmt(st, add_indent=True)

    def visit_Label(self, n: c_ast.Label) -> str:
        return n.name + ": " + self._generate_stmt(n.stmt).lstrip(" ").rstrip("\n")

    def visit_For(self, n: c_ast.For) -> str:
        init = self.visit(n.init) if n.init is not None else ""
        cond = " " + self.visit(n.cond) if n.cond is not None else ""
        nxt = " " + self.visit(n.next) if n.next is not None else ""
        return f"for ({init};{cond};{nxt})" + self._body(n.stmt).rstrip("\n")

    def visit_While(self, n: c_ast.While) -> str:
        return f"while ({self.visit(n.cond)})" + self._body(n.stmt).rstrip("\n")

    def visit_DoWhile(self, n: c_ast.DoWhile) -> str:
        return "do" + self._body(n.stmt).rstrip("\n") + f" while ({self.visit(n.cond)});"

    def visit_If(self, n: c_ast.If) -> str:
        s = f"if ({self.visit(n.cond)})" + self._body(n.iftrue)
        if n.iffalse is not None:
            s += self._make_indent() + "else" + self._body(n.iffalse)
        return s


def _unbraced(st) -> list[c_ast.Node]:
    """The items of a loop's body with bare blocks opened, as the analysis reads them (``kernel_parse._stmt``): a
    band's inner loop inside `{ }` was kept in its block as an item of the outer loop and rebuilt beside it, so
    the loop ran twice and the program did not compile (duplicate label; an outside probe)."""
    out: list[c_ast.Node] = []
    for it in (st.block_items or []) if isinstance(st, c_ast.Compound) else [st]:
        out.extend(_unbraced(it) if isinstance(it, c_ast.Compound) else [it])
    return out


def _parse_kernel(w) -> c_ast.Compound:
    decls = [f"int {p};" for p in w.parameters]
    decls += [f"{C_TYPES[v['dtype']]} {s};" for s, v in w.scalars.items()]
    decls += [f"{C_TYPES[a.dtype]} {a.name}{'[1]' * len(a.shape)};" for a in w.arrays.values()]
    src = _PRELUDE + " ".join(decls) + "\nvoid __kernel(void) {\n" + strip_comments(w.kernel) + "\n}\n"
    return pickle.loads(_parsed_body(src))  # the rewriter edits its AST: each design gets a fresh copy


@functools.lru_cache(maxsize=256)
def _parsed_body(src: str) -> bytes:
    """Parsing is most of rendering's cost and a DSE sweep or a dataset renders one kernel many times:
    the parsed AST is kept pickled (unpickling a copy is ~10x faster than ``copy.deepcopy``)."""
    body = c_parser.CParser().parse(src, filename="<kernel>").ext[-1].body
    lower_switches(body, _unlowered)  # the if chain the loop tree reads (llmulator.c_switch), for hlsim too
    return pickle.dumps(body)


def _unlowered(node, msg: str, *_) -> Exception:
    return ValueError(f"{msg} (line {node.coord.line if node is not None and node.coord else '?'})")


def _const(v: int) -> c_ast.Constant:
    return c_ast.Constant("int", str(v))


def _offset(e: c_ast.Node, k: int) -> c_ast.Node:
    """``e + k`` (a copy), folded when ``e`` is an integer literal."""
    if isinstance(e, c_ast.Constant) and e.type == "int":
        try:
            return _const(int(e.value, 0) + k)
        except ValueError:
            pass
    return c_ast.BinaryOp("+" if k > 0 else "-", copy.deepcopy(e), _const(abs(k)))


def _int_decl(name: str, init: c_ast.Node) -> c_ast.DeclList:
    t = c_ast.TypeDecl(name, [], None, c_ast.IdentifierType(["int"]))
    return c_ast.DeclList([c_ast.Decl(name, [], [], [], [], t, init, None)])


class _Rewriter:
    """Applies a design's mapping to a fresh AST of its kernel."""

    def __init__(self, design, comments: bool = True, label_all: bool = False):
        self.d = design
        self.m = design.mapping
        self.tree = design.tree
        self.comments = comments
        self.label_all = label_all  # every loop keeps its label, `_L1:` for one the kernel leaves unlabelled
        self.body = _parse_kernel(design.workload)
        self.labels: dict[int, str] = {}  # id(loop node) -> label (as kernel.analyze names them)
        self.nodes: dict[str, c_ast.Node] = {}
        self.explicit: set[str] = set()
        self._label_loops()
        names: set[str] = set(design.workload.parameters) | set(design.workload.scalars) | set(design.workload.arrays)

        class V(c_ast.NodeVisitor):
            def visit_ID(self, node):
                names.add(node.name)

            def visit_Decl(self, node):
                names.add(node.name)
                self.generic_visit(node)
        V().visit(self.body)
        self.used_names = names
        self.used_labels = set(self.explicit)
        self.tile_vars: dict[str, str] = {}
        self.tile_labels: dict[str, str] = {}
        self.fused_names: dict[str, str] = {}
        # bands rebuilt as tile loops then point loops (llmulator.nest): head label -> band
        self.bands: dict[str, list[str]] = {}
        for loop in self.tree.loops.values():
            if nest.band_head(self.tree, loop.label) is loop:
                band = [lp.label for lp in loop.band()]
                if len(band) > 1 and nest.needs_rebuild(design, band):
                    self.bands[loop.label] = band

    # -- labels and names

    def _label_loops(self) -> None:
        auto = 0

        def visit(node, label=None):
            nonlocal auto
            if isinstance(node, c_ast.Label):
                self.explicit.add(node.name)
                visit(node.stmt, node.name)
            elif isinstance(node, LOOPS):
                if label is None:
                    auto += 1
                    label = f"_L{auto}"
                self.labels[id(node)] = label
                self.nodes[label] = node
                visit(node.stmt)
            elif isinstance(node, c_ast.Compound):
                for it in node.block_items or []:
                    visit(it)
            elif isinstance(node, c_ast.If):
                visit(node.iftrue)
                visit(node.iffalse)
        visit(self.body)
        if set(self.nodes) != set(self.tree.loops):  # pragma: no cover - kernel.analyze and this walk disagree
            raise RuntimeError(f"loop labels differ from the analysis: {sorted(self.nodes)} vs "
                               f"{sorted(self.tree.loops)}")

    def _fresh(self, base: str, used: set[str]) -> str:
        name = base
        while name in used:
            name += "_"
        used.add(name)
        return name

    def tile_var(self, label: str) -> str:
        if label not in self.tile_vars:
            self.tile_vars[label] = self._fresh(self.tree.loops[label].var + "_t", self.used_names)
        return self.tile_vars[label]

    def tile_label(self, label: str) -> str:
        if label not in self.tile_labels:
            self.tile_labels[label] = self._fresh(label + "_tile", self.used_labels)
        return self.tile_labels[label]

    # -- mapping queries

    def exact_trips(self, label: str) -> int | None:
        return nest.exact_trips(self.d, label)

    def strip(self, label: str) -> bool:
        """Whether the loop is strip-mined into a tile loop and a point loop."""
        return isinstance(self.nodes[label], c_ast.For) and nest.strip_mined(self.d, label)

    def mapped(self, label: str) -> bool:
        lm = self.m.loop(label)
        return (any(v is not None for v in (lm.tile, lm.spatial, lm.unroll, lm.pipeline_ii, lm.reduction))
                or bool(lm.fuse) or label in self.m.order)

    def pragmas(self, label: str) -> list[c_ast.Node]:
        lm = self.m.loop(label)
        out: list[c_ast.Node] = []
        if lm.pipeline_ii:
            out.append(c_ast.Pragma(f"HLS PIPELINE II={lm.pipeline_ii}"))
        if lm.spatial:
            out.append(c_ast.Pragma("HLS UNROLL"))
            if self.comments:
                out.append(Comment(f"spatial: PE {lm.spatial}"))
        elif lm.unroll:
            out.append(c_ast.Pragma(f"HLS UNROLL factor={lm.unroll}"))
        if lm.reduction == "tree" and self.comments:
            out.append(Comment("reduction: tree (each unrolled copy keeps a partial sum)"))
        return out

    # -- rewriting

    def block(self, items) -> list[c_ast.Node]:
        out: list[c_ast.Node] = []
        for it in items or []:
            out.extend(self.stmt(it))
        return out

    def one(self, node):
        if node is None:
            return None
        items = self.stmt(node)
        return items[0] if len(items) == 1 else c_ast.Compound(items)

    def stmt(self, node) -> list[c_ast.Node]:
        if isinstance(node, c_ast.Label):
            if isinstance(node.stmt, LOOPS):
                return [self.loop(node.stmt)]
            return [c_ast.Label(node.name, self.one(node.stmt))]
        if isinstance(node, LOOPS):
            return [self.loop(node)]
        if isinstance(node, c_ast.Compound):
            return [c_ast.Compound(self.block(node.block_items))]
        if isinstance(node, c_ast.If):
            return [c_ast.If(node.cond, self.one(node.iftrue), self.one(node.iffalse))]
        return [node]

    def body_items(self, node) -> list[c_ast.Node]:
        st = node.stmt
        if st is None:
            return []
        if isinstance(st, c_ast.Compound):
            return self.block(st.block_items)
        return self.stmt(st)

    def wrap(self, label: str, node) -> c_ast.Node:
        return c_ast.Label(label, node) if (label in self.explicit or self.mapped(label) or self.label_all) else node

    def loop(self, node) -> c_ast.Node:
        label = self.labels[id(node)]
        if label in self.bands:
            return self.rebuild_band(self.bands[label])
        items = self.pragmas(label) + self.body_items(node)
        if self.strip(label):
            return self.tile_loop(label, [self.point_loop(label, items)])
        return self.whole_loop(label, items)

    def whole_loop(self, label: str, items: list[c_ast.Node]) -> c_ast.Node:
        new = copy.copy(self.nodes[label])
        new.stmt = c_ast.Compound(items)
        return self.wrap(label, new)

    def _parts(self, label: str):
        node = self.nodes[label]
        cond = node.cond
        init = node.init
        if isinstance(init, c_ast.DeclList):
            lo = init.decls[0].init
        else:
            lo = init.rvalue
        return node, cond.op, cond.right, lo

    def tile_loop(self, label: str, items: list[c_ast.Node]) -> c_ast.Node:
        node, op, bound, lo = self._parts(label)
        step = self.tree.loops[label].step
        tv = self.tile_var(label)
        span = self.m.loop(label).tile * abs(step)
        nxt = c_ast.Assignment("+=" if step > 0 else "-=", c_ast.ID(tv), _const(span))
        loop = c_ast.For(_int_decl(tv, copy.deepcopy(lo)), c_ast.BinaryOp(op, c_ast.ID(tv), copy.deepcopy(bound)),
                         nxt, c_ast.Compound(items))
        return c_ast.Label(self.tile_label(label), loop)

    def point_loop(self, label: str, items: list[c_ast.Node]) -> c_ast.Node:
        node, op, bound, _lo = self._parts(label)
        loop = self.tree.loops[label]
        tile = self.m.loop(label).tile
        tv, var = self.tile_var(label), loop.var
        span = tile * abs(loop.step)
        init = copy.deepcopy(node.init)
        if isinstance(init, c_ast.DeclList):
            init.decls[0].init = c_ast.ID(tv)
        else:
            init.rvalue = c_ast.ID(tv)
        exact = self.exact_trips(label)
        full = exact is not None and exact % tile == 0
        if loop.step > 0:
            edge = c_ast.BinaryOp("+", c_ast.ID(tv), _const(span))
            limit = copy.deepcopy(bound) if op == "<" else _offset(bound, 1)
            cmp, fn = "<", "min"
        else:
            edge = c_ast.BinaryOp("-", c_ast.ID(tv), _const(span))
            limit = copy.deepcopy(bound) if op == ">" else _offset(bound, -1)
            cmp, fn = ">", "max"
        rhs = edge if full else c_ast.FuncCall(c_ast.ID(fn), c_ast.ExprList([edge, limit]))
        new = c_ast.For(init, c_ast.BinaryOp(cmp, c_ast.ID(var), rhs), copy.deepcopy(node.next),
                        c_ast.Compound(items))
        return c_ast.Label(label, new)

    def rebuild_band(self, band: list[str]) -> c_ast.Node:
        """The band as its mapped nest (``llmulator.nest.mapped_band``): tile loops, then point loops."""
        # items between the band's loops that the analysis ignores (pragmas, plain declarations)
        own: dict[str, list[c_ast.Node]] = {}
        for lb in band[:-1]:
            own[lb] = [it for it in _unbraced(self.nodes[lb].stmt) if not isinstance(it, (c_ast.Label, *LOOPS))]
        items = self.body_items(self.nodes[band[-1]])
        for kind, lb in reversed(nest.mapped_band(self.d, band)):
            group = nest.members(self.d, lb)
            if len(group) > 1:
                if kind == "tile":
                    items = [self.fused_loop(lb, "tile", items)]
                else:
                    body = self.pragmas(lb) + self.fused_decls(lb) + [x for m in group for x in own.get(m, [])]
                    items = [self.fused_loop(lb, "point" if self.strip(lb) else "whole", body + items)]
                continue
            if kind == "tile":
                items = [self.tile_loop(lb, items)]
                continue
            body = self.pragmas(lb) + own.get(lb, []) + items
            items = [self.point_loop(lb, body) if self.strip(lb) else self.whole_loop(lb, body)]
        return items[0]

    # -- fused loops (``fuse``): one loop over the product of the members' trips

    def fused_var(self, head: str) -> str:
        if head not in self.tile_vars:  # the flattened index, e.g. p_q; its tile variable p_q_t
            name = self._fresh("_".join(self.tree.loops[m].var for m in nest.members(self.d, head)), self.used_names)
            self.tile_vars[head] = self._fresh(name + "_t", self.used_names)
            self.fused_names[head] = name
        return self.fused_names[head]

    def fused_loop(self, head: str, kind: str, items: list[c_ast.Node]) -> c_ast.Node:
        f = self.fused_var(head)
        total = nest.exact_trips(self.d, head)
        tile = self.m.loop(head).tile
        tv = self.tile_vars[head]
        if kind == "tile":
            loop = c_ast.For(_int_decl(tv, _const(0)), c_ast.BinaryOp("<", c_ast.ID(tv), _const(total)),
                             c_ast.Assignment("+=", c_ast.ID(tv), _const(tile)), c_ast.Compound(items))
            return c_ast.Label(self.tile_label(head), loop)
        if kind == "point":
            edge = c_ast.BinaryOp("+", c_ast.ID(tv), _const(tile))
            hi = edge if total % tile == 0 else c_ast.FuncCall(c_ast.ID("min"), c_ast.ExprList([edge, _const(total)]))
            lo: c_ast.Node = c_ast.ID(tv)
        else:
            hi, lo = _const(total), _const(0)
        loop = c_ast.For(_int_decl(f, lo), c_ast.BinaryOp("<", c_ast.ID(f), hi), c_ast.UnaryOp("p++", c_ast.ID(f)),
                         c_ast.Compound(items))
        return c_ast.Label(head, loop)

    def fused_decls(self, head: str) -> list[c_ast.Node]:
        """``const int x = lo + step * (f / inner % n);`` for each member, from the flattened index f."""
        f = self.fused_var(head)
        group = nest.members(self.d, head)
        out: list[c_ast.Node] = []
        inner = 1
        for k, m in reversed(list(enumerate(group))):
            n = int(self.d.trips(m))
            loop = self.tree.loops[m]
            e: c_ast.Node = c_ast.ID(f)
            if inner > 1:
                e = c_ast.BinaryOp("/", e, _const(inner))
            if k > 0:
                e = c_ast.BinaryOp("%", e, _const(n))
            if loop.step != 1:
                e = c_ast.BinaryOp("*", _const(loop.step), e)
            lo = self._parts(m)[3]
            if not (isinstance(lo, c_ast.Constant) and lo.value == "0"):
                e = c_ast.BinaryOp("+", copy.deepcopy(lo), e)
            t = c_ast.TypeDecl(loop.var, ["const"], None, c_ast.IdentifierType(["int"]))
            out.insert(0, c_ast.Decl(loop.var, ["const"], [], [], [], t, e, None))
            inner *= n
        return out

    def render(self) -> str:
        gen = _Gen()
        gen.indent_level = 2
        return "".join(gen._generate_stmt(n) for n in self.block(self.body.block_items))


def mapped_kernel(design) -> tuple[list[c_ast.Node], dict[str, str]]:
    """The kernel body with the mapping applied, as pycparser block items (no comments),
    and the tile-loop label of every strip-mined loop (point-loop label -> tile-loop label).

    Profilers instrument this AST instead of re-implementing the mapping. Every loop carries its label, the
    one ``kernel.analyze`` gives an unlabelled loop (``_L1``) included, so a profiler finds each loop of the
    analysis: before hlsim 0.51 an unlabelled inner loop of a pipelined loop reached the instrumentation
    without one, was taken as one trip, and the schedule held one copy of its body (4 divides an iteration
    on one divider at II 1: hlsim's own bound check failed, the analytical model reported half the cycles
    the divider needs; an outside probe).
    """
    rw = _Rewriter(design, comments=False, label_all=True)
    items = rw.block(rw.body.block_items)
    return items, dict(rw.tile_labels)


def mapped_body(design, comments: bool = True) -> str:
    """The kernel body with the mapping applied, as C text indented for a function body (with
    ``comments``: the spatial-binding and reduction remarks as ``/* ... */`` lines)."""
    return _Rewriter(design, comments=comments).render()
