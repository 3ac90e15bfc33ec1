"""Physical-bound invariants: checked on every hlsim profile, able to fail, and obeyed by every library
design and by synthesized ones (plugins/hlsim/bounds.py, docs/timing-model.md section 6)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml
from llmulator.dataset import read_records
from llmulator.design import load_design
from llmulator.errors import InvariantError
from llmulator_plugins.hlsim import bounds
from llmulator_plugins.hlsim.profiler import HlsimProfiler
from llmulator_plugins.synth import driver

ROOT = Path(__file__).resolve().parent.parent
MAPPINGS = sorted((ROOT / "mappings").glob("*.yaml"))
FAST = {"gemm-ws-16x16", "conv2d-rs-eyeriss", "spmv-csr-hls-fpga", "k2mm-opt", "floyd-warshall-opt"}


def _design(f: Path):
    m = yaml.safe_load(f.read_text())["mapping"]
    return load_design(ROOT / "arch_specs" / f"{m['architecture']}.yaml", ROOT / "workloads" / f"{m['workload']}.yaml",
                       f)


def test_a_schedule_faster_than_the_units_is_an_internal_error():
    d = _design(ROOT / "mappings/gemm-ws-16x16.yaml")  # 256 MAC units, bound to 16 x 16 PEs
    run = bounds.NestRun("L_m", cycles=100.0, ops=Counter(mac=256 * 200.0), band=["L_m", "L_n", "L_k"])
    want = r"gemm/gemm-ws-16x16/systolic-16x16: nest L_m: 51200 mac operations on 256 units"
    with pytest.raises(InvariantError, match=want):
        bounds.check(d, [run], 100.0)
    # the mapping binds 16 x 16 PEs of one MAC each; the returned bound is the tightest one
    assert bounds.units(d, "mac", ["L_m", "L_n", "L_k"]) == 256
    ok = bounds.NestRun("L_m", cycles=5000.0, ops=Counter(mac=8 * 200.0))
    assert bounds.check(d, [ok], 5000.0) == pytest.approx(8 * 200 / 256)


def test_bandwidth_and_recurrence_bounds_fail_too():
    d = _design(ROOT / "mappings/spmv-csr-hls-fpga.yaml")
    bw = d.arch.level("BRAM").bandwidth_bytes_per_cycle
    run = bounds.NestRun("L_i", cycles=10.0, bits=Counter(BRAM=8 * bw * 11))
    with pytest.raises(InvariantError, match="through BRAM"):
        bounds.check(d, [run], 10.0)
    # L_j accumulates into `sum` (fp add latency from the architecture) 2048 times in 128 rows
    lat = d.arch.operators["add"].latency_cycles
    run = bounds.NestRun("L_i", cycles=1000.0, pipelined=[("L_j", 2048.0, 128.0)])
    with pytest.raises(InvariantError, match="recurrences"):
        bounds.check(d, [run], 1000.0)
    assert bounds.check(d, [bounds.NestRun("L_i", (2048 - 128) * lat, pipelined=[("L_j", 2048.0, 128.0)])],
                        (2048 - 128) * lat) == (2048 - 128) * lat


def test_a_local_reset_in_the_body_is_not_an_accumulation_across_iterations():
    d = _design(ROOT / "mappings/spmv-csr-hls-fpga.yaml")
    # `sum += vals[j] * x[col_idx[j]]`: the add (the product is off the chain)
    assert bounds._carried_latency(d, "L_j") == d.arch.operators["add"].latency_cycles
    assert bounds._carried_latency(d, "L_i") == 0  # `float sum = 0` comes first in L_i's body


def test_a_chain_through_two_statements_bounds_the_loop(write):
    """`t = s * 3; s = t + a[i];` carries s through a multiply (5 cycles on PROBE_ARCH) and an add (3): 31 steps
    of 8 after the first, 248 cycles at least. Before, only a statement that reads and writes one local counted:
    no recurrence bound at all here (the bound was the 32 multiplies on 2 units, 16)."""
    from conftest import PROBE_ARCH, kernel_design
    kernel = ("    int s = 1;\n    L_i: for (int i = 0; i < N; i++) {\n      int t = s * 3;\n      s = t + a[i];\n"
              "    }\n    y[0] = s;")
    ref = ("    s = 1\n    for v in a: s = (s * 3 + int(v)) & 0xffffffff\n"
           "    y[0] = np.int64(s).astype(np.uint32).view(np.int32)")
    d = kernel_design(write, PROBE_ARCH, kernel, "    a: {shape: [N], dtype: int32, role: in}\n"
                      "    y: {shape: [1], dtype: int32, role: out}", ref, "{L_i: {pipeline_ii: 1}}",
                      "{a: BRAM, y: BRAM}", params="{N: 32}")
    assert bounds._carried_latency(d, "L_i") == 8
    with pytest.raises(InvariantError, match="recurrences"):
        bounds.check(d, [bounds.NestRun("L_i", 247.0, pipelined=[("L_i", 32.0, 1.0)])], 247.0)
    p = HlsimProfiler().profile(d)
    assert p.functional_check == "pass", p.functional_check
    assert p.breakdown["ii.L_i"] == 8 and p.breakdown["bound_cycles"] >= 248 and p.metrics["cycles"] >= 248


@pytest.mark.parametrize("mapping_file", [pytest.param(f, id=f.stem, marks=() if f.stem in FAST else pytest.mark.slow)
                                          for f in MAPPINGS])
def test_every_library_design_obeys_the_bounds(mapping_file):
    d = _design(mapping_file)
    p = HlsimProfiler().profile(d)  # raises InvariantError on a violation
    assert 0 < p.breakdown["bound_cycles"] <= p.metrics["cycles"]


def test_a_pe_array_gemm_sits_on_its_compute_bound():
    d = load_design(ROOT / "tests/data/scalesim/systolic-16.yaml", ROOT / "workloads/gemm.yaml",
                    ROOT / "tests/data/scalesim/ws-16.yaml")
    p = HlsimProfiler().profile(d)
    assert p.breakdown["bound_cycles"] == 256 ** 3 / 256
    assert p.metrics["cycles"] / p.breakdown["bound_cycles"] < 1.2  # 16-cycle folds + 46 cycles of fill each


@pytest.mark.slow
def test_five_hundred_synthesized_designs_obey_the_bounds(tmp_path):
    """Every sample is labelled by hlsim, which checks the bounds on each profile: a violation aborts."""
    driver.run([1, 2, 3], 504, tmp_path / "d", seed=11, workers=2, shard_size=24, progress=False)
    rows = read_records(tmp_path / "d")
    assert len(rows) == 504
    assert all(r["cycles"] > 0 for r in rows)


def test_a_bandwidth_bound_takes_whole_cycles(write):
    """A level moving 5 bytes per cycle moves a vector add's 17 x 3 int32 elements (204 bytes) in
    ceil(40.8) = 41 cycles, not 40.8 (hlsim 0.37 reported fractional cycles on 562 synth-v3 rows), after the
    DRAM's 10 cycles of latency (hlsim 0.45): 51; the analytical model takes the same whole cycles."""
    from conftest import ROUND, kernel_design, profiled_and_estimated
    arch = ROUND.replace("RF", "").replace("bandwidth_bytes_per_cycle: 4, latency_cycles: 10",
                                           "bandwidth_bytes_per_cycle: 5, ports: 4, latency_cycles: 10")
    arrays = ("    A: {shape: [N], dtype: int32, role: in}\n    B: {shape: [N], dtype: int32, role: in}\n"
              "    C: {shape: [N], dtype: int32, role: out}")
    kernel = "    L_i: for (int i = 0; i < N; i++) {\n      C[i] = A[i] + B[i];\n    }"
    d = kernel_design(write, arch, kernel, arrays, "    C[:] = A + B", "{L_i: {pipeline_ii: 1}}",
                      "{A: DRAM, B: DRAM, C: DRAM}", params="{N: 17}")
    p, e = profiled_and_estimated(d)
    assert p.breakdown["bandwidth_cycles.L_i.DRAM"] == pytest.approx(40.8 + 10)
    assert p.breakdown["compute_cycles.L_i"] < 40
    assert p.metrics["cycles"] == e.metrics["cycles"] == 41 + 10


