"""The cross-file checks of a Design: everything that needs two of its files at once.

A mapping that names a loop, memory level or array that does not exist, a tile
larger than its loop, a spatial binding the PE array cannot hold, a buffer too
small for its tiles, an operator class the architecture lacks: each is a
diagnostic that points at the line of the file that has to change.
``check_design`` (importable from ``llmulator.design`` too) runs them all and
raises one SpecError listing every problem found; a multi-level mapping's
names are checked by ``llmulator.design_levels``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import nest
from .errors import Diagnostic, SpecError, UserError
from .errors import did_you_mean as _close
from .fold_dependences import cross_pe
from .kernel import BINOP_CLASSES, Loop
from .library import is_bundled
from .order_legality import band_tiles, reversed_dependence, tiling_violations
from .reduction_legality import illegal_tree
from .specs import Mapping
from .yamlsrc import SourceMap

if TYPE_CHECKING:
    from .design import Design


def _mdiag(m: Mapping, path: tuple, msg: str, expected: str = "", hint: str = "", key: bool = False) -> Diagnostic:
    smap = m.source_map or SourceMap("<mapping>")
    return smap.diag(("mapping",) + path, msg, expected, hint, prefer_key=key)


def check_design(d: Design) -> None:
    """Cross-file checks; raise SpecError listing every problem found.

    The names and primitives first (workload, preset, loops, order, placement, levels, partitions);
    only when those are sound, the buffer capacity per level and the operator classes.
    """
    diags = _check_workload(d)
    tree = d.tree
    spatial_use = {"rows": 1, "cols": 1}
    for label, lm in d.mapping.loops.items():
        diags.extend(_check_loop(d, label, lm, spatial_use))
    diags.extend(_check_fuse(d))
    diags.extend(_check_pe_use(d, spatial_use))
    checked: set[str] = set()  # bands whose dependences `order` checked (with their tiles)
    if d.mapping.order:
        diags.extend(_check_order(d, tree, checked))
    if not diags:  # (only on sound labels, tiles and fusions: it walks the mapped bands)
        diags.extend(_check_tiling(d, checked))
    diags.extend(_check_placement(d))
    if d.mapping.levels:
        from .design_levels import level_diagnostics  # it uses this module's diagnostics helpers
        diags.extend(level_diagnostics(d))
    diags.extend(_check_partition(d))
    if diags:
        raise SpecError(diags)
    from .capacity_checks import check_capacity  # it uses this module's diagnostics helpers
    diags = check_capacity(d) + _check_operators(d)
    if diags:
        raise SpecError(_dedupe(diags))


def _check_workload(d: Design) -> list[Diagnostic]:
    """The mapping's workload name (a diagnostic) and the size preset (an unknown one raises: a SpecError
    when the mapping asks for it, a UserError when the caller did)."""
    w, m = d.workload, d.mapping
    diags: list[Diagnostic] = []
    if m.workload and m.workload != w.name:
        diags.append(_mdiag(m, ("workload",), f"mapping is written for workload '{m.workload}', "
                            f"but the workload is '{w.name}'", f"workload: {w.name}",
                            "pass the matching mapping, or fix the name"))
    if d.preset is not None and d.preset not in w.presets:
        known = ", ".join(sorted(w.presets)) or "none defined"
        if m.preset == d.preset:  # the mapping asks for it: its `preset:` line is the one to change
            diags.append(_mdiag(m, ("preset",), f"unknown size preset '{d.preset}' of workload '{w.name}'",
                                f"one of: {known}"))
            raise SpecError(diags)
        if diags:
            raise SpecError(diags)
        # asked for by the caller (`--preset`): nothing in the mapping file is wrong
        where = f" in {w.source_map.file}" if w.source_map else ""
        raise UserError(f"unknown size preset '{d.preset}': workload '{w.name}' has presets {known} "
                        f"(workload.presets{where})")
    return diags


def _check_loop(d: Design, label: str, lm, spatial_use: dict[str, float]) -> list[Diagnostic]:
    """One loop's primitives: its label, legality of pipelining/unrolling, tile, spatial binding (counted
    into ``spatial_use``) and unroll factor. A tile whose bound cannot be computed ends the loop's checks."""
    m, tree = d.mapping, d.tree
    if label not in tree.loops:
        labels = list(tree.loops)
        branch = any(getattr(n, "kind", "") == "branch" and n.label == label for n in tree.walk())
        return [_mdiag(m, ("loops", label), f"'{label}' labels an if, not a loop: mapping directives apply to loops"
                       if branch else f"unknown loop label '{label}'",
                       "one of: " + ", ".join(lb for lb in labels if not lb.startswith("_")),
                       "a branch's label names it for its taken_probability hint (workload.hints)" if branch
                       else _close(label, labels), key=True)]
    loop = tree.loops[label]
    diags = _check_legal(d, label, loop, lm)
    if lm.reduction == "tree" and (why := illegal_tree(d, label)) is not None:
        diags.append(_mdiag(m, ("loops", label, "reduction"), f"reduction: tree on loop {label}: {why}",
                            "associative accumulations only", "remove `reduction: tree`: the loop's copies chain"))
    if lm.tile is not None:
        tile, complete = _check_tile(d, label, loop, lm)
        diags.extend(tile)
        if not complete:
            return diags
    if lm.spatial:
        diags.extend(_check_spatial(d, label, loop, lm, spatial_use))
    if lm.unroll and not (loop.data_dependent or loop.is_while):
        try:
            pt = d.tile(label)
            if lm.tile is None and (most := d.longest_trips(label, guarded=False)) is not None:
                pt = max(pt, most)  # a loop whose trips vary unrolls to its longest entry (not its mean)
            if lm.unroll > pt:
                diags.append(_mdiag(m, ("loops", label, "unroll"), f"unroll factor {lm.unroll} exceeds "
                                    f"the {pt:g} iterations of loop {label}", f"at most {pt:g}"))
        except SpecError:
            pass
    return diags


