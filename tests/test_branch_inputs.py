"""Taken probability of a branch on an input element from its declared distribution (llmulator.branch_inputs),
against hand counts and against the share of a large draw of the same distribution (llmulator.inputs)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from llmulator.branch_inputs import comparison, share
from llmulator.inputs import _fill


@pytest.mark.parametrize("cond, want", [
    ("x[j] > 0", ("x", ">", "0")), ("(x[j] > 0)", ("x", ">", "0")), ("0.5f < A[i][k]", ("A", ">", "0.5f")),
    ("v[i+1] <= -3", ("v", "<=", "-3")), ("a0[i] > (-0.5f)", ("a0", ">", "-0.5f")),
    ("(-2) < x[j]", ("x", ">", "-2")), ("T >= d[i]", ("d", "<=", "T")), ("a[i] > b[i]", None),
    ("x[j] > 0 && x[j] < 1", None), ("f(x[j]) > 0", None)])
def test_the_conditions_read_are_one_element_against_one_constant(cond, want):
    assert comparison(cond) == want


@pytest.mark.parametrize("desc, dtype, op, c, want", [
    ({"distribution": "uniform", "range": [-1, 1]}, "fp32", ">", 0.5, 0.25),
    ({"distribution": "uniform", "range": [0, 1]}, "fp32", ">", 0.0, 1.0),
    ({"distribution": "uniform", "range": [0, 1]}, "fp32", "<=", 2.0, 1.0),
    ({"distribution": "uniform", "range": [-1, 1]}, "fp32", "==", 0.0, 0.0),
    ({"distribution": "randint", "range": [0, 9]}, "int32", "<", 3, 0.3),  # 0, 1, 2 of ten values
    ({"distribution": "randint", "range": [0, 9]}, "int32", "==", 3, 0.1),
    ({"distribution": "uniform", "range": [0, 9]}, "int8", ">=", 7, 0.3),  # an int array draws integers
    ({"distribution": "normal", "mean": 0.0, "std": 1.0}, "fp32", ">", 1.0, 0.5 * math.erfc(1 / math.sqrt(2))),
    ({"distribution": "constant", "value": 2.0}, "fp32", ">", 1.0, 1.0),
    ({"distribution": "zeros"}, "fp32", "!=", 0.0, 0.0),
    ({"distribution": "uniform", "range": [1, 2], "density": 0.3}, "fp32", "!=", 0.0, 0.3),  # 70 % zeros
])
def test_the_share_is_the_hand_count_and_a_large_draw_agrees(desc, dtype, op, c, want):
    got = share(desc, dtype, op, c)
    assert got == pytest.approx(want, abs=1e-12)
    from llmulator.inputs import np_dtype
    draw = _fill("w", "x", desc, (200_000,), np_dtype(dtype), np.random.default_rng(0))
    seen = float({">": np.greater, ">=": np.greater_equal, "<": np.less, "<=": np.less_equal, "==": np.equal,
                  "!=": np.not_equal}[op](draw, c).mean())
    assert seen == pytest.approx(want, abs=0.005)


def test_a_distribution_it_does_not_integrate_is_left_to_the_hints():
    assert share({"distribution": "permutation"}, "int32", ">", 3) is None
    assert share({"distribution": "normal", "mean": 0, "std": 1}, "int32", ">", 0) is None  # rounded normal


def test_validate_warns_of_a_branch_priced_at_half_and_not_of_one_with_a_hint(write):
    """`if (t[i] > t[i - 1])` over an array the kernel writes: no hint, and nothing the estimators can run on the
    declared inputs, so they price it at 0.5; validate says so at the branch's line (an outside user's heap
    kernel got no warning, and the llm repeated the guess at 0.99 confidence). A hint silences it."""
    from conftest import kernel_design
    from llmulator.checks import guessed_branches
    from llmulator.library import resolve
    kernel = ("    L_i: for (int i = 1; i < N; i++) {\n      t[i] = t[i - 1] * 3 + x[i];\n"
              "      L_up: if (t[i] > t[i - 1]) {\n        n[0] = n[0] + 1;\n      }\n    }")
    arrays = ("    x: {shape: [N], dtype: int32, role: in}\n    t: {shape: [N], dtype: int32, role: inout}\n"
              "    n: {shape: [1], dtype: int32, role: inout}")
    arch = resolve("architecture", "hls-fpga").read_text()
    d = kernel_design(write, arch, kernel, arrays, "    pass", "{}", "{x: BRAM, t: BRAM, n: BRAM}", params="{N: 16}")
    (w,) = guessed_branches(d)
    assert w.severity == "warning" and w.line == d.tree.loops["L_i"].line + 2
    assert "price it taken half the time" in w.message and "workload.hints.L_up.taken_probability" in w.hint
    hinted = kernel_design(write, arch, kernel, arrays, "    pass", "{}", "{x: BRAM, t: BRAM, n: BRAM}",
                           params="{N: 16}", hints="{L_up: {taken_probability: 0.9}}")
    assert guessed_branches(hinted) == []