def test_a_chain_through_memory_bounds_the_loop_and_catches_a_dropped_dependence(write, monkeypatch):
    """`a[i + 1] = a[i] + b[i]` pipelined (PROBE_ARCH: load 2, add 3, the store's cycle): 6 cycles an iteration,
    31 x 6 = 186 at least. With the schedule's memory dependences removed (a fault injected into
    ``GraphBuilder.carried``) hlsim prices 127 cycles, and the check refuses it; before 2026-12-06 no bound
    followed memory and the broken profile passed (an outside probe's injection: 126 where 2,048 on DRAM)."""
    from conftest import PROBE_ARCH, kernel_design
    from llmulator import schedule
    arrays = "    a: {shape: [M], dtype: int32, role: inout}\n    b: {shape: [N], dtype: int32, role: in}"
    d = kernel_design(write, PROBE_ARCH, "    L_i: for (int i = 0; i < N; i++) {\n      a[i + 1] = a[i] + b[i];\n    }",
                      arrays, "    for i in range(N):\n        a[i + 1] = a[i] + b[i]", "{L_i: {pipeline_ii: 1}}",
                      "{a: BRAM, b: BRAM}", params="{N: 32, M: 33}")
    assert bounds._memory_latency(d, "L_i") == 6
    p = HlsimProfiler().profile(d)
    assert p.metrics["cycles"] >= p.breakdown["bound_cycles"] >= 186
    real = schedule.GraphBuilder.carried
    monkeypatch.setattr(schedule.GraphBuilder, "carried",
                        lambda self: [c for c in real(self) if c.what.startswith("local")])
    with pytest.raises(InvariantError, match="needs >= 186"):
        HlsimProfiler().profile(d)
