"""A loop that steps by a constant spans its step per trip in the arrays it indexes (an outside probe of hlsim
0.45: `for (i = 0; i < N; i += 2) acc += a[i] * a[i + 1];` moved 33 of the 64 words it reads from DRAM, as if i
went up by 1, and finished before those 256 bytes could arrive on a 2-byte-a-cycle bus; the same loop written
over `k` with `a[2 * k]` moved all 64). conftest's round-figure architecture: DRAM 4 bytes a cycle, latency 10."""

from __future__ import annotations

import pytest
from conftest import ROUND, kernel_design, profiled_and_estimated

ARCH = ROUND.replace("RF", "")
ARRAYS = "    a: {shape: [N], dtype: int32, role: in}\n    s: {shape: [1], dtype: int32, role: out}"
REF = "    s[0] = int((a[0::2].astype(np.int64) * a[1::2]).sum())"
STEP = ("    int acc = 0;\n    L_i: for (int i = 0; i < N; i += 2) {\n      acc += a[i] * a[i + 1];\n    }\n"
        "    s[0] = acc;")
SCALED = ("    int acc = 0;\n    L_i: for (int k = 0; k < N / 2; k++) {\n      acc += a[2 * k] * a[2 * k + 1];\n    }\n"
          "    s[0] = acc;")


@pytest.mark.parametrize("kernel", [STEP, SCALED], ids=["i += 2", "a[2 * k]"])
def test_a_loop_stepping_by_two_moves_every_word_it_reads(write, kernel):
    d = kernel_design(write, ARCH, kernel, ARRAYS, REF, "{L_i: {pipeline_ii: 1}}", "{a: SRAM, s: SRAM}",
                      params="{N: 64}")
    p, e = profiled_and_estimated(d)
    assert p.counters["reads.DRAM"] == e.breakdown["reads.DRAM"] == 64
    # the 256 bytes cannot arrive before 10 + 256 / 4 cycles
    assert p.metrics["cycles"] == e.metrics["cycles"] >= 10 + 64
    assert p.breakdown["transfer_cycles.L_i"] == 10 + 64


def test_the_step_and_the_scaled_index_price_the_same(write):
    one, two = (profiled_and_estimated(kernel_design(write, ARCH, k, ARRAYS, REF, "{L_i: {pipeline_ii: 1}}",
                                                     "{a: SRAM, s: SRAM}", params="{N: 64}"))[0]
                for k in (STEP, SCALED))
    assert one.counters["reads.DRAM"] == two.counters["reads.DRAM"]
    assert one.breakdown["transfer_cycles.L_i"] == two.breakdown["transfer_cycles.L_i"]


def test_a_local_array_takes_no_memory_port(write):
    """`int buf[4]` declared in the kernel lives in registers: five accesses a trip (one write, four reads) on a
    loop pipelined at II 1 need no port of any level (hlsim 0.45 scheduled them on the DRAM channel, the level a
    workload array without a placement gets: II 5 with its one port; an outside probe)."""
    kernel = ("    int buf[4] = {0, 0, 0, 0};\n    L_i: for (int i = 0; i < N; i++) {\n      buf[i & 3] = a[i];\n"
              "      int mx = buf[0];\n      L_k: for (int k = 1; k < 4; k++) {\n"
              "        mx = buf[k] > mx ? buf[k] : mx;\n      }\n      m[i] = mx;\n    }")
    arrays = "    a: {shape: [N], dtype: int32, role: in}\n    m: {shape: [N], dtype: int32, role: out}"
    ref = ("    buf = [0, 0, 0, 0]\n    for i in range(N):\n        buf[i & 3] = int(a[i])\n"
           "        m[i] = max(buf)")
    select = "      select: {count: 8, bits: 32, latency_cycles: 0}\n"
    arch = ROUND.replace("RF", "").replace("ports: 1,", "ports: 2,").replace("  memory:\n", "") \
        .replace("    - {name: DRAM", select + "  memory:\n    - {name: DRAM")
    d = kernel_design(write, arch, kernel, arrays, ref, "{L_i: {pipeline_ii: 1}}", "{a: SRAM, m: SRAM}",
                      params="{N: 32}")
    p, e = profiled_and_estimated(d)
    assert p.breakdown["mem_mii.L_i"] == 1
    assert p.breakdown["ii.L_i"] == e.breakdown["ii.L_i"] == 1


@pytest.mark.parametrize(("step", "offsets", "words"), [
    (16, (0, 8), 2 * 16),   # i += 16 over a[i] and a[i + 8]: 2 of every 16 elements, 32 of 256 (0.45: 16 + 8 = 24)
    (3, (0,), 86),          # i += 3 over a[i]: every third element, 86 of 256 (the box spans 256)
    (2, (0, 1), 256),       # i += 2 over a[i] and a[i + 1]: all of them
])
def test_a_tile_holds_the_elements_its_accesses_name_at_most_its_box(write, step, offsets, words):
    terms = " + ".join(f"a[i + {o}]" if o else "a[i]" for o in offsets)
    kernel = (f"    int acc = 0;\n    L_i: for (int i = 0; i + {max(offsets)} < N; i += {step}) {{\n"
              f"      acc += {terms};\n    }}\n    s[0] = acc;")
    ref = f"    s[0] = sum(int(a[i + o]) for i in range(0, N - {max(offsets)}, {step}) for o in {offsets!r})"
    d = kernel_design(write, ARCH, kernel, ARRAYS, ref, "{L_i: {pipeline_ii: 1}}", "{a: SRAM, s: SRAM}",
                      params="{N: 256}")
    p, e = profiled_and_estimated(d)
    assert p.counters["reads.DRAM"] == e.breakdown["reads.DRAM"] == words


@pytest.mark.parametrize(("outer_step", "width"), [(2, 2), (1, 3), (4, 4)])
def test_a_sliding_window_moves_every_element_it_covers(write, outer_step, width):
    """`for (j = i; j < i + K; j++)` inside `for (i = 0; i < N; i += S)`: the window slides over the array as i
    runs, so the tile is every element some window covers, not one window (hlsim 0.45: 2 or 3 DRAM words where
    the loop reads 32; an outside probe)."""
    kernel = (f"    int acc = 0;\n    L_i: for (int i = 0; i < N - {width - 1}; i += {outer_step}) {{\n"
              f"      L_j: for (int j = i; j < i + {width}; j++) {{\n        acc += a[j];\n      }}\n    }}\n"
              "    s[0] = acc;")
    ref = (f"    s[0] = sum(int(a[j]) for i in range(0, N - {width} + 1, {outer_step}) for j in range(i, i + {width}))")
    d = kernel_design(write, ARCH, kernel, ARRAYS, ref, "{L_j: {pipeline_ii: 1}}", "{a: SRAM, s: SRAM}",
                      params="{N: 32}")
    p, e = profiled_and_estimated(d)
    covered = len({j for i in range(0, 32 - width + 1, outer_step) for j in range(i, i + width)})
    assert p.counters["reads.DRAM"] == e.breakdown["reads.DRAM"] == covered
