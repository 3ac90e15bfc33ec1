"""A multi-level mapping's (``mapping.levels``) tiles against each level's capacity, checked by ``validate``: before,
only the analytical tiling (``estimate``) refused tiles that overflow a level, so ``validate`` and hlsim accepted a
design ``estimate`` refused (an outside probe). Hand counts: an 8x8x8 GEMM, ``L_k`` 8 at the RF keeps one row of
A's 8, one column of B's 8 and one C word: 17 words; the SRAM's 4 x 8 (spatial) ``L_m`` x ``L_n`` over it keeps
A 4x8 = 32, B 8x8 = 64, C 4x8 = 32: 128 words."""

from __future__ import annotations

import pytest
from conftest import ROUND, kernel_design
from llmulator.errors import SpecError

KERNEL = ("    L_m: for (int m = 0; m < M; m++) {\n      L_n: for (int n = 0; n < N; n++) {\n"
          "        L_k: for (int k = 0; k < K; k++) {\n          C[m][n] += A[m][k] * B[k][n];\n"
          "        }\n      }\n    }")
ARRAYS = ("    A: {shape: [M, K], dtype: int32, role: in}\n    B: {shape: [K, N], dtype: int32, role: in}\n"
          "    C: {shape: [M, N], dtype: int32, role: out}")


def _design(write, rf_words: int, sram_kib: float = 16, rf_keep: str = ""):
    mac = "      mac: {count: 16, bits: 32, latency_cycles: 1, energy_pj: 5.0, area_um2: 500, leakage_mw: 0}\n"
    rf = (f"    - {{name: RF, kind: regfile, capacity_kib: {rf_words * 32 / 8192!r}, width_bits: 32, instances: 16, "
          "latency_cycles: 0, read_energy_pj: 1, write_energy_pj: 1, leakage_mw: 0, double_buffered: false}\n")
    arch = ROUND.replace("  memory:\n", mac + "  memory:\n").replace("RF", rf)
    arch = arch.replace("kind: sram, capacity_kib: 16,", f"kind: sram, capacity_kib: {sram_kib!r},")
    levels = ("  levels:\n    - {level: DRAM, temporal: {L_m: 2}}\n"
              "    - {level: SRAM, temporal: {L_m: 4}, spatial: {L_n: 8}}\n"
              f"    - {{level: RF, temporal: {{L_k: 8}}{rf_keep}}}\n")
    return kernel_design(write, arch, KERNEL, ARRAYS, "    C[:] = A @ B", "{}", "{}", params="{M: 8, N: 8, K: 8}",
                         extra=levels)


def test_tiles_that_fill_a_level_exactly_are_accepted_and_priced(write):
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    d = _design(write, 17, sram_kib=128 * 32 / 8192)
    assert AnalyticalEstimator().estimate([d])[0].metrics["cycles"] > 0


@pytest.mark.parametrize(("rf", "sram_kib", "message"), [
    (16, 16, "tiles kept at RF need 17 words per instance (A 8, B 8, C 1), more than its capacity of 16 words"),
    (64, 127 * 32 / 8192, "tiles kept at SRAM need 128 words per instance (B 64, A 32, C 32), more than its "
                          "capacity of 127 words"),
])
def test_tiles_over_a_level_are_refused_by_validation(write, rf, sram_kib, message):
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")) as ei:
        _design(write, rf, sram_kib=sram_kib)
    assert "m.yaml" in str(ei.value)  # at the mapping's levels entry


def test_a_bypassed_array_takes_no_room(write):
    """Without C the RF keeps 16 words: 16 fit."""
    _design(write, 16, rf_keep=", bypass: [C]")