def _check_tile(d: Design, label: str, loop: Loop, lm) -> tuple[list[Diagnostic], bool]:
    """(diagnostics, whether the loop's other checks go on): a tile needs a simple, static loop and at
    most its bound (fused loops multiply it)."""
    m, tree = d.mapping, d.tree
    if loop.data_dependent or loop.is_while:
        return [_mdiag(m, ("loops", label, "tile"), f"loop {label} has a trip count only the run "
                       f"knows ({loop.dynamic_reason}) and cannot be tiled", "no tile on this loop")], True
    if not loop.simple:
        why = (f"its step `{loop.step_text}` is not an integer literal: the rewritten head needs the step's value "
               "in the kernel text" if loop.step_op == "+" and loop.step_text is not None else
               "its step or condition is another form")
        return [_mdiag(m, ("loops", label, "tile"), f"loop {label} is not of the form "
                       f"`for (v = LO; v < HI; v += CONST)` ({why}) and cannot be tiled", "no tile on this loop",
                       "tiling rewrites the loop head; keep it untiled or write it in that form (a literal "
                       "step: `v += 4`)")], True
    try:
        bound = d.longest_trips(label, guarded=False) or d.trips(label)  # a triangle's entries run up to its most
        for mb in lm.fuse:
            bound *= d.trips(mb) if mb in tree.loops else 1
    except SpecError as e:
        return list(e.diagnostics), False
    if lm.tile > bound:
        return [_mdiag(m, ("loops", label, "tile"), f"tile {lm.tile} is larger than the "
                       f"bound of loop {label} ({bound:g} iterations)", f"an integer from 1 to {bound:g}")], True
    return [], True


