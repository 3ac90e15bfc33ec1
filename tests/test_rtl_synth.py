"""rtl synthesis helpers that need no EDA tools: the constant ties of the power netlist (synth.tie_constants)
and their activity annotation."""

from __future__ import annotations

from pathlib import Path

from llmulator_plugins.characterize import flow as cz
from llmulator_plugins.rtl import synth

NET = """module pe(clk, a, y);
  input clk;
  input a;
  output y;
  wire t;
  AND2X1 g (
    .A(a),
    .B(1'b1),
    .Y(t)
  );
  DFFPOSX1 r (
    .CLK(clk),
    .D(t),
    .Q(y)
  );
endmodule

module pe_array(clk, y0, y1);
  input clk;
  output y0;
  output y1;
  wire q;
  assign q = 1'b0;
  pe u_pe_0_0 (
    .a(1'b0),
    .clk(clk),
    .y(y0)
  );
  pe u_pe_0_1 (
    .a( 1'b0 ),
    .clk(clk),
    .y(y1)
  );
endmodule
"""


def test_tie_constants_names_the_constant_pins_per_module():
    out = synth.tie_constants(NET)
    mods = synth.split_modules(out)
    assert "1'b" not in mods["pe"] and ".B(llm_tie1)" in mods["pe"]
    assert mods["pe"].count("wire llm_tie1;") == 1 and "llm_tie0" not in mods["pe"]
    arr = mods["pe_array"]
    assert arr.count(".a(llm_tie0)") == 2 and arr.count("wire llm_tie0;") == 1
    assert "assign q = 1'b0;" in arr       # assignments stay (only pin connections crash OpenSTA)
    assert synth.instance_paths(out, top="pe_array") == synth.instance_paths(NET, top="pe_array")
    assert synth.tie_constants(out) == out  # idempotent


def test_tie_wire_load_pins_get_zero_activity():
    out = synth.tie_constants(NET)
    mods, paths = synth.split_modules(out), synth.instance_paths(out, top="pe_array")
    pins = {"AND2X1": {"A": {"direction": "input"}, "B": {"direction": "input"}, "Y": {"direction": "output"}},
            "DFFPOSX1": {"CLK": {"direction": "input", "clock": True}, "D": {"direction": "input"},
                         "Q": {"direction": "output"}}}
    vcd = cz.VcdActivity({}, 0.0, 100.0, 1e-9)
    tcl, n = synth.activity_tcl(vcd, mods, paths, "u_pe_0_0", pins, 10.0)
    assert "sta::set_power_pin_activity [get_pins {g/B}] 0 0.5" in tcl
    assert n == 1


def test_yosys_script_buffers_and_sizes_against_the_period():
    abc = [ln for ln in synth.yosys_script(Path("/l.lib"), 1000.0).splitlines() if ln.startswith("abc ")]
    assert len(abc) == 1 and "-D 1000 " in abc[0]
    assert abc[0].endswith("&nf;&put;buffer,-c;topo;stime,-c;upsize,-c,{D};dnsize,-c,{D}")
    plain = [ln for ln in synth.yosys_script(Path("/l.lib")).splitlines() if ln.startswith("abc ")]
    assert "-D" not in plain[0] and plain[0].endswith("&nf;&put")
