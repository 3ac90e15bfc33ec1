"""Branches on scalars the kernel computes itself: their shares from one run of the kernel's scalar control.

``if (--k < 0) k = NTAPS - 1;`` (a circular buffer's read index), ``if (++state >= NTAPS) state = 0;`` (a
modulo counter), a state machine's ``if (phase == 2)``: the condition reads no array, so no input changes
how often it holds, yet it is not a condition on loop indices either (``LoopTree.index_branch_probabilities``
enumerates those), because the scalar carries over from one trip to the next. Before this module such a
branch took its hint or 0.5; on the outside corpus's circular FIR (tests/outside/fircirc.yaml) the 0.5 made
the analytical cycles 11 % high on a design whose control no input touches.

The kernel runs once, in order, on one lane of ``llmulator.c_lanes`` (no compiler, no ``eval``): only its
scalar control, a slice of the statements that assign the scalars those conditions and the loops' controls
read (to a fixed point), with every such branch watched. A branch's share is the share of its executions on
which its condition held, exactly what the profiler would count. Anything outside the subset (a condition or
a needed scalar that reads an array, ``continue``, ``return``) or beyond the trip budget leaves the branches
to their hints, as before.
"""

from __future__ import annotations

import numpy as np
from pycparser import c_ast

from .c_lanes import Lanes, Unsupported
from .c_names import LOOPS, array_reads, assigned, read_names
from .kernel import Branch

MAX_TRIPS = 200_000  # loop trips the run may take in all (one lane: about 1 s at most)
_CACHE: dict[tuple, dict[int, float]] = {}


def scalar_branch_shares(design, known: set[int]) -> dict[int, float]:
    """Taken shares, keyed by ``id`` of the tree's ``Branch``, of the branches that read no array and are not
    in ``known`` (those a cheaper rule already prices), from one run of the kernel's scalar control; {}
    where there is none, or the run is outside what ``c_lanes`` runs."""
    tree = design.tree
    targets = [n for n in tree.walk() if isinstance(n, Branch) and not n.data_dependent and id(n) not in known
               and n.ast is not None]
    if not targets or tree.body is None:
        return {}
    key = (tree.source, tuple(sorted(design.values.items())), tuple(b.line for b in targets))
    if key not in _CACHE and _loop_trips(design) > MAX_TRIPS:
        _CACHE[key] = {}  # past the budget before it starts: not worth running up to it
    if key not in _CACHE:
        try:
            _CACHE[key] = _run(tree.body, [b.ast for b in targets], design)
        except (Unsupported, ArithmeticError, LookupError, ValueError, TypeError, AttributeError, RecursionError,
                MemoryError):
            _CACHE[key] = {}  # outside what c_lanes runs: the hints', as before
        if len(_CACHE) > 256:
            _CACHE.pop(next(iter(_CACHE)))
    return {id(targets[i]): share for i, share in _CACHE[key].items()}


def _loop_trips(design) -> float:
    """Trips of all the kernel's loops together, from the static model's counts (an upper bound of what the
    run takes: loops under branches counted as if always entered); 0 where some count is unknown."""
    from .errors import SpecError
    total = 0.0
    try:
        for loop in design.tree.loops.values():
            n, at = 1.0, loop
            while at is not None:
                n *= design.trips(at.label)
                at = at.parent
            total += n
    except (SpecError, KeyError, ValueError, TypeError, ArithmeticError):
        return 0.0
    return total


def _run(body, watched: list, design) -> dict[int, float]:
    """Run ``body``'s scalar control on one lane; the share of each watched ``if`` (by its index)."""
    skip = _skipped(body, watched)
    w = design.workload
    ints = set(w.parameters) | {k for k, v in w.scalars.items() if not v["dtype"].startswith("fp")}
    lanes = Lanes(dict(design.values), ints, {}, np.zeros(1, dtype=np.int64))
    lanes.loop_budget = MAX_TRIPS
    lanes.watch = {id(n): [0, 0] for n in watched}
    lanes.block(body.block_items or [], np.ones(1, dtype=bool), skip)
    out = {}
    for i, n in enumerate(watched):
        runs, taken = lanes.watch[id(n)]
        if runs:
            out[i] = taken / runs
    return out


def _skipped(body, watched: list) -> set[int]:
    """The statements (by ``id``) the watched conditions and the loops' control do not depend on: those that
    assign no scalar they need (to a fixed point through assignments and the conditions of branches and
    loops that hold needed work), and branches and loops with no needed work inside. Array writes are
    skipped by ``c_lanes`` itself; a needed statement that reads an array makes the run ``Unsupported``."""
    watched_ids = {id(n) for n in watched}
    nodes = list(_statements(body))
    needed = set().union(*(read_names(n.cond) for n in watched))
    live: set[int] = set(watched_ids)
    changed = True
    while changed:
        changed = False
        for n in nodes:
            if id(n) in live:
                continue
            if isinstance(n, (c_ast.If, *LOOPS)):
                control = _control(n)
                hit = any(id(x) in live for x in _statements(_inner(n))) or \
                    any(assigned(c) & needed for c in control)
                reads = set().union(*(read_names(c) for c in control))
            else:
                hit = isinstance(n, (c_ast.Break, c_ast.Continue, c_ast.Return, c_ast.Goto)) or \
                    bool(assigned(n) & needed)
                reads = read_names(n)
            if hit:
                live.add(id(n))
                needed |= reads
                changed = True
    for n in nodes:
        if id(n) in live and not isinstance(n, (c_ast.If, *LOOPS)) and array_reads(n):
            raise Unsupported("a scalar the control needs is computed from an array")
    for n in watched:
        if array_reads(n.cond):
            raise Unsupported("a condition reads an array")
    return {id(n) for n in nodes if id(n) not in live}


def _control(n) -> list:
    """The expressions that decide whether and how often a branch's or a loop's body runs."""
    if isinstance(n, c_ast.If):
        return [n.cond]
    return [x for x in (getattr(n, "init", None), n.cond, getattr(n, "next", None)) if x is not None]


def _inner(n):
    return [n.iftrue, n.iffalse] if isinstance(n, c_ast.If) else [n.stmt]


def _statements(node):
    """Every statement under ``node`` (blocks and labels opened, branches and loops included themselves)."""
    if node is None:
        return
    if isinstance(node, list):
        for x in node:
            yield from _statements(x)
    elif isinstance(node, c_ast.Compound):
        yield from _statements(node.block_items or [])
    elif isinstance(node, c_ast.Label):
        yield from _statements(node.stmt)
    elif isinstance(node, (c_ast.If, *LOOPS)):
        yield node
        yield from _statements(_inner(node))
    else:
        yield node
