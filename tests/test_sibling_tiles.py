"""Sibling loops tiled on their own (hlsim 0.65): each sibling moves its own tiles, by hand.

Before 0.65 the tile model took a nest's loops as one perfect nest in pre-order, so a tiled sibling's tile loop
counted as enclosing the siblings after it, and sibling loops of one name shared one tile axis: `L_a` in tiles of
2 beside `L_b` in tiles of 4, each reading x[0..7] per time step, read 64 words where the generated code moves
32 (an outside probe, 2026-12-07). A tile is what a level holds of an array while the loops inside it run, so
while `L_a` runs x's tile is 2 elements and while `L_b` runs 4: every sibling whose accesses move with a tiled
loop of its own loads its tiles once per trip of the loops around it, and untiled siblings share one tile.
"""

from __future__ import annotations

import pytest
from conftest import kernel_design, profiled_and_estimated
from test_physical_floors import ONE

T2 = "    L_t: for (int t = 0; t < 2; t++) {{\n{a}\n{b}\n    }}"
LOOP = "      {label}: for (int {v} = {lo}; {v} < {hi}; {v}++) {{\n        {body}\n      }}"


def _loop(label, v, body, lo=0, hi=8):
    return LOOP.format(label=label, v=v, lo=lo, hi=hi, body=body)


VEC = "    x: {shape: [8], dtype: int32, role: in}\n    y: {shape: [8], dtype: int32, role: in}\n" \
      "    o: {shape: [8], dtype: int32, role: out}\n    q: {shape: [8], dtype: int32, role: out}"
PLACE = "{x: SRAM, y: SRAM, o: SRAM, q: SRAM}"

