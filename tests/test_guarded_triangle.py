"""A triangular loop under an `if` on the loop its bound reads runs the trips of the steps the `if` lets through
(``LoopTree.trip_profile``, 2026-12-07).

`for t < 4 { if (t == 3) { for u < t + 1 { ... } } }` enters u once, with 4 trips. The static models took the mean
over every t, 2.5 trips, so the analytical model's cycles were 31 % under hlsim's (282 where 201 ... 460 where
318.5) and, under `if (t == 0)`, 163 % over (318.5 where 121); hlsim counts the trips the run takes, the hand
count below. An outside probe (56) found it.
"""

from __future__ import annotations

import pytest
from conftest import kernel_design, profiled_and_estimated
from test_physical_floors import ONE

KERNEL = ("    L_t: for (int t = 0; t < 4; t++) {{\n      {guard} {{\n"
          "        L_u: for (int u = 0; u < t + 1; u++) {{\n"
          "          L_a: for (int i = 0; i < 4; i++) {{ L_b: for (int j = 0; j < 2; j++) {{ o[i][j] = x[i][j] + u; }}"
          " }}\n        }}\n      }}\n    }}")
ARRAYS = "    x: {shape: [4, 2], dtype: int32, role: in}\n    o: {shape: [4, 2], dtype: int32, role: out}"


@pytest.mark.parametrize(("guard", "trips", "runs", "last"), [("if (t == 3)", 4, 4, 3), ("if (t == 0)", 1, 1, 0),
                                                               ("if (t < 2) {} else", 3.5, 7, 3)])
@pytest.mark.parametrize("loops", ["{L_a: {tile: 2}}", "{L_u: {tile: 1}, L_a: {tile: 2}}"])
def test_the_analytical_model_prices_the_trips_the_guard_lets_through(write, guard, trips, runs, last, loops):
    """u's trips per entry, by hand: 4 under `t == 3`, 1 under `t == 0`, (3 + 4) / 2 on the else side of
    `t < 2` (7 in all); hlsim's run counts them, and the analytical model's cycles and DRAM words equal hlsim's."""
    d = kernel_design(write, ONE, KERNEL.format(guard=guard), ARRAYS, f"    o[:] = x + {last}", loops,
                      "{x: SRAM, o: SRAM}", params="{}")
    assert d.trips("L_u") == trips
    p, e = profiled_and_estimated(d)
    # u, i, j are one band: i's tile loop (2 tiles) runs outside u's point loop, which repeats its runs per tile
    assert p.counters["iterations.L_u"] == 2 * runs
    assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=1e-9)
    assert e.breakdown["reads.DRAM"] == pytest.approx(p.counters["reads.DRAM"], rel=1e-9)


# -- a second probe (58) of these guards: C's division, `continue`, and a condition that also reads data ----------
DIV = ONE.replace("      select:", "      div: {count: 1, bits: 32, latency_cycles: 4}\n      select:")
SUM = ("    L_t: for (int t = 0; t < 4; t++) {{\n{head}      L_u: for (int u = 0; u < t + 1; u++) {{\n"
       "        L_a: for (int i = 0; i < 4; i++) {{ o[u][i] += x[t][i]; }}\n      }}\n{tail}    }}")
SUM_ARRAYS = "    x: {shape: [4, 4], dtype: int32, role: in}\n    o: {shape: [8, 4], dtype: int32, role: out}"


@pytest.mark.parametrize(("head", "tail", "steps", "arrays", "inputs"), [
    # C's % keeps the dividend's sign: -1 at t = 0 and 2 (Python's floor never gives -1: the static model ran none)
    ("      if ((t - 3) % 2 == -1) {\n", "      }\n", (0, 2), "", ""),
    ("      if ((t - 2) / 2 == 0) {\n", "      }\n", (1, 2, 3), "", ""),  # C's / truncates: -1 / 2 is 0
    ("      if (t < 2) continue;\n", "", (2, 3), "", ""),  # the rest of the body runs where t >= 2
    # `c[t] > 0` reads data; `t >= 2` still selects t = 2, 3 (c = 0, 1, 2, 3: both run)
    ("      if (t >= 2 && c[t] > 0) {\n", "      }\n", (2, 3), "\n    c: {shape: [4], dtype: int32, role: in}",
     "    arrays:\n      c: {distribution: arange}"),
])
def test_guards_in_c_semantics_select_the_triangles_entries(write, head, tail, steps, arrays, inputs):
    """u's trips per entry by hand: the mean of t + 1 over the steps the guard lets through; hlsim runs them, and
    the analytical model's cycles and DRAM words equal hlsim's (before, 29-88 % apart: an outside probe)."""
    ref = f"    for t in {steps}:\n        for u in range(t + 1):\n            o[u] += x[t]"
    d = kernel_design(write, DIV, SUM.format(head=head, tail=tail), SUM_ARRAYS + arrays, ref,
                      "{L_u: {tile: 2}, L_a: {tile: 2}}", "{x: SRAM, o: SRAM" + (", c: SRAM}" if arrays else "}"),
                      params="{}", inputs=inputs)
    assert d.trips("L_u") == sum(t + 1 for t in steps) / len(steps)
    p, e = profiled_and_estimated(d)
    assert p.functional_check == "pass"
    assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=1e-9)
    assert e.breakdown["reads.DRAM"] == pytest.approx(p.counters["reads.DRAM"], rel=1e-9)
