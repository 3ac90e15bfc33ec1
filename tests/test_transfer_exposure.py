"""What double buffering cannot hide, and the backing store's latency, against hand counts (an outside probe of
hlsim 0.44: a loop whose compute outlasted its tile transfers paid no DRAM latency at all, 995 cycles where the
first element cannot arrive before cycle 200; a loop streaming from DRAM took its bytes' time without the
latency; a partial-sum reload paid a burst for every visit of its tile; and of hlsim 0.45: a nest of one tile ran
faster double-buffered than single-buffered, a top-level statement's work hid behind its own word's trip; and of
analytical 0.56: multi-level tiling priced no latency). DRAM: 4 bytes a cycle, latency 200 (10 for the reloads);
an SRAM buffer of 16 KiB; add 1 cycle."""

from __future__ import annotations

import pytest
from conftest import ROUND, kernel_design, profiled_and_estimated
from llmulator.errors import InvariantError
from llmulator_plugins.hlsim import bounds

# conftest's round-figure architecture with two SRAM ports, the DRAM latency (LAT) and double buffering (DB) set
ARCH = (ROUND.replace("RF", "").replace("latency_cycles: 10,", "latency_cycles: LAT,").replace("ports: 1,", "ports: 2,")
        .replace("double_buffered: false", "double_buffered: DB"))
VINC = ("    L_i: for (int i = 0; i < N; i++) {\n      C[i] = A[i] + 1;\n    }",
        "    A: {shape: [N], dtype: int32, role: in}\n    C: {shape: [N], dtype: int32, role: out}", "    C[:] = A + 1")


def _vinc(write, loops: str, placement: str = "{A: SRAM, C: SRAM}", lat: int = 200, db: bool = True):
    arch = ARCH.replace("LAT", str(lat)).replace("DB", "true" if db else "false")
    p, e = profiled_and_estimated(kernel_design(write, arch, *VINC, loops, placement, params="{N: 32}"))
    assert e.metrics["cycles"] == p.metrics["cycles"]
    return p


@pytest.mark.parametrize(("loops", "cycles"), [
    # one tile: compute 32 x 31 + 3 = 995, after A's 128 bytes arrive (200 + 32) and before C's leave and land
    # (32 + 200)
    ("{L_i: {pipeline_ii: 32}}", 995 + 200 + 32 + 32 + 200),
    # tiles of 8: the first tile of A (200 + 8) before the work, the last of C (8 + 200) after it
    ("{L_i: {tile: 8, pipeline_ii: 32}}", 912 + 200 + 8 + 8 + 200),
])
def test_double_buffering_does_not_hide_the_first_tile_or_the_last(write, loops, cycles):
    p = _vinc(write, loops)
    assert p.metrics["cycles"] == cycles >= 200 + p.breakdown["compute_cycles.L_i"]


@pytest.mark.parametrize("lat", [10, 200])
def test_one_tile_is_no_faster_double_buffered(write, lat):
    """A nest of one tile, one array in and one out, has nothing to overlap its transfers with: double-buffered it
    takes what it takes single-buffered, 995 + (lat + 32) in + (32 + lat) out (hlsim 0.45: the last write's latency
    was not exposed, 108 where 118 at latency 10; an outside probe). With two arrays in, the single-buffered rule
    pays the latency per array and stays slower (docs/timing-model.md, section 2)."""
    db, sb = (_vinc(write, "{L_i: {pipeline_ii: 32}}", lat=lat, db=flag) for flag in (True, False))
    assert db.metrics["cycles"] == sb.metrics["cycles"] == 995 + 2 * (lat + 32)


