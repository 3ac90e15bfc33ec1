"""Memory ports in a pipelined body, against hand counts where outside probes found them wrong (hlsim 0.34):
the two sides of a branch never run together, so an element both store is one predicated store and an element
both load (of an array neither stores) one load, as an HLS tool muxes them (each took its own port: II 2 on a
one-port memory where the tool reaches 1); and accesses whose bank the schedule cannot know (a block
partition's index moving with the loop, the copies of an unrolled geometric loop, a dynamic index) share the
array's ports (they were placed in banks of their own: II below what the memory allows). Memory of one port
per bank; every array its own banks; latencies: add 3, mul 5, cmp 2, div 7, BRAM load 2, store 1."""

from __future__ import annotations

import pytest
from conftest import PROBE_ARCH, kernel_design, profiled_and_estimated

ARCH = PROBE_ARCH.replace("name: probe-arch", "name: one-port").replace("ports: 2", "ports: 1")

ARRAYS = ("    x: {shape: [N], dtype: int32, role: in}\n    a: {shape: [N], dtype: int32, role: inout}\n"
          "    b: {shape: [N], dtype: int32, role: out}")
PLACE = "{x: BRAM, a: BRAM, b: BRAM}"
INPUTS = ("    arrays:\n      x: {distribution: randint, range: [-5, 5]}\n"
          "      a: {distribution: randint, range: [0, 9]}")


@pytest.mark.parametrize("body, reference, ii", [
    # one store of b[i] either way: II 1 (it was 2)
    ("if (i % 2 == 0) {\n        b[i] = 5;\n      } else {\n        b[i] = 9;\n      }",
     "b[:] = np.where(np.arange(N) % 2 == 0, 5, 9)", 1),
    # a switch of three cases, each storing b[i], lowered to if/else: still one store
    ("switch (i % 3) {\n        case 0: b[i] = 1; break;\n        case 1: b[i] = 2; break;\n"
     "        default: b[i] = 3;\n      }", "b[:] = np.arange(N) % 3 + 1", 1),
    # x[i] loaded once for the condition; a[i] on both sides: one load, and one store of b[i]
    ("if (x[i] > 0) {\n        b[i] = a[i] * 2;\n      } else {\n        b[i] = a[i] + 1;\n      }",
     "b[:] = np.where(x > 0, a * 2, a + 1)", 1),
    # the then side stores a[i]: the else side's load of a[i] keeps its port (load, store, load: 3 uses)
    ("if (x[i] > 0) {\n        a[i] = a[i] + 1;\n      } else {\n        b[i] = a[i];\n      }",
     "b[:] = np.where(x > 0, 0, a)\n    a[:] = np.where(x > 0, a + 1, a)", 3),
])
def test_both_sides_of_a_branch_share_the_port_of_one_element(write, body, reference, ii):
    kernel = f"    L_i: for (int i = 0; i < N; i++) {{\n      {body}\n    }}"
    d = kernel_design(write, ARCH, kernel, ARRAYS, "    " + reference, "{L_i: {pipeline_ii: 1}}", PLACE,
                      params="{N: 24}", inputs=INPUTS)
    p, e = profiled_and_estimated(d)
    assert p.breakdown["ii.L_i"] == e.breakdown["ii.L_i"] == ii
    assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=0.05)


