"""Bank conflicts (llmulator.banks): the requests counted by hand, and hlsim's cycles equal to the generated
RTL's, cycle for cycle, on buffers narrow enough that the array waits (Icarus; skipped without it).

The architecture's PE registers hold 64 bits, one int32 accumulator and the int8 operands but not a
second accumulator, so an output-stationary fold drains before the next one starts in hlsim too, as
the generated PE does (llmulator.nest.shadow_accumulator_fits)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from llmulator import banks, bankstreams
from llmulator.buflayout import Level
from llmulator.design import load_design
from llmulator.library import resolve
from llmulator_plugins.hlsim.profiler import HlsimProfiler

ARCH = """
architecture:
  version: 1
  name: sys-{n}x{n}
  clock_mhz: 100
  compute:
    pe_array: {{rows: {n}, cols: {n}, interconnect: systolic}}
    operators:
      mac: {{count: {nn}, bits: 8, latency_cycles: 1}}
  memory:
    - {{name: DRAM, kind: dram, width_bits: 64, bandwidth_bytes_per_cycle: 8, latency_cycles: 10}}
    - {{name: GLB, kind: sram, capacity_kib: 4, width_bits: {width}, banks: {banks}, ports: {ports}, latency_cycles: 1}}
    - {{name: PE_REG, kind: regfile, capacity_kib: 0.0078125, width_bits: 32, instances: {nn}, latency_cycles: 0}}
"""

MAPS = {
    "ws": ("L_k: {tile: 2, spatial: rows}", "L_n: {tile: 2, spatial: cols}", "[L_n, L_k, L_m]"),
    "os": ("L_m: {tile: 2, spatial: rows}", "L_n: {tile: 2, spatial: cols}", "[L_m, L_n, L_k]"),
    "is": ("L_k: {tile: 2, spatial: rows}", "L_m: {tile: 2, spatial: cols}", "[L_m, L_k, L_n]"),
}


def design(write, df: str, width: int = 32, nbanks: int = 1, ports: int = 1):
    a = write("arch.yaml", ARCH.format(n=2, nn=4, width=width, banks=nbanks, ports=ports))
    w = resolve("workload", "gemm")
    rows, cols, order = MAPS[df]
    mp = write("map.yaml", f"""
        mapping:
          version: 1
          name: {df}
          workload: gemm
          loops:
            {rows}
            {cols}
          order: {order}
          placement: {{A: GLB, B: GLB, C: GLB}}
        """)
    return load_design(a, w, mp, "mini")


def test_requests_by_hand():
    """Two banks (word w's bank: the parity of its bits). Vector 0: lanes 0 and 1 share word 0 (one
    request, bank 0), lane 2 fetches word 1 (bank 1), lane 3 idles. Vector 1: lane 0 finds word 0 in
    its line, lanes 1 and 2 share word 2 (bank 1), lane 3 fetches word 3 (bank 0). The old outputs'
    reader forgets its lines at a fold's end: the same words in the next fold are fetched again."""
    lv = Level("GLB", 32, 2, 1, 1, 64, 4, 1.0, 1.0, 2048.0, 0.0)
    fold = np.array([[0, 0, 1, -1], [0, 2, 2, 3]])
    assert bankstreams.reader_items([fold], lv, clear_each_fold=False) == [(0, 0, [0, 1]), (0, 1, [1, 0])]
    again = bankstreams.reader_items([fold, fold[1:]], lv, clear_each_fold=False)
    assert again[2] == (1, 0, [])
    cleared = bankstreams.reader_items([fold, fold[1:]], lv, clear_each_fold=True)
    assert cleared[2] == (1, 0, [0, 1, 0])
    assert bankstreams.bank_of(lv, np.array([0, 1, 2, 3, 5, -1])).tolist() == [0, 1, 1, 0, 0, -1]


@pytest.mark.parametrize("df", ["ws", "os", "is"])
@pytest.mark.parametrize("nbanks, ports", [(1, 1), (2, 1), (8, 4)])
def test_the_unlimited_schedule_is_the_advances_plus_the_fetch_and_the_write_back(write, df, nbanks, ports):
    """The shortcut the waits take (banks._waits): with unlimited ports the schedule is the array's
    advances plus the first fetch and the last write-back, so it need not be replayed twice."""
    plan, lay = banks._plan(design(write, df, nbanks=nbanks, ports=ports))
    folds = plan.folds()
    assert banks.simulate(plan, lay, folds, unlimited=True) == banks.ideal_cycles(plan, lay, folds)
    assert banks.simulate(plan, lay, folds) >= banks.ideal_cycles(plan, lay, folds)


def test_wide_buffers_never_wait_and_more_ports_never_wait_longer(write):
    assert banks.stall_cycles(design(write, "ws", width=32, nbanks=8, ports=4)) == 0
    one, two = (banks.stall_cycles(design(write, "ws", ports=p)) for p in (1, 2))
    assert one > two >= 0


def test_not_a_pe_array_design():
    d = load_design(resolve("architecture", "hls-fpga"), resolve("workload", "atax"),
                    resolve("mapping", "atax-hls-fpga"))
    assert banks.stall_cycles(d) is None


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog (iverilog) is not installed")
@pytest.mark.parametrize("df", ["ws", "os", "is"])
def test_hlsim_equals_the_rtl_on_a_one_bank_one_port_buffer(write, df, monkeypatch):
    """One 32-bit bank with one port: a step's words queue for it. hlsim's compute cycles (its PE-array
    nest, waits included) are the generated hardware's cycles exactly."""
    from llmulator_plugins.rtl.profiler import RtlProfiler
    monkeypatch.setenv("LLMULATOR_RTL_SIM", "icarus")
    d = design(write, df)
    rtl = RtlProfiler(synthesize=False).profile(d)
    assert rtl.functional_check == "pass"
    h = HlsimProfiler().profile(d)
    waits = sum(v for k, v in h.breakdown.items() if k.startswith("bank_wait_cycles."))
    compute = sum(v for k, v in h.breakdown.items() if k.startswith("compute_cycles."))
    assert waits > 0
    assert compute == rtl.metrics["cycles"]


@pytest.mark.parametrize("df", ["ws", "os", "is"])
@pytest.mark.parametrize("dims", [(5, 3, 7), (4, 4, 4), (9, 2, 3)])
def test_the_fold_walk_counted_in_closed_form_equals_listing_it(write, df, dims):
    """fold_count, fold_at and total_stream_steps (what the sampled replay uses instead of listing hundreds of
    thousands of folds) equal the listed walk, partial edge tiles included (odd sizes on 2-wide tiles)."""
    from llmulator.pearray import make_plan
    from test_rtl_profiler import design as odd_design
    plan = make_plan(odd_design(write, 2, df, *dims))
    folds = plan.folds()
    assert plan.fold_count() == len(folds)
    assert [plan.fold_at(i) for i in range(len(folds))] == folds
    assert plan.total_stream_steps() == sum(plan.stream_steps(f) for f in folds)
