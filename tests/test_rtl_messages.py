"""What the rtl profiler tells an outside user about designs it cannot generate or run, found by profiling
designs written outside the project (a batched matmul with its batch loop in the stream, a buffer word
narrower than an element, a workload without an einsum, a simulation past its time limit)."""

from __future__ import annotations

import shutil

import pytest
from llmulator.buflayout import layout
from llmulator.design import load_design
from llmulator.errors import SpecError, UserError
from llmulator_plugins.rtl.plan import make_plan
from test_rtl_profiler import ARCH, GEMM, design

BMM = """
workload:
  version: 1
  name: bmm
  parameters: {B: 2, M: 4, N: 4, K: 4}
  arrays:
    L: {shape: [B, M, K], dtype: int8, role: in}
    R: {shape: [B, K, N], dtype: int8, role: in}
    O: {shape: [B, M, N], dtype: int32, role: out}
  kernel: |
    L_b: for (int b = 0; b < B; b++) {
      L_m: for (int m = 0; m < M; m++) {
        L_n: for (int n = 0; n < N; n++) {
          L_k: for (int k = 0; k < K; k++) {
            O[b][m][n] += L[b][m][k] * R[b][k][n];
          }
        }
      }
    }
"""


def _bmm(write, batch: str):
    a = write("arch.yaml", ARCH.format(n=2, nn=4))
    w = write("bmm.yaml", BMM)
    m = write("map.yaml", f"""
        mapping:
          version: 1
          name: bmm-ws
          workload: bmm
          loops:
            L_k: {{tile: 2, spatial: rows}}
            L_n: {{tile: 2, spatial: cols}}
            {batch}
          order: [L_b, L_n, L_k, L_m]
          placement: {{L: GLB, R: GLB, O: GLB}}
        """)
    return load_design(a, w, m)


def test_an_operand_kept_from_being_stationary_by_a_stream_loop_gets_the_mapping_fix(write):
    with pytest.raises(UserError) as e:
        make_plan(_bmm(write, "L_b: {tile: 2}"))
    msg = str(e.value)
    assert "t: the temporal loops of a fold with more than one trip, L_b, L_m" in msg
    assert "R would be stationary but for L_b: give it `tile: 1`" in msg
    plan = make_plan(_bmm(write, "L_b: {tile: 1}"))      # the fix the message names is accepted
    assert plan.shape == "psum" and plan.operands["S"].array == "R"


def test_a_psum_plan_is_not_named_ws_or_is_without_layer_roles(write):
    # the batched matmul has no einsum: which input is the weight is unknown
    assert make_plan(_bmm(write, "L_b: {tile: 1}")).dataflow == "psum"
    assert make_plan(design(write, 2, "is", 4, 2, 2)).dataflow == "is"   # GEMM with its einsum: named


def test_a_buffer_word_narrower_than_an_element_is_a_spec_error_at_its_width(write):
    a = write("arch.yaml", ARCH.format(n=2, nn=4).replace("width_bits: 32, banks: 8", "width_bits: 16, banks: 8"))
    w = write("gemm.yaml", GEMM.format(m=4, nn=2, k=2))
    m = write("map.yaml", """
        mapping:
          version: 1
          name: os
          workload: gemm
          loops:
            L_m: {tile: 2, spatial: rows}
            L_n: {tile: 2, spatial: cols}
          order: [L_m, L_n, L_k]
          placement: {A: GLB, B: GLB, C: GLB}
        """)
    d = load_design(a, w, m)
    with pytest.raises(SpecError) as e:
        layout(d, make_plan(d))
    diag = e.value.diagnostics[0]
    assert diag.file.endswith("arch.yaml") and diag.path == "architecture.memory[1].width_bits"
    assert diag.line == 11 and diag.expected == "a multiple of 32"
    assert isinstance(e.value, UserError)    # hlsim's bank model still treats the design as outside its plan


def test_a_yaml_boolean_where_a_name_was_meant_gets_a_hint(write):
    a = write("arch.yaml", ARCH.format(n=2, nn=4))
    w = write("gemm.yaml", GEMM.format(m=4, nn=2, k=2).replace("shape: [M, K]", "shape: [M, NO]"))
    with pytest.raises(SpecError) as e:
        load_design(a, w, write("map.yaml", "mapping: {version: 1, name: x, workload: gemm}"))
    hints = [d.hint for d in e.value.diagnostics if d.path == "workload.arrays.A.shape[1]"]
    assert hints and "quote the value" in hints[0]


@pytest.mark.skipif(not shutil.which("iverilog"), reason="needs Icarus Verilog (scripts/install_eda.sh)")
def test_a_simulation_past_its_time_limit_says_how_to_raise_it_and_leaves_no_folder(write, tmp_path, monkeypatch):
    from llmulator_plugins.rtl import profiler as rp
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LLMULATOR_RTL_SIM", "icarus")
    d = design(write, 2, "ws", 16, 16, 16)
    with pytest.raises(UserError, match=r"timed out after 0\.01 s.*--time-limit SECONDS"):
        rp.RtlProfiler(time_limit_s=0.01).profile(d)
    assert not list(rp.cache_root().glob("sim-*"))
