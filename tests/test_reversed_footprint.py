"""A tile holds every element its accesses name, where the accesses move apart as the loops run (hlsim 0.57,
``llmulator.access_boxes``). An outside probe of hlsim 0.54 found the tile priced as one box per dimension, the
largest |coefficient| times the tile plus the constants' spread, signs and first values lost: `a[3 - k] + a[k + 3]`
reads a[0..6] and moved 4 words, `x[0]` beside `x[k]` with k from 1 moved 4 of the 5 it reads. The reference each
time: the distinct elements the loop reads, counted by hand (every word read comes from DRAM once: the tile is the
whole loop). conftest's round-figure architecture: DRAM 4 bytes a cycle, latency 10."""

from __future__ import annotations

import pytest
from conftest import ROUND, kernel_design, profiled_and_estimated

ARCH = ROUND.replace("RF", "")
ARRAYS = "    a: {shape: [N], dtype: int32, role: in}\n    s: {shape: [2], dtype: int32, role: out}"


def _dram_reads(write, loop: str, ref: str, n: int = 16, arrays: str = ARRAYS, loops: str = "{L_k: {pipeline_ii: 1}}",
                place: str = "{a: SRAM, s: SRAM}"):
    """The DRAM words hlsim and the analytical model read (they agree on a design the data do not steer)."""
    d = kernel_design(write, ARCH, loop, arrays, ref, loops, place, params=f"{{N: {n}}}")
    p, e = profiled_and_estimated(d)
    assert p.counters["reads.DRAM"] == e.breakdown["reads.DRAM"]
    assert p.metrics["cycles"] == e.metrics["cycles"]
    return p.counters["reads.DRAM"]


@pytest.mark.parametrize(("terms", "first", "cond", "step", "elements"), [
    ("a[3 - k] + a[k + 3]", "0", "k < 4", "k++", range(0, 7)),    # a[0..6]: 7 words (0.56: 4)
    ("a[4 - k] + a[k]", "0", "k < 4", "k++", range(0, 5)),        # a[0..4]: 5 words (0.56: 8)
    ("a[k] + a[0]", "5", "k > 1", "k--", (0, 2, 3, 4, 5)),        # descending from 5, and a[0]: 5 (0.56: 4)
    ("a[2 * k] + a[11 - k]", "0", "k < 4", "k++", (0, 2, 4, 6, 11, 10, 9, 8)),  # a stride beside a reversal: 8
])
def test_a_tile_holds_every_element_of_accesses_that_move_apart(write, terms, first, cond, step, elements):
    loop = (f"    int acc = 0;\n    L_k: for (int k = {first}; {cond}; {step}) {{\n      acc += {terms};\n    }}\n"
            "    s[0] = acc;\n    s[1] = 0;")
    ks = list(range(0, 4)) if first == "0" else [5, 4, 3, 2]
    ref = f"    s[0] = sum(int({terms}) for k in {ks!r})\n    s[1] = 0"
    assert _dram_reads(write, loop, ref) == len(set(elements))


def test_a_loop_without_an_initialiser_holds_the_element_read_before_it(write):
    """`t = a[0]; int k = 1; for (; k < 5; k++) t += a[k];` in each trip of an outer loop: a[0..4], 5 words (the
    loop's first value is not in its head: the accesses' starts are unknown apart, so each access's own box
    counts; 0.56 moved 4)."""
    loop = ("    L_i: for (int i = 0; i < 2; i++) {\n      int t = a[0];\n      int k = 1;\n"
            "      L_k: for (; k < 5; k++) {\n        t += a[k];\n      }\n      s[i] = t + i;\n    }")
    ref = "    s[0] = int(a[0:5].sum())\n    s[1] = s[0] + 1"
    assert _dram_reads(write, loop, ref, loops="{L_i: {pipeline_ii: 1}}") == 5


