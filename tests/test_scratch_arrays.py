"""A `temp` array that fits its level lives there: nothing outside the chip fills it or reads it back, so it
moves no DRAM words (hlsim 0.23; before, every nest loaded it from DRAM and wrote it back: the outside
sieve's scratch was 81 % of its energy). Hand counts: the DRAM words are the inputs read once and the
outputs written once. And a negated literal is a constant, not an operation."""
from __future__ import annotations

import pytest
from conftest import kernel_design
from llmulator import plugins
from llmulator.library import resolve

ARCH = resolve("architecture", "hls-fpga").read_text()
ARRAYS = ("    x: {shape: [N], dtype: int32, role: in}\n    t: {shape: [N], dtype: int32, role: temp}\n"
          "    y: {shape: [N], dtype: int32, role: out}")
KERNEL = ("    L_a: for (int i = 0; i < N; i++) {\n      t[i] = x[i] * 2;\n    }\n"
          "    L_b: for (int i = 0; i < N; i++) {\n      y[i] = t[N - 1 - i] + 1;\n    }")
REF = "    y[:] = (x * 2)[::-1] + 1"


def _counts(write, placement: str) -> dict:
    d = kernel_design(write, ARCH, KERNEL, ARRAYS, REF, "{}", placement, params="{N: 64}")
    p = plugins.get("profilers", "hlsim").profile(d)
    assert p.functional_check.startswith("pass"), p.functional_check
    return p.counters


def test_a_scratch_array_on_chip_moves_no_dram_words(write):
    c = _counts(write, "{x: BRAM, t: BRAM, y: BRAM}")
    assert c["reads.DRAM"] == 64 and c["writes.DRAM"] == 64  # x in once, y out once; t never


def test_a_scratch_array_placed_in_dram_is_read_and_written_there(write):
    c = _counts(write, "{x: BRAM, t: DRAM, y: BRAM}")
    assert c["reads.DRAM"] >= 64 + 64 and c["writes.DRAM"] >= 64 + 64  # t's words are DRAM accesses


@pytest.mark.parametrize("cond, adds", [("x[i] != -1", 0), ("x[i] != -N", 0), ("-x[i] != 1", 1),
                                        ("x[i] < N - 1", 0), ("x[i] < (N / 2) * 3 + 1", 0), ("x[i] + 1 < N", 1)])
def test_a_constant_expression_is_folded(write, cond, adds):
    """Literals and parameters (`#define`d in the rendered C) fold at compile time: `N - 1` in a condition is no
    add (hlsim before 0.25 charged it on every execution: +23 % on an outside probe's stencil); an expression
    with data in it is one."""
    kernel = f"    L_a: for (int i = 0; i < N; i++) {{\n      y[i] = {cond} ? 1 : 0;\n    }}"
    arrays = "    x: {shape: [N], dtype: int32, role: in}\n    y: {shape: [N], dtype: int32, role: out}"
    d = kernel_design(write, ARCH, kernel, arrays, "    pass", "{}", "{x: BRAM, y: BRAM}", params="{N: 64}")
    st = next(n for n in d.tree.walk() if getattr(n, "kind", "") == "stmt")
    assert st.ops.get("add", 0) == adds and st.ops.get("cmp", 0) == 1


def test_an_edge_tile_moves_only_the_elements_it_holds(write):
    """N = 10 in tiles of 4: tiles of 4, 4 and 2 elements, so x is read and y written back 10 words each,
    not 3 x 4 = 12 (hlsim before 0.23 moved every edge tile as a full one: 20 % more DRAM writes on an outside
    probe's 10 x 5 GEMM in tiles of 2)."""
    kernel = "    L_a: for (int i = 0; i < N; i++) {\n      y[i] = x[i] * 2;\n    }"
    arrays = "    x: {shape: [N], dtype: int32, role: in}\n    y: {shape: [N], dtype: int32, role: out}"
    d = kernel_design(write, ARCH, kernel, arrays, "    y[:] = x * 2", "{L_a: {tile: 4}}", "{x: BRAM, y: BRAM}",
                      params="{N: 10}")
    p = plugins.get("profilers", "hlsim").profile(d)
    assert p.functional_check.startswith("pass"), p.functional_check
    assert p.counters["reads.DRAM"] == 10 and p.counters["writes.DRAM"] == 10

