"""How often a branch on an input element is taken, from the distribution the workload declares for it.

``if (x[j] > 0)`` where ``x`` is an input array the kernel never writes: every element is an independent
draw from ``x``'s declared distribution (``llmulator.inputs``: uniform, randint, normal, constant, zeros,
with an optional density of zeros), so the taken probability of any visit is the probability that one
draw satisfies the comparison — whichever elements the loop visits. This is exact in expectation, as the
index-only branch shares are, and it follows the input variant; a ``taken_probability`` hint is a
guess written once and does not (synth-v3's branch mutation wrote 0.5 for ``x[j] > 0`` also under
``x: uniform [0, 1]``, where the branch is always taken, and the prior was 25 % short there).

Only the simplest conditions are read: one element of one such array compared with a number or a
parameter (``A[i][k] <= 3``, ``0.5f < x[j]``). An array filled by a structure (CSR...) or an input
generator, sorted (``order``), or written anywhere in the kernel, and every other condition, is left to
the hints.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from .expr import evaluate
from .inputs import _structure_outputs, default_description, np_dtype, resolve_inputs

_OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
        "!=": np.not_equal}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_ELEM = r"([A-Za-z_]\w*)\s*(?:\[[^\[\]]+\]\s*)+"
# a number or a parameter, maybe in parentheses (C printers write a negative literal as ``(-0.5f)``)
_NUM = r"\(?\s*([-+]?\s*(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fFlLuU]*|[A-Za-z_]\w*)\s*\)?"
_LEFT = re.compile(rf"^\(?\s*{_ELEM}(<=|>=|==|!=|<|>)\s*{_NUM}\s*\)?$")
_RIGHT = re.compile(rf"^\(?\s*{_NUM}\s*(<=|>=|==|!=|<|>)\s*{_ELEM}\)?$")


def comparison(cond: str) -> tuple[str, str, str] | None:
    """``(array, op, constant text)`` of ``A[..] op c`` or ``c op A[..]`` (then flipped); else None."""
    text = cond.strip()
    m = _LEFT.match(text)
    if m:
        return m.group(1), m.group(2), m.group(3)
    m = _RIGHT.match(text)
    if m:
        return m.group(3), _FLIP[m.group(2)], m.group(1)
    return None


def _constant(text: str, names: dict[str, float]) -> float | None:
    """A numeric literal (C suffixes dropped) or a parameter's value; None for anything else."""
    text = re.sub(r"\s+", "", text)
    try:
        if text.isidentifier():
            return float(evaluate(text, names))
        return float(text.rstrip("fFlLuU"))
    except Exception:  # noqa: BLE001 - a name the sizes do not hold, or not a number: not a known constant
        return None


def share(desc: dict[str, Any], dtype: str, op: str, c: float) -> float | None:
    """Probability that one draw of ``desc`` (an array description of ``llmulator.inputs``) satisfies
    ``draw op c``; None for a distribution this module does not integrate."""
    dist, dt = desc.get("distribution"), np_dtype(dtype)
    is_int = dt.kind in "iu"
    test = _OPS[op]
    if dist in ("uniform", "randint") and (dist == "randint" or is_int):
        lo, hi = (float(v) for v in desc["range"])
        vals = np.arange(math.ceil(lo), math.floor(hi) + 1)
        if vals.size == 0 or vals.size > 1_000_000:
            return None
        p = float(test(vals, c).mean())
    elif dist == "uniform":
        lo, hi = (float(v) for v in desc["range"])
        if hi == lo:
            p = float(test(lo, c))
        elif op in ("==", "!="):
            p = 0.0 if op == "==" else 1.0
        else:
            below = min(max((c - lo) / (hi - lo), 0.0), 1.0)  # P(draw < c) = P(draw <= c)
            p = below if op in ("<", "<=") else 1.0 - below
    elif dist == "normal" and not is_int:
        mean, std = float(desc.get("mean", 0.0)), float(desc.get("std", 1.0))
        if op in ("==", "!="):
            p = 0.0 if op == "==" else 1.0
        else:
            below = 0.5 * math.erfc((mean - c) / (std * math.sqrt(2))) if std > 0 else float(mean < c)
            p = below if op in ("<", "<=") else 1.0 - below
    elif dist in ("constant", "zeros"):
        p = float(test(float(desc.get("value", 0.0)), c))
    else:
        return None
    density = desc.get("density")
    if density is not None:  # the rest of the elements are zeros
        p = float(density) * p + (1.0 - float(density)) * float(test(0.0, c))
    return p


def input_branch_probabilities(design) -> dict[int, float]:
    """Taken probability of every branch whose condition compares one element of an unwritten input array
    with a constant (module docstring), by ``id`` of the branch node."""
    from .kernel import Branch
    w = design.workload
    desc = resolve_inputs(w, design.variant)
    if desc["generator"]:
        return {}  # a generator may fill any array
    structured = set().union(*(_structure_outputs(s) for s in desc["structures"])) if desc["structures"] else set()
    tree = design.tree
    written = tree.written_arrays()
    out: dict[int, float] = {}
    for n in tree.walk():
        if not (isinstance(n, Branch) and n.data_dependent):
            continue
        cmp = comparison(n.cond_text)
        if cmp is None:
            continue
        name, op, const = cmp
        spec = w.arrays.get(name)
        if spec is None or spec.role not in ("in", "inout") or name in written or name in structured:
            continue
        d = desc["arrays"].get(name) or default_description(spec.dtype)
        if d.get("order"):
            continue
        c = _constant(const, design.values)
        if c is None:
            continue
        p = share(d, spec.dtype, op, c)
        if p is not None:
            out[id(n)] = p
    return out
