"""A Design = (architecture, workload, mapping, size preset), checked as a whole.

Single files are validated by their schemas; everything that needs two files
at once (a mapping names a loop or memory level that does not exist, a tile
larger than its loop, a buffer too small for its tiles, an operator the
architecture lacks) is checked here, with diagnostics that point at the line
of the file that has to change.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

import attrs

from . import nest
from .errors import Diagnostic, SpecError, UserError
from .expr import ExprError, evaluate
from .kernel import BINOP_CLASSES, Access, Loop, LoopTree, analyze
from .specs import Architecture, Mapping, Workload, load_architecture, load_mapping, load_workload
from .yamlsrc import SourceMap


@attrs.define(eq=False)
class Design:
    """One point to estimate: an architecture, a workload and a mapping at a size preset (and input variant)."""

    arch: Architecture  # the architecture (YAML ``architecture:``; note the short name)
    workload: Workload  # the workload; with ``variant`` set, its scalars are the variant's
    mapping: Mapping  # the mapping
    preset: str | None = None  # the workload's size preset (None: its default ``parameters``)
    variant: str | None = None  # the workload's input variant this design is estimated for (None: base inputs)

    @property
    def name(self) -> str:
        """``workload@preset/mapping/architecture``: what tables and records call the design."""
        p = f"@{self.preset}" if self.preset else ""
        return f"{self.workload.name}{p}/{self.mapping.name}/{self.arch.name}"

    @cached_property
    def sizes(self) -> dict[str, int]:
        """Parameter values at the design's preset."""
        return self.workload.sizes(self.preset)

    @cached_property
    def tree(self) -> LoopTree:
        """The kernel's loop tree (``llmulator.kernel``): loops, statements, branches, accesses."""
        return analyze(self.workload)

    def trips(self, label: str, hints: dict[str, Any] | None = None) -> float:
        """Expected trips of one loop per entry (hints for data-dependent loops; a variant's hints win)."""
        if hints is None:
            hints = self.hints

        mean = self._profile_means.get(label)
        if mean is None and self.trip_profile(label) is not None:
            profile = self.trip_profile(label)
            mean = self._profile_means[label] = sum(profile) / len(profile) if profile else 0.0
        if mean is not None:
            return mean
        try:
            return self.tree.static_trips(label, self._names, hints)
        except KeyError:
            loop = self.tree.loops[label]
            raise SpecError(Diagnostic(
                self.workload.source_map.file if self.workload.source_map else "<workload>", loop.line, None,
                f"workload.hints.{label}", f"loop {label} has a data-dependent trip count and no expected value",
                "an expected trip count for static estimators",
                f"add under workload: `hints: {{{label}: {{expected_trips: <expression>}}}}`")) from None
        except ExprError as e:
            loop = self.tree.loops[label]
            raise SpecError(Diagnostic(self.workload.source_map.file if self.workload.source_map else "",
                                       loop.line, None, "workload.kernel", f"loop {label}: {e}")) from None

    def trip_profile(self, label: str) -> list[int] | None:
        """Trips of every entry of a triangular loop (``LoopTree.trip_profile``), memoised per design."""
        cache = self._profiles
        if label not in cache:
            try:
                cache[label] = self.tree.trip_profile(label, self._names)
            except (ExprError, KeyError, ValueError, TypeError):
                cache[label] = None  # bounds the enumeration cannot evaluate: the mean-value estimate stands
        return cache[label]

    @cached_property
    def _profiles(self) -> dict[str, list[int] | None]:
        return {}

    @cached_property
    def _profile_means(self) -> dict[str, float]:
        return {}

    @cached_property
    def _names(self) -> dict[str, float]:
        """Values of the parameters and scalars (the input variant's, when it sets any), for evaluating
        loop bounds."""
        scalars = self.workload.scalars
        if self.variant is not None:
            from .inputs import resolve_inputs
            scalars = resolve_inputs(self.workload, self.variant)["scalars"]
        return {**self.sizes, **{k: v["value"] for k, v in scalars.items()}}

    @cached_property
    def _index_branches(self) -> dict[int, float]:
        return self.tree.index_branch_probabilities(self._names)

    def branch_probability(self, br) -> tuple[float, str | None]:
        """Taken probability of a branch, and a note when it is a guess: the exact share for a condition
        on loop indices only (``LoopTree.index_branch_probabilities``: the control flow itself, which
        no input changes, so it beats any hint), else the hint of the design's input variant, else 0.5."""
        if id(br) in self._index_branches:
            return self._index_branches[id(br)], None
        h = self.hints.get(br.label or "", {})
        if "taken_probability" in h:
            return float(h["taken_probability"]), None
        how = (f"add workload.hints.{br.label}.taken_probability" if br.label else
               "label it (L_name: if (...)) and add workload.hints.L_name.taken_probability")
        return 0.5, f"branch at line {br.line} (`{br.cond_text}`) has no taken_probability hint; assumed 0.5 ({how})"

    @cached_property
    def hints(self) -> dict[str, Any]:
        """The workload's expected-value hints, with the input variant's applied."""
        if self.variant is None:
            return self.workload.hints
        from .inputs import resolve_inputs
        return resolve_inputs(self.workload, self.variant)["hints"]

    def tile(self, label: str) -> float:
        """Point-loop size of a loop: its mapped tile, or all of its trips when untiled."""
        return nest.point_extent(self, label)

    def stmt_ops(self, st) -> dict[str, float]:
        """Operations of a statement by the classes this architecture executes them on.

        ``x += a * b`` runs on a ``mac`` unit when the architecture has one of
        the statement's numeric format (int or float); otherwise on mul + add.
        """
        if "mac" not in st.ops:
            return st.ops
        ops = self.arch.operators
        mac = ops.get("mac")
        is_float = any(n.op == "mac" and n.is_float for n in st.dag)
        if mac is not None and (mac.numeric == "float") == is_float:
            return st.ops
        if "mul" in ops and "add" in ops:
            return st.ops_unfused
        return st.ops

    def used_operator_classes(self) -> set[str]:
        """Operator classes the kernel's statements run on this architecture (what prompts list: an
        architecture's other units cost nothing here and only lengthen them)."""
        used: set[str] = set()
        for st, _ in self.statements_with_loops():
            used.update(k for k, v in self.stmt_ops(st).items() if v)
        return used

    def placement(self, array: str) -> str:
        """The memory level an array lives in (``mapping.placement``; else, with multi-level tiling
        (``mapping.levels``), the outermost on-chip level that keeps it; else the outermost level)."""
        lvl = self.mapping.placement.get(array)
        if lvl is None and self.mapping.levels:
            lvl = self.levels_placement.get(array)
        return lvl if lvl is not None else self.arch.memory[0].name

    @cached_property
    def levels_placement(self) -> dict[str, str]:
        """With ``mapping.levels``: each array's outermost non-DRAM level that keeps it (what rendering,
        hlsim and the single-placement models use; the inner levels' tiling only the analytical model's
        nest analysis reads)."""
        entries = {e.get("level"): e for e in self.mapping.levels}
        out: dict[str, str] = {}
        for lv in self.arch.memory:
            e = entries.get(lv.name)
            if e is None or lv.kind == "dram":
                continue
            keep = e.get("keep")
            keep = keep if keep is not None else [a for a in self.workload.arrays if a not in (e.get("bypass") or [])]
            for a in keep:
                out.setdefault(a, lv.name)
        return out

    def levels_note(self) -> str | None:
        """With ``mapping.levels``: the one-line remark rendered C and hlsim profiles carry."""
        if not self.mapping.levels:
            return None
        placed = ", ".join(f"{a} at {lv}" for a, lv in self.levels_placement.items()) or "none on chip"
        tiled = [e["level"] for e in self.mapping.levels if any(e.get(k) for k in ("temporal", "spatial", "fanout"))]
        return (f"multi-level tiling (mapping.levels): arrays placed at the outermost on-chip level that keeps "
                f"them ({placed}); the tiling of {', '.join(tiled) or 'the levels'} (temporal and spatial factors) "
                "is not rendered or simulated here, only the analytical estimator's nest analysis reads it")

    def to_dict(self) -> dict[str, Any]:
        """The design's names (architecture, workload, mapping, preset, variant) as a JSON-ready dict."""
        return {"architecture": self.arch.name, "workload": self.workload.name, "mapping": self.mapping.name,
                "preset": self.preset, "variant": self.variant}

    def footprint_elems(self, array: str) -> float:
        """Elements of ``array`` touched by one tile (all point loops run once)."""
        accesses = [a for st in self.statements_with_loops() for a in st[0].accesses if a.array == array]
        shape = self.workload.shape(array, self.sizes)
        if not accesses:
            return 0.0
        total = 1.0
        for d, size in enumerate(shape):
            ext, consts = 0.0, []
            for acc in accesses:
                aff = acc.affine[d] if d < len(acc.affine) else None
                if aff is None:
                    ext = size
                    break
                e = 1.0
                for v, c in aff.coefs.items():
                    loop = self._loop_of_var(v)
                    if loop is not None:
                        e += abs(c) * (self.tile(loop.label) - 1)
                ext = max(ext, e)
                try:
                    consts.append(float(evaluate(aff.const, self.sizes)))
                except ExprError:
                    pass
            spread = (max(consts) - min(consts)) if consts else 0.0
            total *= min(size, ext + spread)
        return total

    def _loop_of_var(self, var: str) -> Loop | None:
        return next((lp for lp in self.tree.loops.values() if lp.var == var), None)

    def statements_with_loops(self) -> list[tuple[Any, list[Loop]]]:
        """Every statement (and branch condition) with its enclosing loops, outermost first."""
        out = []

        def rec(nodes, loops):
            for n in nodes:
                if isinstance(n, Loop):
                    if n.cond_stmt is not None and n.data_dependent:
                        out.append((n.cond_stmt, loops + [n]))
                    rec(n.body, loops + [n])
                elif getattr(n, "kind", "") == "branch":
                    out.append((n.cond, loops))
                    rec(n.then, loops)
                    rec(n.orelse, loops)
                elif n.kind == "stmt":
                    out.append((n, loops))
        rec(self.tree.roots, [])
        return out

    def accesses(self) -> list[tuple[Access, list[Loop]]]:
        """Every array access with its enclosing loops, outermost first."""
        return [(a, loops) for st, loops in self.statements_with_loops() for a in st.accesses]


