"""Tiles of a band nested in another band's point loops, triangular loops a tile sees one step of (hlsim 0.68), and
the tile positions a guarded band enters (0.69).

A mapping strip-mines each band on its own (``llmulator.nest``): where a loop's body is more than the next loop,
the inner band's tile loop runs inside the outer band's point loop, so an array read there changes tiles on every
step of the outer loop, tiled or not. Before 0.68 the tile model kept the outer loop's tile of 4 for them: x in
a matrix-vector product was loaded once per tile of rows, not once per row (80 words where the program moves
128), and a guarded inner loop wrote back 4-row tiles of which it wrote 1 row (64 where 16). A triangular loop
whose bound reads a loop outside the tile spans, in each tile, the trips of that step, not its most: the sum of
t + 1 over t (40 words), not 4 every tile (64). All hand counts; an outside probe (54) found them.
"""

from __future__ import annotations

import pytest
from conftest import kernel_design, profiled_and_estimated
from test_physical_floors import ONE

GEMV = ("    L_i: for (int i = 0; i < 8; i++) {\n      int s = 0;\n      L_j: for (int j = 0; j < 8; j++) {\n"
        "        s += A[i][j] * x[j];\n      }\n      y[i] = s;\n    }")
GEMV_ARRAYS = ("    A: {shape: [8, 8], dtype: int32, role: in}\n    x: {shape: [8], dtype: int32, role: in}\n"
               "    y: {shape: [8], dtype: int32, role: out}")


def test_an_inner_bands_tiles_change_on_every_step_of_the_outer_point_loop(write):
    """L_i in tiles of 4 around `s = 0; L_j (tiles of 2); y[i] = s`: the code runs i_t, i, j_t, j. x's 4 tiles of
    2 come in again for each of the 8 rows: 64 words; A's 1 x 2 tiles: 64; y 8 written (0.67: 16 + 64 = 80 read)."""
    d = kernel_design(write, ONE, GEMV, GEMV_ARRAYS, "    y[:] = A @ x", "{L_i: {tile: 4}, L_j: {tile: 2}}",
                      "{A: SRAM, x: SRAM, y: SRAM}", params="{}")
    p, e = profiled_and_estimated(d)
    assert (p.counters["reads.DRAM"], p.counters["writes.DRAM"]) == (128, 8)
    assert e.metrics["cycles"] == p.metrics["cycles"]


def test_an_untiled_inner_band_keeps_the_outer_tile(write):
    """The same with L_j untiled: no tile loop inside the rows, so x (all 8) stays and A moves in 4-row tiles:
    8 + 64 read, y 8 written (unchanged by 0.68: the guard of the rule above)."""
    d = kernel_design(write, ONE, GEMV, GEMV_ARRAYS, "    y[:] = A @ x", "{L_i: {tile: 4}}",
                      "{A: SRAM, x: SRAM, y: SRAM}", params="{}")
    p, e = profiled_and_estimated(d)
    assert (p.counters["reads.DRAM"], p.counters["writes.DRAM"]) == (72, 8)
    assert e.metrics["cycles"] == p.metrics["cycles"]


TRI = ("    L_t: for (int t = 0; t < 4; t++) {{\n{guard}      L_a: for (int i = 0; i < 4; i++) {{\n"
       "        L_b: for (int j = 0; j < t + 1; j++) {{ o[i][j] = x[i][j] + 1; }}\n      }}\n{close}    }}")
TRI_ARRAYS = "    x: {shape: [4, 4], dtype: int32, role: in}\n    o: {shape: [4, 4], dtype: int32, role: out}"


def test_a_triangular_loop_spans_its_own_steps_trips_in_each_tile(write):
    """L_a in tiles of 1 under L_t, `j < t + 1`: each tile is row i's first t + 1 elements, 4 x (1 + 2 + 3 + 4) =
    40 each way (0.67: the most, 4, in every tile: 64)."""
    d = kernel_design(write, ONE, TRI.format(guard="", close=""), TRI_ARRAYS, "    o[:] = x + 1",
                      "{L_a: {tile: 1}}", "{x: SRAM, o: SRAM}", params="{}")
    p, e = profiled_and_estimated(d)
    assert (p.counters["reads.DRAM"], p.counters["writes.DRAM"]) == (40, 40)
    assert e.metrics["cycles"] == p.metrics["cycles"]


def test_a_triangular_loop_under_a_branch_moves_the_trips_it_ran(write):
    """The same nest under `if (t == 0)`: L_b runs 1 trip on each of 4 rows: 4 words each way (0.67: 16, the most
    trips; the static mean over every t, 2.5, would give 10). hlsim takes the trips the run measured; the
    analytical model's mean over t does not know which step the branch takes."""
    d = kernel_design(write, ONE, TRI.format(guard="      if (t == 0) {\n", close="      }\n"), TRI_ARRAYS,
                      "    o[:, 0] = x[:, 0] + 1", "{L_a: {tile: 1}}", "{x: SRAM, o: SRAM}", params="{}")
    p, _ = profiled_and_estimated(d)
    assert (p.counters["reads.DRAM"], p.counters["writes.DRAM"]) == (4, 4)


