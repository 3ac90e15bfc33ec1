"""Where a stored value must not be forwarded, and a recurrence a branch's local copy carries: a second outside
probe of hlsim 0.53's forwarding (2026-12-06). Each against a hand count and the spelling that splits the statement
or reads through a local. Latencies (PROBE_ARCH): add 3, logic 1, select 0, BRAM load 2, store 1."""

from __future__ import annotations

from conftest import PROBE_ARCH as ARCH
from conftest import kernel_design, profiled_and_estimated

ARRAYS = ("    x: {shape: [N], dtype: int32, role: in}\n    b: {shape: [N], dtype: int32, role: inout}\n"
          "    c: {shape: [N], dtype: int32, role: out}")
IDX = ARRAYS + "\n    idx: {shape: [N], dtype: int32, role: inout}"
DRAWS = ("    arrays:\n      x: {distribution: randint, range: [0, 15]}\n"
         "      b: {distribution: randint, range: [0, 15]}\n      idx: {distribution: randint, range: [0, 15]}")


def _profile(write, body: str, ref: str, arrays: str = ARRAYS, loops: str = "{L_i: {pipeline_ii: 1}}",
             inputs: str = DRAWS):
    kernel = f"    int s = 0;\n    L_i: for (int i = 0; i < N; i++) {{\n{body}\n    }}"
    place = "{x: BRAM, b: BRAM, c: BRAM" + (", idx: BRAM}" if "idx" in arrays else "}")
    p, _ = profiled_and_estimated(kernel_design(write, ARCH, kernel, arrays, ref, loops, place, params="{N: 16}",
                                                inputs=inputs if "idx" in arrays else inputs.rsplit("\n", 1)[0]))
    return p


def test_a_store_through_its_own_array_is_not_forwarded(write):
    """`b[b[i]] = (s + x[i]) & 15; s = b[b[i]];`: the store may change b[i] itself, so the read loads b[i] and then
    b[b[i]]: s -> add 3 -> and 1 -> store 1 -> load 2 -> load 2 = II 9, as `int t = b[i]; s = b[t];` (the probe:
    II 7 and 16 reads fewer)."""
    ref = "    s = 0\n    for i in range(N):\n        b[b[i]] = (s + x[i]) & 15\n        s = b[b[i]]\n    c[:] = 0"
    p = _profile(write, "      b[b[i]] = (s + x[i]) & 15;\n      s = b[b[i]];\n      c[i] = 0;", ref)
    q = _profile(write, "      b[b[i]] = (s + x[i]) & 15;\n      int t = b[i];\n      s = b[t];\n      c[i] = 0;", ref)
    assert p.breakdown["ii.L_i"] == q.breakdown["ii.L_i"] == 9
    assert p.counters["reads.BRAM"] == q.counters["reads.BRAM"]


def test_an_index_array_the_statement_writes_after_the_store(write):
    """`c[i] = (b[idx[i]] = s, idx[i] = x[i], 0); s = b[idx[i]] + 1;`: idx[i] changes after the store, so the read
    is another element, loaded after the store: s -> store 1 -> load 2 -> add 3 = II 6 (the probe: II 3). And
    `(b[idx[i]] = 1, idx[i] = x[i], b[idx[i]] = 2, 0)` makes both stores (b's 32, c's 16, the tiles of x, b, idx:
    96 writes; the probe: 80)."""
    ref = ("    s = 0\n    for i in range(N):\n        b[idx[i]] = s\n        idx[i] = x[i]\n"
           "        s = b[idx[i]] + 1\n    c[:] = 0")
    p = _profile(write, "      c[i] = (b[idx[i]] = s, idx[i] = x[i], 0);\n      s = b[idx[i]] + 1;", ref, IDX)
    assert p.breakdown["ii.L_i"] == 6
    ref = ("    for i in range(N):\n        b[idx[i]] = 1\n        idx[i] = x[i]\n        b[idx[i]] = 2\n"
           "        c[i] = 0")
    p = _profile(write, "      c[i] = (b[idx[i]] = 1, idx[i] = x[i], b[idx[i]] = 2, 0);", ref, IDX, loops="{}")
    assert p.counters["writes.BRAM"] == 96


def test_a_local_a_side_copies_from_the_last_iteration_keeps_its_recurrence(write):
    """`int t = x[i] * 2; if (x[i] > 3) t = s; b[i] = t; s = t + 1;`: on the then side t is s from the last
    iteration: s -> select 0 -> add 3 -> s, II 3, as the array spelling (`b[i] = x[i] * 2; if (x[i] > 3) b[i] = s;
    s = b[i] + 1;`). The side's copy was an alias the join compared equal to t before the branch: II 1 (an older
    fault than forwarding, found by the same probe)."""
    ref = ("    s = 0\n    for i in range(N):\n        t = x[i] * 2\n        if x[i] > 3:\n            t = s\n"
           "        b[i] = t\n        s = t + 1\n    c[:] = 0")
    draws = ("    arrays:\n      x: {distribution: randint, range: [0, 8]}\n"
             "      b: {distribution: randint, range: [0, 8]}")
    p = _profile(write, "      int t = x[i] * 2;\n      if (x[i] > 3) t = s;\n      b[i] = t;\n      s = t + 1;\n"
                 "      c[i] = 0;", ref, inputs=draws + "\n")
    q = _profile(write, "      b[i] = x[i] * 2;\n      if (x[i] > 3) b[i] = s;\n      s = b[i] + 1;\n      c[i] = 0;",
                 ref, inputs=draws + "\n")
    assert p.breakdown["ii.L_i"] == q.breakdown["ii.L_i"] == 3