def _check_spatial(d: Design, label: str, loop: Loop, lm, spatial_use: dict[str, float]) -> list[Diagnostic]:
    """A loop bound to PE rows or cols: a PE array to bind to, a static trip count, a perfect rectangular
    band; the PEs it uses are multiplied into ``spatial_use``."""
    a, m = d.arch, d.mapping
    if a.pe_array is None:
        return [_mdiag(m, ("loops", label, "spatial"), f"architecture '{a.name}' has no "
                       "PE array to bind loops to", "no spatial binding",
                       "use unroll instead, or an architecture with compute.pe_array")]
    if loop.data_dependent or loop.is_while:
        return [_mdiag(m, ("loops", label, "spatial"), f"loop {label} has a data-dependent "
                       "bound and cannot be bound to the PE array", "no spatial binding",
                       "bind a loop with a static trip count")]
    diags: list[Diagnostic] = []
    try:
        spatial_use[lm.spatial] *= lm.tile or d.trips(label)
    except SpecError as e:
        diags.extend(e.diagnostics)
    top = loop
    while top.parent is not None:
        top = top.parent
    band = top.band()
    rect = not nest.is_triangular(d, [lp.label for lp in band]) and all(lp.simple for lp in band)
    if not all(getattr(n, "kind", "") == "stmt" for n in band[-1].body) or loop not in band or not rect:
        diags.append(_mdiag(m, ("loops", label, "spatial"), f"spatial binding needs a perfect, "
                            f"rectangular loop nest (nest {top.label} has statements or branches "
                            "between its loops, or bounds that depend on its own loops)",
                            "spatial loops in a perfectly nested band with static bounds",
                            "use unroll and pipeline_ii for imperfect nests"))
    elif (why := cross_pe(d, [lp.label for lp in band], label)) is not None:
        diags.append(_mdiag(m, ("loops", label, "spatial"), why, "spatial loops whose iterations do not read "
                            "what another iteration of theirs writes (a reduction into one element is fine)",
                            "bind another loop, or run this one temporally (pipeline_ii, unroll)"))
    return diags


def _check_pe_use(d: Design, spatial_use: dict[str, float]) -> list[Diagnostic]:
    """The PEs the spatial loops use along rows and cols, against the array's."""
    a, m = d.arch, d.mapping
    diags: list[Diagnostic] = []
    if a.pe_array is None:
        return diags
    for dim, have in (("rows", a.pe_array.rows), ("cols", a.pe_array.cols)):
        used = spatial_use[dim]
        if used > have:
            bound = [lb for lb, lm in m.loops.items() if lm.spatial == dim]
            diags.append(_mdiag(m, ("loops", bound[0], "tile"), f"loops bound to PE {dim} "
                                f"({', '.join(bound)}) use {used:g} {dim}, the array has {have}",
                                f"a product of tiles <= {have}"))
    return diags


def _check_order(d: Design, tree, checked: set[str]) -> list[Diagnostic]:
    """``order``: known labels, all of one perfect band, keeping every dependence (with the band's tiles); the
    band checked joins ``checked``."""
    m = d.mapping
    labels = list(tree.loops)
    diags: list[Diagnostic] = []
    for i, label in enumerate(m.order):
        if label not in tree.loops:
            diags.append(_mdiag(m, ("order", i), f"unknown loop label '{label}' in order",
                                "labels of one perfect loop band", _close(label, labels)))
    known = [lb for lb in m.order if lb in tree.loops]
    if known and len(known) == len(m.order):
        top = tree.loops[known[0]]
        while top.parent is not None and top.parent.perfect_child() is top:
            top = top.parent
        band = [lp.label for lp in top.band()]
        outside = [lb for lb in known if lb not in band]
        if outside:
            diags.append(_mdiag(m, ("order",), f"order mixes loops that are not one perfect nest: "
                                f"{', '.join(outside)} not in band {' > '.join(band)}",
                                "a permutation of loops of one perfectly nested band",
                                "statements between loops prevent interchange"))
        elif nest.is_triangular(d, band) and nest.loop_sequence(m.order, band) != band:
            try:
                nest.mapped_band(d, band)  # refuses with its own message
            except SpecError as e:
                diags.extend(e.diagnostics)
        elif (why := reversed_dependence(d, band, nest.loop_sequence(m.order, band), band_tiles(d, band))) is not None:
            diags.append(_mdiag(m, ("order",), f"order reverses a dependence: {why}", "an order that runs every "
                                "write before the reads of its element", "keep the kernel's order for these loops"))
        checked.add(band[0])
    return diags


