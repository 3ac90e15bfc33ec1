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
