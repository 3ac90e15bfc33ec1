"""Energy rules an outside audit counted by hand (hlsim 0.29, the analytical model with it): the operator units
that leak are the ones the design allocates (as its area counts them), the operands passing the register file
are priced per bit of its width (as every level's accesses are), and a PE array's switching energy follows the
data of the input variant being priced. Round-number architecture: add 0.01 mW, mul 0.1 mW, cmp 0.01 mW
leakage, an SRAM of 1 mW, a register file of 1 / 2 pJ per 32-bit read / write."""

from __future__ import annotations

import pytest
from conftest import ROUND, profiled_and_estimated
from llmulator.design import load_design

RF = ("    - {name: RF, kind: regfile, capacity_kib: 0.125, width_bits: 32, latency_cycles: 0, read_energy_pj: 1.0,\n"
      "       write_energy_pj: 2.0, leakage_mw: 0, area_um2: 500}\n")
VADD = """
workload:
  version: 1
  name: vadd
  parameters: {N: 256}
  arrays:
    A: {shape: [N], dtype: DT, role: in}
    B: {shape: [N], dtype: DT, role: in}
    C: {shape: [N], dtype: DT, role: out}
  kernel: |
    L_i: for (int i = 0; i < N; i++) {
      C[i] = A[i] + B[i];
    }
  inputs:
    arrays:
      A: {distribution: randint, range: [-50, 50]}
      B: {distribution: randint, range: [-50, 50]}
  reference: |
    C[:] = A + B
"""
MAP = """
mapping:
  version: 1
  name: vadd-sram
  workload: vadd
  loops:
    L_i: {pipeline_ii: 1}
  placement: {A: SRAM, B: SRAM, C: SRAM}
"""


def _vadd(write, dtype: str = "int32", rf: bool = False):
    return load_design(write("a.yaml", ROUND.replace("RF", RF if rf else "")),
                       write("w.yaml", VADD.replace("DT", dtype)), write("m.yaml", MAP))


def test_only_the_allocated_units_leak(write):
    """A pipelined vector add allocates one adder (and no multiplier, no comparator: the loop counter is free):
    1 x 0.01 mW + the SRAM's 1 mW = 1.01 mW over the run. Before, every unit the architecture lists leaked:
    8 adders, 8 multipliers, 4 comparators and the SRAM, 1.92 mW."""
    p, e = profiled_and_estimated(_vadd(write))
    assert p.counters["units.add"] == 1 and p.counters["units.mul"] == 0
    for r in (p, e):
        assert r.breakdown["energy_pj.leakage"] == pytest.approx(1.01 * p.metrics["cycles"] / 100 * 1e3)
        assert r.breakdown["area_um2.op.add"] == 100 and r.breakdown["area_um2.op.mul"] == 0


@pytest.mark.parametrize("dtype, want", [("int8", 256.0), ("int32", 1024.0), ("int64", 2048.0)])
def test_register_file_operands_cost_their_bits(write, dtype, want):
    """The operands of 256 adds pass the 32-bit register file: 512 loads and 256 stores of the element width,
    (512 x bits x 1 pJ + 256 x bits x 2 pJ) / 32 bits: 256 pJ for int8, 1,024 for int32, 2,048 for int64.
    Before, every operand cost one 32-bit access whatever its width (1,024 pJ for all three)."""
    p, e = profiled_and_estimated(_vadd(write, dtype, rf=True))
    assert p.breakdown["energy_pj.RF"] == pytest.approx(want)
    assert e.breakdown["energy_pj.RF"] == pytest.approx(want)


