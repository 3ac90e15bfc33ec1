"""One array's use in one loop nest: the loops its subscripts read, per dimension the box its accesses span,
and, where they move apart, each access's box (``llmulator.access_boxes``).

Why a module of its own: ``llmulator.traffic`` counts what a nest executes and ``llmulator.transfers`` prices the
tiles; between them sits how each subscript names elements as the loops run, which needs each access's own loop
scope (sibling loops often reuse a variable name) and its loops' steps and first values.
"""

from __future__ import annotations

import itertools
import math

import attrs
import numpy as np

from . import access_boxes, while_span
from .design import Design, index_step
from .expr import ExprError, evaluate
from .kernel import Loop


@attrs.define
class ArrayUse:
    name: str
    bits: int
    role: str
    level: int  # index into arch.memory
    dep: np.ndarray  # (L,) bool: index depends on loop l
    coefs: list[list[tuple[int, int]]]  # per dim: (loop index, |coef| x the loop's step)
    spread: list[float]  # per dim: spread of constant offsets over accesses
    indirect_dims: list[bool]
    shape: tuple[int, ...]
    reads: float  # datapath reads of this array over the whole nest (expected)
    writes: float
    # the nest's code reads / writes it somewhere: its tile is loaded / written back whatever the data decide
    # (a transfer is set up before the nest runs; a branch never taken on this input does not cancel it)
    read_here: bool = True
    written_here: bool = True
    # some write sits under a branch: the elements it skips keep what the array held, so a tile written back
    # whole must first be loaded where the array holds data (an ``inout`` array, or one written before)
    written_partly: bool = False
    # per dim: the distinct (coefficients, offset) patterns of its accesses; a tile holds at most that many
    # elements per point of its loops (inf: a while counter's span)
    patterns: list[float] | None = None
    boxes: access_boxes.Boxes | None = None  # accesses that move apart: each one's box (``footprints``)
    # the loops its subscripts name, each access in its own scope (not their tile axes: sibling loops of one name
    # share an axis, ``transfers._cover_siblings`` widens the axis to the ones it names)
    named_loops: frozenset[int] = frozenset()
    # (L,) bool: the loops whose tiles can change its tile (those around its accesses, and those it moves with);
    # a sibling loop's tile loop does not enclose it (``transfers.tile_loads``; hlsim 0.65)
    encloses: np.ndarray | None = None
    axis: tuple[int, ...] = ()  # each loop's tile axis as this array sees it (``scopes_within``)
    split: object = None  # ``sibling_tiles.Split``: its accesses in sibling loops tiled on their own, or None
    site: int = -1  # the innermost loop around all its accesses (-1: none); its entries gate its tiles' loads
    accesses: float = math.inf  # its distinct subscripts (text and scope): a tile holds at most so many per point
    # where every access has one linear part: (tile axes (K,), elements per trip (D, K), distinct offsets (A, D));
    # accesses a constant apart name the union of their translates (``shifted_union``), else None
    shifts: tuple | None = None
    # per dim where an access divides a loop's index (`x[i / 2]`): its groups, each (tile axis, numerator units per
    # trip, divisor, phase, spread, distinct offsets), whose counts ``named_elements.divided_count`` adds; () where
    # some access fits no group (the one box, at the worst phase, stands); None where no access divides
    divided: list | None = None
    # the distinct tuples of the group each access takes per dimension (None: a dimension without groups): a tile
    # holds at most the sum over them of their groups' counts multiplied (`A[i / 2][j] + A[i][j / 4]`)
    divided_sets: tuple = ()



