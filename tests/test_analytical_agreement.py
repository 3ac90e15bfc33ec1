"""The analytical model prices what hlsim measures: hand counts for each cause of disagreement that
issue 14 found (serial chains, overlap of independent statements, fractional and triangular trips,
unbuffered transfers with DRAM latency, index-only branches, variants, unachievable II), and the
library-wide agreement on every design whose control does not depend on the data."""

from __future__ import annotations

import warnings

import pytest
from conftest import ROUND, kernel_design, profiled_and_estimated
from llmulator import library
from llmulator.design import load_design
from llmulator.inputs import inputs_for, variants
from llmulator_plugins.analytical.estimator import AnalyticalEstimator
from llmulator_plugins.hlsim.profiler import HlsimProfiler

ARCH = """
architecture:
  version: 1
  name: small
  clock_mhz: 100
  compute:
    operators:
      add: {count: 8, bits: 32, numeric: float, latency_cycles: 4}
      mul: {count: 8, bits: 32, numeric: float, latency_cycles: 3}
      cmp: {count: 8, bits: 32, numeric: int, latency_cycles: 1}
      logic: {count: 8, bits: 32, numeric: int, latency_cycles: 1}
  memory:
    - {name: DRAM, kind: dram, width_bits: 64, bandwidth_bytes_per_cycle: 8, latency_cycles: 20}
    - {name: BUF, kind: sram, capacity_kib: 64, width_bits: 32, banks: 16, ports: 2, latency_cycles: 1,
       bandwidth_bytes_per_cycle: 100000, double_buffered: DB}
"""


def named(arch: str, work: str, mapping: str, variant: str | None = None):
    return load_design(library.resolve("architecture", arch), library.resolve("workload", work),
                       library.resolve("mapping", mapping), variant=variant)


def small(write, kernel: str, arrays: str, reference: str, loops: str, placement: str, params: str = "{N: 64}",
          hints: str = "{}", double_buffered: bool = True, extra: str = ""):
    arch = ARCH.replace("DB", "true" if double_buffered else "false")
    return kernel_design(write, arch, kernel, arrays, reference, loops, placement, params, extra, hints)


def both(d, inputs=None):
    p = HlsimProfiler().profile(d, inputs)
    assert p.functional_check == "pass", p.functional_check
    return AnalyticalEstimator().estimate([d])[0], p


def test_triangular_trips_are_exact_not_taken_at_the_outer_mean(write):
    """k < j < i: the mean trips of the innermost loop per entry is sum_i sum_{j<i} j / sum_i i (hand
    count below), not j's mean bound; cycles and energy then equal hlsim's."""
    d = small(write, kernel="    L_i: for (int i = 0; i < N; i++) {\n      L_j: for (int j = 0; j < i; j++) {\n"
              "        L_k: for (int k = 0; k < j; k++) {\n          y[i] += a[j] * a[k];\n        }\n      }\n    }",
              arrays="    a: {shape: [N], dtype: fp32, role: in}\n    y: {shape: [N], dtype: fp32, role: out}",
              reference="    for i in range(N):\n        for j in range(i):\n            for k in range(j):\n"
                        "                y[i] = np.float32(y[i] + np.float32(a[j] * a[k]))",
              loops="{L_k: {pipeline_ii: 1}}", placement="{a: BUF, y: BUF}", params="{N: 24}")
    n = 24
    entries = sum(i for i in range(n))
    iters = sum(j for i in range(n) for j in range(i))
    assert d.trips("L_k") == pytest.approx(iters / entries)
    e, p = both(d)
    assert p.counters["trips.L_k"] == pytest.approx(iters / entries)
    assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=1e-9)
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-9)


