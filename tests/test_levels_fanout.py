"""A multi-level mapping's (``mapping.levels``) spatial factors must fit the hardware below each level (an outside
probe of analytical 0.56: a fan-out of 64 over one MAC unit was accepted, and an 8^3 GEMM's 512 MACs were priced
at 8 cycles)."""

from __future__ import annotations

import pytest
from conftest import ROUND, kernel_design
from llmulator.errors import SpecError

KERNEL = ("    L_m: for (int m = 0; m < M; m++) {\n      L_n: for (int n = 0; n < N; n++) {\n"
          "        L_k: for (int k = 0; k < K; k++) {\n          C[m][n] += A[m][k] * B[k][n];\n"
          "        }\n      }\n    }")
ARRAYS = ("    A: {shape: [M, K], dtype: int32, role: in}\n    B: {shape: [K, N], dtype: int32, role: in}\n"
          "    C: {shape: [M, N], dtype: int32, role: out}")


def _design(write, macs: int, rf_instances: int, sram: str):
    mac = f"      mac: {{count: {macs}, bits: 32, latency_cycles: 1, energy_pj: 5.0, area_um2: 500, leakage_mw: 0}}\n"
    rf = (f"    - {{name: RF, kind: regfile, capacity_kib: 0.25, width_bits: 32, instances: {rf_instances}, "
          "latency_cycles: 0, read_energy_pj: 1, write_energy_pj: 1, leakage_mw: 0, double_buffered: false}\n")
    arch = ROUND.replace("  memory:\n", mac + "  memory:\n").replace("RF", rf)
    levels = ("  levels:\n    - {level: DRAM, temporal: {L_m: 2}}\n    - " + sram + "\n"
              "    - {level: RF, temporal: {L_k: 8}}\n")
    return kernel_design(write, arch, KERNEL, ARRAYS, "    C[:] = A @ B", "{}", "{}", params="{M: 8, N: 8, K: 8}",
                         extra=levels)


@pytest.mark.parametrize(("macs", "rf", "sram", "room"), [
    (1, 16, "{level: SRAM, temporal: {L_m: 4}, spatial: {L_n: 8}}", "8 MAC lanes.*at most 1"),  # 8 lanes, 1 MAC
    (16, 4, "{level: SRAM, temporal: {L_m: 4}, spatial: {L_n: 8}}", "8 instances.*at most 4"),  # 8 RFs, 4 exist
])
def test_a_fan_out_larger_than_the_hardware_is_refused(write, macs, rf, sram, room):
    with pytest.raises(SpecError, match=f"(?s)fan out to {room}"):
        _design(write, macs, rf, sram)


def test_a_fan_out_onto_a_level_the_mapping_leaves_out_says_it_was_left_out(write):
    """levels listing DRAM and RF only, the DRAM fanning out to 8: checked against the SRAM below it (1 instance),
    which is still in the hierarchy; the message named the SRAM without saying the mapping left it out (an
    outside probe)."""
    mac = "      mac: {count: 16, bits: 32, latency_cycles: 1, energy_pj: 5.0, area_um2: 500, leakage_mw: 0}\n"
    rf = ("    - {name: RF, kind: regfile, capacity_kib: 0.25, width_bits: 32, instances: 16, latency_cycles: 0, "
          "read_energy_pj: 1, write_energy_pj: 1, leakage_mw: 0, double_buffered: false}\n")
    arch = ROUND.replace("  memory:\n", mac + "  memory:\n").replace("RF", rf)
    levels = ("  levels:\n    - {level: DRAM, temporal: {L_m: 8}, spatial: {L_n: 8}}\n"
              "    - {level: RF, temporal: {L_k: 8}}\n")
    with pytest.raises(SpecError, match="(?s)fan out to 8 instances.*level SRAM is not listed in mapping.levels"):
        kernel_design(write, arch, KERNEL, ARRAYS, "    C[:] = A @ B", "{}", "{}", params="{M: 8, N: 8, K: 8}",
                      extra=levels)


def test_a_fan_out_that_fits_runs_no_faster_than_its_mac_units(write):
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    d = _design(write, 16, 16, "{level: SRAM, temporal: {L_m: 4}, spatial: {L_n: 8}}")
    e = AnalyticalEstimator().estimate([d])[0]
    # 512 MACs over 8 lanes in use: 64 steps; the DRAM's 192 words (768 bytes at 4 a cycle) take longer, and its
    # latency comes before the first read and after the last write
    assert e.terms["timeloop_cycles"] == 64 >= 512 / 16
    assert e.metrics["cycles"] == 768 / 4 + 2 * 10