def _check_tiling(d: Design, checked: set[str]) -> list[Diagnostic]:
    """Each band's tiles: their tile loops run outside all the band's point loops (``order_legality``)."""
    return [_mdiag(d.mapping, ("loops", label, "tile"), f"tiling reverses a dependence: {why}",
                   "tiles whose tile loops, run outside the band's point loops, keep every write before the reads "
                   "of its element", "tile the band's outer loops only, or no loop of this band")
            for label, why in tiling_violations(d, checked)]


def _check_placement(d: Design) -> list[Diagnostic]:
    """``placement``: known arrays on known memory levels (a kind of memory named as a level says so)."""
    a, m = d.arch, d.mapping
    arrays = set(d.workload.arrays)
    levels = [lv.name for lv in a.memory]
    diags: list[Diagnostic] = []
    for arr, lvl in m.placement.items():
        if arr not in arrays:
            diags.append(_mdiag(m, ("placement", arr), f"unknown array '{arr}'",
                                "one of: " + ", ".join(sorted(arrays)), _close(arr, list(arrays)), key=True))
        if lvl not in levels:
            of_kind = [lv.name for lv in a.memory if lv.kind == lvl.lower()]
            hint = (f"'{lvl}' is a kind of memory, not a level name; the {lvl.lower()} level(s) of "
                    f"'{a.name}': {', '.join(of_kind)}") if of_kind else _close(lvl, levels)
            diags.append(_mdiag(m, ("placement", arr), f"unknown memory level '{lvl}'",
                                "one of: " + ", ".join(levels), hint))
    return diags


def _check_partition(d: Design) -> list[Diagnostic]:
    """``partition``: known arrays, a dimension they have, a factor no larger than it."""
    w, m = d.workload, d.mapping
    arrays = set(w.arrays)
    diags: list[Diagnostic] = []
    for arr, p in m.partition.items():
        if arr not in arrays:
            diags.append(_mdiag(m, ("partition", arr), f"unknown array '{arr}'",
                                "one of: " + ", ".join(sorted(arrays)), _close(arr, list(arrays)), key=True))
            continue
        shape = w.shape(arr, d.sizes)
        if p.dim > len(shape):
            diags.append(_mdiag(m, ("partition", arr, "dim"), f"array '{arr}' has {len(shape)} dimension(s)",
                                f"dim from 1 to {len(shape)}"))
        elif p.type != "complete" and p.factor > shape[p.dim - 1]:
            diags.append(_mdiag(m, ("partition", arr, "factor"), f"factor {p.factor} exceeds dimension "
                                f"{p.dim} of '{arr}' ({shape[p.dim - 1]})", f"at most {shape[p.dim - 1]}"))
    return diags


def _check_operators(d: Design) -> list[Diagnostic]:
    """Every operator class the kernel uses (``select`` aside: free-standing multiplexers) is one the
    architecture provides."""
    a, w = d.arch, d.workload
    have_ops = set(a.operators)
    file = w.source_map.file if w.source_map else "<workload>"
    diags: list[Diagnostic] = []
    for st, _loops in d.statements_with_loops():
        for cls in d.stmt_ops(st):
            if cls in have_ops:
                continue
            if cls == "select":
                continue  # multiplexers are free-standing logic
            alt = " (or mul and add)" if cls == "mac" else ""
            afile = f" in {a.source_map.file}" if a.source_map else ""
            if a.source_map and is_bundled(a.source_map.file):  # the installed copy: edit one of your own
                afile = f" of a copy of {a.source_map.file} (`cp` it next to your workload and name the copy)"
            ops = ", ".join(f"`{o}`" for o, c in BINOP_CLASSES.items() if c == cls)
            what = f" (C {ops})" if ops else ""
            diags.append(Diagnostic(file, st.line, None, "workload.kernel",
                                    f"the kernel uses operator class '{cls}'{what} in `{st.text}`, which "
                                    f"architecture '{a.name}' does not provide",
                                    f"an operator '{cls}'{alt} under architecture.compute.operators",
                                    f"add `{cls}: {{count: 16, bits: 32, latency_cycles: 1}}` under "
                                    f"compute.operators{afile} (energy and area come from the "
                                    f"{a.technology} technology table; see docs/spec-reference.md, "
                                    "'Operator classes'), or use an architecture that has it"))
    return diags