@attrs.define
class Scopes:
    """Which loop each loop variable names, per loop of a nest (pre-order), and the tile axis each loop walks.

    ``names[l]``: variable -> the innermost enclosing loop of that name inside loop l (an access names the loops
    of its own scope: sibling loops often reuse a name, `for (k ...) ...; for (k ...) ...`, and before hlsim 0.57
    the name meant the last such loop everywhere, so `a[k]` in the first took the second's first value: 8 words
    read, 4 moved, an outside probe). ``axis[l]``: the last loop of l's name, which stands for every loop of that
    name in the tile model (sibling loops run one after the other, not nested: giving each its own tile axis
    walked them as a cross product, 32 words where 8 are read, a second probe), as before 0.57."""

    names: list[dict[str, int]]
    axis: list[int]

    def loop(self, at: int, var: str) -> int | None:
        """The tile axis of ``var`` as seen inside loop ``at`` (-1: outside every loop), None if no loop."""
        li = (self.names[at] if at >= 0 else {}).get(var)
        return None if li is None else self.axis[li]


def enclosing(loops: list[Loop], sites) -> np.ndarray:
    """(L,) bool: the loops around an access at one of ``sites`` (loop indices; -1: outside every loop)."""
    index = {id(lp): i for i, lp in enumerate(loops)}
    out = np.zeros(len(loops), dtype=bool)
    for w in set(sites):
        while w >= 0 and not out[w]:
            out[w] = True
            w = index.get(id(loops[w].parent), -1)
    return out


def loop_chain(loops: list[Loop], index: dict, w: int) -> list[int]:
    """The loops from the nest's top down to loop ``w`` (``index``: id of a loop -> its index; -1: none)."""
    out = []
    while w >= 0:
        out.append(w)
        w = index.get(id(loops[w].parent), -1)
    return out[::-1]


def common_chain(chains: list[list[int]]) -> list[int]:
    """The longest leading run of loops every chain shares."""
    n = 0
    while chains and all(len(c) > n and c[n] == chains[0][n] for c in chains):
        n += 1
    return chains[0][:n] if chains else []


def common_loop(loops: list[Loop], sites) -> int:
    """The innermost loop around every one of ``sites`` (loop indices), -1 where none is (a site outside every
    loop)."""
    index = {id(lp): i for i, lp in enumerate(loops)}
    common = common_chain([loop_chain(loops, index, w) for w in set(sites)])
    return common[-1] if common else -1


def scopes_within(scopes: Scopes, loops: list[Loop], mask: np.ndarray) -> Scopes:
    """``scopes`` with each loop's tile axis the last loop of its name among ``mask``'s (the loops around one
    array's accesses): a sibling of one name that does not touch the array is not its axis. Before hlsim 0.65
    the last loop of the name in the whole nest was, so `x[i]` read under `L_a` in tiles of 2 walked the tiles
    of a sibling `L_b` that reads another array (an outside probe's 1-D field update: 270 words where 74)."""
    last = {lp.var: i for i, lp in enumerate(loops) if mask[i] and lp.var}
    return Scopes(scopes.names, [last[lp.var] if mask[i] and lp.var else i for i, lp in enumerate(loops)])


def scopes_of(loops: list[Loop]) -> Scopes:
    at = {id(lp): i for i, lp in enumerate(loops)}
    last = {lp.var: i for i, lp in enumerate(loops) if lp.var}
    names: list[dict[str, int]] = []
    for i, lp in enumerate(loops):
        parent = at.get(id(lp.parent)) if lp.parent is not None else None
        names.append({**(names[parent] if parent is not None else {}), **({lp.var: i} if lp.var else {})})
    return Scopes(names, [last[lp.var] if lp.var else i for i, lp in enumerate(loops)])


