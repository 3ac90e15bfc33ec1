"""Where the consumers of loop-carried values go in a pipelined body (``llmulator.list_schedule.respect_carried``),
against legal modulo schedules counted by hand (an outside probe of hlsim 0.39, whose rescheduling let a producer
lose its unit round after round and kept stale releases: up to 48 % over), and integer workload scalars (0.39 took
every scalar as floating point, so `s += a[i] * c` with an int32 c never became an integer MAC). Latencies: add 2,
mul 3 (one multiplier), mac 3, BRAM load 2."""

from __future__ import annotations

import pytest
from conftest import kernel_design, profiled_and_estimated
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


def _design(write, kernel: str, reference: str, muls: int = 1, more: str = "",
            placement: str = "{a: BRAM, b: BRAM}"):
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
{more}  kernel: |
{kernel}
  reference: |
{reference}
""")
    m = write("m.yaml", "mapping:\n  version: 1\n  name: m\n  loops: {L_i: {pipeline_ii: 1}}\n"
                        f"  placement: {placement}\n")
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


def test_a_chain_on_one_unit_takes_different_slots_modulo_the_ii(write):
    """`b[i] = a[i] * c * c * c` on one multiplier: ResMII 3. The iterations in flight share the unit, so at II 3
    the three multiplies must issue in three different cycles mod 3: load at 0 (ready 2), multiplies at 2 (slot
    2), 6 (slot 0; 5 is slot 2 again), 10 (slot 1), the store at 13: depth 14, 14 + 31 x 3 = 107. Before hlsim
    0.42 they issued at 2, 5 and 8, all in slot 2 (three issues a cycle on one unit; depth 12, 105: an outside
    probe)."""
    kernel = "    L_i: for (int i = 0; i < N; i++) {\n      b[i] = a[i] * c * c * c;\n    }"
    p, e = profiled_and_estimated(_design(write, kernel, "    b[:] = a * 27"))
    assert (p.breakdown["ii.L_i"], p.breakdown["depth.L_i"], p.breakdown["compute_cycles.L_i"]) == (3, 14, 107)
    assert e.metrics["cycles"] == p.metrics["cycles"]


def test_a_recurrence_spread_by_its_port_runs_at_the_ii_that_keeps_it(write):
    """`while (j > 0 && a[j - 1] < 100) { a[j] = a[j - 1]; j--; }` pipelined on a one-port BRAM, 31 trips. Each
    iteration loads a[j - 1] twice (the test's and the body's) and stores a[j] after both loads (2 cycles each):
    three issues on the port, MemMII 3, and the store must finish (1 cycle) before the next iteration's loads,
    one II later. At II 3 the store issues at >= the later load + 2 and <= the earlier load + 2: both loads in one
    cycle, which one port cannot give. At II 4: loads at 0 and 1, store at 3, depth 4; 4 + 30 x 4 + the exit test
    (4) = 128. Before hlsim 0.42 the rescheduling crept the consumers a cycle a round at II 3 and kept a schedule
    that broke the dependence (depth 19, 113: one II short a trip)."""
    kernel = ("    int j = N - 1;\n    L_j: while (j > 0 && a[j - 1] < 100) {\n      a[j] = a[j - 1];\n      j--;\n"
              "    }\n    b[0] = j;")
    arrays = "    a: {shape: [N], dtype: int32, role: inout}\n    b: {shape: [N], dtype: int32, role: out}"
    arch = ARCH.replace("MULS", "1").replace("ports: 2", "ports: 1").replace(
        "      select:", "      logic: {count: 4, bits: 32, numeric: int, latency_cycles: 1}\n      select:")
    d = kernel_design(write, arch, kernel, arrays,
                      "    a[1:] = a[:-1].copy()\n    b[0] = 0", "{L_j: {pipeline_ii: 1}}", "{a: BRAM, b: BRAM}",
                      params="{N: 32}", hints="{L_j: {expected_trips: N - 1}}",
                      inputs="    arrays:\n      a: {distribution: constant, value: 5}")
    p, e = profiled_and_estimated(d)
    assert p.counters["iterations.L_j"] == 31
    assert (p.breakdown["ii.L_j"], p.breakdown["depth.L_j"], p.breakdown["compute_cycles.L_j"]) == (4, 4, 128)
    assert e.metrics["cycles"] == p.metrics["cycles"]



def test_a_recurrence_with_slack_starts_late_enough_to_leave_its_slot(write):
    """`s = s * c; b[i] = a[i] * c * c;` on one multiplier: three multiplies, II 3. Starting s's multiply at 0 (slot
    0) leaves b's second multiply, ready at 5 (slot 2, b's first), only slot 1: 7, the store 10, depth 11. s's
    multiply at 1 (slot 1; ready at 4, one II later, on time) lets it take slot 0 at 6: the store at 9, depth 10,
    10 + 31 x 3 = 103. Before 2026-12-06 the greedy rounds always started a recurrence at its earliest cycle
    (depth 11, 104; an outside probe counted the legal 10)."""
    kernel = ("    int s = 1;\n    L_i: for (int i = 0; i < N; i++) {\n      s = s * c;\n      b[i] = a[i] * c * c;\n"
              "    }\n    o[0] = s;")
    ref = "    b[:] = a * 9\n    o[0] = np.int32(np.uint32(pow(3, N, 2**32)))"
    d = _design(write, kernel, ref, more="    o: {shape: [1], dtype: int32, role: out}\n",
                placement="{a: BRAM, b: BRAM, o: BRAM}")
    p, e = profiled_and_estimated(d)
    assert (p.breakdown["ii.L_i"], p.breakdown["depth.L_i"], p.breakdown["compute_cycles.L_i"]) == (3, 10, 103)
    assert e.metrics["cycles"] == p.metrics["cycles"]


def test_a_carried_load_moves_earlier_to_close_its_recurrence_sooner(write):
    """`a[i] = a[i - 2] + a[i - 1]` on a one-port BRAM, 30 trips: two loads and a store on the port, and the store
    must finish before the next iteration's load of a[i - 1]. At II 5: a[i - 2] at 0 (slot 0), a[i - 1] at 2
    (slot 2), the add at 4, the store at 6 (slot 1), finished at 7 = 2 + II: depth 7, 7 + 29 x 5 = 152. The greedy
    rounds settled on the load at 3, the store at 7 (depth 8, 153; an outside probe counted the legal 7)."""
    kernel = "    L_i: for (int i = 2; i < N; i++) {\n      a[i] = a[i - 2] + a[i - 1];\n    }"
    ref = "    for i in range(2, N):\n        a[i] = a[i - 2] + a[i - 1]"
    arrays = "    a: {shape: [N], dtype: int32, role: inout}"
    arch = ARCH.replace("MULS", "1").replace("ports: 2", "ports: 1")
    d = kernel_design(write, arch, kernel, arrays, ref, "{L_i: {pipeline_ii: 1}}", "{a: BRAM}", params="{N: 32}",
                      inputs="    arrays:\n      a: {distribution: randint, range: [0, 9]}")
    p, e = profiled_and_estimated(d)
    assert (p.breakdown["ii.L_i"], p.breakdown["depth.L_i"], p.breakdown["compute_cycles.L_i"]) == (5, 7, 152)
    assert e.metrics["cycles"] == p.metrics["cycles"]
