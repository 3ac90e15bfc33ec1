"""Loop forms hlsim once priced below what they need, against hand counts (an outside probe's designs, hlsim
0.31 and the analytical model with it). Latencies: add 3, div 7, cmp 2, logic 1, BRAM load 2, store 1; BRAM of
2 ports per bank; loop control 1 cycle an iteration outside regions."""

from __future__ import annotations

import pytest
from conftest import PROBE_ARCH as ARCH
from conftest import kernel_design, profiled_and_estimated

ARRAYS = "    x: {shape: [N], dtype: int32, role: in}\n    b: {shape: [N], dtype: int32, role: out}"
PLACE = "{x: BRAM, b: BRAM}"


def _run(write, kernel: str, reference: str, loops: str = "{}", params: str = "{N: 16}", inputs: str = ""):
    p, e = profiled_and_estimated(kernel_design(write, ARCH, kernel, ARRAYS, reference, loops, PLACE, params=params,
                                                inputs=inputs))
    assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"])
    return p, e


def test_a_while_loops_test_takes_its_schedule(write):
    """`while (k < N && x[k] / 3 > 0) k++;` on x = 9 everywhere: 16 trips and the exit test. The test is load 2
    + div 7 + cmp 2 + logic 1 = 12 cycles: 12 per trip (its last cycle the loop's control) + the whole 12 of the
    exit test (no trip shares its control cycle; 11 before hlsim 0.64), + k++ (add 3) per trip: 16 x 15 + 12 =
    252. It took no cycles before hlsim 0.31 (16 x 4 = 64), where its `if (...) break;` twin took 13 a trip."""
    kernel = ("    int k = 0;\n    L_w: while (k < N && x[k] / 3 > 0) {\n      k++;\n    }\n"
              "    L_o: for (int i = 0; i < N; i++) {\n      b[i] = k;\n    }")
    p, _ = _run(write, kernel, "    b[:] = N", inputs="    arrays:\n      x: {distribution: constant, value: 9}")
    assert p.counters["iterations.L_w"] == 16
    assert p.breakdown["compute_cycles.L_w"] == 16 * 15 + 12


def test_a_countdown_by_three_runs_whole_trips(write):
    """`for (i = N - 1; i >= 0; i -= 3)`, N = 10: i = 9, 6, 3, 0, four trips and four elements each way (3.33
    before: the negative step was not rounded up)."""
    kernel = "    L_n: for (int i = N - 1; i >= 0; i -= 3) {\n      b[i] = x[i] + 1;\n    }"
    p, e = _run(write, kernel, "    b[9::-3] = x[9::-3] + 1", params="{N: 10}")
    assert p.counters["trips.L_n"] == e.breakdown["ops.add"] == 4  # one add a trip
    assert p.counters["reads.DRAM"] == e.breakdown["reads.DRAM"] == 4


def test_an_inner_loop_of_varying_trips_unrolls_to_its_longest_entry(write):
    """Pipelined L_i over `for (j = 0; j < i; j++) s = s + x[j];`, N = 8: the inner loop runs up to 7 trips, so
    7 copies: load 2 + a chain of 7 adds (21) + store 1 = depth 24; 7 loads on 2 ports: II 4; 24 + 7 x 4 = 52.
    At its mean (3.5 -> 4 copies) it was depth 15 and II 2, shorter than the chain of the entry i = 7."""
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      int s = 0;\n      L_j: for (int j = 0; j < i; j++) {\n"
              "        s = s + x[j];\n      }\n      b[i] = s;\n    }")
    ref = "    for i in range(N):\n        b[i] = x[:i].sum()"
    p, _ = _run(write, kernel, ref, loops="{L_i: {pipeline_ii: 1}}", params="{N: 8}")
    assert (p.breakdown["depth.L_i"], p.breakdown["ii.L_i"], p.breakdown["compute_cycles.L_i"]) == (24, 4, 52)


