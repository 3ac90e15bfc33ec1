"""Diagonals a constant apart name the union of their elements (hlsim 0.77 / analytical 0.91, 2026-12-08).

An outside probe of hlsim 0.75: `y[i] = A[i][i] + A[i + 1][i + 1]` over 7 points reads the 8 diagonal elements
A[0][0] .. A[7][7], and hlsim moved 14 words (one per point per subscript; 28 under 0.74; test_parameter_strides
held the 14 as a known excess until this change). The hand counts: two translates of one diagonal by k overlap
in all but k elements; subscripts that leave the diagonal (`A[i][i + 1]`) name elements of their own.
"""

from __future__ import annotations

import pytest
from conftest import kernel_design, profiled_and_estimated
from llmulator.library import resolve

ARCH = resolve("architecture", "hls-fpga").read_text()


def _diag(write, lo: str, hi: str, body: str, loops: str = "{}"):
    kernel = f"    L_i: for (int i = {lo}; i < {hi}; i++) {{\n      y[i] = {body};\n    }}"
    return kernel_design(write, ARCH, kernel, "    A: {shape: [N, N], dtype: fp32, role: in}\n"
                         "    y: {shape: [N], dtype: fp32, role: out}",
                         f"    for i in range({lo}, {hi}):\n        y[i] = {body}", loops, "{A: BRAM, y: BRAM}",
                         params="{N: 8}")


@pytest.mark.parametrize("lo,hi,body,words", [
    ("0", "N - 1", "A[i][i] + A[i + 1][i + 1]", 8),                     # 7 + 7 - 6
    ("1", "N - 1", "A[i - 1][i - 1] + A[i][i] + A[i + 1][i + 1]", 8),   # 0..5, 1..6, 2..7
    ("0", "N - 2", "A[i][i] + A[i + 2][i + 2]", 8),                     # 0..5 and 2..7
    ("0", "N - 1", "A[i][i] + A[i][i + 1]", 14),                        # the diagonal and the one beside it
    ("0", "N - 1", "A[i][i] + A[i + 1][i]", 14),
])
def test_the_words_a_tile_moves_are_the_elements_its_subscripts_name(write, lo, hi, body, words):
    p, e = profiled_and_estimated(_diag(write, lo, hi, body))
    assert p.counters["distinct_read"] == words  # the run's own count of A's elements (y is only written)
    assert p.counters["reads.DRAM"] == words
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-6)


def test_tiles_of_shifted_diagonals_each_hold_their_union(write):
    # tiles of 4 points: 0..3 + 1..4 = 5 elements, then 4..6 + 5..7 = 4: 9 words by hand, each tile loading its
    # own (14 before). The model prices the mean tile, 3.5 points at the 5 / 4 elements per point of a full
    # one: 8.75, between the 8 distinct elements and the hand count
    p, _ = profiled_and_estimated(_diag(write, "0", "N - 1", "A[i][i] + A[i + 1][i + 1]", "{L_i: {tile: 4}}"))
    assert p.counters["distinct_read"] == 8 and 8 <= p.counters["reads.DRAM"] <= 9


def test_a_while_loop_whose_exit_test_reads_a_diagonal_moves_the_element_it_stopped_on(write):
    # an outside probe of 0.77's first form: `while (i < N && A[i][i] < 100) i++;` stopped by the data after 18
    # trips reads 19 diagonal elements (the last test's too), and hlsim refused its own count (18 words: one per
    # trip, InvariantError); the twin with a 1-D `a[i]` had always counted the exit test's element
    kernel = "    int i = 0;\n    L_x: while (i < N && A[i][i] < 100) {\n      i++;\n    }\n    o[0] = i;"
    d = kernel_design(write, ARCH, kernel, "    A: {shape: [N, N], dtype: int16, role: in}\n"
                      "    o: {shape: [1], dtype: int32, role: out}",
                      "    i = 0\n    while i < N and A[i, i] < 100:\n        i += 1\n    o[0] = i", "{}",
                      "{A: BRAM, o: BRAM}", params="{N: 32}", hints="{L_x: {expected_trips: 8}}")
    p, _ = profiled_and_estimated(d)
    assert p.counters["distinct_read"] <= p.counters["reads.DRAM"] <= p.counters["distinct_read"] + 1


def test_shifted_diagonals_under_a_while_counter_name_their_union(write):
    # an outside probe of 0.77: the while twin of the first case above, `y[i] = A[i][i] + A[i + 1][i + 1]; i++;`
    # while i < N - 1, reads the 32 diagonal elements of a 32 x 32 A and moved 64 (two per trip); the counter's
    # dimension spans one step more than its 31 trips, so the model's mean is 32 / 31 per point over 32 points
    kernel = "    int i = 0;\n    L_w: while (i < N - 1) {\n      y[i] = A[i][i] + A[i + 1][i + 1];\n      i++;\n    }"
    d = kernel_design(write, ARCH, kernel, "    A: {shape: [N, N], dtype: fp32, role: in}\n"
                      "    y: {shape: [N], dtype: fp32, role: out}",
                      "    for i in range(N - 1):\n        y[i] = A[i, i] + A[i + 1, i + 1]", "{}",
                      "{A: BRAM, y: BRAM}", params="{N: 32}")
    p, e = profiled_and_estimated(d)
    assert p.counters["distinct_read"] == 32
    assert 32 <= p.counters["reads.DRAM"] <= 33.1
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-6)
