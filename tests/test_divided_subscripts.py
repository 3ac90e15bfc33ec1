"""A subscript divided by an integer spans its range over the divisor (hlsim 0.79 / analytical 0.93, 2026-12-08).

An outside probe of hlsim 0.77: `y[i] = B[i / 2][i / 2]` over 64 points in tiles of 16 (B in BRAM) moved the
whole of B from DRAM with every tile, 16,384 words, where the run reads 32 elements: a subscript with `/` or
`>>` had no affine form and was priced as indirect. Pooling and upsampling kernels index this way. The
references are hand counts (i / 2 over a tile of T points starting at an even i names T / 2 elements) and the
run's own count of distinct elements; hlsim refuses any run whose words fall below the elements it read.
"""

from __future__ import annotations

import pytest
from conftest import kernel_design, profiled_and_estimated
from llmulator.library import resolve

ARCH = resolve("architecture", "hls-fpga").read_text()


def _design(write, body: str, ref: str, tile: int, arrays: str = "    A: {shape: [N], dtype: fp32, role: in}"):
    return kernel_design(write, ARCH, f"    L_i: for (int i = 0; i < N; i++) {{\n      y[i] = {body};\n    }}",
                         arrays + "\n    y: {shape: [N], dtype: fp32, role: out}",
                         f"    for i in range(N):\n        y[i] = {ref}", f"{{L_i: {{tile: {tile}}}}}",
                         f"{{{arrays.split(':')[0].strip()}: BRAM, y: BRAM}}", params="{N: 64}")


@pytest.mark.parametrize("body,ref,words,most", [
    ("A[i / 2]", "A[i // 2]", 32, 34),                   # 4 tiles x 8 elements; the model's 8.5 per tile
    ("A[i >> 2]", "A[i >> 2]", 16, 4 * 4.75),            # 4 tiles x 4; the model (16 - 1) / 4 + 1 per tile
    ("A[(i >> 2) + 8]", "A[(i >> 2) + 8]", 16, 4 * 4.75),
])
def test_a_tile_moves_its_range_over_the_divisor(write, body, ref, words, most):
    p, e = profiled_and_estimated(_design(write, body, ref, 16))
    assert p.counters["distinct_read"] == words
    assert words <= p.counters["reads.DRAM"] <= most  # 0.78: 256, the whole array with each of 4 tiles
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-6)


def test_a_halved_diagonal_names_one_element_per_two_points(write):
    p, _ = profiled_and_estimated(_design(write, "B[i / 2][i / 2]", "B[i // 2, i // 2]", 16,
                                          "    B: {shape: [N, N], dtype: fp32, role: in}"))
    assert p.counters["distinct_read"] == 32  # B[0][0] .. B[31][31]
    assert 32 <= p.counters["reads.DRAM"] <= 34  # 0.78: 16,384 (64 x 64 with each tile)


@pytest.mark.parametrize("tile", [3, 5, 7, 64])
def test_tiles_that_start_on_an_odd_point_still_move_every_element_they_read(write, tile):
    # a tile of 3 from i = 3 reads A[1] and A[2]: 2 elements, as one from 0 does; hlsim's own invariant refuses a
    # run whose words fall below what it read, so the profile returning at all is part of the check
    p, _ = profiled_and_estimated(_design(write, "A[i / 2] + A[(i + 1) / 2]", "A[i // 2] + A[(i + 1) // 2]", tile))
    assert p.counters["distinct_read"] == 33  # A[0] .. A[32]
    assert 33 <= p.counters["reads.DRAM"] <= 33 + -(-64 // tile)  # at most one element more per tile


@pytest.mark.parametrize("body,ref", [("A[N / 2] + A[(N >> 2) + 1]", "A[N // 2] + A[(N >> 2) + 1]"),
                                      ("A[N % 5]", "A[N % 5]")])
def test_a_constant_quotient_is_one_element(write, body, ref):
    # the elements are A[32] and A[17] (A[4]) whatever the tile: 0.78 priced `N / 2` as indirect, 256 words
    p, e = profiled_and_estimated(_design(write, body, ref, 16))
    assert p.counters["reads.DRAM"] == p.counters["distinct_read"] == body.count("A[")
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-6)


def test_a_left_shift_is_the_product_it_stands_for(write):
    wide = "    A: {shape: [2 * N], dtype: fp32, role: in}"
    p, e = profiled_and_estimated(_design(write, "A[i << 1]", "A[2 * i]", 16, wide))
    q, _ = profiled_and_estimated(_design(write, "A[2 * i]", "A[2 * i]", 16, wide))
    assert p.counters["distinct_read"] == 64
    assert p.counters["reads.DRAM"] == q.counters["reads.DRAM"] < 2 * 64  # 0.78: 512, the whole array per tile
    assert p.metrics["cycles"] == q.metrics["cycles"]
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-6)