def test_dse_prices_a_multi_level_mapping_design_by_design(write, tmp_path):
    """dse over a mapping with both ``loops`` and ``levels``: the batch path priced the flat loops where
    ``estimate`` runs the nest analysis, 182 cycles against 52 for one point, and reported a best design hlsim
    did not confirm (an outside probe). The batch estimator now refuses ``levels``; every point is priced as
    ``estimate`` prices it."""
    import numpy as np
    from llmulator import plugins
    from llmulator_plugins.dse.evaluate import Evaluator
    from llmulator_plugins.dse.space import load_space

    mac = "      mac: {count: 16, bits: 32, latency_cycles: 1, energy_pj: 5.0, area_um2: 500, leakage_mw: 0}\n"
    rf = ("    - {name: RF, kind: regfile, capacity_kib: 0.25, width_bits: 32, instances: 16, latency_cycles: 0, "
          "read_energy_pj: 1, write_energy_pj: 1, leakage_mw: 0, double_buffered: false}\n")
    arch = ROUND.replace("  memory:\n", mac + "  memory:\n").replace("RF", rf).replace(
        "  compute:\n", "  compute:\n    pe_array: {rows: 4, cols: 4, interconnect: systolic}\n")
    levels = ("  levels:\n    - {level: DRAM, temporal: {L_m: 2}}\n"
              "    - {level: SRAM, temporal: {L_m: 4, L_n: 2, L_k: 2}, spatial: {L_n: 4, L_k: 4}}\n"
              "    - {level: RF, temporal: {}}\n")
    kernel_design(write, arch, KERNEL, ARRAYS, "    C[:] = A @ B", "{L_n: {tile: 4, spatial: cols}, L_k: {tile: 4, "
                  "spatial: rows}}", "{A: SRAM, B: SRAM, C: SRAM}", params="{M: 8, N: 8, K: 8}", extra=levels)
    s = write("s.yaml", """
space:
  version: 1
  name: lv
  base_mapping: m.yaml
  mapping:
    loops:
      L_n: {tile: [2, 4], spatial: [cols, rows]}
  hardware:
    memory:
      DRAM: {bandwidth_bytes_per_cycle: [4, 64]}
""")
    space = load_space(s, tmp_path / "arch.yaml", tmp_path / "w.yaml", mapping=str(tmp_path / "m.yaml"))
    est = plugins.get("estimators", "analytical")
    points = np.arange(space.size)
    fast = Evaluator(space, est)
    got = fast.evaluate(points)
    want = Evaluator(space, est, force_materialise=True).evaluate(points)
    assert not fast.fast
    np.testing.assert_allclose(got["cycles"], want["cycles"])
    np.testing.assert_allclose(got["energy_pj"], want["energy_pj"])


def test_without_a_mac_operator_the_lanes_are_multiplier_adder_pairs(write):
    """ROUND has 8 adders and 8 multipliers and no `mac`: a fan-out of 16 needs 16 lanes (the check did nothing
    without a `mac` operator: 512 multiply-adds priced at 32 cycles; an outside probe)."""
    rf = ("    - {name: RF, kind: regfile, capacity_kib: 0.25, width_bits: 32, instances: 16, latency_cycles: 0, "
          "read_energy_pj: 1, write_energy_pj: 1, leakage_mw: 0, double_buffered: false}\n")
    levels = ("  levels:\n    - {level: DRAM, temporal: {L_m: 2}}\n"
              "    - {level: SRAM, temporal: {L_m: 2}, spatial: {L_n: 8, L_m: 2}}\n"
              "    - {level: RF, temporal: {L_k: 8}}\n")
    with pytest.raises(SpecError, match="(?s)fan out to 16 MAC lanes.*8 multiplier-adder"):
        kernel_design(write, ROUND.replace("RF", rf), KERNEL, ARRAYS, "    C[:] = A @ B", "{}", "{}",
                      params="{M: 8, N: 8, K: 8}", extra=levels)


def test_an_inout_accumulator_reads_its_initial_values(write):
    """`C[m][n] += ...` with C `inout`: the first update of each element reads what C held, so DRAM sends C's 64
    words as well as A's and B's (analytical 0.56 elided the first read as Timeloop does for an output: 0 reads of
    C, and at a quarter byte a cycle 3,092 cycles where the 1,024 bytes need 4,096 after the latency; a probe)."""
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    mac = "      mac: {count: 16, bits: 32, latency_cycles: 1, energy_pj: 5.0, area_um2: 500, leakage_mw: 0}\n"
    rf = ("    - {name: RF, kind: regfile, capacity_kib: 0.25, width_bits: 32, instances: 16, latency_cycles: 0, "
          "read_energy_pj: 1, write_energy_pj: 1, leakage_mw: 0, double_buffered: false}\n")
    arch = (ROUND.replace("  memory:\n", mac + "  memory:\n").replace("RF", rf)
            .replace("bandwidth_bytes_per_cycle: 4,", "bandwidth_bytes_per_cycle: 0.25,"))
    levels = ("  levels:\n    - {level: DRAM, temporal: {L_m: 2}}\n    - {level: SRAM, temporal: {L_m: 4, L_n: 8}}\n"
              "    - {level: RF, temporal: {L_k: 8}}\n")
    d = kernel_design(write, arch, KERNEL, ARRAYS.replace("role: out", "role: inout"), "    C[:] += A @ B", "{}", "{}",
                      params="{M: 8, N: 8, K: 8}", extra=levels)
    e = AnalyticalEstimator().estimate([d])[0]
    assert e.terms["accesses.DRAM.C.reads"] == e.terms["accesses.DRAM.C.updates"] == 64
    assert e.metrics["cycles"] >= (64 * 4) * 4 / 0.25 + 10