@pytest.mark.parametrize("dtype, want", [("int8", 13_440.0), ("int16", 16_640.0), ("int32", 23_040.0)])
def test_a_scalar_access_takes_its_sram_port_for_a_whole_word(write, dtype, want):
    """256 adds on an unpartitioned 32-bit SRAM port: 512 loads and 256 stores, each a port access of its own
    (the schedule packs no neighbours: int8 runs at II 1 per port use as int32 does), so each costs a whole
    word: 512 x 10 + 256 x 20 = 10,240 pJ whatever the width. The tile transfers fill and drain the SRAM in
    packed words (bits / 32): A and B in, 512 elements x 20 pJ, C out, 256 x 10 pJ, x bits / 32: 3,200 pJ at
    int8, 6,400 at int16, 12,800 at int32. Before hlsim 0.35 the datapath's int8 accesses cost 8/32 of a word
    (5,760 pJ in all, probe 14 #5)."""
    d = _vadd(write, dtype)
    p, e = profiled_and_estimated(d)
    assert p.counters["reads.SRAM"] == 512 + 256 and p.counters["writes.SRAM"] == 256 + 512
    assert p.breakdown["energy_pj.SRAM"] == pytest.approx(want)
    assert e.breakdown["energy_pj.SRAM"] == pytest.approx(want)


SYS = """
architecture:
  version: 1
  name: sys4w16
  clock_mhz: 100
  technology: osu018
  compute:
    pe_array: {rows: 4, cols: 4, interconnect: systolic}
    operators:
      mac: {count: 16, bits: 16, latency_cycles: 1}
      add: {count: 4, bits: 32, latency_cycles: 1}
      mul: {count: 4, bits: 32, latency_cycles: 1}
      cmp: {count: 4, bits: 32, latency_cycles: 1}
  memory:
    - {name: DRAM, kind: dram, width_bits: 64, bandwidth_bytes_per_cycle: 8, latency_cycles: 20}
    - {name: GLB, kind: sram, capacity_kib: 32, width_bits: 64, banks: 4, ports: 2, latency_cycles: 1}
    - {name: PE_REG, kind: regfile, capacity_kib: 0.0078125, width_bits: 32, instances: 16, latency_cycles: 0}
"""
GEMM = """
workload:
  version: 1
  name: gemmv
  parameters: {M: 16, N: 16, K: 16}
  arrays:
    A: {shape: [M, K], dtype: int8, role: in}
    B: {shape: [K, N], dtype: int8, role: in}
    C: {shape: [M, N], dtype: int32, role: out}
  kernel: |
    L_m: for (int m = 0; m < M; m++) {
      L_n: for (int n = 0; n < N; n++) {
        L_k: for (int k = 0; k < K; k++) {
          C[m][n] += A[m][k] * B[k][n];
        }
      }
    }
  inputs:
    seed: 1
    arrays:
      A: {distribution: randint, range: [LO, 127]}
      B: {distribution: randint, range: [LO, 127]}
    variants:
      narrow:
        arrays:
          A: {distribution: randint, range: [0, 15]}
          B: {distribution: randint, range: [0, 15]}
  reference: |
    C[:] = A.astype(np.int32) @ B.astype(np.int32)
"""
GEMM_MAP = """
mapping:
  version: 1
  name: gemm-ws4
  workload: gemmv
  loops:
    L_k: {tile: 4, spatial: rows}
    L_n: {tile: 4, spatial: cols}
    L_m: {pipeline_ii: 1}
  order: [L_n, L_k, L_m]
  placement: {A: GLB, B: GLB, C: GLB}
"""


def test_a_variants_data_range_prices_the_pe_array(write):
    """The PE array's switching energy follows the declared data range (docs/technology.md): the `narrow`
    variant (0..15) must cost what the same range declared as the base inputs costs, not the base's
    -128..127 (2.3x more: the variant was priced at the base range before hlsim 0.29)."""
    a, m = write("a.yaml", SYS), write("m.yaml", GEMM_MAP)
    wide = write("w.yaml", GEMM.replace("[LO, 127]", "[-128, 127]"))
    narrow_base = write("wn.yaml", GEMM.replace("[LO, 127]", "[0, 15]"))
    as_variant = profiled_and_estimated(load_design(a, wide, m, variant="narrow"))
    as_base = profiled_and_estimated(load_design(a, narrow_base, m))
    full = profiled_and_estimated(load_design(a, wide, m))
    for k in range(2):
        got, want = as_variant[k].breakdown["energy_pj.pe_array"], as_base[k].breakdown["energy_pj.pe_array"]
        assert got == pytest.approx(want)
        assert full[k].breakdown["energy_pj.pe_array"] > 2 * want


