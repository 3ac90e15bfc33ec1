"""A statement that reads one element several times loads it once (hlsim 0.28), as an HLS compiler does:
`b[i] = a[i] * a[i] * a[i]` is one read of a[i] per iteration, on one memory port. Before, each textual read
took a port and a memory read: the loop could not reach II 1 on a two-port memory, and the memory's reads
(and their energy) were three times the hand count. The reference: the same kernel spelled with a local,
which was always priced at one read."""
from __future__ import annotations

import pytest
from conftest import kernel_design, profiled_and_estimated
from llmulator.kernel import analyze
from llmulator.library import resolve

ARCH = resolve("architecture", "hls-fpga").read_text()
ARRAYS = "    a: {shape: [N], dtype: int32, role: in}\n    b: {shape: [N], dtype: int32, role: out}"


def _design(write, body: str):
    kernel = f"    L_i: for (int i = 0; i < N; i++) {{\n{body}\n    }}"
    return kernel_design(write, ARCH, kernel, ARRAYS, "    b[:] = a * a * a", "{L_i: {pipeline_ii: 1}}",
                         "{a: BRAM, b: BRAM}")


def test_repeated_reads_of_one_element_are_one_load(write):
    cubed = _design(write, "      b[i] = a[i] * a[i] * a[i];")
    local = _design(write, "      int x = a[i];\n      b[i] = x * x * x;")
    p, e = profiled_and_estimated(cubed)
    q, _ = profiled_and_estimated(local)
    # by hand: 64 datapath reads of a, and 64 reads of b's buffer to write it back
    for counts in (p.counters, e.breakdown, q.counters):
        assert counts["reads.BRAM"] == 128
    assert p.metrics["cycles"] == q.metrics["cycles"] == e.metrics["cycles"]
    assert p.breakdown["compute_cycles.L_i"] == q.breakdown["compute_cycles.L_i"]


def test_distinct_elements_and_a_store_between_keep_their_own_loads(write):
    """Only the same element with no store to its array between is shared: `a[i] * a[i] + a[i + 1]` reads two
    elements, and in `(x = a[i], a[i] = x + 1, a[i])` the second read of a[i] follows a store to it."""
    def reads(body: str) -> list[tuple[str, ...]]:
        st = [n for n in analyze(_design(write, body).workload).walk() if getattr(n, "kind", "") == "stmt"][-1]
        return [acc.index_text for acc in st.accesses if acc.array == "a" and acc.is_read]

    assert reads("      b[i] = a[i] * a[i] + a[i + 1];") == [("i",), ("i + 1",)]
    assert reads("      int x;\n      b[i] = (x = a[i], a[i] = x + 1, a[i]);") == [("i",), ("i",)]


ONE_PORT = ARCH.replace("ports: 2", "ports: 1")
THREE = ("    a: {shape: [N], dtype: int32, role: inout}\n    b: {shape: [N], dtype: int32, role: out}\n"
         "    c: {shape: [N], dtype: int32, role: out}")


def _reads_of_a(write, body: str, reference: str, pipelined: bool = True):
    kernel = f"    L_i: for (int i = 0; i < N - 1; i++) {{\n{body}\n    }}"
    d = kernel_design(write, ONE_PORT, kernel, THREE, reference, "{L_i: {pipeline_ii: 1}}" if pipelined else "{}",
                      "{a: BRAM, b: BRAM, c: BRAM}")
    p, e = profiled_and_estimated(d)
    # 63 iterations; b and c: 63 reads each of their buffers to write them back
    return p, e, [counts["reads.BRAM"] - 2 * 63 for counts in (p.counters, e.breakdown)]


def test_a_value_the_statement_before_loaded_is_not_loaded_again(write):
    """`b[i] = a[i] + 1; c[i] = a[i] * 2;`: one load of a[i] per iteration (hlsim 0.34; each statement loaded its
    own before: 126 reads, and II 2 on a one-port memory where the compiler's load elimination reaches 1)."""
    body = "      b[i] = a[i] + 1;\n      c[i] = a[i] * 2;"
    ref = "    b[:N - 1] = a[:N - 1] + 1\n    c[:N - 1] = a[:N - 1] * 2"
    p, e, reads = _reads_of_a(write, body, ref)
    assert reads == [63, 63]
    assert p.breakdown["ii.L_i"] == e.breakdown["ii.L_i"] == 1
    assert e.metrics["cycles"] == p.metrics["cycles"]
    assert _reads_of_a(write, body, ref, pipelined=False)[2] == [63, 63]