# -- hlsim 0.69: every loop around a guarded band bounds the tile positions it enters (an outside probe of 0.68) --
BAND = ("    L_t: for (int t = 0; t < 4; t++) {\n      if (t == 0) {\n        L_a: for (int i = 0; i < 8; i++) {\n"
        "          L_b: for (int j = 0; j < 4; j++) { o[i][j] = x[i][j] + 1; }\n        }\n      }\n    }")
BAND_ARRAYS = "    x: {shape: [8, 4], dtype: int32, role: in}\n    o: {shape: [8, 4], dtype: int32, role: out}"


def test_a_guarded_band_in_row_tiles_moves_its_tiles_once(write):
    """`if (t == 0)` around `L_a` (8 rows in tiles of 4) and `L_b`, 4 steps of t: the band runs once, 2 tiles of
    16 each way, 32 and 32 (0.66-0.68: 128 and 128, L_b's 8 entries, one per row, against 8 tile positions)."""
    d = kernel_design(write, ONE, BAND, BAND_ARRAYS, "    o[:] = x + 1", "{L_a: {tile: 4}}", "{x: SRAM, o: SRAM}",
                      params="{}")
    p, e = profiled_and_estimated(d)
    assert (p.counters["reads.DRAM"], p.counters["writes.DRAM"]) == (32, 32)
    assert e.metrics["cycles"] == p.metrics["cycles"]


def test_a_guarded_matrix_vector_product_moves_its_row_tiles_once(write):
    """The matrix-vector product under `if (t == 0)` in 4 steps, L_i in tiles of 4, L_j whole: M in 2 tiles of 32
    and x once: 72 read, y 8 written (0.68: 264, M's tiles on every step)."""
    kernel = "    L_t: for (int t = 0; t < 4; t++) {\n      if (t == 0) {\n" + GEMV.replace("\n", "\n    ") + \
        "\n      }\n    }"
    d = kernel_design(write, ONE, kernel, GEMV_ARRAYS, "    y[:] = A @ x", "{L_i: {tile: 4}}",
                      "{A: SRAM, x: SRAM, y: SRAM}", params="{}")
    p, e = profiled_and_estimated(d)
    assert (p.counters["reads.DRAM"], p.counters["writes.DRAM"]) == (72, 8)
    assert e.metrics["cycles"] == p.metrics["cycles"]


def test_a_triangular_loop_around_a_tiled_band_counts_its_mean_positions(write):
    """`for i < 4 { for j < i + 1 (tiles of 2) { s = 0; for k < 4 (tiles of 2) s += M[j][k]; B[i][j] = s; } }`:
    the code runs i, j_t, j, k_t, k, so M[j][k_t..] comes in on every k tile of each of the 10 (i, j): 40 words;
    B 10 (0.68: 33.3, j's 2.5 mean trips in tiles of 1 counted as 3 positions an entry)."""
    kernel = ("    L_i: for (int i = 0; i < 4; i++) {\n      L_j: for (int j = 0; j < i + 1; j++) {\n"
              "        int s = 0;\n        L_k: for (int k = 0; k < 4; k++) { s += M[j][k]; }\n"
              "        B[i][j] = s;\n      }\n    }")
    arrays = "    M: {shape: [4, 4], dtype: int32, role: in}\n    B: {shape: [4, 4], dtype: int32, role: out}"
    ref = "    B[:] = 0\n    for i in range(4):\n        for j in range(i + 1):\n            B[i][j] = M[j].sum()"
    d = kernel_design(write, ONE, kernel, arrays, ref, "{L_j: {tile: 2}, L_k: {tile: 2}}", "{M: SRAM, B: SRAM}",
                      params="{}")
    p, e = profiled_and_estimated(d)
    assert (p.counters["reads.DRAM"], p.counters["writes.DRAM"]) == (40, 10)
    assert e.metrics["cycles"] == p.metrics["cycles"]


