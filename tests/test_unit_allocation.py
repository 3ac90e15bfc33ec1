"""Units the area (and the leakage) allocates against the schedules that use them (an outside probe of hlsim
0.38, which charged one adder for a plain run issuing two adds in one cycle, no compare or logic unit for a plain
`while` test's operations, and no multiplexer for a pipelined ternary). Latencies: add 3, mul 5, cmp 2, logic 1,
select 0, BRAM load 2 (two ports a bank)."""

from __future__ import annotations

import pytest
from conftest import PROBE_ARCH as ARCH
from conftest import kernel_design, profiled_and_estimated

ARRAYS = ("    A: {shape: [N], dtype: int32, role: in}\n    B: {shape: [N], dtype: int32, role: in}\n"
          "    C: {shape: [N], dtype: int32, role: out}")
PLACE = "{A: BRAM, B: BRAM, C: BRAM}"


def _units(write, kernel: str, reference: str, loops: str = "{}", inputs: str = "", hints: str = "{}"):
    p, e = profiled_and_estimated(kernel_design(write, ARCH, kernel, ARRAYS, reference, loops, PLACE,
                                                params="{N: 16}", inputs=inputs, hints=hints))
    units = {k[6:]: v for k, v in p.counters.items() if k.startswith("units.")}
    assert e.metrics["area_um2"] == pytest.approx(p.metrics["area_um2"])
    return units, p


def test_a_plain_run_that_adds_twice_in_a_cycle_has_two_adders(write):
    """`C[i] = (A[i] + B[i]) * (A[i] + 5)`, not pipelined: A[i] and B[i] arrive at 2, both adds issue at 2 (the
    schedule's 3 + 5 + store 1 = depth 11 assumes so), so two adders; with one, the run is a cycle longer."""
    units, p = _units(write, "    L_i: for (int i = 0; i < N; i++) {\n      C[i] = (A[i] + B[i]) * (A[i] + 5);\n    }",
                      "    C[:] = (A + B) * (A + 5)")
    assert units["add"] == 2 and units["mul"] == 1


def test_a_plain_while_test_has_its_compare_and_logic_units(write):
    """`while (k < N && A[k] > 0) k++;` not pipelined: every trip and the exit compare twice and AND once; the
    datapath that does it has a compare unit (one: `k < N` issues at 0, `A[k] > 0` when A[k] arrives at 2) and a
    logic unit (0.38: none)."""
    kernel = ("    int k = 0;\n    L_w: while (k < N && A[k] > 0) {\n      k++;\n    }\n"
              "    L_o: for (int i = 0; i < N; i++) {\n      C[i] = k;\n    }")
    units, p = _units(write, kernel, "    C[:] = N", inputs="    arrays:\n      A: {distribution: constant, value: 4}",
                      hints="{L_w: {expected_trips: 16}}")
    assert p.counters["iterations.L_w"] == 16
    assert units["cmp"] == 1 and units["logic"] == 1


@pytest.mark.parametrize("loops, muxes", [("{L_i: {pipeline_ii: 1}}", 1),
                                          ("{L_i: {pipeline_ii: 1, unroll: 4}}", 2),
                                          ("{}", 1)])
def test_a_ternary_has_its_multiplexers(write, loops, muxes):
    """`C[i] = A[i] > B[i] ? A[i] : B[i]`: one select an iteration; pipelined at II 1 one mux; four copies read
    A and B four times each over two ports, II 2: two muxes (0.38 allocated none in a pipelined loop, one in a
    plain one)."""
    units, _ = _units(write, "    L_i: for (int i = 0; i < N; i++) {\n      C[i] = A[i] > B[i] ? A[i] : B[i];\n    }",
                      "    C[:] = np.maximum(A, B)", loops)
    assert units["select"] == muxes


@pytest.mark.parametrize("second, multipliers", [("D[j] = B[j] * 5;", 2), ("D[j] = C[j] * 5;", 1)])
def test_dataflow_tasks_that_overlap_keep_their_own_units(write, second, multipliers):
    """`dataflow: true` over `L_1: C[i] = A[i] * 3` and a second nest writing D, both at II 1: one that reads B runs
    beside L_1, a multiply each every cycle, two multipliers; one that reads C waits for L_1 and shares its
    multiplier (0.39 charged one in both cases: an outside probe)."""
    kernel = ("    L_1: for (int i = 0; i < N; i++) {\n      C[i] = A[i] * 3;\n    }\n"
              f"    L_2: for (int j = 0; j < N; j++) {{\n      {second}\n    }}")
    ref = "    C[:] = A * 3\n    D[:] = " + ("B * 5" if "B" in second else "A * 15")
    d = kernel_design(write, ARCH, kernel, ARRAYS + "\n    D: {shape: [N], dtype: int32, role: out}", ref,
                      "{L_1: {pipeline_ii: 1}, L_2: {pipeline_ii: 1}}", "{A: BRAM, B: BRAM, C: BRAM, D: BRAM}",
                      params="{N: 16}", extra="  dataflow: true")
    p, e = profiled_and_estimated(d)
    assert p.counters["units.mul"] == multipliers
    assert e.metrics["area_um2"] == pytest.approx(p.metrics["area_um2"])
