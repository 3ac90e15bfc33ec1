"""The rtl profiler's PE energy: which PEs are replayed gate-level, and how their figures scale to the array."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from llmulator_plugins.rtl.pe_replay import corrected_array_pj, pe_sample


def test_a_small_array_replays_every_pe_and_a_large_one_a_stratified_grid():
    assert pe_sample(SimpleNamespace(A=2, B=2)) == ["u_pe_0_0", "u_pe_0_1", "u_pe_1_0", "u_pe_1_1"]
    assert len(pe_sample(SimpleNamespace(A=4, B=4))) == 16
    big = pe_sample(SimpleNamespace(A=16, B=16))
    assert len(big) == 16 and len(set(big)) == 16
    rows = sorted({int(p.split("_")[2]) for p in big})
    cols = sorted({int(p.split("_")[3]) for p in big})
    assert rows == cols == [2, 6, 10, 14]   # every quarter of the rows and of the columns
    tall = pe_sample(SimpleNamespace(A=8, B=3))   # fewer columns than grid cells: each column once
    assert sorted({int(p.split("_")[3]) for p in tall}) == [0, 1, 2]


def test_the_replayed_difference_is_scaled_to_the_whole_array():
    flow = {"u_pe_0_0": 1.0, "u_pe_1_1": 2.0}
    replay = {"u_pe_0_0": 1.5, "u_pe_1_1": 3.5}
    # every PE sampled (n = 2): the array's figure moves by exactly the replayed difference
    assert corrected_array_pj(10.0, flow, replay, 2) == pytest.approx(12.0)
    # 2 of 8 PEs sampled: the mean difference (1.0) times 8
    assert corrected_array_pj(10.0, flow, replay, 8) == pytest.approx(18.0)
    assert corrected_array_pj(10.0, flow, {}, 8) is None
    assert corrected_array_pj(10.0, {}, replay, 8) is None


def _eda_or_none():
    """The EDA tools and the OSU018 liberty, or None: the tools alone on the path are not enough."""
    from llmulator.errors import UserError
    from llmulator_plugins.characterize import flow
    try:
        return flow.find_tools()
    except UserError:
        return None


@pytest.mark.skipif(_eda_or_none() is None, reason="needs Yosys, Icarus, OpenSTA and the OSU018 liberty "
                    "(scripts/install_eda.sh)")
def test_a_synthesised_2x2_profile_measures_every_pe_gate_level(write, tmp_path, monkeypatch):
    """Every PE of a 2x2 array replayed on its gate netlist; the array's energy moves from OpenSTA's propagated
    figure by exactly the replayed PEs' difference; each PE's replayed energy per cycle lies between the
    technology table's idle and active (random operands every cycle) figures for that PE, measured on the same
    netlist by `characterize`."""
    from llmulator_plugins.characterize import flow as cz
    from llmulator_plugins.characterize import structures as st_mod
    from llmulator_plugins.rtl.pe_replay import structure_of
    from llmulator_plugins.rtl.plan import make_plan
    from llmulator_plugins.rtl.profiler import RtlProfiler
    from test_rtl_profiler import design
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LLMULATOR_RTL_SIM", "icarus")
    d = design(write, 2, "ws", 4, 2, 2)
    prof = RtlProfiler(synthesize=True).profile(d)
    assert prof.functional_check == "pass" and prof.counters["pes_replayed"] == 4
    b = prof.breakdown
    replay = {k.split(".", 1)[1]: v for k, v in b.items() if k.startswith("pe_replay_pj_per_cycle.")}
    flow = {k.split(".", 1)[1]: v for k, v in b.items() if k.startswith("pe_opensta_pj_per_cycle.")}
    assert sorted(replay) == sorted(flow) == ["u_pe_0_0", "u_pe_0_1", "u_pe_1_0", "u_pe_1_1"]
    cycles = prof.metrics["cycles"]
    moved = (b["energy_pj.rtl.pe_array"] - b["energy_pj.rtl.pe_array.opensta"]) / cycles
    assert moved == pytest.approx(sum(replay[p] - flow[p] for p in replay), rel=1e-9)
    entry = st_mod.characterize_structure(structure_of(make_plan(d)), d.arch.clock_mhz, 1000, cz.find_tools(),
                                          tmp_path / "cache" / "rtl" / "pe-replay")
    for p, v in replay.items():
        assert entry["idle_energy_pj"] * 0.9 <= v <= entry["energy_pj"] * 1.1, (p, v, entry["energy_pj"])
    # the engines, the writer, the output queue and the buffer are replayed whole (module_replay); the logic's
    # energy moves from OpenSTA's figures by exactly their differences and the PEs'
    mods = ["wr", "old", "rd_S", "rd_X", "out_fifo", "buf_GLB"]
    assert prof.counters["modules_replayed"] == len(mods)
    moved_mods = sum(b[f"energy_pj.rtl.{m}"] - b[f"energy_pj.rtl.{m}.opensta"] for m in mods)
    opensta = sum(v for k, v in b.items() if k.startswith("energy_pj.rtl.") and k.count(".") == 2
                  and f"{k}.opensta" not in b) + sum(b[f"energy_pj.rtl.{m}.opensta"] for m in mods + ["pe_array"])
    assert b["energy_pj.logic"] == pytest.approx(opensta + moved_mods + moved * cycles, rel=1e-9)
    # a queue of 16 x 64 stored bits costs at least its flip-flops' clock (0.1215 pJ each, the liberty's)
    assert b["energy_pj.rtl.out_fifo"] / cycles >= 16 * 64 * 0.1215
    # the buffer in its parts: its own cells (the arbiter), the crossbar's bank-port selects and its read-data
    # selects, each replayed on its own recorded inputs
    parts = {p: b[f"energy_pj.rtl.buf_GLB.{p}"] for p in ("arbiter", "xin", "xout")}
    assert sum(parts.values()) == pytest.approx(b["energy_pj.rtl.buf_GLB"], rel=1e-9)
    assert all(v > 0 for v in parts.values())