@pytest.mark.parametrize("db", [True, False])
def test_top_level_statements_wait_for_their_words(write, db):
    """`s0 = A[0]` before the loop and `S[0] = s0 * 3` after it: each statement's word crosses the DRAM (latency
    200, 1 cycle of bytes) with nothing to overlap it, double-buffered or not: the read's 201 then its 1 cycle of
    work, and the multiply's 3 then the write's 201 (hlsim 0.45 double-buffered: max(1, 201) and max(3, 201), the
    work dropped; an outside probe)."""
    kernel = ("    int s0 = A[0];\n" + VINC[0].replace("A[i] + 1", "A[i] + s0") + "\n    S[0] = s0 * 3;")
    arrays = VINC[1] + "\n    S: {shape: [1], dtype: int32, role: out}"
    arch = ARCH.replace("LAT", "200").replace("DB", "true" if db else "false")
    d = kernel_design(write, arch, kernel, arrays, "    C[:] = A + A[0]\n    S[0] = A[0] * 3",
                      "{L_i: {pipeline_ii: 32}}", "{A: SRAM, C: SRAM, S: SRAM}", params="{N: 32}")
    p, e = profiled_and_estimated(d)
    assert p.breakdown["cycles.stmt0"] == 201 + 1
    assert p.breakdown["cycles.stmt2"] == 3 + 201
    # the loop between them: one tile, 995 + 2 x (200 + 32) either way (above)
    assert p.metrics["cycles"] == e.metrics["cycles"] == 202 + 995 + 2 * (200 + 32) + 204


def test_a_stream_from_dram_pays_its_latency_once_before_its_bytes(write):
    """A and C in DRAM on a 64-bit bus of 4 bytes a cycle, read and written by the loop itself at II 1: each
    int32 access takes a whole 8-byte bus word, 64 x 8 / 4 = 128 cycles of bytes after 10 of latency: 138 (the
    loop's own schedule is shorter; hlsim 0.44: the bytes' time alone, 128)."""
    arch = ARCH.replace("LAT", "10").replace("DB", "false").replace("32, bandwidth", "64, bandwidth")
    p, e = profiled_and_estimated(kernel_design(write, arch, *VINC, "{L_i: {pipeline_ii: 1}}", "{A: DRAM, C: DRAM}",
                                                params="{N: 32}"))
    assert p.metrics["cycles"] == e.metrics["cycles"] == 128 + 10


def test_the_bound_refuses_a_nest_faster_than_the_backing_stores_latency():
    from pathlib import Path

    from llmulator.design import load_design
    root = Path(__file__).resolve().parents[1]
    d = load_design(root / "arch_specs/hls-fpga.yaml", root / "workloads/atax.yaml",
                    root / "mappings/atax-hls-fpga.yaml")
    lat = d.arch.memory[0].latency_cycles
    run = bounds.NestRun("L_i", cycles=float(lat), bits={d.arch.memory[0].name: 8.0})
    with pytest.raises(InvariantError, match="latency"):
        bounds.check(d, [run], float(lat))


def test_partial_sums_come_back_in_a_burst_per_reload_not_per_visit(write):
    """y = A x in tiles of 8 with the j tiles outside the i tiles (order [L_j, L_i], N 16, not double-buffered,
    latency 10): y's two tiles are written after each of the 2 j tiles (4 bursts) and read back only on the second
    (2 reloads, not 4: 20 cycles of latency fewer than hlsim 0.44 charged)."""
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      L_j: for (int j = 0; j < N; j++) {\n"
              "        y[i] = (j == 0 ? 0 : y[i]) + A[i][j] * x[j];\n      }\n    }")
    arrays = ("    A: {shape: [N, N], dtype: int32, role: in}\n    x: {shape: [N], dtype: int32, role: in}\n"
              "    y: {shape: [N], dtype: int32, role: out}")
    arch = ARCH.replace("LAT", "10").replace("DB", "false")
    loops = "{L_i: {tile: 8}, L_j: {tile: 8, pipeline_ii: 1}}"
    d = kernel_design(write, arch, kernel, arrays, "    y[:] = A @ x", loops, "{A: SRAM, x: SRAM, y: SRAM}",
                      params="{N: 16}", extra="  order: [L_j, L_i]\n")
    p, e = profiled_and_estimated(d)
    # A: 4 tiles of 64 words, x: one tile of 8 per j tile (2), y: 4 write-backs and 2 reloads of 8 words: 320
    # words, 1,280 bytes at 4 a cycle; 4 + 2 + 4 + 2 bursts of 10 cycles (0.44: 4 reloads' bursts, 460)
    assert p.breakdown["transfer_cycles.L_i"] == 1280 / 4 + (4 + 2 + 4 + 2) * 10
    assert e.breakdown["transfer_cycles.L_i"] == p.breakdown["transfer_cycles.L_i"]


