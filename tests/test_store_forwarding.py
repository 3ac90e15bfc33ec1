"""A value a statement stores is the next statement's without a load, and a store the next one overwrites unread
is not made (hlsim 0.53 and the analytical model with it), as an HLS compiler's GVN (store-to-load forwarding)
and dead-store elimination make them. The reference each time: the same kernel spelled with a local, which was
always priced without the memory round trip; and hand counts. Latencies (PROBE_ARCH): add 3, mul 5, BRAM load 2,
store 1, two ports a bank."""

from __future__ import annotations

from conftest import PROBE_ARCH as ARCH
from conftest import agrees_on_static, kernel_design, profiled_and_estimated, same_profile

ARRAYS = ("    x: {shape: [N], dtype: int32, role: in}\n    b: {shape: [N], dtype: int32, role: out}\n"
          "    c: {shape: [N], dtype: int32, role: out}")
PLACE = "{x: BRAM, b: BRAM, c: BRAM}"
PIPE = "{L_i: {pipeline_ii: 1}}"


def _run(write, body: str, reference: str, before: str = "", loops: str = PIPE, static: bool = True):
    """hlsim's profile; on a design the data do not steer (``static``), the analytical model's counts equal it."""
    kernel = f"{before}    L_i: for (int i = 0; i < N; i++) {{\n{body}\n    }}"
    p, e = profiled_and_estimated(kernel_design(write, ARCH, kernel, ARRAYS, reference, loops, PLACE,
                                                params="{N: 16}"))
    if static:
        agrees_on_static(p, e)
    return p


def test_a_stored_value_read_back_is_a_register_on_the_recurrence(write):
    """Deriche's form: `b[i] = x[i] + ym1 * 2; ym1 = b[i];`. The recurrence is ym1 -> mul 5 -> add 3 -> ym1:
    II 8, and b is never read (its 16 buffer reads are the write-back of its tile). Before, ym1 = b[i] loaded
    the element after its store: 8 + store 1 + load 2 = II 11, and 16 reads more."""
    ref = "    ym = 0\n    for i in range(N):\n        b[i] = x[i] + ym * 2\n        ym = b[i]\n    c[:] = 0"
    p = _run(write, "      b[i] = x[i] + ym1 * 2;\n      ym1 = b[i];\n      c[i] = 0;", ref,
             before="    int ym1 = 0;\n")
    q = _run(write, "      int t = x[i] + ym1 * 2;\n      b[i] = t;\n      ym1 = t;\n      c[i] = 0;", ref,
             before="    int ym1 = 0;\n")
    assert p.breakdown["ii.L_i"] == 8
    assert p.counters["reads.BRAM"] == 16 + 16 + 16  # x's 16, and b's and c's tiles read to write them back
    same_profile(p, q)


def test_a_store_overwritten_unread_is_not_made(write):
    """`b[i] = 0; b[i] += x[i] * 2; b[i] += x[i] * 3;`: one load (x[i]), one store an iteration; depth load 2 +
    mul 5 + add 3 + add 3 + store 1 = 14, II 1. Before: b[i] loaded twice after its stores and stored three
    times, depth 18 and II 3 (seven accesses on b's and x's two ports)."""
    ref = "    b[:] = x * 5\n    c[:] = 0"
    p = _run(write, "      b[i] = 0;\n      b[i] += x[i] * 2;\n      b[i] += x[i] * 3;\n      c[i] = 0;", ref)
    q = _run(write, "      int t = 0;\n      t += x[i] * 2;\n      t += x[i] * 3;\n      b[i] = t;\n"
                    "      c[i] = 0;", ref)
    assert (p.breakdown["depth.L_i"], p.breakdown["ii.L_i"]) == (14, 1)
    assert p.counters["writes.BRAM"] == 16 + 16 + 16  # b's one store and c's an iteration, x's tile from DRAM
    same_profile(p, q)


def test_what_stops_forwarding_and_dead_stores(write):
    """A store to another element of the array between (aliasing is not judged), a changed subscript, a read of
    the array from memory between two stores, a store under a branch: each keeps the load, or the store."""
    ref = ("    for i in range(N):\n        b[i] = x[i]\n        b[N - 1 - i] = 1\n        c[i] = b[i]")
    p = _run(write, "      b[i] = x[i];\n      b[N - 1 - i] = 1;\n      c[i] = b[i];", ref)
    assert p.counters["reads.BRAM"] == 16 + 16 + 16 + 16  # x, b[i] read back, and b's and c's write-back
    ref = ("    for i in range(N):\n        b[i] = 1\n        c[i] = b[(i + 1) % N] if i < N - 1 else 0\n"
           "        b[i] = 2")
    p = _run(write, "      b[i] = 1;\n      c[i] = i < N - 1 ? b[i + 1] : 0;\n      b[i] = 2;", ref, loops="{}")
    assert p.counters["writes.BRAM"] == 32 + 16  # both of b's stores (b[i + 1] read from memory between), c's
    ref = "    for i in range(N):\n        b[i] = 1\n        c[i] = b[i]"
    p = _run(write, "      int j = i;\n      b[j] = 1;\n      j = j + 0;\n      c[i] = b[j];", ref)
    assert p.counters["reads.BRAM"] == 16 + 16 + 16  # b[j] read back (j written between), b's and c's write-back


SIDES = "      if (x[i] > 0) b[i] = s - x[i]; else b[i] = 2;\n      s = b[i] + 1;\n      c[i] = 0;"
SIDES_LOCAL = ("      int t;\n      if (x[i] > 0) t = s - x[i]; else t = 2;\n      b[i] = t;\n      s = t + 1;\n"
               "      c[i] = 0;")
