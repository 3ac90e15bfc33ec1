"""Arrays the kernel writes before a loop whose control reads them: their values on each draw of the declared
inputs, from the statements before the loop's nest that write them, run on one lane per draw.

``cnt[0] = a[1] & 3;`` and then ``L_i: for (...) { L_j: for (int j = cnt[0]; j < n; j++) ... }``: ``L_j``'s
trips follow ``a[1]`` through ``cnt``, an array the kernel writes, which ``llmulator.input_trips`` otherwise
leaves to a hint (no declared distribution says what it holds). But what it holds when ``L_i`` starts is what
the statements before ``L_i`` made of the declared inputs, and those run on lanes as the loop's control does
(``llmulator.c_lanes``): one lane per draw, its writes to the arrays kept per draw (``Lanes.stores``), loops
among them within the same trip budget (``L_0: for (i ...) cnt[i] = a[i] & 3;`` before the nest works too).
The loop's own lanes then read those arrays as they read a drawn input.

Only the kernel's top-level statements before the one that holds the loop run, and only those that write what
the control needs (the arrays, and backwards the scalars and arrays those writes read); the nest that holds the
loop must not write the array (its lanes would not see the writes in order), so that case keeps its hint. An
element no earlier statement wrote is unknown — an ``out`` array's initial content, or an input's without a
declared distribution, is no statement about the data — and a lane that reads one leaves the loop to its hint.
"""

from __future__ import annotations

import numpy as np
from pycparser import c_ast

from .c_lanes import Lanes, Unsupported
from .c_names import array_writes, assigned, read_names


def earlier_writes(body, top, arrays: set[str], written: set[str]) -> tuple[list, set[str]]:
    """The top-level statements of the kernel ``body`` before ``top`` (the top-level statement that holds the
    loop) that the values of ``arrays`` depend on, in order, and every array the kernel writes that they hold
    (``arrays`` and the written arrays those statements read in turn)."""
    items = list(body.block_items or []) if isinstance(body, c_ast.Compound) else []
    at = next((k for k, it in enumerate(items) if it is top), None)
    if at is None:
        raise Unsupported("the loop is not under a top-level statement")
    if array_writes(top) & arrays:
        raise Unsupported("the loop's own nest writes an array its control reads")
    need, out = set(arrays), []
    for st in reversed(items[:at]):
        if (assigned(st) | array_writes(st)) & need:
            out.append(st)
            need |= read_names(st)
    return out[::-1], (need & written) | set(arrays)


def run_earlier(statements: list, held: set[str], filled: set[str], arrays: dict[str, np.ndarray],
                lanes: Lanes) -> dict[str, np.ndarray]:
    """Run ``statements`` on ``lanes`` (one lane per draw, the draws of ``arrays``), storing their writes to the
    ``held`` arrays in ``arrays`` in place; each held array's known elements (``[draw, *shape]``): those the
    statements wrote, and all of those in ``filled`` (inputs whose declared distribution says what they hold
    before the kernel writes them)."""
    if np.unique(lanes.draw).size != lanes.size():
        raise Unsupported("the earlier statements run on one lane per draw")
    lanes.known = {a: np.full(arrays[a].shape, a in filled, dtype=bool) for a in held}
    lanes.stores = True
    lanes.block(statements, np.ones(lanes.size(), dtype=bool))
    known, lanes.known, lanes.stores = lanes.known, {}, False
    return known
