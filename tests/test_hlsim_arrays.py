"""hlsim on PE arrays, against hand counts: folds, stream steps, per-PE units, fill by dataflow,
operand bandwidth, area of the whole array (docs/timing-model.md, "PE arrays")."""

from __future__ import annotations

from pathlib import Path

import pytest
from llmulator.design import load_design
from llmulator_plugins.analytical.estimator import AnalyticalEstimator
from llmulator_plugins.hlsim.profiler import HlsimProfiler

ROOT = Path(__file__).resolve().parent.parent


def systolic(write, n: int, glb_bw: int | None = None, name: str = "sys") -> Path:
    bw = f", bandwidth_bytes_per_cycle: {glb_bw}" if glb_bw else ", bandwidth_bytes_per_cycle: 65536"
    return write(f"{name}{n}.yaml", f"""
architecture:
  version: 1
  name: {name}-{n}x{n}
  clock_mhz: 1000
  technology: 45nm
  compute:
    pe_array: {{rows: {n}, cols: {n}, interconnect: systolic}}
    operators:
      mac: {{count: {n * n}, bits: 8, latency_cycles: 1}}
      add: {{count: 16, bits: 32, latency_cycles: 1}}
  memory:
    - {{name: DRAM, kind: dram, width_bits: 512, bandwidth_bytes_per_cycle: 65536, latency_cycles: 0}}
    - {{name: GLB, kind: sram, capacity_kib: 4096, width_bits: 128, banks: 4, ports: 2, latency_cycles: 1{bw}}}
""")


def mapping(write, name: str, body: str) -> Path:
    return write(f"{name}.yaml", f"mapping:\n  version: 1\n  name: {name}\n{body}")


OS4 = """  workload: gemm
  preset: mini
  loops:
    L_m: {tile: 4, spatial: rows}
    L_n: {tile: 4, spatial: cols}
    L_k: {pipeline_ii: 1}
  order: [L_m, L_n, L_k]
  placement: {A: GLB, B: GLB, C: GLB}
"""


def test_output_stationary_gemm_pays_the_skew_but_no_preload(write):
    """16^3 GEMM, 4x4 OS: 16 folds of R + C - 2 = 6 fill and 16 steps (SCALE-Sim: 352 cycles);
    hlsim adds the body's latency beyond one II once (SRAM load 1 + MAC 1 + store 1 - 1 = 2), the
    array's I/O registers (the request register; output queue, accumulation, write: 4, as the rtl profiler's
    hardware has them) and the last fold's drain, R = 4 (no PE registers declared: a shadow accumulator hides
    every other fold's drain behind the next fold; before hlsim 0.47 the last one's too)."""
    d = load_design(systolic(write, 4), ROOT / "workloads/gemm.yaml", mapping(write, "os4", OS4))
    p = HlsimProfiler().profile(d)
    assert p.functional_check == "pass"
    assert p.breakdown["fill.L_m"] == 6  # no preload: C is an output, A and B stream over k
    # on chip (the totals add the first tiles' trip from DRAM and the last ones' back: hlsim 0.45)
    assert p.breakdown["compute_cycles.L_m"] == 16 * (6 + 16) + 2 + 4 + 4
    e = AnalyticalEstimator().estimate([d])[0]
    assert e.breakdown["compute_cycles.L_m"] == 16 * (6 + 16) + 2 + 4 + 4  # the same latency
    assert e.metrics["cycles"] == p.metrics["cycles"] > p.breakdown["compute_cycles.L_m"]


@pytest.mark.parametrize("pe_reg_bits, fill, last", [
    (64, 6 + 4, 0),   # int32 accumulator + two int8 operands = 48 bits: no room for a second accumulator
    (128, 6, 4),      # 2 x 32 + 16 = 80 bits fit: the accumulators drain while the next fold runs, but the last
])
def test_output_stationary_pays_the_drain_when_the_pe_registers_hold_one_accumulator(write, pe_reg_bits, fill, last):
    """The rtl profiler's os hardware shifts the accumulators out one row per advance (R = 4) before the
    next fold accumulates; SCALE-Sim and a PE with a shadow accumulator overlap it, except the last fold's, which
    no fold follows (hlsim 0.47)."""
    arch = systolic(write, 4).read_text() + (
        f"    - {{name: PE_REG, kind: regfile, capacity_kib: {pe_reg_bits / 8192}, width_bits: 32, instances: 16, "
        "latency_cycles: 0}\n")
    d = load_design(write(f"sysreg{pe_reg_bits}.yaml", arch), ROOT / "workloads/gemm.yaml", mapping(write, "os4", OS4))
    p = HlsimProfiler().profile(d)
    assert p.breakdown["fill.L_m"] == fill
    e = AnalyticalEstimator().estimate([d])[0]
    assert p.breakdown["compute_cycles.L_m"] == e.breakdown["compute_cycles.L_m"] == 16 * (fill + 16) + 2 + 4 + last