def array_use(design: Design, name: str, u: dict, loops: list[Loop], scopes: Scopes,
               segments: dict[int, list[tuple[int, float]]] | None = None, counters: dict | None = None) -> ArrayUse:
    """One array's use in a nest: which loops its index depends on (the largest coefficient per dimension, times
    the loop's step: ``i += 2`` over ``a[i], a[i + 1]`` spans 2 elements a trip as ``a[2k], a[2k + 1]`` does;
    before hlsim 0.46 1, half the words read: a probe), constant offsets' spread, indirect dims, reads/writes.
    ``segments``: loop index -> [(an outer loop its bounds read, how far it moves the loop's elements per trip:
    a data-dependent segment's mean length, a window's slide)]; a dimension that such a loop indexes moves that
    far per step of those outer loops, where no dimension of the array is indexed by them already. Accesses that
    move apart as the loops run (``a[3 - k]`` beside ``a[k + 3]``) get their own boxes (``access_boxes``)."""
    u = _with_alternatives(u)
    shape = design.workload.shape(name, design.sizes)
    spec, ndim = design.workload.arrays[name], len(shape)
    dep = np.zeros(len(loops), dtype=bool)
    counted = {id(acc): while_span.dims(acc, counters) for acc in u["accs"]} if counters else {}
    by_counter: list[tuple[int, list[int]]] = []  # (dimension, enclosing loops) indexed by a while's counter
    dims = [_dim_use(design, u, d, loops, scopes, dep, counted, by_counter) for d in range(ndim)]
    coefs, spread, indirect, patterns = (list(x) for x in zip(*dims, strict=True)) if dims else ([], [], [], [])
    while_span.overlapping(by_counter, coefs, indirect)
    ax = scopes.axis  # (segments name loops; coefficients, tile axes)
    dd = [li for li in (segments or {}) if loops[li].data_dependent and any(ax[li] in dict(cs) for cs in coefs)]
    boxes = None if any(counted.values()) or dd else access_boxes.of(design, u["accs"], u["at"], loops, scopes, shape)
    for li, moves in (segments or {}).items():
        for d in range(ndim):
            c = dict(coefs[d]).get(ax[li])
            if c is None:
                continue
            for oi, move in ((ax[o], m) for o, m in moves):
                if not any(oi in dict(cs) for cs in coefs):
                    coefs[d] = sorted(coefs[d] + [(oi, c * move)])
                    dep[oi] = True
    if boxes is not None:  # a loop some access moves with (through a first value too), as its tile axis
        dep[np.asarray(scopes.axis)[(boxes.slope != 0).any(axis=(0, 1))]] = True
    # an indirect dimension spans its whole extent in every tile, so the loops that move its index do not move the
    # tile: it stays resident across them (before hlsim 0.85 every loop moved it, "no reuse assumed": a bit-reversal
    # gather `y[i] = x[r]` in 8 tiles loaded x 8 times, 512 words where the 64 it reads fit at once; an outside probe)
    level = design.arch.level_index(design.placement(name))
    named = frozenset(scopes.names[w][v] for acc, w in zip(u["accs"], u["at"], strict=True) if w >= 0
                      for aff in acc.affine if aff is not None for v in aff.coefs if v in scopes.names[w])
    encloses = enclosing(loops, u["at"]) | (dep if not any(indirect) else False)
    return ArrayUse(name, spec.bits, spec.role, level, dep, coefs, spread, indirect, shape, u["r"], u["w"],
                    u.get("read", False), any(a.is_write for a in u["accs"]), u.get("partly", False),
                    patterns, boxes, named, encloses, tuple(scopes.axis), None, common_loop(loops, u["at"]),
                    float(len({(a.index_text, w) for a, w in zip(u["accs"], u["at"], strict=True)})),
                    _shifts(design, u, loops, scopes, ndim, counted),
                    *_divided_dims(design, u, loops, scopes, ndim))


def _with_alternatives(u: dict) -> dict:
    """``u`` with each access whose subscript is a choice between affine forms (an edge clamp:
    ``Access.alternatives``) as one access per combination of its choices, for the footprints alone (the
    reads and writes ``u`` counts stay the program's)."""
    if not any(any(a is not None for a in acc.alternatives) for acc in u["accs"]):
        return u
    accs, at = [], []
    for acc, w in zip(u["accs"], u["at"], strict=True):
        dims = [(f,) if f is not None else (acc.alternatives[d] if d < len(acc.alternatives)
                                            and acc.alternatives[d] else (None,)) for d, f in enumerate(acc.affine)]
        for combo in itertools.product(*dims):
            accs.append(attrs.evolve(acc, affine=tuple(combo)))
            at.append(w)
    return {**u, "accs": accs, "at": at}