def test_a_loop_that_runs_a_quarter_of_a_time_costs_a_quarter_of_a_pass(write):
    """A pipelined while loop with expected_trips 0.25 (fractional, unquoted) costs a quarter of its
    II per entry beyond the test that ends it, not a whole pass; with 1 trip, the pass or the exit test
    after it, whichever ends later (hlsim 0.38: the test that ends the loop starts at n x II)."""
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      int k = 0;\n"
              "      L_w: while (k < 4 && a[i * 4 + k] > 0) {\n        y[i] += a[i * 4 + k];\n"
              "        k++;\n      }\n    }")
    args = dict(kernel=kernel, arrays="    a: {shape: [4 * N], dtype: fp32, role: in}\n"
                "    y: {shape: [N], dtype: fp32, role: out}",
                reference="    for i in range(N):\n        k = 0\n        while k < 4 and a[i * 4 + k] > 0:\n"
                          "            y[i] = np.float32(y[i] + a[i * 4 + k])\n            k += 1",
                loops="{L_w: {pipeline_ii: 1}}", placement="{a: BUF, y: BUF}")
    quarter = small(write, hints="{L_w: {expected_trips: 0.25}}", **args)
    whole = small(write, hints="{L_w: {expected_trips: 1}}", **args)
    e4, e1 = (AnalyticalEstimator().estimate([d])[0] for d in (quarter, whole))
    depth, ii, test = (e1.breakdown[f"{k}.L_w"] for k in ("depth", "ii", "exit_test"))
    assert test == 1 + 1 + 1  # load a (BUF) 1 + cmp 1 + logic 1 (&&)
    n = 64
    # per entry: i's control (1) + k = 0 (a constant: free) + the region; L_i's 64 iterations
    assert e1.breakdown["compute_cycles.L_i"] == pytest.approx(n * (1 + max(depth, ii + test)))
    assert e4.breakdown["compute_cycles.L_i"] == pytest.approx(n * (1 + max(0.25 * depth, 0.25 * ii + test)))


def test_a_static_loop_whose_depth_is_below_its_ii_pays_no_exit_test(write):
    """`o[i][j] = 10` pipelined at II 2 (depth 1), unroll 2: only a loop a test the data decide ends pays that
    test; the analytical model's first 0.48 added the floor `groups x II` to static loops too (1 cycle an entry
    where depth < II: 40 synth-v3 rows of input-independent designs off by up to 3.8 %)."""
    d = small(write, kernel="    L_i: for (int i = 0; i < N; i++) {\n      L_j: for (int j = 0; j < 24; j++) {\n"
                            "        y[i * 24 + j] = 10.0f;\n      }\n    }",
              arrays="    y: {shape: [24 * N], dtype: fp32, role: out}", reference="    y[:] = 10",
              loops="{L_j: {pipeline_ii: 2, unroll: 2}}", placement="{y: BUF}", params="{N: 16}")
    e, p = both(d)
    assert (p.breakdown["depth.L_j"], p.breakdown["ii.L_j"]) == (1, 2)
    assert e.breakdown["compute_cycles.L_i"] == p.breakdown["compute_cycles.L_i"] == 16 * (1 + 1 + 11 * 2)


def test_transfers_add_to_compute_with_dram_latency_per_burst_when_not_double_buffered(write):
    """y[i] = a[i] * 2 over 4 tiles of 16 with a and y in BUF: each tile is one burst in and one out
    of 16 x 4 bytes at 8 B/cycle (8 cycles) plus DRAM latency 20; double-buffered the bursts hide
    behind compute (one latency exposed), otherwise all 8 bursts add their latency and their time."""
    args = dict(kernel="    L_i: for (int i = 0; i < N; i++) {\n      y[i] = a[i] * 2.0f;\n    }",
                arrays="    a: {shape: [N], dtype: fp32, role: in}\n    y: {shape: [N], dtype: fp32, role: out}",
                reference="    y[:] = a * np.float32(2)", loops="{L_i: {tile: 16}}", placement="{a: BUF, y: BUF}")
    db = small(write, **args)
    sb = small(write, double_buffered=False, **args)
    e_db, p_db = both(db)
    e_sb, p_sb = both(sb)
    transfer_db = 2 * (4 * 8 + 20)  # a in, y out: 4 bursts of 8 cycles each, one latency exposed
    transfer_sb = 2 * 4 * (8 + 20)
    assert e_db.breakdown["transfer_cycles.L_i"] == transfer_db
    assert e_sb.breakdown["transfer_cycles.L_i"] == transfer_sb
    compute = e_sb.breakdown["compute_cycles.L_i"]
    assert e_sb.metrics["cycles"] == compute + transfer_sb == p_sb.metrics["cycles"]
    # double-buffered, the work still waits for a's first tile (latency 20 + 8 cycles) and y's last leaves after it
    # (8 + latency 20): hlsim 0.45-0.46 (before, max(compute, transfers): the first tile's trip hidden behind nothing)
    assert e_db.metrics["cycles"] == max(compute + 20 + 8 + 8 + 20, transfer_db) == p_db.metrics["cycles"]
    assert e_sb.breakdown["stall_cycles.L_i.transfer"] == transfer_sb