def test_weight_stationary_gemm_pays_the_preload(write):
    """Same GEMM, WS (k on rows, n on cols, m streams): B is stationary: fill 2R + C - 2 = 10, plus the
    cycle in which the fold's last partial sum leaves the array before the next preload (the rtl
    profiler's hardware; SCALE-Sim counts 10)."""
    body = OS4.replace("L_m: {tile: 4, spatial: rows}", "L_k: {tile: 4, spatial: rows}") \
        .replace("L_k: {pipeline_ii: 1}", "L_m: {pipeline_ii: 1}").replace("[L_m, L_n, L_k]", "[L_n, L_k, L_m]")
    d = load_design(systolic(write, 4), ROOT / "workloads/gemm.yaml", mapping(write, "ws4", body))
    p = HlsimProfiler().profile(d)
    assert p.breakdown["fill.L_n"] == 11
    assert sum(v for k, v in p.breakdown.items() if k.startswith("compute_cycles.")) == 16 * (11 + 16) + 2 + 4


CONV = """  workload: conv2d
  preset: medium
  loops:
    L_c: {tile: 16, spatial: rows}
    L_p: {tile: 28, spatial: cols}
    L_q: {tile: 28}
    L_k: {tile: 64}
    L_s: {pipeline_ii: 1}
  order: [L_k, L_c, L_p, L_q, L_r, L_s]
  placement: {I: GLB, W: GLB, O: GLB}
"""


def test_conv_binds_448_pes_and_cannot_beat_their_compute_bound(write):
    """The `dse --verify` case of the ground-truth issue: C=16 on rows x P=28 on cols of a 32x32 array.
    Steps = K x Q x R x S x ceil(C/16) = 64 x 28 x 3 x 3 x 4 = 64,512 = MACs / 448; 4 folds of
    62 cycles of skew; 1,024 MAC units are allocated (the array is hardware)."""
    d = load_design(systolic(write, 32), ROOT / "workloads/conv2d.yaml", mapping(write, "conv", CONV))
    p = HlsimProfiler().profile(d)
    assert p.functional_check == "pass"
    macs = 64 * 64 * 28 * 28 * 9
    assert p.breakdown["lanes.L_k"] == 448
    assert p.breakdown["compute_cycles.L_k"] == macs / 448 + 4 * 62 + 2 + 4
    assert p.metrics["cycles"] >= macs / 448
    assert p.counters["units.mac"] == 1024
    a = AnalyticalEstimator().estimate([d])[0]
    assert a.terms["compute_cycles"] == macs / 448 + 4 * 62 + 2 + 4


def test_operand_bandwidth_throttles_a_pe_array(write):
    """The same conv with a 16 B/cycle buffer: each step needs W (16 distinct, one per row) and
    I (448 distinct) operands of 2 bytes; the buffer, not the PEs, sets the pace, and hlsim and the
    analytical model count the same traffic."""
    d = load_design(systolic(write, 32, glb_bw=16), ROOT / "workloads/conv2d.yaml", mapping(write, "conv", CONV))
    p = HlsimProfiler().profile(d)
    a = AnalyticalEstimator().estimate([d])[0]
    assert p.metrics["cycles"] == pytest.approx(p.breakdown["bandwidth_cycles.L_k.GLB"])
    assert p.metrics["cycles"] > 7 * 64_512  # (16 + 448) x 2 B / 16 B per step, at least
    assert p.metrics["cycles"] == pytest.approx(a.metrics["cycles"], rel=0.01)
    assert p.counters["reads.GLB"] == pytest.approx(a.breakdown["reads.GLB"], rel=1e-6)


