"""Dependences between the iterations of a PE-array fold: across PEs (refused) and along its stream (a RecMII).

Why: a fold runs its spatial point loops at once, one iteration per PE, and its temporal point loops one stream
step after another. Until hlsim 0.58 the fold's II took only the combining latency of an output a PE keeps in its
register. An outside probe found both ways that breaks a physical bound: `y[4*t + j + 1] = y[4*t + j] + x[t][j]`
with ``j`` spatial (each PE reads what its neighbour writes in the same step: a 64-add chain run in 55 cycles, II 1)
and `y[t + 1][j] = y[t][j] * 3 + x[t][j]` with ``t`` the stream (each step waits for the multiply and add of the
one before: 32 steps of 5 cycles run in 97). The first is a mapping the array cannot run as written (the
validator says so, as it does for an order that reverses a dependence); the second is a recurrence whose
latency over its distance in stream steps bounds the II (Rau's bound, one dependence at a time).

Pairs judged: a store and a load of one array in one statement whose subscripts are the same affine form up to
constants (what ``order_legality.distance_vector`` compares; a load through another array is not judged, nor a
chain through two statements): what is found is real, and others can be missed.
"""

from __future__ import annotations

import numpy as np

from . import nest
from .costs import level_latency, op_latency
from .expr import ExprError, evaluate
from .order_legality import distance_vector


def _pairs(design, band: list[str]):
    """(statement, store node, load node, distance over the band's loops) of each element a statement stores and
    a different iteration of the band loads, in kernel order (the store first)."""
    loops = design.tree.loops
    var_of = {lb: loops[lb].var for lb in band}
    for st in loops[band[-1]].statements():
        for i, w in enumerate(st.dag):
            if w.op != "store" or w.access is None:
                continue
            for j, r in enumerate(st.dag):
                if r.op != "load" or r.access is None or r.array != w.array:
                    continue
                dist = distance_vector(design, w.access, r.access, var_of, band)
                if dist is None or not any(dist.values()):
                    continue
                if next((x > 0 for x in (dist[lb] for lb in band) if x), False):
                    yield st, i, j, dist


def _load_to_store(design, st, load: int, store: int) -> int:
    """Cycles from a loaded value to the stored one: the operations on the path between them."""
    path = {load: 0}
    for j in range(load + 1, store + 1):
        n = st.dag[j]
        before = [path[k] for k in n.deps if k in path] + ([path[n.acc]] if n.acc in path else [])
        if not before:
            continue
        if j == store:
            return max(before)
        path[j] = max(before) + (level_latency(design, n.array) if n.op == "load" else op_latency(design, n.op))
    return 0


def _access(a) -> str:
    return a.array + "".join(f"[{t}]" for t in a.index_text)


def _one_loop_distance(design, w, r, var: str) -> int | None:
    """Iterations of the loop of ``var`` from ``w``'s access to ``r``'s of the same element, every other loop
    the same: each subscript the same affine form in both up to constants; None where they never meet so."""
    if len(w.affine) != len(r.affine) or w.indirect or r.indirect:
        return None
    delta = None
    for aw, ar in zip(w.affine, r.affine, strict=True):
        if aw.coefs != ar.coefs:
            return None
        try:
            dc = int(evaluate(aw.const, design.sizes)) - int(evaluate(ar.const, design.sizes))
        except (ExprError, TypeError, ValueError):
            return None
        c = int(aw.coefs.get(var, 0))
        if c == 0:
            if dc:
                return None
            continue
        if dc % c or (delta is not None and dc // c != delta):
            return None
        delta = dc // c
    return delta


def cross_pe(design, band: list[str], lb: str) -> str | None:
    """Why the band's spatial loop ``lb`` cannot run its iterations at once, as text, or None: an element one PE's
    iteration stores and another's, later in the kernel's order, loads, every other loop the same (in a
    statement or between two of the body)."""
    m = design.mapping
    loops = design.tree.loops
    accesses = [a for st in loops[band[-1]].statements() for a in st.accesses]
    extent = m.loop(lb).tile or design.trips(lb)
    for w in (a for a in accesses if a.is_write):
        for r in (a for a in accesses if not a.is_write and a.array == w.array):
            d = _one_loop_distance(design, w, r, loops[lb].var)
            if d is not None and 0 < d < extent:
                return (f"loop {lb} is bound to the PE array (spatial: {m.loop(lb).spatial}), but iteration "
                        f"{lb} {d:+d} loads `{_access(r)}` that iteration {lb} stores (`{_access(w)}`): its "
                        "PEs run those iterations in the same step")
    return None


def stream_dependences(design, band: list[str]) -> list[tuple[int, dict[str, int]]]:
    """(latency from the load to the store, distance over the band's loops) of each element the fold's body
    stores and a later iteration on the same PE loads: no spatial loop moves."""
    m = design.mapping
    out = []
    for st, w, r, dist in _pairs(design, band):
        if any(dist[lb] for lb in band if m.loop(lb).spatial):
            continue
        out.append((_load_to_store(design, st, r, w), dist))
    return out


def stream_rec_mii(heads: list[str], t: np.ndarray, is_sp: np.ndarray, pos: np.ndarray,
                   deps: list[tuple[int, dict[str, int]]]) -> np.ndarray:
    """The II each of B mappings' folds needs for ``deps`` (``stream_dependences``): a dependence that spans D
    stream steps and L cycles needs II >= ceil(L / D). ``t``, ``is_sp``, ``pos`` (B, len(heads)): the point
    loops' extents, spatial flags and places in the stream order (as ``nest.fold`` reads them). A distance
    that leaves a tile (another fold) or names a loop that is not a point loop here bounds nothing."""
    B = t.shape[0]
    out = np.ones(B)
    index = {lb: i for i, lb in enumerate(heads)}
    for lat, dist in deps:
        moved = {lb: d for lb, d in dist.items() if d}
        if lat <= 0 or any(lb not in index for lb in moved):
            continue
        steps = np.zeros(B)
        inside = np.ones(B, dtype=bool)
        for lb, d in moved.items():
            i = index[lb]
            later = (pos > pos[:, i:i + 1]) & ~is_sp
            steps += d * np.where(later, t, 1.0).prod(axis=1)
            inside &= ~is_sp[:, i] & (abs(d) < t[:, i])
        ok = inside & (steps > 0)
        out = np.where(ok, np.maximum(out, np.ceil(lat / np.maximum(steps, 1.0))), out)
    return out


def fold_rec_mii(design, band: list[str]) -> float:
    """One mapping's stream RecMII (hlsim's fold): ``stream_rec_mii`` over its point loops as ``nest.fold``
    reads them (mapped order, each tile's extent)."""
    deps = stream_dependences(design, band)
    if not deps:
        return 1.0
    m = design.mapping
    heads = [lb for kind, lb in nest.mapped_band(design, band) if kind == "point"]
    trips = [max(nest.mapped_trips(design, lb), 1.0) for lb in heads]
    t = np.array([[min(float(m.loop(lb).tile or n), n) for lb, n in zip(heads, trips, strict=True)]])
    is_sp = np.array([[bool(m.loop(lb).spatial) for lb in heads]])
    pos = np.array([list(range(len(heads)))])
    return float(stream_rec_mii(heads, t, is_sp, pos, deps)[0])