def test_independent_statements_overlap_and_a_serial_chain_does_not(write):
    """Two independent products in one body are scheduled side by side (depth 1 + 3 + 1 = 5, not 10);
    a chain through a local is their sum. Both models share the schedule."""
    indep = small(write, kernel="    L_i: for (int i = 0; i < N; i++) {\n      y[i] = a[i] * 3.0f;\n"
                  "      z[i] = a[i] * 5.0f;\n    }",
                  arrays="    a: {shape: [N], dtype: fp32, role: in}\n    y: {shape: [N], dtype: fp32, role: out}\n"
                         "    z: {shape: [N], dtype: fp32, role: out}",
                  reference="    y[:] = a * np.float32(3)\n    z[:] = a * np.float32(5)", loops="{}",
                  placement="{a: BUF, y: BUF, z: BUF}")
    e, p = both(indep)
    # one tile each: a arrives first (latency 20 + 256 bytes at 8 a cycle), y and z leave after (2 x 32) and the last
    # write lands (20): hlsim 0.45-0.46
    assert e.metrics["cycles"] == p.metrics["cycles"] == 64 * (1 + 5) + (20 + 32) + 2 * 32 + 20


def test_an_unachievable_ii_is_reported_and_its_stall_explained():
    """mvt-opt asks for II 1; memory ports force II 20 on L_i2 (20 reads of one bank per iteration):
    the estimate says so in its notes, as an HLS log would, and the terms hold the stall's cycles."""
    e = AnalyticalEstimator().estimate([named("hls-fpga", "mvt", "mvt-opt")])[0]
    assert any("L_i2: pipeline_ii 1 is not achievable" in n and "memory ports need II >= 20" in n for n in e.notes)
    assert e.breakdown["ii.L_i2"] == 20
    stall = e.breakdown["ii_stall_cycles.L_i2.memory_port"]
    assert stall == (e.breakdown["trips.L_i2"] - 1) * (20 - 1)
    assert e.terms["ii_stall_cycles"] >= stall


def test_index_only_branches_are_counted_not_guessed():
    """nussinov's branches test loop indices only (`i < j - 1`): their taken share is exact (brute
    force below), no hint is asked for, and the estimate equals hlsim's measurement."""
    d = named("hls-fpga", "nussinov", "nussinov-plain")
    n = d.sizes["N"]
    pairs = [(i, j) for i in range(n - 1, -1, -1) for j in range(i + 1, n)]
    inner = [(i, j) for i, j in pairs if j - 1 >= 0 and i + 1 < n]
    br = next(b for b in d.tree.walk() if getattr(b, "kind", "") == "branch" and b.cond_text == "i < (j - 1)")
    assert d.branch_probability(br) == (pytest.approx(sum(i < j - 1 for i, j in inner) / len(inner)), None)
    e, p = both(d)
    assert not any("taken_probability" in x for x in e.notes)
    assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=1e-9)


@pytest.mark.parametrize("mapping", ["histogram-plain", "histogram-opt", "spmv-ell-opt", "relu-gemm-opt"])
def test_the_estimate_follows_the_input_variant(mapping):
    """Each variant's hints reach the model: between any two variants the analytical estimate moves in
    the direction hlsim measures, and no numpy warning reaches the user."""
    e = library.entries("mapping")
    entry = next(x for x in e if x["name"] == mapping)
    base = named(entry["architecture"], entry["workload"], mapping)
    vs = variants(base.workload)
    assert vs
    est, prof = AnalyticalEstimator(), HlsimProfiler()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        p0 = prof.profile(base).metrics["cycles"]
        a0 = est.estimate([base])[0].metrics["cycles"]
        for v in vs:
            d = named(entry["architecture"], entry["workload"], mapping, v)
            pv = prof.profile(d, inputs_for(d, None, v)).metrics["cycles"]
            av = est.estimate([d])[0].metrics["cycles"]
            assert (pv - p0) * (av - a0) > 0, (v, pv / p0, av / a0)


