"""hlsim's dependence analysis and memory ports, against hand counts: recurrences through locals
and arrays (distance vectors), unrolled chains, banks of block and cyclic partitions, one DRAM channel."""

from __future__ import annotations

import pytest
from conftest import kernel_design
from llmulator_plugins.hlsim.profiler import HlsimProfiler

ARCH = """
architecture:
  version: 1
  name: deps
  clock_mhz: 100
  compute:
    operators:
      add: {count: 8, bits: 32, numeric: float, latency_cycles: ADD}
      mul: {count: 8, bits: 32, numeric: float, latency_cycles: 3}
  memory:
    - {name: DRAM, kind: dram, width_bits: 64, bandwidth_bytes_per_cycle: 100000, latency_cycles: 2}
    - {name: BUF, kind: sram, capacity_kib: 1024, width_bits: 32, banks: 16, ports: 2, latency_cycles: 1,
       bandwidth_bytes_per_cycle: 100000}
"""


def design(write, kernel: str, arrays: str, reference: str, loops: str, placement: str, params="{N: 64}",
           extra: str = "", add_latency: int = 4):
    return kernel_design(write, ARCH.replace("ADD", str(add_latency)), kernel, arrays, reference, loops, placement,
                         params, extra)


def profile(d):
    p = HlsimProfiler().profile(d)
    assert p.functional_check == "pass", p.functional_check
    return p


SUM = dict(
    kernel="    float s = 0;\n    L_i: for (int i = 0; i < N; i++) {\n      s += a[i];\n    }\n    y[0] = s;",
    arrays="    a: {shape: [N], dtype: fp32, role: in}\n    y: {shape: [1], dtype: fp32, role: out}",
    reference="    y[0] = a.sum(dtype=np.float32)", placement="{a: BUF, y: BUF}")


def test_an_unrolled_serial_reduction_is_a_chain_of_four_adds(write):
    """s += a[i], unroll 4, fp adder latency 7: the four copies add into s one after another, so the
    recurrence is 4 x 7 = 28 cycles per pipelined iteration (16 iterations of 4 elements)."""
    d = design(write, loops="{L_i: {pipeline_ii: 1, unroll: 4}}", add_latency=7, **SUM)
    p = profile(d)
    assert p.breakdown["rec_mii.L_i"] == 28 and p.breakdown["ii.L_i"] == 28
    assert p.breakdown["depth.L_i"] == 1 + 4 * 7  # load, then the chain
    # a's tile arrives (DRAM latency 2 + a cycle: double buffering cannot hide the first tile, hlsim 0.45), the
    # loop, then the store of y[0] (1 cycle) and its write-back to DRAM (latency 2 + 1 cycle for the word), hlsim
    # 0.26; since 0.46 the two in series, double-buffered or not (a statement's own transfer overlaps nothing)
    assert p.metrics["cycles"] == (2 + 1) + (1 + 28) + 15 * 28 + 1 + (2 + 1)
    assert any("L_i: pipeline_ii 1 is not achievable" in n and "local `s`" in n for n in p.notes), p.notes


def test_a_tree_reduction_keeps_one_partial_sum_per_copy(write):
    """The mapping asks for reassociation: each copy adds into its own partial (RecMII 7) and the four
    partials meet in a tree of log2(4) = 2 adds on exit."""
    d = design(write, loops="{L_i: {pipeline_ii: 1, unroll: 4, reduction: tree}}", add_latency=7, **SUM)
    p = profile(d)
    assert p.breakdown["rec_mii.L_i"] == 7 and p.breakdown["ii.L_i"] == 7
    assert p.breakdown["depth.L_i"] == 2 + 7 + 2 * 7  # two ports: the last two loads issue a cycle later
    assert any("needs II >= 7;" in n for n in p.notes), p.notes


