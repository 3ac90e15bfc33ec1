"""The scalesim profiler plugin: input generation and dataflow detection (always), real SCALE-Sim runs (slow).

The slow tests need SCALE-Sim v3 in .venv-scalesim (scripts/install_scalesim.sh) or at
$LLMULATOR_SCALESIM_PYTHON and are skipped, with the reason, when it is missing.
Expected cycles: SCALE-Sim 3.0.0 measured in /work/shared/notes/peers.md section 4.2, and the
per-fold formula it implements (folds x (2R + C + T - 2) - 1 for ws/is, R + C + T - 2 for os).
"""

from __future__ import annotations

import configparser
import json
import os
import stat
import sys
from pathlib import Path

import pytest
from llmulator import plugins
from llmulator.design import load_design
from llmulator.errors import UserError
from llmulator_plugins.scalesim.adapter import ScaleSimProfiler
from llmulator_plugins.scalesim.config import DATAFLOWS, detect_dataflow, parse_reports, run_config, sram_split
from llmulator_plugins.scalesim.layer import Layer, describe_layer

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "scalesim"
GEMM = ROOT / "workloads" / "gemm.yaml"
CONV = ROOT / "workloads" / "conv2d.yaml"
CONV_MAP = ROOT / "mappings" / "conv2d-rs-eyeriss.yaml"
SYS16 = ROOT / "arch_specs" / "systolic-16x16.yaml"
EYERISS = ROOT / "arch_specs" / "eyeriss-like.yaml"


def gemm_design(n: int, df: str):
    return load_design(DATA / f"systolic-{n}.yaml", GEMM, DATA / f"{df}-{n}.yaml")


def mapping(write, name: str, loops: str, workload: str = "gemm", placement: str = "{}") -> Path:
    return write(f"{name}.yaml", f"""
        mapping:
          version: 1
          name: {name}
          workload: {workload}
          loops: {loops}
          placement: {placement}
        """)


RECT_ARCH = """
    architecture:
      version: 1
      name: rect-8x16
      clock_mhz: 500
      compute:
        pe_array: {rows: 8, cols: 16, interconnect: systolic}
        operators:
          mac: {count: 128, bits: 8, latency_cycles: 1}
      memory:
        - {name: DRAM, kind: dram, width_bits: 512, bandwidth_bytes_per_cycle: 64}
        - {name: BUF, kind: sram, capacity_kib: 10, width_bits: 128, instances: 3}
        - {name: RF, kind: regfile, capacity_kib: 400, width_bits: 32}
    """


# -- workload -> SCALE-Sim layer --------------------------------------------------------------------
def test_gemm_layer_and_topology_csv():
    layer = describe_layer(gemm_design(16, "ws"))
    assert layer == Layer("gemm", {"M": 256, "N": 256, "K": 256}, {"L_m": "M", "L_n": "N", "L_k": "K"}, "gemm")
    # SCALE-Sim's -i gemm format: header, then name, M, N, K with the required trailing comma
    assert layer.topology_csv() == "Layer, M, N, K,\ngemm, 256, 256, 256,\n"
    assert layer.macs == 256 ** 3


def test_gemm_detected_with_swapped_operands_and_transposed_storage(write):
    wl = write("gemm_t.yaml", """
        workload:
          version: 1
          name: gemm-bt
          parameters: {M: 24, N: 40, K: 56}
          arrays:
            A: {shape: [M, K], dtype: int8, role: in}
            B: {shape: [N, K], dtype: int8, role: in}
            C: {shape: [M, N], dtype: int32, role: out}
          einsum: "C[i,j] += B[j,t] * A[i,t]"
          kernel: |
            L_i: for (int i = 0; i < M; i++) {
              L_j: for (int j = 0; j < N; j++) {
                L_t: for (int t = 0; t < K; t++) {
                  C[i][j] += B[j][t] * A[i][t];
                }
              }
            }
        """)
    mp = mapping(write, "bt-ws", "{L_t: {tile: 16, spatial: rows}, L_j: {tile: 16, spatial: cols}}", "gemm-bt")
    d = load_design(SYS16, wl, mp)
    layer = describe_layer(d)
    assert layer.dims == {"M": 24, "N": 40, "K": 56}
    assert layer.roles == {"L_i": "M", "L_j": "N", "L_t": "K"}
    assert layer.topology_csv().splitlines()[1] == "gemm_bt, 24, 40, 56,"  # name sanitised for the CSV
    assert detect_dataflow(d, layer) == ("ws", False)


