"""Trips of a while loop from the inputs the workload declares (llmulator.input_trips): hand counts of the
expectation, the variant followed, and every construct it does not read left to the hint."""

from __future__ import annotations

import time

import attrs
import numpy as np
import pytest
from conftest import kernel_design
from llmulator.input_trips import input_trip_profile as while_profile
from test_analytical_agreement import ARCH as _AGREEMENT_ARCH

# the agreement tests' architecture, with the shifter and divider these kernels use
ARCH = _AGREEMENT_ARCH.replace("DB", "true").replace(
    "      logic: {count: 8, bits: 32, numeric: int, latency_cycles: 1}",
    "      logic: {count: 8, bits: 32, numeric: int, latency_cycles: 1}\n"
    "      shift: {count: 8, bits: 32, numeric: int, latency_cycles: 1}\n"
    "      div: {count: 2, bits: 32, numeric: int, latency_cycles: 8}")

COLLATZ = """    L_i: for (int i = 0; i < N; i++) {
      int x = a[i];
      int c = 0;
      L_w: while (x > 1 && c < CAP) {
        x = (x & 1) ? 3 * x + 1 : x >> 1;
        c++;
      }
      o[i] = c;
    }"""
COLLATZ_ARRAYS = "    a: {shape: [N], dtype: int32, role: in}\n    o: {shape: [N], dtype: int32, role: out}"


def collatz_steps(v: int, cap: int) -> int:
    c = 0
    while v > 1 and c < cap:
        v = 3 * v + 1 if v & 1 else v >> 1
        c += 1
    return c


def design(write, kernel=COLLATZ, arrays=COLLATZ_ARRAYS, inputs="", params="{N: 64, CAP: 16}",
           hints="{L_w: {expected_trips: 8}}", variant=None, placement="{a: BUF, o: BUF}"):
    d = kernel_design(write, ARCH, kernel, arrays, "    pass", "{}", placement, params, hints=hints)
    if inputs:
        import attrs
        import yaml
        d = attrs.evolve(d, workload=attrs.evolve(d.workload, inputs=yaml.safe_load(inputs)), variant=variant)
    return d


def search_design(write, kernel: str, hints: str):
    """A kernel over d [M] and key [Q], both uniform over 0..7, writing o [Q]."""
    arrays = ("    d: {shape: [M], dtype: int32, role: in}\n    key: {shape: [Q], dtype: int32, role: in}\n"
              "    o: {shape: [Q], dtype: int32, role: out}")
    return design(write, kernel=kernel, arrays=arrays, params="{Q: 64, M: 16}", placement="{d: BUF, key: BUF, o: BUF}",
                  hints=hints, inputs="arrays: {d: {distribution: randint, range: [0, 7]}, key: {distribution: "
                                      "randint, range: [0, 7]}}")


def test_a_collatz_loop_takes_the_mean_of_its_steps_over_the_declared_values(write):
    """randint [1, 8] (both ends): the steps are 0, 1, 7, 2, 5, 8, 16 (capped), 3 - mean 42 / 8 = 5.25 -
    where the hint says 8; the profile has one entry per element and draw, and its mean is the hand count
    within the sampling error of 1,024 lanes."""
    d = design(write, inputs="arrays: {a: {distribution: randint, range: [1, 8]}}")
    p = while_profile(d, "L_w")
    assert p is not None and len(p) == 1024
    want = np.mean([collatz_steps(v, 16) for v in range(1, 9)])
    assert want == 5.25
    assert np.mean(p) == pytest.approx(want, abs=0.5)
    assert set(p) <= {collatz_steps(v, 16) for v in range(1, 9)}
    assert d.trips("L_w") == pytest.approx(np.mean(p))  # the model reads the profile, not the hint


def test_a_constant_input_gives_the_exact_count_and_a_variant_is_followed(write):
    inputs = """
arrays: {a: {distribution: constant, value: 6}}
variants:
  big: {arrays: {a: {distribution: constant, value: 27}}}
"""
    assert set(while_profile(design(write, inputs=inputs), "L_w")) == {collatz_steps(6, 16)}  # 8
    assert set(while_profile(design(write, inputs=inputs, variant="big"), "L_w")) == {16}  # 27 runs past the cap


