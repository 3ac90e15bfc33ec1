"""Trips of a loop bounded by a CSR row pointer, from the sparse structure the workload declares.

``for (j = rp[i]; j < rp[i + 1]; j++)`` runs row ``i``'s length, and the rows' lengths are what the
``csr`` structure of ``llmulator.inputs`` makes of its rows, nnz and ``row_skew``: their multiset
does not depend on the input seed (the seed only shuffles which row gets which length), so the loop's
per-entry trip profile is known before any run, as a triangular loop's is (``Design.trip_profile``).
The mean alone (``expected_trips: NNZ / N``) does not price such a loop: a pipelined loop pays its depth
on every entry that runs, and a skewed pattern leaves many rows empty (synth-v3's ``skewed`` variants
ran in half the cycles the mean predicted; csr loops were 43 % of the analytical prior's error on
test_input).

Only that exact shape is read: lower bound ``rp[i]``, upper ``rp[i + 1]``, step 1, ``i`` the variable of
an enclosing loop that runs over all the structure's rows from 0, and ``rp`` the ``row_ptr`` of a csr
structure of the design's input variant, with no input generator.
"""

from __future__ import annotations

import re

import numpy as np

from .inputs import _eval_int, csr_row_lengths, resolve_inputs

_BOUND = re.compile(r"^([A-Za-z_]\w*)\[([A-Za-z_]\w*)(\+1)?\]$")


def _bound(text: str) -> tuple[str, str, bool] | None:
    m = _BOUND.match(re.sub(r"\s+", "", text or ""))
    return (m.group(1), m.group(2), bool(m.group(3))) if m else None


def _head(source: str, label: str, var: str | None) -> tuple[str, str] | None:
    """(lower, upper) C text of ``label: for (int v = LO; v < HI; v++)`` in the kernel source, or None."""
    if var is None:
        return None
    v = re.escape(var)
    m = re.search(rf"\b{re.escape(label)}\s*:\s*for\s*\(\s*(?:int\s+)?{v}\s*=\s*([^;]+);\s*{v}\s*<\s*([^;]+);"
                  rf"\s*(?:{v}\s*\+\+|\+\+\s*{v}|{v}\s*\+=\s*1)\s*\)", source)
    return (m.group(1), m.group(2)) if m else None


def csr_row_loop(workload, tree, label: str, variant: str | None = None) -> tuple[dict, str] | None:
    """(the csr structure, the row variable) when loop ``label`` walks one row of a csr structure that the
    workload (with ``variant``) declares: ``for (j = rp[i]; j < rp[i + 1]; j++)``, ``rp`` its row_ptr."""
    loop = tree.loops[label]
    if loop.is_while or any(k in (loop.dynamic_reason or "") for k in ("early", "assigned in the body")):
        return None
    head = _head(tree.source, label, loop.var)
    lo, hi = (_bound(head[0]), _bound(head[1])) if head else (None, None)
    if lo is None or hi is None or lo[2] or not hi[2] or lo[:2] != hi[:2]:
        return None
    desc = resolve_inputs(workload, variant)
    if desc["generator"]:
        return None
    st = next((s for s in desc["structures"] if s.get("kind") == "csr" and s.get("row_ptr") == lo[0]), None)
    return (st, lo[1]) if st is not None else None


def csr_profile(design, label: str) -> list[int] | None:
    """Every row's trips of loop ``label`` when it walks one row of a declared csr structure; else None."""
    found = csr_row_loop(design.workload, design.tree, label, design.variant)
    if found is None:
        return None
    st, var = found
    loop = design.tree.loops[label]
    sizes = design.sizes
    w = design.workload
    rows = _eval_int(w.name, "csr rows", st["rows"], sizes) if "rows" in st else \
        int(np.prod(w.shape(st["row_ptr"], sizes))) - 1
    cols = _eval_int(w.name, "csr cols", st["cols"], sizes) if "cols" in st else rows
    nnz = _eval_int(w.name, "csr nnz", st["nnz"], sizes) if "nnz" in st else \
        int(np.prod(w.shape(st["col_idx"], sizes)))
    outer = loop.parent
    while outer is not None and outer.var != var:
        outer = outer.parent
    if outer is None or outer.data_dependent or outer.is_while or re.sub(r"\s+", "", outer.lower_text or "") != "0":
        return None
    try:
        if design.trips(outer.label) != rows:
            return None
        lengths = csr_row_lengths(rows, cols, nnz, float(st.get("row_skew", 0.0)), np.random.default_rng(0))
    except Exception:  # noqa: BLE001 - a pattern the inputs would refuse: the hints stand
        return None
    return [int(n) for n in lengths]