def test_a_pipelined_do_while_tests_after_its_body(write):
    """`do { k++; } while (k < N && x[k - 1] > 100);` pipelined: the test reads the k the body made: add 3, then
    load 2 + cmp 2 + logic 1: depth 8 (5 when the test was scheduled first)."""
    kernel = ("    int k = 0;\n    L_w: do {\n      k++;\n    } while (k < N && x[k - 1] > 100);\n"
              "    L_o: for (int i = 0; i < N; i++) {\n      b[i] = k;\n    }")
    p, _ = _run(write, kernel, "    b[:] = 1", loops="{L_w: {pipeline_ii: 1}}",
                inputs="    arrays:\n      x: {distribution: randint, range: [0, 9]}")
    assert p.breakdown["depth.L_w"] == 8


def test_a_loop_that_never_runs_moves_nothing(write):
    """Z = 0 trips: no compute, no tile moves (one word each way and two DRAM latencies before)."""
    kernel = "    L_z: for (int i = 0; i < Z; i++) {\n      b[i] = x[i] + 1;\n    }"
    p, e = _run(write, kernel, "    pass", params="{N: 16, Z: 0}")
    assert p.metrics["cycles"] == 0 and p.counters["reads.DRAM"] == p.counters["writes.DRAM"] == 0
    assert e.breakdown["reads.DRAM"] == 0


def test_an_inner_loop_that_never_runs_moves_nothing(write):
    """`for (i < N) for (j < K) b[i] = x[j] + i;` with K = 0: the outer loop's 16 trips of control (16 cycles), no
    element read or written, so no word moves (hlsim 0.33 moved one word of x, wrote back all of b, and paid two
    DRAM latencies: 139 cycles)."""
    kernel = ("    L_o: for (int i = 0; i < N; i++) {\n      L_in: for (int j = 0; j < K; j++) {\n"
              "        b[i] = x[j] + i;\n      }\n    }")
    p, e = _run(write, kernel, "    pass", params="{N: 16, K: 0}")
    assert p.metrics["cycles"] == 16 and p.counters["reads.DRAM"] == p.counters["writes.DRAM"] == 0
    assert e.breakdown["reads.DRAM"] == e.breakdown["writes.DRAM"] == 0


def test_statements_after_a_break_are_not_charged_on_the_breaking_trip(write):
    """`for (j...) { if (x[j] > 5) break; c = c + 1; }` with x = 0..15: six trips pass the add (3 cycles), the
    seventh breaks before it. The analytical model charged the add on the breaking trip too (analytical 0.42),
    3 cycles above hlsim's count; the loop's `j < N` is its counter's test, free."""
    kernel = ("    int c = 0;\n    L_j: for (int j = 0; j < N; j++) {\n      if (x[j] > 5) break;\n      c = c + 1;\n"
              "    }\n    L_o: for (int i = 0; i < N; i++) {\n      b[i] = c;\n    }")
    p, e = _run(write, kernel, "    b[:] = 6", inputs="    arrays:\n      x: {distribution: arange}")
    assert p.counters["iterations.L_j"] == 7
    assert e.breakdown["compute_cycles.L_j"] == p.breakdown["compute_cycles.L_j"]


def test_a_not_equal_loop_that_steps_past_its_bound_is_the_users_error(write):
    """`for (i = 0; i != N; i += 3)` with N = 10 never ends: an error naming the loop and its line (exit 2), not
    an internal error (exit 1, as an outside probe saw)."""
    from llmulator.errors import UserError
    kernel = "    L_ne: for (int i = 0; i != N; i += 3) {\n      b[i] = x[i];\n    }"
    with pytest.raises(UserError, match="L_ne .line .*does not reach its bound"):
        _run(write, kernel, "    pass", params="{N: 10}")


def test_a_while_that_runs_no_trip_still_reads_what_its_test_reads(write):
    """`while (k < N && x[k] > 100)` on x in 0..9: no trip, but the test reads x[0] once: x's words come from DRAM
    (hlsim 0.31 moved nothing, fewer words than the one element read); nothing is written back."""
    kernel = ("    int k = 0;\n    L_w: while (k < N && x[k] > 100) {\n      k++;\n    }\n"
              "    L_o: for (int i = 0; i < N; i++) {\n      b[i] = k;\n    }")
    p, _ = _run(write, kernel, "    b[:] = 0", inputs="    arrays:\n      x: {distribution: randint, range: [0, 9]}")
    assert p.counters["iterations.L_w"] == 0
    assert p.breakdown["transfer_cycles.L_w"] > 0  # x's tile (the index is data: all of x) comes in
    assert p.counters["reads.DRAM"] >= 1 and p.counters["writes.DRAM"] == 16  # b, by L_o; L_w writes nothing