def test_a_tree_reduction_over_an_array_element_is_a_warning_that_says_how(write):
    """`y[0] += a[i]` keeps one memory location: the unrolled copies stay one serial chain (RecMII load 1 + 4 x
    add 7 + store 1 = 30, as without the tree: the copies pass y[0] in a register, hlsim 0.56; before, each copy
    loaded and stored it, 36), and validate says the tree has no effect and names the local-accumulator rewrite;
    the local form takes the tree (RecMII 7) and gets no warning."""
    from llmulator.checks import idle_tree_reductions
    arr = dict(SUM, kernel="    L_i: for (int i = 0; i < N; i++) {\n      y[0] += a[i];\n    }")
    d = design(write, loops="{L_i: {pipeline_ii: 1, unroll: 4, reduction: tree}}", add_latency=7, **arr)
    (w,) = idle_tree_reductions(d)
    assert w.severity == "warning" and "`y[0]`" in w.message and "acc +=" in w.hint
    assert profile(d).breakdown["rec_mii.L_i"] == 30
    local = design(write, loops="{L_i: {pipeline_ii: 1, unroll: 4, reduction: tree}}", add_latency=7, **SUM)
    assert idle_tree_reductions(local) == []


@pytest.mark.parametrize("step", ["k++;", "++k;", "k += 1;", "k = k + 1;"])
def test_a_counter_carries_its_adder_however_it_is_spelled(write, step):
    """`k++` is `k += 1`: the next iteration's k needs this one's add, RecMII 4 (before hlsim 0.25 the
    increment statement assigned no local, so `k++` had no recurrence and ran at II 1)."""
    kernel = f"    int k = 0;\n    L_i: for (int i = 0; i < N; i++) {{\n      {step}\n      y[i] = k;\n    }}"
    arrays = "    a: {shape: [N], dtype: fp32, role: in}\n    y: {shape: [N], dtype: int32, role: out}"
    p = profile(design(write, kernel, arrays, "    y[:] = np.arange(1, N + 1)", "{L_i: {pipeline_ii: 1}}",
                       "{a: BUF, y: BUF}"))
    assert p.breakdown["rec_mii.L_i"] == 4


def test_a_plain_accumulation_is_bounded_by_the_adder(write):
    p = profile(design(write, loops="{L_i: {pipeline_ii: 1}}", add_latency=7, **SUM))
    assert p.breakdown["rec_mii.L_i"] == 7


ROWS = dict(
    params="{N: 8, M: 32}",
    arrays="    a: {shape: [N, M], dtype: fp32, role: in}\n    x: {shape: [N, M], dtype: fp32, role: inout}",
    reference="    for j in range(1, M):\n        x[:, j] = x[:, j - DIST] * np.float32(0.5) + a[:, j]",
    placement="{a: BUF, x: BUF}")


def rows_kernel(dist: int) -> str:
    return ("    L_i: for (int i = 0; i < N; i++) {\n"
            f"      L_j: for (int j = {dist}; j < M; j++) {{\n"
            f"        x[i][j] = x[i][j - {dist}] * 0.5f + a[i][j];\n      }}\n    }}")


def test_a_distance_one_dependence_through_a_2d_array_sets_the_ii(write):
    """x[i][j] = x[i][j-1] * 0.5 + a[i][j], j pipelined: the load of x[i][j-1] waits for the previous
    iteration's store: load 1 + mul 3 + add 4 + store 1 = 9 cycles per iteration, not 1."""
    rows = dict(ROWS, reference=ROWS["reference"].replace("range(1, M)", "range(1, M)").replace("DIST", "1"))
    p = profile(design(write, rows_kernel(1), loops="{L_j: {pipeline_ii: 1}}", **{k: v for k, v in rows.items()}))
    assert p.breakdown["rec_mii.L_j"] == 9 and p.breakdown["ii.L_j"] == 9
    assert any("x[i][j]" in n and "1 iteration" in n for n in p.notes), p.notes


def test_a_distance_two_dependence_halves_the_recurrence(write):
    rows = dict(ROWS, reference=ROWS["reference"].replace("range(1, M)", "range(2, M)").replace("DIST", "2"))
    p = profile(design(write, rows_kernel(2), loops="{L_j: {pipeline_ii: 1}}", **rows))
    assert p.breakdown["rec_mii.L_j"] == 5  # ceil(9 / 2)


def test_independent_rows_carry_no_dependence(write):
    """x[i][j] from x[i-1][j] with j pipelined: iterations of j touch different elements."""
    p = profile(design(
        write, "    L_i: for (int i = 1; i < N; i++) {\n      L_j: for (int j = 0; j < M; j++) {\n"
               "        x[i][j] = x[i - 1][j] * 0.5f + a[i][j];\n      }\n    }",
        loops="{L_j: {pipeline_ii: 1}}", **dict(ROWS, reference="    for i in range(1, N):\n"
                                                       "        x[i] = x[i - 1] * np.float32(0.5) + a[i]")))
    assert p.breakdown["rec_mii.L_j"] == 1 and p.breakdown["ii.L_j"] == 1 and not p.notes