@pytest.mark.parametrize("body, loops, partition, reference, ii", [
    # a block of 12: a[i - 1], a[i], a[i + 1] share a block but at its edges; three loads on one port
    ("b[i] = a[i - 1] + a[i] + a[i + 1];", "{L_i: {pipeline_ii: 1}}", "{a: {type: block, factor: 2}}",
     "b[1:N - 1] = a[:N - 2] + a[1:N - 1] + a[2:]", 3),
    # cyclic 2: a[i] and a[i + 1] are always in different banks: II 1, as before
    ("b[i] = a[i] + a[i + 1];", "{L_i: {pipeline_ii: 1}}", "{a: {type: cyclic, factor: 2}}",
     "b[1:N - 1] = a[1:N - 1] + a[2:]", 1),
    # a dynamic index a[x[i]] may hit a[i]'s bank: both take the ports they share
    ("b[i] = a[i] + a[x[i]];", "{L_i: {pipeline_ii: 1}}", "{a: {type: cyclic, factor: 2}}",
     "b[1:N - 1] = a[1:N - 1] + a[x[1:N - 1]]", 2),
])
def test_accesses_whose_bank_is_unknown_share_the_arrays_ports(write, body, loops, partition, reference, ii):
    kernel = f"    L_i: for (int i = 1; i < N - 1; i++) {{\n      {body}\n    }}"
    inputs = ("    arrays:\n      x: {distribution: randint, range: [0, 23]}\n"
              "      a: {distribution: randint, range: [0, 9]}")
    d = kernel_design(write, ARCH, kernel, ARRAYS, "    " + reference, loops, PLACE, params="{N: 24}",
                      inputs=inputs, extra=f"  partition: {partition}")
    p, e = profiled_and_estimated(d)
    assert p.breakdown["ii.L_i"] == e.breakdown["ii.L_i"] == ii


def test_the_copies_of_an_unrolled_geometric_loop_are_not_at_offsets(write):
    """`for (i = 1; i < N; i *= 2)` unrolled twice: copies i and 2i, both even from i = 2 on, so both in bank 0 of
    a cyclic 2 partition: II 2 on one port (hlsim 0.33 banked them as i and i + 1: II 1)."""
    kernel = "    L_g: for (int i = 1; i < N; i *= 2) {\n      b[i] = a[i] + 1;\n    }"
    ref = "    for i in [1, 2, 4, 8, 16]:\n        b[i] = a[i] + 1"
    d = kernel_design(write, ARCH, kernel, ARRAYS, ref, "{L_g: {pipeline_ii: 1, unroll: 2}}", PLACE,
                      params="{N: 24}", inputs=INPUTS, extra="  partition: {a: {type: cyclic, factor: 2}, "
                      "b: {type: cyclic, factor: 2}}")
    p, e = profiled_and_estimated(d)
    assert p.breakdown["ii.L_g"] == e.breakdown["ii.L_g"] == 2


WIDE_ARRAYS = ("    A: {shape: [N], dtype: int64, role: in}\n    B: {shape: [N], dtype: int64, role: in}\n"
               "    C: {shape: [N], dtype: int64, role: out}")


@pytest.mark.parametrize("width, ports, ii, compute", [
    # an int64 element spans two words of a 32-bit port: each access holds its one port two cycles (probe 18;
    # hlsim 0.37 issued it in one cycle, II 1, while the energy and the bandwidth counted both words).
    # Hand count: II 2; depth = load 2 cycles (second word a cycle later, latency 1) + add 1 + store 2 = 5;
    # 15 x 2 + 5 = 35
    (32, 1, 2, 35),
    # two ports move both words in one cycle: II 1, depth 1 + 1 + 1 = 3; 15 + 3 = 18
    (32, 2, 1, 18),
    # a 64-bit port: one word per element, II 1, 18 cycles
    (64, 1, 1, 18),
])
def test_an_element_wider_than_the_port_takes_it_once_per_word(write, width, ports, ii, compute):
    from conftest import ROUND
    arch = ROUND.replace("RF", "").replace("width_bits: 32, banks: 8, ports: 1",
                                           f"width_bits: {width}, banks: 8, ports: {ports}")
    kernel = "    L_i: for (int i = 0; i < N; i++) {\n      C[i] = A[i] + B[i];\n    }"
    d = kernel_design(write, arch, kernel, WIDE_ARRAYS, "    C[:] = A + B", "{L_i: {pipeline_ii: 1}}",
                      "{A: SRAM, B: SRAM, C: SRAM}", params="{N: 16}",
                      inputs="    arrays:\n      A: {distribution: randint, range: [-9, 9]}\n"
                             "      B: {distribution: randint, range: [-9, 9]}")
    p, e = profiled_and_estimated(d)
    assert p.breakdown["ii.L_i"] == e.breakdown["ii.L_i"] == ii
    assert p.breakdown["compute_cycles.L_i"] == compute
