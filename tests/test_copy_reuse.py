"""The copies of an unrolled body share what one copy loaded or stored (hlsim 0.56, the analytical model with it),
as an HLS compiler's GVN and dead-store elimination do once the body is straight-line code: `C[i][j] += A[i][k] *
B[k][j]` over an unrolled k loads C[i][j] once and stores it once; an element every copy reads is loaded once.
The reference each time: the same kernel spelled with a local (always priced without the memory round trips), and
hand counts. Latencies (PROBE_ARCH): add 3, mul 5, BRAM load 2, store 1, two ports a bank."""

from __future__ import annotations

from conftest import PROBE_ARCH as ARCH
from conftest import agrees_on_static, kernel_design, profiled_and_estimated, same_profile

ARRAYS = ("    x: {shape: [N], dtype: int32, role: in}\n    w: {shape: [4], dtype: int32, role: in}\n"
          "    b: {shape: [N], dtype: int32, role: out}")
PLACE = "{x: BRAM, w: BRAM, b: BRAM}"
PIPE = "{L_i: {pipeline_ii: 1}}"


def _run(write, body: str, reference: str, loops: str = PIPE, static: bool = True, n: int = 16,
         arrays: str = ARRAYS, place: str = PLACE, before: str = "", inputs: str = ""):
    """hlsim's profile; on a design the data do not steer (``static``), the analytical model's counts equal it."""
    kernel = f"{before}    L_i: for (int i = 0; i < N; i++) {{\n{body}\n    }}"
    p, e = profiled_and_estimated(kernel_design(write, ARCH, kernel, arrays, reference, loops, place,
                                                params=f"{{N: {n}}}", inputs=inputs))
    if static:
        agrees_on_static(p, e)
        assert e.metrics["energy_pj"] == p.metrics["energy_pj"]
    return p


ACC_REF = "    b[:] = x * int(w.sum())"


def test_an_element_the_copies_accumulate_into_is_loaded_and_stored_once(write):
    """`b[i] = 0; for k < 4: b[i] += x[i] * w[k];` (k unrolled in the pipelined i loop): copy 0 takes b[i] from
    the store before the loop, each copy from the one before, and only the last copy stores. The chain: load x 2,
    mul 5, four adds 4 x 3, store 1 = depth 20; one store of b an iteration (16 writes in all, where every copy
    stored: 5 x 16 = 80), and no read of b from BRAM at all but its tile's write-back (every copy loaded it:
    64 more). Before, the chain also ran through a store and a load per copy."""
    body = "      b[i] = 0;\n      L_k: for (int k = 0; k < 4; k++) {\n        b[i] += x[i] * w[k];\n      }"
    local = "      int t = 0;\n      L_k: for (int k = 0; k < 4; k++) {\n        t += x[i] * w[k];\n      }\n" \
            "      b[i] = t;"
    p, q = _run(write, body, ACC_REF), _run(write, local, ACC_REF)
    assert (p.breakdown["depth.L_i"], p.breakdown["ii.L_i"]) == (20, 2)  # (II: w[k]'s 4 loads on 2 ports)
    assert p.counters["writes.BRAM"] == 16 + 16 + 4  # b's one store an iteration; x's and w's tiles from DRAM
    assert p.counters["reads.BRAM"] == 16 + 64 + 16  # x[i] once, w[k] four times an iteration; b's write-back
    same_profile(p, q)


def test_an_element_every_copy_reads_is_loaded_once(write):
    """`for k < 4: b[i] += x[i] * w[k]` reads x[i] in each of the four copies: one load of it an iteration
    (16 in all, not 64), as with the local `int v = x[i];` before the loop."""
    body = "      int t = 0;\n      L_k: for (int k = 0; k < 4; k++) {\n        t += x[i] * w[k];\n      }\n" \
           "      b[i] = t;"
    local = "      int t = 0;\n      int v = x[i];\n      L_k: for (int k = 0; k < 4; k++) {\n" \
            "        t += v * w[k];\n      }\n      b[i] = t;"
    p, q = _run(write, body, ACC_REF), _run(write, local, ACC_REF)
    assert p.counters["reads.BRAM"] == q.counters["reads.BRAM"]
    same_profile(p, q)


def test_the_copies_of_the_pipelined_loop_share_an_element_and_its_last_store(write):
    """`b[0] += x[i]` pipelined with `unroll: 2`: the second copy takes b[0] from the first copy's add and only it
    stores: 8 loads and 8 stores of b[0] for 16 iterations (before, 16 of each)."""
    ref = "    b[:] = 0\n    b[0] = x.sum()"
    p = _run(write, "      b[0] += x[i];", ref, loops="{L_i: {pipeline_ii: 1, unroll: 2}}")
    q = _run(write, "      b[0] += x[i];", ref)
    assert p.counters["writes.BRAM"] == q.counters["writes.BRAM"] - 8
    assert p.counters["reads.BRAM"] == q.counters["reads.BRAM"] - 8


