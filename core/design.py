"""A Design = (architecture, workload, mapping, size preset), checked as a whole.

Single files are validated by their schemas; everything that needs two files
at once (a mapping names a loop or memory level that does not exist, a tile
larger than its loop, a buffer too small for its tiles, an operator the
architecture lacks) is checked by ``check_design`` (``llmulator.design_checks``,
importable from here), with diagnostics that point at the line of the file that
has to change.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

import attrs

from . import nest
from .design_checks import check_design
from .errors import Diagnostic, SpecError
from .expr import ExprError, evaluate
from .kernel import Access, Branch, Loop, LoopTree, analyze
from .specs import Architecture, Mapping, Workload, load_architecture, load_mapping, load_workload
from .variant_trips import variant_branch_probability, variant_trip_scale


def index_step(loop: Loop) -> int:
    """How far a loop's variable moves per trip, as an index coefficient multiplies it: the constant step of an
    additive loop (``i += 2``), else 1 (a geometric or symbolic step: its trips are counted, not its span)."""
    return abs(loop.step) if loop.step_op == "+" and loop.step_text is None and loop.step else 1


@attrs.define(eq=False)
class Design:
    """One point to estimate: an architecture, a workload and a mapping at a size preset (and input variant)."""

    arch: Architecture  # the architecture (YAML ``architecture:``; note the short name)
    workload: Workload  # the workload; with ``variant`` set, its scalars are the variant's
    mapping: Mapping  # the mapping
    preset: str | None = None  # the workload's size preset (None: its default ``parameters``)
    variant: str | None = None  # the workload's input variant this design is estimated for (None: base inputs)
    #: loop label -> trips per entry a profiler measured on real inputs: what ``trips`` answers for them before
    #: any estimate (hlsim prices transfers, energy and its bounds on the run it measured, not on draws)
    measured_trips: dict[str, float] = attrs.field(factory=dict, repr=False)
    #: band head label -> times a profiler's run entered the band (the branches around it as the run took them):
    #: tile transfers charge a loop's tiles only as often as it runs (``traffic.Nest.entries``,
    #: ``transfers._entered_share``)
    measured_entries: dict[str, float] = attrs.field(factory=dict, repr=False)

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
        return analyze(self.workload, sizes=self.sizes)

    def trips(self, label: str, hints: dict[str, Any] | None = None) -> float:
        """Expected trips of one loop per entry: what a profiler measured (``measured_trips``), else a loop's
        trip profile (triangular, csr rows, control run on draws of the declared inputs), else its static
        count or its hint (a variant's hints win)."""
        if label in self.measured_trips:
            return float(self.measured_trips[label])
        if hints is None:
            hints = self.hints
        mean = self._profile_means.get(label)
        if mean is None and self.trip_profile(label) is not None:
            profile = self.trip_profile(label)
            mean = self._profile_means[label] = sum(profile) / len(profile) if profile else 0.0
        if mean is not None:
            return mean
        try:  # a variant's scalars move a hint over undeclared inputs (variant_trips)
            return self.tree.static_trips(label, self.values, hints) * variant_trip_scale(self, label)
        except KeyError as e:
            raise SpecError(self._missing_trips(label, e.args[0] if e.args else label)) from None
        except ExprError as e:
            loop = self.tree.loops[label]
            raise SpecError(Diagnostic(self.workload.source_map.file if self.workload.source_map else "",
                                       loop.line, None, "workload.kernel", f"loop {label}: {e}")) from None

    def _missing_trips(self, label: str, outer: str) -> Diagnostic:
        """Why loop ``label`` has no expected trips: its own bound only the run knows, or (``outer`` another
        loop) a bound that follows the variable of an enclosing loop whose trips only the run knows."""
        loop, file = self.tree.loops[label], self.workload.source_map.file if self.workload.source_map else "<workload>"
        fix = f"add under workload: `hints: {{{label}: {{expected_trips: <expression>}}}}`"
        if outer == label:
            return Diagnostic(file, loop.line, None, f"workload.hints.{label}", f"loop {label} has a data-dependent "
                              "trip count and no expected value", "an expected trip count for static estimators", fix)
        why = self.tree.loops[outer].dynamic_reason or "a data-dependent trip count"
        return Diagnostic(file, loop.line, None, f"workload.hints.{label}", f"loop {label}'s bounds follow the "
                          f"variable of loop {outer}, whose values only the run knows ({why})",
                          f"an expected trip count per entry of {label}", f"{fix} (its trips per entry), or one "
                          f"for {outer}, whose mean value it then takes")

    def trip_profile(self, label: str, guarded: bool = True) -> list[int] | None:
        """Trips of every entry of a triangular loop (``LoopTree.trip_profile``; with ``guarded`` False, whatever
        the `if`s around it select), of a loop over one row of a declared csr structure (``structure_trips``), or
        of a while loop or data-bounded loop whose control the declared inputs drive (``llmulator.input_trips``:
        one entry per lane, an entry of the enclosing loops under one draw of the inputs), memoised per design."""
        cache, key = self._profiles, (label if guarded else (label, False))
        if key not in cache:
            from .input_trips import input_trip_profile
            from .structure_trips import csr_profile
            loop = self.tree.loops[label]
            cache[key] = csr_profile(self, label) if loop.data_dependent and not loop.is_while else None
            if cache[key] is None and (loop.data_dependent or loop.is_while):
                cache[key] = input_trip_profile(self, label)
            if cache[key] is None:
                try:
                    ups = [a.label for a in loop.ancestors() if a.exits_early]  # (unguarded: each one's every pass)
                    early = {lb: self.trips(lb) if guarded else None for lb in ups}
                    cache[key] = self.tree.trip_profile(label, self.values, guarded=guarded, prefix=early)
                except (ExprError, KeyError, ValueError, TypeError, SpecError):
                    cache[key] = None  # bounds the enumeration cannot evaluate: the mean-value estimate stands
        return cache[key]

    def longest_trips(self, label: str, guarded: bool = True) -> float | None:
        """The most trips an entry of a static loop runs (its trip profile's maximum), or None without a profile:
        what a tile of an array it indexes spans (of the entries the `if`s around it let through) and, ``guarded``
        False, what the hardware is built for: what a region unrolls it to, the most a tile or unroll may take."""
        profile = self.trip_profile(label, guarded) if self.tree.loops[label].static else None
        return float(max(profile)) if profile else None

    def return_share(self, label: str) -> float:
        """The share of the kernel's runs that a ``return`` inside the top-level loop ``label`` ends (0 for a
        loop without one, or where the declared inputs cannot say: ``input_trips.input_return_share``); what
        follows the loop runs on the rest."""
        loop = self.tree.loops[label]
        if not any(getattr(n, "kind", "") == "jump" and n.text == "return" for n in loop.descendants()):
            return 0.0
        from .input_trips import input_return_share
        return input_return_share(self, label) or 0.0

    @cached_property
    def _profiles(self) -> dict[str, list[int] | None]:
        return {}

    @cached_property
    def _profile_means(self) -> dict[str, float]:
        return {}

    @cached_property
    def values(self) -> dict[str, float]:
        """Values of the parameters and scalars (the input variant's, when it sets any), for evaluating
        loop bounds and the constant part of a subscript (``A[i + k]``, k an integer scalar)."""
        scalars = self.workload.scalars
        if self.variant is not None:
            from .inputs import resolve_inputs
            scalars = resolve_inputs(self.workload, self.variant)["scalars"]
        return {**self.sizes, **{k: v["value"] for k, v in scalars.items()}}

    @cached_property
    def _index_branches(self) -> dict[int, float]:
        return self.tree.index_branch_probabilities(self.values)

    @cached_property
    def _input_branches(self) -> dict[int, float]:
        """Taken probabilities that the declared inputs give: a comparison of one element with a constant
        integrated over its distribution (``llmulator.branch_inputs``, exact), else the condition run on
        draws of the inputs (``llmulator.input_trips.input_branch_share``)."""
        from .branch_inputs import input_branch_probabilities
        from .input_trips import input_branch_share
        out = input_branch_probabilities(self)
        for n in self.tree.walk():
            if isinstance(n, Branch) and n.data_dependent and id(n) not in out and id(n) not in self._index_branches:
                p = input_branch_share(self, n)
                if p is not None:
                    out[id(n)] = p
        return out

    @cached_property
    def _scalar_branches(self) -> dict[int, float]:
        """Taken shares of the branches that read no array but are not conditions on loop indices alone: on
        scalars the kernel computes itself (a circular index, a modulo counter), from one run of its scalar
        control (``llmulator.scalar_control``); else (an index condition under a data-dependent branch) the
        share of draws of the declared inputs on which it holds, among the entries that reach it
        (``llmulator.input_trips``)."""
        from .input_trips import input_branch_share
        from .scalar_control import scalar_branch_shares
        out = scalar_branch_shares(self, set(self._index_branches))
        for n in self.tree.walk():
            if isinstance(n, Branch) and not n.data_dependent and id(n) not in self._index_branches \
                    and id(n) not in out:
                p = input_branch_share(self, n, any_branch=True)
                if p is not None:
                    out[id(n)] = p
        return out

    def control_from_inputs(self) -> bool:
        """Every trip count and branch outcome that depends on the input data is priced from what the workload
        declares — an index-only condition, a declared distribution (``llmulator.branch_inputs``), a declared
        structure or the loop's control run on draws of declared inputs (``trip_profile``) — and none from a
        hint or a default. Then the static count is the expectation over the declared inputs; what it misses
        on one input is that input's draw, which no static model sees. A branch that reads no array counts
        too: its share must come from its indices or the kernel's scalar control, not a hint or 0.5."""
        for n in self.tree.walk():
            if isinstance(n, Branch) and not n.data_dependent and id(n) not in self._index_branches \
                    and id(n) not in self._scalar_branches:
                return False
            if isinstance(n, Branch) and n.data_dependent and id(n) not in self._index_branches \
                    and id(n) not in self._input_branches:
                return False
            if isinstance(n, Loop) and (n.data_dependent or n.is_while) and self.trip_profile(n.label) is None:
                return False
        return True

    def branch_probability(self, br) -> tuple[float, str | None]:
        """Taken probability of a branch, and a note when it is a guess: the exact share for a condition
        on loop indices only (``LoopTree.index_branch_probabilities``: the control flow itself, which
        no input changes, so it beats any hint), else for a comparison of an input element with a constant
        the share of its declared distribution that passes (``llmulator.branch_inputs``: exact in
        expectation, and it follows the variant), else for a condition over scalars and declared inputs the
        share of draws on which it holds (``llmulator.input_trips``), else for a condition on scalars the
        kernel computes the share of one run of its scalar control (``llmulator.scalar_control``), else the
        hint of the design's input variant, else 0.5."""
        if id(br) in self._index_branches:
            return self._index_branches[id(br)], None
        if id(br) in self._input_branches:
            return self._input_branches[id(br)], None
        if not br.data_dependent and id(br) in self._scalar_branches:
            return self._scalar_branches[id(br)], None
        h = self.hints.get(br.label or "", {})
        if "taken_probability" in h:  # a variant's scalars move a hint over undeclared inputs (variant_trips)
            return variant_branch_probability(self, br, float(h["taken_probability"])), None
        how = (f"add workload.hints.{br.label}.taken_probability" if br.label else
               "label it (L_name: if (...)) and add workload.hints.L_name.taken_probability")
        return 0.5, f"branch at line {br.line} (`{br.cond_text}`) has no taken_probability hint; assumed 0.5 ({how})"

    def branch_guessed(self, br) -> bool:
        """A branch priced from a ``taken_probability`` hint or the 0.5 default: nothing derived its share."""
        return (id(br) not in self._index_branches and id(br) not in self._input_branches
                and (br.data_dependent or id(br) not in self._scalar_branches))

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
        """Elements of ``array`` touched by one tile (all point loops run once): per dimension the box its
        accesses span, at most the elements they name (as ``llmulator.transfers.footprints`` counts them)."""
        accesses = [a for st in self.statements_with_loops() for a in st[0].accesses if a.array == array]
        shape = self.workload.shape(array, self.sizes)
        if not accesses:
            return 0.0
        total = 1.0
        for d, size in enumerate(shape):
            ext, consts, points, seen = 0.0, [], 1.0, set()
            for acc in accesses:
                aff = acc.affine[d] if d < len(acc.affine) else None
                if aff is None:
                    ext, points = size, float(size)
                    break
                e, p = 1.0, 1.0
                for v, c in aff.coefs.items():
                    loop = self._loop_of_var(v)
                    if loop is not None:  # a loop stepping by 2 spans 2 elements a trip (llmulator.traffic)
                        e += abs(c) * index_step(loop) * (self.tile(loop.label) - 1)
                        p *= self.tile(loop.label)
                ext, points = max(ext, e), max(points, p)
                seen.add((tuple(sorted(aff.coefs.items())), str(aff.const)))
                try:
                    consts.append(float(evaluate(aff.const, self.values)))
                except ExprError:
                    pass
            spread = (max(consts) - min(consts)) if consts else 0.0
            total *= min(size, ext + spread, points * max(len(seen), 1))
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
                elif isinstance(n, Branch):
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
