"""hlsim's bounds checks: an out-of-bounds subscript (read or write, any dimension, negative too) ends
the profile with a SpecError (exit status 2) naming the workload file and kernel line, the array, the
index as written, its value and extent, and the loop iteration; in-bounds kernels profile as before."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, kernel_design
from llmulator import instrument
from llmulator.design import load_design
from llmulator.errors import SpecError
from llmulator_plugins.hlsim.profiler import HlsimProfiler
from pycparser import c_generator

ARCH = """
architecture:
  version: 1
  name: oob
  clock_mhz: 100
  compute:
    operators:
      add: {count: 8, bits: 32, latency_cycles: 1}
      mul: {count: 8, bits: 32, latency_cycles: 2}
      cmp: {count: 8, bits: 32, latency_cycles: 1}
  memory:
    - {name: DRAM, kind: dram, width_bits: 64, bandwidth_bytes_per_cycle: 1000, latency_cycles: 2}
    - {name: BUF, kind: sram, capacity_kib: 1024, width_bits: 32, banks: 4, ports: 2, latency_cycles: 1,
       bandwidth_bytes_per_cycle: 1000}
"""

VEC = "    x: {shape: [N], dtype: int32, role: in}\n    y: {shape: [N], dtype: int32, role: out}"


def vec_design(write, body: str, loops: str = "{L_i: {pipeline_ii: 1}}", reference: str = "y[:] = 2 * x"):
    kernel = "    L_i: for (int i = 0; i < N; i++) {\n" + body + "\n    }"
    return kernel_design(write, ARCH, kernel, VEC, "    " + reference, loops, "{x: BUF, y: BUF}")


def line_of(path: Path, text: str) -> int:
    return next(n for n, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def oob(d) -> tuple[str, int | None, str]:
    with pytest.raises(SpecError) as e:
        HlsimProfiler().profile(d)
    (diag,) = e.value.diagnostics
    return diag.file, diag.line, diag.message


def test_a_read_past_the_end(write, tmp_path):
    d = vec_design(write, "      y[i] = 2 * x[i+1000];")
    file, line, msg = oob(d)
    assert file == str(tmp_path / "w.yaml")
    assert line == line_of(tmp_path / "w.yaml", "x[i+1000]")
    assert msg.startswith("out-of-bounds read of x[i + 1000] at iteration i=0: index i + 1000 = 1000 is "
                          "outside x (extent 64, valid 0..63; x is declared [N] = [64])"), msg


def test_a_negative_index_in_a_tiled_nest(write, tmp_path):
    """The iteration names the kernel's loop variables (i, j), not the tile loop's i_t."""
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      L_j: for (int j = 0; j < 4; j++) {\n"
              "        y[i] += x[i - j];\n      }\n    }")
    d = kernel_design(write, ARCH, kernel, VEC, "    y[:] = 0", "{L_i: {tile: 8}, L_j: {pipeline_ii: 1}}",
                      "{x: BUF, y: BUF}")
    file, line, msg = oob(d)
    assert line == line_of(tmp_path / "w.yaml", "x[i - j]")
    assert "out-of-bounds read of x[i - j] at iteration i=0, j=1: index i - j = -1 is outside x " in msg, msg
    assert "i_t" not in msg


def test_a_write_past_the_second_dimension(write, tmp_path):
    """C[i][M] is inside the allocation (it is C[i + 1][0]) but outside the row: caught all the same."""
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      L_j: for (int j = 0; j < M; j++) {\n"
              "        C[i][j + 1] = A[i][j];\n      }\n    }")
    arrays = ("    A: {shape: [N, M], dtype: int32, role: in}\n"
              "    C: {shape: [N, M], dtype: int32, role: out}")
    d = kernel_design(write, ARCH, kernel, arrays, "    C[:, 1:] = A[:, :-1]", "{L_j: {pipeline_ii: 1}}",
                      "{A: BUF, C: BUF}", params="{N: 16, M: 8}")
    file, line, msg = oob(d)
    assert line == line_of(tmp_path / "w.yaml", "C[i][j + 1]")
    assert msg.startswith("out-of-bounds write to C[i][j + 1] at iteration i=0, j=7: index j + 1 = 8 is outside "
                          "C's dimension 2 (extent 8, valid 0..7; C is declared [N, M] = [16, 8])"), msg


def test_data_dependent_indexes_and_loop_conditions_are_checked(write, tmp_path):
    """An index read from the data (h[idx[k]] += 1) and a while condition (the loop's line)."""
    w = write("w.yaml", """
workload:
  version: 1
  name: w
  parameters: {N: 64, M: 8}
  arrays:
    idx: {shape: [N], dtype: int32, role: in}
    h: {shape: [M], dtype: int32, role: inout}
    y: {shape: [1], dtype: int32, role: out}
  kernel: |
    L_k: for (int k = 0; k < N; k++) {
      h[idx[k]] += 1;
    }
    int n = 0;
    L_w: while (idx[n] >= 0) {
      n++;
    }
    y[0] = n;
  inputs:
    arrays:
      idx: {distribution: randint, range: [0, 9]}
  reference: |
    y[0] = 0
""")
    m = write("m.yaml", "mapping:\n  version: 1\n  name: m\n  loops: {}\n  placement: {idx: BUF, h: BUF, y: BUF}\n")
    d = load_design(write("arch.yaml", ARCH), w, m)
    _, line, msg = oob(d)
    assert line == line_of(w, "h[idx[k]]")
    assert msg.startswith("out-of-bounds read-modify-write of h[idx[k]] at iteration k="), msg
    assert "index idx[k] = 9 is outside h (extent 8" in msg
    # once h is large enough, the while loop runs off the end of idx (every entry is >= 0)
    w.write_text(w.read_text().replace("h: {shape: [M]", "h: {shape: [10]"))
    d = load_design(write("arch.yaml", ARCH), w, m)
    _, line, msg = oob(d)
    assert line == line_of(w, "L_w: while")
    assert msg.startswith("out-of-bounds read of idx[n]: index n = 64 is outside idx (extent 64"), msg


def test_arrays_declared_in_the_kernel_are_checked_against_their_dimensions(write, tmp_path):
    kernel = ("    int buf[N / 2][4];\n    L_i: for (int i = 0; i < N; i++) {\n      buf[i / 2][i % 4] = x[i];\n"
              "      y[i] = buf[i][0];\n    }")
    d = kernel_design(write, ARCH, kernel, VEC, "    pass", "{}", "{x: BUF, y: BUF}", params="{N: 16}")
    _, line, msg = oob(d)
    assert line == line_of(tmp_path / "w.yaml", "y[i] = buf[i][0]")
    assert msg.startswith("out-of-bounds read of buf[i][0] at iteration i=8: index i = 8 is outside buf's "
                          "dimension 1 (extent 8, valid 0..7; buf is declared [N / 2, 4] = [8, 4] in the kernel)"), msg


def test_in_bounds_kernels_profile_exactly_as_without_checks(write, monkeypatch):
    d = vec_design(write, "      y[i] = 2 * x[N - 1 - i];", "{L_i: {tile: 8, pipeline_ii: 1}}", "y[:] = 2 * x[::-1]")
    checked = instrument.instrument(d)
    assert "__CHK(" in checked.source and len(checked.checks) == 2
    p = HlsimProfiler().profile(d)
    assert p.functional_check == "pass"
    monkeypatch.setattr(instrument._Checked, "visit_ArrayRef", c_generator.CGenerator.visit_ArrayRef)
    monkeypatch.setattr(instrument, "_MEMO", {})
    plain = instrument.instrument(d)
    assert "__CHK(" not in plain.source.split("static void kernel", 1)[1]
    assert plain.key != checked.key  # a new program, a new cache entry
    q = HlsimProfiler().profile(d)
    # (without the subscripts' instrumentation the run counts no distinct elements either: element_marks)
    same = {"compiled": 0, "distinct_read": 0, "distinct_written": 0}
    assert (q.metrics, q.counters | same, q.breakdown) == (p.metrics, p.counters | same, p.breakdown)


def test_fused_loops_report_their_members_not_the_flattened_index(write):
    arch = write("a.yaml", """
architecture:
  version: 1
  name: sys4
  clock_mhz: 1000
  compute:
    pe_array: {rows: 4, cols: 4, interconnect: systolic}
    operators:
      mac: {count: 16, bits: 16, latency_cycles: 1}
  memory:
    - {name: DRAM, kind: dram, width_bits: 512, bandwidth_bytes_per_cycle: 4096, latency_cycles: 0}
    - {name: SRAM, kind: sram, capacity_kib: 512, width_bits: 512, banks: 16, ports: 2, bandwidth_bytes_per_cycle: 4096}
""")
    m = write("m.yaml", """
mapping:
  version: 1
  name: fused
  workload: conv2d
  loops: {L_p: {fuse: [L_q], tile: 4, spatial: rows}, L_k: {tile: 4, spatial: cols}}
  order: [L_k, L_p, L_c, L_r, L_s]
  placement: {I: SRAM, W: SRAM, O: SRAM}
""")
    d = load_design(arch, ROOT / "workloads/conv2d.yaml", m)
    inst = instrument.instrument(d)
    o = [c for c in inst.checks if c.array == "O"]
    assert o and all(set(c.loop_vars) >= {"k", "p", "q"} for c in o), [c.loop_vars for c in o]
    assert not any("p_q" in v or v.endswith("_t") for c in inst.checks for v in c.loop_vars)
    assert HlsimProfiler().profile(d).functional_check == "pass"


def test_the_cli_exits_2_with_the_message_and_no_traceback(write, tmp_path):
    vec_design(write, "      y[i] = 2 * x[i+1000];")
    r = subprocess.run([sys.executable, "-m", "llmulator.cli", "profile", str(tmp_path / "arch.yaml"),
                        str(tmp_path / "w.yaml"), str(tmp_path / "m.yaml")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2, r.stderr
    line = line_of(tmp_path / "w.yaml", "x[i+1000]")
    assert r.stderr.startswith(f"{tmp_path / 'w.yaml'}:{line}: error: workload.kernel: out-of-bounds read of "
                               "x[i + 1000] at iteration i=0: index i + 1000 = 1000 is outside x (extent 64"), r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
