"""Trips of a loop whose control reads input data, from the inputs the workload declares: its control on draws.

``int x = a[i]; int c = 0; L_w: while (x > 1 && c < 64) { x = (x & 1) ? 3 * x + 1 : x >> 1; c++; }`` runs as
many trips as its recurrence takes from ``a[i]``; ``while (k < n && d[k] != key[q]) k++;`` as many as the first
match in ``d``; ``for (j = 0; j < len[i]; j++)`` as many as ``len[i]``. Only the data knows these counts, but
the workload declares the data's distributions (``inputs.arrays``). An ``expected_trips`` hint is a guess
written once: synth-v3's generator hinted 32 trips for a Collatz loop over values in [1, 20], whose mean is
about 7, and such loops made 70-85 % of the analytical prior's remaining cycles error (docs/prior-error.md).

The loop's control runs on *lanes* (``llmulator.c_lanes``): every entry of the enclosing loops (enumerated
as ``LoopTree.trip_profile`` does) times a few draws of the declared inputs, made by ``llmulator.inputs``
exactly as a profiler's are but with seeds of our own, so the result is the expectation under the declared
distributions, not a run on the workload's own input. The statements before the loop in its enclosing
loop's body give its scalars their values on each lane; inside the loop only the statements the control
depends on run (a slice: the scalars its condition reads, and whatever assigns them, to a fixed point).
Each lane's count is one entry of the loop's trip profile (``Design.trip_profile``), so the static
estimators price the mean and the per-entry spread, and follow an input variant.

Only declared inputs count: an array the control reads must have a distribution under ``inputs.arrays`` (of
the variant or the base) or come from a declared structure. The default fill of an undeclared input
(``llmulator.inputs.default_description``) is a profiler's fallback, not a statement about the data, and a
hint the user wrote says more (``llmulator.variant_trips`` only asks the fill how a variant's scalars move
it). A loop under branches runs on the lanes that take their sides (each side's statements before it run too);
a loop before it that sets one of its scalars, or one inside its slice, runs as well (within the caps), and so
do the top-level statements before its nest that store in an array its control reads (``earlier_writes``). A
loop is also left to its hint when its control reads an array the kernel writes otherwise (in its own nest, or
an element nothing before it wrote), needs ``continue`` or a ``return`` (except in a loop at the kernel's top
level), sits in a block that is neither a loop body nor a branch's side, or lies beyond the caps below; and
always when the inputs come from a generator (user code, which this never runs).
"""

from __future__ import annotations

import json
import math

import numpy as np
from pycparser import c_ast

from . import kernel_values as kv
from .c_lanes import Lanes, Unsupported
from .c_names import LOOPS, array_reads, assigned, read_names
from .c_slice import chain_to, kept_statements, narrow, slice_body, step_nodes
from .earlier_writes import earlier_writes, run_earlier
from .errors import UserError
from .inputs import _structure_outputs, resolve_inputs

MAX_ENTRIES = 65_536  # entries of the enclosing loops enumerated; beyond, the loop is left to its hint
MAX_LANES = 4_096  # lanes (entries x draws) run; above, an even stride of the entries
MIN_LANES = 1_024  # draws are added until this many lanes, up to MAX_DRAWS
MAX_DRAWS = 16
MAX_INPUT_ELEMENTS = 4_000_000  # elements of the input arrays in all draws together
MAX_TRIPS = 20_000  # trips of one lane (each is a NumPy pass: a runaway lone lane costs at most ~0.5 s)
MAX_WORK = 20_000_000  # lane-trips in all
SEED0 = 1_000_003  # the draws' seeds: SEED0, SEED0 + 1, ... (not a workload's own seed)
_CACHE: dict[tuple, object] = {}  # per design content and question: trips and return share, a share, or None
_CACHE_SIZE = 256
_REFUSED = (Unsupported, UserError, kv.ExprError, ArithmeticError, LookupError, ValueError, TypeError, AttributeError,
            RecursionError, MemoryError)


def input_trip_profile(design, label: str) -> list[int] | None:
    """Trips of each lane (an entry of the enclosing loops under one draw of the declared inputs) of the
    loop ``label`` — a ``while`` loop or a ``for`` loop with a data-dependent bound — or None when its
    control is outside what this module runs."""
    loop = design.tree.loops[label]
    if not (loop.is_while or loop.data_dependent):
        return None
    got = _cached(design, ("loop", label), lambda run: run.profile(label))
    return None if got is None else got[0]