def test_a_transposed_read_in_tiles_moves_each_tiles_two_blocks(write):
    """`B[i][j] = A[i][j] + A[j][i]` over 4 x 4 in 2 x 2 tiles: a tile on the diagonal reads one 2 x 2 block of A
    (4 words), a tile off it two (8): 2 x 4 + 2 x 8 = 24 DRAM words of A (0.56: 3 x 3 a tile, 36)."""
    arrays = "    A: {shape: [N, N], dtype: int32, role: in}\n    B: {shape: [N, N], dtype: int32, role: out}"
    loop = ("    L_i: for (int i = 0; i < N; i++) {\n      L_j: for (int j = 0; j < N; j++) {\n"
            "        B[i][j] = A[i][j] + A[j][i];\n      }\n    }")
    ref = "    B[:] = A + A.T"
    reads = _dram_reads(write, loop, ref, n=4, arrays=arrays, loops="{L_i: {tile: 2}, L_j: {tile: 2}}",
                        place="{A: SRAM, B: SRAM}")
    assert reads == 2 * 4 + 2 * 8


SIBLINGS = ("    int acc = 0;\n    L_i: for (int i = 0; i < 1; i++) {\n      L_p: for (int k = 4; k < 8; k++) {\n"
            "        acc += a[k];\n      }\n      L_q: for (int k = 0; k < 4; k++) {\n        acc += {second};\n"
            "      }\n    }\n    s[0] = acc;\n    s[1] = 0;")


@pytest.mark.parametrize(("second", "ref"), [("a[3 - k]", "int(a[0:8].sum())"),
                                              ("a[k] * 2", "int(a[4:8].sum() + 2 * a[0:4].sum())")])
def test_sibling_loops_that_reuse_a_name_each_index_their_own_elements(write, second, ref):
    """`for (k = 4; k < 8; k++) a[k]` then `for (k = 0; k < 4; k++) a[...]` in one nest: a[0..7], 8 words. Before
    hlsim 0.57 `k` meant the last loop of that name everywhere, so the first loop's `a[k]` took the second's
    first value and trips (4 words; an outside probe; the second spelling was wrong before 0.57's boxes too)."""
    loop = SIBLINGS.replace("{second}", second)
    assert _dram_reads(write, loop, f"    s[0] = {ref}\n    s[1] = 0", loops="{L_i: {pipeline_ii: 1}}") == 8


def test_a_triangular_transposed_read_in_tiles_moves_every_element_it_reads(write):
    """`B[i][j] = A[i][j] + A[j][i]` for j from i + 1, N 6, L_j in tiles of 2: the 30 elements off A's diagonal
    are read, each once; the mean tile (1.25 of j's 2.5 mean trips, one i) holds one element of each access a
    trip: 12 tiles x 2.5 = 30 words (0.56: a tile of one box over i + j, 1.25 x 1.25: 18.75 words)."""
    arrays = "    A: {shape: [N, N], dtype: int32, role: in}\n    B: {shape: [N, N], dtype: int32, role: out}"
    loop = ("    L_i: for (int i = 0; i < N; i++) {\n      L_j: for (int j = i + 1; j < N; j++) {\n"
            "        B[i][j] = A[i][j] + A[j][i];\n      }\n    }")
    ref = ("    B[:] = 0\n    for i in range(N):\n        for j in range(i + 1, N):\n"
           "            B[i][j] = A[i][j] + A[j][i]")
    d = kernel_design(write, ARCH, loop, arrays, ref, "{L_j: {tile: 2}}", "{A: SRAM, B: SRAM}", params="{N: 6}")
    p, e = profiled_and_estimated(d)
    assert p.counters["reads.DRAM"] == pytest.approx(e.breakdown["reads.DRAM"]) == pytest.approx(30)


def test_accesses_that_keep_to_one_stride_name_only_its_elements(write):
    """`a[2 * k] + a[6 - 2 * k]`, k < 4: both name a[0], a[2], a[4], a[6]: 4 words, not the 7 of the box."""
    loop = ("    int acc = 0;\n    L_k: for (int k = 0; k < 4; k++) {\n      acc += a[2 * k] + a[6 - 2 * k];\n    }\n"
            "    s[0] = acc;\n    s[1] = 0;")
    ref = "    s[0] = 2 * int(a[0:8:2].sum())\n    s[1] = 0"
    assert _dram_reads(write, loop, ref) == 4