@pytest.mark.parametrize("value, trips, compute", [
    # x = 0: no trip, but the test runs once before the loop is left: load 2 + cmp 2 + logic 1 = 5 (it cost nothing
    # before hlsim 0.38: a pipelined region of 0 iterations added no cycles; an outside probe)
    (0, 0, 5),
    # x = 200: 16 trips at II 3 (k++ is an add of 3 on k's recurrence), depth 5 (the test); the 17th test starts
    # where a 17th iteration would, at 16 x 3, and ends 5 later: 53 (15 x 3 + 5 = 50 before: never charged)
    (200, 16, 53),
])
def test_a_pipelined_while_pays_the_test_that_ends_it(write, value, trips, compute):
    kernel = ("    int k = 0;\n    L_w: while (k < N && x[k] > 100) {\n      k++;\n    }\n"
              "    L_o: for (int i = 0; i < N; i++) {\n      b[i] = k;\n    }")
    p, e = profiled_and_estimated(kernel_design(
        write, ARCH, kernel, ARRAYS, f"    b[:] = {trips}", "{L_w: {pipeline_ii: 1}}", PLACE, params="{N: 16}",
        hints=f"{{L_w: {{expected_trips: {trips}}}}}",
        inputs=f"    arrays:\n      x: {{distribution: constant, value: {value}}}"))
    assert p.counters["iterations.L_w"] == trips
    assert (p.breakdown["depth.L_w"], p.breakdown["compute_cycles.L_w"]) == (5, compute)
    if trips:
        assert p.breakdown["ii.L_w"] == 3
    assert e.breakdown["compute_cycles.L_w"] == compute


def test_a_pipelined_loop_inside_an_unrolled_one_says_its_ii_has_no_effect(write):
    """`unroll: 2` on L_i around `pipeline_ii: 1` on L_j: L_j runs fully unrolled in L_i's copies (HLS unrolls
    what an unrolled or pipelined loop contains), so its II does nothing; before, it was dropped without a word
    (an outside probe). The profile's notes and `validate`'s warning at the loop's pipeline_ii say so."""
    from llmulator.checks import unachievable_ii
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    kernel = ("    L_i: for (int i = 0; i < 4; i++) {\n      L_j: for (int j = 0; j < 4; j++) {\n"
              "        b[i * 4 + j] = x[i * 4 + j] + 1;\n      }\n    }")
    d = kernel_design(write, ARCH, kernel, ARRAYS, "    b[:] = x + 1", "{L_i: {unroll: 2}, L_j: {pipeline_ii: 1}}",
                      PLACE, params="{N: 16}")
    note = "L_j: pipeline_ii 1 has no effect: the loop runs fully unrolled inside L_i's unrolled body"
    assert any(n.startswith(note) for n in HlsimProfiler().profile(d).notes)
    (w,) = unachievable_ii(d)
    assert w.severity == "warning" and w.path == "mapping.loops.L_j.pipeline_ii" and "has no effect" in w.message


def test_a_carried_local_on_no_cycle_delays_the_next_iterations_reader(write):
    """`b[i] = s * 3; s = x[i] * 7;` at II 1: s is ready at load 2 + mul 5 = 7 after its iteration starts, and the
    next iteration (1 cycle later) multiplies it, so that multiply issues at 6 at the earliest: it ends at 11 and
    the store at 12 (the depth); 16 trips: 12 + 15 = 27. hlsim 0.38 issued it at 0 (depth 7, 22: the dependence
    lay on no cycle, so RecMII did not see it; an outside probe)."""
    kernel = ("    int s = 0;\n    L_i: for (int i = 0; i < N; i++) {\n      b[i] = s * 3;\n      s = x[i] * 7;\n"
              "    }")
    p, e = profiled_and_estimated(kernel_design(
        write, ARCH, kernel, ARRAYS, "    b[0] = 0\n    b[1:] = x[:-1] * 21", "{L_i: {pipeline_ii: 1}}", PLACE,
        params="{N: 16}"))
    assert (p.breakdown["ii.L_i"], p.breakdown["depth.L_i"], p.breakdown["compute_cycles.L_i"]) == (1, 12, 27)
    assert e.breakdown["compute_cycles.L_i"] == 27


