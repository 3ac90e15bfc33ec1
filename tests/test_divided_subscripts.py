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


@pytest.mark.parametrize("body,ref,words,hand", [
    ("A[i / 2]", "A[i // 2]", 32, 32),                   # 4 tiles x 8 elements (0.79: the mean, 8.5 a tile)
    ("A[i >> 2]", "A[i >> 2]", 16, 16),                  # 4 tiles x 4
    ("A[(i >> 2) + 8]", "A[(i >> 2) + 8]", 16, 16),
    ("A[(2 * i + 1) / 4]", "A[(2 * i + 1) // 4]", 32, 32),  # numerators 1, 3, ..: 8 a tile
    ("A[i / 2 / 2]", "A[i // 4]", 16, 16),               # a quotient of a quotient (0.80: indirect, 256)
    ("A[i / 1] + A[i >> 0]", "A[i] + A[i]", 64, 64),     # i itself (0.80: indirect)
    ("A[(i + 1) / 2]", "A[(i + 1) // 2]", 33, 36),       # numerators 1..16, 17..32, ..: 9 a tile by hand
])
def test_a_tile_moves_its_range_over_the_divisor(write, body, ref, words, hand):
    p, e = profiled_and_estimated(_design(write, body, ref, 16))
    assert p.counters["distinct_read"] == words
    assert p.counters["reads.DRAM"] == hand  # 0.78: 256, the whole array with each of 4 tiles
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-6)


@pytest.mark.parametrize("n,body,ref,size,words", [
    (8, "A[(i + 3) / 4]", "A[(i + 3) // 4]", 3, 3),  # numerators 3..10: 0, 1, 2 (0.81: 2.75, InvariantError)
    (7, "A[(i + 3) / 4]", "A[(i + 3) // 4]", 3, 3),
    (8, "A[(i + 1) / 2]", "A[(i + 1) // 2]", 5, 5),
])
def test_one_tile_whose_first_numerator_is_off_the_divisor_moves_every_element(write, n, body, ref, size, words):
    # an outside probe of 0.79: the mean span, 1 + (T - 1) / d, falls short where the first numerator is not a
    # multiple of the divisor; the phase at the loop's first trip gives the count exactly
    d = kernel_design(write, ARCH, f"    L_i: for (int i = 0; i < N; i++) {{\n      y[i] = {body};\n    }}",
                      f"    A: {{shape: [{size}], dtype: fp32, role: in}}\n"
                      "    y: {shape: [N], dtype: fp32, role: out}",
                      f"    for i in range(N):\n        y[i] = {ref}", "{}", "{A: BRAM, y: BRAM}", params=f"{{N: {n}}}")
    p, e = profiled_and_estimated(d)
    assert p.counters["distinct_read"] == p.counters["reads.DRAM"] == words
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-6)


def test_a_quotient_held_in_a_local_is_the_quotient(write):
    p, _ = profiled_and_estimated(_local_design(write))
    assert p.counters["distinct_read"] == p.counters["reads.DRAM"] == 32  # 0.80: 256


def _local_design(write):
    return kernel_design(write, ARCH, "    L_i: for (int i = 0; i < N; i++) {\n      int t = i / 2;\n"
                         "      y[i] = A[t];\n    }", "    A: {shape: [N], dtype: fp32, role: in}\n"
                         "    y: {shape: [N], dtype: fp32, role: out}",
                         "    for i in range(N):\n        y[i] = A[i // 2]",
                         "{L_i: {tile: 16}}", "{A: BRAM, y: BRAM}", params="{N: 64}")


def test_a_halved_diagonal_names_one_element_per_two_points(write):
    p, _ = profiled_and_estimated(_design(write, "B[i / 2][i / 2]", "B[i // 2, i // 2]", 16,
                                          "    B: {shape: [N, N], dtype: fp32, role: in}"))
    assert p.counters["distinct_read"] == 32  # B[0][0] .. B[31][31]
    assert p.counters["reads.DRAM"] == 32  # 0.78: 16,384 (64 x 64 with each tile); 0.79-0.81: 34


