"""The loop-nest semantics of a mapping: one definition for render, hlsim and the analytical model.

A *band* is a maximal perfect chain of loops (each loop's body is exactly the next loop). ``tile: T`` on a
loop of a band whose exact trip count is larger than ``T`` (or not static) strip-mines it into a *tile loop*
(over tiles) and a *point loop* (over the elements of one tile); an untiled loop is all point loop. A band
that has a strip-mined loop or an ``order`` is rebuilt as

    tile loops, outermost first, then point loops, outermost first,

both in the same sequence: the band's loops listed in ``order``, then its other loops in kernel order. So
``order`` is one permutation of the band that applies at both levels (Timeloop's outer and inner level), and
``tile: 1`` moves a whole loop up to the tile level. Loop primitives (pipeline, unroll, spatial) apply to
point loops. A *triangular* band (a loop bound uses another band loop's variable) keeps the kernel's
nesting: strip-mined loops are split in place, and an ``order`` other than the kernel's is refused.

``fuse`` (PE-array bands only) flattens loops of a band into one mapped loop over the product of their
trips, named by its outermost member (the *head*); its tile, spatial binding and place in ``order`` apply
to the flattened index.

PE arrays: the point loops of a band with a loop bound to the PE array (``spatial``) form the array's
*fold*: spatial point loops are unrolled over the PEs, every temporal point loop streams through the array
one step per initiation interval (a PE array's controller is hardware: pragmas on those loops only set the
target II), and the tile loops around it enumerate the folds. :func:`operand_reuse` says how many of a
fold's accesses reach memory.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import SpecError
from .foldwords import fold_strides
from .systolic import (  # noqa: F401 - re-exported: the per-fold constants are part of the nest semantics
    array_io_cycles,
    last_drain,
    pe_register_level,
    preload_pes,
    shadow_accumulator_fits,
    systolic_fill,
)
from .words import per_word, word_factor
from .yamlsrc import SourceMap


def band_head(tree, label: str):
    """The outermost loop of the maximal perfect band that contains loop ``label``."""
    top = tree.loops[label]
    while top.parent is not None and top.parent.perfect_child() is top:
        top = top.parent
    return top


def band_labels(tree, label: str) -> list[str]:
    return [lp.label for lp in band_head(tree, label).band()]


def fused_into(design) -> dict[str, str]:
    """Loops flattened into another one by ``fuse``: member label -> the fused loop's (head's) label."""
    return {m: lb for lb, lm in design.mapping.loops.items() for m in lm.fuse}


def members(design, label: str) -> tuple[str, ...]:
    """The kernel loops a mapped loop iterates over: itself and the loops fused into it, outermost first."""
    return (label,) + tuple(design.mapping.loop(label).fuse)


def mapped_trips(design, label: str) -> float:
    """Trips of a mapped loop: a fused loop runs over the product of its members' trips."""
    n = 1.0
    for m in members(design, label):
        n *= design.trips(m)
    return n


def exact_trips(design, label: str) -> int | None:
    """Trip count of a (mapped) loop when it is the same on every entry (static, rectangular), else None."""
    total = 1
    for m in members(design, label):
        loop = design.tree.loops[m]
        if loop.data_dependent or loop.is_while or loop.depends_on_outer:
            return None
        t = design.trips(m)
        if not float(t).is_integer():
            return None
        total *= int(t)
    return total


def strip_mined(design, label: str) -> bool:
    """Whether ``tile`` splits the loop into a tile loop and a point loop."""
    tile = design.mapping.loop(label).tile
    loop = design.tree.loops[label]
    if tile is None or loop.var is None or loop.is_while:
        return False
    exact = exact_trips(design, label)
    return exact is None or tile < exact


def is_triangular(design, band: list[str]) -> bool:
    vars_ = {design.tree.loops[lb].var for lb in band}
    return any(set(design.tree.loops[lb].depends_on_outer) & vars_ for lb in band)


def loop_sequence(order, band: list[str]) -> list[str]:
    """The band's loops in mapping order: those listed in ``order``, then the others in kernel order."""
    listed = [lb for lb in order if lb in band]
    return listed + [lb for lb in band if lb not in listed]