def test_a_local_written_late_in_the_body_is_a_recurrence(write):
    """t reads x, and x is written at the end of the body: x's next value needs this one's t:
    mul 3 + add 4 = 7 cycles per iteration."""
    p = profile(design(
        write, "    float x = 1;\n    L_i: for (int i = 0; i < N; i++) {\n      float t = x * 0.5f;\n"
               "      y[i] = t;\n      x = a[i] + t;\n    }",
        arrays="    a: {shape: [N], dtype: fp32, role: in}\n    y: {shape: [N], dtype: fp32, role: out}",
        reference="    x = np.float32(1)\n    for i in range(N):\n        t = x * np.float32(0.5)\n"
                  "        y[i] = t\n        x = a[i] + t",
        loops="{L_i: {pipeline_ii: 1}}", placement="{a: BUF, y: BUF}"))
    assert p.breakdown["rec_mii.L_i"] == 7


BRANCHY = dict(
    arrays="    a: {shape: [N], dtype: fp32, role: in}\n    y: {shape: [1], dtype: fp32, role: out}",
    loops="{L_i: {pipeline_ii: 1}}", placement="{a: BUF, y: BUF}")


def _branchy_design(write, kernel: str, reference: str):
    """The dependence architecture with the comparator and select a branch needs."""
    arch = ARCH.replace("ADD", "4").replace("      mul: {count: 8", "      cmp: {count: 8, bits: 32, numeric: float, "
                                             "latency_cycles: 1}\n      select: {count: 8, bits: 32, "
                                             "latency_cycles: 0}\n      mul: {count: 8")
    return kernel_design(write, arch, kernel, BRANCHY["arrays"], reference, BRANCHY["loops"], BRANCHY["placement"])


def _branchy(then: str, other: str) -> str:
    return (f"    float s = 0;\n    L_i: for (int i = 0; i < N; i++) {{\n      if (a[i] > 0.5f) {then} else {other}\n"
            "    }\n    y[0] = s;")


def test_a_reset_on_the_other_side_of_a_branch_keeps_the_accumulation_a_recurrence(write):
    """`if (c) s += a[i]; else s = 0;`: the next iteration's add needs this one's s on the taken lanes, so
    RecMII is the adder's 4 cycles. Before hlsim 0.23 the else side's constant hid the dependence: the schedule
    ran at II 1 and hlsim's own bound check stopped the run (an InvariantError)."""
    ref = "    s = np.float32(0)\n    for v in a:\n        s = s + v if v > 0.5 else np.float32(0)\n    y[0] = s"
    p = profile(_branchy_design(write, _branchy("s += a[i];", "s = 0;"), ref))
    assert p.breakdown["rec_mii.L_i"] == 4 and p.breakdown["ii.L_i"] == 4
    assert p.metrics["cycles"] >= 64 * 4  # 64 iterations, one add of 4 cycles apart


def test_both_sides_of_a_branch_update_in_parallel(write):
    """`if (c) s += a[i]; else s -= a[i];`: predicated, the two sides read the s of the last iteration, and
    a select picks one: the recurrence is one add (4), not the add then the subtract (8)."""
    p = profile(_branchy_design(write, _branchy("s += a[i];", "s -= a[i];"),
                                "    s = np.float32(0)\n    for v in a:\n        s = s + v if v > 0.5 else s - v\n"
                                 "    y[0] = s"))
    assert p.breakdown["rec_mii.L_i"] == 4 and p.breakdown["ii.L_i"] == 4


FOUR = dict(
    params="{N: 32}",
    arrays='    a: {shape: ["4 * N"], dtype: fp32, role: in}\n    y: {shape: [N], dtype: fp32, role: out}',
    kernel="    L_i: for (int i = 0; i < N; i++) {\n"
           "      y[i] = a[4 * i] + a[4 * i + 1] + a[4 * i + 2] + a[4 * i + 3];\n    }",
    reference="    y[:] = a.reshape(N, 4).sum(axis=1)", placement="{a: BUF, y: BUF}")