def input_trip_draws(design, label: str) -> list[float] | None:
    """The loop's trips summed over all its entries, per draw of the declared inputs (one total per draw): how
    much one input moves its work. None where its control is outside what this module runs."""
    loop = design.tree.loops[label]
    if not (loop.is_while or loop.data_dependent):
        return None
    got = _cached(design, ("loop", label), lambda run: run.profile(label))   # the same run as the trips
    return None if got is None else got[2]


def input_return_share(design, label: str) -> float | None:
    """The share of a top-level loop's runs (draws of the declared inputs) that a ``return`` inside it ends,
    and with it the kernel: what follows the loop runs on the other share. None where the loop's control is
    outside what this module runs (or the loop is not at the top level: a ``return`` there would also end the
    enclosing loops' later entries, which the lanes treat as independent)."""
    loop = design.tree.loops[label]
    if loop.parent is not None or not (loop.is_while or loop.data_dependent):
        return None
    got = _cached(design, ("loop", label), lambda run: run.profile(label))  # the same run as the trips
    return None if got is None else got[1]


def input_branch_share(design, branch, any_branch: bool = False) -> float | None:
    """How often a data-dependent branch is taken: the share of lanes (entries of the enclosing loops x
    draws of the declared inputs) on which its condition holds, for a condition that reads only scalars set
    before it in its enclosing loop's body and declared inputs the kernel never writes (``if (x[i] * x[i] >
    0.25f)``, ``if ((k[i] & 3) == 0)``, ``int v = a[i] - b[i]; if (v > t)``); None otherwise. Each entry runs
    the branch once, so that share is the expected taken probability per execution, and it follows the
    input variant as the declared distributions do. ``any_branch``: a branch that reads no array too (an
    index condition under a data-dependent branch, which the index enumeration cannot condition on)."""
    if getattr(branch, "ast", None) is None or not (branch.data_dependent or any_branch):
        return None
    return _cached(design, ("branch", branch.line, branch.cond_text), lambda run: run.share(branch.ast))


def default_fill(design, what, variant: str | None, names: dict[str, float]) -> float | None:
    """Loop ``what``'s mean trips (a label) or branch ``what``'s taken share on lanes of ``variant``'s inputs with
    the default fill for undeclared ones and ``names``' values (``variant_trips``); None: the lanes cannot."""
    try:
        run = _Run(design, resolve_inputs(design.workload, variant), names, variant, fill_default=True)
        if not isinstance(what, str):
            return run.share(what.ast)
        got = run.profile(what)[0]
    except _REFUSED:
        return None
    return sum(got) / len(got) if got else None


def _cached(design, what: tuple, compute):
    tree = design.tree
    if tree.body is None:
        return None
    desc = resolve_inputs(design.workload, design.variant)
    if desc["generator"]:
        return None  # user code may fill any array
    key = (tree.source, what, tuple(sorted(design.values.items())), tuple(sorted(design.sizes.items())),
           json.dumps({k: desc[k] for k in ("arrays", "structures")}, sort_keys=True, default=str))
    if key not in _CACHE:
        try:
            _CACHE[key] = compute(_Run(design, desc))
        except _REFUSED:
            _CACHE[key] = None  # outside what this module runs (or inputs it cannot draw): the hint's, as before
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
    return _CACHE[key]