@pytest.mark.parametrize("banks, want_pj", [(1, 50.0), (32, 10.0), (256, 5 * 2 ** 0.5 / 2), (1024, 5 * 2 ** 0.5 / 4)])
def test_sram_default_access_energy_is_one_banks(write, banks, want_pj):
    """The 45 nm table's SRAM figures are per array (Horowitz: 8 KiB 10 pJ, 32 KiB 20 pJ, 1 MiB 100 pJ per
    64 bits, linear in log capacity between), and an access activates one bank: a 1,024 KiB level of 32 banks
    pays a 32 KiB array's 20 pJ per 64 bits, 10 pJ per 32-bit word; below 8 KiB the first two points' power
    law (energy ~ sqrt(capacity)): 256 banks of 4 KiB 10 x sqrt(4/8) = 7.07 pJ per 64 bits, 3.54 per 32, and
    1,024 banks of 1 KiB 10 x sqrt(1/8) = 3.54 per 64 bits, 1.77 per 32 (linear in log capacity reached its
    floor, 0.25 per 32 bits, at 2 KiB: more banks made the SRAM nearly free; an outside probe, hlsim 0.37).
    Unbanked, the 1 MiB array's 100 pJ (50 per 32 bits). Before hlsim 0.35 every banking paid the whole
    level's 50 pJ (probe 14 #8)."""
    from llmulator.specs import load_architecture
    arch = load_architecture(write("a.yaml", f"""
architecture:
  version: 1
  name: banked
  clock_mhz: 100
  technology: 45nm
  compute:
    operators:
      add: {{count: 1, bits: 32}}
  memory:
    - {{name: DRAM, kind: dram, width_bits: 32}}
    - {{name: SRAM, kind: sram, capacity_kib: 1024, width_bits: 32, banks: {banks}}}
"""))
    lv = arch.level("SRAM")
    assert lv.read_energy_pj == pytest.approx(want_pj)
    assert lv.write_energy_pj == pytest.approx(want_pj)


def test_a_write_costs_the_given_read_energy_unless_its_own_is_given(write):
    """`read_energy_pj: 50` alone on the SRAM: the vector add's 512 loads and 256 stores of 32 bits (and the
    tiles' moves) all cost 50 pJ a word, as the schema says (`write_energy_pj`: "Default: as read_energy_pj");
    before hlsim 0.52 writes took the technology table's figure (an outside probe: 10 pJ, the 32 KiB table
    figure per 32 bits). Both given, each its own."""
    def sram(line: str) -> str:
        return ROUND.replace("RF", "").replace(
            "read_energy_pj: 10, write_energy_pj: 20, leakage_mw: 1.0", line)
    from llmulator.specs import load_architecture
    only_read = load_architecture(write("a.yaml", sram("read_energy_pj: 50, leakage_mw: 1.0"))).level("SRAM")
    assert only_read.write_energy_pj == only_read.read_energy_pj == 50
    both = load_architecture(write("b.yaml", sram("read_energy_pj: 50, write_energy_pj: 7, leakage_mw: 1.0")))
    assert both.level("SRAM").write_energy_pj == 7
    d = load_design(write("a.yaml", sram("read_energy_pj: 50, leakage_mw: 1.0")),
                    write("w.yaml", VADD.replace("DT", "int32")), write("m.yaml", MAP))
    p, e = profiled_and_estimated(d)
    words = p.counters["reads.SRAM"] + p.counters["writes.SRAM"]
    assert p.breakdown["energy_pj.SRAM"] == pytest.approx(50 * words)
    assert e.breakdown["energy_pj.SRAM"] == pytest.approx(50 * words)