def test_conv2d_layer_matches_the_library_parameters():
    d = load_design(SYS16, CONV, CONV_MAP)
    layer = describe_layer(d)
    # conv2d.yaml: I is C x (P+R-1) x (Q+S-1), W is K x C x R x S, stride 1, defaults K=4 C=3 P=Q=8 R=S=3
    assert layer.kind == "conv"
    assert layer.dims == {"IfmapH": 10, "IfmapW": 10, "FilterH": 3, "FilterW": 3, "Channels": 3, "NumFilter": 4,
                          "Stride": 1}
    assert layer.roles == {"L_k": "N", "L_c": "K", "L_p": "M", "L_q": "M", "L_r": "K", "L_s": "K"}
    assert layer.topology_csv() == ("Layer, IfmapH, IfmapW, FilterH, FilterW, Channels, NumFilter, Stride,\n"
                                    "conv2d, 10, 10, 3, 3, 3, 4, 1,\n")
    assert layer.macs == 4 * 3 * 8 * 8 * 3 * 3
    # a preset's parameters reach the layer (the medium preset's tiles no longer fit the GLB double-buffered:
    # its two copies of I's and O's tiles need 259 KiB of 256)
    small = describe_layer(load_design(SYS16, CONV, CONV_MAP, "small"))
    assert (small.dims["IfmapH"], small.dims["Channels"], small.dims["NumFilter"]) == (16, 16, 16)


CONV_STRIDED = """
    workload:
      version: 1
      name: conv-s2
      parameters: {K: 8, C: 4, P: 5, Q: 6, R: 3, S: 3}
      arrays:
        I: {shape: [C, "%s", "2 * Q + S - 2"], dtype: int16, role: in}
        W: {shape: [K, C, R, S], dtype: int16, role: in}
        O: {shape: [K, P, Q], dtype: int32, role: out}
      einsum: "O[k,p,q] += I[c,2*p+r,q*2+s] * W[k,c,r,s]"
      kernel: |
        L_k: for (int k = 0; k < K; k++) {
          L_c: for (int c = 0; c < C; c++) {
            L_p: for (int p = 0; p < P; p++) {
              L_q: for (int q = 0; q < Q; q++) {
                L_r: for (int r = 0; r < R; r++) {
                  L_s: for (int s = 0; s < S; s++) {
                    O[k][p][q] += I[c][2 * p + r][2 * q + s] * W[k][c][r][s];
                  }
                }
              }
            }
          }
        }
    """


def test_strided_conv_with_operands_swapped(write):
    wl = write("conv_s2.yaml", CONV_STRIDED % "2 * P + R - 2")
    mp = mapping(write, "s2", "{L_r: {tile: 3, spatial: rows}, L_k: {tile: 8, spatial: cols}}", "conv-s2")
    d = load_design(SYS16, wl, mp)
    layer = describe_layer(d)
    assert layer.dims == {"IfmapH": 11, "IfmapW": 13, "FilterH": 3, "FilterW": 3, "Channels": 4, "NumFilter": 8,
                          "Stride": 2}
    assert layer.macs == 8 * 4 * 5 * 6 * 3 * 3
    assert detect_dataflow(d, layer) == ("ws", False)


