"""Power priced from a gate-level VCD with the liberty's tables (plugins/characterize/vcdpower.py), checked by
hand against the OSU018 liberty's numbers."""

from __future__ import annotations

import pytest
from llmulator_plugins.characterize import vcdpower as vp
from llmulator_plugins.characterize.liberty import parse_liberty_pins, parse_netlist
from llmulator_plugins.characterize.vcd import NetActivity, VcdActivity
from test_characterize import _tools_or_none

NET = """module t (clk, a, y);
  input clk; input a; output y; wire n1;
  INVX1 u1 (.A(a), .Y(n1));
  DFFPOSX1 r (.CLK(clk), .D(n1), .Q(y));
endmodule
"""

pytestmark = pytest.mark.skipif(_tools_or_none() is None, reason="the OSU018 liberty is missing: run "
                                                                  "scripts/install_eda.sh")


@pytest.fixture(scope="module")
def lib():
    text = _tools_or_none().liberty.read_text()
    return parse_liberty_pins(text), vp.parse_liberty_power(text)


def _vcd(**toggles) -> VcdActivity:
    return VcdActivity({n: NetActivity(t, 0.0) for n, t in toggles.items()}, 0.0, 100.0, 1e-9)


def test_liberty_tables_read_as_written(lib):
    _pins, power = lib
    clk_rise, clk_fall = power["DFFPOSX1"].passive["CLK"]
    # the CLK pin's 6x1 tables over input transition (0.06, 0.24, ...): 0.006865 / 0.11034 at 0.06 ns,
    # 0.006943 / 0.129769 at 0.24 ns
    assert clk_rise.at(input_transition_time=0.06) == pytest.approx(0.006865)
    assert clk_fall.at(input_transition_time=0.24) == pytest.approx(0.129769)
    assert clk_fall.at(input_transition_time=0.10) == pytest.approx(0.11034 + (0.129769 - 0.11034) * 0.04 / 0.18)
    assert clk_fall.at(input_transition_time=0.0) == pytest.approx(0.11034)      # clamped, not extrapolated
    # OAI21X1's output Y has one internal-energy arc per input pin (A, B, C)
    assert len(power["OAI21X1"].arcs["Y"]) == 3


def test_a_held_flip_flop_costs_its_clock_pin_and_leakage(lib):
    pins, power = lib
    nl = parse_netlist(NET, "t", pins)
    outs = vp.cell_outputs(NET, pins)
    e = vp.vcd_energy_per_cycle(_vcd(clk=20), nl, outs, pins, power, 1.8)   # 10 cycles, nothing else moves
    clock = 0.006865 + (0.006943 - 0.006865) * 0.04 / 0.18 + 0.11034 + (0.129769 - 0.11034) * 0.04 / 0.18
    assert e["sequential"]["internal"] == pytest.approx(clock, rel=1e-6)             # 0.1215 pJ per cycle
    assert e["combinational"]["internal"] == 0 and e["total"]["switching"] == 0
    leak = (power["DFFPOSX1"].leakage_nw + power["INVX1"].leakage_nw) * 1e-9 * 100e-9 * 1e12 / 10
    assert e["total"]["leakage"] == pytest.approx(leak)
    assert e["total"]["total"] == pytest.approx(clock + leak)


def test_toggles_cost_internal_energy_and_the_load_they_switch(lib):
    pins, power = lib
    nl = parse_netlist(NET, "t", pins)
    outs = vp.cell_outputs(NET, pins)
    idle = vp.vcd_energy_per_cycle(_vcd(clk=20), nl, outs, pins, power, 1.8)
    e = vp.vcd_energy_per_cycle(_vcd(clk=20, a=4, n1=4, y=4), nl, outs, pins, power, 1.8)
    c_d = pins["DFFPOSX1"]["D"]["capacitance"]          # n1's load: the flip-flop's D pin
    rise, fall = power["INVX1"].arcs["Y"][0]
    at = {"total_output_net_capacitance": c_d, "input_transition_time": vp.SLEW_NS}
    inv = 4 / 2 * (rise.at(**at) + fall.at(**at)) / 10
    d_rise, d_fall = power["DFFPOSX1"].passive["D"]
    d_pin = 4 / 2 * (d_rise.at(input_transition_time=vp.SLEW_NS) + d_fall.at(input_transition_time=vp.SLEW_NS)) / 10
    assert e["combinational"]["internal"] == pytest.approx(inv)
    assert e["combinational"]["switching"] == pytest.approx(4 * 0.5 * c_d * 1.8 ** 2 / 10)
    q_rise, q_fall = power["DFFPOSX1"].arcs["Q"][0]
    q = 4 / 2 * (q_rise.at(total_output_net_capacitance=0.0, input_transition_time=vp.SLEW_NS)
                 + q_fall.at(total_output_net_capacitance=0.0, input_transition_time=vp.SLEW_NS)) / 10
    assert e["sequential"]["internal"] - idle["sequential"]["internal"] == pytest.approx(d_pin + q)
