"""do-while loops and `continue`, in hlsim (the ground truth) and the analytical model, against hand counts.

Found by profiling kernels written outside the project: hlsim ran a do-while loop's body (its outputs were
right) without counting it, so the loop cost nothing in hlsim and in the analytical model; the analytical model
priced the statements after a `continue` on every trip, and refused a loop with a `continue` and an early
`return` unless it had a trip-count hint."""

from __future__ import annotations

import warnings

import pytest
from conftest import kernel_design, profiled_and_estimated
from llmulator_plugins.analytical.estimator import AnalyticalEstimator
from llmulator_plugins.hlsim.profiler import HlsimProfiler

ARCH = """
architecture:
  version: 1
  name: alu
  clock_mhz: 1000
  compute:
    operators:
      add: {count: 2, bits: 32, latency_cycles: 1}
      mul: {count: 1, bits: 32, latency_cycles: 3}
      div: {count: 1, bits: 32, latency_cycles: 8}
      cmp: {count: 2, bits: 32, latency_cycles: 1}
      logic: {count: 2, bits: 32, latency_cycles: 1}
      shift: {count: 2, bits: 32, latency_cycles: 1}
  memory:
    - {name: DRAM, kind: dram, width_bits: 64, bandwidth_bytes_per_cycle: 8, latency_cycles: 20}
    - {name: BUF, kind: sram, capacity_kib: 64, width_bits: 32, banks: 4, ports: 2, latency_cycles: 1}
"""

DIGITS = """    L_i: for (int i = 0; i < N; i++) {
      int v = x[i];
      int c = 0;
      L_d: do {
        v = v / 10;
        c++;
      } while (v != 0);
      d[i] = c;
    }"""
DIGITS_ARRAYS = "    x: {shape: [N], dtype: int32, role: in}\n    d: {shape: [N], dtype: int32, role: out}"
DIGITS_REF = "    d[:] = [len(str(int(v))) for v in x]"

SKIP = """    L_i: for (int i = 0; i < N; i++) {
      int v = x[i];
      L_z: if (v == 0) {
        continue;
      }
      v = (v * 3) % 1000;
      y[i] = v ^ 85;
    }"""
SKIP_ARRAYS = "    x: {shape: [N], dtype: int32, role: in}\n    y: {shape: [N], dtype: int32, role: out}"
SKIP_REF = ("    for i in range(N):\n        if x[i] != 0:\n            y[i] = ((int(x[i]) * 3) % 1000) ^ 85\n"
            "        else:\n            y[i] = 0")


def _run(d):
    return profiled_and_estimated(d)


def _inputs(write, kernel: str, arrays: str, ref: str, inputs: str, params: str = "{N: 64}"):
    """A one-kernel design on ARCH with its inputs declared (every array on BUF, no mapping directives)."""
    names = [ln.split(":")[0].strip() for ln in arrays.splitlines()]
    return kernel_design(write, ARCH, kernel, arrays, ref, "{}", "{" + ", ".join(f"{n}: BUF" for n in names) + "}",
                         params, inputs=inputs)


@pytest.mark.parametrize("value, digits", [(12345, 5), (0, 1)])
def test_a_do_while_loop_is_counted_and_runs_its_body_before_the_first_test(write, value, digits):
    d = _inputs(write, DIGITS, DIGITS_ARRAYS, DIGITS_REF,
                f"    arrays:\n      x: {{distribution: constant, value: {value}}}")
    p, e = _run(d)
    # every element has `digits` digits: the body runs that often per element (once for 0: the test comes after)
    assert p.counters["trips.L_d"] == digits
    assert p.counters["ops.div"] == 64 * digits
    # its test comes after each trip: once per trip, not once more to exit as a while's (the only compare here)
    assert p.counters["ops.cmp"] == 64 * digits and e.breakdown["ops.cmp"] == pytest.approx(64 * digits)
    # the loop costs cycles: at least its divisions, one after another (one 8-cycle divider)
    assert p.metrics["cycles"] >= 64 * digits * 8
    assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=0.01)


