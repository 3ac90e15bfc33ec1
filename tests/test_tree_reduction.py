"""`reduction: tree` against hand counts (an outside probe of hlsim 0.42's first cut, which gave each tree level the
latency of the statement's last operation, so a tree of maxima took the select's 1 cycle per level where the compare
and the select take 2, and charged the exit tree to every group of a loop unrolled without pipelining).
PROBE_ARCH: add 3, cmp 2, select 0, BRAM load 2 on two ports; N = 32, `a` cyclic-partitioned by U."""

from __future__ import annotations

import pytest
from conftest import PROBE_ARCH, kernel_design, profiled_and_estimated

ARRAYS = "    a: {shape: [N], dtype: int32, role: in}\n    y: {shape: [1], dtype: int32, role: out}"
SUM = ("    int s = 0;\n    L_i: for (int i = 0; i < N; i++) {\n      s += a[i];\n    }\n    y[0] = s;",
       "    y[0] = a.sum()")
MAX = ("    int s = -1000000;\n    L_i: for (int i = 0; i < N; i++) {\n      s = s > a[i] ? s : a[i];\n    }\n"
       "    y[0] = s;", "    y[0] = max(a.max(), -1000000)")


def _loop(write, form, u: int, pipelined: bool):
    kernel, ref = form
    loops = f"{{L_i: {{{'pipeline_ii: 1, ' if pipelined else ''}unroll: {u}, reduction: tree}}}}"
    d = kernel_design(write, PROBE_ARCH, kernel, ARRAYS, ref, loops, "{a: BRAM, y: BRAM}", params="{N: 32}",
                      extra=f"  partition: {{a: {{type: cyclic, factor: {u}}}}}\n")
    p, e = profiled_and_estimated(d)
    assert e.metrics["cycles"] == p.metrics["cycles"]
    return p.breakdown


@pytest.mark.parametrize(("u", "depth", "cycles"), [(2, 6, 36), (4, 8, 22), (8, 11, 17)])
def test_a_tree_of_maxima_takes_the_compare_and_the_select_per_level(write, u, depth, cycles):
    """Pipelined at II 2 (the compare and select of one copy's partial): U = 8: the last group starts at 6, its
    loads are ready at 8, its compares done at 10 (11 for the copies loaded a cycle later), then 3 levels of
    compare 2 + select 0: 17 (the first cut: 14, a level of 1 cycle)."""
    b = _loop(write, MAX, u, True)
    assert (b["ii.L_i"], b["depth.L_i"], b["compute_cycles.L_i"]) == (2, depth, cycles)


@pytest.mark.parametrize(("form", "u", "cycles"), [(SUM, 2, 99), (SUM, 4, 54), (MAX, 4, 44)])
def test_an_unrolled_loop_meets_its_partials_once_on_exit(write, form, u, cycles):
    """Unrolled, not pipelined: each of the N / U groups costs its copies' schedule and the loop's control cycle,
    the tree once after the last: sum U = 4: 8 groups x (load 2 + add 3 + 1) + 2 levels x 3 = 54 (every group paid
    the tree: 96; at U = 2 the tree cost what the serial chain does, 144)."""
    assert _loop(write, form, u, False)["compute_cycles.L_i"] == cycles


MAC_ARCH = PROBE_ARCH.replace("probe-arch", "mac-probe").replace(
    "      mul: {count: 2,", "      mac: {count: 8, bits: 32, numeric: int, latency_cycles: 1}\n      mul: {count: 2,")


@pytest.mark.parametrize(("form", "u", "ops"), [(SUM, 8, {"add": 39}), (SUM, 2, {"add": 33}),
                                                  (MAX, 4, {"cmp": 35, "select": 35})])
def test_the_trees_combining_steps_are_operations(write, form, u, ops):
    """32 updates and U - 1 combining steps (a sum's add; a maximum's compare and select), in ``ops.*`` and so in
    energy, in hlsim and the analytical model alike (before hlsim 0.44: 32, the tree's steps were depth only)."""
    kernel, ref = form
    loops = f"{{L_i: {{pipeline_ii: 1, unroll: {u}, reduction: tree}}}}"
    d = kernel_design(write, PROBE_ARCH, kernel, ARRAYS, ref, loops, "{a: BRAM, y: BRAM}", params="{N: 32}",
                      extra=f"  partition: {{a: {{type: cyclic, factor: {u}}}}}\n")
    p, e = profiled_and_estimated(d)
    for cls, n in ops.items():
        assert (p.counters[f"ops.{cls}"], e.breakdown[f"ops.{cls}"]) == (n, n)
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-9)


def test_a_mac_tree_meets_on_an_adder_it_allocates(write):
    """`s += a[i] * b[i]` on a mac unit, unrolled 4 ways with a tree, entered once per row of 3: 96 macs, and
    3 x 3 adds that meet the partials; at least one adder in the area (before: `units.add` 0, no add counted)."""
    kernel = ("    L_r: for (int r = 0; r < 3; r++) {\n      int s = 0;\n      L_i: for (int i = 0; i < N; i++) {\n"
              "        s += a[r][i] * b[r][i];\n      }\n      y[r] = s;\n    }")
    arrays = ("    a: {shape: [3, N], dtype: int32, role: in}\n    b: {shape: [3, N], dtype: int32, role: in}\n"
              "    y: {shape: [3], dtype: int32, role: out}")
    d = kernel_design(write, MAC_ARCH, kernel, arrays, "    y[:] = (a.astype(np.int64) * b).sum(axis=1)",
                      "{L_i: {pipeline_ii: 1, unroll: 4, reduction: tree}}", "{a: BRAM, b: BRAM, y: BRAM}",
                      params="{N: 32}", extra="  partition: {a: {type: cyclic, factor: 4, dim: 2}, "
                                           "b: {type: cyclic, factor: 4, dim: 2}}\n")
    p, e = profiled_and_estimated(d)
    assert (p.counters["ops.mac"], p.counters["ops.add"]) == (96, 9)
    assert (e.breakdown["ops.mac"], e.breakdown["ops.add"]) == (96, 9)
    assert p.counters["units.add"] >= 1 and p.breakdown["area_um2.op.add"] > 0
    assert e.metrics["area_um2"] == p.metrics["area_um2"]


@pytest.mark.parametrize(("pipelined", "registered"), [(False, False), (True, True)])
def test_only_a_pipelined_loop_pays_pipeline_registers(write, pipelined, registered):
    """`depth x 32 bits` per used resource of a *pipelined* region (docs/timing-model.md, section 4); a loop
    unrolled without pipelining runs its groups one after another and holds no stage registers (before hlsim 0.44
    it paid them as a pipeline would)."""
    kernel, ref = SUM
    loops = f"{{L_i: {{{'pipeline_ii: 1, ' if pipelined else ''}unroll: 4, reduction: tree}}}}"
    d = kernel_design(write, PROBE_ARCH, kernel, ARRAYS, ref, loops, "{a: BRAM, y: BRAM}", params="{N: 32}",
                      extra="  partition: {a: {type: cyclic, factor: 4}}\n")
    p, e = profiled_and_estimated(d)
    assert (p.breakdown["area_um2.pipeline_registers"] > 0) is registered
    assert e.metrics["area_um2"] == p.metrics["area_um2"]
