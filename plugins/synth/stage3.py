"""Stage 3: augmentation by mutation — structure changes and values pushed across magnitudes.

Each sample starts from a stage-2 template sample and applies one or two
mutations:

* ``interchange``: swap two perfectly nested loops whose bounds do not depend
  on each other;
* ``fission``: split a loop whose body has several statements into one loop per
  statement;
* ``branch``: guard a statement of an innermost loop with a data-dependent test
  on one of the values it reads;
* ``strength``: change an operation's strength (a multiply into an add, a
  division into a multiply);
* ``magnitude``: push hardware numbers (bandwidth, latencies, clock, buffer
  size) by powers of ten and the sizes to a larger preset, so extremes are
  covered.

A structural mutation changes the program's meaning, so the mutated workload
drops its reference (hlsim labels it without a functional check) and gets a
freshly sampled mapping. An optional generator that asks an external
OpenAI-compatible endpoint for new kernels is a separate plugin, never needed
and never called here.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from llmulator.dataset import Rejected, SampleSpec
from llmulator.kernel import C_TYPES, strip_comments
from llmulator.yamlsrc import SourceMap
from pycparser import c_ast, c_generator, c_parser

from .primitives import choice, sample_mapping
from .stage2 import TemplateGenerator

STRUCTURAL = ("interchange", "fission", "branch", "strength")
_PRELUDE = ("typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t; "
            "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n")


def _parse(w: dict[str, Any]) -> tuple[c_ast.FileAST, c_ast.Compound]:
    decls = [f"int {p};" for p in w["parameters"]]
    decls += [f"{C_TYPES[v['dtype']]} {k};" for k, v in w.get("scalars", {}).items()]
    decls += [f"{C_TYPES[a['dtype']].replace('_Float16', 'float')} {k}" + "[1]" * len(a["shape"]) + ";"
              for k, a in w["arrays"].items()]
    src = _PRELUDE + " ".join(decls) + "\nvoid __k(void) {\n" + strip_comments(w["kernel"]) + "\n}\n"
    ast = c_parser.CParser().parse(src)
    return ast, ast.ext[-1].body


def _emit(body: c_ast.Compound) -> str:
    gen = c_generator.CGenerator()
    return "".join(gen._generate_stmt(n) for n in (body.block_items or []))


def _loops(node, out=None, label=None):
    """(label node or None, loop node, parent compound) for every for loop."""
    out = [] if out is None else out
    if isinstance(node, c_ast.Compound):
        for it in node.block_items or []:
            _loops(it, out)
    elif isinstance(node, c_ast.Label):
        if isinstance(node.stmt, c_ast.For):
            out.append((node, node.stmt))
            _loops(node.stmt.stmt, out)
        else:
            _loops(node.stmt, out)
    elif isinstance(node, c_ast.For):
        out.append((None, node))
        _loops(node.stmt, out)
    elif isinstance(node, (c_ast.While, c_ast.If)):
        for c in (getattr(node, "stmt", None), getattr(node, "iftrue", None), getattr(node, "iffalse", None)):
            if c is not None:
                _loops(c, out)
    return out


def _body_items(loop) -> list:
    st = loop.stmt
    return (st.block_items or []) if isinstance(st, c_ast.Compound) else [st]


def _names(n) -> set[str]:
    out: set[str] = set()

    class V(c_ast.NodeVisitor):
        def visit_ID(self, node):
            out.add(node.name)
    V().visit(n)
    return out


def _var(loop: c_ast.For) -> str | None:
    init = loop.init
    if isinstance(init, c_ast.DeclList):
        return init.decls[0].name
    return None


def mutate_interchange(rng, body) -> bool:
    cands = []
    for _lab, loop in _loops(body):
        items = _body_items(loop)
        if len(items) == 1:
            inner = items[0]
            inner_loop = inner.stmt if isinstance(inner, c_ast.Label) else inner
            if isinstance(inner_loop, c_ast.For):
                v = _var(loop)
                header = _names(inner_loop.init) | _names(inner_loop.cond)
                if v is not None and v not in header and not (_names(loop.cond) & {_var(inner_loop)}):
                    cands.append((loop, inner_loop))
    if not cands:
        return False
    outer, inner = cands[int(rng.integers(len(cands)))]
    for f in ("init", "cond", "next"):
        a, b = getattr(outer, f), getattr(inner, f)
        setattr(outer, f, b)
        setattr(inner, f, a)
    return True


def mutate_fission(rng, body) -> bool:
    cands = []
    for lab, loop in _loops(body):
        items = _body_items(loop)
        if lab is not None and len(items) >= 2 and all(isinstance(i, c_ast.Assignment) for i in items):
            cands.append((lab, loop, items))
    if not cands:
        return False
    lab, loop, items = cands[int(rng.integers(len(cands)))]
    copies = []
    for k, it in enumerate(items):
        new = copy.deepcopy(loop)
        new.stmt = c_ast.Compound([it])
        copies.append(c_ast.Label(f"{lab.name}_f{k}", new))
    return _replace(body, lab, copies)


def _replace(node, target, replacement: list) -> bool:
    if isinstance(node, c_ast.Compound):
        items = node.block_items or []
        for i, it in enumerate(items):
            if it is target:
                node.block_items = items[:i] + replacement + items[i + 1:]
                return True
            if _replace(it, target, replacement):
                return True
        return False
    for c in (getattr(node, "stmt", None), getattr(node, "iftrue", None), getattr(node, "iffalse", None)):
        if c is not None and _replace(c, target, replacement):
            return True
    return False


def _innermost_assignments(body):
    out = []
    for _lab, loop in _loops(body):
        for it in _body_items(loop):
            if isinstance(it, c_ast.Assignment):
                out.append((loop, it))
    return out


def mutate_branch(rng, body, n_if: list[int]) -> bool:
    cands = []
    for loop, st in _innermost_assignments(body):
        reads = []

        class V(c_ast.NodeVisitor):
            def visit_ArrayRef(self, node):
                reads.append(node)
        V().visit(st.rvalue)
        if reads:
            cands.append((loop, st, reads))
    if not cands:
        return False
    loop, st, reads = cands[int(rng.integers(len(cands)))]
    read = copy.deepcopy(reads[int(rng.integers(len(reads)))])
    n_if[0] += 1
    guard = c_ast.Label(f"L_mut{n_if[0]}", c_ast.If(c_ast.BinaryOp(">", read, c_ast.Constant("int", "0")),
                                                  c_ast.Compound([st]), None))
    items = _body_items(loop)
    idx = next(i for i, it in enumerate(items) if it is st)
    new_items = items[:idx] + [guard] + items[idx + 1:]
    loop.stmt = c_ast.Compound(new_items)
    return True


def mutate_strength(rng, body) -> bool:
    ops = []

    class V(c_ast.NodeVisitor):
        def visit_BinaryOp(self, node):
            if node.op in ("*", "/"):
                ops.append(node)
            self.generic_visit(node)
    for _loop, st in _innermost_assignments(body):
        V().visit(st.rvalue)
    if not ops:
        return False
    op = ops[int(rng.integers(len(ops)))]
    op.op = "+" if op.op == "*" else "*"
    return True


def mutate_magnitude(rng, arch: dict[str, Any]) -> dict[str, Any]:
    a = copy.deepcopy(arch)
    for lv in a["memory"]:
        if "bandwidth_bytes_per_cycle" in lv and rng.random() < 0.6:
            lv["bandwidth_bytes_per_cycle"] = float(lv["bandwidth_bytes_per_cycle"]) * float(10 ** rng.uniform(-1.5, 1))
        if rng.random() < 0.4:
            lv["latency_cycles"] = int(max(0, lv.get("latency_cycles", 1)) * choice(rng, [1, 5, 10, 30]) + 1)
    for op in a["compute"]["operators"].values():
        if rng.random() < 0.4 and "latency_cycles" in op:
            op["latency_cycles"] = int(op["latency_cycles"] * choice(rng, [2, 4, 8]) + 1)
    if rng.random() < 0.5:
        a["clock_mhz"] = float(a["clock_mhz"]) * float(10 ** rng.uniform(-1, 0.5))
    a["name"] = a["name"] + ".mag"
    return a


class MutationGenerator:
    """Stage-2 samples mutated in structure and pushed across magnitudes."""

    name = "mutations"
    stage = 3

    def __init__(self):
        self.base = TemplateGenerator()

    def sample(self, group_rng: np.random.Generator, rng: np.random.Generator) -> SampleSpec:
        from llmulator.kernel import analyze
        from llmulator.specs import workload_from_dict

        spec = self.base.sample(group_rng, rng)
        spec.stage, spec.generator = 3, self.name
        kinds = [str(k) for k in group_rng.choice(STRUCTURAL + ("magnitude",), size=int(group_rng.integers(1, 3)),
                                                  replace=False)]
        w = copy.deepcopy(spec.workload)
        structural = [k for k in kinds if k in STRUCTURAL]
        if structural:
            _ast, body = _parse(w)
            n_if = [0]
            applied = []
            for k in structural:
                ok = {"interchange": lambda: mutate_interchange(group_rng, body),
                      "fission": lambda: mutate_fission(group_rng, body),
                      "branch": lambda: mutate_branch(group_rng, body, n_if),
                      "strength": lambda: mutate_strength(group_rng, body)}[k]()
                if ok:
                    applied.append(k)
            if not applied and "magnitude" not in kinds:
                raise Rejected("no mutation applies")
            if applied:
                w["kernel"] = _emit(body)
                w.pop("reference", None)
                w["name"] = f"{w['name']}.mut"
                hints = dict(w.get("hints", {}))
                for i in range(1, n_if[0] + 1):
                    hints[f"L_mut{i}"] = {"taken_probability": 0.5}
                for lb, h in list(hints.items()):  # fission copies keep their loop's hint
                    for k2 in range(4):
                        if f"{lb}_f{k2}" in w["kernel"]:
                            hints[f"{lb}_f{k2}"] = h
                if hints:
                    w["hints"] = hints
                wl = workload_from_dict(w, SourceMap("<stage3>"))
                tree = analyze(wl)
                sizes = wl.sizes(spec.preset)
                trips = {lb: (0.0 if (lp.data_dependent or lp.is_while or lp.depends_on_outer) else
                              tree.static_trips(lb, sizes)) for lb, lp in tree.loops.items()}
                shapes = {a: wl.shape(a, sizes) for a in wl.arrays}
                spec.mapping = sample_mapping(group_rng, spec.mapping["name"] + ".mut", w, tree, sizes, spec.arch,
                                              trips, shapes)
                spec.workload = w
            spec.mutations = applied
        if "magnitude" in kinds:
            spec.arch = mutate_magnitude(rng, spec.arch)
            spec.mapping["architecture"] = spec.mapping.get("architecture", spec.arch["name"])
            spec.mutations = spec.mutations + ["magnitude"]
        spec.hw = spec.arch["name"]
        return spec
