"""A kernel's bounds and index-only conditions divide as C does (``kernel_values``, ``expr.evaluate(c=True)``):
the quotient truncates toward zero and the remainder keeps the dividend's sign. Python's floor division gave
(t - 3) / 2 = -2 at t = 0 (C: -1) and (t - 3) % 2 = 1 (C: -1); an outside probe's guarded loops ran 0 times in
the static model where the program ran them twice. A spec's own expressions (parameters) keep Python's rules."""

from __future__ import annotations

import pytest
from llmulator import expr
from llmulator import kernel_values as kv


@pytest.mark.parametrize(("a", "b"), [(-3, 2), (3, -2), (-3, -2), (3, 2), (-4, 2), (0, 5), (-1, 4)])
def test_bounds_divide_as_c(a, b):
    q = int(a / b)  # C: toward zero
    assert kv.eval_c("a / b", {"a": a, "b": b}) == q
    assert kv.eval_c("a % b", {"a": a, "b": b}) == a - b * q
    assert kv.holds(f"a / b == {q} && a % b == {a - b * q}", {"a": a, "b": b})


def test_guards_select_the_steps_c_selects():
    assert [t for t in range(4) if kv.holds("(t - 3) % 2 == -1", {"t": t})] == [0, 2]
    assert [t for t in range(4) if kv.holds("(t - 2) / 2 == 0", {"t": t})] == [1, 2, 3]


def test_spec_expressions_keep_pythons_floor():
    assert expr.evaluate("-3 // 2", {}) == -2 and expr.evaluate("-3 % 2", {}) == 1
    assert expr.evaluate("-3 // 2", {}, c=True) == -1 and expr.evaluate("-3 % 2", {}, c=True) == -1
