"""Where the consumers of loop-carried values go in a pipelined body (``llmulator.list_schedule.respect_carried``),
against legal modulo schedules counted by hand (an outside probe of hlsim 0.39, whose rescheduling let a producer
lose its unit round after round and kept stale releases: up to 48 % over), and integer workload scalars (0.39 took
every scalar as floating point, so `s += a[i] * c` with an int32 c never became an integer MAC). Latencies: add 2,
mul 3 (one multiplier), mac 3, BRAM load 2."""

from __future__ import annotations

import pytest
from conftest import profiled_and_estimated
from llmulator.design import load_design

ARCH = """
architecture:
  version: 1
  name: one-mul
  clock_mhz: 250
  technology: 45nm
  compute:
    operators:
      mac: {count: 4, bits: 32, numeric: int, latency_cycles: 3}
      add: {count: 4, bits: 32, numeric: int, latency_cycles: 2}
      mul: {count: MULS, bits: 32, numeric: int, latency_cycles: 3}
      cmp: {count: 4, bits: 32, numeric: int, latency_cycles: 1}
      select: {count: 16, bits: 32, numeric: int, latency_cycles: 0}
  memory:
    - {name: DRAM, kind: dram, width_bits: 512, bandwidth_bytes_per_cycle: 64, latency_cycles: 60}
    - {name: BRAM, kind: sram, capacity_kib: 1024, width_bits: 32, banks: 64, ports: 2, latency_cycles: 2,
       double_buffered: true}
"""


def _design(write, kernel: str, reference: str, muls: int = 1):
    w = write("w.yaml", f"""
workload:
  version: 1
  name: w
  parameters: {{N: 32}}
  scalars:
    c: {{dtype: int32, value: 3}}
  arrays:
    a: {{shape: [N], dtype: int32, role: in}}
    b: {{shape: [N], dtype: int32, role: out}}
  kernel: |
{kernel}
  reference: |
{reference}
""")
    m = write("m.yaml", "mapping:\n  version: 1\n  name: m\n  loops: {L_i: {pipeline_ii: 1}}\n"
                        "  placement: {a: BRAM, b: BRAM}\n")
    return load_design(write("a.yaml", ARCH.replace("MULS", str(muls))), w, m)


def test_a_carried_producer_is_not_starved_of_its_unit(write):
    """`t = s + c; b[i] = t * 5 + c + c + c; s = t * 7;` on one multiplier: RecMII 5 (add 2 + mul 3). A legal
    schedule at II 5: the add at 0, s's multiply at 2 (ready at 5 = 0 + II: the next add may start on time), b's
    at 3, its three adds 6 -> 12, the store 13: depth 13, 13 + 31 x 5 = 168. hlsim 0.39 gave b's multiply (the
    longer tail) the unit first every round and released the add a cycle later each time: depth 28, 183."""
    kernel = ("    int s = 1;\n    L_i: for (int i = 0; i < N; i++) {\n      int t = s + c;\n"
              "      b[i] = t * 5 + c + c + c;\n      s = t * 7;\n    }")
    reference = ("    s = 1\n    for i in range(N):\n        t = (s + 3) & 0xFFFFFFFF\n"
                 "        b[i] = np.int32(np.uint32((t * 5 + 9) & 0xFFFFFFFF))\n        s = (t * 7) & 0xFFFFFFFF")
    p, e = profiled_and_estimated(_design(write, kernel, reference))
    assert (p.breakdown["ii.L_i"], p.breakdown["depth.L_i"], p.breakdown["compute_cycles.L_i"]) == (5, 13, 168)
    assert e.metrics["cycles"] == p.metrics["cycles"]


@pytest.mark.parametrize("operand", ["c", "3"])
def test_an_int_scalar_multiplies_on_the_integer_mac(write, operand):
    """`s += a[i] * c` with c an int32 scalar is the same integer multiply-accumulate as `s += a[i] * 3`: one MAC
    an iteration (0.39: a float mul and add, since every scalar counted as floating point)."""
    kernel = (f"    int s = 0;\n    L_i: for (int i = 0; i < N; i++) {{\n      s += a[i] * {operand};\n    }}\n"
              "    b[0] = s;")
    p, _ = profiled_and_estimated(_design(write, kernel, "    b[0] = (a.astype(np.int64) * 3).sum()", muls=4))
    assert p.counters["ops.mac"] == 32 and p.counters.get("ops.mul", 0) == 0
