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
constants (what ``order_legality.distance_vectors`` compares; a load through another array is not judged, nor a
chain through two statements): what is found is real, and others can be missed.
"""

from __future__ import annotations

import numpy as np

from . import nest
from .costs import combiner, level_latency, op_latency
from .expr import ExprError, evaluate


def _step(loop) -> int | None:
    """The signed step of an additive loop with a constant step, else None (not judged)."""
    return loop.step if loop.step_op == "+" and loop.step_text is None and loop.step else None


def _value_distance(design, w, r, moving: dict[str, str]) -> dict[str, int] | None:
    """Values each variable of ``moving`` (variable -> loop label) moves from ``w``'s access to ``r``'s of the same
    element, every other variable the same: each subscript the same affine form in both up to constants, with at
    most one moving variable (any non-zero coefficient); None where they never meet so."""
    if len(w.affine) != len(r.affine) or w.indirect or r.indirect:
        return None
    delta: dict[str, int] = {}
    for aw, ar in zip(w.affine, r.affine, strict=True):
        if aw.coefs != ar.coefs:
            return None
        try:
            dc = int(evaluate(aw.const, design.values)) - int(evaluate(ar.const, design.values))
        except (ExprError, TypeError, ValueError):
            return None
        used = [v for v, c in aw.coefs.items() if c and v in moving]
        if not used:
            if dc:
                return None
            continue
        c = int(aw.coefs[used[0]])
        if len(used) > 1 or dc % c or delta.get(used[0], dc // c) != dc // c:
            return None
        delta[used[0]] = dc // c   # w at v touches c v + cw, r at v' c v' + cr: met where v' - v = (cw - cr) / c
    return delta


def _iterations(design, delta: dict[str, int], moving: dict[str, str]) -> dict[str, int] | None:
    """Values moved per loop -> iterations moved per loop label (a descending loop's are negative), or None where a
    loop's step does not divide them (the two accesses never meet) or is not a constant addition."""
    out = {lb: 0 for lb in moving.values()}
    for v, dv in delta.items():
        step = _step(design.tree.loops[moving[v]])
        if step is None or dv % step:
            return None
        out[moving[v]] = dv // step
    return out


def _access(a) -> str:
    return a.array + "".join(f"[{t}]" for t in a.index_text)


def cross_pe(design, band: list[str], lb: str) -> str | None:
    """Why the band's spatial loop ``lb`` cannot run its iterations at once, as text, or None: an element one PE's
    iteration stores and another's, later in the kernel's order, loads, every other loop the same (in a
    statement or between two of the body). A descending loop's earlier iterations have the larger values, and a
    step that does not divide the distance never meets it."""
    m = design.mapping
    loops = design.tree.loops
    accesses = [a for st in loops[band[-1]].statements() for a in st.accesses]
    extent = m.loop(lb).tile or design.trips(lb)
    moving = {loops[lb].var: lb}
    for w in (a for a in accesses if a.is_write):
        for r in (a for a in accesses if not a.is_write and a.array == w.array):
            delta = _value_distance(design, w, r, moving)
            d = _iterations(design, delta, moving) if delta else None
            if d is not None and 0 < d[lb] < extent:
                return (f"loop {lb} is bound to the PE array (spatial: {m.loop(lb).spatial}), but iteration "
                        f"{lb} {d[lb]:+d} loads `{_access(r)}` that iteration {lb} stores (`{_access(w)}`): its "
                        "PEs run those iterations in the same step")
    return None


def _key(n) -> tuple:
    return (n.array, tuple(n.access.index_text))


def _flow(design, st, start: dict[int, int], held: dict) -> tuple[dict[int, int], dict[int, int]]:
    """When each node's value is ready (and each store's value arrives) in statement ``st``, counted from a value
    loaded at cycle 0: ``start`` its nodes that take that value, ``held`` the locals and elements (array, subscript
    text) earlier statements of the iteration computed from it, with their times."""
    ready: dict[int, int] = {}
    stores: dict[int, int] = {}
    for j, n in enumerate(st.dag):
        before = [ready[k] for k in n.deps if k in ready] + ([ready[n.acc]] if n.acc in ready else [])
        before += [held[v] for v in n.reads if v in held]
        passed = j in start or (n.op == "load" and n.access is not None and _key(n) in held)
        if j in start:
            before.append(start[j])
        elif passed:
            before.append(held[_key(n)])
        if not before:
            continue
        if n.op == "store":
            stores[j] = max(before)
        else:
            lat = 0 if passed else level_latency(design, n.array) if n.op == "load" else \
                op_latency(design, combiner(design, st, n.op, False))   # (an unfused mac: its add)
            ready[j] = max(before) + lat
    return ready, stores


def _chain(design, stmts: list, ia: int, load: int, ib: int, store: int) -> int:
    """Cycles from the value a load of statement ``ia`` takes to the value statement ``ib``'s store stores, through
    the locals and the elements the statements between them compute from it (0 where none reaches it)."""
    held: dict = {}
    for i in range(ia, ib + 1):
        st = stmts[i]
        ready, stores = _flow(design, st, {load: 0} if i == ia else {}, held)
        if i == ib:
            return stores.get(store, 0)
        if st.writes_local and ready:
            held[st.writes_local] = max(ready.values())
        for j, t in stores.items():
            if st.dag[j].access is not None:
                held[_key(st.dag[j])] = t
    return 0


def stream_dependences(design, band: list[str]) -> list[tuple[int, dict[str, int]]]:
    """(latency from the load to the store, iterations over the band's loops) of each element the fold's body
    stores and a later iteration on the same PE loads: no spatial loop moves. An element no temporal loop of the
    fold names is the same one on its next iteration (of the innermost such loop), the latency then the chain
    through the body's statements from its load to its store."""
    m = design.mapping
    loops = design.tree.loops
    stmts = loops[band[-1]].statements()
    moving = {loops[lb].var: lb for lb in band if loops[lb].var is not None}
    out = []
    for ib, st in enumerate(stmts):
        for store, w in enumerate(st.dag):
            if w.op != "store" or w.access is None:
                continue
            for ia in range(ib + 1):
                for load, r in enumerate(stmts[ia].dag):
                    if r.op != "load" or r.access is None or r.array != w.array or (ia == ib and load > store):
                        continue
                    delta = _value_distance(design, w.access, r.access, moving)
                    dist = _iterations(design, delta, moving) if delta is not None else None
                    if dist is None or any(dist[lb] for lb in band if m.loop(lb).spatial):
                        continue
                    if not any(dist.values()):   # the same element: again on the next trip of a loop not naming it
                        free = [lb for lb in band if not m.loop(lb).spatial
                                and loops[lb].var not in w.access.loop_vars()]
                        if not free:
                            continue
                        dist[free[-1]] = 1
                    if not next((x > 0 for x in (dist[lb] for lb in band) if x), False):
                        continue
                    lat = _chain(design, stmts, ia, load, ib, store)
                    if lat > 0:
                        out.append((lat, dist))
    return out


def local_recurrence(design, band: list[str]) -> int:
    """The longest update of a local the fold's body reads before it writes it (`s = s + x[t][j]`): one
    accumulator all the PEs and steps chain through, at least that many cycles a step (before hlsim 0.59
    nothing: a scan over 128 steps ran at II 1, an outside probe)."""
    from .costs import combining_latency

    return max((combining_latency(design, st) for st in design.tree.loops[band[-1]].statements()
                if st.writes_local and st.writes_local in st.reads_locals), default=0)


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
        return float(max(1, local_recurrence(design, band)))
    m = design.mapping
    heads = [lb for kind, lb in nest.mapped_band(design, band) if kind == "point"]
    trips = [max(nest.mapped_trips(design, lb), 1.0) for lb in heads]
    t = np.array([[min(float(m.loop(lb).tile or n), n) for lb, n in zip(heads, trips, strict=True)]])
    is_sp = np.array([[bool(m.loop(lb).spatial) for lb in heads]])
    pos = np.array([list(range(len(heads)))])
    return float(max(stream_rec_mii(heads, t, is_sp, pos, deps)[0], local_recurrence(design, band)))
