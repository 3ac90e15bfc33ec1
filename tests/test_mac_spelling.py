"""An accumulation costs the same however its author spells it: ``x = x + a*b`` is the ``x += a*b`` mac.

HLS tools build one expression from both spellings; pricing the long form as a mul and an add made the
library GEMM written ``C = C + A*B`` 6.6x slower on the systolic array than ``C += A*B`` (17,140 against
2,604 hlsim cycles), because the PE array only takes a mac.
"""
from __future__ import annotations

import pytest
from conftest import kernel_design
from llmulator import plugins
from llmulator.design import load_design
from llmulator.library import resolve

ARCH = resolve("architecture", "hls-fpga").read_text()
ARRAYS = ("    x: {shape: [N], dtype: int8, role: in}\n    w: {shape: [N], dtype: int8, role: in}\n"
          "    y: {shape: [N], dtype: int8, role: inout}")


def _stmt_ops(write, line: str) -> dict[str, int]:
    kernel = f"    L_a: for (int i = 0; i < N; i++) {{\n      {line}\n    }}"
    d = kernel_design(write, ARCH, kernel, ARRAYS, "    pass", "{}", "{x: BRAM, w: BRAM, y: BRAM}", params="{N: 16}")
    st = next(n for n in d.tree.walk() if getattr(n, "kind", "") == "stmt")
    return {k: v for k, v in st.ops.items() if v}


@pytest.mark.parametrize("line", ["y[i] += x[i] * w[i];", "y[i] = y[i] + x[i] * w[i];",
                                  "y[i] = x[i] * w[i] + y[i];", "y[i] = y[i] - x[i] * w[i];"])
def test_the_long_spelling_of_an_accumulation_is_one_mac(write, line):
    assert _stmt_ops(write, line) == {"mac": 1}


@pytest.mark.parametrize("line, ops", [
    ("y[i] = x[i] * w[i] - y[i];", {"mul": 1, "add": 1}),   # not an accumulation of y
    ("y[i] = y[i + 1] + x[i] * w[i];", {"mul": 1, "add": 1}),  # another element
    ("y[i] = y[i] + x[i];", {"add": 1}),
])
def test_what_is_not_an_accumulation_keeps_its_operators(write, line, ops):
    assert _stmt_ops(write, line) == ops


def test_gemm_written_long_runs_on_the_pe_array_like_the_compound_form(write):
    text = resolve("workload", "gemm").read_text()
    assert "C[m][n] += A[m][k] * B[k][n];" in text
    long = write("gemm-long.yaml", text.replace("C[m][n] += A[m][k] * B[k][n];",
                                                "C[m][n] = C[m][n] + A[m][k] * B[k][n];"))
    arch, mapping = resolve("architecture", "systolic-16x16"), resolve("mapping", "gemm-ws-16x16")
    hlsim = plugins.get("profilers", "hlsim")
    short = hlsim.profile(load_design(arch, resolve("workload", "gemm"), mapping))
    longp = hlsim.profile(load_design(arch, long, mapping))
    assert longp.functional_check.startswith("pass"), longp.functional_check
    assert longp.metrics["cycles"] == short.metrics["cycles"]
    assert longp.metrics["energy_pj"] == pytest.approx(short.metrics["energy_pj"], rel=1e-9)