@pytest.mark.parametrize("s0, trips, compute", [
    # s = 0, x = 1: s = 3, 6, ..., 24 after 8 trips (24 x 24 >= 500). II 3 (the adds of s and k); s is ready at
    # load 2 + mul 5 + add 3 = 10 into its iteration, so the 9th test, which squares it, starts at 7 x 3 + 10 = 31,
    # not at the 9th slot (24): mul 5 + cmp 2 + logic 1 later it decides, at 39 (hlsim 0.38: 24 + 8 = 32)
    (0, 8, 39),
    # s = 100: no trip; the test reads s from before the loop: mul 5 + cmp 2 + logic 1 = 8, nothing to wait for
    (100, 0, 8),
])
def test_a_pipelined_while_decides_when_the_value_its_test_reads_is_ready(write, s0, trips, compute):
    kernel = (f"    int s = {s0};\n    int k = 0;\n    L_w: while (k < N && s * s < 500) {{\n      s += x[k] * 3;\n"
              "      k++;\n    }\n    L_o: for (int i = 0; i < N; i++) {\n      b[i] = s + k;\n    }")
    p, e = profiled_and_estimated(kernel_design(
        write, ARCH, kernel, ARRAYS, f"    b[:] = {s0 + 3 * trips + trips}", "{L_w: {pipeline_ii: 1}}", PLACE,
        params="{N: 16}", hints=f"{{L_w: {{expected_trips: {trips}}}}}",
        inputs="    arrays:\n      x: {distribution: constant, value: 1}"))
    assert p.counters["iterations.L_w"] == trips
    assert p.breakdown["compute_cycles.L_w"] == compute
    assert e.breakdown["compute_cycles.L_w"] == compute


@pytest.mark.parametrize(("jump", "loops"), [("break", "{L_i: {pipeline_ii: 1}}"),
                                              ("return", "{L_i: {pipeline_ii: 1}}"), ("break", "{L_i: {unroll: 2}}")])
def test_a_counters_test_takes_no_comparator_in_a_region(write, jump, loops):
    """A pipelined or unrolled `for (i < N) { if (x[i] > 100) break; b[i] = x[i] + 1; }` on one comparator: one
    compare an iteration (the data's test), 16 in all, as the same loop with `continue` (no early exit) counts.
    Before hlsim 0.48 the counter's `i < N` was in the scheduled body: a second compare an iteration and one more an
    entry (33), a comparator slot (II 2 on one comparator where 1 is reached) and, on two comparators, two units
    (an outside probe)."""
    arch = ARCH.replace("cmp: {count: 4,", "cmp: {count: 1,")
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      if (x[i] > 100) {\n        JUMP;\n      }\n"
              "      b[i] = x[i] + 1;\n    }")
    ref, small = "    b[:] = x + 1", "    arrays:\n      x: {distribution: randint, range: [0, 9]}"
    d = kernel_design(write, arch, kernel.replace("JUMP", jump), ARRAYS, ref, loops, PLACE, params="{N: 16}",
                      inputs=small)
    p, e = profiled_and_estimated(d)
    c = kernel_design(write, arch, kernel.replace("JUMP", "continue"), ARRAYS, ref, loops, PLACE, params="{N: 16}",
                      inputs=small)
    q, _ = profiled_and_estimated(c)
    assert p.counters["ops.cmp"] == q.counters["ops.cmp"] == e.breakdown["ops.cmp"] == 16
    assert p.counters["units.cmp"] == 1
    assert p.metrics["cycles"] == q.metrics["cycles"] == e.metrics["cycles"]
    if "pipeline" in loops:
        assert p.breakdown["ii.L_i"] == 1


