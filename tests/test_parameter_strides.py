"""A subscript that multiplies a loop variable by a parameter (`A[m * K + k]`) and a triangle under a loop a
`break` ends (hlsim 0.74 / analytical 0.87, 2026-12-08).

Both came from outside code. A matrix flattened into one dimension, as HLS code often writes it, had no affine
form: its accesses were priced as indirect, and a GEMM with k unrolled by 4 ran 5,120 cycles where the same
kernel over `A[m][k]` runs 2,480, in both models. The reference here is the same kernel written over 2-D arrays
(and with the literal stride), which the models price independently of this change. A bubble sort whose pass
loop stops once nothing swaps made hlsim break its own physical bound (28.5 words read of an array whose 48
elements the run read): the triangle `j < N - 1 - p` had no trip profile under the early-exit loop.
"""

from __future__ import annotations

import pytest
from conftest import kernel_design
from llmulator import plugins
from llmulator.library import resolve

ARCH = resolve("architecture", "hls-fpga").read_text()
GEMM = ("    L_m: for (int m = 0; m < M; m++) {{\n      L_n: for (int n = 0; n < N; n++) {{\n"
        "        L_k: for (int k = 0; k < K; k++) {{\n          {body}\n        }}\n      }}\n    }}")
FORMS = {  # the same GEMM: over 2-D arrays, over flattened ones with a parameter stride, and a literal one
    "2-D": ("C[m][n] += A[m][k] * B[k][n];", "[M, K]", "[K, N]", "[M, N]"),
    "parameter stride": ("C[m * N + n] += A[m * K + k] * B[k * N + n];", "[64]", "[64]", "[64]"),
    "literal stride": ("C[m * 8 + n] += A[m * 8 + k] * B[k * 8 + n];", "[64]", "[64]", "[64]"),
}
LOOPS = ("{}", "{L_k: {unroll: 4}, L_n: {pipeline_ii: 1}}")


def _gemm(write, form: str, loops: str):
    body, a, b, c = FORMS[form]
    arrays = (f"    A: {{shape: {a}, dtype: int32, role: in}}\n    B: {{shape: {b}, dtype: int32, role: in}}\n"
              f"    C: {{shape: {c}, dtype: int32, role: out}}")
    ref = ("    C[...] = (A.reshape(8, 8) @ B.reshape(8, 8)).reshape(C.shape)")
    return kernel_design(write, ARCH, GEMM.format(body=body), arrays, ref, loops, "{A: BRAM, B: BRAM, C: BRAM}",
                         params="{M: 8, N: 8, K: 8}")


def test_a_parameter_stride_is_the_coefficient_at_the_designs_sizes(write):
    st = _gemm(write, "parameter stride", "{}").tree.loops["L_k"].statements()[0]
    assert [dict(a.affine[0].coefs) for a in st.accesses if a.array == "A"] == [{"m": 8, "k": 1}]


@pytest.mark.parametrize("loops", LOOPS)
def test_a_flattened_matrix_costs_what_the_2d_one_costs(write, loops):
    est = plugins.get("estimators", "analytical")
    want = est.estimate([_gemm(write, "2-D", loops)])[0].metrics
    for form in ("parameter stride", "literal stride"):
        got = est.estimate([_gemm(write, form, loops)])[0].metrics
        assert got["cycles"] == pytest.approx(want["cycles"]) and got["energy_pj"] == pytest.approx(want["energy_pj"])


def test_hlsim_runs_a_flattened_matrix_as_the_2d_one(write):
    hlsim = plugins.get("profilers", "hlsim")
    want = hlsim.profile(_gemm(write, "2-D", LOOPS[1]))
    got = hlsim.profile(_gemm(write, "parameter stride", LOOPS[1]))
    assert got.functional_check == want.functional_check == "pass"
    assert got.metrics["cycles"] == want.metrics["cycles"] == 515  # 907 with the access priced indirect


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
