"""Fused loops (`fuse`): one loop over the product of several loops' trips, folded over the PE array
as SCALE-Sim folds an im2col dimension; validation, rendering, and the fold count by hand."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from llmulator import render
from llmulator.design import load_design
from llmulator.errors import SpecError
from llmulator_plugins.analytical.estimator import AnalyticalEstimator
from llmulator_plugins.hlsim.profiler import HlsimProfiler

ROOT = Path(__file__).resolve().parent.parent
SYS4 = """
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
"""


def mapping(write, loops: str, order: str = "", extra: str = "") -> Path:
    return write("m.yaml", f"""
mapping:
  version: 1
  name: fused
  workload: conv2d
  loops: {loops}
  {f"order: {order}" if order else ""}
  placement: {{I: SRAM, W: SRAM, O: SRAM}}
{extra}""")


def design(write, loops: str, order: str = ""):
    return load_design(write("a.yaml", SYS4), ROOT / "workloads/conv2d.yaml", mapping(write, loops, order))


def test_output_pixels_fused_over_the_rows(write):
    """conv2d default size (K=4, C=3, P=Q=8, 3x3): P x Q = 64 pixels over 4 rows (16 folds), K=4 over
    4 cols, C x R x S = 27 steps each, no stationary input: 16 x (4 + 4 - 2 + 27) = 528 cycles."""
    d = design(write, "{L_p: {fuse: [L_q], tile: 4, spatial: rows}, L_k: {tile: 4, spatial: cols}}",
               "[L_k, L_p, L_c, L_r, L_s]")
    code = render.hls_c(d)
    assert "L_p_tile: for (int p_q_t = 0; p_q_t < 64; p_q_t += 4) {" in code
    assert re.search(r"const int p = p_q / 8;\s+const int q = p_q % 8;", code)
    assert "L_q:" not in code
    p = HlsimProfiler().profile(d)
    assert p.functional_check == "pass"
    assert p.breakdown["lanes.L_k"] == 16 and p.breakdown["fill.L_k"] == 6
    # + the body's latency and the array's I/O registers once (both models), the cycle the first tiles take
    # to arrive and the last to leave (double buffering hides the rest: hlsim 0.45), and the last fold's drain of
    # R = 4 (the output stays in the PEs; no PE registers declared, so a shadow accumulator hides the others'; hlsim
    # 0.47: before, none)
    assert AnalyticalEstimator().estimate([d])[0].metrics["cycles"] == p.metrics["cycles"] \
        == 16 * (6 + 27) + 2 + 4 + 2 + 4


def test_a_filter_window_that_does_not_divide_the_rows(write):
    """C x R x S = 27 taps over 4 rows: 7 folds, the last one holding 3 taps (SCALE-Sim folds alike)."""
    d = design(write, "{L_c: {fuse: [L_r, L_s], tile: 4, spatial: rows}, L_k: {tile: 4, spatial: cols}}",
               "[L_k, L_c, L_p, L_q]")
    p = HlsimProfiler().profile(d)
    assert p.functional_check == "pass"
    # W is stationary: fill 2R + C - 2 = 10, + 1 for the last partial sum to leave; 64 pixels stream per fold
    assert AnalyticalEstimator().estimate([d])[0].metrics["cycles"] == p.metrics["cycles"] == 7 * (11 + 64) + 2 + 4 + 2


@pytest.mark.parametrize("loops,order,message", [
    ("{L_p: {fuse: [L_x], tile: 4, spatial: rows}}", "", "unknown loop label 'L_x' in fuse"),
    ("{L_q: {fuse: [L_p], tile: 4, spatial: rows}}", "", "loop L_p is not inside L_q"),
    ("{L_p: {fuse: [L_q], tile: 4, spatial: rows}, L_q: {tile: 2}}", "", "has primitives of its own"),
    ("{L_p: {fuse: [L_q], tile: 4, spatial: rows}}", "[L_q, L_p]", "listed in order"),
    ("{L_c: {fuse: [L_s, L_r], tile: 4, spatial: rows}}", "", "out of their nesting order"),
    ("{L_p: {fuse: [L_q], tile: 4}}", "", "fuse needs a band bound to the PE array"),
    ("{L_p: {fuse: [L_q], tile: 65, spatial: rows}}", "", "tile 65 is larger than the bound of loop L_p (64"),
])
def test_bad_fusions_are_refused_with_the_field(write, loops, order, message):
    with pytest.raises(SpecError) as e:
        design(write, loops, order)
    text = str(e.value)
    assert message in text and "m.yaml:" in text, text