# -- hlsim 0.70: a triangle's tile that stays across its outer loop spans its most trips (a probe of 0.69) ---------
def test_a_tile_held_across_a_triangles_outer_loop_spans_its_most_trips(write):
    """`for i < 4 { for j < i + 1 (tiles of 3) o[i][j] = v[j] + i; }`: the last row runs 4 trips, in two tiles, so
    the tiles cut j and its tile loop runs inside i: each row loads the v it reads, 1 + 2 + 3 + 4 = 10 words, as a
    cut rectangular loop reloads on every row (0.68-0.69 took one row's mean trips, 2.5 words, and the
    distinct-element bound refused the profile; 0.70-0.75 let the mean row, 2.5 trips, decide that one tile held
    v across the rows: 4 words, while at 6 rows, mean 3.5 trips, every row reloaded; hlsim 0.76); o 10."""
    kernel = ("    L_i: for (int i = 0; i < 4; i++) {\n"
              "      L_j: for (int j = 0; j < i + 1; j++) { o[i][j] = v[j] + i; }\n    }")
    arrays = "    v: {shape: [4], dtype: int32, role: in}\n    o: {shape: [4, 4], dtype: int32, role: out}"
    d = kernel_design(write, ONE, kernel, arrays, "    o[:] = np.tril(v[None, :] + np.arange(4)[:, None])",
                      "{L_j: {tile: 3}}", "{v: SRAM, o: SRAM}", params="{}")
    p, e = profiled_and_estimated(d)
    assert (p.counters["reads.DRAM"], p.counters["writes.DRAM"]) == (10, 10)
    assert e.metrics["cycles"] == p.metrics["cycles"]


def test_a_triangles_measured_trips_divide_out_the_inner_tile_loops(write):
    """`if (t == 3)` around `u < t + 1` (tiles of 1) over a 4 x 2 band with rows in tiles of 2: the code runs u_t,
    i_t, u, i, j, so u's point loop counts each u twice (8 for 4); x's 2 row tiles come in for each of the 4 u: 32
    words each way (0.69: 64, the trips taken as 8; 0.67: 40, the static mean over every t)."""
    kernel = ("    L_t: for (int t = 0; t < 4; t++) {\n      if (t == 3) {\n"
              "        L_u: for (int u = 0; u < t + 1; u++) {\n          L_a: for (int i = 0; i < 4; i++) {\n"
              "            L_b: for (int j = 0; j < 2; j++) { o[i][j] = x[i][j] + u; }\n          }\n        }\n"
              "      }\n    }")
    arrays = "    x: {shape: [4, 2], dtype: int32, role: in}\n    o: {shape: [4, 2], dtype: int32, role: out}"
    d = kernel_design(write, ONE, kernel, arrays, "    o[:] = x + 3", "{L_u: {tile: 1}, L_a: {tile: 2}}",
                      "{x: SRAM, o: SRAM}", params="{}")
    p, _ = profiled_and_estimated(d)
    assert (p.counters["reads.DRAM"], p.counters["writes.DRAM"]) == (32, 32)


@pytest.mark.parametrize("kernel, loops, arrays, ref, words", [
    # (hlsim 0.70 divided j's trips by k's 4 tiles, though an in-place band runs k's tile loop inside j: 12 written
    # where the run wrote 24 distinct elements, refused; 0.68-0.69: 48, the hand count; now 64: k's tiles are
    # charged on j's trips per row, high)
    ("    L_i: for (int i = 0; i < 4; i++) {\n      L_j: for (int j = 0; j < i; j++) {\n"
     "        L_k: for (int k = 0; k < 8; k++) { o[i][k] = x[k] * 2; }\n      }\n    }", "{L_k: {tile: 2}}",
     "    x: {shape: [8], dtype: int32, role: in}\n    o: {shape: [4, 8], dtype: int32, role: out}",
     "    o[:] = 0\n    o[1:] = x * 2", (24, 24)),
    # (0.70 took L_a's point loop, repeated by j's tile loop, for its entries: 1.5 trips where 3 ran, 6 words where
    # 12 elements were read, refused; the hand count is 12 each way)
    ("    L_t: for (int t = 0; t < 4; t++) {\n      if (t == 2) {\n        L_a: for (int i = 0; i < 4; i++) {\n"
     "          L_b: for (int j = 0; j < t + 1; j++) { o[i][j] = x[i][j] + 1; }\n        }\n      }\n    }",
     "{L_a: {tile: 2}, L_b: {tile: 2}}",
     "    x: {shape: [4, 4], dtype: int32, role: in}\n    o: {shape: [4, 4], dtype: int32, role: out}",
     "    o[:] = 0\n    o[:, :3] = x[:, :3] + 1", (12, 12)),
])
def test_a_triangles_trips_never_fall_below_what_the_run_touched(write, kernel, loops, arrays, ref, words):
    """Two kernels of a probe of 0.70 that the distinct-element bound refused: they profile, at or above the
    elements the run touched (the second at the hand count, 12 and 12)."""
    d = kernel_design(write, ONE, kernel, arrays, ref, loops, "{x: SRAM, o: SRAM}", params="{}")
    p, _ = profiled_and_estimated(d)
    assert p.counters["reads.DRAM"] >= words[0] and p.counters["writes.DRAM"] >= words[1]
    assert p.counters["reads.DRAM"] >= p.counters["distinct_read"]
