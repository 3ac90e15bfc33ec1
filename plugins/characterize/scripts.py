"""The Yosys script, the netlist's ports and the random-vector testbench of one operator module.
"""

from __future__ import annotations

import re
from pathlib import Path

from .opverilog import OpModule

# --------------------------------------------------------------------------------------------
# tool scripts

def yosys_script(mod: OpModule, liberty: str | Path, src: str = "op.v", netlist: str = "net.v",
                 stat: str = "stat.txt") -> str:
    """Synthesis to the liberty's cells plus an export OpenSTA can read (docs/technology.md)."""
    lib = str(liberty)
    return "\n".join([
        f"read_verilog {src}",
        f"synth -top {mod.name}",
        "flatten",   # submodules (the MAC's multiplier) were synthesised on their own; one flat netlist
        f"dfflibmap -liberty {lib}",
        f"abc -liberty {lib}",
        "opt_clean",
        "setundef -zero",
        "splitnets -ports",
        "opt_clean -purge",
        "insbuf -buf BUFX2 A Y",
        f"rename -top {mod.name}",
        f"tee -q -o {stat} stat -liberty {lib}",
        f"write_verilog -noattr -noexpr -nohex -nodec {netlist}",
        ""])


def netlist_ports(netlist: str, top: str) -> list[str]:
    """Port names of the top module of a Yosys netlist, unescaped (``a[0]``, ``clk``)."""
    m = re.search(r"\bmodule\s+" + re.escape(top) + r"\s*\((.*?)\)\s*;", netlist, re.S)
    if not m:
        raise ValueError(f"module {top} not found in the netlist")
    return [_unescape(p) for p in _split_ports(m.group(1))]


def _split_ports(text: str) -> list[str]:
    out, cur = [], ""
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":  # escaped identifier: up to the next whitespace
            j = i
            while j < len(text) and not text[j].isspace():
                j += 1
            cur += text[i:j]
            i = j
            continue
        if c == ",":
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    if cur.strip():
        out.append(cur.strip())
    return [p for p in out if p]


def _unescape(name: str) -> str:
    name = name.strip()
    return name[1:].strip() if name.startswith("\\") else name


def tb_dut(name: str, inputs, outputs, ports: list[str], reset: bool = False,
           free: tuple[str, ...] = ("clk", "rst")) -> list[str]:
    """The head of a testbench: a clock, a register per input and a wire per output at their widths
    (``(name, width)`` pairs), and the synthesised DUT, each netlist port (``ports``, bit-split names)
    connected to its bit of those signals (``free``: port names the testbench drives itself)."""
    widths = dict(inputs) | dict(outputs)
    lines = ["`timescale 1ns/1ps", "module tb;", "  reg clk = 1'b0;"]
    if reset:
        lines.append("  reg rst = 1'b1;")
    for nm, w in inputs:
        lines.append(f"  reg [{w - 1}:0] {nm} = {w}'d0;" if w > 1 else f"  reg {nm} = 1'b0;")
    for nm, w in outputs:
        lines.append(f"  wire [{w - 1}:0] {nm};" if w > 1 else f"  wire {nm};")
    conns = []
    for p in ports:
        m = re.fullmatch(r"(\w+)\[(\d+)\]", p)
        base, bit = (m.group(1), int(m.group(2))) if m else (p, None)
        if base not in widths and base not in free:
            raise ValueError(f"netlist port '{p}' is not a port of {name}")
        sig = base if bit is None else f"{base}[{bit}]"
        esc = f"\\{p} " if not re.fullmatch(r"[A-Za-z_]\w*", p) else p
        conns.append(f".{esc}({sig})")
    lines.append(f"  {name} dut (" + ", ".join(conns) + ");")
    return lines


def testbench(mod: OpModule, ports: list[str], vectors: int, period_ns: float, seed: int = 1,
              warmup: int = 4, vcd: str = "act.vcd") -> str:
    """A testbench that drives uniformly random operands every cycle and dumps the DUT's nets.

    ``ports`` are the netlist's (bit-split) port names; the testbench connects each to the matching
    bit of a vector signal of the original width. Dumping starts after ``warmup`` cycles (and the
    reset of stateful operators), so the VCD holds exactly ``vectors`` clock cycles.
    """
    lines = tb_dut(mod.name, mod.inputs, mod.outputs, ports, mod.reset)
    half = period_ns / 2.0
    lines.append(f"  always #{half:g} clk = ~clk;")
    lines.append(f"  integer i, seed = {int(seed)};")
    draw = []
    for nm, _w in mod.inputs:
        draw.append(f"{nm} = $random(seed);")
        if nm in mod.nonzero:
            draw.append(f"if ({nm} == 0) {nm} = 1;")
    step = " ".join(draw)
    lines += ["  task draw; begin " + step + " end endtask",
              "  initial begin",
              f"    repeat ({max(int(warmup), 2)}) @(negedge clk) draw;"]
    if mod.reset:
        lines.append("    @(negedge clk) begin rst = 1'b0; draw; end")
    lines += [f'    $dumpfile("{vcd}");',
              "    $dumpvars(1, tb.dut);",
              f"    for (i = 0; i < {int(vectors)}; i = i + 1) @(negedge clk) draw;",
              "    $dumpflush;",
              "    $finish;",
              "  end",
              "endmodule", ""]
    return "\n".join(lines)