def _divided_dims(design: Design, u: dict, loops: list[Loop], scopes: Scopes, ndim: int) -> tuple[list, tuple]:
    """(``ArrayUse.divided``, ``ArrayUse.divided_sets``): per dimension its groups, and the distinct tuples of
    the group each access takes in each dimension (None in a dimension without groups)."""
    per_dim = [_divided(design, u, d, loops, scopes) for d in range(ndim)]
    sets = {tuple(x[1][a] if x and x[0] else None for x in per_dim) for a in range(len(u["accs"]))}
    return [x[0] if x else None for x in per_dim], tuple(sorted(sets, key=repr))


def _divided(design: Design, u: dict, d: int, loops: list[Loop], scopes: Scopes) -> tuple | None:
    """(groups, each access's group) of dimension ``d`` where some access divides a loop's index by an integer
    (None where none does): one group per (loop, coefficient, divisor) of the accesses, each (tile axis,
    numerator units per trip, divisor, the phase of its lowest numerator at the loop's first trip modulo the
    divisor (divisor - 1 where no number gives it: the worst), its numerators' spread, its distinct offsets); an
    affine access is a group of divisor 1. ``named_elements.divided_count`` counts a tile's elements per group
    and adds them: exact for one group, an upper bound for several (`x[i / 2] + x[i]` in tiles of 8: 12
    elements a tile, where 0.82's one box of the larger slope held 8; an outside probe). Before hlsim 0.82 a
    tile held the mean, 1 + units x (T - 1) / divisor, and an untiled `A[(i + 3) / 4]` over 8 trips moved 2.75
    words for the 3 it read (InvariantError). A dimension some access of which no group describes (`(i + j) /
    2`, an indirect index) gives ``()``."""
    groups: dict[tuple, list[float]] = {}
    coarse, keys = False, []
    for acc, at in zip(u["accs"], u["at"], strict=True):
        part = acc.coarse[d] if d < len(acc.coarse) and acc.affine[d] is None else None
        coarse |= part is not None
        num, div = part if part else (acc.affine[d] if d < len(acc.affine) else None, 1)
        terms = [(scopes.loop(at, v), c, v) for v, c in num.coefs.items() if c] if num is not None else []
        if len(terms) != 1 or terms[0][0] is None:
            groups = {}
            break
        (li, c, var) = terms[0]
        own = loops[scopes.names[at][var]]
        try:
            const = float(evaluate(num.const, design.values))
        except ExprError:
            groups = {}
            break
        if own.step_op != "+" or own.step_text is not None:
            groups = {}
            break
        keys.append((li, c, own.step, div, own.lower_text))
        groups.setdefault(keys[-1], []).append(const)
    if not coarse:
        return None
    out, order = [], sorted(groups, key=repr)
    for (li, c, step, div, lower), consts in ((k, groups[k]) for k in order):
        try:
            phase = (c * float(evaluate(lower, design.values)) + min(consts)) % div
        except ExprError:
            phase = div - 1.0
        out.append((li, float(abs(c * step)), div, phase if c * step > 0 else div - 1.0, max(consts) - min(consts),
                    len(set(consts))))
    return tuple(out), ([order.index(k) for k in keys] if out else [])


