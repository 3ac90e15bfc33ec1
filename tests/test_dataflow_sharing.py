"""Overlapped ``dataflow`` tasks share what their pipelines issue to only where it lengthens them: a task waiting on
its tile transfers has slack for a slower issue (an outside probe of hlsim 0.42's first cut: two nests that each
wait 124 cycles on DRAM and share two multipliers for 64 cycles of multiplies took 156). PROBE_ARCH: mul 5 cycles,
two multipliers; DRAM latency 60 at 64 B/cycle."""

from __future__ import annotations

from conftest import PROBE_ARCH, kernel_design, profiled_and_estimated

ARRAYS = "\n".join(f"    {a}: {{shape: [N], dtype: int32, role: {r}}}" for a, r in
                   (("A", "in"), ("B", "in"), ("C", "out"), ("D", "out")))
KERNEL = ("    L_i: for (int i = 0; i < N; i++) {\n      C[i] = A[i] * 3 * 5;\n    }\n"
          "    L_j: for (int j = 0; j < N; j++) {\n      D[j] = B[j] * 7 * 9;\n    }")


def _cycles(write, n: int, dataflow: bool) -> tuple[float, dict]:
    d = kernel_design(write, PROBE_ARCH, KERNEL, ARRAYS, "    C[:] = A * 15\n    D[:] = B * 63",
                      "{L_i: {pipeline_ii: 1}, L_j: {pipeline_ii: 1}}", "{A: BRAM, B: BRAM, C: BRAM, D: BRAM}",
                      params=f"{{N: {n}}}", extra="  dataflow: true" if dataflow else "")
    p, e = profiled_and_estimated(d)
    assert e.metrics["cycles"] == p.metrics["cycles"]
    return p.metrics["cycles"], p.breakdown


def test_a_transfer_bound_task_absorbs_the_units_it_shares(write):
    """N = 32: each nest takes 124 cycles, its transfers' (its own compute, about 40, is hidden); together they issue
    128 multiplies on 2 units, 64 cycles, under the transfers: the pair overlaps in 124."""
    cycles, b = _cycles(write, 32, True)
    assert b["cycles.L_i"] == b["cycles.L_j"] == 124 and b["compute_cycles.L_i"] < 62
    assert cycles == 124


def test_a_compute_bound_pair_still_shares_the_units(write):
    """N = 256: 1,024 multiplies on 2 units need 512 cycles, beyond either nest's transfers: the overlapped pair
    takes at least that (524 here), where the sequential design takes both nests one after the other."""
    cycles, _ = _cycles(write, 256, True)
    sequential, _ = _cycles(write, 256, False)
    assert 512 <= cycles < sequential
