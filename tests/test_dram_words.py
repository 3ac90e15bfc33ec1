"""DRAM words against hand counts where an outside user found them wrong (hlsim 0.26, the analytical model
with it): a statement outside every loop moves its elements to and from DRAM as a nest's tiles do, and a loop
over a segment its enclosing loop's data choose (CSR rows) reads a new segment for each row; a nest moves
what it reads and writes (hlsim 0.27), whatever the array's role says."""
from __future__ import annotations

import pytest
from conftest import kernel_design, profiled_and_estimated
from llmulator.library import resolve

ARCH = resolve("architecture", "hls-fpga").read_text()


def test_statements_outside_loops_read_and_write_dram(write):
    """`s = a[0]` before the loop and `out[0] = s` after it: a[0..255] come from DRAM (256 words) and out[0]
    goes back (1 word). Before, a[0] came from nowhere (255) and the result never left the chip (0)."""
    kernel = ("    int s = a[0];\n    L_i: for (int i = 1; i < N; i++) {\n      s = s ^ a[i];\n    }\n"
              "    out[0] = s;")
    arrays = "    a: {shape: [N], dtype: int32, role: in}\n    out: {shape: [1], dtype: int32, role: out}"
    d = kernel_design(write, ARCH, kernel, arrays, "    out[0] = np.bitwise_xor.reduce(a)", "{}",
                      "{a: BRAM, out: BRAM}", params="{N: 256}")
    p, e = profiled_and_estimated(d)
    for counts in (p.counters, e.breakdown):
        assert counts["reads.DRAM"] == 256 and counts["writes.DRAM"] == 1
    assert e.metrics["cycles"] == p.metrics["cycles"]


@pytest.mark.parametrize("rows, nnz", [(64, 1024), (16, 200)])
def test_a_csr_row_loop_reads_every_rows_segment(write, rows, nnz):
    """Row sums of a CSR matrix: v[j] for j in [p[i], p[i + 1]) reads each of the nnz values once: nnz words,
    plus all rows + 1 words of p (p[i] in the head's initialiser, p[i + 1] in the test). Before hlsim 0.26 the
    segment of one row stood for the whole array (64 + 16 words for 64 rows), and before 0.27 the head's load
    of p[i] was not counted (p[0] never moved)."""
    kernel = ("    L_i: for (int i = 0; i < M; i++) {\n      float s = 0;\n"
              "      L_j: for (int j = p[i]; j < p[i + 1]; j++) {\n        s += v[j];\n      }\n      y[i] = s;\n    }")
    arrays = ("    p: {shape: [\"M + 1\"], dtype: int32, role: in}\n    c: {shape: [NNZ], dtype: int32, role: in}\n"
              "    v: {shape: [NNZ], dtype: fp32, role: in}\n    y: {shape: [M], dtype: fp32, role: out}")
    ref = "    y[:] = [v[p[i]:p[i + 1]].sum(dtype=np.float32) for i in range(M)]"
    d = kernel_design(write, ARCH, kernel, arrays, ref, "{}", "{p: BRAM, c: BRAM, v: BRAM, y: BRAM}",
                      params=f"{{M: {rows}, NNZ: {nnz}}}",
                      inputs="    structures:\n      - {kind: csr, row_ptr: p, col_idx: c}")
    p, e = profiled_and_estimated(d)
    for counts in (p.counters, e.breakdown):
        assert counts["reads.DRAM"] == nnz + rows + 1 and counts["writes.DRAM"] == rows