def test_an_element_named_by_a_local_the_copies_change_is_loaded_by_each(write):
    """`x[j]` with `j = (j + 1) % N` in every copy is another element in each: four loads of x an iteration, as
    before (the subscript's text is the same in every copy; the write of j tells them apart)."""
    ref = "    b[:] = [sum(x[(i + k) % N] * w[k] for k in range(4)) for i in range(N)]"
    body = "      int t = 0;\n      int j = i;\n      L_k: for (int k = 0; k < 4; k++) {\n" \
           "        t += x[j] * w[k];\n        j = (j + 1) % N;\n      }\n      b[i] = t;"
    p = _run(write, body, ref)
    assert p.counters["reads.BRAM"] == 64 + 64 + 16  # x and w four times an iteration; b's write-back


def test_copies_whose_trips_vary_share_nothing(write):
    """`for (k = 0; k < i % 4 + 1; k++) t += x[i] * w[k];`: a copy runs only where the entry has that many trips,
    so a later copy cannot count on an earlier one's load: x[i] is loaded by every copy that runs (1 + 2 + 3 + 4
    per four iterations: 40), as before."""
    ref = "    b[:] = [x[i] * int(w[:i % 4 + 1].sum()) for i in range(N)]"
    body = "      int t = 0;\n      L_k: for (int k = 0; k < i % 4 + 1; k++) {\n        t += x[i] * w[k];\n      }\n" \
           "      b[i] = t;"
    p = _run(write, body, ref)
    assert p.counters["reads.BRAM"] == 40 + 40 + 16  # x[i] and w[k] per trip; b's write-back


SMALL = "    arrays:\n      x: {distribution: randint, range: [0, 9]}"  # (sums that fit int32)


def test_a_read_on_a_branch_side_is_not_taken_from_an_earlier_copy(write):
    """`if (k > 0) t += x[k];` after `t = x[0] * 100;`: copy 0 could take x[0] from the register, but only copies
    1..3 run the side, and the counts take one share for all copies of a statement (3/4 of 3 runs: 2.25 loads an
    iteration where 3 are made; an outside probe): a side's reads and stores share nothing with other copies.
    x is read 4 times an iteration (x[0] and x[1..3]), as spelled out."""
    ref = "    for i in range(N):\n        b[i] = x[0] * 100 + int(x[1:4].sum())"
    body = "      int t = x[0] * 100;\n      L_k: for (int k = 0; k < 4; k++) {\n        if (k > 0) t += x[k];\n" \
           "      }\n      b[i] = t;"
    p = _run(write, body, ref, inputs=SMALL)
    q = _run(write, "      int t = x[0] * 100;\n      t += x[1]; t += x[2]; t += x[3];\n      b[i] = t;", ref,
             inputs=SMALL)
    assert p.counters["reads.BRAM"] == q.counters["reads.BRAM"] == 64 + 16


def test_a_copys_offset_counts_from_the_loops_first_value(write):
    """`for (k = 1; k < 5; k++) t += x[k];` after `t = x[0] * 100 + i;` reads x[1..4]: copy 0 is x[1], not the
    x[0] the statement before loaded (before the fix it took x[0]'s register: 80 reads and II 2); five loads an
    iteration on x's two ports: II 3, as spelled out. Likewise a loop from `i` (copy 0 is x[i]) and a tiled loop
    (the second tile's copy 0 is x[4]; an outside probe found all three)."""
    ref = "    for i in range(N):\n        b[i] = x[0] * 100 + int(x[1:5].sum()) + i"
    body = "      int t = x[0] * 100 + i;\n      L_k: for (int k = 1; k < 5; k++) {\n        t += x[k];\n      }\n" \
           "      b[i] = t;"
    p = _run(write, body, ref, inputs=SMALL)
    q = _run(write, "      int t = x[0] * 100 + i;\n      t += x[1]; t += x[2]; t += x[3]; t += x[4];\n      b[i] = t;",
             ref, inputs=SMALL)
    assert (p.counters["reads.BRAM"], p.breakdown["ii.L_i"]) == (q.counters["reads.BRAM"], 3) == (96, 3)
    wide = ARRAYS.replace("x: {shape: [N]", "x: {shape: [N + 8]")
    ref = "    for i in range(N):\n        b[i] = x[0] * 100 + int(x[i:i + 4].sum())"
    body = "      int t = x[0] * 100;\n      L_k: for (int k = i; k < i + 4; k++) {\n        t += x[k];\n      }\n" \
           "      b[i] = t;"
    assert _run(write, body, ref, arrays=wide, inputs=SMALL).counters["reads.BRAM"] == 5 * 16 + 16
    ref = "    for i in range(N):\n        b[i] = x[0] * 100 + int(x[0:8].sum())"
    body = "      int t = x[0] * 100;\n      L_k: for (int k = 0; k < 8; k++) {\n        t += x[k];\n      }\n" \
           "      b[i] = t;"
    tiled = _run(write, body, ref, arrays=wide, inputs=SMALL, loops="{L_i: {pipeline_ii: 1}, L_k: {tile: 4}}")
    assert tiled.counters["reads.BRAM"] >= 8 * 16 + 16


