"""The buffer periphery term (llmulator.periphery): the memory system's registers around the banked buffer,
counted as the rtl profiler declares them and priced with the measured vector-queue bit."""

from __future__ import annotations

import re
import warnings

import pytest
from llmulator import tech
from llmulator.buflayout import layout
from llmulator.pearray import make_plan
from llmulator.periphery import engine_bits, moved_bits, periphery_bits, periphery_cost
from llmulator_plugins.analytical.estimator import AnalyticalEstimator
from llmulator_plugins.characterize import structures as st_mod
from llmulator_plugins.rtl.top import generate
from test_characterize import _tools_or_none
from test_pecost import _design

# registers of each module that the term counts (the rest of an engine is its loop-nest walker)
COUNTED = {
    "reader": re.compile(r"^(active|gd|slot_\d+|ready|cnt|h|ip|lt_\d+|lv_\d+|lw_\d+|cx_\w+)$"),
    "wr": re.compile(r"^(active|fph|vm|cur|cur_v|ct_\d+|cv_\d+|cd_\d+|cm_\d+|cf_\d+)$"),
}


def declared_registers(text: str) -> dict[str, int]:
    """Bits of every ``reg`` a Verilog module declares (arrays counted whole), by name."""
    out: dict[str, int] = {}
    for m in re.finditer(r"\breg\s*(?:\[(\d+):(\d+)\])?\s*([^;()]+);", text):
        width = int(m.group(1)) - int(m.group(2)) + 1 if m.group(1) else 1
        for item in m.group(3).split(","):
            a = re.fullmatch(r"\s*(\w+)\s*(?:\[(\d+):(\d+)\])?\s*", item)
            if a:
                depth = abs(int(a.group(3)) - int(a.group(2))) + 1 if a.group(2) else 1
                out[a.group(1)] = out.get(a.group(1), 0) + width * depth
    for m in re.finditer(r"output reg \[(\d+):(\d+)\] (\w+)", text):
        out[m.group(3)] = int(m.group(1)) - int(m.group(2)) + 1
    return out


@pytest.mark.parametrize("df", ["ws", "os"])
def test_storage_bits_are_the_registers_the_generator_declares(tmp_path, df):
    d = _design(tmp_path, df)
    plan = make_plan(d)
    lay = layout(d, plan, fit=False)
    rtl = generate(plan, lay)
    bits = periphery_bits(plan, lay)
    engines = ["wr", "old", "rd_X"] + (["rd_S"] if df == "ws" else ["rd_Y"])
    assert set(bits) == set(engines) | {"out_queue", "buf_GLB"}
    for e in engines:
        regs = declared_registers(rtl.modules[e])
        counted = {n: b for n, b in regs.items() if COUNTED["wr" if e == "wr" else "reader"].match(n)}
        assert engine_bits(plan, lay, e) == sum(counted.values()), e
        # what the term leaves out (the walker's counters) is a small part of the engine
        assert sum(regs.values()) - sum(counted.values()) < 0.2 * sum(regs.values()), e
    assert bits["out_queue"] == sum(declared_registers(rtl.modules["out_fifo"]).values())
    assert bits["buf_GLB"] == sum(declared_registers(rtl.modules["buf_GLB"]).values())


def test_moved_bits_by_hand(tmp_path):
    # gemm mini (16x16x16, int8 in, int32 out) on 2x2 ws: 8 x 8 folds of 16 stream steps; per step 2 int8
    # west inputs; per fold 4 int8 weights; per step an output vector of 2 int32, read back old and queued
    plan = make_plan(_design(tmp_path, "ws"))
    steps, folds = 64 * 16, 64
    assert (plan.total_stream_steps(), plan.fold_count()) == (steps, folds)
    assert moved_bits(plan) == {"rd_X": steps * 2 * 8, "rd_S": folds * 4 * 8, "old": steps * 2 * 32,
                                "out_queue": steps * 2 * 32}
    # os: the accumulators leave once per fold, A vectors of B
    plan = make_plan(_design(tmp_path, "os"))
    steps, folds = plan.total_stream_steps(), plan.fold_count()
    assert sum(moved_bits(plan).values()) == steps * 2 * 8 + steps * 2 * 8 + 2 * folds * 2 * 2 * 32