@pytest.mark.parametrize("terms", ["A[i][j] + A[j][j]", "A[i][j] + A[0][j]", "A[j][i] + A[j][j]"])
def test_an_access_that_does_not_move_with_a_triangles_outer_loop_spans_its_most_trips(write, terms):
    """`for (j = 0; j < i; j++) acc += A[i][j] + A[j][j]`, N 6: the 15 elements below the diagonal and the 5 of
    it j reaches (0..4): 20 words. `A[j][j]` does not move with i, so over the whole nest it spans j's most trips,
    5, not its mean 2.5 (the first draft of 0.57 moved 15; a second outside probe)."""
    arrays = "    A: {shape: [N, N], dtype: int32, role: in}\n    s: {shape: [N], dtype: int32, role: out}"
    loop = ("    L_i: for (int i = 0; i < N; i++) {\n      int acc = 0;\n      L_j: for (int j = 0; j < i; j++) {\n"
            f"        acc += {terms};\n      }}\n      s[i] = acc;\n    }}")
    py = " + ".join(f"int({t.strip()})" for t in terms.split("+"))
    ref = f"    for i in range(N):\n        s[i] = sum({py} for j in range(i))"
    assert _dram_reads(write, loop, ref, n=6, arrays=arrays, loops="{}", place="{A: SRAM, s: SRAM}") == 20


def test_sibling_loops_of_one_name_move_their_own_tiles_not_a_cross_product(write):
    """`for (i ...) b[i] = a[i]; for (i ...) c[i] = a[i] * 2;` under one loop, the first in tiles of 2: a moves in
    the first loop's 4 tiles of 2 and then whole for the second, 16 words. Giving each loop its own axis of one
    walk took them as a cross product, 32 words (a second outside probe of 0.57's first draft); 0.57-0.64 took
    both as the last one's axis and moved a once, 8, as if the 2-element tiles held all of it
    (``llmulator.sibling_tiles``, tests/test_sibling_tiles.py)."""
    arrays = ("    a: {shape: [N], dtype: int32, role: in}\n    b: {shape: [N], dtype: int32, role: out}\n"
              "    c: {shape: [N], dtype: int32, role: out}")
    loop = ("    L_o: for (int o = 0; o < 1; o++) {\n      L_p: for (int i = 0; i < N; i++) {\n        b[i] = a[i];\n"
            "      }\n      L_q: for (int i = 0; i < N; i++) {\n        c[i] = a[i] * 2;\n      }\n    }")
    assert _dram_reads(write, loop, "    b[:] = a\n    c[:] = a * 2", n=8, arrays=arrays, loops="{L_p: {tile: 2}}",
                       place="{a: SRAM, b: SRAM, c: SRAM}") == 16


@pytest.mark.parametrize("loops", ["{L_j: {tile: 2}}", "{L_j: {tile: 3}}", "{L_j: {tile: 2, pipeline_ii: 1}}",
                                   "{L_i: {tile: 4}, L_j: {tile: 3}}", "{L_i: {tile: 2}, L_j: {tile: 4}}",
                                   "{L_j: {tile: 5}}", "{L_j: {tile: 5, pipeline_ii: 1}}"])
def test_a_triangular_loop_in_tiles_runs_each_entrys_own_tiles(write, loops):
    """`for (j = i + 1; j < N; j++)`, N 6, in tiles: the entries run 5, 4, 3, 2, 1, 0 trips, in tiles of 2 that is
    3 + 2 + 2 + 1 + 1 = 9 tiles, where the mean trips (2.5) in tiles of 2 made 12 (analytical 0.69: 3 cycles more
    than hlsim; a tile of 3, above the mean but within the most trips, was refused). A tile of the most trips (5)
    still strip-mines the loop: the empty entry runs no tile (a third probe: one cycle apart per empty entry).
    hlsim and the analytical model agree on cycles and words (outside probes 44-46)."""
    arrays = "    A: {shape: [N, N], dtype: int32, role: in}\n    B: {shape: [N, N], dtype: int32, role: out}"
    loop = ("    L_i: for (int i = 0; i < N; i++) {\n      L_j: for (int j = i + 1; j < N; j++) {\n"
            "        B[i][j] = A[i][j] + 1;\n      }\n    }")
    ref = "    B[:] = 0\n    for i in range(N):\n        for j in range(i + 1, N):\n            B[i][j] = A[i][j] + 1"
    d = kernel_design(write, ARCH, loop, arrays, ref, loops, "{A: SRAM, B: SRAM}", params="{N: 6}")
    p, e = profiled_and_estimated(d)
    assert p.metrics["cycles"] == e.metrics["cycles"]
    assert p.counters["reads.DRAM"] == e.breakdown["reads.DRAM"]


