"""A subscript that multiplies a loop variable by a parameter (`A[m * K + k]`), and a diagonal `L[i][i]`
(hlsim 0.74 / analytical 0.87, 2026-12-08).

A matrix flattened into one dimension, as HLS code often writes it, had no affine form: its accesses were priced
as indirect, and a GEMM with k unrolled by 4 ran 5,120 cycles where the same kernel over `A[m][k]` runs 2,480, in
both models. The reference here is the same kernel written over 2-D arrays (and with the literal stride), which
the models price independently of this change. Flattening every library kernel the same way (an outside check,
87 designs) then showed the other side: a diagonal `L[i][i]` over N points moved the N x N box its two
dimensions span, where `L[i * N + i]` moved the N elements it names; the hand count below is the reference.
"""

from __future__ import annotations

import pytest
from conftest import kernel_design
from llmulator import plugins
from llmulator.design import load_design
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


def test_a_diagonal_moves_the_elements_it_names_not_its_box():
    d = load_design(resolve("architecture", "hls-fpga"), resolve("workload", "trisolv"),
                    resolve("mapping", "trisolv-plain"))
    p = plugins.get("profilers", "hlsim").profile(d)
    # by hand (N = 40, each nest moves what it touches): L_d reads and writes back the 40 elements of L[i][i];
    # L_i reads the 780 of L[i][j < i], the diagonal's 40 and b's 40, and writes x's 40 (before: L_d 1,600 each way)
    assert (p.counters["reads.DRAM"], p.counters["writes.DRAM"]) == (900, 80)
    est = plugins.get("estimators", "analytical").estimate([d])[0]
    assert est.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=0.02)