def test_padded_conv_is_refused(write):
    # a 14-row input: a 3-row filter with stride 2 makes (14 - 3) // 2 + 1 = 6 output rows, P is 5
    wl = write("conv_pad.yaml", CONV_STRIDED % "2 * P + R + 1")
    mp = mapping(write, "pad", "{L_r: {tile: 3, spatial: rows}, L_k: {tile: 8, spatial: cols}}", "conv-s2")
    with pytest.raises(UserError, match="does not model padding"):
        describe_layer(load_design(SYS16, wl, mp))


@pytest.mark.parametrize("workload,mp", [("softmax", "softmax-hls-fpga"), ("atax", "atax-hls-fpga"),
                                         ("spmv-csr", "spmv-csr-hls-fpga")])
def test_other_workloads_are_refused(workload, mp):
    d = load_design(ROOT / "arch_specs" / "hls-fpga.yaml", ROOT / "workloads" / f"{workload}.yaml",
                    ROOT / "mappings" / f"{mp}.yaml")
    with pytest.raises(UserError) as e:
        describe_layer(d)
    msg = str(e.value)
    assert f"workload '{workload}' is neither a GEMM nor a 2-D convolution" in msg
    assert "C[m,n] += A[m,k] * B[k,n]" in msg


# -- mapping -> dataflow, architecture -> config ---------------------------------------------------
@pytest.mark.parametrize("n,df", [(16, "ws"), (16, "os"), (32, "ws"), (32, "os")])
def test_dataflow_of_the_scalesim_test_mappings(n, df):
    d = gemm_design(n, df)
    cfg = run_config(d, describe_layer(d))
    assert (cfg.dataflow, cfg.transposed, cfg.rows, cfg.cols) == (df, False, n, n)
    # the 2048 KiB SRAM level, split in three whole-kB buffers
    assert (cfg.sram_level, cfg.ifmap_kb, cfg.filter_kb, cfg.ofmap_kb) == ("SRAM", 682, 682, 682)


def test_library_conv_mapping_is_input_stationary():
    # filter rows (window, K role) on PE rows, output rows (pixels, M role) on PE cols
    d = load_design(EYERISS, CONV, CONV_MAP)
    cfg = run_config(d, describe_layer(d))
    assert (cfg.dataflow, cfg.transposed, cfg.rows, cfg.cols) == ("is", False, 12, 14)
    assert (cfg.sram_level, cfg.ifmap_kb) == ("GLB", 36)  # 108 KiB GLB / 3; the RF is a regfile


@pytest.mark.parametrize("rows,cols,expect", [
    ("L_k", "L_n", ("ws", False)), ("L_m", "L_n", ("os", False)), ("L_k", "L_m", ("is", False)),
    ("L_n", "L_k", ("ws", True)), ("L_n", "L_m", ("os", True)), ("L_m", "L_k", ("is", True)),
])
def test_every_binding_and_transposition(write, rows, cols, expect):
    arch = write("rect.yaml", RECT_ARCH)
    mp = mapping(write, "m", f"{{{rows}: {{tile: 8, spatial: rows}}, {cols}: {{tile: 16, spatial: cols}}}}")
    d = load_design(arch, GEMM, mp)
    cfg = run_config(d, describe_layer(d))
    assert (cfg.dataflow, cfg.transposed) == expect == DATAFLOWS[(describe_layer(d).roles[rows],
                                                                 describe_layer(d).roles[cols])]
    # a transposed binding runs SCALE-Sim's dataflow on the array turned by 90 degrees
    assert (cfg.rows, cfg.cols) == ((16, 8) if expect[1] else (8, 16))
    # largest SRAM level counts all its instances (3 x 10 KiB) and ignores the bigger regfile
    assert sram_split(d) == ("BUF", 10, 10, 10)


def test_one_dimensional_binding_is_refused_with_the_table(write):
    mp = mapping(write, "rows-only", "{L_k: {tile: 16, spatial: rows}}")
    d = load_design(SYS16, GEMM, mp)
    with pytest.raises(UserError) as e:
        run_config(d, describe_layer(d))
    msg = str(e.value)
    assert "must bind loops to both PE rows and PE cols (rows: L_k)" in msg
    assert "K x N -> ws" in msg and "M x N -> os" in msg and "K x M -> is" in msg