def test_a_store_through_a_name_the_copies_change_is_made_by_each(write):
    """`c[j] = x[i] + k; j++;` over an unrolled k stores four elements: four stores an iteration, as `c[4 * i + k]`
    (the subscript's text is the same in every copy; the write of j ends the earlier copy's wait to be
    overwritten). Before the fix one store an iteration was made (an outside probe); likewise `c[p[0]]` with a
    store to p[0] between."""
    arrays = ARRAYS + "\n    c: {shape: [4 * N], dtype: int32, role: out}"
    place = "{x: BRAM, w: BRAM, b: BRAM, c: BRAM}"
    ref = "    b[:] = 0\n    for i in range(N):\n        for k in range(4):\n            c[4 * i + k] = x[i] + k"
    body = "      b[i] = 0;\n      int j = 4 * i;\n      L_k: for (int k = 0; k < 4; k++) {\n" \
           "        c[j] = x[i] + k;\n        j++;\n      }"
    p = _run(write, body, ref, arrays=arrays, place=place)
    q = _run(write, "      b[i] = 0;\n      L_k: for (int k = 0; k < 4; k++) {\n        c[4 * i + k] = x[i] + k;\n"
                    "      }", ref, arrays=arrays, place=place)
    assert p.counters["writes.BRAM"] == q.counters["writes.BRAM"] == 64 + 16 + 16  # c, b, x's tile
    arrays += "\n    p: {shape: [2], dtype: int32, role: inout}"
    place = "{x: BRAM, w: BRAM, b: BRAM, c: BRAM, p: BRAM}"
    ref = "    c[:] = 0\n    b[:] = 0\n    p[0] = 4 * N\n    for i in range(N):\n        for k in range(4):\n" \
          "            c[4 * i + k] = x[i] + k"
    body = "      b[i] = 0;\n      L_k: for (int k = 0; k < 4; k++) {\n        c[p[0]] = x[i] + k;\n" \
           "        p[0] = p[0] + 1;\n      }"
    assert _run(write, body, ref, arrays=arrays, place=place, before="    p[0] = 0;\n").counters["writes.BRAM"] \
        >= 64 + 16 + 1 + 16 + 2  # c, b, p, and x's and p's tiles


def test_a_loop_that_may_run_no_trip_does_not_overwrite_the_store_before_it(write):
    """`b[i] = x[i]; for (k = 0; k < i % 2; k++) b[i] = 5;`: for an even i the loop runs no trip and b[i] = x[i]
    must be stored: 16 + 8 stores of b, and x's tile (before the fix the loop's first copy made it dead: 24)."""
    ref = "    for i in range(N):\n        b[i] = 5 if i % 2 else x[i]"
    body = "      b[i] = x[i];\n      L_k: for (int k = 0; k < i % 2; k++) {\n        b[i] = 5;\n      }"
    assert _run(write, body, ref).counters["writes.BRAM"] == 16 + 8 + 16


def test_a_partial_last_group_shares_nothing(write):
    """`b[0] += x[i]` pipelined with `unroll: 2` over 15 trips: the last group runs its first copy alone, which
    must then store; the counts take one share for all copies, so copies the trips do not divide share nothing
    (every copy loads and stores b[0]: 15 + 15, where a compiler reaches 8 + 8; errs high, documented)."""
    ref = "    b[:] = 0\n    b[0] = x.sum()"
    p = _run(write, "      b[0] += x[i];", ref, loops="{L_i: {pipeline_ii: 1, unroll: 2}}", n=15, inputs=SMALL)
    assert (p.counters["reads.BRAM"], p.counters["writes.BRAM"]) == (15 + 15 + 1, 15 + 15)


PROBE_ARRAYS = ("    x: {shape: [N + 16], dtype: int32, role: in}\n"
                "    a: {shape: [4 * N + 8], dtype: int32, role: inout}\n    b: {shape: [N], dtype: int32, role: out}")
PROBE_PLACE = "{x: BRAM, a: BRAM, b: BRAM}"
PROBE_INPUTS = ("    arrays:\n      x: {distribution: randint, range: [0, 9]}\n"
                "      a: {distribution: randint, range: [0, 9]}")