STOP = """    int i;
    L_s: for (i = 0; s[i] == t[i]; i++) {
      if (s[i] == 0) {
        break;
      }
    }
    r[0] = i;"""


@pytest.mark.parametrize("stop, tests", [(5, 6), (63, 64)])
def test_a_loop_left_by_break_is_not_charged_the_exit_test_it_never_ran(write, stop, tests):
    """Equal strings ending at `stop`: the test `s[i] == t[i]` runs for i = 0..stop (stop + 1 times) and the
    break leaves before another; the body's `s[i] == 0` runs as often. hlsim before 0.23 counted the exit test
    a while's or a for's normal end runs: one comparison and two loads more per early exit."""
    arrays = ("    s: {shape: [N], dtype: int32, role: in}\n    t: {shape: [N], dtype: int32, role: in}\n"
              "    r: {shape: [1], dtype: int32, role: out}")
    gen = f"    generator: |\n      s[:] = 7\n      s[{stop}] = 0\n      t[:] = s"
    d = kernel_design(write, ARCH, STOP, arrays, f"    r[0] = {stop}", "{}", "{s: BUF, t: BUF, r: BUF}",
                      "{N: 64}", hints="{L_s: {expected_trips: 8}}", inputs=gen)
    p = HlsimProfiler().profile(d)
    assert p.functional_check == "pass", p.functional_check
    assert p.counters["ops.cmp"] == 2 * tests  # the test and the body's compare, `tests` times each
    # s[i], t[i] in the test, s[i] in the body; and r[0] read once more to go back to DRAM (hlsim 0.26)
    assert p.counters["reads.BUF"] == 3 * tests + 1
    # the analytical model prices the hinted 8 trips, each ending in the break at the hint's rate: the test and
    # the body's compare once per trip, no exit test (before analytical 0.35: one compare more per entry)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = AnalyticalEstimator().estimate([d])[0]
    assert d.trips("L_s") == 8
    assert e.breakdown["ops.cmp"] == pytest.approx(2 * 8)


FIND = """    int lo = 0;
    int hi = N - 1;
    L_b: while (lo <= hi) {
      int mid = (lo + hi) / 2;
      L_lt: if (v[mid] < key[0]) {
        lo = mid + 1;
      } else L_gt: if (v[mid] > key[0]) {
        hi = mid - 1;
      } else {
        r[0] = mid;
        return;
      }
    }
    r[0] = -1;"""


@pytest.mark.parametrize("key, tests, compares", [(31, 1, 2), (2, 6, 11), (-5, 7, 12)])
def test_a_loop_left_by_return_is_not_charged_the_exit_test(write, key, tests, compares):
    """Binary search for `key` in v = 0..63. Hand counts: 31 is the first probe (one test, both compares, return);
    2 takes probes 31, 15, 7, 3 (two compares each: not below, above), 1 (below: one compare) and 2 (two: found),
    six tests and 11 compares; -5 takes probes 31, 15, 7, 3, 1, 0 (two compares each) and a seventh test that
    fails. A `return` skips the test a normal exit runs (hlsim 0.24; the analytical model from 0.35)."""
    arrays = ("    v: {shape: [N], dtype: int32, role: in}\n    key: {shape: [1], dtype: int32, role: in}\n"
              "    r: {shape: [1], dtype: int32, role: out}")
    ref = "    r[0] = key[0] if 0 <= key[0] < N else -1"
    inputs = (f"    arrays:\n      v: {{distribution: arange, start: 0, step: 1}}\n"
              f"      key: {{distribution: constant, value: {key}}}")
    d = kernel_design(write, ARCH, FIND, arrays, ref, "{}", "{v: BUF, key: BUF, r: BUF}", "{N: 64}", inputs=inputs)
    p, e = _run(d)
    assert p.counters["ops.cmp"] == tests + compares
    assert e.breakdown["ops.cmp"] == pytest.approx(tests + compares)