def test_a_search_loop_takes_the_expected_position_of_the_first_match(write):
    """``while (k < M && d[k] != key[q]) k++`` with d and keys uniform over 8 values: each element matches
    with p = 1/8 independently; trips > j while the first j + 1 elements miss, so E[trips] = sum_{j<M}
    (7/8)^(j+1) = 7 (1 - (7/8)^16) = 6.18 for M = 16."""
    kernel = """    L_q: for (int q = 0; q < Q; q++) {
      int k = 0;
      L_w: while (k < M && d[k] != key[q]) {
        k++;
      }
      o[q] = k;
    }"""
    d = search_design(write, kernel, "{L_w: {expected_trips: 8}}")
    p = while_profile(d, "L_w")
    want = 7 * (1 - (7 / 8) ** 16)
    assert np.mean(p) == pytest.approx(want, abs=0.4)
    assert min(p) == 0 and max(p) <= 16


@pytest.mark.parametrize("kernel, why", [
    ("""    L_i: for (int i = 0; i < N; i++) {
      int x = a[i];
      L_w: while (x > 1) {
        a[i] = x / 2;
        x = a[i];
      }
      o[i] = x;
    }""", "it reads an array the kernel writes"),
    ("""    L_i: for (int i = 0; i < N; i++) {
      int x = a[i];
      L_w: while (x > 0) {
        x = x + 1;
      }
      o[i] = x;
    }""", "a loop that would run 2^31 trips: the caps stop it"),
])
def test_what_it_does_not_read_is_left_to_the_hint(write, kernel, why):
    d = design(write, kernel=kernel, hints="{L_w: {expected_trips: 3}}",
               inputs="arrays: {a: {distribution: randint, range: [1, 100]}}")
    t0 = time.perf_counter()
    assert while_profile(d, "L_w") is None, why
    assert time.perf_counter() - t0 < 30
    assert d.trips("L_w") == 3


CONTINUES = """    L_i: for (int i = 0; i < N; i++) {
      int x = a[i];
      L_w: while (x > 1) {
        x = x - 1;
        if (x == 5) continue;
        x = x / 2;
      }
      o[i] = x;
    }"""


def continue_steps(x: int) -> int:
    n = 0
    while x > 1:
        n += 1
        x -= 1
        if x == 5:
            continue
        x //= 2
    return n