def _probe(write, kernel: str, ref: str, loops: str = PIPE):
    return profiled_and_estimated(kernel_design(write, ARCH, kernel, PROBE_ARRAYS, ref, loops, PROBE_PLACE,
                                                params="{N: 8}", inputs=PROBE_INPUTS))


def test_a_local_a_loop_head_steps_is_another_element_in_each_copy(write):
    """`for (k = 0, j = 2; k < 4; k++, j += 2) t += x[j];` reads x[2], x[4], x[6], x[8]: with x[0] before, five
    loads an iteration (40, II 3 on two ports) and b's write-back, as the rolled loop gives; likewise the pipelined
    loop's own head (`for (i = 0, j = 0; ...; i++, j += 2) b[i] = x[j] + 1;` unrolled 2 or 4 reads 8 elements, as
    `x[2 * i]`). No statement writes j, so before the fix every copy took copy 0's x[j] (24 reads, II 1; 12 and 10:
    an outside probe)."""
    ref = "    for i in range(N):\n        b[i] = int(x[2] + x[4] + x[6] + x[8]) + 100 * x[0]"
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      int t = x[0] * 100;\n      int j;\n      int k;\n"
              "      L_k: for (k = 0, j = 2; k < 4; k++, j += 2) {\n        t += x[j];\n      }\n"
              "      b[i] = t;\n    }")
    for loops in (PIPE, "{L_k: {unroll: 4}}", "{}"):
        p, _ = _probe(write, kernel, ref, loops)
        assert p.counters["reads.BRAM"] == 48, loops
    assert _probe(write, kernel, ref)[0].breakdown["ii.L_i"] == 3
    ref = "    for i in range(N):\n        b[i] = x[2 * i] + 1\n"
    kernel = "    int j;\n    int i;\n    L_i: for (i = 0, j = 0; i < N; i++, j += 2) {\n      b[i] = x[j] + 1;\n    }"
    for loops in ("{L_i: {pipeline_ii: 1, unroll: 2}}", "{L_i: {unroll: 4}}"):
        assert _probe(write, kernel, ref, loops)[0].counters["reads.BRAM"] == 8 + 8, loops


def test_an_array_every_read_of_which_an_earlier_copy_stored_loads_no_tile_in_hlsim_either(write):
    """`a[i] = 0; for (k < 2) a[i] += x[i + k];` (a inout): copy 0 takes a[i] from the store before the loop, copy 1
    from copy 0, so a is never read from memory and its tile is not filled: 9 DRAM reads (x's), as spelled out with
    two statements, in hlsim as in the analytical model (before, hlsim's tile transfers still filled a's: 17 DRAM
    reads and a cycle more; an outside probe)."""
    ref = "    for i in range(N):\n        a[i] = x[i] + x[i + 1]\n    b[:] = 0"
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      a[i] = 0;\n      L_k: for (int k = 0; k < 2; k++) {\n"
              "        a[i] += x[i + k];\n      }\n    }\n"
              "    L_j: for (int j = 0; j < N; j++) {\n      b[j] = 0;\n    }")
    p, e = _probe(write, kernel, ref)
    spelled = kernel.replace("      L_k: for (int k = 0; k < 2; k++) {\n        a[i] += x[i + k];\n      }\n",
                             "      a[i] += x[i];\n      a[i] += x[i + 1];\n")
    q, f = _probe(write, spelled, ref)
    assert p.counters["reads.DRAM"] == e.breakdown["reads.DRAM"] == q.counters["reads.DRAM"] == 9
    assert p.metrics["cycles"] == e.metrics["cycles"]


def test_a_load_after_a_loop_that_stored_its_element_waits_for_that_store(write):
    """`for (j = 1; j < 3; j++) a[j] = x[i] + j;` then `if (x[i] > 4) b[i] = a[2];`: the side loads a[2] from
    memory (a side takes nothing from the copies), after copy 1's store of it: load x 2, add 3, store 1, load 2,
    store b 1 = depth 9. Before hlsim 0.56 a copy's address counted from 0, not from its loop's first value:
    the copies' a[j] were taken as a[0] and a[1], provably not a[2], so the load did not wait (found while
    checking adi-opt, whose back-substitution loop runs down from N - 2)."""
    ref = ("    a[:] = a\n    for i in range(N):\n        a[1] = x[i] + 1\n        a[2] = x[i] + 2\n"
           "        b[i] = a[2] if x[i] > 4 else 0")
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      L_j: for (int j = 1; j < 3; j++) {\n"
              "        a[j] = x[i] + j;\n      }\n      if (x[i] > 4) b[i] = a[2];\n      else b[i] = 0;\n    }")
    p, _ = _probe(write, kernel, ref)
    assert p.breakdown["depth.L_i"] == 9
