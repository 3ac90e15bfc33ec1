"""Measured PE-array structures (the osu018 table's ``structures``) in the area/energy model (llmulator.pecost)."""

from __future__ import annotations

import copy
import shutil
import warnings

import pytest
from llmulator import tech
from llmulator.design import load_design
from llmulator.library import resolve
from llmulator.pecost import pe_cost
from llmulator_plugins.analytical.estimator import AnalyticalEstimator
from llmulator_plugins.characterize import replay as rp_mod
from llmulator_plugins.characterize import structures as st_mod
from llmulator_plugins.characterize.liberty import Netlist
from llmulator_plugins.characterize.sta import activity_tcl
from llmulator_plugins.characterize.table import tech_yaml
from llmulator_plugins.characterize.vcd import NetActivity, VcdActivity

ARCH = """architecture:
  version: 1
  name: sys2
  clock_mhz: 1000
  technology: {tech}
  compute:
    pe_array: {{rows: 2, cols: 2, interconnect: systolic}}
    operators:
      mac: {{count: 4, bits: 8, latency_cycles: 1{mac}}}
  memory:
    - {{name: DRAM, kind: dram, width_bits: 128, bandwidth_bytes_per_cycle: 16, latency_cycles: 100}}
    - {{name: GLB, kind: sram, capacity_kib: 256, width_bits: 128, banks: 4, ports: 2, latency_cycles: 2}}
    - {{name: PE_REG, kind: regfile, capacity_kib: 0.0078125, width_bits: 32, instances: 4, latency_cycles: 0}}
"""
MAPS = {"ws": ("L_k: {tile: 2, spatial: rows}\n    L_n: {tile: 2, spatial: cols}", "[L_n, L_k, L_m]"),
        "os": ("L_m: {tile: 2, spatial: rows}\n    L_n: {tile: 2, spatial: cols}", "[L_m, L_n, L_k]")}


def _design(tmp_path, df="ws", techname="osu018", mac=""):
    a = tmp_path / f"arch-{techname}{len(mac)}.yaml"
    a.write_text(ARCH.format(tech=techname, mac=mac))
    loops, order = MAPS[df]
    m = tmp_path / f"map-{df}.yaml"
    m.write_text(f"mapping:\n  version: 1\n  name: g-{df}\n  workload: gemm\n  loops:\n    {loops}\n"
                 f"  order: {order}\n  placement: {{A: GLB, B: GLB, C: GLB}}\n")
    return load_design(a, resolve("workload", "gemm"), m, "mini")


def _estimate(d):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AnalyticalEstimator().estimate([d])[0]


def test_osu018_table_has_measured_pe_structures():
    st = tech.table("osu018")["structures"]
    for kind in ("pe_psum", "pe_os"):
        e = st[kind]["int8"]
        assert e["source"] == "measured" and e["area_um2"] > 0 and 0 < e["idle_energy_pj"] < e["energy_pj"]
    assert 0 < st["skew_reg"]["bit"]["idle_energy_pj"] < st["skew_reg"]["bit"]["energy_pj"]
    assert "structures" not in tech.table("45nm")   # the default table keeps MAC + register file


def test_pe_entry_replaces_mac_and_pe_registers_by_hand(tmp_path):
    d = _design(tmp_path)
    pc = pe_cost(d)
    assert pc is not None and pc.shape == "pe_psum" and pc.regfile == "PE_REG"
    assert pc.skew_bits == 1 * 8 + 1 * 32 + 3          # west skew, de-skew of one column, valid chain (2+2-1)
    st = tech.table("osu018")["structures"]
    pe, bit = st["pe_psum"]["int8"], st["skew_reg"]["bit"]
    e = _estimate(d)
    b = e.breakdown
    assert b["area_um2.op.mac"] == 0 and b["area_um2.PE_REG"] == 0
    assert b["area_um2.pe_array"] == pytest.approx(4 * pe["area_um2"] + 43 * bit["area_um2"])
    macs, cycles = 16 ** 3, e.metrics["cycles"]
    # the skew bits shift on every step the array advances: the nest's compute (no bank waits here: 64
    # folds of 16 streamed steps and their fill and drain, 1,351 > 4,096 MACs / 4 PEs)
    steps = b["compute_cycles.L_m"]
    assert "bank_wait_cycles.L_m" not in b and steps > macs / 4
    want = (macs * pe["energy_pj"] + (4 * cycles - macs) * pe["idle_energy_pj"]
            + 43 * (cycles * bit["idle_energy_pj"] + steps * (bit["energy_pj"] - bit["idle_energy_pj"])))
    assert b["energy_pj.pe_array"] == pytest.approx(want)
    assert b["energy_pj.op.mac"] == 0
    assert b["energy_pj.PE_REG"] == 0      # no operand accesses charged: the PE entry holds those registers