def test_a_loop_under_a_top_level_if_exposes_its_first_tile_too(write):
    """`if (N > 0) { the loop }` runs the same loop as without the `if`: 1,459 cycles, not its compute alone (995,
    below the 200 cycles before A's first element arrives: hlsim 0.45's first cut dropped the exposure of loops
    under a top-level `if`; an outside probe)."""
    kernel = "    if (N > 0) {\n" + "\n".join("  " + ln for ln in VINC[0].splitlines()) + "\n    }"
    arch = ARCH.replace("LAT", "200").replace("DB", "true")
    d = kernel_design(write, arch, kernel, VINC[1], VINC[2], "{L_i: {pipeline_ii: 32}}", "{A: SRAM, C: SRAM}",
                      params="{N: 32}")
    p, e = profiled_and_estimated(d)
    assert p.metrics["cycles"] == e.metrics["cycles"] == 995 + 200 + 32 + 32 + 200


@pytest.mark.parametrize(("bw", "lat", "cycles"), [
    # 512 MAC steps (Timeloop's count) after the first word's 2,000 cycles and before the last write's 2,000
    (4, 2000, 512 + 2 * 2000),
    # 768 bytes at a quarter byte a cycle: 3,072 cycles of bandwidth, above the 512 steps
    (0.25, 10, 768 * 4 + 2 * 10),
])
def test_multi_level_tiling_pays_the_backing_stores_latency_and_bandwidth(write, bw, lat, cycles):
    """An 8^3 int32 GEMM tiled over DRAM / SRAM / RF with ``mapping.levels`` (the Timeloop-style nest analysis):
    its DRAM moves 192 words, 768 bytes. Analytical 0.56 gave 512 cycles at a latency of 2,000, below the 2,192 the
    bytes and the latency need, and ignored a level's bandwidth given in bytes a cycle (an outside probe)."""
    mac = "      mac: {count: 8, bits: 32, latency_cycles: 1, energy_pj: 5.0, area_um2: 500, leakage_mw: 0}\n"
    rf = ("    - {name: RF, kind: regfile, capacity_kib: 0.25, width_bits: 32, latency_cycles: 0, read_energy_pj: 1,"
          " write_energy_pj: 1, leakage_mw: 0, double_buffered: false}\n")
    arch = (ROUND.replace("  memory:\n", mac + "  memory:\n").replace("RF", rf)
            .replace("bandwidth_bytes_per_cycle: 4, latency_cycles: 10", f"bandwidth_bytes_per_cycle: {bw}, "
                     f"latency_cycles: {lat}"))
    kernel = ("    L_m: for (int m = 0; m < M; m++) {\n      L_n: for (int n = 0; n < N; n++) {\n"
              "        L_k: for (int k = 0; k < K; k++) {\n          C[m][n] += A[m][k] * B[k][n];\n"
              "        }\n      }\n    }")
    arrays = ("    A: {shape: [M, K], dtype: int32, role: in}\n    B: {shape: [K, N], dtype: int32, role: in}\n"
              "    C: {shape: [M, N], dtype: int32, role: out}")
    levels = ("  levels:\n    - {level: DRAM, temporal: {L_m: 2}, order: [L_m]}\n"
              "    - {level: SRAM, temporal: {L_m: 4, L_n: 8}, order: [L_m, L_n]}\n"
              "    - {level: RF, temporal: {L_k: 8}, order: [L_k]}\n")
    d = kernel_design(write, arch, kernel, arrays, "    C[:] = A @ B", "{}", "{}", params="{M: 8, N: 8, K: 8}",
                      extra=levels)
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    e = AnalyticalEstimator().estimate([d])[0]
    dram = sum(e.terms[f"accesses.DRAM.{a}.{k}"] for a in "ABC" for k in ("reads", "fills", "updates")
               if f"accesses.DRAM.{a}.{k}" in e.terms)
    assert dram == 192
    assert e.metrics["cycles"] == cycles >= 768 / bw + lat