def test_a_store_or_a_changed_subscript_between_loads_again(write):
    """A store to the array between (`a[i + 1] = ...`: aliasing is not judged), or a write of a local the
    subscript names, and the second statement loads its own."""
    stored = "      b[i] = a[i] + 1;\n      a[i + 1] = 7;\n      c[i] = a[i] * 2;"
    ref = "    for i in range(N - 1):\n        b[i] = a[i] + 1\n        a[i + 1] = 7\n        c[i] = a[i] * 2"
    assert _reads_of_a(write, stored, ref)[2] == [126 + 64] * 2  # and a's tile, 64 words, read to write it back
    moved = "      int k = i;\n      b[i] = a[k];\n      k = k + 1;\n      c[i] = a[k];"
    ref = "    b[:N - 1] = a[:N - 1]\n    c[:N - 1] = a[1:]"
    assert _reads_of_a(write, moved, ref)[2] == [126, 126]


@pytest.mark.parametrize("pipelined", [True, False])
def test_a_value_a_branch_condition_loaded_is_its_sides_too(write, pipelined):
    """`if (a[i] > 3) { b[i] = a[i] * 2; c[i] = 1; } else { b[i] = 0; c[i] = a[i]; }`: the condition's load
    of a[i] is both sides' value (it runs on every path): one read an iteration, 63 in all, as the same kernel
    spelled with a local, and the same cycles (hlsim). Before hlsim 0.42 the run of reused loads stopped at the
    branch: 126 reads, and II 3 on the one-port memory, 387 cycles where 263 (an outside probe)."""
    ref = ("    b[:N - 1] = np.where(a[:N - 1] > 3, a[:N - 1] * 2, 0)\n"
           "    c[:N - 1] = np.where(a[:N - 1] > 3, 1, a[:N - 1])")
    sides = ("      {\n        b[i] = A * 2;\n        c[i] = 1;\n      } else {\n"
             "        b[i] = 0;\n        c[i] = A;\n      }")
    p, e, reads = _reads_of_a(write, "      if (a[i] > 3)" + sides.replace("A", "a[i]"), ref, pipelined)
    q, _, local = _reads_of_a(write, "      int x = a[i];\n      if (x > 3)" + sides.replace("A", "x"), ref, pipelined)
    assert reads == local == [63, 63]
    assert p.metrics["cycles"] == q.metrics["cycles"]
    if pipelined:  # (a plain loop's branch: the analytical model takes its expected outcome, not the data's)
        assert p.breakdown["ii.L_i"] == 1 and e.metrics["cycles"] == p.metrics["cycles"]


@pytest.mark.parametrize("pipelined", [True, False])
def test_a_value_loaded_before_a_branch_is_still_loaded_after_it(write, pipelined):
    """`if (a[i] > 3) b[i] = 1; else b[i] = 0; c[i] = a[i] * 2;`: neither side stores to a, so the condition's
    load is the statement's after the branch too (GVN): one read an iteration, 63 in all, as the same kernel spelled
    with a local, and the same cycles. Before hlsim 0.48 the run started again after every branch: 126 reads, and II
    2 on the one-port memory (an outside probe). A side that stores a[i] itself leaves its value for the read after
    the branch (forwarding, hlsim 0.53; before, it loaded again: 63 reads more); one that ends in a `continue` while
    the other stores still loads again."""
    ref = "    b[:N - 1] = np.where(a[:N - 1] > 3, 1, 0)\n    c[:N - 1] = a[:N - 1] * 2"
    tail = "      {\n        b[i] = 1;\n      } else {\n        b[i] = 0;\n      }\n      c[i] = A * 2;"
    p, e, reads = _reads_of_a(write, "      if (a[i] > 3)" + tail.replace("A", "a[i]"), ref, pipelined)
    q, _, local = _reads_of_a(write, "      int x = a[i];\n      if (x > 3)" + tail.replace("A", "x"), ref, pipelined)
    assert reads == local == [63, 63]
    assert p.metrics["cycles"] == q.metrics["cycles"]
    if pipelined:
        assert p.breakdown["ii.L_i"] == e.breakdown["ii.L_i"] == 1 and e.metrics["cycles"] == p.metrics["cycles"]
    stored = ("      if (a[i] > 3) {\n        b[i] = 1;\n      } else {\n        a[i] = 0;\n      }\n"
              "      c[i] = a[i] * 2;")
    ref2 = ("    for i in range(N - 1):\n        b[i] = 1 if a[i] > 3 else b[i]\n"
            "        a[i] = a[i] if a[i] > 3 else 0\n        c[i] = a[i] * 2")
    assert _reads_of_a(write, stored, ref2, pipelined)[2][0] == 63 + 63  # the condition's, and a[0..62] written back


