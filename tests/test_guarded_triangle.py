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