def test_the_estimate_charges_the_periphery_on_osu018_only(tmp_path):
    d = _design(tmp_path, "ws")
    pp = periphery_cost(d)
    q = tech.table("osu018")["structures"]["queue_bit"]["bit"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = AnalyticalEstimator().estimate([d])[0]
    b = e.breakdown
    assert b["area_um2.buffer_periphery"] == pytest.approx(pp.storage_bits * q["area_um2"])
    cycles = e.metrics["cycles"]
    assert b["energy_pj.buffer_periphery"] == pytest.approx(
        pp.storage_bits * cycles * q["idle_energy_pj"] + pp.moved_bits * q["energy_pj"], rel=1e-6)
    assert sum(pp.part_energy_pj(p, cycles) for p in pp.bits) == pytest.approx(b["energy_pj.buffer_periphery"])
    assert e.metrics["area_um2"] >= b["area_um2.buffer_periphery"] + b["area_um2.pe_array"]
    # the 45nm table has no measured structures: no periphery term, as before
    d45 = _design(tmp_path, "ws", techname="45nm")
    assert periphery_cost(d45) is None
    # an architecture that states its MAC's figures keeps the MAC rule, and has no periphery term either
    assert periphery_cost(_design(tmp_path, "ws", mac=", energy_pj: 1.0, area_um2: 100")) is None


def test_osu018_has_a_measured_queue_bit():
    q = tech.table("osu018")["structures"]["queue_bit"]["bit"]
    assert q["source"] == "measured"
    # a stored bit is a flip-flop (96 um2 in this library) with its write enable and read multiplexer
    assert 96 < q["area_um2"] < 400
    # idle: at least the flip-flop's clock pin (0.12 pJ per cycle, the skew-register bit's idle)
    skew = tech.table("osu018")["structures"]["skew_reg"]["bit"]
    assert skew["idle_energy_pj"] < q["idle_energy_pj"] < q["energy_pj"]


@pytest.mark.slow
@pytest.mark.skipif(_tools_or_none() is None,
                    reason="Yosys, Icarus Verilog, OpenSTA or the OSU018 liberty missing: run scripts/install_eda.sh")
def test_queue_bit_measured_with_the_real_tools(tmp_path):
    st = st_mod.structure("queue_bit")
    assert "module queue_16x32" in st.verilog and st.register_bits == 16 * 32
    r = st_mod.characterize_structure(st, 100.0, 200, _tools_or_none(), tmp_path)
    assert r["per_bit"] and r["cycles"] == 200
    # per stored bit: a flip-flop (96 um2) and its share of the write enables, the read multiplexer, the pointers
    assert 96 < r["area_um2"] < 400 and r["area_seq_um2"] == pytest.approx(99, rel=0.1)
    # idle: the flip-flop's clock pin at least (the liberty's DFFPOSX1 CLK rise + fall energy, 0.1215 pJ per
    # cycle, tests/test_vcdpower.py); a bit passing through costs more than a cycle of holding one
    assert 0.12 < r["idle_seq_pj"] <= r["idle_energy_pj"] < r["energy_pj"]
    e = st_mod.structure_entry(r)
    assert e["source"] == "measured" and "per stored bit" in e["note"]


def _port_width(text: str, module: str, port: str) -> int:
    body = text.split(f"module {module}")[1]
    m = re.search(r"\b(?:input|output)\s*(?:reg\s*)?\[(\d+):(\d+)\]\s*" + port + r"\b", body)
    return int(m.group(1)) - int(m.group(2)) + 1 if m else 1


@pytest.mark.parametrize("df", ["ws", "os"])
def test_crossbar_crosspoints_are_the_generated_selects(tmp_path, df):
    """Crosspoints counted from the generated buffer: each xin instance selects, one-hot over its ``sel``, among
    the requests' row addresses and the writer lanes' data and masks; each xout among every bank port's word."""
    from llmulator.periphery import crossbar_crosspoints
    d = _design(tmp_path, df)
    plan = make_plan(d)
    lay = layout(d, plan, fit=False)
    rtl = generate(plan, lay)
    buf, xin, xout = rtl.modules["buf_GLB"], rtl.modules["xin_GLB"], rtl.modules["xout_GLB"]
    n_xin = len(re.findall(r"^\s*xin_GLB\s+\w+\s*\(", buf, re.M))
    n_xout = len(re.findall(r"^\s*xout_GLB\s+\w+\s*\(", buf, re.M))
    nreq = _port_width(xin, "xin_GLB", "sel")
    per_xin = _port_width(xin, "xin_GLB", "row") + (_port_width(xin, "xin_GLB", "wdata")
                                                    + _port_width(xin, "xin_GLB", "wmask"))
    per_xout = _port_width(xout, "xout_GLB", "rd_all")
    assert nreq * _port_width(xin, "xin_GLB", "ad") == _port_width(xin, "xin_GLB", "row")
    assert crossbar_crosspoints(plan, lay) == {"xin": n_xin * per_xin, "xout": n_xout * per_xout}


def test_the_estimate_prices_the_crossbar_area_with_the_measured_crosspoints(tmp_path):
    d = _design(tmp_path, "ws")
    pp = periphery_cost(d)
    st = tech.table("osu018")["structures"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = AnalyticalEstimator().estimate([d])[0].breakdown
    want = (pp.crosspoints["xin"] * st["xbar_in"]["crosspoint"]["area_um2"]
            + pp.crosspoints["xout"] * st["xbar_out"]["crosspoint"]["area_um2"])
    assert b["area_um2.buffer_crossbar"] == pytest.approx(want) and want > 0
    assert "energy_pj.buffer_crossbar" not in b       # the crossbar has no energy term (llmulator.periphery)
    # an AND-OR crosspoint is a share of an AND gate and of an OR tree: tens of um2 in this library (AND2X2 32,
    # OR2X2 32); the synthesised crossbar of the rtl cross-check's designs: 27.6-31.1 (xin), 40.0 (xout)
    assert 15 < st["xbar_in"]["crosspoint"]["area_um2"] < 60 and 15 < st["xbar_out"]["crosspoint"]["area_um2"] < 60


@pytest.mark.skipif(_tools_or_none() is None,
                    reason="Yosys, Icarus Verilog, OpenSTA or the OSU018 liberty missing: run scripts/install_eda.sh")
@pytest.mark.parametrize("kind, crosspoints", [("xbar_in", 8 * 8 + 2 * (32 + 4)), ("xbar_out", 4 * 2 * 32)])
def test_crossbar_crosspoint_measured_with_the_real_tools(tmp_path, kind, crosspoints):
    st = st_mod.structure(kind)
    assert st.register_bits == crosspoints and "registered wrapper" in st.verilog
    r = st_mod.characterize_structure(st, 100.0, 200, _tools_or_none(), tmp_path)
    # logic alone per crosspoint (the wrapper's flip-flops, 96 um2 each, left out)
    assert 15 < r["area_um2"] < 60
    # combinational: nothing switches while the inputs hold (leakage only); random traffic costs far more
    assert r["idle_energy_pj"] < 0.01 * r["energy_pj"]
    assert "per crosspoint" in st_mod.structure_entry(r)["note"]