def test_the_entry_value_moves_the_estimate(tmp_path, monkeypatch):
    d = _design(tmp_path)
    before = _estimate(d)
    real = tech.table("osu018")
    doubled = copy.deepcopy(real)
    doubled["structures"]["pe_psum"]["int8"]["energy_pj"] *= 2
    doubled["structures"]["pe_psum"]["int8"]["area_um2"] *= 2
    monkeypatch.setattr(tech, "table", lambda name: doubled if name == "osu018" else real)
    after = _estimate(_design(tmp_path))   # a new design object: the estimator memoises per object
    pe = real["structures"]["pe_psum"]["int8"]
    assert after.metrics["energy_pj"] - before.metrics["energy_pj"] == pytest.approx(16 ** 3 * pe["energy_pj"])
    assert after.metrics["area_um2"] - before.metrics["area_um2"] == pytest.approx(4 * pe["area_um2"])


def test_output_stationary_uses_the_os_pe(tmp_path):
    pc = pe_cost(_design(tmp_path, "os"))
    assert pc.shape == "pe_os" and pc.skew_bits == 8 + 8   # west and north skews, no de-skew


def test_rule_off_for_45nm_and_for_stated_mac_figures(tmp_path):
    assert pe_cost(_design(tmp_path, techname="45nm")) is None
    d = _design(tmp_path, mac=", energy_pj: 50, area_um2: 20000")
    assert pe_cost(d) is None
    b = _estimate(d).breakdown
    assert "area_um2.pe_array" not in b and b["area_um2.op.mac"] == 4 * 20000


def test_structure_verilog_is_the_rtl_pe_and_the_table_section_parses():
    s = st_mod.structure("pe_psum", 8, 32)
    assert "module pe_psum_8_32 (" in s.verilog and "p_out <= p_in + prod" in s.verilog
    tb = st_mod.testbench(s, ["clk", "rst", "adv", "load"] + [f"x_in[{i}]" for i in range(8)], 50, 10.0, "idle")
    assert "adv = 1'b0" in tb and "for (i = 1; i <= 50;" in tb
    r = {"structure": "pe_psum", "bits": 8, "acc_bits": 32, "what": s.what, "register_bits": 48, "area_um2": 100.0,
         "area_seq_um2": 40.0, "energy_pj": 5.0, "idle_energy_pj": 1.0, "energy_seq_pj": 2.0, "active_cycle_pj": 5.0,
         "delay_ns": 3.0, "latency_cycles": 1}
    text = tech_yaml([], "t", ["h"], {"operators": {}, "memories": tech.table("45nm")["memories"]}, structures=[r])
    import yaml
    e = yaml.safe_load(text)["structures"]["pe_psum"]["int8"]
    assert (e["energy_pj"], e["idle_energy_pj"], e["area_um2"], e["acc_bits"]) == (5, 1, 100, 32)


def test_register_outputs_get_their_simulated_activity():
    nl = Netlist("m", ("clk", "d"), {"r": "DFFPOSX1"}, {"d": (("r", "D"),)}, {"q": (("r", "Q"),)})
    vcd = VcdActivity({"clk": NetActivity(20, 50.0), "d": NetActivity(3, 50.0), "q": NetActivity(3, 40.0)},
                      0.0, 100.0, 1e-9)
    tcl, n = activity_tcl(vcd, nl)
    assert n == 1 and "get_pins {r/Q}] 0.3 0.4" in tcl and "get_pins {r/D}] 0.3 0.5" in tcl


def test_sample_inputs_reads_each_instance_before_every_rising_edge(tmp_path):
    vcd = tmp_path / "a.vcd"
    vcd.write_text("\n".join([
        "$timescale 1ps $end", "$scope module tb $end", "$scope module dut $end", "$var wire 1 ! clk $end",
        "$scope module u_array $end", "$scope module u_pe_0_0 $end", "$var wire 1 ! clk $end",
        '$var wire 8 " x_in [7:0] $end', "$upscope $end", "$scope module u_pe_0_1 $end",
        "$var wire 8 # x_in [7:0] $end", "$upscope $end", "$upscope $end", "$upscope $end", "$upscope $end",
        "$enddefinitions $end", "#0", "0!", 'b11 "', "bx #", "#5", "1!", "#10", "0!", 'b101 "', "b1 #", "#15", "1!",
        "#20", "0!", ""]))
    rows = rp_mod.sample_inputs(vcd, ["tb", "dut", "u_array"], ["u_pe_0_0", "u_pe_0_1"], {"x_in": 8})
    assert rows == {"u_pe_0_0": [{"x_in": 3}, {"x_in": 5}], "u_pe_0_1": [{"x_in": 0}, {"x_in": 1}]}


CONV_WS = ("L_c: {fuse: [L_r, L_s], tile: 2, spatial: rows}\n    L_k: {tile: 2, spatial: cols}", "[L_k, L_c, L_p, L_q]")