class _Run:
    """Lanes for one loop's control or one branch's condition: on the design's values and inputs, or on ``names``
    and ``variant``'s inputs (``default_fill``); ``fill_default``: undeclared inputs on the profilers' default fill."""

    def __init__(self, design, desc, names=None, variant=None, fill_default=False):
        self.d, self.tree, self.desc, self.fill_default = design, design.tree, desc, fill_default
        self.names, self.variant = (dict(design.values), design.variant) if names is None else (dict(names), variant)

    def profile(self, label: str) -> tuple[list[int], float, list[float]]:
        """(each lane's trips, the share of lanes a ``return`` ended, the trips of each draw's lanes together)
        of one run of the loop."""
        try:
            got = self._loop_lanes(label)
        except _DynamicEntries:
            return self._nested_profile(label)
        if got is None:
            return [], 0.0, []
        n = got[0].size()
        draw = got[0].draw.copy()     # each lane's draw (the run drops finished lanes as it goes)
        trips = _trips(*got)
        per_draw = np.bincount(draw, weights=np.asarray(trips, dtype=float)).tolist() if n else []
        return trips, (got[0].returned or 0) / n if n else 0.0, per_draw

    def _loop_lanes(self, label: str, watch=None) -> tuple | None:
        """Lanes at the entry of loop ``label`` (None: no entry runs), its AST node and the statements of its
        body the run skips; ``watch``: a branch in its body whose condition must be evaluated each trip
        (its scalars join the slice, its arrays the draws)."""
        chain = chain_to(self.tree.body, lambda n: isinstance(n, c_ast.Label) and n.name == label)
        if chain is None or not isinstance(chain[-1].stmt, LOOPS):
            raise Unsupported("loop not found")
        node = chain[-1].stmt
        prefix, ancestors, steps = self._place(chain)
        head = [node.init] if isinstance(node, c_ast.For) and node.init is not None else []
        # `for (;;)` ends only through its body's break or return: the lanes run until every one has left
        control = ([node.cond] if node.cond is not None else []) + (
            [node.next] if isinstance(node, c_ast.For) and node.next is not None else [])
        # a watched branch's condition, or a watched loop's control, joins what the run needs
        watched = [c for c in ((watch.cond, getattr(watch, "init", None), getattr(watch, "next", None))
                               if watch is not None else ()) if c is not None]
        skip, needed = slice_body(node.stmt, set().union(*(read_names(c) for c in control + watched)))
        if watch is not None and isinstance(watch, LOOPS):  # the watched loop runs, and what holds it
            around = chain_to(node.stmt, lambda n: n is watch) or []
            skip = skip - {id(n) for n in around}
        if steps:  # the loop's own init runs right before it, in the innermost branch's side
            steps[-1] = (steps[-1][0] + head, *steps[-1][1:])
        else:
            prefix = prefix + head
        prefix, steps = narrow(prefix, steps, needed | set().union(*(read_names(c) for c in control)))
        lanes = self._lanes(prefix, [*prefix, *step_nodes(steps), *control, *watched,
                                     *kept_statements(node.stmt, skip)], ancestors, steps, chain[1])
        if lanes is not None and not ancestors:
            lanes.returned = 0  # one lane is one run of the kernel: a ``return`` ends its loop (and it)
        return None if lanes is None else (lanes, node, skip)

    def _nested_profile(self, label: str) -> tuple[list[int], float, list[float]]:
        """:meth:`profile` of a loop inside a loop whose trips the data decide (`while (j < N && a[j] == c)`
        inside `while (i < N)`): its entries are what the outer loop's run makes, so the outermost such loop
        runs on its lanes with this one watched, each entry's trips counted (``Lanes.loop_watch``)."""
        inner = self.tree.loops[label]
        outer = next(a for a in inner.ancestors() if a.data_dependent or a.is_while or a.var is None)
        chain = chain_to(self.tree.body, lambda n: isinstance(n, c_ast.Label) and n.name == label)
        got = self._loop_lanes(outer.label, watch=chain[-1].stmt)
        if got is None:
            return [], 0.0, []
        lanes = got[0]
        lanes.loop_watch[id(chain[-1].stmt)] = [[], np.zeros(int(lanes.draw.max()) + 1)]
        _trips(*got)
        trips, per_draw = lanes.loop_watch[id(chain[-1].stmt)]
        return trips, 0.0, per_draw.tolist()

    def share(self, branch_node) -> float | None:
        chain = chain_to(self.tree.body, lambda n: n is branch_node)
        if chain is None:
            raise Unsupported("branch not found")
        inner = [chain[k - 1].name for k, n in enumerate(chain[:-1])
                 if isinstance(n, LOOPS) and k > 0 and isinstance(chain[k - 1], c_ast.Label)]
        loop = self.tree.loops.get(inner[-1]) if inner else None
        if loop is not None and (loop.is_while or loop.data_dependent):
            return self._share_in_loop(branch_node, loop.label)
        prefix, ancestors, steps = self._place(chain)
        prefix, steps = narrow(prefix, steps, read_names(branch_node.cond))
        lanes = self._lanes(prefix, [*prefix, *step_nodes(steps), branch_node.cond], ancestors, steps, chain[1])
        return None if lanes is None else float(lanes.truth(branch_node.cond).mean())

    def _share_in_loop(self, branch_node, label: str) -> float | None:
        """A branch in the body of a loop whose trips the data decide: the loop runs on its lanes, and the
        condition is counted on every trip that reaches the branch (``Lanes.watch``)."""
        got = self._loop_lanes(label, watch=branch_node)
        if got is None:
            return None
        lanes = got[0]
        lanes.watch = {id(branch_node): [0, 0]}
        _trips(*got)
        runs, taken = lanes.watch[id(branch_node)]
        return taken / runs if runs else None

    def _place(self, chain: list) -> tuple[list, list, list]:
        """Where ``chain[-1]`` runs: the statements before it in the body of the innermost enclosing loop (or
        the kernel's top level), the tree's loops around it (outermost first), and the branches between
        (outermost first, each ``(statements before it in its side, the if, whether the side is then)``)."""
        while len(chain) >= 2 and isinstance(chain[-2], c_ast.Label):
            chain = chain[:-1]  # a labelled statement: the label is what its block holds
        ancestors = []
        for k, n in enumerate(chain[:-1]):
            if isinstance(n, LOOPS):
                if k == 0 or not isinstance(chain[k - 1], c_ast.Label) or chain[k - 1].name not in self.tree.loops:
                    raise Unsupported("an enclosing loop without a label")
                ancestors.append(self.tree.loops[chain[k - 1].name])
        k, steps = len(chain) - 1, []
        while True:
            target, holder = chain[k], (chain[k - 1] if k >= 1 else None)
            if holder is None or isinstance(holder, LOOPS):
                return [], ancestors, steps[::-1]  # the statement is its loop's whole body
            if isinstance(holder, c_ast.If):  # a side without braces
                steps.append(([], holder, target is holder.iftrue))
                k -= 1
            elif isinstance(holder, c_ast.Compound):
                items = holder.block_items or []
                before = items[:next(i for i, it in enumerate(items) if it is target)]
                parent = chain[k - 2] if k >= 2 else None
                if holder is self.tree.body or isinstance(parent, LOOPS):
                    return before, ancestors, steps[::-1]
                if not isinstance(parent, c_ast.If):
                    raise Unsupported("a block that is neither a loop body nor a branch's side")
                steps.append((before, parent, holder is parent.iftrue))
                k -= 2
            else:
                raise Unsupported(f"it sits inside a {type(holder).__name__}")
            while k >= 1 and isinstance(chain[k - 1], c_ast.Label):
                k -= 1  # a labelled if: the label is what its block holds

    def _inputs(self, reads: set[str], top) -> tuple[list, set[str], set[str], set[str]]:
        """What the lanes read: (the earlier top-level statements that write arrays the kernel writes and
        ``reads`` names (``llmulator.earlier_writes``), those arrays, the declared inputs they start from, the
        arrays to draw)."""
        written, w = self.tree.written_arrays(), self.d.workload
        declared = set(self.desc["arrays"]) | set().union(*(_structure_outputs(st) for st in self.desc["structures"]))

        def drawn(a: str) -> bool:
            spec = w.arrays.get(a)
            return spec is not None and spec.role in ("in", "inout") and (a in declared or self.fill_default)

        pre, held = earlier_writes(self.tree.body, top, reads & written, written) if reads & written else ([], set())
        for a in reads - held:
            spec = w.arrays.get(a)
            if spec is None or spec.role not in ("in", "inout") or a in written:
                raise Unsupported(f"array {a} is not an input the kernel leaves alone")
            if a not in declared and not self.fill_default:
                raise Unsupported(f"array {a} has no declared distribution (the default is no statement)")
        # what the earlier statements read and nothing declares is not drawn: a lane that reads it is refused
        extra = {a for a in set().union(*(array_reads(s) for s in pre)) - held if drawn(a) and a not in written}
        filled = {a for a in held if drawn(a)}
        return pre, held, filled, reads | held | extra

    def _lanes(self, prefix: list, read_from: list, ancestors: list, steps: list = (), top=None) -> Lanes | None:
        """Lanes with the enclosing loops' variables and the prefix's scalars set, narrowed to the lanes that
        take the sides ``steps`` names (None: no entry gets there); ``top``: the top-level statement that holds
        what runs (the statements before it may write an array it reads)."""
        pre, held, filled, reads = self._inputs(set().union(*(array_reads(s) for s in read_from)), top)
        w = self.d.workload
        entries = self._entries(ancestors)
        if not entries:
            return None
        arrays = self._draws(reads, len(entries))
        draws = next(iter(arrays.values())).shape[0] if arrays else 1
        if len(entries) * draws > MAX_LANES:
            if len(entries) > MAX_LANES:
                pick = np.linspace(0, len(entries) - 1, MAX_LANES).round().astype(int)
                entries = [entries[i] for i in pick]
            draws = max(1, MAX_LANES // len(entries))
            arrays = {a: v[:draws] for a, v in arrays.items()}
        names = dict(self.names)
        ints = set(w.parameters) | {k for k, v in w.scalars.items() if not v["dtype"].startswith("fp")}
        known = {}
        if held:  # the earlier statements run first, on one lane per draw
            early = Lanes(names, ints, arrays, np.arange(draws))
            early.loop_budget = min(MAX_WORK, MAX_TRIPS * draws)
            known = run_earlier(pre, held, filled, arrays, early)
        lanes = Lanes(names, ints, arrays, np.repeat(np.arange(draws), len(entries)))
        lanes.known = known
        for var in {v for e in entries for v in e} - set(names):
            lanes.env[var] = np.tile(np.array([e[var] for e in entries], dtype=np.int64), draws)
            lanes.types[var] = ("i", 64)
        # a loop before it that sets one of its scalars (``n`` counted over the inputs, then ``while (j < n)``),
        # or one inside the slice, runs too: at most MAX_TRIPS NumPy passes (each over every lane) in all
        lanes.loop_budget = min(MAX_WORK, MAX_TRIPS * lanes.size())
        _run_prefix(lanes, prefix)
        for before, node, then in steps:
            taken = lanes.truth(node.cond)
            keep = taken if then else ~taken
            if not keep.any():
                return None
            lanes.compact(keep)
            _run_prefix(lanes, before)
        return lanes

    def _entries(self, ancestors: list) -> list[dict[str, float]]:
        envs: list[dict[str, float]] = [dict(self.names)]
        for anc in ancestors:
            if anc.data_dependent or anc.is_while or anc.var is None:
                raise _DynamicEntries("an enclosing loop with data-dependent trips")
            grown = []
            for env in envs:
                grown.extend({**env, anc.var: v} for v in kv.values(anc, env))
                if len(grown) > MAX_ENTRIES:
                    raise Unsupported("too many entries")
            envs = grown
        return envs

    def _draws(self, reads: set[str], lanes_per_draw: int) -> dict[str, np.ndarray]:
        if not reads:
            return {}
        w, sizes = self.d.workload, self.d.sizes
        size = sum(int(np.prod(w.shape(n, sizes))) for n, a in w.arrays.items() if a.role in ("in", "inout"))
        if size > MAX_INPUT_ELEMENTS:
            raise Unsupported("inputs too large to draw")
        n = max(1, min(MAX_DRAWS, math.ceil(MIN_LANES / max(lanes_per_draw, 1)), MAX_INPUT_ELEMENTS // max(size, 1)))
        from .inputs import generate_inputs
        got = [generate_inputs(w, sizes, self.variant, seed=SEED0 + k) for k in range(n)]
        return {a: np.stack([g[a] for g in got]) for a in reads}


class _DynamicEntries(Unsupported):
    """A loop whose entries only the run of an enclosing data-dependent loop makes (``_nested_profile``)."""


def _trips(lanes: Lanes, node, skip: set[int]) -> list[int]:
    """Run the loop on every lane; each lane's count of body executions."""
    trips = np.zeros(lanes.size(), dtype=np.int64)
    ids = np.arange(lanes.size())
    step = node.next if isinstance(node, c_ast.For) else None
    live = np.ones(lanes.size(), dtype=bool) if isinstance(node, c_ast.DoWhile) or node.cond is None else \
        lanes.truth(node.cond)
    work = 0
    for _ in range(MAX_TRIPS):
        if not live.any():
            return trips.tolist()
        if live.sum() * 2 < live.size:  # finished lanes take no more work
            lanes.compact(live)
            ids, live = ids[live], np.ones(int(live.sum()), dtype=bool)
        trips[ids[live]] += 1
        work += int(live.sum())
        if work > MAX_WORK:
            raise Unsupported("too much work")
        live = lanes.body(node.stmt, live, skip)
        if step is not None:
            lanes.simple(step, live)
        if node.cond is not None:
            live = live & lanes.truth(node.cond, live)
    raise Unsupported("a lane runs past MAX_TRIPS")


def _run_prefix(lanes: Lanes, prefix: list) -> None:
    full = np.ones(lanes.size(), dtype=bool)
    for st in prefix:
        try:
            lanes.block([st], full)
        except Unsupported:
            lanes.unknown |= assigned(st)  # only an error if what follows reads one of them