def load_design(arch: str | Path, workload: str | Path, mapping: str | Path, preset: str | None = None,
                check: bool = True, variant: str | None = None) -> Design:
    """Load three files into a Design; with ``check`` run the cross-file checks.

    ``variant`` names one of the workload's input variants (an unknown one is a UserError)."""
    errors: list[Diagnostic] = []
    loaded = []
    for fn, p in ((load_architecture, arch), (load_workload, workload), (load_mapping, mapping)):
        try:
            loaded.append(fn(p))
        except SpecError as e:
            errors.extend(e.diagnostics)
            loaded.append(None)
    if errors:
        raise SpecError(errors)
    a, w, m = loaded
    if variant is not None:
        from .inputs import effective_workload
        w = effective_workload(w, variant)  # its scalars; raises UserError naming the known variants
    d = Design(a, w, m, preset if preset is not None else m.preset, variant)
    if check:
        check_design(d)
    return d


def _mdiag(m: Mapping, path: tuple, msg: str, expected: str = "", hint: str = "", key: bool = False) -> Diagnostic:
    smap = m.source_map or SourceMap("<mapping>")
    return smap.diag(("mapping",) + path, msg, expected, hint, prefer_key=key)


def check_design(d: Design) -> None:
    """Cross-file checks; raise SpecError listing every problem found."""
    a, w, m = d.arch, d.workload, d.mapping
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
    tree = d.tree
    labels = list(tree.loops)
    levels = [lv.name for lv in a.memory]
    spatial_use = {"rows": 1, "cols": 1}
    for label, lm in m.loops.items():
        if label not in tree.loops:
            diags.append(_mdiag(m, ("loops", label), f"unknown loop label '{label}'",
                                "one of: " + ", ".join(lb for lb in labels if not lb.startswith("_")),
                                _close(label, labels), key=True))
            continue
        loop = tree.loops[label]
        diags.extend(_check_legal(d, label, loop, lm))
        if lm.tile is not None:
            if loop.data_dependent or loop.is_while:
                diags.append(_mdiag(m, ("loops", label, "tile"), f"loop {label} has a trip count only the run "
                                    f"knows ({loop.dynamic_reason}) and cannot be tiled", "no tile on this loop"))
            elif not loop.simple:
                diags.append(_mdiag(m, ("loops", label, "tile"), f"loop {label} is not of the form "
                                    "`for (v = LO; v < HI; v += CONST)` (its step or condition is another form) "
                                    "and cannot be tiled", "no tile on this loop",
                                    "tiling rewrites the loop head; keep it untiled or write it in that form"))
            else:
                try:
                    bound = d.trips(label)
                    for mb in lm.fuse:
                        bound *= d.trips(mb) if mb in tree.loops else 1
                except SpecError as e:
                    diags.extend(e.diagnostics)
                    continue
                if lm.tile > bound:
                    diags.append(_mdiag(m, ("loops", label, "tile"), f"tile {lm.tile} is larger than the "
                                        f"bound of loop {label} ({bound:g} iterations)",
                                        f"an integer from 1 to {bound:g}"))
        if lm.spatial:
            if a.pe_array is None:
                diags.append(_mdiag(m, ("loops", label, "spatial"), f"architecture '{a.name}' has no "
                                    "PE array to bind loops to", "no spatial binding",
                                    "use unroll instead, or an architecture with compute.pe_array"))
            elif loop.data_dependent or loop.is_while:
                diags.append(_mdiag(m, ("loops", label, "spatial"), f"loop {label} has a data-dependent "
                                    "bound and cannot be bound to the PE array", "no spatial binding",
                                    "bind a loop with a static trip count"))
            else:
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
        if lm.unroll and not (loop.data_dependent or loop.is_while):
            try:
                pt = d.tile(label)
                if lm.unroll > pt:
                    diags.append(_mdiag(m, ("loops", label, "unroll"), f"unroll factor {lm.unroll} exceeds "
                                        f"the {pt:g} iterations of loop {label}", f"at most {pt:g}"))
            except SpecError:
                pass
    diags.extend(_check_fuse(d))
    if a.pe_array is not None:
        for dim, have in (("rows", a.pe_array.rows), ("cols", a.pe_array.cols)):
            used = spatial_use[dim]
            if used > have:
                bound = [lb for lb, lm in m.loops.items() if lm.spatial == dim]
                diags.append(_mdiag(m, ("loops", bound[0], "tile"), f"loops bound to PE {dim} "
                                    f"({', '.join(bound)}) use {used:g} {dim}, the array has {have}",
                                    f"a product of tiles <= {have}"))
    if m.order:
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
    arrays = set(w.arrays)
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
    if m.levels:
        diags.extend(level_diagnostics(d))
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
    if diags:
        raise SpecError(diags)
    # buffer capacity per level
    by_level: dict[str, list[tuple[str, float]]] = {}
    for arr in w.arrays:
        if m.levels and arr not in m.placement:
            continue  # placed by multi-level tiling: its tiles are checked per level by the nest analysis
        lvl = d.placement(arr)
        if a.level(lvl).kind == "dram":
            continue
        try:
            bits = d.footprint_elems(arr) * w.arrays[arr].bits
        except SpecError:
            continue  # a loop without an expected trip count: ``validate`` warns (llmulator.checks)
        by_level.setdefault(lvl, []).append((arr, bits))
    for lvl, items in by_level.items():
        level = a.level(lvl)
        need = sum(b for _, b in items)
        have = level.capacity_bits * level.instances
        if need > have:
            arr0 = max(items, key=lambda t: t[1])[0]
            detail = ", ".join(f"{n} {b / 8192:.2f} KiB" for n, b in items)
            diags.append(_mdiag(m, ("placement", arr0) if arr0 in m.placement else ("placement",),
                                f"buffer capacity exceeded at level {lvl}: tiles need {need / 8192:.2f} KiB "
                                f"({detail}), the level holds {have / 8192:.2f} KiB",
                                "tiles that fit the level",
                                "use smaller tiles or place an array further out, or raise capacity_kib of "
                                f"{lvl}" + (f" in {a.source_map.file}" if a.source_map else "")))
    # operator classes
    have_ops = set(a.operators)
    file = w.source_map.file if w.source_map else "<workload>"
    for st, _loops in d.statements_with_loops():
        for cls in d.stmt_ops(st):
            if cls in have_ops:
                continue
            if cls == "select":
                continue  # multiplexers are free-standing logic
            alt = " (or mul and add)" if cls == "mac" else ""
            afile = f" in {a.source_map.file}" if a.source_map else ""
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
    if diags:
        raise SpecError(_dedupe(diags))