def test_every_static_library_design_agrees_with_hlsim():
    """The issue's goal, library-wide: on every design whose trips and branches do not depend on the
    data, analytical cycles, energy and area within 5 % of hlsim's (they share every schedule)."""
    est, prof = AnalyticalEstimator(), HlsimProfiler()
    off = []
    for entry in library.entries("mapping"):
        if "workload" not in entry:
            continue
        d = named(entry["architecture"], entry["workload"], entry["name"])
        if any((getattr(n, "kind", "") == "branch" and n.data_dependent) or
               (getattr(n, "kind", "") == "loop" and (n.data_dependent or n.is_while)) for n in d.tree.walk()):
            continue
        p, e = prof.profile(d), est.estimate([d])[0]
        for m in ("cycles", "energy_pj", "area_um2"):
            if abs(e.metrics[m] / p.metrics[m] - 1) > 0.05:
                off.append((entry["name"], m, e.metrics[m] / p.metrics[m]))
    assert not off, off


def test_an_array_on_an_inner_level_comes_from_dram_not_from_a_level_that_never_holds_it():
    """gemm-gemmini-like places C in the accumulator (level 2) and nothing of C in the scratchpad
    (level 1): the 64 x 64 results go back to DRAM once (they used to be written to the scratchpad
    and never reach DRAM), in both models."""
    d = named("gemmini-like", "gemm", "gemm-gemmini-like")
    e, p = both(d)
    n = d.sizes["M"] * d.sizes["N"]
    assert p.counters["writes.DRAM"] == e.breakdown["writes.DRAM"] == n
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-9)


def test_an_index_only_branch_is_counted_even_when_a_hint_guesses_otherwise(write):
    """`i < 16` (of 64) is taken on a quarter of the iterations whatever the input: a hint of 0.9 (written
    by a user or a generator) does not override the control flow, and the estimate equals hlsim's."""
    d = small(write, kernel="    L_i: for (int i = 0; i < N; i++) {\n      L_b: if (i < 16) {\n"
              "        y[i] = a[i] * 3.0f;\n      }\n    }",
              arrays="    a: {shape: [N], dtype: fp32, role: in}\n    y: {shape: [N], dtype: fp32, role: out}",
              reference="    y[:16] = a[:16] * np.float32(3)", loops="{}", placement="{a: BUF, y: BUF}",
              hints="{L_b: {taken_probability: 0.9}}")
    br = next(b for b in d.tree.walk() if getattr(b, "kind", "") == "branch")
    assert d.branch_probability(br) == (0.25, None)
    e, p = both(d)
    assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=1e-9)


def test_a_variant_without_hints_is_named_in_the_notes():
    """A static model sees an input variant only through its hints: bfs's `core` variant sets none for
    its data-dependent edge and visit loops, and the estimate says so instead of silently using the
    base expectation; a variant that sets every hint gets no such note."""
    notes = AnalyticalEstimator().estimate([named("hls-fpga", "bfs", "bfs-plain", "core")])[0].notes
    assert any("input variant 'core' gives no hint for L_edge, L_visit" in n for n in notes), notes
    notes = AnalyticalEstimator().estimate([named("hls-fpga", "spmv-ell", "spmv-ell-opt", "skewed")])[0].notes
    assert not any("gives no hint" in n for n in notes), notes


def test_a_statement_before_the_loop_costs_its_accesses_at_their_levels(write):
    """``o1[0] = a0[0];`` before a recurrence (synth-v3's s1-0007395 shape): the statement reads a0 once
    from DRAM and writes o1 once into the buffer; hand count and hlsim agree, and so does the energy
    (analytical 0.9 counted the statement's cycles but not its two accesses)."""
    d = small(write, kernel="    o1[0] = a0[0];\n    L_1: for (int i = 1; i < N; i++) {\n"
              "      o1[i] = 0.16f * a0[i] + 0.77f * o1[i - 1];\n    }",
              arrays="    a0: {shape: [N], dtype: fp32, role: in}\n    o1: {shape: [N], dtype: fp32, role: out}",
              reference="    o1[0] = a0[0]\n    for i in range(1, N):\n"
                        "        o1[i] = np.float32(np.float32(np.float32(0.16) * a0[i]) + "
                        "np.float32(np.float32(0.77) * o1[i - 1]))",
              loops="{L_1: {pipeline_ii: 1}}", placement="{a0: DRAM, o1: BUF}", params="{N: 8}")
    e, p = both(d)
    # a0[0] by the statement, a0[1..7] by the loop (a0 lives in DRAM); and since hlsim 0.27 the loop's tile of
    # o1 (8 words: o1[i - 1] and o1[i] over i < 8), which the loop loads because the statement wrote o1[0]
    # before it and the recurrence reads it (per nest; before, o1[0] was never brought back)
    assert e.breakdown["reads.DRAM"] == 8 + 8
    # o1[0] by the statement, o1[1..7] by the loop; and the loop's tile load of o1 (8)
    assert e.breakdown["writes.BUF"] == 8 + 8
    assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=1e-9)
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-9)