SIDES_REF = ("    s = 0\n    for i in range(N):\n        b[i] = s - x[i] if x[i] > 0 else 2\n        s = b[i] + 1\n"
             "    c[:] = 0")


def test_a_value_a_branch_stored_is_the_select_of_its_sides(write):
    """An outside probe (2026-12-06, on this change): `if (x[i] > 0) b[i] = s - x[i]; else b[i] = 2; s = b[i] + 1;`
    read b[i] after the branch with no producer: II 1, where the recurrence s -> sub 3 -> select 0 -> add 3 -> s
    needs 6, as the local spelling always had. The read now takes the select of the two sides' values; one side
    keeping the value stored before the branch, or a `switch`, the same."""
    p = _run(write, SIDES, SIDES_REF, before="    int s = 0;\n", static=False)
    q = _run(write, SIDES_LOCAL, SIDES_REF, before="    int s = 0;\n", static=False)
    assert p.breakdown["ii.L_i"] == q.breakdown["ii.L_i"] == 6
    one_side = "      b[i] = x[i];\n      if (x[i] > 3) b[i] = s - x[i];\n      s = b[i] + 1;\n      c[i] = 0;"
    ref = ("    s = 0\n    for i in range(N):\n        b[i] = s - x[i] if x[i] > 3 else x[i]\n        s = b[i] + 1\n"
           "    c[:] = 0")
    assert _run(write, one_side, ref, before="    int s = 0;\n", static=False).breakdown["ii.L_i"] == 6


def test_a_store_only_some_evaluations_make_forwards_nothing(write):
    """`d = x[i] > 3 ? (b[i] = x[i] * 2) : 0; c[i] = b[i] + 1;`: where the condition fails b[i] comes from memory,
    so the read is a load every iteration (16 reads of b), as in the `if` spelling (the probe: 0 reads)."""
    arrays = ARRAYS.replace("b: {shape: [N], dtype: int32, role: out}", "b: {shape: [N], dtype: int32, role: inout}")
    body = "      int d = x[i] > 3 ? (b[i] = x[i] * 2) : 0;\n      c[i] = b[i] + 1 + d;"
    ref = ("    for i in range(N):\n        d = 0\n        if x[i] > 3:\n            b[i] = x[i] * 2\n"
           "            d = b[i]\n        c[i] = b[i] + 1 + d")
    kernel = f"    L_i: for (int i = 0; i < N; i++) {{\n{body}\n    }}"
    p, e = profiled_and_estimated(kernel_design(write, ARCH, kernel, arrays, ref, PIPE, PLACE, params="{N: 16}",
                                                inputs="    arrays:\n      x: {distribution: randint, range: [0, 9]}"))
    # x's 16 and b's 16 datapath reads, and b's and c's 16 each to write them back
    assert p.counters["reads.BRAM"] == e.breakdown["reads.BRAM"] == 16 * 4


def test_a_store_read_back_in_its_own_statement_stays_made(write):
    """`c[i] = (b[i] = x[i], b[N - 1 - i]); b[i] = 7;`: the comma reads b after its store, from memory (the element
    may be the one stored), so the first store is not dead: 32 stores of b (the probe: 16)."""
    body = "      c[i] = (b[i] = x[i], b[N - 1 - i]);\n      b[i] = 7;"
    ref = ("    b0 = b.copy()\n    for i in range(N):\n        b[i] = x[i]\n        c[i] = b[N - 1 - i]\n"
           "        b[i] = 7")
    p = _run(write, body, ref, loops="{}")
    assert p.counters["writes.BRAM"] == 32 + 16 + 16  # b's two stores an iteration, c's one, b's tile loaded


def test_forwarding_twins(write):
    """Each the same as its local spelling: an inout array whose reads all take a stored value loads no tile (the
    probe: 16 DRAM reads more); `b[i] = b[i] = v` is one store and no load (before: two, a load, II 2); a stored
    local from the last iteration keeps its recurrence through the reader (`b[i] = s; s = b[i] + x[i];`: the add,
    II 3, where the store was on it: II 4)."""
    inout = ARRAYS.replace("b: {shape: [N], dtype: int32, role: out}", "b: {shape: [N], dtype: int32, role: inout}")

    def run(body, ref, arrays=ARRAYS, before=""):
        kernel = f"{before}    L_i: for (int i = 0; i < N; i++) {{\n{body}\n    }}"
        p, e = profiled_and_estimated(kernel_design(write, ARCH, kernel, arrays, ref, PIPE, PLACE, params="{N: 16}"))
        assert p.metrics["cycles"] == e.metrics["cycles"]
        return p

    ref = "    b[:] = x * 3\n    c[:] = x * 3 + 1"
    same_profile(run("      b[i] = x[i] * 3;\n      c[i] = b[i] + 1;", ref, inout),
          run("      int t = x[i] * 3;\n      b[i] = t;\n      c[i] = t + 1;", ref, inout))
    ref = "    b[:] = x + 1\n    c[:] = (x + 1) * 2"
    p = run("      b[i] = b[i] = x[i] + 1;\n      c[i] = b[i] * 2;", ref)
    same_profile(p, run("      int t = x[i] + 1;\n      b[i] = t;\n      c[i] = t * 2;", ref))
    assert p.breakdown["ii.L_i"] == 1
    ref = "    s = 0\n    for i in range(N):\n        b[i] = s\n        s = s + x[i]\n    c[:] = 0"
    p = run("      b[i] = s;\n      s = b[i] + x[i];\n      c[i] = 0;", ref, before="    int s = 0;\n")
    same_profile(p, run("      b[i] = s;\n      s = s + x[i];\n      c[i] = 0;", ref, before="    int s = 0;\n"))
    assert p.breakdown["ii.L_i"] == 3