def test_a_loop_variable_its_body_steps_carries_the_compare_to_the_next_load(write):
    """`for (i < N; i++) { b[i] = x[i] + 1; if (x[i] > 4) i++; }` pipelined on x = 9 everywhere: 8 trips. The
    next trip's i waits for this trip's x[i] (load 2) and compare (cmp 2; the i + 1 beside it, a select after):
    II 4, as its spelling with a separate local j (`x[j]`, `j++`) has always had; depth load 2 + add 3 + store 1:
    7 x 4 + 6 = 34. Before hlsim 0.50 the loop's own variable was the loop control's counter: II 1 (an outside
    probe; hlsim 0.51: its subscripts are indirect, like x[j]'s)."""
    inputs = "    arrays:\n      x: {distribution: constant, value: 9}"
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      b[i] = x[i] + 1;\n"
              "      if (x[i] > 4) {\n        i++;\n      }\n    }")
    ref = "    b[0::2] = x[0::2] + 1"
    p, e = profiled_and_estimated(kernel_design(write, ARCH, kernel, ARRAYS, ref, "{L_i: {pipeline_ii: 1}}", PLACE,
                                                params="{N: 16}", inputs=inputs))
    assert p.counters["trips.L_i"] == 8
    assert (p.breakdown["ii.L_i"], p.breakdown["compute_cycles.L_i"]) == (4, 34)
    # the elements it reads spread over all of x, as x[j]'s do: the tile is x's 16 words (8 = trips x step, before
    # hlsim 0.51, as if i stepped by one), and b's 16 are written back
    assert p.counters["reads.DRAM"] == e.breakdown["reads.DRAM"] == 16 and p.counters["writes.DRAM"] == 16
    assert e.breakdown["ii.L_i"] == 4
    twin = ("    int j = 0;\n    L_i: for (int i = 0; i < N; i++) {\n      b[i] = x[j] + 1;\n"
            "      if (x[j] > 4) {\n        j++;\n      }\n    }")
    q, _ = profiled_and_estimated(kernel_design(write, ARCH, twin, ARRAYS, "    b[:] = x[0] + 1",
                                                "{L_i: {pipeline_ii: 1}}", PLACE, params="{N: 16}", inputs=inputs))
    assert q.breakdown["rec_mii.L_i"] == p.breakdown["rec_mii.L_i"] == 4


@pytest.mark.parametrize("label", ["L_k: ", ""])
def test_an_unlabelled_inner_loop_of_a_pipelined_loop_unrolls_like_a_labelled_one(write, label):
    """`int v = x[i]; for (k < 4) t[k] = v / (k + 3); b[i] = t[0] + t[1] + t[2] + t[3];` pipelined, one divider:
    4 divides an iteration, II 4 (ResMII), with or without the inner loop's label. Before hlsim 0.51 the
    unlabelled loop reached the instrumentation without its label, counted as one trip: one divide in the
    schedule, II 1, hlsim's own divider bound failed (exit 3) and the analytical model reported half
    of the cycles the divider needs (an outside probe)."""
    kernel = (f"    L_i: for (int i = 0; i < N; i++) {{\n      int t[4];\n      int v = x[i];\n"
              f"      {label}for (int k = 0; k < 4; k++) {{\n        t[k] = v / (k + 3);\n      }}\n"
              "      b[i] = t[0] + t[1] + t[2] + t[3];\n    }")
    ref = "    b[:] = x // 3 + x // 4 + x // 5 + x // 6"
    p, e = _run(write, kernel, ref, loops="{L_i: {pipeline_ii: 1}}",
                inputs="    arrays:\n      x: {distribution: randint, range: [0, 99]}")
    assert p.breakdown["ii.L_i"] == p.breakdown["res_mii.L_i"] == e.breakdown["ii.L_i"] == 4
    assert p.breakdown["compute_cycles.L_i"] >= 4 * 16  # 16 iterations, 4 divides each, one divider