def test_a_branch_on_an_input_element_follows_the_declared_distribution_not_the_hint(write):
    """``if (x[j] > 0)`` with x drawn from [0, 1] is always taken, and from [-1, 0] (a variant) never: the
    analytical model reads that off the distribution (llmulator.branch_inputs) and equals hlsim, which
    runs the data, where the hint of 0.5 (synth's branch mutation writes one whatever the range) would
    be off both ways."""
    a = write("arch.yaml", ARCH.replace("DB", "true"))
    w = write("w.yaml", """
workload:
  version: 1
  name: w
  parameters: {N: 32}
  arrays:
    A: {shape: [N, N], dtype: fp32, role: in}
    x: {shape: [N], dtype: fp32, role: in}
    y: {shape: [N], dtype: fp32, role: out}
  kernel: |
    L_i: for (int i = 0; i < N; i++) {
      float t = 0.0f;
      L_j: for (int j = 0; j < N; j++) {
        L_b: if (x[j] > 0) {
          t += A[i][j] * x[j];
        }
      }
      y[i] = t;
    }
  hints: {L_b: {taken_probability: 0.5}}
  inputs:
    arrays:
      x: {distribution: uniform, range: [0, 1]}
    variants:
      negative:
        arrays:
          x: {distribution: uniform, range: [-1, 0]}
  reference: |
    for i in range(N):
        t = np.float32(0)
        for j in range(N):
            if x[j] > 0:
                t = np.float32(t + np.float32(A[i][j] * x[j]))
        y[i] = t
""")
    m = write("m.yaml", "mapping:\n  version: 1\n  name: m\n  loops: {}\n  placement: {A: BUF, x: BUF, y: BUF}\n")
    for variant, share in ((None, 1.0), ("negative", 0.0)):
        d = load_design(a, w, m, variant=variant)
        br = next(b for b in d.tree.walk() if getattr(b, "kind", "") == "branch")
        assert d.branch_probability(br) == (share, None)
        e, p = both(d)
        assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=1e-9), variant
        assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-9), variant


def test_a_loop_over_a_csr_row_is_priced_row_by_row_from_the_declared_structure(write):
    """``for (j = p[i]; j < p[i + 1]; j++)`` under a csr structure: with ``row_skew`` most rows are empty and
    a pipelined loop pays its depth only on the rows that run, which the mean (the hint NNZ / N, the same
    for both variants) cannot say; the row lengths the structure makes (llmulator.structure_trips) can,
    and the estimate equals hlsim's for the even and the skewed pattern (synth-v3's s1-0011940 shape,
    where analytical 0.11 said 1,527 cycles for hlsim's 722)."""
    a = write("arch.yaml", ARCH.replace("DB", "true"))
    w = write("w.yaml", """
workload:
  version: 1
  name: w
  parameters: {N: 24, M: 24, NNZ: 96}
  arrays:
    p: {shape: [N + 1], dtype: int32, role: in}
    c: {shape: [NNZ], dtype: int32, role: in}
    v: {shape: [NNZ], dtype: fp32, role: in}
    x: {shape: [M], dtype: fp32, role: in}
    y: {shape: [N], dtype: fp32, role: out}
  kernel: |
    L_i: for (int i = 0; i < N; i++) {
      float s = 0.0f;
      L_j: for (int j = p[i]; j < p[i + 1]; j++) {
        s += v[j] * x[c[j]];
      }
      y[i] = s;
    }
  hints: {L_j: {expected_trips: NNZ / N}}
  inputs:
    structures:
      - {kind: csr, row_ptr: p, col_idx: c, rows: N, cols: M, nnz: NNZ}
    variants:
      skewed:
        structures:
          - {kind: csr, row_ptr: p, col_idx: c, rows: N, cols: M, nnz: NNZ, row_skew: 1.5}
  reference: |
    for i in range(N):
        s = np.float32(0)
        for j in range(p[i], p[i + 1]):
            s = np.float32(s + np.float32(v[j] * x[c[j]]))
        y[i] = s
""")
    m = write("m.yaml", "mapping:\n  version: 1\n  name: m\n  loops: {L_j: {pipeline_ii: 1}}\n"
                        "  placement: {p: BUF, c: BUF, v: BUF, x: BUF, y: BUF}\n")
    empty = {}
    for variant in (None, "skewed"):
        d = load_design(a, w, m, variant=variant)
        profile = d.trip_profile("L_j")
        assert profile is not None and len(profile) == 24 and sum(profile) == 96
        empty[variant] = profile.count(0)
        e, p = both(d)
        assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=1e-9), variant
        assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-9), variant
    assert empty[None] == 0 and empty["skewed"] > 6  # even rows of 4; Zipf 1.5 leaves many rows empty


