"""Statements and loops under an `if` outside every loop (an outside user found them half-priced): hlsim ran
them but moved none of their elements to or from DRAM (a loop under such an `if`: 0 DRAM words for a whole
vector add), and the analytical model counted their cycles only (no operation, no access)."""
from __future__ import annotations

import pytest
from conftest import kernel_design, profiled_and_estimated
from llmulator.library import resolve

ARCH = resolve("architecture", "hls-fpga").read_text()
ARRAYS = ("    A: {shape: [N], dtype: int32, role: in}\n    B: {shape: [N], dtype: int32, role: in}\n"
          "    C: {shape: [N], dtype: int32, role: out}\n    out: {shape: [1], dtype: int32, role: out}")
LOOP = "    L_i: for (int i = 0; i < N; i++) {\n      C[i] = A[i] + B[i];\n    }\n"
PLACE = "{A: BRAM, B: BRAM, C: BRAM, out: BRAM}"
INPUTS = ("    seed: 3\n    arrays:\n      A: {distribution: randint, range: [-10, 10]}\n"
          "      B: {distribution: randint, range: [-10, 10]}")


def test_statement_under_a_parameter_if_moves_its_elements(write):
    """`if (F > 0) out[0] = A[0]*B[0]*A[1]*B[1];` with F = 1 runs: 4 more words in (A[0..1], B[0..1]), 1 out,
    3 multiplies, exactly as the same statement in a bare block. Before: 512 and 256 words, no mul in
    the analytical model."""
    stmt = "out[0] = A[0] * B[0] * A[1] * B[1];"
    ref = "    C[:] = A + B\n    out[0] = A[0] * B[0] * A[1] * B[1]"
    guarded = kernel_design(write, ARCH, LOOP + f"    if (F > 0) {{\n      {stmt}\n    }}", ARRAYS, ref, "{}", PLACE,
                            params="{N: 64, F: 1}", inputs=INPUTS)
    p, e = profiled_and_estimated(guarded)
    for counts in (p.counters, e.breakdown):
        assert counts["reads.DRAM"] == 64 * 2 + 4 and counts["writes.DRAM"] == 64 + 1
        assert counts["ops.mul"] == 3
    bare = kernel_design(write, ARCH, LOOP + f"    {{\n      {stmt}\n    }}", ARRAYS, ref, "{}", PLACE,
                         params="{N: 64, F: 1}", inputs=INPUTS)
    pb, eb = profiled_and_estimated(bare)
    assert p.metrics["cycles"] == pb.metrics["cycles"] == e.metrics["cycles"] == eb.metrics["cycles"]
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"])


def test_data_dependent_top_level_if_weights_each_side(write):
    """`if (A[0] > 0) out[0] = A[1] + A[2]; else out[0] = 0;`: hlsim moves A[0..2] (3 words) or A[0] (1) as the
    run went; the analytical model expects 1 + 2 p words with p = 10/21 (A[0] uniform on [-10, 10]), and
    counts the condition's compare and load."""
    kernel = LOOP + "    if (A[0] > 0) {\n      out[0] = A[1] + A[2];\n    } else {\n      out[0] = 0;\n    }"
    ref = "    C[:] = A + B\n    out[0] = A[1] + A[2] if A[0] > 0 else 0"
    d = kernel_design(write, ARCH, kernel, ARRAYS, ref, "{}", PLACE, params="{N: 64}", inputs=INPUTS)
    p, e = profiled_and_estimated(d)
    taken = p.counters["ops.add"] == 64 + 1
    assert p.counters["reads.DRAM"] == 128 + (3 if taken else 1)
    assert e.breakdown["reads.DRAM"] == pytest.approx(128 + 1 + 2 * 10 / 21)
    assert e.breakdown["ops.add"] == pytest.approx(64 + 10 / 21)
    assert e.breakdown["ops.cmp"] >= 1 and p.counters["ops.cmp"] >= 1
    for counts in (p.counters, e.breakdown):
        assert counts["writes.DRAM"] == 64 + 1


@pytest.mark.parametrize("flag", [1, 0])
def test_a_loop_under_a_top_level_if_is_a_nest_where_it_runs(write, flag):
    """`if (F > 0) { L_i: for (...) C[i] = A[i] + B[i]; }` (a table built once, in outside code): with F = 1 the
    loop moves its tiles, 128 words in and 64 out, and its adds count in both models; with F = 0 nothing moves.
    Before, the loop ran and moved no word at all (0 DRAM words for a whole vector add), and the analytical
    model counted its cycles only."""
    kernel = "    if (F > 0) {\n  " + LOOP.replace("\n    ", "\n      ") + "    }"
    d = kernel_design(write, ARCH, kernel, ARRAYS, "    if F > 0:\n        C[:] = A + B", "{}", PLACE,
                      params=f"{{N: 64, F: {flag}}}", inputs=INPUTS)
    p, e = profiled_and_estimated(d)
    for counts in (p.counters, e.breakdown):
        assert counts["reads.DRAM"] == 128 * flag and counts["writes.DRAM"] == 64 * flag
        assert counts.get("ops.add", 0) == 64 * flag
    assert e.metrics["cycles"] == p.metrics["cycles"]
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"])


def test_hlsim_checks_that_arrays_on_chip_reach_the_backing_store(write):
    """The invariant that would have caught the loop under an `if`: an input read on chip with no DRAM word
    read, or an output written on chip with none written back, raises."""
    from llmulator.errors import InvariantError
    from llmulator_plugins.hlsim import bounds
    d = kernel_design(write, ARCH, LOOP, ARRAYS, "    C[:] = A + B", "{}", PLACE, params="{N: 64}")
    touched = {("A", False), ("B", False), ("C", True)}
    bounds.check_words(d, touched, {"DRAM": [2.0, 64.0, 1.0, 32.0]})
    for counts in ([1.0, 32.0, 1.0, 32.0], [2.0, 64.0, 0.0, 0.0]):
        with pytest.raises(InvariantError, match="backing store DRAM"):
            bounds.check_words(d, touched, {"DRAM": counts})