def test_a_run_that_moves_fewer_words_than_it_touched_breaks_a_bound(write, monkeypatch):
    """The instrumented run counts the distinct elements it reads before writing and writes
    (``llmulator.element_marks``): every such element crosses the backing store at least once, so a tile model
    that moves fewer words (here: half of what the tiles move, as 0.56 moved 4 of `a[3 - k] + a[k + 3]`'s 7)
    stops the profile with InvariantError, on every run."""
    from llmulator.errors import InvariantError
    from llmulator_plugins.hlsim import profiler as hp
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    loop = ("    int acc = 0;\n    L_k: for (int k = 0; k < 4; k++) {\n      acc += a[3 - k] + a[k + 3];\n    }\n"
            "    s[0] = acc;\n    s[1] = 0;")
    ref = "    s[0] = sum(int(a[3 - k] + a[k + 3]) for k in range(4))\n    s[1] = 0"
    d = kernel_design(write, ARCH, loop, ARRAYS, ref, "{L_k: {pipeline_ii: 1}}", "{a: SRAM, s: SRAM}",
                      params="{N: 16}")
    p = HlsimProfiler().profile(d)
    assert (p.counters["reads.DRAM"], p.counters["distinct_read"], p.counters["distinct_written"]) == (7, 7, 2)
    real = hp.transfers.tile_transfers

    def halved(*args, **kwargs):
        cycles, moved, exposed = real(*args, **kwargs)
        return cycles, {lv: (r / 2, rb / 2, w, wb) for lv, (r, rb, w, wb) in moved.items()}, exposed

    monkeypatch.setattr(hp.transfers, "tile_transfers", halved)
    with pytest.raises(InvariantError, match="read 3.5 words where the run read 7 distinct elements"):
        HlsimProfiler().profile(d)


def test_sibling_loops_of_one_name_keep_their_own_trips(write):
    """`for (j = 0; j < N; j++) a[j]` then `for (j = 0; j < N - 1; j++) a[j]` under one loop: a[0..15], 16 words.
    Sibling loops of one name share a tile axis, but each spans its own trips (0.56 and the first draft of 0.57
    gave both the last one's 15: fdtd-2d moved 1,754 words where its run read 1,773 elements, which the bound on
    distinct elements caught the first time it ran over the library)."""
    loop = ("    int acc = 0;\n    L_o: for (int o = 0; o < 1; o++) {\n      L_p: for (int j = 0; j < N; j++) {\n"
            "        acc += a[j];\n      }\n      L_q: for (int j = 0; j < N - 1; j++) {\n        acc += a[j] * 2;\n"
            "      }\n    }\n    s[0] = acc;\n    s[1] = 0;")
    ref = "    s[0] = int(a.sum() + 2 * a[:N - 1].sum())\n    s[1] = 0"
    assert _dram_reads(write, loop, ref, loops="{L_o: {pipeline_ii: 1}}") == 16


@pytest.mark.parametrize(("workload", "mapping"), [("bfs", "bfs-opt"), ("fdtd-2d", "fdtd-2d-plain")])
def test_every_element_a_library_kernel_reads_comes_from_dram(workload, mapping):
    """The library kernels the bound on distinct elements caught (hlsim 0.57): bfs's edge loop starts where the
    data say (`e = row_ptr[u]`, u from the queue), so each entry reads another segment of col_idx (0.56 moved
    one segment's worth: 521 words where the run read 2,289 elements); fdtd-2d's sibling loops of one name
    took the last one's trips. The profile now passes the bound, which ``check_words`` applies on every run."""
    from llmulator import library
    from llmulator.design import load_design
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    d = load_design(library.resolve("architecture", "hls-fpga"), library.resolve("workload", workload),
                    library.resolve("mapping", mapping))
    p = HlsimProfiler().profile(d)
    assert p.counters["reads.DRAM"] >= {"bfs": 2289, "fdtd-2d": 1773}[workload]