# the head of a workload over one int32 input a [N] and one output o [N], N = 16
ONE_INT_IN_OUT = """
workload:
  version: 1
  name: w
  parameters: {N: 16}
  arrays:
    a: {shape: [N], dtype: int32, role: in}
    o: {shape: [N], dtype: int32, role: out}
"""


def test_a_while_loop_runs_the_trips_its_declared_inputs_make_not_the_hint(write):
    """A Collatz loop over an input element (synth-v3's generated form): with every element 6 it runs 8
    trips and with 27 the cap of 16 (the variant), whatever the hint of 3 says; the analytical model runs
    the loop's control on draws of the declared inputs (llmulator.input_trips) and equals hlsim, which
    runs the data, in cycles and energy."""
    a = write("arch.yaml", ARCH.replace("DB", "true").replace(
        "      logic: {count: 8, bits: 32, numeric: int, latency_cycles: 1}",
        "      logic: {count: 8, bits: 32, numeric: int, latency_cycles: 1}\n"
        "      shift: {count: 8, bits: 32, numeric: int, latency_cycles: 1}"))
    w = write("w.yaml", ONE_INT_IN_OUT + """  kernel: |
    L_i: for (int i = 0; i < N; i++) {
      int x = a[i];
      int c = 0;
      L_w: while (x > 1 && c < 16) {
        x = (x & 1) ? 3 * x + 1 : x >> 1;
        c++;
      }
      o[i] = c;
    }
  hints: {L_w: {expected_trips: 3}}
  inputs:
    arrays:
      a: {distribution: constant, value: 6}
    variants:
      long:
        arrays:
          a: {distribution: constant, value: 27}
  reference: |
    for i in range(N):
        x = int(a[i]); c = 0
        while x > 1 and c < 16:
            x = 3 * x + 1 if x & 1 else x >> 1
            c += 1
        o[i] = c
""")
    m = write("m.yaml", "mapping:\n  version: 1\n  name: m\n  loops: {}\n  placement: {a: BUF, o: BUF}\n")
    for variant, trips in ((None, 8), ("long", 16)):
        d = load_design(a, w, m, variant=variant)
        assert d.trips("L_w") == trips
        e, p = both(d)
        assert any(n.startswith(f"L_w: {trips} trips per entry") and "hint (3) is not read" in n for n in e.notes)
        assert not any("gives no hint" in n for n in e.notes)  # the variant needs none
        assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=1e-9), variant
        assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-9), variant


def test_a_branch_over_declared_inputs_follows_its_condition_on_draws_and_equals_hlsim(write):
    """``int v = a[i] * 3; if ((v & 1) == 0)``: not a comparison of one element with a constant, so
    branch_inputs cannot integrate it; its condition run on draws of the declared inputs
    (llmulator.input_trips) says always taken for a = 4 and never for a = 5 (the variant), where the hint
    says 0.5, and the estimate equals hlsim's in cycles and energy."""
    a = write("arch.yaml", ARCH.replace("DB", "true"))
    w = write("w.yaml", ONE_INT_IN_OUT + """  kernel: |
    L_i: for (int i = 0; i < N; i++) {
      int v = a[i] * 3;
      L_b: if ((v & 1) == 0) {
        o[i] = v * v + 1;
      } else {
        o[i] = 0;
      }
    }
  hints: {L_b: {taken_probability: 0.5}}
  inputs:
    arrays:
      a: {distribution: constant, value: 4}
    variants:
      odd:
        arrays:
          a: {distribution: constant, value: 5}
  reference: |
    for i in range(N):
        v = int(a[i]) * 3
        o[i] = v * v + 1 if v % 2 == 0 else 0
""")
    m = write("m.yaml", "mapping:\n  version: 1\n  name: m\n  loops: {}\n  placement: {a: BUF, o: BUF}\n")
    for variant, share in ((None, 1.0), ("odd", 0.0)):
        d = load_design(a, w, m, variant=variant)
        br = next(b for b in d.tree.walk() if getattr(b, "kind", "") == "branch")
        assert d.branch_probability(br) == (share, None)
        e, p = both(d)
        assert f"L_b: taken {share:.3g} of the time, from the distributions its condition reads; its " \
               "taken_probability hint (0.5) is not read" in e.notes
        assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=1e-9), variant
        assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-9), variant


