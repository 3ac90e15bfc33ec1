"""Pipelined or unrolled bodies too large to schedule node by node (``llmulator.schedule.MAX_NODES`` nodes) get
a closed form (``Timing._large``); it must not lose the chains their recurrences force. An outside probe of hlsim
0.42's first cut: `s = s + a[i]` unrolled 1,334 times ran in 4,672 cycles where its 8,192 adds chain 16,384 (one
copy more than the 1,333 scheduled node by node, 18,664). Hand counts (the probe's legal schedules): add 2
cycles, BRAM load 2, store 1."""

from __future__ import annotations

import pytest
from conftest import kernel_design, profiled_and_estimated
from llmulator.schedule import MAX_NODES
from test_carried_placement import ARCH

ARCH_64 = ARCH.replace("MULS", "1").replace(
    "      select:", "      logic: {count: 4, bits: 32, numeric: int, latency_cycles: 1}\n      select:")


def _run(write, kernel, arrays, reference, loops, params, placement):
    d = kernel_design(write, ARCH_64, kernel, arrays, reference, loops, placement, params=params,
                      inputs="    arrays:\n      " + arrays.split(":")[0].strip() + ": {distribution: randint, "
                             "range: [0, 9]}")
    p, e = profiled_and_estimated(d)
    assert e.metrics["cycles"] == p.metrics["cycles"]
    return p


def test_an_unrolled_accumulation_chains_its_copies(write):
    """1,334 copies of `s = s + a[i]` (8,192 iterations, 7 groups): each copy's add waits for the one before, so a
    group takes 1,334 x 2 = 2,668 cycles (RecMII) and the loop at least 8,192 x 2; by hand 2,670 + 6 x 2,668 =
    18,678 (the closed form: 18,676)."""
    arrays = "    a: {shape: [N], dtype: int32, role: in}\n    o: {shape: [1], dtype: int32, role: out}"
    kernel = "    int s = 0;\n    L_i: for (int i = 0; i < N; i++) {\n      s = s + a[i];\n    }\n    o[0] = s;"
    p = _run(write, kernel, arrays, "    o[0] = a.sum()", "{L_i: {pipeline_ii: 1, unroll: 1334}}", "{N: 8192}",
             "{a: BRAM, o: BRAM}")
    assert 1334 * 3 > MAX_NODES  # (a load and an add a copy, and the exit's)
    assert p.breakdown["ii.L_i"] == 2668
    assert 8192 * 2 <= p.breakdown["compute_cycles.L_i"] == pytest.approx(18678, rel=1e-3)


def test_an_inner_reduction_unrolled_in_a_pipelined_body_is_its_depth(write):
    """A pipelined L_i over `s = s + x[i][j]`, M = 2,048: the inner loop runs unrolled in the body, 2,048 adds in
    a chain: depth >= 4,096 (by hand 4,099), II 1,024 (2,048 adds on 4 adders need 512; 2,048 loads on 2 ports
    1,024); 4 rows: 4,099 + 3 x 1,024 = 7,171 by hand."""
    arrays = "    x: {shape: [N, M], dtype: int32, role: in}\n    b: {shape: [N], dtype: int32, role: out}"
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      int s = 0;\n      L_j: for (int j = 0; j < M; j++) {\n"
              "        s = s + x[i][j];\n      }\n      b[i] = s;\n    }")
    p = _run(write, kernel, arrays, "    b[:] = x.sum(axis=1)", "{L_i: {pipeline_ii: 1}}", "{N: 4, M: 2048}",
             "{x: BRAM, b: BRAM}")
    assert p.breakdown["ii.L_i"] == 1024
    assert 4096 <= p.breakdown["depth.L_i"] <= 4099
    assert p.breakdown["compute_cycles.L_i"] == pytest.approx(7171, rel=1e-3)


def test_a_recurrence_through_memory_chains_the_copies(write):
    """`a[i] = a[i - 1] + x[i]` unrolled 1,024 times: each copy loads what the one before stored (store 1 + load 2
    + add 2 = 5 cycles a copy), so a group takes 5,120 cycles: 8 groups, 40,960 by hand."""
    arrays = "    a: {shape: [N], dtype: int32, role: inout}\n    x: {shape: [N], dtype: int32, role: in}"
    kernel = "    L_i: for (int i = 1; i < N; i++) {\n      a[i] = a[i - 1] + x[i];\n    }"
    ref = "    for i in range(1, N):\n        a[i] = a[i - 1] + x[i]"
    p = _run(write, kernel, arrays, ref, "{L_i: {pipeline_ii: 1, unroll: 1024}}", "{N: 8193}", "{a: BRAM, x: BRAM}")
    assert p.breakdown["ii.L_i"] == 5120 and p.breakdown["compute_cycles.L_i"] == 40960