CASES = {
    # x per time step: L_a's 4 tiles of 2 and L_b's 2 tiles of 4, 16 words; o and q 8 each (0.64: 64 read, 128
    # written: 4 x 2 loads of the union of both siblings' tiles a step)
    "one name, both tiled": (
        T2.format(a=_loop("L_a", "i", "o[i] = x[i] * 2;"), b=_loop("L_b", "i", "q[i] = x[i] + 1;")),
        "    o[:] = x * 2\n    q[:] = x + 1", "{L_a: {tile: 2}, L_b: {tile: 4}}", 32, 32),
    # other names: y's tiles walk L_b alone, L_a's tile loop does not enclose them: 8 + 8 a step each way
    "other names, both tiled": (
        T2.format(a=_loop("L_a", "i", "o[i] = x[i] * 2;"), b=_loop("L_b", "j", "q[j] = y[j] + 1;")),
        "    o[:] = x * 2\n    q[:] = y + 1", "{L_a: {tile: 2}, L_b: {tile: 4}}", 32, 32),
    # x is read only under L_a (tiles of 2): 8 a step; y only under the untiled L_b of the same name: its tile is
    # all of y, held across the time steps: 8 once; q written back once, o every step
    "one name, one tiled": (
        T2.format(a=_loop("L_a", "i", "o[i] = x[i] * 2;"), b=_loop("L_b", "i", "q[i] = y[i] + 1;")),
        "    o[:] = x * 2\n    q[:] = y + 1", "{L_a: {tile: 2}}", 24, 24),
    # neither tiled: x's tile is all of x across both siblings and both steps: 8 read; o and q once each
    "untiled siblings share one tile": (
        T2.format(a=_loop("L_a", "i", "o[i] = x[i] * 2;"), b=_loop("L_b", "i", "q[i] = x[i] + 1;")),
        "    o[:] = x * 2\n    q[:] = x + 1", "{}", 8, 16),
    # x under L_a in tiles of 2 (8 a step) and under an untiled L_b of 3 trips (3 a step): 22; o 8 a step, q[0..2]
    # once: 19 (0.60-0.64: 8 and 11, the load of L_b's axis taken to hold both siblings' x for both steps)
    "a sibling tiled finer than its axis": (
        T2.format(a=_loop("L_a", "i", "o[i] = x[i] * 2;"), b=_loop("L_b", "i", "q[i] = x[i] + 1;", hi=3)),
        "    o[:] = x * 2\n    q[:3] = x[:3] + 1", "{L_a: {tile: 2}}", 22, 19),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_sibling_moves_its_own_tiles(write, case):
    kernel, ref, loops, reads, writes = CASES[case]
    d = kernel_design(write, ONE, kernel, VEC, ref, loops, PLACE, params="{}")
    p, e = profiled_and_estimated(d)
    assert (p.counters["reads.DRAM"], p.counters["writes.DRAM"]) == (reads, writes)
    assert e.metrics["cycles"] == p.metrics["cycles"]


def test_a_field_update_moves_each_siblings_tiles(write):
    """A 1-D FDTD step (probe 50's fd5): e updated under `L_a` (7 trips, tiles of 4), h under `L_b` (7 trips,
    tiles of 1). Per step: e 7 (L_a) + 7 x 2 (L_b's e[i], e[i + 1]), h 5 + 4 (L_a's two tiles of h[i - 1..i]) + 7
    (L_b): 37 read; e 7 and h 7 written; two steps: 74 and 28 (0.64: 270 each way, the untiled sibling's whole
    footprint moved again with each tile of the tiled one)."""
    kernel = T2.format(a=_loop("L_a", "i", "e[i] = e[i] - h[i] + h[i - 1];", lo=1),
                       b=_loop("L_b", "i", "h[i] = h[i] - e[i + 1] + e[i];", hi=7))
    ref = ("    for t in range(2):\n        for i in range(1, 8):\n            e[i] = e[i] - h[i] + h[i - 1]\n"
           "        for i in range(7):\n            h[i] = h[i] - e[i + 1] + e[i]")
    d = kernel_design(write, ONE, kernel, "    e: {shape: [8], dtype: int32, role: inout}\n"
                      "    h: {shape: [8], dtype: int32, role: inout}", ref, "{L_a: {tile: 4}, L_b: {tile: 1}}",
                      "{e: SRAM, h: SRAM}", params="{}")
    p, e = profiled_and_estimated(d)
    assert (p.counters["reads.DRAM"], p.counters["writes.DRAM"]) == (74, 28)
    assert e.metrics["cycles"] == p.metrics["cycles"]


# -- hlsim 0.66: a loop under a branch moves its tiles as often as it runs (an outside probe of 0.65) -------------
GUARDED = {
    # L_a runs on t = 0 only: x 8, o 8 (0.65: 16 / 16, its tiles charged on both steps)
    "a loop on one step": ("      if (t == 0) {{\n{a}\n      }}", "", "{L_a: {tile: 2}}", 8, 8),
    # a branch never taken: nothing moves (0.65: 16 / 16)
    "a loop that never runs": ("      if (t == 5) {{\n{a}\n      }}", "", "{L_a: {tile: 4}}", 0, 0),
    # if / else: L_a on t = 0, L_b on t = 1: x 8 + 8, o 8, q 8 (0.65: 32 / 32)
    "either sibling": ("      if (t == 0) {{\n{a}\n      }} else {{\n{b}\n      }}", "q[:] = x + 1",
                       "{L_a: {tile: 2}, L_b: {tile: 4}}", 16, 16),
    # a guarded sibling beside an unguarded one: x 8 (L_a, once) + 16 (L_b, each step); o 8, q 16 (0.65: 32 / 32)
    "a guarded sibling": ("      if (t == 0) {{\n{a}\n      }}\n{b}", "q[:] = x + 1",
                          "{L_a: {tile: 2}, L_b: {tile: 4}}", 24, 24),
}


@pytest.mark.parametrize("case", list(GUARDED))
def test_a_loop_under_a_branch_moves_its_tiles_as_often_as_it_runs(write, case):
    body, ref_b, loops, reads, writes = GUARDED[case]
    a, b = _loop("L_a", "i", "o[i] = x[i] * 2;"), _loop("L_b", "j", "q[j] = x[j] + 1;")
    kernel = "    L_t: for (int t = 0; t < 2; t++) {\n" + body.format(a=a, b=b) + "\n    }"
    ref = ("    o[:] = 0\n" if "never" in case else "    o[:] = x * 2\n") + (f"    {ref_b}" if ref_b else "")
    d = kernel_design(write, ONE, kernel, VEC, ref, loops, PLACE, params="{}")
    p, e = profiled_and_estimated(d)
    assert (p.counters["reads.DRAM"], p.counters["writes.DRAM"]) == (reads, writes)
    assert e.metrics["cycles"] == p.metrics["cycles"]


def test_a_loop_under_a_data_branch_moves_its_tiles_as_often_as_the_run_took_it(write):
    """`if (x[t] > 0)` over 8 draws of x from [-10, 10]: the loop under it (v and o in tiles of 2: 4 tiles of 2
    words each) moves both 8 words on each step the run took the branch, and x moves once: measured, not the
    share the declared distribution gives (the run's draws need not take it half the time)."""
    kernel = ("    L_t: for (int t = 0; t < 8; t++) {\n      L_c: if (x[t] > 0) {\n"
              "        L_a: for (int i = 0; i < 8; i++) {\n          o[i] = o[i] + v[i];\n        }\n      }\n    }")
    arrays = ("    x: {shape: [8], dtype: int32, role: in}\n    v: {shape: [8], dtype: int32, role: in}\n"
              "    o: {shape: [8], dtype: int32, role: inout}")
    ref = "    o[:] = o + int((x > 0).sum()) * v"
    d = kernel_design(write, ONE, kernel, arrays, ref, "{L_a: {tile: 2}}", "{x: SRAM, v: SRAM, o: SRAM}",
                      params="{}", inputs="    arrays:\n      x: {distribution: uniform, range: [-10, 10]}")
    p, _ = profiled_and_estimated(d)
    runs = p.counters["iterations.L_a"] / 8
    assert runs not in (0, 4, 8) and p.functional_check == "pass"  # (the draws of this seed: not half, not none)
    assert p.counters["reads.DRAM"] == 8 + 16 * runs
    assert p.counters["writes.DRAM"] == 8 * runs


def test_a_guarded_loop_in_a_tiled_loop_moves_its_tiles_in_every_tile_it_runs_in(write):
    """`if (i < 2)` around `L_j` (x in tiles of 2) inside `L_i` in tiles of 4: L_j runs on two rows, and each run
    walks x's 4 tiles: 16 words read by hand (the run reads 8 distinct). hlsim 0.66 took the share of L_i's
    iterations (a quarter) for the share of its tiles: 4 words, refused by the distinct-element bound (an outside
    probe). Since 0.68 L_j's tile loop inside row i makes L_i an outer loop whole, so o's tile is 1 x 2 and its 4
    tiles go back on the 2 rows that ran: 16 written (0.67: 64, two 4-row tiles taken as written whole)."""
    kernel = ("    L_i: for (int i = 0; i < 8; i++) {\n      if (i < 2) {\n"
              "        L_j: for (int j = 0; j < 8; j++) {\n          o[i][j] = x[j] + i;\n        }\n      }\n    }")
    arrays = "    x: {shape: [8], dtype: int32, role: in}\n    o: {shape: [8, 8], dtype: int32, role: out}"
    d = kernel_design(write, ONE, kernel, arrays, "    o[:2] = x[None, :] + np.arange(2)[:, None]",
                      "{L_i: {tile: 4}, L_j: {tile: 2}}", "{x: SRAM, o: SRAM}", params="{}")
    p, e = profiled_and_estimated(d)
    assert (p.counters["reads.DRAM"], p.counters["writes.DRAM"]) == (16, 16)
    assert e.metrics["cycles"] == p.metrics["cycles"]


def test_an_untiled_sibling_on_the_other_side_of_a_branch_moves_once(write):
    """if (t == 0) `L_a` (x in tiles of 2) else an untiled `L_c` over x, two steps: 8 + 8 read, o 8 and r 8 written
    (hlsim 0.66: 24 read, L_c's whole x charged on both steps; a probe)."""
    kernel = T2.format(a="      if (t == 0) {\n" + _loop("L_a", "i", "o[i] = x[i] * 2;"),
                       b="      } else {\n" + _loop("L_c", "k", "q[k] = x[k] - 1;") + "\n      }")
    d = kernel_design(write, ONE, kernel, VEC, "    o[:] = x * 2\n    q[:] = x - 1", "{L_a: {tile: 2}}", PLACE,
                      params="{}")
    p, e = profiled_and_estimated(d)
    assert (p.counters["reads.DRAM"], p.counters["writes.DRAM"]) == (16, 16)
    assert e.metrics["cycles"] == p.metrics["cycles"]


def test_a_bare_block_around_a_bands_inner_loop_changes_nothing(write):
    """`for t { { L_a (tiles of 2) ... } }`: the block is no statement of its own (the analysis opens it, and
    `L_t > L_a` is one band whose tile loop runs outside t): x moves in 4 tiles of 2 once, 8 words, o 8, in the
    cycles the loop takes without the braces. Before, the rewriter kept L_a in its block beside the rebuilt band,
    so the program held the loop twice and did not compile (an outside probe)."""
    inner = _loop("L_a", "i", "o[i] = x[i] * 2;")
    runs = []
    for body in (inner, "      {\n" + inner + "\n      }"):
        kernel = "    L_t: for (int t = 0; t < 2; t++) {\n" + body + "\n    }"
        d = kernel_design(write, ONE, kernel, VEC, "    o[:] = x * 2", "{L_a: {tile: 2}}", PLACE, params="{}")
        p, e = profiled_and_estimated(d)
        assert p.functional_check == "pass" and e.metrics["cycles"] == p.metrics["cycles"]
        runs.append((p.counters["reads.DRAM"], p.counters["writes.DRAM"], p.metrics["cycles"]))
    assert runs[1] == runs[0] and runs[0][:2] == (8, 8)