def test_mixed_roles_on_one_dimension_are_refused(write):
    mp = mapping(write, "mixed", "{L_m: {tile: 4, spatial: rows}, L_k: {tile: 4, spatial: rows}, "
                                 "L_n: {tile: 16, spatial: cols}}")
    d = load_design(SYS16, GEMM, mp)
    with pytest.raises(UserError, match=r"mixes roles K\+M on PE rows \(L_m, L_k\)"):
        run_config(d, describe_layer(d))


def test_same_role_on_both_dimensions_is_no_dataflow(write):
    mp = mapping(write, "pq", "{L_p: {tile: 8, spatial: rows}, L_q: {tile: 8, spatial: cols}}", "conv2d")
    d = load_design(SYS16, CONV, mp)
    with pytest.raises(UserError, match="binds M to PE rows and M to PE cols, which is no SCALE-Sim dataflow"):
        run_config(d, describe_layer(d))


def test_architecture_without_pe_array_or_sram(write):
    mp = mapping(write, "plain", "{}")
    d = load_design(ROOT / "arch_specs" / "hls-fpga.yaml", GEMM, mp)
    with pytest.raises(UserError, match="has no compute.pe_array"):
        run_config(d, describe_layer(d))
    arch = write("nosram.yaml", RECT_ARCH.replace("kind: sram", "kind: regfile"))
    d = load_design(arch, GEMM, mapping(write, "ws", "{L_k: {tile: 8, spatial: rows}, L_n: {tile: 16, "
                                                     "spatial: cols}}"))
    with pytest.raises(UserError, match="has no memory level of kind sram"):
        run_config(d, describe_layer(d))


# every key SCALE-Sim 3.0.0's scale_config.read_conf_file reads (a missing one is a raw NoOptionError there)
REQUIRED_KEYS = {
    "general": ["run_name"],
    "run_presets": ["InterfaceBandwidth", "UseRamulatorTrace"],
    "architecture_presets": ["ArrayHeight", "ArrayWidth", "IfmapSramSzkB", "FilterSramSzkB", "OfmapSramSzkB",
                             "IfmapOffset", "FilterOffset", "OfmapOffset", "Dataflow", "ReadRequestBuffer",
                             "WriteRequestBuffer"],
    "layout": ["IfmapCustomLayout", "FilterCustomLayout", "IfmapSRAMBankBandwidth", "IfmapSRAMBankNum",
               "IfmapSRAMBankPort", "FilterSRAMBankBandwidth", "FilterSRAMBankNum", "FilterSRAMBankPort"],
    "sparsity": ["SparsitySupport"],
}


def test_config_ini_has_every_key_and_calc_bandwidth(tmp_path):
    d = gemm_design(32, "os")
    layer, cfg = ScaleSimProfiler(python=tmp_path / "none").prepare(d, tmp_path)
    ini = configparser.ConfigParser()
    ini.read(tmp_path / "scalesim.cfg")
    for section, keys in REQUIRED_KEYS.items():
        for k in keys:
            assert ini.has_option(section, k), f"[{section}] {k}"
    a = ini["architecture_presets"]
    assert (a["ArrayHeight"], a["ArrayWidth"], a["Dataflow"]) == ("32", "32", "os")
    assert (a["IfmapSramSzkB"], a["FilterSramSzkB"], a["OfmapSramSzkB"]) == ("682", "682", "682")
    assert ini["run_presets"]["InterfaceBandwidth"] == "CALC"
    assert ini["sparsity"]["SparsitySupport"] == "false"
    assert not ini.has_section("network_presets")  # would make SCALE-Sim read a topology path from the config
    assert (tmp_path / "topology.csv").read_text() == layer.topology_csv()
    assert (tmp_path / "layout.csv").read_text() == "Layer,\n"