def test_what_follows_a_loop_that_returns_runs_on_the_runs_it_does_not_end(write):
    """A search loop that stores the index and ``return``s on a match: with every element 5 it matches on
    the first trip and the kernel ends (the statements after the loop never run); with 7 (the variant) it
    runs all 16 trips and then stores -1. The analytical model runs the loop on draws of the declared inputs,
    counts the runs a ``return`` ends (``input_trips.input_return_share``: 1 and 0) and prices what follows
    on the rest; it equals hlsim in cycles and energy on both, where the hint says 8 trips."""
    a = write("arch.yaml", ARCH.replace("DB", "true"))
    w = write("w.yaml", ONE_INT_IN_OUT + """  kernel: |
    int i = 0;
    L_s: while (i < N) {
      L_hit: if (a[i] == 5) {
        o[0] = i;
        return;
      }
      i++;
    }
    o[0] = -1;
    o[1] = o[0] * 3 + 2;
  hints: {L_s: {expected_trips: 8}}
  inputs:
    arrays:
      a: {distribution: constant, value: 5}
    variants:
      miss:
        arrays:
          a: {distribution: constant, value: 7}
  reference: |
    hit = [i for i in range(N) if a[i] == 5]
    if hit:
        o[0] = hit[0]
    else:
        o[0] = -1
        o[1] = o[0] * 3 + 2
""")
    m = write("m.yaml", "mapping:\n  version: 1\n  name: m\n  loops: {}\n  placement: {a: BUF, o: BUF}\n")
    got = {}
    for variant, trips, share in ((None, 1, 1.0), ("miss", 16, 0.0)):
        d = load_design(a, w, m, variant=variant)
        assert d.trips("L_s") == trips and d.return_share("L_s") == share
        e, p = both(d)
        assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=1e-9), variant
        # energy: the hit's last trip skips its ``i++`` after the return (one float add, 0.9 of 11,379 pJ),
        # which the static count charges to every trip of the loop
        assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-4), variant
        got[variant] = e
    # the tail is real work that the hit skips: pricing it on every run would make the hit dearer
    assert got[None].metrics["cycles"] < got["miss"].metrics["cycles"]
    assert got[None].breakdown["return_share.L_s"] == 1.0 and "return_share.L_s" not in got["miss"].breakdown



def test_overlapped_nests_share_the_dram_bandwidth(write):
    """`dataflow: true` over two independent nests, C = A + 1 and D = B * 3: 512 DRAM words in and 512 out at 4 B
    per cycle need 1,024 cycles whatever overlaps, after the DRAM's latency of 10; hlsim said so, the analytical
    model took the longest nest alone (below what the words need; an outside energy audit)."""
    arrays = ("    A: {shape: [N], dtype: int32, role: in}\n    B: {shape: [N], dtype: int32, role: in}\n"
              "    C: {shape: [N], dtype: int32, role: out}\n    D: {shape: [N], dtype: int32, role: out}")
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      C[i] = A[i] + 1;\n    }\n"
              "    L_j: for (int j = 0; j < N; j++) {\n      D[j] = B[j] * 3;\n    }")
    loops = "{L_i: {pipeline_ii: 1}, L_j: {pipeline_ii: 1}}"
    d = kernel_design(write, ROUND.replace("RF", ""), kernel, arrays, "    C[:] = A + 1\n    D[:] = B * 3", loops,
                      "{A: SRAM, B: SRAM, C: SRAM, D: SRAM}", params="{N: 256}", extra="  dataflow: true")
    p, e = profiled_and_estimated(d)
    assert p.counters["reads.DRAM"] + p.counters["writes.DRAM"] == 1024
    assert p.breakdown["cycles.L_i"] + p.breakdown["cycles.L_j"] > 1024  # they overlap
    assert p.metrics["cycles"] == e.metrics["cycles"] == 1024 + 10  # after the DRAM's latency (hlsim 0.46)


