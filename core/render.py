"""Rendering a Design: HLS C with the mapping applied, and the text pieces prompts are made of.

* :func:`hls_c` -- a complete C translation unit in Vitis-HLS style: the
  workload's kernel, re-parsed with pycparser, with the mapping applied on the
  AST (strip-mining, tile-loop order, pipeline/unroll pragmas, PE-array
  binding) and emitted with a :class:`pycparser.c_generator.CGenerator`;
  interface, storage, partition and dataflow pragmas from placement,
  partition and dataflow. It compiles with ``gcc -std=c11``.
* :func:`prompt` -- the dataset prompt: a compact, digit-isolated summary of a
  design (hardware, mapping, sizes, code and inputs sections; ``templates/prompt.j2``)
  that ``llmulator synth`` stores with every sample (the ``prompt`` column). It is
  *not* what a model reads: an estimator owns its model's prompt format (the llm
  plugin's ``llmulator_plugins.llm.text.model_prompt``, which the checkpoint records),
  and ``llmulator render --prompt`` prints exactly that text
  (``llmulator.hookspecs.PromptReader``).
* The public pieces prompts are built from: :func:`isolate_digits` (every numeric
  literal digit by digit), :func:`num` (a number as prompts write it),
  :func:`compact` (whitespace squeezed), :func:`kernel_function` (the mapped kernel
  as an HLS function) and :func:`input_lines` (the input description, one line per
  array or structure).

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
import re
from pathlib import Path
from typing import Any

from pycparser import c_ast, c_generator, c_parser

from . import nest
from .expr import ExprError, evaluate
from .inputs import default_description, resolve_inputs
from .kernel import C_TYPES, strip_comments


@functools.cache
def _env():
    """The templates' environment, made on first use: estimating a design renders no template (jinja2 is
    imported only here)."""
    import jinja2
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).resolve().parent / "templates")),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        autoescape=False)


_PRELUDE = (
    "typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t; "
    "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t; "
    "typedef float _Float16;\n"
)

_LOOPS = (c_ast.For, c_ast.While, c_ast.DoWhile)


# ----------------------------------------------------------------------------------------------
# digit isolation

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|(?P<num>\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.])*)")
_SIGN_CONTEXT = re.compile(r"[A-Za-z0-9_)\]]")


def isolate_digits(text: str) -> str:
    """Write every numeric literal with each character as its own space-separated token.

    ``-128`` -> ``- 1 2 8``, ``3.75`` -> ``3 . 7 5``, ``1e-5`` -> ``1 e - 5``,
    ``0.2f`` -> ``0 . 2 f``, ``16x16`` -> ``1 6 x 1 6``.

    A numeric literal is a C preprocessing number: it starts with a digit (or
    ``.`` and a digit) that is not part of an identifier, and runs on over
    letters, digits, ``_``, ``.`` and a sign after an exponent letter. Digits
    inside identifiers (``L_k2``, ``int32_t``, ``x2``) are left alone, so
    names keep their meaning. A ``+`` or ``-`` sign written directly before a
    number, where it cannot be a binary operator (not after an identifier,
    number, ``)`` or ``]``), is separated from it: ``[-1, 2]`` -> ``[- 1, 2]``,
    while ``j-1`` stays ``j-1``. Nothing else changes, and applying the
    function to its own output changes nothing (idempotent).
    """

    def sub(m: re.Match) -> str:
        num = m.group("num")
        if num is None:
            return m.group(0)
        out = " ".join(num)
        i = m.start()
        if i > 0 and text[i - 1] in "+-" and (i == 1 or not _SIGN_CONTEXT.match(text[i - 2])):
            out = " " + out
        return out

    return _TOKEN.sub(sub, text)


# ----------------------------------------------------------------------------------------------
# C generation


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
    return pickle.dumps(c_parser.CParser().parse(src, filename="<kernel>").ext[-1].body)


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

    def __init__(self, design, comments: bool = True):
        self.d = design
        self.m = design.mapping
        self.tree = design.tree
        self.comments = comments
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
            elif isinstance(node, _LOOPS):
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
            if isinstance(node.stmt, _LOOPS):
                return [self.loop(node.stmt)]
            return [c_ast.Label(node.name, self.one(node.stmt))]
        if isinstance(node, _LOOPS):
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
        return c_ast.Label(label, node) if (label in self.explicit or self.mapped(label)) else node

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
            st = self.nodes[lb].stmt
            items = (st.block_items or []) if isinstance(st, c_ast.Compound) else [st]
            own[lb] = [it for it in items if not isinstance(it, (c_ast.Label, *_LOOPS))]
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


# ----------------------------------------------------------------------------------------------
# HLS C


def num(x: Any) -> str:
    """A number as prompts write it: integers (and integral floats below 1e15) without a decimal point,
    other floats as ``repr``, booleans as ``true``/``false``."""
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, int):
        return str(x)
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


def _c_value(dtype: str, value: Any) -> str:
    if dtype.startswith("fp"):
        text = repr(float(value))
        return text + "f" if dtype == "fp32" else text
    return str(int(value))


def _dims(shape) -> str:
    return "".join(f"[{str(d).replace('//', '/')}]" for d in shape)


def _array_info(d) -> list[dict[str, Any]]:
    w, m = d.workload, d.mapping
    out = []
    for name, a in w.arrays.items():
        level_name = d.placement(name)
        level = d.arch.level(level_name)
        kind = level.kind if level is not None else "dram"
        ctype = C_TYPES[a.dtype]
        decl = f"{ctype} {name}{_dims(a.shape)}"
        part = m.partition.get(name)
        out.append({
            "name": name, "role": a.role, "temp": a.role == "temp",
            "decl": ("const " if a.role == "in" else "") + decl,
            "level": level_name, "kind": kind,
            "ram": "ram_2p" if level is not None and level.ports >= 2 else "ram_1p",
            "impl": "lutram" if kind == "regfile" else "bram",
            "partition": None if part is None else {"type": part.type, "factor": part.factor, "dim": part.dim},
        })
    return out


def mapped_kernel(design) -> tuple[list[c_ast.Node], dict[str, str]]:
    """The kernel body with the mapping applied, as pycparser block items (no comments),
    and the tile-loop label of every strip-mined loop (point-loop label -> tile-loop label).

    Profilers instrument this AST instead of re-implementing the mapping.
    """
    rw = _Rewriter(design, comments=False)
    items = rw.block(rw.body.block_items)
    return items, dict(rw.tile_labels)


def kernel_function(d, comments: bool) -> str:
    """The design's kernel as an HLS C function with the mapping applied (pragmas included; with
    ``comments``, the spatial-binding and reduction remarks too), without a trailing newline."""
    body = _Rewriter(d, comments=comments).render()
    return _env().get_template("hls_function.c.j2").render(
        fname=f"{_c_ident(d.workload.name)}_kernel", arrays=_array_info(d), comments=comments,
        dataflow=d.mapping.dataflow, body=body).rstrip("\n")


def _c_ident(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return s if not s[:1].isdigit() else "_" + s


def hls_c(design) -> str:
    """The design as a complete HLS C translation unit (see the module docstring for the mapping)."""
    d = design
    _ = d.tree  # a kernel that does not parse raises its SpecError here
    w = d.workload
    sizes = d.sizes
    scalars = [{"name": s, "ctype": C_TYPES[v["dtype"]], "value": _c_value(v["dtype"], v["value"])}
               for s, v in w.scalars.items()]
    return _env().get_template("hls.c.j2").render(
        arch=d.arch.name, workload=w.name, mapping=d.mapping.name, preset=d.preset or "(default parameters)",
        defines=[(p, sizes[p]) for p in w.parameters], scalars=scalars, function=kernel_function(d, True),
        note=d.levels_note())


# ----------------------------------------------------------------------------------------------
# prompt


def _expr_value(e: Any, sizes: dict[str, int]) -> str:
    try:
        return num(evaluate(e, sizes))
    except ExprError:
        return str(e)


def _distribution(a: dict[str, Any]) -> str:
    parts = [a["distribution"]]
    if "range" in a:
        parts.append(f"[{num(a['range'][0])}, {num(a['range'][1])}]")
    for k in ("mean", "std", "value", "density"):
        if k in a:
            parts.append(f"{k} {num(a[k])}")
    if "order" in a:
        parts.append(f"sorted {a['order']}")
    return " ".join(parts)


def input_lines(d, variant: str | None) -> list[str]:
    """The input description of ``variant`` (None: the workload's own inputs), one line per sparse
    structure (``csr row_ptr col_idx: rows 64, ...``) and per other input array (``A: uniform [0, 1]``),
    led by ``variant NAME`` when one is given."""
    w = d.workload
    desc = resolve_inputs(w, variant)
    lines = []
    if variant is not None:
        lines.append(f"variant {variant}")
    filled = set()
    for st in desc["structures"]:
        arrs = [st[k] for k in ("row_ptr", "col_idx") if st.get(k)]
        filled.update(arrs)
        fields = [f"{k} {_expr_value(st[k], d.sizes)}" for k in ("rows", "cols", "nnz") if k in st]
        fields.append(f"row_skew {num(st.get('row_skew', 0))}")
        lines.append(f"{st['kind']} {' '.join(arrs)}: {', '.join(fields)}")
    for name, a in w.arrays.items():
        if a.role not in ("in", "inout") or name in filled:
            continue
        spec = desc["arrays"].get(name) or default_description(a.dtype)
        lines.append(f"{name}: {_distribution(spec)}")
    return lines


def compact(text: str) -> str:
    """Every line stripped with runs of whitespace made one space, blank lines dropped, one final newline."""
    lines = (re.sub(r"\s+", " ", ln).strip() for ln in text.splitlines())
    return "\n".join(ln for ln in lines if ln) + "\n"


def prompt(design, variant: str | None = None) -> str:
    """The dataset prompt: hardware, mapping, sizes, code and inputs, numbers digit-isolated.

    Deterministic for a given design and variant; whitespace is compacted
    (no indentation, no blank lines, single spaces). ``llmulator synth`` stores it with every
    sample; a model reads its own format instead (see the module docstring).
    """
    d = design
    a, m, w = d.arch, d.mapping, d.workload
    variant = variant if variant is not None else d.variant
    _ = d.tree
    loops = []
    for label in d.tree.loops:
        lm = m.loop(label)
        items = []
        if lm.tile is not None:
            items.append(f"tile {lm.tile}")
        if lm.spatial:
            items.append(f"spatial {lm.spatial}")
        if lm.unroll:
            items.append(f"unroll {lm.unroll}")
        if lm.pipeline_ii:
            items.append(f"pipeline II {lm.pipeline_ii}")
        if lm.fuse:
            items.append("fuse " + " ".join(lm.fuse))
        if lm.reduction == "tree":
            items.append("reduction tree")
        if items:
            loops.append({"label": label, "items": items})
    mems = [{"name": lv.name, "kind": lv.kind,
             "capacity": None if lv.capacity_kib is None else num(lv.capacity_kib),
             "instances": lv.instances, "width": lv.width_bits, "banks": lv.banks, "ports": lv.ports,
             "bandwidth": num(lv.bandwidth_bytes_per_cycle), "latency": lv.latency_cycles} for lv in a.memory]
    used = d.used_operator_classes()
    ops = [{"name": o.name, "count": o.count, "latency": o.latency_cycles, "bits": o.bits, "numeric": o.numeric}
           for o in a.operators.values() if o.name in used]
    placement = [f"{n} {d.placement(n)}" for n in w.arrays]
    partition = [f"{n} {p.type}" + (f" {p.factor}" if p.type != "complete" else "") + f" dim {p.dim}"
                 for n, p in m.partition.items()]
    sizes = [(p, d.sizes[p]) for p in w.parameters]
    sizes += [(s, num(v["value"])) for s, v in w.scalars.items()]
    text = _env().get_template("prompt.j2").render(
        clock=num(a.clock_mhz), pe=a.pe_array, ops=ops, mems=mems, loops=loops, order=list(m.order),
        placement=placement, partition=partition, dataflow=m.dataflow, sizes=sizes,
        code=kernel_function(d, False), inputs=input_lines(d, variant))
    return isolate_digits(compact(text))