@pytest.mark.parametrize("tile", [3, 5, 7, 64])
def test_tiles_that_start_on_an_odd_point_still_move_every_element_they_read(write, tile):
    # a tile of 3 from i = 3 reads A[1] and A[2]: 2 elements, as one from 0 does; hlsim's own invariant refuses a
    # run whose words fall below what it read, so the profile returning at all is part of the check
    p, _ = profiled_and_estimated(_design(write, "A[i / 2] + A[(i + 1) / 2]", "A[i // 2] + A[(i + 1) // 2]", tile))
    assert p.counters["distinct_read"] == 33  # A[0] .. A[32]
    # numerators i0 .. i0 + T of a tile of T: at most floor((T + 1) / 2) + 1 elements, at its worst phase
    assert 33 <= p.counters["reads.DRAM"] <= -(-64 // tile) * ((tile + 1) // 2 + 1)


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


@pytest.mark.parametrize("body,ref,tile,size,words,low,high", [
    # numerators 1..6, 7..12, ..: ten tiles of 4 and an edge tile (i = 60..63) of 3; 0.82 took the mean tile of
    # 5.8 trips, floored: 33 (a second outside probe)
    ("A[(i + 1) / 2]", "A[(i + 1) // 2]", 6, "N / 2 + 1", 33, 43, 43),
    ("A[i / 2]", "A[i // 2]", 6, "N", 32, 32, 32),
    # tile k names A[4k .. 4k + 3] and A[8k .. 8k + 7]: 12 a tile, 8 in the first (0.82: the larger slope's 8)
    ("A[i / 2] + A[i]", "A[i // 2] + A[i]", 8, "N", 64, 92, 96),
    ("A[i / 2] + A[i / 4]", "A[i // 2] + A[i // 4]", 8, "N", 32, 46, 48),
    # offsets 32 elements apart: two runs of 4 a tile, not one box of 36 (0.82: 128)
    ("A[i / 2] + A[(i + 64) / 2]", "A[i // 2] + A[(i + 64) // 2]", 8, "N", 64, 64, 80),
])
def test_divided_groups_count_each_tile_at_least_by_hand(write, body, ref, tile, size, words, low, high):
    arrays = f"    A: {{shape: [{size}], dtype: fp32, role: in}}"
    p, e = profiled_and_estimated(_design(write, body, ref, tile, arrays))
    assert p.counters["distinct_read"] == words
    assert low <= p.counters["reads.DRAM"] <= high
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-6)


def test_two_dimensional_edge_tiles_count_their_own_elements(write):
    # 6 x 6 tiles over 32 x 32 outputs: five full tiles of 3 rows of B and an edge tile of 1, each way: 16 x 16
    # elements of B once each (0.82: 18 x 18, the edge tiles priced full)
    kernel = "    L_i: for (int i = 0; i < N; i++) {\n      L_j: for (int j = 0; j < N; j++) {\n" \
             "        y[i][j] = B[i / 2][j / 2];\n      }\n    }"
    d = kernel_design(write, ARCH, kernel, "    B: {shape: [N / 2, N / 2], dtype: fp32, role: in}\n"
                      "    y: {shape: [N, N], dtype: fp32, role: out}",
                      "    y[:] = np.repeat(np.repeat(B, 2, axis=0), 2, axis=1)", "{L_i: {tile: 6}, L_j: {tile: 6}}",
                      "{B: BRAM, y: BRAM}", params="{N: 32}")
    p, _ = profiled_and_estimated(d)
    assert p.counters["distinct_read"] == p.counters["reads.DRAM"] == 256


@pytest.mark.parametrize("k,words", [(0, 768), (16, 768)])
def test_accesses_divided_in_different_dimensions_are_counted_access_by_access(write, k, words):
    # `A[i / 2 + k][j] + A[i][j / 4]` in 4 x 8 tiles of a 32 x 32 nest: 2 rows x 8 columns and 4 rows x 2 columns,
    # 24 elements a tile by hand over 32 tiles, whatever k; 0.83 paired one access's rows with the other's
    # columns, (2 + 4) x (8 + 2) = 60 a tile (1,920), and 0.82 grew the box with k (1,024; 2,048 at k = 16)
    kernel = "    L_i: for (int i = 0; i < N; i++) {\n      L_j: for (int j = 0; j < N; j++) {\n" \
             f"        y[i][j] = A[i / 2 + {k}][j] + A[i][j / 4];\n      }}\n    }}"
    d = kernel_design(write, ARCH, kernel, "    A: {shape: [N, N], dtype: fp32, role: in}\n"
                      "    y: {shape: [N, N], dtype: fp32, role: out}",
                      "    for i in range(N):\n        for j in range(N):\n"
                      f"            y[i, j] = A[i // 2 + {k}, j] + A[i, j // 4]",
                      "{L_i: {tile: 4}, L_j: {tile: 8}}", "{A: BRAM, y: BRAM}", params="{N: 32}")
    p, e = profiled_and_estimated(d)
    assert p.counters["reads.DRAM"] == words
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-6)