def test_pe_array_operand_traffic_and_energy_follow_the_dataflow():
    """Direct conv, output stationary on 16x16 (conv2d@medium, P x Q fused on the rows): 196 folds of
    576 steps; each step reads 16 pixels of I and 16 filters' W (no multicast: each row needs its
    own pixel, each column its own filter); O stays in the PEs: read once and written once per fold,
    then written back. Energy is the analytical model's (the same counts priced the same way; the buffer's whole
    words from its replay of 3,000 advances, scaled, where hlsim replays 20,000: within 1 %)."""
    d = load_design(ROOT / "tests/data/scalesim/systolic-16.yaml", ROOT / "workloads/conv2d.yaml",
                    ROOT / "tests/data/scalesim/conv-os-16-medium.yaml")
    p = HlsimProfiler().profile(d)
    steps = 196 * 576
    outputs = 64 * 28 * 28
    assert p.counters["reads.SRAM"] == 2 * 16 * steps + outputs + outputs  # operands, O, write-back
    assert p.counters["writes.SRAM"] - p.counters["reads.DRAM"] == outputs  # O once per fold; fills from DRAM
    a = AnalyticalEstimator().estimate([d])[0]
    assert p.metrics["energy_pj"] == pytest.approx(a.metrics["energy_pj"], rel=1e-2)


def test_a_pe_array_pays_its_buffer_whole_words(write):
    """4x4 WS 16^3 GEMM (int8 A, B; int32 C) on a 128-bit GLB that moves 32 B (two words) per cycle.
    Per fold (16 folds) the buffer moves whole words (llmulator.words): B's preload 4 rows of 4 int8,
    one word each; per stream step (16) one word of A (4 int8 packed along k) and the old and new
    partial sums of 4 int32 outputs, a word each: 16 x (4 + 16 x 3) = 832 words. In element bits it
    would be 16 x (4 x 32 + 16 x (32 + 128 + 128)) = 75,776 bits, 37 % of the words' 106,496."""
    body = OS4.replace("L_m: {tile: 4, spatial: rows}", "L_k: {tile: 4, spatial: rows}") \
        .replace("L_k: {pipeline_ii: 1}", "L_m: {pipeline_ii: 1}").replace("[L_m, L_n, L_k]", "[L_n, L_k, L_m]")
    d = load_design(systolic(write, 4, glb_bw=32), ROOT / "workloads/gemm.yaml", mapping(write, "ws4w", body))
    p = HlsimProfiler().profile(d)
    assert p.breakdown["datapath_bits.L_m.GLB"] == 832 * 128
    bw = p.breakdown["bandwidth_cycles.L_m.GLB"]  # the words, and the tiles DRAM writes into the GLB
    assert bw >= 832 * 16 / 32 and bw > p.breakdown["compute_cycles.L_m"]  # the buffer sets the pace
    assert p.metrics["cycles"] == pytest.approx(bw)
    assert AnalyticalEstimator().estimate([d])[0].metrics["cycles"] == pytest.approx(p.metrics["cycles"])


def test_fewer_mac_units_than_pes_is_a_warning_at_the_count(write):
    """8 macs on a 4x4 array: hlsim shares them among the PEs, the rtl profiler builds 16; validate says so at
    the count (an outside probe found it silent: hlsim 48 cycles, the RTL 39)."""
    from llmulator.checks import design_warnings
    arch = write("sys8.yaml", systolic(write, 4).read_text().replace("count: 16, bits: 8", "count: 8, bits: 8"))
    warned = [w for w in design_warnings(load_design(arch, ROOT / "workloads/gemm.yaml", mapping(write, "os4", OS4)))
              if w.path == "architecture.compute.operators.mac.count"]
    assert len(warned) == 1 and "16 PEs" in warned[0].message and warned[0].line is not None
    full = load_design(systolic(write, 4), ROOT / "workloads/gemm.yaml", mapping(write, "os4", OS4))
    assert not [w for w in design_warnings(full) if "mac" in w.path]


def test_the_output_stationary_drain_warning_points_at_the_loop_not_an_ii(write):
    """Without a PE_REG level the os folds are priced with a second accumulator: the warning names the loop and
    says to declare the PE's registers (it was reported at a `pipeline_ii` the file does not have, with an II's
    advice; an outside probe)."""
    from llmulator.checks import design_warnings
    d = load_design(systolic(write, 4), ROOT / "workloads/gemm.yaml", mapping(write, "os4", OS4))
    drain = [w for w in design_warnings(d) if "drain" in w.message]
    assert len(drain) == 1 and drain[0].path == "mapping.loops.L_m" and "PE_REG" in drain[0].hint
