"""TLP-style featurisation: the design as a sequence of mapping and scheduling primitives.

TLP (Zhai et al., ASPLOS 2023) reads the *schedule* (Ansor's transform
steps: split, reorder, annotate, cache_read, ...) instead of the lowered
program: each step is a one-hot of its primitive type plus its numeric
arguments. Here the primitives are those of an llmulator mapping, in the
order a compiler would apply them:

1. ``placement`` and ``partition`` of every array (which memory level, its
   bandwidth and latency, partition type and factor);
2. the loop nest in program order: ``loop`` (depth, trip count, executions,
   data-dependence), followed by the primitives applied to it: ``tile``,
   ``spatial`` (PE rows/cols binding), ``unroll``, ``pipeline``; the body's
   ``compute`` steps (operation counts by class, loads, stores, indirection)
   and ``branch`` steps (taken probability) in place;
3. ``order`` (a band interchange) and ``dataflow``.

Each step is ``STEP_TYPES`` one-hot + ``ARGS`` numbers, cropped to
``MAX_STEPS`` steps (TLP crops too). The architecture is the global vector.
"""

from __future__ import annotations

import numpy as np
from llmulator.design import Design
from llmulator.kernel import Loop

from .features import (
    MEMORY_DIM,
    OPS,
    Featurised,
    arch_vector,
    branch_probability,
    lg,
    mapped_trips,
    memory_vector,
    one_hot,
    trips,
)

STEP_TYPES = ("placement", "partition", "loop", "tile", "spatial", "unroll", "pipeline", "compute", "branch",
              "order", "dataflow")
ARGS = 18
STEP_DIM = len(STEP_TYPES) + ARGS
MAX_STEPS = 64
ROLES = ("in", "out", "inout", "temp")
PART_TYPES = ("cyclic", "block", "complete")


def _step(kind: str, args: list[float]) -> list[float]:
    args = list(args)[:ARGS]
    return [*one_hot(kind, STEP_TYPES), *args, *([0.0] * (ARGS - len(args)))]


def steps(d: Design) -> list[tuple[str, list[float]]]:
    """The primitive sequence as (type, arguments) pairs, uncropped."""
    m, w = d.mapping, d.workload
    out: list[tuple[str, list[float]]] = []
    for name, arr in w.arrays.items():
        mem = memory_vector(d, name)
        assert len(mem) == MEMORY_DIM
        out.append(("placement", [*mem, *one_hot(arr.role, ROLES)]))
        p = m.partition.get(name)
        if p is not None:
            out.append(("partition", [*one_hot(p.type, PART_TYPES), lg(p.factor), float(p.dim),
                                      mem[-2], mem[-1]]))

    def stmt(st, depth: int, execs: float) -> None:
        ops = d.stmt_ops(st)
        loads = sum(1 for a in st.accesses if a.is_read)
        stores = sum(1 for a in st.accesses if a.is_write)
        indirect = sum(1 for a in st.accesses if a.indirect)
        is_float = any(n.is_float for n in st.dag)
        out.append(("compute", [float(depth), lg(execs), *[lg(ops.get(o, 0)) for o in OPS], float(loads),
                                float(stores), float(indirect), float(is_float)]))

    def body(nodes, depth: int, execs: float) -> None:
        for n in nodes:
            if isinstance(n, Loop):
                loop(n, depth, execs)
            elif getattr(n, "kind", "") == "branch":
                p = branch_probability(d, n)
                out.append(("branch", [p, float(n.data_dependent), float(depth), lg(execs)]))
                stmt(n.cond, depth, execs)
                body(n.then, depth, execs * p)
                body(n.orelse, depth, execs * (1 - p))
            elif getattr(n, "kind", "") == "stmt":
                stmt(n, depth, execs)

    def loop(lp: Loop, depth: int, execs: float) -> None:
        t = trips(d, lp.label)
        inner = execs * t
        out.append(("loop", [float(depth), lg(t), lg(inner), float(lp.data_dependent), float(lp.is_while),
                             float(len(lp.statements())), float(len(lp.loops())), float(bool(lp.depends_on_outer))]))
        lm = m.loop(lp.label)
        point, tile_trips = mapped_trips(d, lp.label)
        if lm.tile is not None:
            out.append(("tile", [lg(lm.tile), lg(tile_trips or 1), float(tile_trips is not None),
                                 float(t % lm.tile == 0) if t else 0.0, float(depth)]))
        if lm.spatial:
            pe = d.arch.pe_array
            dim = (pe.rows if lm.spatial == "rows" else pe.cols) if pe else 0
            out.append(("spatial", [float(lm.spatial == "rows"), float(lm.spatial == "cols"), lg(point), lg(dim),
                                    float(depth)]))
        if lm.unroll:
            out.append(("unroll", [lg(lm.unroll), float(lm.unroll >= point), float(depth)]))
        if lm.pipeline_ii:
            out.append(("pipeline", [float(lm.pipeline_ii), lg(point), lg(inner), float(depth)]))
        if lp.cond_stmt is not None and (lp.data_dependent or lp.is_while):
            stmt(lp.cond_stmt, depth + 1, inner)
        body(lp.body, depth + 1, inner)

    body(d.tree.roots, 0, 1.0)
    for i, label in enumerate(m.order):
        lp = d.tree.loops.get(label)
        depth = len(lp.ancestors()) if lp is not None else 0
        out.append(("order", [float(i), float(len(m.order)), float(depth), lg(trips(d, label)) if lp else 0.0]))
    if m.dataflow:
        out.append(("dataflow", [1.0, float(len(d.tree.top_loops()))]))
    return out


def featurise(d: Design) -> Featurised:
    seq = steps(d)
    if len(seq) > MAX_STEPS:  # keep the memory primitives and the start of the nest, as TLP crops
        seq = seq[:MAX_STEPS]
    x = np.asarray([_step(k, a) for k, a in seq], dtype=np.float32).reshape(-1, STEP_DIM)
    return Featurised(x=x, g=arch_vector(d))