@pytest.mark.parametrize(("side", "ref_side"), [
    ("        k = (j = j + 1);", "            j = j + 1\n            k = j"),  # a nested assignment
    ("        c[j++] = 1;", "            c[j] = 1\n            j += 1"),  # a ++ inside another array's subscript
])
def test_a_subscript_changed_by_any_write_in_a_side_loads_again(write, side, ref_side):
    """`if (a[j] > 3) { k = (j = j + 1); } b[i] = a[j] + k;`: the side moves j, so a[j] after the branch is another
    element, read as often as the same kernel spelling it `a[j + 0]` (a text the reuse never matches), and II 2 on
    the one-port memory. Only a statement's own local (``writes_local``) killed a loaded element, not a nested
    assignment, a `j++` in another subscript or the loop variable's `i++`: 63 reads fewer and II 1 (an outside probe
    of hlsim 0.48's reuse past branches)."""
    body = f"      int j = i;\n      int k = 0;\n      if (a[j] > 3) {{\n{side}\n      }}\n      b[i] = a[J] + k;"
    ref = ("    for i in range(N - 1):\n        j, k = i, 0\n        if a[j] > 3:\n" + ref_side
           + "\n        b[i] = a[j] + k")
    p, _, reads = _reads_of_a(write, body.replace("J", "j"), ref)
    q, _, control = _reads_of_a(write, body.replace("J", "j + 0"), ref)
    assert reads == control and p.breakdown["ii.L_i"] == q.breakdown["ii.L_i"] == 2


GATHER = ("    a: {shape: [N], dtype: int32, role: in}\n    col: {shape: [N], dtype: int32, role: inout}\n"
          "    b: {shape: [N], dtype: int32, role: out}\n    c: {shape: [N], dtype: int32, role: out}")


def _gather_reads(write, body: str, reference: str):
    kernel = f"    L_i: for (int i = 0; i < N - 1; i++) {{\n{body}\n    }}"
    d = kernel_design(write, ONE_PORT, kernel, GATHER, reference, "{L_i: {pipeline_ii: 1}}",
                      "{a: BRAM, col: BRAM, b: BRAM, c: BRAM}",
                      inputs="    arrays:\n      col: {distribution: randint, range: [0, 63]}")
    p, e = profiled_and_estimated(d)
    return p, e, {counts["reads.BRAM"] for counts in (p.counters, e.breakdown)}


def test_an_indirect_element_the_statement_before_loaded_is_not_loaded_again(write):
    """`b[i] = a[col[i]] + 1; c[i] = a[col[i]] * 2;`: neither col nor a is stored between, so the second statement
    reads the first one's value (GVN): as many reads as the kernel spelled with a local, the same cycles, and II 1
    on the one-port memories. Before hlsim 0.50 an indirect element was loaded again by every statement that read
    it (63 reads more, II 2). A store to col between (`col[i + 1] = 0`) changes what a[col[i]] names: loaded again."""
    ref = "    b[:N - 1] = a[col[:N - 1]] + 1\n    c[:N - 1] = a[col[:N - 1]] * 2"
    p, e, reads = _gather_reads(write, "      b[i] = a[col[i]] + 1;\n      c[i] = a[col[i]] * 2;", ref)
    q, _, local = _gather_reads(write, "      int x = a[col[i]];\n      b[i] = x + 1;\n      c[i] = x * 2;", ref)
    assert reads == local and len(reads) == 1  # hlsim and the analytical model alike
    assert p.breakdown["ii.L_i"] == e.breakdown["ii.L_i"] == 1 and p.metrics["cycles"] == q.metrics["cycles"]
    stored = "      b[i] = a[col[i]] + 1;\n      col[i + 1] = 0;\n      c[i] = a[col[i]] * 2;"
    ref2 = ("    for i in range(N - 1):\n        b[i] = a[col[i]] + 1\n        col[i + 1] = 0\n"
            "        c[i] = a[col[i]] * 2")
    r, _, again = _gather_reads(write, stored, ref2)
    assert min(again) >= max(reads) + 63 and r.breakdown["ii.L_i"] >= 2