@pytest.mark.parametrize("consumer, reference", [("C[j] = T[j] * B[j];", "C[:] = (A + B) * B"),
                                                 ("C[j] = T[N - 1 - j] * B[j];", "C[:] = (A + B)[::-1] * B")])
def test_a_dataflow_consumer_waits_for_the_buffer_it_reads(write, consumer, reference):
    """`dataflow: true` over T = A + B then a nest reading T: T is a ping-pong buffer between the two tasks (Vitis
    HLS's channel for an array), so the consumer starts when the producer has written all of it, and the run takes
    the two nests one after the other. hlsim 0.38 overlapped them: with the consumer reading T backwards, it ended
    before the producer had written the element it read first (an outside probe: 95 cycles where the chain needs
    131)."""
    arrays = ("    A: {shape: [N], dtype: int32, role: in}\n    B: {shape: [N], dtype: int32, role: in}\n"
              "    T: {shape: [N], dtype: int32, role: temp}\n    C: {shape: [N], dtype: int32, role: out}")
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      T[i] = A[i] + B[i];\n    }\n"
              f"    L_j: for (int j = 0; j < N; j++) {{\n      {consumer}\n    }}")
    loops = "{L_i: {pipeline_ii: 1}, L_j: {pipeline_ii: 1}}"
    d = kernel_design(write, ROUND.replace("RF", ""), kernel, arrays, "    " + reference, loops,
                      "{A: SRAM, B: SRAM, T: SRAM, C: SRAM}", params="{N: 256}", extra="  dataflow: true")
    p, e = profiled_and_estimated(d)
    both = p.breakdown["cycles.L_i"] + p.breakdown["cycles.L_j"]
    assert both > 1024  # above the shared DRAM bound: the order decides
    assert p.metrics["cycles"] == e.metrics["cycles"] == both


@pytest.mark.parametrize("ii, alone, total", [(1, (95, 97), 129 + 2 + 60), (2, (126, 128), 130 + 60)])
def test_overlapped_nests_share_a_dram_channel_they_both_issue_to(write, ii, alone, total):
    """`dataflow: true` over `C[i] = A[i] + 1` and `D[j] = B[j] * 2`, A and B read from DRAM (one channel, 60
    cycles; add 3, mul 5), 32 elements each, both at II 1: the 64 loads take the channel one a cycle, so the last
    one issues at 63 at the earliest and its result is stored at 63 + 60 + 3 + 1 = 127 at the earliest. Taking
    turns (the model: each nest gets half the channel), L_j's last load issues at 63: 63 + 60 + 5 + 1 = 129.
    hlsim 0.39 let the nests overlap as if each had the channel to itself (97: the slower nest alone; an
    outside probe). At II 2 each takes the channel every other cycle: together they fill it, neither waits (128,
    the slower alone, and D's 128 bytes leave for DRAM after it, 2 cycles at 64 a cycle: hlsim 0.45). Since hlsim
    0.46 the last write's latency (60) is exposed too, after the shared issue: 129 + 2 + 60 = 191 at II 1 and
    128 + 2 + 60 = 190 at II 2."""
    from conftest import PROBE_ARCH
    arrays = ("    A: {shape: [N], dtype: int32, role: in}\n    B: {shape: [N], dtype: int32, role: in}\n"
              "    C: {shape: [N], dtype: int32, role: out}\n    D: {shape: [N], dtype: int32, role: out}")
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      C[i] = A[i] + 1;\n    }\n"
              "    L_j: for (int j = 0; j < N; j++) {\n      D[j] = B[j] * 2;\n    }")
    loops = f"{{L_i: {{pipeline_ii: {ii}}}, L_j: {{pipeline_ii: {ii}}}}}"
    d = kernel_design(write, PROBE_ARCH, kernel, arrays, "    C[:] = A + 1\n    D[:] = B * 2", loops,
                      "{A: DRAM, B: DRAM, C: BRAM, D: BRAM}", params="{N: 32}", extra="  dataflow: true")
    p, e = profiled_and_estimated(d)
    assert (p.breakdown["compute_cycles.L_i"], p.breakdown["compute_cycles.L_j"]) == alone  # each alone
    assert p.metrics["cycles"] == e.metrics["cycles"] == total