def level_diagnostics(d: Design) -> list[Diagnostic]:
    """A multi-level mapping's (``mapping.levels``) names checked against the other two files: memory
    levels that exist (once each), loop labels, arrays in keep/bypass, fan-out stage names, and every
    loop's factors multiplying to its trips. The analytical model's tiling runs the same checks."""
    a, m = d.arch, d.mapping
    levels = [lv.name for lv in a.memory]
    labels = [lb for lb in d.tree.loops if not lb.startswith("_")]
    arrays = sorted(d.workload.arrays)
    diags: list[Diagnostic] = []
    seen: set[str] = set()
    prods: dict[str, int] = {}
    for i, e in enumerate(m.levels):
        name = e.get("level")
        if name not in levels:
            diags.append(_mdiag(m, ("levels", i, "level"), f"unknown memory level '{name}' (architecture "
                                f"'{a.name}' has no such level)", "one of: " + ", ".join(levels),
                                _close(str(name), levels)))
        elif name in seen:
            diags.append(_mdiag(m, ("levels", i, "level"), f"level '{name}' appears twice in levels",
                                "each memory level at most once"))
        seen.add(name)
        stages = [("temporal", e.get("temporal") or {}, ("levels", i, "temporal")),
                  ("spatial", e.get("spatial") or {}, ("levels", i, "spatial"))]
        for k, st in enumerate(e.get("fanout") or []):
            stages.append(("spatial", st.get("spatial") or {}, ("levels", i, "fanout", k, "spatial")))
            if st.get("name") in levels:
                diags.append(_mdiag(m, ("levels", i, "fanout", k, "name"), f"fan-out stage '{st.get('name')}' "
                                    "has the name of a memory level", "a name of its own"))
        for _kind, factors, path in stages:
            for lb, n in factors.items():
                if lb not in labels:
                    diags.append(_mdiag(m, path + (lb,), f"unknown loop label '{lb}'", "one of: "
                                        + ", ".join(labels), _close(lb, labels), key=True))
                else:
                    prods[lb] = prods.get(lb, 1) * int(n)
        for j, lb in enumerate(e.get("order") or []):
            if lb not in labels:
                diags.append(_mdiag(m, ("levels", i, "order", j), f"unknown loop label '{lb}' in order",
                                    "one of: " + ", ".join(labels), _close(lb, labels)))
        for key in ("keep", "bypass"):
            for j, arr in enumerate(e.get(key) or []):
                if arr not in arrays:
                    diags.append(_mdiag(m, ("levels", i, key, j), f"unknown array '{arr}'",
                                        "one of: " + ", ".join(arrays), _close(arr, arrays)))
    if diags:
        return diags
    for lb in labels:
        try:
            trips = d.trips(lb)
        except SpecError:
            continue
        if prods.get(lb, 1) != trips:
            diags.append(_mdiag(m, ("levels",), f"the factors of loop {lb} over all levels multiply to "
                                f"{prods.get(lb, 1)}, but it has {trips:g} trips",
                                f"temporal and spatial factors whose product is {trips:g}"))
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


def _close(word: str, options: list[str]) -> str:
    import difflib
    c = difflib.get_close_matches(word, options, n=1, cutoff=0.5)
    return f"did you mean '{c[0]}'?" if c else ""