def test_block_partitioning_does_not_spread_neighbouring_elements_but_cyclic_does(write):
    """Four neighbouring elements per iteration, 2 ports per bank: cyclic 2 puts two in each bank
    (MemMII 1); block 2 (blocks of 64) puts all four in one bank (MemMII 2, as unpartitioned)."""
    loops = "{L_i: {pipeline_ii: 1}}"
    mii = {}
    for kind in ("cyclic", "block"):
        d = design(write, loops=loops, extra=f"  partition: {{a: {{type: {kind}, factor: 2, dim: 1}}}}", **FOUR)
        mii[kind] = profile(d).breakdown["mem_mii.L_i"]
    assert mii == {"cyclic": 1, "block": 2}


def test_block_partitioning_spreads_accesses_a_block_apart(write):
    """a[i], a[i + 2], a[i + 64], a[i + 66]: block 2 (blocks of 64) puts two in each bank (MemMII 1);
    cyclic 2 puts all four (even offsets) in one bank (MemMII 2)."""
    kw = dict(FOUR, kernel="    L_i: for (int i = 0; i < N; i++) {\n      y[i] = a[i] + a[i + 64] + a[i + 2] "
                           "+ a[i + 66];\n    }",
              params="{N: 32}", arrays='    a: {shape: [128], dtype: fp32, role: in}\n'
                                       '    y: {shape: [N], dtype: fp32, role: out}',
              reference="    y[:] = a[:N] + a[64:64 + N] + a[2:N + 2] + a[66:66 + N]")
    got = {}
    for kind in ("cyclic", "block"):
        d = design(write, loops="{L_i: {pipeline_ii: 1}}",
                   extra=f"  partition: {{a: {{type: {kind}, factor: 2, dim: 1}}}}", **kw)
        got[kind] = profile(d).breakdown["mem_mii.L_i"]
    assert got == {"cyclic": 2, "block": 1}


def test_arrays_in_one_dram_channel_share_its_port(write):
    """y[i] = a[i] + b[i] with a, b and y in DRAM: three accesses through one single-port channel."""
    d = design(write, "    L_i: for (int i = 0; i < N; i++) {\n      y[i] = a[i] + b[i];\n    }",
               arrays="    a: {shape: [N], dtype: fp32, role: in}\n    b: {shape: [N], dtype: fp32, role: in}\n"
                      "    y: {shape: [N], dtype: fp32, role: out}",
               reference="    y[:] = a + b", loops="{L_i: {pipeline_ii: 1}}", placement="{a: DRAM, b: DRAM, y: DRAM}")
    p = profile(d)
    assert p.breakdown["mem_mii.L_i"] == 3 and p.breakdown["ii.L_i"] == 3


def test_the_profile_command_prints_why_the_ii_is_larger(capsys):
    from llmulator.cli import main

    assert main(["profile", "hls-fpga", "spmv-csr", "spmv-csr-hls-fpga"]) == 0
    out = capsys.readouterr().out
    assert "note: L_j: pipeline_ii 1 is not achievable: a loop-carried dependence (local `sum`" in out
    assert "runs at II 4" in out


def test_a_pipelined_pointer_chase_is_bounded_by_its_load_not_by_an_add(write):
    """`p = nx[p]` carries p through a load alone: II = the BRAM's 2-cycle latency (hls-fpga), so 128 steps take
    at least 127 x 2 + 2 cycles. hlsim's own bound check took the chain's step for an add (4 cycles on
    hls-fpga) and stopped the run: "needs >= 508, has 326" (found by an outside user)."""
    from llmulator.library import resolve
    kernel = "    int p = 0;\n    L_i: for (int i = 0; i < N; i++) {\n      p = nx[p];\n    }\n    o[0] = p;"
    arrays = "    nx: {shape: [N], dtype: int32, role: in}\n    o: {shape: [1], dtype: int32, role: out}"
    ref = "    p = 0\n    for i in range(N):\n        p = int(nx[p])\n    o[0] = p"
    d = kernel_design(write, resolve("architecture", "hls-fpga").read_text(), kernel, arrays, ref,
                      "{L_i: {pipeline_ii: 1}}", "{nx: BRAM, o: BRAM}", params="{N: 128}",
                      inputs="    arrays:\n      nx: {distribution: permutation}")
    p = profile(d)
    assert p.breakdown["ii.L_i"] == 2
    assert p.breakdown["compute_cycles.L_i"] >= 127 * 2 + 2