def _shifts(design: Design, u: dict, loops: list[Loop], scopes: Scopes, ndim: int, counted: dict) -> tuple | None:
    """``ArrayUse.shifts``: the accesses' one linear part over the tile axes (each coefficient times its loop's
    step; a while counter's dimension its step, ``while_span.dims``: `A[i][i] + A[i + 1][i + 1]` under
    `while (i < N - 1)` named 32 elements and moved 64 before hlsim 0.81) and their distinct constant offsets;
    None where they have several linear parts, a subscript without an affine form, or an offset no number
    gives."""
    forms: dict[tuple, set] = {}
    for acc, at in zip(u["accs"], u["at"], strict=True):
        by_counter = counted.get(id(acc), {})
        if len(acc.affine) < ndim or any(a is None and d not in by_counter for d, a in enumerate(acc.affine[:ndim])):
            return None
        lin, off = [], []
        for d, aff in enumerate(acc.affine[:ndim]):
            if aff is None:  # a while counter plus a constant
                li, step, k, _ = by_counter[d]
                lin.append(((li, float(step)),))
                off.append(float(k))
                continue
            terms: dict[int, float] = {}
            for v, c in aff.coefs.items():
                if c and (li := scopes.loop(at, v)) is None:
                    return None  # a name that is no loop: a value the nest does not move
                if c:
                    terms[li] = terms.get(li, 0) + c * index_step(loops[li])
            lin.append(tuple(sorted(terms.items())))
            try:
                off.append(float(evaluate(aff.const, design.values)))
            except ExprError:
                return None
        forms.setdefault(tuple(lin), set()).add(tuple(off))
    if len(forms) != 1:
        return None
    (lin, offs), = forms.items()
    axes = sorted({li for dim in lin for li, _ in dim})
    coefs = np.zeros((ndim, len(axes)))
    for d, dim in enumerate(lin):
        for li, c in dim:
            coefs[d, axes.index(li)] = c
    return tuple(axes), coefs, np.asarray(sorted(offs))


def _dim_use(design: Design, u: dict, d: int, loops: list[Loop], scopes: Scopes, dep: np.ndarray,
             counted: dict, by_counter: list) -> tuple[list[tuple[int, int]], float, bool, float]:
    """One dimension of an array's use: (loop index, largest |coefficient| x step) per loop, the constants'
    spread, whether some access indexes it indirectly, the distinct (coefficients, offset) patterns (inf: a
    while counter's span); ``dep`` takes the loops it reads. Each access's names are the loops of its scope."""
    best: dict[int, int] = {}
    consts, ind, seen = [], False, set()
    for acc, at in zip(u["accs"], u["at"], strict=True):
        aff = acc.affine[d] if d < len(acc.affine) else None
        if aff is None and d in counted.get(id(acc), {}):
            by_counter.append((d, while_span.take(counted[id(acc)][d], dep, best, consts)))
            seen.add(None)
            continue
        div = 1
        if aff is None and d < len(acc.coarse) and acc.coarse[d] is not None:
            aff, div = acc.coarse[d]  # `i / 2`: half an element per trip (kernel_affine.coarse)
        if aff is None:
            ind = True
            continue
        seen.add((tuple(sorted(((scopes.loop(at, v), c) for v, c in aff.coefs.items() if c), key=repr)),
                  str(aff.const), div))
        for v, c in aff.coefs.items():
            if c and (li := scopes.loop(at, v)) is not None:
                own = loops[scopes.names[at][v]]  # the loop the name means here (``li`` is its tile axis)
                ind |= own.step_op != "+" or own.step_text is not None  # `d <<= 1`, `k += 2 * d`: span unknown
                dep[li] = True
                best[li] = max(best.get(li, 0), abs(c) * index_step(loops[li]) / div)
        try:
            consts.append(float(evaluate(aff.const, design.values)) / div)
            if div > 1:  # the worst phase: a range of numerators names up to (div - 1) / div more (_divided)
                consts.append(consts[-1] + (div - 1) / div)
        except ExprError:
            pass
    return (sorted(best.items()), (max(consts) - min(consts)) if consts else 0.0, ind,
            math.inf if None in seen else float(max(len(seen), 1)))