def _check_legal(d: Design, label: str, loop: Loop, lm) -> list[Diagnostic]:
    """Pipelining or unrolling a loop is refused (an error) when a loop inside it has a trip count only
    the run knows: a pipelined loop's inner loops are unrolled completely, and unrolled copies run in
    lockstep, which an inner loop of unknown length forbids (HLS tools refuse both). An II below the
    dependence bound is a warning from ``validate`` (``llmulator.checks``): the loop still runs, slower."""
    out: list[Diagnostic] = []
    inner = [n for n in loop.descendants() if isinstance(n, Loop) and not n.static]
    if not inner:
        return out
    first = inner[0]
    file = d.workload.source_map.file if d.workload.source_map else "<workload>"
    why = (f"loop {first.label} (line {first.line} of {file}) inside it has a trip count only the run knows "
           f"({first.dynamic_reason})")
    for field, what in (("pipeline_ii", "pipelined"), ("unroll", "unrolled")):
        if getattr(lm, field, None) and (field != "unroll" or lm.unroll > 1):
            out.append(_mdiag(d.mapping, ("loops", label, field), f"loop {label} cannot be {what}: {why}",
                              f"{field} only on loops whose inner loops have static trip counts",
                              f"put {field} on {first.label} or on a loop inside it instead"))
    return out


def _check_fuse(d: Design) -> list[Diagnostic]:
    """``fuse``: loops of one rectangular band bound to the PE array, inside the fused loop in kernel
    order, static, with no primitives of their own, each fused once."""
    m, tree = d.mapping, d.tree
    diags: list[Diagnostic] = []
    owner: dict[str, str] = {}
    for label, lm in m.loops.items():
        if not lm.fuse or label not in tree.loops:
            continue
        at = ("loops", label, "fuse")
        band = nest.band_labels(tree, label)
        inside = band[band.index(label) + 1:]
        for i, mb in enumerate(lm.fuse):
            if mb not in tree.loops:
                diags.append(_mdiag(m, at + (i,), f"unknown loop label '{mb}' in fuse",
                                    "labels of loops nested inside " + label, _close(mb, list(tree.loops))))
            elif mb not in inside:
                diags.append(_mdiag(m, at + (i,), f"loop {mb} is not inside {label} in one perfect band",
                                    f"loops of band {' > '.join(band)} inside {label}"))
            elif mb in owner or mb in m.order or m.loop(mb) != type(m.loop(mb))():
                why = (f"it is already fused into {owner[mb]}" if mb in owner else
                       "it is listed in order (name the fused loop by its first label)" if mb in m.order else
                       "it has primitives of its own (the fused loop's apply to all of it)")
                diags.append(_mdiag(m, at + (i,), f"loop {mb} cannot be fused into {label}: {why}",
                                    "loops with no mapping of their own"))
            owner[mb] = label
        known = [mb for mb in lm.fuse if mb in inside]
        nested = [lb for lb in inside if lb in known]
        if known != nested:
            diags.append(_mdiag(m, at, f"fuse lists {', '.join(known)} out of their nesting order",
                                "the loops in kernel order, outermost first", f"fuse: [{', '.join(nested)}]"))
        group = [tree.loops[lb] for lb in [label] + known]
        if any(lp.data_dependent or lp.is_while or lp.depends_on_outer or not lp.simple for lp in group):
            diags.append(_mdiag(m, at, f"fused loops need static, rectangular bounds ({label}, {', '.join(known)})",
                                "loops whose trip counts do not depend on data or on other loops"))
        if not any(m.loop(lb).spatial for lb in band):
            diags.append(_mdiag(m, at, f"fuse needs a band bound to the PE array (band {' > '.join(band)} "
                                "binds no loop with spatial)", "a spatial loop in the same band",
                                "fusion flattens loops over PE rows or columns (e.g. P x Q output pixels)"))
    return diags


def _dedupe(diags: list[Diagnostic]) -> list[Diagnostic]:
    seen, out = set(), []
    for dg in diags:
        k = (dg.file, dg.line, dg.message.split(" in `")[0])
        if k not in seen:
            seen.add(k)
            out.append(dg)
    return out