def test_a_nest_moves_what_it_reads_and_writes_not_what_the_role_says(write):
    """Producer and consumer: L_p writes c (out) from a, L_c reads c into d. Per nest, by hand: L_p reads a
    (100) and writes c (100); L_c reads c, which L_p wrote (100), and writes d (100): 200 words each way. And
    an inout e that the second nest only reads is not written back by it. Before hlsim 0.27: L_c never loaded
    c and wrote it back unchanged (reads 100, writes 300)."""
    kernel = ("    L_p: for (int i = 0; i < N; i++) {\n      c[i] = a[i] * 2;\n    }\n"
              "    L_c: for (int i = 0; i < N; i++) {\n      d[i] = c[i] + e[i];\n    }")
    arrays = ("    a: {shape: [N], dtype: int32, role: in}\n    c: {shape: [N], dtype: int32, role: out}\n"
              "    d: {shape: [N], dtype: int32, role: out}\n    e: {shape: [N], dtype: int32, role: inout}")
    d = kernel_design(write, ARCH, kernel, arrays, "    c[:] = a * 2\n    d[:] = c + e", "{}",
                      "{a: BRAM, c: BRAM, d: BRAM, e: BRAM}", params="{N: 100}")
    p, e = profiled_and_estimated(d)
    for counts in (p.counters, e.breakdown):
        assert counts["reads.DRAM"] == 300 and counts["writes.DRAM"] == 200  # + e read by L_c; e never written


def test_a_triangular_loop_spans_the_elements_it_reads_and_a_head_load_is_counted(write):
    """`for (j = 0; j <= i; j++) s += a[j]` over i < 32 reads all 32 elements of a: 32 words (before hlsim 0.27
    the mean inner trips, 16.5, a fractional word count below the distinct elements); y: 32 words back."""
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      int s = 0;\n      L_j: for (int j = 0; j <= i; j++) {\n"
              "        s += a[j];\n      }\n      y[i] = s;\n    }")
    arrays = "    a: {shape: [N], dtype: int32, role: in}\n    y: {shape: [N], dtype: int32, role: out}"
    d = kernel_design(write, ARCH, kernel, arrays, "    y[:] = np.cumsum(a)", "{}", "{a: BRAM, y: BRAM}",
                      params="{N: 32}")
    p, e = profiled_and_estimated(d)
    for counts in (p.counters, e.breakdown):
        assert counts["reads.DRAM"] == 32 and counts["writes.DRAM"] == 32


def test_an_inout_array_written_under_a_branch_is_loaded_before_its_tile_goes_back(write):
    """`if (a[i] > 0) b[i] = a[i];` with b inout: the tile of b goes back whole (64 words), so the elements the
    branch skips must hold b's values: b is loaded (64) as well as a (64). An out array in b's place holds
    nothing yet and is not loaded. Before hlsim 0.28 the inout b was written back without being loaded
    (64 DRAM reads, the unwritten half of b overwritten with whatever the buffer held)."""
    kernel = "    L_i: for (int i = 0; i < N; i++) {\n      L_p: if (a[i] > 0) b[i] = a[i];\n    }"
    for role, reads in (("inout", 128), ("out", 64)):
        arrays = f"    a: {{shape: [N], dtype: int32, role: in}}\n    b: {{shape: [N], dtype: int32, role: {role}}}"
        d = kernel_design(write, ARCH, kernel, arrays, "    b[:] = np.where(a > 0, a, b)", "{}",
                          "{a: BRAM, b: BRAM}", hints="{L_p: {taken_probability: 0.5}}",
                          inputs="    arrays:\n      a: {distribution: randint, range: [-5, 5]}")
        p, e = profiled_and_estimated(d)
        for counts in (p.counters, e.breakdown):
            assert (counts["reads.DRAM"], counts["writes.DRAM"]) == (reads, 64), role


WHILE_ARRAYS = "    x: {shape: [N], dtype: int32, role: in}\n    y: {shape: [N], dtype: int32, role: out}"
WHILE_INPUTS = "    seed: 0\n    arrays:\n      x: {distribution: arange, start: 0, step: 1}"


