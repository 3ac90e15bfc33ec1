"""Tenset-MLP-style featurisation: one vector per statement (Ansor's per-store features).

TenSet's MLP cost model reads one 164-value vector per buffer-store
statement of the lowered program (float/int operation counts, up to five
buffer accesses with their access type, bytes, reuse and stride, and the
enclosing loop context) and sums an MLP over the statements. Here, per
statement of the kernel (and per branch condition and data-dependent loop
condition):

* operations by class (architecture-aware fusion: ``x += a*b`` is one ``mac``
  where there is a mac unit), per execution and over all executions;
* loop context: executions, depth, innermost/outermost trips, branch
  probability, and the mapping of the enclosing loops (pipelined and its II,
  unroll product, PE-array product, tiled loops and tile counts,
  data-dependent loops);
* up to ``MAX_BUFFERS`` accesses: read/write, where the array lives (level,
  kind, bandwidth, latency, banks, ports, partition, size, bits), indirect,
  the stride class w.r.t. the innermost loop (reuse, unit, strided, indirect)
  and the reuse factor (trips of enclosing loops the index does not use).

The architecture is the global vector.
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
    trips,
)

MAX_BUFFERS = 5
BUFFER_DIM = 3 + MEMORY_DIM + 1 + 4 + 1
CONTEXT_DIM = 6 + 9
STMT_DIM = 2 * len(OPS) + CONTEXT_DIM + MAX_BUFFERS * BUFFER_DIM


def _stride_class(acc, inner: Loop | None) -> list[float]:
    if acc.indirect:
        return [0.0, 0.0, 0.0, 1.0]
    if inner is None or inner.var is None:
        return [1.0, 0.0, 0.0, 0.0]
    last = acc.affine[-1] if acc.affine else None
    if not any(a is not None and a.depends_on(inner.var) for a in acc.affine):
        return [1.0, 0.0, 0.0, 0.0]  # reuse across the innermost loop
    if last is not None and abs(last.coefs.get(inner.var, 0)) == 1:
        return [0.0, 1.0, 0.0, 0.0]  # unit stride
    return [0.0, 0.0, 1.0, 0.0]


def _buffer(d: Design, acc, loops: list[Loop]) -> list[float]:
    inner = loops[-1] if loops else None
    used = acc.loop_vars()
    reuse = 1.0
    for lp in loops:
        if lp.var is not None and lp.var not in used:
            reuse *= max(trips(d, lp.label), 1.0)
    return [1.0, float(acc.is_read), float(acc.is_write), *memory_vector(d, acc.array), float(acc.indirect),
            *_stride_class(acc, inner), lg(reuse)]


def _context(d: Design, loops: list[Loop], prob: float, is_cond: bool) -> tuple[list[float], float]:
    execs = prob
    for lp in loops:
        execs *= max(trips(d, lp.label), 1e-3)
    m = d.mapping
    ii, piped, pipe_trips, inside_pipe = 0.0, 0.0, 0.0, 1.0
    unroll, spatial, tiled, tile_count, dd = 1.0, 1.0, 0.0, 1.0, 0.0
    for i, lp in enumerate(loops):
        lm = m.loop(lp.label)
        point, tile_trips = mapped_trips(d, lp.label)
        if lm.pipeline_ii:
            piped, ii, pipe_trips = 1.0, float(lm.pipeline_ii), point
            inside_pipe = 1.0
            for inner in loops[i + 1:]:
                inside_pipe *= max(trips(d, inner.label), 1.0)
        if lm.unroll:
            unroll *= lm.unroll
        if lm.spatial:
            spatial *= point
        if tile_trips is not None:
            tiled += 1
            tile_count *= tile_trips
        dd += float(lp.data_dependent or lp.is_while)
    ctx = [lg(execs), float(len(loops)), lg(trips(d, loops[-1].label)) if loops else 0.0,
           lg(trips(d, loops[0].label)) if loops else 0.0, prob, float(is_cond),
           piped, ii, lg(pipe_trips), lg(inside_pipe), lg(unroll), lg(spatial), tiled, lg(tile_count), dd]
    return ctx, execs


def statement_list(d: Design) -> list[tuple[object, list[Loop], float, bool]]:
    """(statement, enclosing loops, taken probability of enclosing branches, is a condition) in program order."""
    out = []

    def rec(nodes, loops, prob):
        for n in nodes:
            if isinstance(n, Loop):
                if n.cond_stmt is not None and (n.data_dependent or n.is_while):
                    out.append((n.cond_stmt, loops + [n], prob, True))
                rec(n.body, loops + [n], prob)
            elif getattr(n, "kind", "") == "branch":
                p = branch_probability(d, n)
                out.append((n.cond, loops, prob, True))
                rec(n.then, loops, prob * p)
                rec(n.orelse, loops, prob * (1 - p))
            elif getattr(n, "kind", "") == "stmt":
                out.append((n, loops, prob, False))
    rec(d.tree.roots, [], 1.0)
    return out


def featurise(d: Design) -> Featurised:
    rows = []
    for st, loops, prob, is_cond in statement_list(d):
        ops = d.stmt_ops(st)
        ctx, execs = _context(d, loops, prob, is_cond)
        bufs: list[float] = []
        for acc in st.accesses[:MAX_BUFFERS]:
            bufs += _buffer(d, acc, loops)
        bufs += [0.0] * (MAX_BUFFERS * BUFFER_DIM - len(bufs))
        rows.append([*[lg(ops.get(o, 0)) for o in OPS], *[lg(ops.get(o, 0) * execs) for o in OPS], *ctx, *bufs])
    x = np.asarray(rows, dtype=np.float32).reshape(-1, STMT_DIM)
    return Featurised(x=x, g=arch_vector(d))
