"""The elements a while loop's counter indexes over an entry: a run of trips x step from a fixed start.

``int k = 0; while (k < N && x[k] > t) { y[k] = ...; k++; }`` touches x[0..trips] and y[0..trips - 1], as its
counted twin ``for (k = 0; k < N; k++) { if (!(x[k] > t)) break; ... }`` does; a nest's tiles
(``llmulator.traffic``) then follow the trips that ran instead of the whole arrays (hlsim 0.34; before, 40 + 40
words for 3 trips, 13x the DRAM energy of the twin). The counter is what ``kernel_heads.while_counter`` finds
(``Loop.induction``); an index that is the counter plus a constant takes its loop's coefficient, the step.
"""

from __future__ import annotations

import re

from .kernel import Branch, Loop

_INDEX = re.compile(r"^\(?\s*(\w+)\s*(?:([+-])\s*(\d+))?\s*\)?$")


def _accesses_under(lp: Loop) -> set[int]:
    """Ids of the accesses in a loop: its test, its body's statements, branch conditions and inner heads."""
    stmts = [lp.cond_stmt]
    for n in lp.descendants():
        stmts += ([n.cond_stmt, *n.init_stmts] if isinstance(n, Loop) else [n.cond] if isinstance(n, Branch)
                  else [n])
    return {id(a) for st in stmts if st is not None for a in st.accesses}


def counters(loops: list[Loop]) -> dict[int, tuple]:
    """Nest loop index -> ((counter, step), the indices of its enclosing loops, the ids of its accesses)."""
    return {i: (lp.induction, [loops.index(a) for a in lp.ancestors() if a in loops], _accesses_under(lp))
            for i, lp in enumerate(loops) if lp.induction}


def dims(acc, found: dict) -> dict[int, tuple[int, int, float, list[int]]]:
    """dimension -> (loop index, step, constant offset, enclosing loop indices) for the dimensions of ``acc``
    that a while loop's counter indexes (``x[k]``, ``x[k + 1]``)."""
    out = {}
    for d, text in enumerate(acc.index_text):
        m = _INDEX.match(text.strip())
        if m is None:
            continue
        for li, ((name, step), enclosing, ids) in found.items():
            if name == m.group(1) and id(acc) in ids:
                out[d] = (li, step, float(m.group(3) or 0) * (-1 if m.group(2) == "-" else 1), enclosing)
    return out


def take(dim: tuple, dep, best: dict, consts: list) -> list[int]:
    """Add one counter-indexed dimension of an access to an array's use (``traffic._array_use``): a run of trips
    x step from a fixed start, and one step more (the exit test's element, or an access after the step): what
    the entry touched, never less. Returns the enclosing loops (see :func:`overlapping`)."""
    li, step, off, enclosing = dim
    dep[li] = True
    best[li] = max(best.get(li, 0), abs(step))
    consts += [off, off + step]
    return enclosing


def overlapping(by_counter: list[tuple[int, list[int]]], coefs: list, indirect: list) -> None:
    """Each entry starts at the same element: unless every enclosing loop moves the index, the entries overlap
    in a way their mean trips do not bound (their longest entry is not measured): the whole array."""
    for d, enclosing in by_counter:
        if not all(any(oi in dict(cs) for cs in coefs) for oi in enclosing):
            indirect[d] = True