def test_more_partitions_than_banks_is_a_warning_that_names_them(write):
    """Three arrays at cyclic 8 on BUF's 16 banks: 24 partitions. The schedule gives each partition ports of
    its own, so validate says the II is optimistic there (an outside user's 24 partitions on 4 banks); 16 or
    fewer partitions get no warning."""
    from llmulator.checks import partitions_beyond_banks
    kernel = "    L_i: for (int i = 0; i < N; i++) {\n      z[i] = x[i] + y[i];\n    }"
    arrays = "\n".join(f"    {a}: {{shape: [N], dtype: fp32, role: {r}}}" for a, r in (("x", "in"), ("y", "in"),
                                                                                       ("z", "out")))
    part = "  partition:\n" + "".join(f"    {a}: {{type: cyclic, factor: F, dim: 1}}\n" for a in "xyz")
    many = design(write, kernel, arrays, "    z[:] = x + y", "{L_i: {unroll: 8}}", "{x: BUF, y: BUF, z: BUF}",
                  extra=part.replace("F", "8"))
    (w,) = partitions_beyond_banks(many)
    assert w.severity == "warning" and w.path == "mapping.partition.x" and "are 24, the level has 16" in w.message
    few = design(write, kernel, arrays, "    z[:] = x + y", "{L_i: {unroll: 4}}", "{x: BUF, y: BUF, z: BUF}",
                 extra=part.replace("F", "4"))
    assert partitions_beyond_banks(few) == []  # 12 memories on 16 banks
    # x at cyclic 15 and y, z unpartitioned: 17 memories on 16 banks (each unpartitioned array is one)
    one = design(write, kernel, arrays, "    z[:] = x + y", "{L_i: {unroll: 4}}", "{x: BUF, y: BUF, z: BUF}",
                 extra="  partition:\n    x: {type: cyclic, factor: 15, dim: 1}\n")
    (w,) = partitions_beyond_banks(one)
    assert "x (15), y (1), z (1)" in w.message and "are 17" in w.message


@pytest.mark.parametrize("index", ["a[i] * c[i]", "a[i] + c[i]"])
def test_an_index_computed_from_two_loads_waits_for_both(write, index):
    """`a[i + 1] = b[a[i] * c[i]]` (PROBE_ARCH: load 2, mul 5, add 3): the next a[i] is stored after the load of
    a[i], the multiply of the two loaded values, the load of b and the store: 2 + 5 + 2 + 1 = 10 cycles an
    iteration, as the same code spelled with a local (`t = a[i] * c[i]; a[i + 1] = b[t];`) runs. Before
    2026-12-06 index arithmetic was free and waited for one operand only, here c[i]: II 1 (an outside probe).
    With an add, 2 + 3 + 2 + 1 = 8."""
    from conftest import PROBE_ARCH
    arrays = ("    a: {shape: [M], dtype: int32, role: inout}\n    b: {shape: [B], dtype: int32, role: in}\n"
              "    c: {shape: [N], dtype: int32, role: in}")
    kernel = f"    L_i: for (int i = 0; i < N; i++) {{\n      a[i + 1] = b[{index}];\n    }}"
    ref = f"    for i in range(N):\n        a[i + 1] = b[{index}]"
    gen = "".join(f"      {x}: {{distribution: randint, range: [0, 3]}}\n" for x in "abc")
    d = kernel_design(write, PROBE_ARCH, kernel, arrays, ref, "{L_i: {pipeline_ii: 1}}", "{a: BRAM, b: BRAM, c: BRAM}",
                      params="{N: 32, M: 33, B: 16}", inputs="    arrays:\n" + gen.rstrip("\n"))
    p = HlsimProfiler().profile(d)
    assert p.functional_check == "pass", p.functional_check
    want = 10 if "*" in index else 8
    assert (p.breakdown["ii.L_i"], p.breakdown["rec_mii.L_i"]) == (want, want)
    assert p.counters["ops.mul" if "*" in index else "ops.add"] == 32