# the report rows of a real SCALE-Sim 3.0.0 run (32x32 ws, 256^3 GEMM, 682 kB buffers)
COMPUTE = ("LayerID, Total Cycles (incl. prefetch), Total Cycles, Stall Cycles, Overall Util %, "
           "Mapping Efficiency %, Compute Util %,\n0, 34854, 22399, 0, 73.1461225947587, 100.0, 67.19160104986885,\n")
DETAIL = ("LayerID, SRAM IFMAP Start Cycle, SRAM IFMAP Stop Cycle, SRAM IFMAP Reads, SRAM Filter Start Cycle, "
          "SRAM Filter Stop Cycle, SRAM Filter Reads, SRAM OFMAP Start Cycle, SRAM OFMAP Stop Cycle, "
          "SRAM OFMAP Writes, DRAM IFMAP Start Cycle, DRAM IFMAP Stop Cycle, DRAM IFMAP Reads, "
          "DRAM Filter Start Cycle, DRAM Filter Stop Cycle, DRAM Filter Reads, DRAM OFMAP Start Cycle, "
          "DRAM OFMAP Stop Cycle, DRAM OFMAP Writes,\n0, 33.0, 22369.0, 524288, 1.0, 22082.0, 65536, 63.0, "
          "22399.0, 524288, -6983.0, -1.0, 65536, -6983.0, -1.0, 65536, 14938.0, 27871.0, 524319,\n")


def test_parse_reports(tmp_path):
    (tmp_path / "COMPUTE_REPORT.csv").write_text(COMPUTE)
    (tmp_path / "DETAILED_ACCESS_REPORT.csv").write_text(DETAIL)
    cycles, counters = parse_reports(tmp_path)
    assert cycles == 22399.0  # the column without prefetch
    assert counters["cycles_incl_prefetch"] == 34854.0
    assert counters["stall_cycles"] == 0.0
    assert counters["overall_util_pct"] == pytest.approx(73.1461225947587)
    assert counters["mapping_efficiency_pct"] == 100.0
    assert counters["sram_ifmap_reads"] == 524288.0 and counters["dram_ofmap_writes"] == 524319.0
    (tmp_path / "COMPUTE_REPORT.csv").write_text("LayerID, Cycles,\n0, 12,\n")
    with pytest.raises(UserError, match="unexpected COMPUTE_REPORT.csv"):
        parse_reports(tmp_path)


# -- availability and the subprocess, with stand-in interpreters ----------------------------------
def fake_python(tmp_path: Path, run_body: str) -> Path:
    """A shell script that answers the version probe like SCALE-Sim and runs ``run_body`` for a simulation.

    Called as: python -c CODE cfg topology layout outdir kind ($3..$7).
    """
    p = tmp_path / "fake-python"
    p.write_text(f'#!/bin/sh\ncase "$2" in\n  *run_scale*) {run_body} ;;\n  *) echo 3.0.0 ;;\nesac\n')
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return p