CONV_MAPS = {
    "ws": CONV_WS,
    "is": ("L_c: {fuse: [L_r, L_s], tile: 2, spatial: rows}\n    L_p: {fuse: [L_q], tile: 2, spatial: cols}",
           "[L_p, L_c, L_k]"),
    "os": ("L_p: {fuse: [L_q], tile: 2, spatial: rows}\n    L_k: {tile: 2, spatial: cols}",
           "[L_k, L_p, L_c, L_r, L_s]"),
}


def _conv(tmp_path, inputs: str | None = None, df: str = "ws"):
    """conv2d (int16 arrays) on the 8-bit-MAC 2x2 array; ``inputs`` replaces the workload's input block."""
    a = tmp_path / "arch-conv.yaml"
    a.write_text(ARCH.format(tech="osu018", mac=""))
    w = tmp_path / "conv2d.yaml"
    src = resolve("workload", "conv2d").read_text()
    if inputs is not None:
        head, rest = src.split("  inputs:\n", 1)
        tail = rest[rest.index("  reference:"):]
        src = head + inputs + tail
    w.write_text(src)
    m = tmp_path / "map-conv.yaml"
    loops, order = CONV_MAPS[df]
    m.write_text(f"mapping:\n  version: 1\n  name: c-{df}\n  workload: conv2d\n  loops:\n    {loops}\n"
                 f"  order: {order}\n  placement: {{I: GLB, W: GLB, O: GLB}}\n")
    return load_design(a, w, m, "mini")


def test_an_int16_layer_on_8_bit_macs_gets_the_int16_pe_and_the_energy_its_data_toggles(tmp_path):
    """The PEs hold the int16 operands (the rtl profiler builds 16-bit PEs), so the area is the int16
    entry's; the declared inputs (0..255 and -128..127) need 9 bits, so the energy is the int8 entry's."""
    st = tech.table("osu018")["structures"]["pe_psum"]
    pc = pe_cost(_conv(tmp_path))
    assert pc.pe is st["int16"]
    assert pc.energy_pe is st["int8"]
    assert pc.skew_bits == 1 * 16 + 1 * 32 + 3          # the west skew carries 16-bit operands
    bit = tech.table("osu018")["structures"]["skew_reg"]["bit"]
    i8, i16 = st["int8"], st["int16"]
    assert pc.n_pe == 4
    # a MAC: the int8 data's switching (its active less its idle) on the int16 PE's clock (its idle); a
    # cycle without one: the int16 PE's clock (the replayed conv2d PEs: 14.9-17.1 pJ per PE-cycle of
    # sequential power, the int16 idle entry 14.8, the int8 one 10.8; docs/rtl-crosscheck.md)
    for cycles in (4.0, 8.0):
        want = (16 * (i8["energy_pj"] - i8["idle_energy_pj"] + i16["idle_energy_pj"])
                + (4 * cycles - 16) * i16["idle_energy_pj"]
                + pc.skew_bits * (cycles * bit["idle_energy_pj"] + 4 * (bit["energy_pj"] - bit["idle_energy_pj"])))
        assert pc.energy_pj(16.0, cycles) == pytest.approx(want)


def test_full_range_or_undeclared_inputs_keep_the_wide_entry_for_energy(tmp_path):
    wide = ("  inputs:\n    seed: 3\n    arrays:\n      I: {distribution: randint, range: [-30000, 30000]}\n"
            "      W: {distribution: randint, range: [-128, 127]}\n")
    assert pe_cost(_conv(tmp_path, wide)).energy_pe is None
    undeclared = "  inputs:\n    seed: 3\n    arrays:\n      W: {distribution: randint, range: [-128, 127]}\n"
    assert pe_cost(_conv(tmp_path, undeclared)).energy_pe is None


def test_a_signed_streaming_operand_toggles_the_whole_pe(tmp_path):
    """Which operand streams decides the switching: conv2d's inputs (0..255) toggle their 8 low bits in the
    int16 registers, its weights (-128..127) flip every upper bit with their sign (sign extension). Weight
    stationary streams the inputs: the int8 entry; input stationary streams the weights: the int16 PE's own;
    output stationary streams both: between the two by the multiplier's partial products,
    (8 x 16 - 8 x 8) / (16 x 16 - 8 x 8) = 1/3 of the way (docs/rtl-crosscheck.md: 0.95x, 1.21x and 1.08x
    of the gate-level replay at 4x4, where the int8 entry alone read 0.63x and 0.62x for os and is)."""
    st = tech.table("osu018")["structures"]
    assert pe_cost(_conv(tmp_path, df="ws")).energy_pe is st["pe_psum"]["int8"]
    pc = pe_cost(_conv(tmp_path, df="is"))
    assert pc.pe is st["pe_psum"]["int16"] and pc.energy_pe is None
    pc = pe_cost(_conv(tmp_path, df="os"))
    i8, i16 = st["pe_os"]["int8"], st["pe_os"]["int16"]
    assert pc.pe is i16
    for k in ("energy_pj", "idle_energy_pj"):
        assert pc.energy_pe[k] == pytest.approx(i8[k] + (i16[k] - i8[k]) / 3)




@pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys not installed (scripts/install_eda.sh)")
@pytest.mark.parametrize("dtype_in, dtype_out", [("int16", "int16"), ("int32", "int32"), ("int8", "int32")])
def test_the_pe_entry_is_the_area_of_the_pe_the_rtl_builds(tmp_path, dtype_in, dtype_out):
    """The rtl profiler's PE for this design (its plan's operand and output widths), synthesised by Yosys
    against the OSU018 liberty, against the table entry the model prices each PE at. An int16 x int16 ->
    int16 layer wraps in a 16-bit partial sum: the model took the 32-bit-accumulator int16 entry, 2.8x the
    rtl's PE (probe 17 #3); int32 operands took the int16 entry, 0.80x (#4)."""
    import subprocess

    from llmulator_plugins.characterize import flow as cz
    from llmulator_plugins.rtl.array import pe_module
    from llmulator_plugins.rtl.plan import make_plan
    from llmulator_plugins.rtl.synth import module_areas
    lib = cz.liberty_dir()
    if lib is None:
        pytest.skip("the OSU018 liberty is not installed (scripts/install_eda.sh)")
    liberty = lib / "osu018_stdcells.lib"
    a = tmp_path / "arch.yaml"
    a.write_text(ARCH.format(tech="osu018", mac=""))
    w = tmp_path / "w.yaml"   # the library's GEMM (int8 x int8 -> int32) at other widths
    src = resolve("workload", "gemm").read_text()
    w.write_text(src.replace("dtype: int8", f"dtype: {dtype_in}").replace("dtype: int32", f"dtype: {dtype_out}"))
    loops, order = MAPS["ws"]
    m = tmp_path / "m.yaml"
    m.write_text(f"mapping:\n  version: 1\n  name: ws\n  workload: gemm\n  loops:\n    {loops}\n"
                 f"  order: {order}\n  placement: {{A: GLB, B: GLB, C: GLB}}\n")
    d = load_design(a, w, m, "mini")
    (tmp_path / "pe.v").write_text(pe_module(make_plan(d)))
    (tmp_path / "pe.ys").write_text(f"read_verilog pe.v\nsynth -top pe\ndfflibmap -liberty {liberty}\n"
                                    f"abc -liberty {liberty}\ntee -q -o stat.txt stat -liberty {liberty}\n")
    subprocess.run(["yosys", "-q", "-s", "pe.ys"], cwd=tmp_path, check=True, capture_output=True, timeout=600)
    rtl_pe = module_areas((tmp_path / "stat.txt").read_text())["pe"]
    model_pe = float(pe_cost(d).pe["area_um2"])
    assert model_pe == pytest.approx(rtl_pe, rel=0.03), (model_pe, rtl_pe)


@pytest.mark.parametrize("lo, signed", [(-30000, True), (0, False)])
def test_without_an_rtl_plan_a_signed_input_still_toggles_the_whole_pe(tmp_path, lo, signed):
    """int32 x int32 -> int64 (the rtl builds no int64 PE, so there is no plan to say which operand streams):
    inputs of -30000..30000 sign-extend through the PE's upper bits, so a MAC pays the int32_acc64 PE's own
    switching; 0..30000 toggles its 15 magnitude bits, the int16_acc64 entry's. Before hlsim 0.37 both got the
    narrow entry: signed int32 -> int64 cost 126 pJ per MAC where int32 -> int32 paid its own 144 (an outside
    probe)."""
    a = tmp_path / "arch.yaml"
    a.write_text(ARCH.format(tech="osu018", mac=""))
    src = resolve("workload", "gemm").read_text().replace("dtype: int8", "dtype: int32")
    src = src.replace("dtype: int32, role: out", "dtype: int64, role: out").replace("[-128, 127]", f"[{lo}, 30000]")
    w = tmp_path / "w.yaml"
    w.write_text(src.replace("np.int32", "np.int64"))
    loops, order = MAPS["ws"]
    m = tmp_path / "m.yaml"
    m.write_text(f"mapping:\n  version: 1\n  name: ws\n  workload: gemm\n  loops:\n    {loops}\n"
                 f"  order: {order}\n  placement: {{A: GLB, B: GLB, C: GLB}}\n")
    st = tech.table("osu018")["structures"]["pe_psum"]
    pc = pe_cost(load_design(a, w, m, "mini"))
    assert pc.pe is st["int32_acc64"]
    assert pc.energy_pe is (None if signed else st["int16_acc64"])
