"""Overlapped ``dataflow`` tasks share what their pipelines issue to only where it lengthens them: a task waiting on
its tile transfers has slack for a slower issue (an outside probe of hlsim 0.42's first cut: two nests that each
wait 124 cycles on DRAM and share two multipliers for 64 cycles of multiplies took 156), but what waits in series
with the issue (the first tile in, the last out) is no slack. PROBE_ARCH: mul 5 cycles, two multipliers; DRAM
latency 60 at 64 B/cycle."""

from __future__ import annotations

from conftest import PROBE_ARCH, kernel_design, profiled_and_estimated

ARRAYS = "\n".join(f"    {a}: {{shape: [N], dtype: int32, role: {r}}}" for a, r in
                   (("A", "in"), ("B", "in"), ("C", "out"), ("D", "out")))
KERNEL = ("    L_i: for (int i = 0; i < N; i++) {\n      C[i] = A[i] * 3 * 5;\n    }\n"
          "    L_j: for (int j = 0; j < N; j++) {\n      D[j] = B[j] * 7 * 9;\n    }")


def _cycles(write, n: int, dataflow: bool, bw: int = 64, tile: int | None = None) -> tuple[float, dict]:
    t = f", tile: {tile}" if tile else ""
    d = kernel_design(write, PROBE_ARCH.replace("bandwidth_bytes_per_cycle: 64", f"bandwidth_bytes_per_cycle: {bw}"),
                      KERNEL, ARRAYS, "    C[:] = A * 15\n    D[:] = B * 63",
                      f"{{L_i: {{pipeline_ii: 1{t}}}, L_j: {{pipeline_ii: 1{t}}}}}",
                      "{A: BRAM, B: BRAM, C: BRAM, D: BRAM}", params=f"{{N: {n}}}",
                      extra="  dataflow: true" if dataflow else "")
    p, e = profiled_and_estimated(d)
    assert e.metrics["cycles"] == p.metrics["cycles"]
    return p.metrics["cycles"], p.breakdown


def test_a_transfer_bound_task_absorbs_the_units_it_shares(write):
    """N = 64 in tiles of 8 on a DRAM of 2 bytes a cycle: each nest takes 376 cycles, its transfers' (2 x (60 +
    128)); its compute, 168, hides behind them. Together they issue 256 multiplies on 2 units, 128 cycles, within
    that slack: what bounds the pair is the channel they share, 1,024 bytes after the latency, 60 + 512 (hlsim 0.46;
    0.45 took the bytes' 512 alone, below what the latency allows)."""
    cycles, b = _cycles(write, 64, True, bw=2, tile=8)
    assert b["cycles.L_i"] == b["cycles.L_j"] == b["transfer_cycles.L_i"] == 376 > b["compute_cycles.L_i"] + 128
    assert cycles == 60 + 1024 / 2


def test_sharing_lengthens_the_issue_between_the_first_tile_and_the_last(write):
    """N = 32, one tile each: a nest waits for its first tile (60 + 2), issues (44 alone) and drains (2 + 60): 168.
    Overlapped, the two nests' 128 multiplies take the 2 units for 64 cycles between those waits, so the pair takes
    at least 62 + 64 + 62 = 188 (hlsim 0.45 took 168, the slack it saw being the exposed transfers that run in
    series with the issue), and less than one nest after the other (336)."""
    cycles, b = _cycles(write, 32, True)
    assert b["cycles.L_i"] == b["compute_cycles.L_i"] + 124 == 168
    sequential, _ = _cycles(write, 32, False)
    assert 62 + 64 + 62 <= cycles < sequential == 336


def test_a_compute_bound_pair_still_shares_the_units(write):
    """N = 256: 1,024 multiplies on 2 units need 512 cycles, beyond either nest's transfers: the overlapped pair
    takes at least that (524 here), where the sequential design takes both nests one after the other."""
    cycles, _ = _cycles(write, 256, True)
    sequential, _ = _cycles(write, 256, False)
    assert 512 <= cycles < sequential