@pytest.mark.parametrize("form, trips", [
    ("int k = 0;\n    L_w: while (k < N && x[k] < 10) {\n      y[k] = x[k] + 1;\n      k++;\n    }", 10),
    ("int k = 0;\n    L_w: do {\n      y[k] = x[k] + 1;\n      k++;\n    } while (k < N && x[k] < 10);", 10),
    ("int k = N - 1;\n    L_w: while (k >= 0 && x[k] > 53) {\n      y[k] = x[k] + 1;\n      k -= 1;\n    }", 10),
])
def test_a_while_counter_moves_the_elements_its_trips_ran(write, form, trips):
    """A while loop over a local counter (`k++` once per trip from a fixed start) moves the run of elements its
    trips touched plus one step (the exit test's element), as its counted twin moves what it ran; before, it
    moved both whole arrays (64 + 64 words for 10 trips, DRAM energy 6x). Never fewer than the distinct
    elements read: x[0..10] is 11 words."""
    ref = "    k = 0\n    while k < N and x[k] < 10:\n        y[k] = x[k] + 1\n        k += 1"
    if "N - 1" in form:
        ref = "    k = N - 1\n    while k >= 0 and x[k] > 53:\n        y[k] = x[k] + 1\n        k -= 1"
    elif "do {" in form:
        ref = ("    k = 0\n    while True:\n        y[k] = x[k] + 1\n        k += 1\n"
               "        if not (k < N and x[k] < 10):\n            break")
    d = kernel_design(write, ARCH, "    " + form, WHILE_ARRAYS, ref, "{}", "{x: BRAM, y: BRAM}",
                      inputs=WHILE_INPUTS)
    p, _ = profiled_and_estimated(d)
    assert p.counters["trips.L_w"] == trips
    assert p.counters["reads.DRAM"] == trips + 1 and p.counters["writes.DRAM"] == trips + 1


@pytest.mark.parametrize("kernel", [
    # stepped only on one side of a branch: not a counter
    "    int k = 0;\n    L_w: while (k < N && x[k] < 10) {\n      if (x[k] > 3) {\n        y[k] = 1;\n      }\n"
    "      k++;\n      if (x[k] > 5) {\n        k++;\n      }\n    }",
    # every entry of the outer loop starts again at 0, and q does not index x: the entries overlap
    "    L_q: for (int q = 0; q < 4; q++) {\n      int k = 0;\n      L_w: while (k < N && x[k] < 3 * q) {\n"
    "        y[k] = x[k];\n        k++;\n      }\n    }",
])
def test_a_while_index_that_is_no_fixed_counter_moves_the_whole_array(write, kernel):
    """Where the elements an entry touched are not a run the measured trips bound, x moves whole (64 words)."""
    d = kernel_design(write, ARCH, kernel, WHILE_ARRAYS, "    pass", "{}", "{x: BRAM, y: BRAM}",
                      inputs=WHILE_INPUTS)
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    p = HlsimProfiler().profile(d)
    assert p.counters["reads.DRAM"] >= 64


@pytest.mark.parametrize("dtype, words", [("int8", 1), ("int32", 1), ("int64", 2)])
def test_a_scalar_dram_access_moves_whole_words_of_the_bus(write, dtype, words):
    """`C[i] = A[i] + B[i]` with A, B, C placed in a 32-bit DRAM (ROUND: 100 pJ a word read, 200 written), 16
    elements: each access is a transfer of its own (the schedule gives it a channel slot a word), so 32 reads
    and 16 writes of whole words: 16 x (2 x 100 + 200) = 6,400 pJ a word per element. hlsim 0.39 priced an int8
    element at its 8 bits (1,600 pJ: a quarter of the transfers; an outside probe). int64: two words an access, II
    6 (0.39 lost the second word of the body's last access, the store, from the port count: II 5)."""
    from conftest import ROUND
    roles = (("A", "in"), ("B", "in"), ("C", "out"))
    arrays = "".join(f"    {a}: {{shape: [N], dtype: {dtype}, role: {r}}}\n" for a, r in roles)
    kernel = "    L_i: for (int i = 0; i < N; i++) {\n      C[i] = A[i] + B[i];\n    }"
    d = kernel_design(write, ROUND.replace("RF", ""), kernel, arrays.rstrip("\n"), "    C[:] = A + B",
                      "{L_i: {pipeline_ii: 1}}", "{A: DRAM, B: DRAM, C: DRAM}", params="{N: 16}")
    p, e = profiled_and_estimated(d)
    for energy in (p.breakdown["energy_pj.DRAM"], e.breakdown["energy_pj.DRAM"]):
        assert energy == pytest.approx(6400 * words)
    assert p.breakdown["ii.L_i"] == 3 * words  # three accesses an iteration, one channel: a slot per word