def test_a_continue_sends_its_lanes_to_the_next_trip(write):
    """Every lane's trips equal the hand count of its drawn value: a `continue` skips the halving on its lane
    and the loop goes on (before analytical 0.30 such a loop was left to its hint)."""
    from llmulator.input_trips import SEED0
    from llmulator.inputs import generate_inputs
    d = design(write, kernel=CONTINUES, hints="{L_w: {expected_trips: 3}}",
               inputs="arrays: {a: {distribution: randint, range: [1, 100]}}")
    got = while_profile(d, "L_w")
    n = 64
    assert got is not None and len(got) % n == 0
    for k in range(len(got) // n):
        a = generate_inputs(d.workload, d.sizes, d.variant, seed=SEED0 + k)["a"]
        assert got[k * n:(k + 1) * n] == [continue_steps(int(v)) for v in a], k
    assert d.trips("L_w") == pytest.approx(np.mean(got))


EUCLID = """    L_i: for (int i = 0; i < N; i++) {
      int u = a[i];
      int v = b[i];
      L_w: while (v) {
        int t = u;
        u = v;
        v = t % v;
      }
      o[i] = (v != 0 ? u / v : u) + (v && u % v);
    }"""


def euclid_steps(u: int, v: int) -> int:
    n = 0
    while v:
        u, v = v, u % v
        n += 1
    return n


def test_a_division_on_a_lane_that_left_the_loop_is_not_run(write):
    """Euclid's `v = t % v` divides by zero only on a lane whose loop has ended (and `?:`/`&&` guard the
    others): C never runs it there, so the loop runs on the draws; every lane's trips are the hand count of
    its pair (before, any lane at zero sent the loop to its hint of 40 where the draws take ~10)."""
    from llmulator.input_trips import SEED0
    from llmulator.inputs import generate_inputs
    arrays = COLLATZ_ARRAYS + "\n    b: {shape: [N], dtype: int32, role: in}"
    d = design(write, kernel=EUCLID, arrays=arrays, hints="{L_w: {expected_trips: 40}}",
               placement="{a: BUF, b: BUF, o: BUF}",
               inputs="arrays: {a: {distribution: randint, range: [0, 1000]}, b: {distribution: randint, range: "
                      "[0, 1000]}}")
    got = while_profile(d, "L_w")
    n = 64
    assert got is not None and len(got) % n == 0
    for k in range(len(got) // n):
        x = generate_inputs(d.workload, d.sizes, d.variant, seed=SEED0 + k)
        assert got[k * n:(k + 1) * n] == [euclid_steps(int(u), int(v)) for u, v in zip(x["a"], x["b"], strict=True)], k
    assert d.trips("L_w") == pytest.approx(np.mean(got)) and d.trips("L_w") < 15


def test_a_division_by_zero_on_a_lane_that_runs_it_is_left_to_the_hint(write):
    kernel = COLLATZ.replace("x = (x & 1) ? 3 * x + 1 : x >> 1;", "x = x / (x - 2);")
    d = design(write, kernel=kernel, inputs="arrays: {a: {distribution: constant, value: 2}}",
               hints="{L_w: {expected_trips: 8}}")
    assert while_profile(d, "L_w") is None and d.trips("L_w") == 8


def test_an_input_generator_is_user_code_and_is_never_run(write):
    d = design(write, inputs="generator: 'a[:] = 5'\narrays: {a: {distribution: randint, range: [1, 8]}}")
    assert while_profile(d, "L_w") is None
    assert d.trips("L_w") == 8


def test_a_loop_bounded_by_an_input_element_takes_that_elements_distribution(write):
    """``for (j = 0; j < c[i]; j++)`` with c uniform over 0..7: 3.5 trips per entry on average (the
    generator's hint said N / 2 = 32), one entry per element and draw."""
    kernel = """    L_i: for (int i = 0; i < N; i++) {
      int s = 0;
      L_j: for (int j = 0; j < c[i]; j++) {
        s += j;
      }
      o[i] = s;
    }"""
    arrays = "    c: {shape: [N], dtype: int32, role: in}\n    o: {shape: [N], dtype: int32, role: out}"
    d = design(write, kernel=kernel, arrays=arrays, placement="{c: BUF, o: BUF}",
               hints="{L_j: {expected_trips: N / 2}}", inputs="arrays: {c: {distribution: randint, range: [0, 7]}}")
    p = while_profile(d, "L_j")
    assert set(p) <= set(range(8)) and np.mean(p) == pytest.approx(3.5, abs=0.25)
    assert d.trips("L_j") == pytest.approx(np.mean(p))


def test_work_the_control_does_not_depend_on_is_not_run(write):
    """The body's inner loop and its float sum decide nothing about the trips: only the slice the condition
    needs (x and c) runs, so the loop is priced although an inner loop would otherwise stop the interpreter."""
    kernel = """    L_i: for (int i = 0; i < N; i++) {
      int x = a[i];
      int c = 0;
      float acc = 0.0f;
      L_w: while (x > 1 && c < 16) {
        L_k: for (int k = 0; k < 4; k++) {
          acc += 0.5f * k;
        }
        x = (x & 1) ? 3 * x + 1 : x >> 1;
        c++;
      }
      o[i] = c + (int)acc;
    }"""
    d = design(write, kernel=kernel, inputs="arrays: {a: {distribution: constant, value: 6}}")
    assert set(while_profile(d, "L_w")) == {8}


def _branch(d):
    return next(n for n in d.tree.walk() if getattr(n, "kind", "") == "branch")


@pytest.mark.parametrize("cond, prefix, inputs, want", [
    # k uniform over 0..7: a multiple of 4 in 2 of 8 values
    ("(a[i] & 3) == 0", "", "{a: {distribution: randint, range: [0, 7]}}", 0.25),
    # v = a - b over 0..4 each: a - b > 2 for (3, 0), (4, 0), (4, 1): 3 of 25 pairs
    ("v > 2", "      int v = a[i] - b[i];\n", "{a: {distribution: randint, range: [0, 4]}, "
     "b: {distribution: randint, range: [0, 4]}}", 3 / 25),
    # both conditions at once: a loop index and an input (i < N / 2 half the entries, a odd half the draws)
    ("i < N / 2 && (a[i] & 1)", "", "{a: {distribution: randint, range: [0, 9]}}", 0.25),
    # a division C runs only where its guard holds (b = 0 on a quarter of the lanes): (2, 1) and (3, 1) of 16
    ("b[i] != 0 ? a[i] / b[i] > 1 : 0", "", "{a: {distribution: randint, range: [0, 3]}, "
     "b: {distribution: randint, range: [0, 3]}}", 2 / 16),
    # ... and on the right of && : a % b == 1 for (1, 2), (3, 2), (1, 3) of 16
    ("b[i] && a[i] % b[i] == 1", "", "{a: {distribution: randint, range: [0, 3]}, "
     "b: {distribution: randint, range: [0, 3]}}", 3 / 16),
])
def test_a_branch_over_declared_inputs_is_taken_as_often_as_its_condition_holds_on_draws(write, cond, prefix,
                                                                                        inputs, want):
    from llmulator.input_trips import input_branch_share
    kernel = (f"    L_i: for (int i = 0; i < N; i++) {{\n{prefix}      L_b: if ({cond}) {{\n        o[i] = 1;\n"
              "      } else {\n        o[i] = 2;\n      }\n    }")
    arrays = ("    a: {shape: [N], dtype: int32, role: in}\n    b: {shape: [N], dtype: int32, role: in}\n"
              "    o: {shape: [N], dtype: int32, role: out}")
    d = design(write, kernel=kernel, arrays=arrays, placement="{a: BUF, b: BUF, o: BUF}",
               hints="{L_b: {taken_probability: 0.9}}", inputs=f"arrays: {inputs}")
    br = _branch(d)
    assert input_branch_share(d, br) == pytest.approx(want, abs=0.04)
    assert d.branch_probability(br) == (input_branch_share(d, br), None)  # the hint of 0.9 is not read
    assert d.control_from_inputs()


def test_a_branch_on_an_array_the_kernel_writes_is_left_to_the_hint(write):
    from llmulator.input_trips import input_branch_share
    kernel = ("    L_i: for (int i = 1; i < N; i++) {\n      L_b: if (a[i - 1] > 3) {\n        a[i] = a[i] + 1;\n"
              "      }\n      o[i] = a[i];\n    }")
    arrays = "    a: {shape: [N], dtype: int32, role: inout}\n    o: {shape: [N], dtype: int32, role: out}"
    d = design(write, kernel=kernel, arrays=arrays, hints="{L_b: {taken_probability: 0.9}}",
               inputs="arrays: {a: {distribution: randint, range: [0, 7]}}")
    br = _branch(d)
    assert input_branch_share(d, br) is None and d.branch_probability(br) == (0.9, None)
    assert not d.control_from_inputs()


def test_a_branch_inside_a_loop_the_data_ends_is_counted_on_the_trips_that_reach_it(write):
    """``while (k < M && d[k] != key[q]) { if (d[k] > 3) hits++; k++; }`` with d and keys uniform over 0..7:
    the branch runs on the trips where d[k] != key, and there d[k] > 3 in half of them (P(d > 3, d != key)
    / P(d != key) = (4/8 x 7/8) / (7/8)); the loop runs on its lanes and the condition is counted on every
    trip, although the loop's own control does not need it."""
    from llmulator.input_trips import input_branch_share
    kernel = """    L_q: for (int q = 0; q < Q; q++) {
      int k = 0;
      int hits = 0;
      L_w: while (k < M && d[k] != key[q]) {
        L_b: if (d[k] > 3) {
          hits++;
        }
        k++;
      }
      o[q] = hits;
    }"""
    d = search_design(write, kernel, "{L_w: {expected_trips: 8}, L_b: {taken_probability: 0.9}}")
    br = _branch(d)
    assert input_branch_share(d, br) == pytest.approx(0.5, abs=0.04)
    assert d.control_from_inputs()


def test_a_loop_under_a_branch_runs_on_the_entries_that_take_it(write):
    """``if (x > 3) { while (x > 1) x = x / 2; }`` with x uniform over 1..100: the loop runs on the entries
    with x in 4..100, floor(log2 x) trips each: (4 x 2 + 8 x 3 + 16 x 4 + 32 x 5 + 37 x 6) / 97 = 4.93."""
    kernel = """    L_i: for (int i = 0; i < N; i++) {
      int x = a[i];
      L_b: if (x > 3) {
        L_w: while (x > 1) {
          x = x / 2;
        }
      }
      o[i] = x;
    }"""
    d = design(write, kernel=kernel, hints="{L_w: {expected_trips: 3}, L_b: {taken_probability: 0.5}}",
               inputs="arrays: {a: {distribution: randint, range: [1, 100]}}")
    p = while_profile(d, "L_w")
    assert set(p) <= {2, 3, 4, 5, 6} and np.mean(p) == pytest.approx(478 / 97, abs=0.15)
    from llmulator.input_trips import input_branch_share
    assert input_branch_share(d, _branch(d)) == pytest.approx(0.97, abs=0.02)  # 97 of 100 values


def test_a_branch_under_a_branch_is_counted_on_the_entries_that_reach_it(write):
    """``if (a[i] > 50) { if ((a[i] & 1) == 0) ... }`` with a uniform over 1..100: the inner branch runs on
    51..100 and is taken on the 25 even values of those 50."""
    from llmulator.input_trips import input_branch_share
    kernel = """    L_i: for (int i = 0; i < N; i++) {
      L_hi: if (a[i] > 50) {
        L_even: if ((a[i] & 1) == 0) {
          o[i] = 1;
        }
      }
    }"""
    d = design(write, kernel=kernel, hints="{L_hi: {taken_probability: 0.1}, L_even: {taken_probability: 0.1}}",
               inputs="arrays: {a: {distribution: randint, range: [1, 100]}}")
    inner = next(n for n in d.tree.walk() if getattr(n, "label", None) == "L_even")
    got = input_branch_share(d, inner)
    # exactly the share among the same draws (llmulator.inputs, the module's seeds), found by NumPy directly
    from llmulator.input_trips import SEED0
    from llmulator.inputs import generate_inputs
    a = np.concatenate([generate_inputs(d.workload, d.sizes, seed=SEED0 + k)["a"] for k in range(16)])
    assert got == pytest.approx(float((a[a > 50] % 2 == 0).mean()), abs=1e-12)
    assert got == pytest.approx(0.5, abs=0.08)  # the hand count, within these 1,024 draws' spread
    assert d.control_from_inputs()


def test_a_loop_bounded_by_a_count_an_earlier_loop_makes_runs_that_loop_too(write):
    """``n`` counts the elements of a (randint [1, 8]) that are at least 4, then ``while (j < n)``: the earlier
    loop runs on the lanes (within the caps), so the trips are N x 5/8 = 40 on average (hand count), where
    the hint says 8; before, the earlier loop left ``n`` unknown and the hint stood."""
    kernel = """    int n = 0;
    L_f: for (int i = 0; i < N; i++) {
      L_t: if (a[i] >= 4) {
        n++;
      }
    }
    int j = 0;
    L_w: while (j < n) {
      o[j] = j;
      j++;
    }"""
    d = design(write, kernel=kernel, inputs="arrays: {a: {distribution: randint, range: [1, 8]}}",
               hints="{L_w: {expected_trips: 8}}")
    p = while_profile(d, "L_w")
    assert p is not None and len(p) == 16  # one lane per draw: the loop has no enclosing loop
    assert np.mean(p) == pytest.approx(64 * 5 / 8, abs=3)
    assert d.trips("L_w") == pytest.approx(np.mean(p))


def test_an_inner_loop_the_condition_needs_runs_on_the_lanes(write):
    """``while (x > 1) { for (k < 2) x--; }`` over randint [1, 100]: floor(x / 2) trips, 25 on average (hand
    count: the sum of floor(x / 2) over 1..100 is 2,500), where the hint says 3."""
    kernel = """    L_i: for (int i = 0; i < N; i++) {
      int x = a[i];
      L_w: while (x > 1) {
        L_k: for (int k = 0; k < 2; k++) {
          x = x - 1;
        }
      }
      o[i] = x;
    }"""
    d = design(write, kernel=kernel, hints="{L_w: {expected_trips: 3}}",
               inputs="arrays: {a: {distribution: randint, range: [1, 100]}}")
    p = while_profile(d, "L_w")
    assert p is not None and set(p) <= set(range(51))
    assert np.mean(p) == pytest.approx(sum(x // 2 for x in range(1, 101)) / 100, abs=1.5)


def test_a_return_inside_an_inner_loop_it_runs_leaves_the_loop_to_its_hint(write):
    """The return ends the run on the first trip; the lanes' inner loop would only end itself and let the outer
    loop run all N trips: refused, the hint (8) stands."""
    kernel = """    int j = 0;
    L_w: while (j < N) {
      L_k: for (int k = 0; k < 2; k++) {
        L_hit: if (a[j] == 5) {
          return;
        }
      }
      j = j + 1;
    }
    o[0] = j;"""
    d = design(write, kernel=kernel, inputs="arrays: {a: {distribution: constant, value: 5}}",
               hints="{L_w: {expected_trips: 8}}")
    assert while_profile(d, "L_w") is None
    assert d.trips("L_w") == 8 and d.return_share("L_w") == 0.0


def test_a_condition_that_steps_a_scalar_the_loop_needs_stays_in_the_slice(write):
    """``if (++c == 3)`` steps the counter the loop's condition reads, though its side assigns nothing the
    loop needs: the slice keeps it, and ``while (c < x)`` with two steps a trip runs ceil(x / 2) trips
    (x = 8 for every element: 4), not 8 as if the condition's step never ran."""
    kernel = """    L_i: for (int i = 0; i < N; i++) {
      int x = a[i];
      int c = 0;
      L_w: while (c < x) {
        c++;
        L_t: if (++c == 3) {
          o[i] = 1;
        }
      }
    }"""
    d = design(write, kernel=kernel, inputs="arrays: {a: {distribution: constant, value: 8}}")
    assert set(while_profile(d, "L_w")) == {4}


RUNS = """    int i = 0;
    int n = 0;
    L_o: while (i < N) {
      int c = a[i];
      L_run: while (i < N && a[i] == c) {
        i++;
      }
      n++;
    }
    o[0] = n;"""
RUNS_ARRAYS = "    a: {shape: [N], dtype: int32, role: in}\n    o: {shape: [1], dtype: int32, role: out}"


@pytest.mark.parametrize("values, runs", [("{distribution: constant, value: 4}", [64]),
                                          ("{distribution: arange, start: 0, step: 1}", [1] * 64)])
def test_a_loop_inside_a_loop_the_data_ends_runs_on_that_loops_entries(write, values, runs):
    """Run lengths: the inner while's entries are what the outer while makes of the data, so the outer loop runs
    on its lanes with the inner one counted per entry (an outside user's run-length kernel was refused for want
    of a hint). Hand counts: a constant input is one run of 64; 0..63 is 64 runs of one. Every draw's runs add
    up to N."""
    d = design(write, kernel=RUNS, arrays=RUNS_ARRAYS, hints="{}", placement="{a: BUF, o: BUF}",
               inputs=f"arrays: {{a: {values}}}")
    prof = while_profile(d, "L_run")
    assert sorted(set(prof)) == sorted(set(runs))
    assert d.trips("L_o") == len(runs) and d.trips("L_run") == 64 / len(runs)


def test_a_for_ever_loop_left_by_break_runs_on_the_draws(write):
    """`for (;;) { if (n >= N || a[n] == 3) break; n++; }` is the `while (n < N && a[n] != 3)` of the same
    kernel: both run on the draws (the `for (;;)` form asked for a hint). a uniform over 0..3: the body runs
    until the pass that finds the first 3, a geometric count with p = 1/4: 4 passes expected (64 lanes drawn)."""
    kernel = ("    int n = 0;\n    L_w: for (;;) {\n      if (n >= N || a[n] == 3) {\n        break;\n      }\n"
              "      n++;\n    }\n    o[0] = n;")
    d = design(write, kernel=kernel, arrays=RUNS_ARRAYS, hints="{}", placement="{a: BUF, o: BUF}",
               inputs="arrays: {a: {distribution: randint, range: [0, 3]}}")
    prof = while_profile(d, "L_w")
    assert prof is not None and 3.0 < np.mean(prof) < 5.0


EARLIER = """    cnt[0] = a[1] & 3;
    L_i: for (int i = 0; i < N; i++) {
      int s = 0;
      L_j: for (int j = cnt[0]; j < N; j++) {
        s += a[i] + j;
      }
      o[i] = s;
    }"""
EARLIER_ARRAYS = ("    a: {shape: [N], dtype: int32, role: in}\n    cnt: {shape: [N], dtype: int32, role: out}\n"
                  "    o: {shape: [N], dtype: int32, role: out}")


def earlier_design(write, kernel=EARLIER, inputs="arrays: {a: {distribution: constant, value: 5}}"):
    return design(write, kernel=kernel, arrays=EARLIER_ARRAYS, params="{N: 8}", hints="{}",
                  placement="{a: BUF, cnt: BUF, o: BUF}", inputs=inputs)


def test_a_bound_an_earlier_statement_stores_in_an_out_array_follows_the_inputs_through_it(write):
    """``cnt[0] = a[1] & 3`` and then ``for (j = cnt[0]; j < N; j++)`` inside a later loop (an outside user's
    kernel, refused for want of a hint): the top-level statement runs on each draw first and the loop reads
    what it stored. a = 5 everywhere: cnt[0] = 1, 7 trips on every entry; randint [0, 3]: 8 - 1.5 = 6.5 on
    average (hand count). No hint is asked for."""
    from llmulator.checks import missing_hints
    d = earlier_design(write)
    assert set(while_profile(d, "L_j")) == {7}
    assert d.trips("L_j") == 7 and not missing_hints(d.workload, design=d)
    p = while_profile(earlier_design(write, inputs="arrays: {a: {distribution: randint, range: [0, 3]}}"), "L_j")
    assert set(p) <= {5, 6, 7, 8} and np.mean(p) == pytest.approx(6.5, abs=0.6)


def test_a_bound_an_earlier_loop_nest_stores_follows_the_inputs_through_it(write):
    """``L_0: for (i) cnt[i] = a[i] & 3;`` before the nest: L_0 runs on each draw (a loop among the earlier
    statements), so entry i of L_j runs N - (i & 3) trips for a = 0, 1, ..., N - 1: 8, 7, 6, 5, 8, 7, 6, 5."""
    kernel = "    L_0: for (int k = 0; k < N; k++) {\n      cnt[k] = a[k] & 3;\n    }\n" + \
        EARLIER.replace("    cnt[0] = a[1] & 3;\n", "").replace("j = cnt[0]", "j = cnt[i]")
    d = earlier_design(write, kernel=kernel, inputs="arrays: {a: {distribution: arange, start: 0, step: 1}}")
    p = while_profile(d, "L_j")
    assert p is not None and p[:8] == [8, 7, 6, 5, 8, 7, 6, 5] and np.mean(p) == 6.5


def test_a_bound_an_earlier_statement_stores_is_priced_as_hlsim_runs_it(write):
    """The same kernel end to end: a = 5 everywhere, so every entry of L_j runs 7 trips in hlsim's run too, and
    the analytical cycles and energy equal hlsim's with no hint (the estimator refused the design before)."""
    from test_analytical_agreement import both
    reference = ("cnt[0] = a[1] & 3\nfor i in range(N):\n"
                 "    o[i] = sum(int(a[i]) + j for j in range(int(cnt[0]), N))")
    d = earlier_design(write)
    d = attrs.evolve(d, workload=attrs.evolve(d.workload, reference=reference + "\n"))
    e, p = both(d)
    assert p.counters["iterations.L_j"] == 8 * 7
    assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=1e-9)
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-9)


@pytest.mark.parametrize("kernel, inputs, why", [
    (EARLIER.replace("j = cnt[0]", "j = cnt[1]"), None, "an element no earlier statement wrote"),
    (EARLIER.replace("    cnt[0] = a[1] & 3;\n", "").replace("      int s = 0;\n", "      int s = 0;\n"
                                                           "      cnt[0] = a[i] & 3;\n"), None,
     "the nest that holds the loop writes the array"),
    (EARLIER, "", "an undeclared input: the default fill is no statement about the data"),
])
def test_what_an_earlier_statement_does_not_say_is_left_to_the_hint(write, kernel, inputs, why):
    d = earlier_design(write, kernel=kernel) if inputs is None else \
        design(write, kernel=kernel, arrays=EARLIER_ARRAYS, params="{N: 8}", hints="{}",
               placement="{a: BUF, cnt: BUF, o: BUF}")
    assert while_profile(d, "L_j") is None, why


def test_a_math_call_on_values_outside_its_domain_is_nan_without_a_warning():
    """C's sqrt of a negative is NaN; the lanes that evaluate it printed NumPy's "invalid value encountered in
    sqrt" on the terminal of every synth run that drew such a kernel (seen in a 100,000-sample run)."""
    import warnings

    from llmulator.c_lanes import Lanes
    from pycparser import c_parser
    expr = c_parser.CParser().parse("void f(void) { y = sqrt(x); }").ext[0].body.block_items[0].rvalue
    lanes = Lanes({}, set(), {}, np.arange(2))
    lanes.env["x"] = np.array([-4.0, 9.0])
    lanes.types["x"] = ("float", 64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = lanes.ev(expr)
    assert np.isnan(out[0]) and out[1] == 3.0