def test_unavailable_names_the_install_script(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMULATOR_SCALESIM_PYTHON", str(tmp_path / "missing" / "python"))
    prof = ScaleSimProfiler()
    why = prof.available()
    assert why is not None and "no SCALE-Sim interpreter at" in why and "scripts/install_scalesim.sh" in why
    assert "\n" not in why
    assert prof.version == "0.1"
    with pytest.raises(UserError, match="profiler 'scalesim' is not available"):
        prof.profile(gemm_design(16, "ws"))


def test_interpreter_without_scalesim(monkeypatch):
    monkeypatch.setenv("LLMULATOR_SCALESIM_PYTHON", sys.executable)  # the main env: no scalesim there
    why = ScaleSimProfiler().available()
    assert why is not None and "'import scalesim' fails" in why and "scripts/install_scalesim.sh" in why


def test_availability_is_probed_once(tmp_path, monkeypatch):
    prof = ScaleSimProfiler(python=fake_python(tmp_path, "exit 1"))
    calls = []
    real = prof._probe
    monkeypatch.setattr(prof, "_probe", lambda: calls.append(1) or real())
    assert prof.available() is None and prof.available() is None
    assert calls == [1]
    assert prof.version == "0.1+scalesim-3.0.0"


def test_failed_run_reports_the_tail_of_stderr(tmp_path):
    prof = ScaleSimProfiler(python=fake_python(tmp_path, 'echo "Traceback: boom in layer 0" >&2; exit 3'))
    with pytest.raises(UserError) as e:
        prof.profile(gemm_design(32, "ws"))
    assert "SCALE-Sim failed on gemm@large/gemm-ws-32/scalesim-32x32 (exit status 3)" in str(e.value)
    assert "Traceback: boom in layer 0" in str(e.value)


def test_run_past_the_time_limit(tmp_path):
    prof = ScaleSimProfiler(python=fake_python(tmp_path, "exec sleep 5"), time_limit_s=0.5)
    with pytest.raises(UserError, match="did not finish within 0.5 s"):
        prof.profile(gemm_design(32, "ws"))


def test_profile_record_from_the_reports(tmp_path):
    # a stand-in that checks its arguments and writes the reports of a real run
    report = tmp_path / "COMPUTE_REPORT.csv"
    report.write_text(COMPUTE)
    body = (f'[ "$7" = gemm ] && grep -q "Dataflow = ws" "$3" && grep -q "^gemm, 256, 256, 256,$" "$4" && '
            f'mkdir -p "$6/llmulator" && cp "{report}" "$6/llmulator/"')
    prof = ScaleSimProfiler(python=fake_python(tmp_path, body))
    p = prof.profile(gemm_design(32, "ws"), inputs=None)
    assert p.profiler == "scalesim" and p.version == "0.1+scalesim-3.0.0"
    assert p.metrics == {"cycles": 22399.0, "latency_us": 22.399}
    assert p.counters["cycles_incl_prefetch"] == 34854.0 and p.counters["macs"] == 256 ** 3
    assert (p.counters["array_rows"], p.counters["array_cols"]) == (32.0, 32.0)
    assert p.functional_check == "not-run" and p.design == "gemm@large/gemm-ws-32/scalesim-32x32"
    assert any("energy, power and area are not modelled" in n for n in p.notes)
    assert any("InterfaceBandwidth CALC" in n for n in p.notes)


def test_registers_as_a_profiler(monkeypatch):
    import llmulator_plugins.scalesim as plugin

    monkeypatch.setenv("LLMULATOR_NO_ENTRY_POINTS", "1")
    plugins.reset()
    try:
        plugins.register_plugin(plugin, name="scalesim-test")
        assert plugins.registry()["profilers"]["scalesim"].factory is ScaleSimProfiler
        assert isinstance(plugins.get("profilers", "scalesim"), ScaleSimProfiler)
    finally:
        plugins.reset()


def test_adapter_import_is_light():
    code = ("import sys, llmulator_plugins.scalesim.adapter\n"
            "heavy = [m for m in ('numpy', 'torch', 'scalesim') if m in sys.modules]\n"
            "print(heavy)")
    import subprocess

    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "torch" not in r.stdout and "scalesim" not in r.stdout


# -- the real SCALE-Sim ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def scalesim():
    prof = ScaleSimProfiler()
    why = prof.available()
    if why is not None:
        pytest.skip(f"SCALE-Sim is not installed: {why}")
    return prof


# SCALE-Sim 3.0.0, CALC bandwidth (peers.md 4.2): ws = folds x (2R + C + T - 2) - 1, os = folds x (R + C + T - 2) - 1
@pytest.mark.slow
@pytest.mark.parametrize("n,df,cycles", [(32, "ws", 22_399), (32, "os", 20_351), (16, "ws", 77_311),
                                         (16, "os", 73_215)])
def test_gemm_256_cycles_match_scalesim(scalesim, n, df, cycles):
    p = scalesim.profile(gemm_design(n, df))
    assert p.metrics["cycles"] == cycles
    folds = (256 // n) ** 2
    per_fold = (2 * n + n + 256 - 2) if df == "ws" else (n + n + 256 - 2)
    assert p.metrics["cycles"] == folds * per_fold - 1
    assert p.counters["stall_cycles"] == 0
    assert p.counters["mapping_efficiency_pct"] == 100.0
    assert p.counters["cycles_incl_prefetch"] > p.metrics["cycles"]
    assert p.version.endswith("+scalesim-3.0.0")


@pytest.mark.slow
def test_gemm_input_stationary_matches_weight_stationary(scalesim, write):
    # SCALE-Sim's is on a square array with M = N is the mirror of ws: 22 399 cycles (peers.md 4.2)
    mp = mapping(write, "is-32", "{L_k: {tile: 32, spatial: rows}, L_m: {tile: 32, spatial: cols}}",
                 placement="{A: SRAM, B: SRAM, C: SRAM}")
    d = load_design(DATA / "systolic-32.yaml", GEMM, mp, "large")
    p = scalesim.profile(d)
    assert p.metrics["cycles"] == 22_399
    assert any("'is' (input stationary)" in n for n in p.notes)


@pytest.mark.slow
@pytest.mark.parametrize("arch,cycles", [
    # is: S_r = window C*R*S = 27, S_c = pixels P*Q = 64, T = filters K = 4
    (SYS16, 2 * 4 * (2 * 16 + 16 + 4 - 2) - 1),   # ceil(27/16) * ceil(64/16) = 8 folds -> 399
    (EYERISS, 3 * 5 * (2 * 12 + 14 + 4 - 2) - 1),  # ceil(27/12) * ceil(64/14) = 15 folds -> 599
])
def test_library_conv2d(scalesim, arch, cycles):
    p = scalesim.profile(load_design(arch, CONV, CONV_MAP))
    assert p.metrics["cycles"] == cycles
    assert p.counters["stall_cycles"] == 0
    assert p.counters["macs"] == 6912


@pytest.mark.slow
def test_cli_profile_with_the_plugin(scalesim, monkeypatch, capsys):
    import llmulator_plugins.scalesim as plugin
    from llmulator.cli import main

    monkeypatch.setenv("LLMULATOR_NO_ENTRY_POINTS", "1")
    plugins.reset()
    try:
        plugins.register_plugin(plugin, name="scalesim-test")
        rc = main(["profile", str(SYS16), "conv2d", "conv2d-rs-eyeriss", "--profiler", "scalesim", "--json"])
    finally:
        plugins.reset()
    out = capsys.readouterr()
    assert rc == 0, out.err
    prof = json.loads(out.out)["profile"]
    assert prof["profiler"] == "scalesim" and prof["metrics"]["cycles"] == 399
    assert prof["inputs"].startswith("generated: seed=3")


def test_install_script_is_executable_and_pins_versions():
    script = ROOT / "scripts" / "install_scalesim.sh"
    assert os.access(script, os.X_OK)
    text = script.read_text()
    assert 'SCALESIM_VERSION="3.0.0"' in text and "numpy==2.3.5" in text and ".venv-scalesim" in text


def test_docs_table_holds_the_measured_gemm_cycles():
    # docs/scalesim.md is regenerated by benchmarks/peers_scalesim.py; the GEMM rows must show the exact cycles
    doc = (ROOT / "docs" / "scalesim.md").read_text()
    begin = doc.index("<!-- BEGIN peers_scalesim table")
    table = doc[begin:doc.index("<!-- END peers_scalesim table -->")]
    # analytical = hlsim: SCALE-Sim's cycles + 1 (it counts from cycle 0) + the MAC body's latency once (2)
    # + the systolic array's I/O registers once (4, llmulator.nest.array_io_cycles),
    # + 1 per fold in weight stationary (the last partial sum leaves the array: 256 and 64 folds)
    for n, df, cycles, analytical in ((16, "ws", "77,311", "77,574"), (16, "os", "73,215", "73,222"),
                                      (32, "ws", "22,399", "22,470"), (32, "os", "20,351", "20,358")):
        row = next(r for r in table.splitlines() if f"scalesim/{df}-{n}.yaml" in r)
        assert f"**{cycles}**" in row and f"| {analytical} |" in row


# SCALE-Sim 3.0.0's cycles for our own files (tests/data/scalesim), measured with the adapter
# (benchmarks/peers_scalesim.py, docs/scalesim.md) and checked again by the slow test below; each is
# also the fold formula by hand: folds x (fill + T) - 1, fill 2R + C - 2 (ws) or R + C - 2 (os).
SCALESIM_CYCLES = {
    ("gemm", "ws", 16, None): 77_311, ("gemm", "os", 16, None): 73_215,
    ("gemm", "ws", 32, None): 22_399, ("gemm", "os", 32, None): 20_351,
    # medium: K=C=64, P=Q=28, 3x3: ws 36 x 4 folds of 46 + 784; os 49 x 4 folds of 30 + 576
    ("conv", "ws", 16, "medium"): 36 * 4 * (46 + 784) - 1, ("conv", "os", 16, "medium"): 49 * 4 * (30 + 576) - 1,
    ("conv", "ws", 32, "medium"): 18 * 2 * (94 + 784) - 1, ("conv", "os", 32, "medium"): 25 * 2 * (62 + 576) - 1,
    # rgb-5x5: K=32, C=3, P=Q=32, 5x5: the 75-tap window and the 1,024 pixels need fused loops to fold
    ("conv", "ws", 16, "rgb-5x5"): 5 * 2 * (46 + 1024) - 1, ("conv", "os", 16, "rgb-5x5"): 64 * 2 * (30 + 75) - 1,
    ("conv", "ws", 32, "rgb-5x5"): 3 * 1 * (94 + 1024) - 1, ("conv", "os", 32, "rgb-5x5"): 32 * 1 * (62 + 75) - 1,
}


def agreement_design(kind: str, df: str, n: int, preset: str | None):
    if kind == "gemm":
        return gemm_design(n, df)
    return load_design(DATA / f"systolic-{n}.yaml", CONV, DATA / f"conv-{df}-{n}-{preset}.yaml")


@pytest.mark.parametrize("key", list(SCALESIM_CYCLES), ids=lambda k: "-".join(str(x) for x in k if x))
def test_hlsim_and_the_analytical_model_agree_with_scalesim_within_2_percent(key):
    """Our own arch/workload/mapping files, both dataflows, two array sizes, GEMM and two conv layers."""
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    from llmulator_plugins.hlsim.profiler import HlsimProfiler

    d = agreement_design(*key)
    want = SCALESIM_CYCLES[key]
    p = HlsimProfiler().profile(d)
    e = AnalyticalEstimator().estimate([d])[0]
    assert p.functional_check == "pass"
    # SCALE-Sim runs the array on operands already in its buffers: the nests' on-chip cycles (compute); the
    # totals add the first tiles' trip from DRAM and the last tiles' back, which no tile's work hides (hlsim 0.45)
    on_chip = [sum(v for k, v in r.breakdown.items() if k.startswith("compute_cycles.")) for r in (p, e)]
    assert on_chip == [pytest.approx(want, rel=0.02)] * 2
    assert all(r.metrics["cycles"] >= c + d.arch.memory[0].latency_cycles for r, c in zip((p, e), on_chip, strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("key", [k for k in SCALESIM_CYCLES if k[0] == "conv"],
                         ids=lambda k: "-".join(str(x) for x in k if x))
def test_conv_layers_match_scalesim(scalesim, key):
    p = scalesim.profile(agreement_design(*key))
    assert p.metrics["cycles"] == SCALESIM_CYCLES[key]
    assert any(f"'{key[1]}'" in n for n in p.notes)