def needs_rebuild(design, band: list[str]) -> bool:
    return (any(lb in design.mapping.order for lb in band) or any(strip_mined(design, lb) for lb in band)
            or any(design.mapping.loop(lb).fuse for lb in band))


def mapped_band(design, band: list[str]) -> list[tuple[str, str]]:
    """The mapped nest of a band: ('tile' | 'point', label of a kernel loop or of a fused loop's head),
    outermost first. Fused members are not listed: they are iterated by their head."""
    fused = fused_into(design)
    band = [lb for lb in band if lb not in fused]
    if is_triangular(design, band):
        listed = [lb for lb in design.mapping.order if lb in band]
        if listed != [lb for lb in band if lb in listed]:
            _refuse_triangular(design, band)
        out = []
        for lb in band:
            if strip_mined(design, lb):
                out.append(("tile", lb))
            out.append(("point", lb))
        return out
    seq = loop_sequence(design.mapping.order, band)
    return [("tile", lb) for lb in seq if strip_mined(design, lb)] + [("point", lb) for lb in seq]


def _refuse_triangular(design, band: list[str]) -> None:
    loops = design.tree.loops
    vars_ = {loops[lb].var: lb for lb in band}
    dep = next(lb for lb in band if set(loops[lb].depends_on_outer) & set(vars_))
    used = sorted(set(loops[dep].depends_on_outer) & set(vars_))
    smap = design.mapping.source_map or SourceMap("<mapping>")
    raise SpecError(smap.diag(
        ("mapping", "order"), f"cannot reorder band {' > '.join(band)}: the bounds of loop {dep} "
        f"depend on {', '.join(used)}, so the band keeps the kernel's nesting",
        "the kernel's order for a band whose bounds depend on each other",
        "remove `order`, or order a band whose bounds do not depend on each other"))


def spatial_band(design, label: str) -> bool:
    """Whether the band of ``label`` binds a loop to the PE array."""
    return any(design.mapping.loop(lb).spatial for lb in band_labels(design.tree, label))


def array_head(design, band: list[str]) -> str | None:
    """The outermost point loop of a band bound to the PE array (the head of its fold), else None."""
    if not any(design.mapping.loop(lb).spatial for lb in band):
        return None
    return next(lb for kind, lb in mapped_band(design, band) if kind == "point")


def point_order(design, band: list[str]) -> list[str]:
    """The band's point loops, outermost first."""
    return [lb for kind, lb in mapped_band(design, band) if kind == "point"]


# ----------------------------------------------------------------------------------------------
# PE-array resources