@pytest.mark.parametrize("density, p_zero", [(1.0, 0.25), (0.25, 0.75 + 0.25 * 0.25)])
def test_continue_skips_the_rest_of_the_body_in_the_analytical_model(write, density, p_zero):
    """x uniform over 0..3 (a quarter zero), or with 3 in 4 elements set to zero: the statements after the
    `continue` run on the non-zero share, in hlsim by construction and in the analytical model by the branch's
    probability (before: on every trip, 2177 cycles for both inputs of a kernel hlsim put at 1799 and 721)."""
    d = _inputs(write, SKIP, SKIP_ARRAYS, SKIP_REF,
                f"    seed: 3\n    arrays:\n      x: {{distribution: randint, range: [0, 3], density: {density}}}",
                "{N: 256}")
    p, e = _run(d)
    runs = 256 * (1 - p_zero)
    assert p.counters["ops.div"] == pytest.approx(runs, rel=0.15)      # one draw of 256 elements
    assert e.breakdown["ops.div"] == pytest.approx(runs, rel=0.05)     # the declared distribution's share
    assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=0.1)


def test_a_loop_with_continue_and_an_early_return_is_priced_from_draws(write):
    kernel = SKIP.replace("      y[i] = v ^ 85;", "      y[i] = v ^ 85;\n      L_r: if (v > 600) {\n"
                                                  "        return;\n      }")
    ref = ("    for i in range(N):\n        if x[i] == 0:\n            continue\n"
           "        v = (int(x[i]) * 3) % 1000\n        y[i] = v ^ 85\n        if v > 600:\n            break")
    d = _inputs(write, kernel, SKIP_ARRAYS, ref, "    arrays:\n      x: {distribution: arange, start: 0, step: 1}",
                "{N: 256}")
    p, e = _run(d)
    # x[i] = i: element 0 continues, 1..200 run the body (3i <= 600), 201 runs it and returns (603 > 600)
    assert p.counters["trips.L_i"] == 202 and p.counters["ops.div"] == 201
    # the analytical model runs the loop's control on draws of the declared inputs (here always the same): the
    # same trips and operations, with no trip-count hint
    assert e.breakdown["ops.div"] == pytest.approx(201)
    assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=0.02)


SEARCH = """    int pos = -1;
    L_s: for (int j = 0; j < N; j++) {
      if (x[j] == 7) {
        pos = j;
        BREAK
      }
    }
    z[0] = pos;"""


@pytest.mark.parametrize("jump, compares", [("break;", 11), ("", 16)])
def test_a_for_loops_counter_test_is_no_operation_with_or_without_a_break(write, jump, compares):
    """The first 7 at j = 10 of 16: with the break the body's compare runs 11 times (gcov's count of the `if`),
    without it 16. `j < N` is the loop control's counter compare: no cycle, no unit and, from hlsim 0.44, no
    datapath operation either way (before, a loop left by `break` counted it on each trip: 22 where 11; an outside
    probe against gcov's counts)."""
    arrays = "    x: {shape: [N], dtype: int32, role: in}\n    z: {shape: [1], dtype: int32, role: out}"
    last = "idx[0]" if jump else "idx[-1]"
    d = kernel_design(write, ARCH, SEARCH.replace("BREAK", jump), arrays,
                      f"    idx = np.nonzero(x == 7)[0]\n    z[0] = {last} if len(idx) else -1", "{}",
                      "{x: BUF, z: BUF}", "{N: 16}", hints="{L_s: {expected_trips: 11}}" if jump else "{}",
                      inputs="    generator: |\n      x[:] = 1\n      x[10] = 7\n      x[12] = 7")
    p, e = _run(d)
    assert p.counters["ops.cmp"] == compares
    assert e.breakdown["ops.cmp"] == pytest.approx(compares)
