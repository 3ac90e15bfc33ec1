"""A triangle under a loop a `break` ends (hlsim 0.74 / analytical 0.87, 2026-12-08).

A bubble sort whose pass loop stops once nothing swaps (an outside probe's kernel) made hlsim break its own
physical bound: 28.5 words read of an array whose 48 elements the run read. The triangle `j < N - 1 - p` had no
trip profile under the early-exit loop, so its tile took the mean pass, not the first (the longest). The hand
counts: the first k passes of `p < N - 1` run N - 1, N - 2, ..., N - k trips; the run reads every element. A
probe of that fix found a tiled triangle priced by its mean entry (hlsim 0.76, the last test).
"""

from __future__ import annotations

from conftest import kernel_design
from llmulator import plugins
from llmulator.library import resolve

ARCH = resolve("architecture", "hls-fpga").read_text()


BUBBLE = ("    L_p: for (int p = 0; p < N - 1; p++) {\n      int sw = 0;\n"
          "      L_j: for (int j = 0; j < N - 1 - p; j++) {\n        if (a[j] > a[j + 1]) {\n"
          "          int t = a[j];\n          a[j] = a[j + 1];\n          a[j + 1] = t;\n          sw = 1;\n"
          "        }\n      }\n      if (sw == 0) {\n        break;\n      }\n    }")


def _bubble(write, hints: str = "{L_p: {expected_trips: 5}}"):
    return kernel_design(write, ARCH, BUBBLE, "    a: {shape: [N], dtype: int32, role: inout}",
                         "    a[:] = np.sort(a)", "{}", "{a: BRAM}", params="{N: 12}", hints=hints)


def test_a_triangle_under_an_early_exit_loop_runs_its_first_passes(write):
    d = _bubble(write)
    assert d.tree.loops["L_p"].exits_early and not d.tree.loops["L_p"].static
    assert d.trip_profile("L_j") == [11, 10, 9, 8, 7]  # the first 5 passes of p < 11
    assert d.longest_trips("L_j") == 11 and d.trips("L_j") == 9


def test_hlsim_keeps_its_word_bound_on_an_early_exit_bubble_sort(write):
    p = plugins.get("profilers", "hlsim").profile(_bubble(write))
    assert p.functional_check == "pass"
    # every element is read and written: the backing store moves at least the 12 words (28.5 of 48 before)
    assert p.counters["distinct_read"] == p.counters["distinct_written"] == 12
    assert p.counters["reads.DRAM"] >= 12 and p.counters["writes.DRAM"] >= 12


def test_a_hint_of_few_passes_does_not_refuse_a_tile_the_first_passes_never_reach(write):
    # `j <= p` under the early exit: 2 expected passes run 1 and 2 trips, but the hardware is built for every pass
    # (up to 12 trips), so a tile of 4 stays legal (a probe of 0.74's first form: "tile 4 is larger than the bound
    # of loop L_j (3 iterations)", from a hint)
    kernel = ("    L_p: for (int p = 0; p < N; p++) {\n      float s = 0;\n"
              "      L_j: for (int j = 0; j <= p; j++) {\n        s += x[j];\n      }\n"
              "      y[p] = s;\n      if (s > 1.0) {\n        break;\n      }\n    }")
    d = kernel_design(write, ARCH, kernel, "    x: {shape: [N], dtype: fp32, role: in}\n"
                      "    y: {shape: [N], dtype: fp32, role: out}", "    pass", "{L_j: {tile: 4}}",
                      "{x: BRAM, y: BRAM}", params="{N: 12}", hints="{L_p: {expected_trips: 2}}")
    assert d.trip_profile("L_j") == [1, 2] and d.longest_trips("L_j", guarded=False) == 12


def _cumsum(write, n: int, loops: str):
    kernel = ("    L_p: for (int p = 0; p < N; p++) {\n      float s = 0;\n"
              "      L_j: for (int j = 0; j <= p; j++) {\n        s += x[j];\n      }\n      y[p] = s;\n    }")
    return kernel_design(write, ARCH, kernel, "    x: {shape: [N], dtype: fp32, role: in}\n"
                         "    y: {shape: [N], dtype: fp32, role: out}", "    y[:] = np.cumsum(x).astype(np.float32)",
                         loops, "{x: BRAM, y: BRAM}", params=f"{{N: {n}}}")


def test_a_tile_below_a_triangles_longest_entry_cuts_every_entry_it_exceeds(write):
    # (hlsim 0.76) `j <= p` in tiles of 4: the tile loop runs inside p, so each pass loads the x it reads, sum(p + 1)
    # words; before, the mean entry decided: at N = 7 (mean 4 trips, one tile) x stayed across p, 7 words and 702
    # cycles, at N = 8 (mean 4.5) 36 words and 1,724 cycles (16 tiles counted where the run enters 12)
    hlsim = plugins.get("profilers", "hlsim")
    runs = {n: hlsim.profile(_cumsum(write, n, "{L_j: {tile: 4}}")) for n in (7, 8)}
    assert [runs[n].counters["reads.DRAM"] for n in (7, 8)] == [28, 36]
    assert [runs[n].counters["invocations.L_j"] for n in (7, 8)] == [10, 12]  # each entry's own tiles
    assert runs[7].metrics["cycles"] < runs[8].metrics["cycles"] < 1.25 * runs[7].metrics["cycles"]
    untiled = hlsim.profile(_cumsum(write, 7, "{}"))
    assert untiled.counters["reads.DRAM"] == 7  # whole, x held across p