def units_per_pe(design, cls: str) -> float | None:
    """Units of an operator class inside each PE (``count`` a multiple of the PE count), else None
    (a class with fewer units than PEs is a shared pool outside the array)."""
    pe = design.arch.pe_array
    op = design.arch.operators.get(cls)
    if pe is None or op is None or op.count < pe.size:
        return None
    return float(op.count // pe.size)


def array_res_mii(design, ops_per_step: dict[str, float], lanes: float) -> float:
    """Resource MII of one PE-array step: each of ``lanes`` PEs runs one body with its own units;
    classes shared by the whole array serve every lane."""
    ii = 1.0
    for cls, n in ops_per_step.items():
        op = design.arch.operators.get(cls)
        if op is None or cls == "select" or n <= 0:
            continue
        per = units_per_pe(design, cls)
        ii = max(ii, math.ceil(n / per) if per else math.ceil(n * lanes / op.count))
    return ii


def stationary(dep: np.ndarray, is_sp: np.ndarray, t: np.ndarray) -> np.ndarray:
    """(B,) whether an operand stays put in a fold: no temporal point loop of more than one trip in its index."""
    return ~(dep[None, :] & ~is_sp & (t > 1)).any(axis=1)


def output_held(dep: np.ndarray, is_sp: np.ndarray, t: np.ndarray) -> np.ndarray:
    """(B,) whether an output stays in the PEs through a fold (output stationary): stationary, and indexed by
    every spatial loop, so each PE holds its own; PEs along a spatial loop the index does not use add into one
    output, which flows out (a partial sum), even when the fold's stream is a single step."""
    return stationary(dep, is_sp, t) & (dep[None, :] | ~is_sp).all(axis=1)


def operand_reuse(dep: np.ndarray, is_sp: np.ndarray, t: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(multicast, register reuse) of one array's accesses in a PE-array fold, for B mappings.

    ``dep`` (L,) whether the array's index uses each band loop; ``is_sp`` (B, L) spatial point
    loops; ``t`` (B, L) point-loop sizes; ``pos`` (B, L) each loop's position in the mapping
    sequence (point loops run in that order). PEs along a spatial loop the index does not use
    share one access (multicast); the innermost temporal point loops that do not use the index,
    up to the first one (of more than one trip) that does, keep the value in the PE's register.
    """
    B, L = t.shape
    mcast = np.where(is_sp & ~dep[None, :], t, 1.0).prod(axis=1)
    reuse = np.ones(B)
    blocked = np.zeros(B, dtype=bool)
    inner_first = np.argsort(-pos, axis=1, kind="stable")
    for r in range(L):
        li = inner_first[:, r]
        sp = np.take_along_axis(is_sp, li[:, None], axis=1)[:, 0]
        tt = np.take_along_axis(t, li[:, None], axis=1)[:, 0]
        d = dep[li]
        temporal = ~sp
        take = temporal & ~blocked & ~d
        reuse = np.where(take, reuse * tt, reuse)
        blocked |= temporal & d & (tt > 1)
    return mcast, reuse


# ----------------------------------------------------------------------------------------------
# the mapped nest in the analytical model's terms (tile sizes and positions of the outer loops)


def encloses_tile_loop(design, label: str) -> bool:
    """Whether, in the mapped nest, loop ``label`` (all of it) sits above another loop's tile loop:
    a loop of an in-place (triangular) band above a strip-mined loop of that band, or a loop above
    a deeper band with a strip-mined loop. Such a loop is an outer loop as a whole."""
    tree = design.tree
    band = band_labels(tree, label)
    in_place = is_triangular(design, band)
    loop = tree.loops[label]
    stack = list(loop.body)
    while stack:
        n = stack.pop()
        if hasattr(n, "band") and n.label in tree.loops:
            if strip_mined(design, n.label) and (n.label not in band or in_place):
                return True
            stack.extend(n.body)
        elif getattr(n, "kind", "") == "branch":
            stack.extend(n.then + n.orelse)
    return False


def outer_positions(design, labels: list[str]) -> list[int]:
    """Position of each loop's outer (tile) loop in the mapped nest, 0 = outermost, for the loops of
    one top-level nest in pre-order: each band's slots are filled in its mapping sequence."""
    tree = design.tree
    fused = fused_into(design)
    slots: dict[str, int] = {}
    seen: set[str] = set()
    for lb in labels:
        if lb in seen:
            continue
        band = band_labels(tree, lb)
        idx = [labels.index(b) for b in band if b in labels]
        heads = [b for b in band if b not in fused]
        seq = heads if is_triangular(design, band) else loop_sequence(design.mapping.order, heads)
        seq = [b for b in seq if b in labels]
        for slot, b in zip(sorted(idx), seq, strict=False):
            slots[b] = slot
        seen.update(band)
    return [slots[fused.get(lb, lb)] for lb in labels]  # a fused member sits where its head does


# ----------------------------------------------------------------------------------------------
# one design's PE-array fold, as the profilers need it (the analytical model batches the same rules)


def fold(design, band: list[str]) -> dict:
    """The static facts of a band bound to the PE array, for this design's mapping:

    ``lanes`` (bound PEs: product of the spatial loops' point sizes), ``reuse`` (array ->
    (multicast, register reuse), see :func:`operand_reuse`), ``words`` (array -> bits its stream
    moves through its level per element bit, :func:`llmulator.words.word_factor`), ``stationary`` (an input operand is
    indexed by no temporal point loop of more than one trip), ``dep`` (array -> (L,) bool).
    """
    loops = design.tree.loops
    m = design.mapping
    heads = [lb for _kind, lb in mapped_band(design, band) if _kind == "point"]
    trips = np.array([max(mapped_trips(design, lb), 1.0) for lb in heads])
    t = np.array([[min(float(m.loop(lb).tile or trips[i]), trips[i]) for i, lb in enumerate(heads)]])
    is_sp = np.array([[bool(m.loop(lb).spatial) for lb in heads]])
    pos = np.array([list(range(len(heads)))])  # point loops run in mapped order
    var_index = {loops[mb].var: i for i, lb in enumerate(heads) for mb in members(design, lb)}
    deps: dict[str, np.ndarray] = {}
    coefs: dict[str, list[dict[str, int]]] = {}   # array -> per dimension: loop variable -> largest |coef|
    indirect: set[str] = set()
    written: set[str] = set()
    for st in loops[band[-1]].statements():
        for a in st.accesses:
            if a.is_write:
                written.add(a.array)
            dep = deps.setdefault(a.array, np.zeros(len(heads), dtype=bool))
            if a.indirect:
                dep[:] = True
                indirect.add(a.array)
            for v in a.loop_vars():
                if v in var_index:
                    dep[var_index[v]] = True
            per_dim = coefs.setdefault(a.array, [{} for _ in a.affine])
            for d, aff in enumerate(a.affine):
                for v, c in (aff.coefs.items() if aff is not None and d < len(per_dim) else ()):
                    if c and v in var_index:
                        per_dim[d][v] = max(per_dim[d].get(v, 0), abs(int(c)))
    reuse, words = {}, {}
    still = False
    for arr, dep in deps.items():
        mc, ru = operand_reuse(dep, is_sp, t, pos)
        reuse[arr] = (float(mc[0]), float(ru[0]))
        lv = design.arch.level(design.placement(arr))
        stride, extent = fold_strides(design, arr, coefs.get(arr, []), heads, t)
        if arr in indirect:
            stride[:] = 0
        words[arr] = float(word_factor(dep, stride, extent, is_sp, t, pos,
                                       per_word(lv.width_bits, design.workload.arrays[arr].bits),
                                       tiles=np.ceil(trips[None, :] / t))[0])
        still |= design.workload.arrays[arr].role == "in" and bool(stationary(dep, is_sp, t)[0])
    lanes = float(np.where(is_sp[0], t[0], 1.0).prod())
    # output stationary (the rtl profiler's "os" plan), as the RTL reads it even for a single-step stream
    outs = [a for a in written if bool(output_held(deps[a], is_sp, t)[0])]
    still = still and not outs  # output stationary: both inputs stream in from the edges, none is preloaded
    arrays = design.workload.arrays
    drain = bool(outs) and not shadow_accumulator_fits(design, max(arrays[a].bits for a in outs),
                                                       sum(arrays[a].bits for a in deps if a not in written))
    codes = np.array([[{"rows": 1, "cols": 2}.get(m.loop(lb).spatial, 0) for lb in heads]])
    preload = float(preload_pes(design, [deps[a] for a in written], codes)[0]) if design.arch.pe_array else 0.0
    return {"lanes": lanes, "reuse": reuse, "words": words, "stationary": still, "dep": deps,
            "output_stationary": bool(outs), "output_drain": drain, "preload": preload}


def point_extent(design, label: str) -> float:
    """Iterations of kernel loop ``label`` inside one tile: its tile (or all its trips); for a loop
    that is fused, the span of one tile of the flattened index along it (a tile of T indices covers T
    of the innermost member, T / N of the next, and so on, capped at each member's trips)."""
    head = fused_into(design).get(label, label)
    group = members(design, head)
    tile = design.mapping.loop(head).tile
    if len(group) == 1:
        return float(tile) if tile is not None else design.trips(label)
    rem = float(tile) if tile is not None else mapped_trips(design, head)
    for m in reversed(group):
        n = design.trips(m)
        if m == label:
            return min(rem, n)
        rem = math.ceil(rem / max(n, 1.0))
    return design.trips(label)
