"""The characterize flow: measure energy, area and latency per operator class and width.

For each operator class and width the flow

1. generates a small registered Verilog module (inputs registered, output registered),
2. synthesises it with Yosys against a liberty file (area from ``stat -liberty``, a gate netlist),
3. times it with OpenSTA (``report_checks``: the register-to-register critical path),
4. simulates the gate netlist in Icarus Verilog with random input vectors and dumps a VCD of the
   netlist's nets, turns the VCD into per-pin switching activity (toggles per clock, duty) on every
   load pin, annotates it in OpenSTA (``sta::set_power_pin_activity``) and reads ``report_power``,
5. converts power at the clock into energy per operation (one operation per cycle: E = P / f) and
   the delay into ``latency_cycles = ceil(delay / period)`` (at least 1),

and writes a technology table in the layout of ``llmulator/tech/45nm.yaml``. Each design's result
is cached in a work folder, so an interrupted run continues where it stopped. Everything here that
does not run a tool (Verilog and testbench generation, the VCD, liberty and netlist parsers, the
Tcl and YAML writers) is a pure function, tested without the tools. See docs/technology.md.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs
from llmulator.errors import UserError

FLOW_VERSION = 2
CLASSES = ("add", "mul", "mac", "cmp", "logic", "shift", "select", "div")
DEFAULT_BITS = (8, 16, 32)
INSTALL_HINT = "run `bash scripts/install_eda.sh` (apt: yosys, iverilog, opensta; the OSU018 liberty into .eda/osu018)"
ROOT = Path(__file__).resolve().parents[2]
LIB_NAME = "osu018_stdcells.lib"
CELLS_NAME = "osu018_stdcells.v"
# node and supply of the measured library, and of the 45 nm table the memories are scaled from
NODE_NM, VDD = 180, 1.8
BASE_TECH, BASE_NODE_NM, BASE_VDD = "45nm", 45, 0.9


# --------------------------------------------------------------------------------------------
# operator modules

@attrs.frozen
class OpModule:
    """One registered operator: ports (name, width), the Verilog text and what it computes."""

    op_class: str
    bits: int
    name: str
    verilog: str
    inputs: tuple[tuple[str, int], ...]   # data inputs (registered), without clk/rst
    outputs: tuple[tuple[str, int], ...]
    reset: bool                          # has a synchronous reset input `rst` (state that must start known)
    nonzero: tuple[str, ...] = ()        # inputs the testbench keeps non-zero (divisor)
    what: str = ""                       # one line for the table's note

    @property
    def register_bits(self) -> int:
        return sum(w for _, w in self.inputs) + sum(w for _, w in self.outputs)


def mac_acc_bits(bits: int) -> int:
    """Accumulator width of a bits x bits MAC: 32 for int8, 48 for int16, 80 for int32."""
    return min(4 * bits, 2 * bits + 16)


def _clog2(n: int) -> int:
    return max(1, (n - 1).bit_length())


def operator_module(op_class: str, bits: int) -> OpModule:
    """The registered Verilog module of one operator class at one width (two's-complement integers)."""
    if op_class not in CLASSES:
        raise UserError(f"unknown operator class '{op_class}' (known: {', '.join(CLASSES)})")
    if bits < 2:
        raise UserError(f"operand width must be at least 2 bits, got {bits}")
    n = bits
    name = f"op_{op_class}_{n}"
    ab = (("a", n), ("b", n))
    reset = False
    nonzero: tuple[str, ...] = ()
    if op_class == "add":
        ins, outs = ab, (("y", n),)
        body = "y <= a_r + b_r;"
        what = f"{n}-bit adder, carry out dropped"
    elif op_class == "mul":
        ins, outs = ab, (("y", 2 * n),)
        body = "y <= a_r * b_r;"
        what = f"{n}x{n} signed multiplier, full {2 * n}-bit product"
    elif op_class == "mac":
        acc = mac_acc_bits(n)
        ins, outs = ab, (("y", acc),)
        reset = True
        body = f"y <= rst ? {acc}'sd0 : y + p;"
        what = (f"{n}x{n} signed multiplier feeding a {acc}-bit accumulate adder "
                "(the accumulator is the output register)")
    elif op_class == "cmp":
        ins, outs = ab, (("y", 1),)
        body = "y <= a_r < b_r;"
        what = f"{n}-bit signed less-than comparator"
    elif op_class == "logic":
        ins, outs = (*ab, ("op", 2)), (("y", n),)
        body = ("case (op_r) 2'd0: y <= a_r & b_r; 2'd1: y <= a_r | b_r; 2'd2: y <= a_r ^ b_r; "
                "default: y <= ~(a_r | b_r); endcase")
        what = f"{n}-bit logic unit: and/or/xor/nor chosen by a 2-bit opcode"
    elif op_class == "shift":
        ins, outs = (("a", n), ("sh", _clog2(n))), (("y", n),)
        body = "y <= a_r << sh_r;"
        what = f"{n}-bit barrel shifter, left by 0..{n - 1}"
    elif op_class == "select":
        ins, outs = (*ab, ("s", 1)), (("y", n),)
        body = "y <= s_r ? a_r : b_r;"
        what = f"{n}-bit 2:1 multiplexer"
    else:  # div
        ins, outs = ab, (("y", n),)
        nonzero = ("b",)
        body = "y <= a_r / b_r;"
        what = f"{n}-bit signed combinational divider (quotient; the divisor is never 0)"

    def decl(kind: str, nm: str, w: int) -> str:
        sign = " signed" if nm in ("a", "b", "a_r", "b_r", "y") else ""   # control inputs are unsigned
        return f"{kind}{sign} [{w - 1}:0] {nm}" if w > 1 else f"{kind} {nm}"

    ports = ["input clk"] + (["input rst"] if reset else [])
    ports += [decl("input", nm, w) for nm, w in ins] + [decl("output reg", nm, w) for nm, w in outs]
    regs = "\n".join(f"  {decl('reg', nm + '_r', w)};" for nm, w in ins)
    loads = " ".join(f"{nm}_r <= {nm};" for nm, _ in ins)
    sub = ""
    if op_class == "mac":
        # The product comes from a submodule: Yosys synthesises it on its own and flattens afterwards.
        # Written inline, alumacc merges multiply and add into one $macc cell, which Yosys 0.23 maps to
        # a netlist ~1.6x larger than a multiplier plus an adder (measured: 37.9k vs 23.9k um2 at 8 bits).
        sub = (f"module {name}_mul (input signed [{n - 1}:0] a, input signed [{n - 1}:0] b, "
               f"output signed [{2 * n - 1}:0] p);\n  assign p = a * b;\nendmodule\n")
        regs += (f"\n  wire signed [{2 * n - 1}:0] p;\n"
                 f"  {name}_mul u_mul (.a(a_r), .b(b_r), .p(p));")
    text = (f"// {what}: inputs registered, output registered (generated by llmulator characterize)\n"
            + sub + f"module {name} (\n  " + ",\n  ".join(ports) + "\n);\n"
            f"{regs}\n"
            f"  always @(posedge clk) begin\n    {loads}\n    {body}\n  end\nendmodule\n")
    return OpModule(op_class, n, name, text, tuple(ins), tuple(outs), reset, nonzero, what)


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


def testbench(mod: OpModule, ports: list[str], vectors: int, period_ns: float, seed: int = 1,
              warmup: int = 4, vcd: str = "act.vcd") -> str:
    """A testbench that drives uniformly random operands every cycle and dumps the DUT's nets.

    ``ports`` are the netlist's (bit-split) port names; the testbench connects each to the matching
    bit of a vector signal of the original width. Dumping starts after ``warmup`` cycles (and the
    reset of stateful operators), so the VCD holds exactly ``vectors`` clock cycles.
    """
    widths = dict(mod.inputs) | dict(mod.outputs)
    lines = ["`timescale 1ns/1ps", "module tb;", "  reg clk = 1'b0;"]
    if mod.reset:
        lines.append("  reg rst = 1'b1;")
    for nm, w in mod.inputs:
        lines.append(f"  reg [{w - 1}:0] {nm} = {w}'d0;" if w > 1 else f"  reg {nm} = 1'b0;")
    for nm, w in mod.outputs:
        lines.append(f"  wire [{w - 1}:0] {nm};" if w > 1 else f"  wire {nm};")
    conns = []
    for p in ports:
        m = re.fullmatch(r"(\w+)\[(\d+)\]", p)
        base, bit = (m.group(1), int(m.group(2))) if m else (p, None)
        if base not in widths and base not in ("clk", "rst"):
            raise ValueError(f"netlist port '{p}' is not a port of {mod.name}")
        sig = base if bit is None else f"{base}[{bit}]"
        esc = f"\\{p} " if not re.fullmatch(r"[A-Za-z_]\w*", p) else p
        conns.append(f".{esc}({sig})")
    lines.append(f"  {mod.name} dut (" + ", ".join(conns) + ");")
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


# --------------------------------------------------------------------------------------------
# parsers

@attrs.define
class NetActivity:
    toggles: int = 0          # 0<->1 transitions
    high_time: float = 0.0    # time at 1, in VCD time units


@attrs.define
class VcdActivity:
    nets: dict[str, NetActivity]
    t_start: float
    t_end: float
    timescale_s: float

    def cycles(self, clock: str = "clk") -> float:
        """Clock cycles covered by the dump: half the clock's toggles."""
        return self.nets[clock].toggles / 2.0 if clock in self.nets else 0.0

    def activity(self, net: str, cycles: float) -> tuple[float, float]:
        """(toggles per clock cycle, fraction of time at 1) of one net."""
        a = self.nets[net]
        span = self.t_end - self.t_start
        return (a.toggles / cycles if cycles else 0.0), (a.high_time / span if span > 0 else 0.0)


_TS_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "fs": 1e-15}


def parse_vcd(lines: Iterable[str], scope: str | None = None, t_end: float | None = None,
              hierarchical: bool = False) -> VcdActivity:
    """Per-bit toggle counts and time-at-1 of every net in a VCD (streamed line by line).

    Nets are named without escapes, one entry per bit: ``a_r[3]``, ``_05_``, ``clk``. With
    ``scope`` (e.g. ``"tb.dut"``) only variables declared directly in that scope are kept. X and Z
    values are not levels: a 0->x->1 sequence counts as one toggle. The dump ends at the last
    timestamp unless ``t_end`` is given. With ``hierarchical`` every net is named with its scope path
    below ``scope`` (``u_array.u_pe_0_1.w[3]``), so one dump of a hierarchical design serves every
    instance of a module (plugins/rtl).
    """
    ids: dict[str, list[str]] = {}     # id code -> bit names (MSB first for vectors)
    stack: list[str] = []
    want = scope.split(".") if scope else None
    state: dict[str, str] = {}         # bit name -> last known level '0'/'1'
    since: dict[str, float] = {}       # bit name -> time it went to 1
    nets: dict[str, NetActivity] = {}
    ts = 1e-12
    t = 0.0
    t0: float | None = None
    in_defs = True
    tokens_iter = (tok for line in lines for tok in line.split())
    it = iter(tokens_iter)

    def set_bit(name: str, v: str) -> None:
        if v not in "01":
            return
        old = state.get(name)
        if old == v:
            return
        rec = nets.setdefault(name, NetActivity())
        if old is not None:
            rec.toggles += 1
        if v == "1":
            since[name] = t
        elif old == "1":
            rec.high_time += t - since.pop(name, t)
        state[name] = v

    for tok in it:
        if in_defs:
            if tok == "$scope":
                next(it)
                stack.append(next(it))
            elif tok == "$upscope":
                if stack:
                    stack.pop()
            elif tok == "$timescale":
                spec = ""
                for x in it:
                    if x == "$end":
                        break
                    spec += x
                m = re.fullmatch(r"(\d+)\s*([munpf]?s)", spec)
                if m:
                    ts = int(m.group(1)) * _TS_UNITS[m.group(2)]
            elif tok == "$var":
                _kind, width, code, ref = next(it), int(next(it)), next(it), next(it)
                rest = []
                for x in it:
                    if x == "$end":
                        break
                    rest.append(x)
                if want is not None and (stack[:len(want)] != want if hierarchical else stack != want):
                    continue
                ref = ref[1:] if ref.startswith("\\") else ref
                if hierarchical:
                    sub = stack[len(want):] if want is not None else stack
                    ref = ".".join([*sub, ref])
                rng = rest[0] if rest and rest[0].startswith("[") else None
                if rng is None and "[" in ref and ref.endswith("]") and ":" in ref:
                    ref, rng = ref[:ref.index("[")], ref[ref.index("["):]
                if width == 1:
                    bits = [ref + (rng if rng else "")]
                else:
                    m = re.fullmatch(r"\[(\d+):(\d+)\]", rng or "")
                    hi, lo = (int(m.group(1)), int(m.group(2))) if m else (width - 1, 0)
                    step = -1 if hi >= lo else 1
                    bits = [f"{ref}[{i}]" for i in range(hi, lo + step, step)]
                ids.setdefault(code, []).extend(bits)
            elif tok == "$enddefinitions":
                in_defs = False
            continue
        c = tok[0]
        if c == "#":
            t = float(tok[1:])
            if t0 is None:
                t0 = t
        elif c in "01xXzZ" and len(tok) > 1:
            for name in ids.get(tok[1:], ()):
                set_bit(name, tok[0].lower())
        elif c in "bB":
            value, code = tok[1:], next(it)
            names = ids.get(code, ())
            value = value.rjust(len(names), "x" if value[0] in "xXzZ" else "0")[-len(names):] if names else value
            for name, v in zip(names, value, strict=False):
                set_bit(name, v.lower())
        elif c in "rR":
            next(it)
        # $dumpvars / $end / $comment keywords carry no values themselves
    end = t if t_end is None else t_end
    for name, s in since.items():
        nets.setdefault(name, NetActivity()).high_time += end - s
    for names in ids.values():
        for n in names:
            nets.setdefault(n, NetActivity())
    return VcdActivity(nets, t0 if t0 is not None else 0.0, end, ts)


def _liberty_walk(text: str):
    """Yield (enclosing groups, attribute, value) for the simple attributes a flow needs."""
    stack: list[tuple[str, str]] = []   # (group kind, name)
    pat = re.compile(r'(\w+)\s*\(\s*"?([^")]*?)"?\s*\)\s*\{|(direction|capacitance|area)\s*:\s*"?([\w.eE+-]+)"?'
                     r'|\{|\}')
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    for m in pat.finditer(text):
        tok = m.group(0)
        if m.group(1):
            stack.append((m.group(1), m.group(2).strip()))
        elif m.group(3):
            yield stack, m.group(3), m.group(4)
        elif tok == "{":
            stack.append(("", ""))
        elif tok == "}" and stack:
            stack.pop()


def parse_liberty_pins(text: str) -> dict[str, dict[str, dict[str, Any]]]:
    """Pins per cell of a liberty file: {cell: {pin: {"direction": input|output|inout, "capacitance": pF}}}."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for stack, attr, value in _liberty_walk(text):
        if attr in ("direction", "capacitance") and len(stack) >= 2 and stack[-1][0] == "pin" \
                and stack[-2][0] == "cell":
            pin = out.setdefault(stack[-2][1], {}).setdefault(stack[-1][1], {"direction": "", "capacitance": 0.0})
            pin[attr] = value if attr == "direction" else float(value)
    return out


def liberty_cell_areas(text: str) -> dict[str, float]:
    """Area of each cell of a liberty file."""
    return {stack[-1][1]: float(value) for stack, attr, value in _liberty_walk(text)
            if attr == "area" and stack and stack[-1][0] == "cell"}


@attrs.frozen
class Netlist:
    top: str
    ports: tuple[str, ...]
    cells: dict[str, str]                      # instance -> cell type
    loads: dict[str, tuple[tuple[str, str], ...]]  # net -> ((instance, pin), ...) of input pins


def parse_netlist(text: str, top: str, pins: dict[str, dict[str, dict[str, Any]]],
                  submodules: bool = False) -> Netlist:
    """Cell instances of a flat Yosys netlist and, per net, the input (load) pins it drives.

    With ``submodules`` the text may hold several modules: only ``top``'s body is read, and instances of
    other modules (a hierarchical netlist) are skipped rather than refused."""
    body_start = re.search(r"\bmodule\s+" + re.escape(top) + r"\b.*?\)\s*;", text, re.S)
    if not body_start:
        raise ValueError(f"module {top} not found in the netlist")
    ports = tuple(netlist_ports(text, top))
    body = text[body_start.end():]
    if submodules:
        end = re.search(r"^\s*endmodule\b", body, re.M)
        body = body[:end.start()] if end else body
    inst_re = re.compile(r"^\s*([A-Za-z_]\w*)\s+(\\\S+|[A-Za-z_][\w$]*)\s*\((.*?)\)\s*;", re.S | re.M)
    conn_re = re.compile(r"\.(\w+)\s*\(\s*((?:\\\S+\s)|[^()]*?)\s*\)")
    cells: dict[str, str] = {}
    loads: dict[str, list[tuple[str, str]]] = {}
    for m in inst_re.finditer(body):
        ctype, inst = m.group(1), _unescape(m.group(2))
        if ctype in ("wire", "input", "output", "inout", "assign", "reg", "module", "endmodule"):
            continue
        if ctype not in pins:
            if submodules:
                continue
            raise ValueError(f"cell type {ctype} (instance {inst}) is not in the liberty")
        cells[inst] = ctype
        for pin, expr in conn_re.findall(m.group(3)):
            net = _unescape(expr)
            if not net or re.match(r"\d", net) or net.startswith("{"):
                continue  # constants and concatenations carry no activity of their own
            if pins[ctype].get(pin, {}).get("direction") == "input":
                loads.setdefault(net, []).append((inst, pin))
    return Netlist(top, ports, cells, {k: tuple(v) for k, v in loads.items()})


def switching_energy_pj(vcd: VcdActivity, netlist: Netlist, pins: dict[str, dict[str, dict[str, Any]]],
                        vdd: float, clock: str = "clk") -> float:
    """Switching energy per cycle straight from the VCD: sum over nets of toggles/cycle x C/2 x V^2.

    C is the sum of the liberty input capacitances of the net's load pins (pF, so the result is pJ);
    wires and output ports carry none, and nets driven by input ports (the clock, the operands) are
    left out, as in OpenSTA, which counts switching at cell outputs only. A cross-check of
    report_power's switching column, which this OpenSTA derives from propagated signal
    probabilities rather than from the annotated activity.
    """
    cycles = vcd.cycles(clock)
    if cycles <= 0:
        return 0.0
    total = 0.0
    for net, loads in netlist.loads.items():
        if net not in vcd.nets or net in netlist.ports or net == clock:
            continue
        cap = sum(pins[netlist.cells[i]].get(p, {}).get("capacitance", 0.0) for i, p in loads)
        total += vcd.nets[net].toggles / cycles * 0.5 * cap * vdd * vdd
    return total


# --------------------------------------------------------------------------------------------
# OpenSTA

def activity_tcl(vcd: VcdActivity, netlist: Netlist, clock: str = "clk") -> tuple[str, int]:
    """Tcl that annotates every load pin (and data input port) with its simulated activity.

    This OpenSTA (2019) ignores activity on output pins and has a broken ``set_power_activity
    -pins``; the low-level ``sta::set_power_pin_activity PIN ACTIVITY DUTY`` on load pins works.
    Returns (tcl text, number of annotated pins).
    """
    cycles = vcd.cycles(clock)
    if cycles <= 0:
        raise ValueError(f"the VCD has no toggles of the clock '{clock}'")
    out = [f"# switching activity from a gate-level VCD of {cycles:g} cycles (toggles per cycle, duty)"]
    n = 0
    for net in sorted(netlist.loads):
        if net == clock or net not in vcd.nets:
            continue
        act, duty = vcd.activity(net, cycles)
        if net in netlist.ports:
            out.append(f"sta::set_power_input_port_activity [get_ports {{{net}}}] {act:.6g} {duty:.6g}")
        for inst, pin in netlist.loads[net]:
            out.append(f"sta::set_power_pin_activity [get_pins {{{inst}/{pin}}}] {act:.6g} {duty:.6g}")
            n += 1
    return "\n".join(out) + "\n", n


def sta_script(liberty: str | Path, netlist: str, top: str, period_ns: float,
               activity: str | None = "activity.tcl") -> str:
    lines = [f"read_liberty {liberty}", f"read_verilog {netlist}", f"link_design {top}",
             f"create_clock -name clk -period {period_ns:g} [get_ports clk]",
             "puts \"@@checks\"",
             "report_checks -path_delay max -digits 4",
             # nets not annotated (none, normally) fall back to the vectorless default
             "set_power_activity -input -activity 0.5 -duty 0.5"]
    if activity:
        lines.append(f"source {activity}")
    lines += ["puts \"@@power\"", "report_power -digits 6", "exit", ""]
    return "\n".join(lines)


def parse_report_checks(text: str) -> dict[str, float]:
    """Arrival time and slack of the worst path of ``report_checks``."""
    arr = re.search(r"^\s*(-?[\d.]+(?:e[-+]?\d+)?)\s+data arrival time", text, re.M)
    slack = re.search(r"^\s*(-?[\d.]+(?:e[-+]?\d+)?)\s+slack \((MET|VIOLATED)\)", text, re.M)
    if not arr or not slack:
        raise ValueError("no timing path in the report_checks output")
    return {"arrival_ns": float(arr.group(1)), "slack_ns": float(slack.group(1))}


def parse_report_power(text: str) -> dict[str, dict[str, float]]:
    """Rows of ``report_power``: {group: {internal, switching, leakage, total}} in W."""
    rows = {}
    num = r"(-?[\d.]+(?:e[-+]?\d+)?)"
    for m in re.finditer(rf"^(Sequential|Combinational|Macro|Pad|Total)\s+{num}\s+{num}\s+{num}\s+{num}",
                         text, re.M):
        rows[m.group(1).lower()] = {"internal": float(m.group(2)), "switching": float(m.group(3)),
                                    "leakage": float(m.group(4)), "total": float(m.group(5))}
    if "total" not in rows:
        raise ValueError("no Total row in the report_power output")
    return rows


def parse_yosys_stat(text: str) -> dict[str, Any]:
    """Chip area and cell counts of ``stat -liberty``."""
    m = re.search(r"Chip area for (?:top )?module '[^']*':\s*([\d.]+)", text)
    if not m:
        raise ValueError("no 'Chip area' in the yosys stat output")
    cells = {c: int(k) for c, k in re.findall(r"^\s+([A-Z][A-Z0-9_]*)\s+(\d+)\s*$", text, re.M)}
    return {"area_um2": float(m.group(1)), "cells": cells}


# --------------------------------------------------------------------------------------------
# tools

@attrs.frozen
class Tools:
    yosys: str
    iverilog: str
    vvp: str
    sta: str
    liberty: Path
    cells_v: Path
    versions: dict[str, str] = attrs.field(factory=dict, eq=False)


def liberty_dir() -> Path | None:
    cands = [os.environ.get("LLMULATOR_OSU018_DIR"), ROOT / ".eda" / "osu018", Path.cwd() / ".eda" / "osu018",
             Path("/usr/share/qflow/tech/osu018")]
    for c in cands:
        if c and (Path(c) / LIB_NAME).is_file() and (Path(c) / CELLS_NAME).is_file():
            return Path(c)
    return None


def _first_line(cmd: list[str]) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return ((r.stdout or r.stderr).strip().splitlines() or ["unknown"])[0].strip()


def find_tools(which: Callable[[str], str | None] | None = None) -> Tools:
    """The EDA tools and the OSU018 library, or a UserError (exit 2) naming the install script."""
    which = which or shutil.which
    found = {t: which(t) for t in ("yosys", "iverilog", "vvp", "sta")}
    missing = [t for t, p in found.items() if not p]
    libdir = liberty_dir()
    if missing or libdir is None:
        what = ([f"tool(s) not on PATH: {', '.join(missing)}"] if missing else []) + (
            [f"OSU018 liberty ({LIB_NAME}, {CELLS_NAME}) not found in $LLMULATOR_OSU018_DIR, "
             f"{ROOT / '.eda' / 'osu018'} or /usr/share/qflow/tech/osu018"] if libdir is None else [])
        raise UserError("characterize needs Yosys, Icarus Verilog and OpenSTA and the OSU018 library: "
                        + "; ".join(what) + f"; {INSTALL_HINT}")
    pkg = libdir / "PACKAGE"
    lib_ver = " ".join(pkg.read_text().split()[1::2]) if pkg.is_file() else str(libdir)
    versions = {"yosys": _first_line([found["yosys"], "-V"]),
                "iverilog": _first_line([found["iverilog"], "-V"]),
                "opensta": "OpenSTA " + _first_line([found["sta"], "-version"]),
                "liberty": f"{LIB_NAME} ({lib_ver})"}
    return Tools(found["yosys"], found["iverilog"], found["vvp"], found["sta"], libdir / LIB_NAME,
                 libdir / CELLS_NAME, versions)


def _run(cmd: list[str], cwd: Path, log: str, timeout: float) -> str:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        (cwd / log).write_text((e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""))
        raise FlowError(f"{Path(cmd[0]).name} timed out after {timeout:g} s (log: {cwd / log})") from None
    (cwd / log).write_text(r.stdout + ("\n--- stderr ---\n" + r.stderr if r.stderr else ""))
    if r.returncode != 0:
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-5:])
        raise FlowError(f"{Path(cmd[0]).name} failed with status {r.returncode} (log: {cwd / log}):\n{tail}")
    return r.stdout


class FlowError(Exception):
    """One design's tool run failed; the message names the log."""


# --------------------------------------------------------------------------------------------
# one design

def cache_key(mod: OpModule, clock_mhz: float, vectors: int, seed: int, tools: Tools) -> dict[str, Any]:
    lib_hash = hashlib.sha256(tools.liberty.read_bytes()).hexdigest()[:16]
    return {"flow": FLOW_VERSION, "class": mod.op_class, "bits": mod.bits, "clock_mhz": float(clock_mhz),
            "vectors": int(vectors), "seed": int(seed), "liberty_sha256": lib_hash,
            "verilog_sha256": hashlib.sha256(mod.verilog.encode()).hexdigest()[:16],
            "tools": {k: v for k, v in tools.versions.items() if k != "liberty"}}


def characterize_one(op_class: str, bits: int, clock_mhz: float, vectors: int, tools: Tools, work: Path,
                     seed: int = 1, timeout: float = 900.0, step: Callable[[str], None] | None = None,
                     keep_vcd: bool = False) -> dict[str, Any]:
    """Run the whole flow for one operator; the result dict is cached in ``work/<class>-int<bits>``."""
    from llmulator.fileio import atomic_write_json
    mod = operator_module(op_class, bits)
    d = work / f"{op_class}-int{bits}"
    key = cache_key(mod, clock_mhz, vectors, seed, tools)
    cached = d / "result.json"
    if cached.is_file():
        try:
            res = json.loads(cached.read_text())
            if res.get("key") == key:
                res["cached"] = True
                return res
        except (OSError, ValueError):
            pass
    step = step or (lambda _s: None)
    d.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    period = 1000.0 / clock_mhz
    (d / "op.v").write_text(mod.verilog)

    step("synthesis (yosys)")
    (d / "synth.ys").write_text(yosys_script(mod, tools.liberty))
    _run([tools.yosys, "-q", "-l", "yosys.log", "-s", "synth.ys"], d, "yosys.out", timeout)
    stat = parse_yosys_stat((d / "stat.txt").read_text())
    areas = liberty_cell_areas(tools.liberty.read_text())
    seq_area = sum(k * areas.get(c, 0.0) for c, k in stat["cells"].items() if c.startswith(("DFF", "LATCH")))
    netlist_text = (d / "net.v").read_text()
    ports = netlist_ports(netlist_text, mod.name)

    step("gate-level simulation (iverilog)")
    (d / "tb.v").write_text(testbench(mod, ports, vectors, period, seed))
    _run([tools.iverilog, "-Ttyp", "-o", "sim.vvp", "tb.v", "net.v", str(tools.cells_v)], d, "iverilog.log", timeout)
    _run([tools.vvp, "-n", "sim.vvp"], d, "vvp.log", timeout)

    step("switching activity (VCD)")
    with open(d / "act.vcd") as f:
        vcd = parse_vcd(f, scope="tb.dut")
    lib_pins = parse_liberty_pins(tools.liberty.read_text())
    nl = parse_netlist(netlist_text, mod.name, lib_pins)
    tcl, n_pins = activity_tcl(vcd, nl)
    switch_vcd = switching_energy_pj(vcd, nl, lib_pins, VDD)
    (d / "activity.tcl").write_text(tcl)
    cycles = vcd.cycles()
    if not keep_vcd:   # the largest files: MBs for the 32-bit multipliers
        (d / "act.vcd").unlink(missing_ok=True)
        (d / "sim.vvp").unlink(missing_ok=True)

    step("timing and power (OpenSTA)")
    (d / "sta.tcl").write_text(sta_script(tools.liberty, "net.v", mod.name, period))
    out = _run([tools.sta, "-no_splash", "-no_init", "-exit", "sta.tcl"], d, "sta.log", timeout)
    if "@@power" not in out:
        raise FlowError(f"OpenSTA stopped before report_power (log: {d / 'sta.log'})")
    checks_txt, power_txt = out.split("@@power", 1)
    if "Error" in checks_txt or "Error" in power_txt:
        err = next(ln for ln in out.splitlines() if "Error" in ln)
        raise FlowError(f"OpenSTA: {err.strip()} (log: {d / 'sta.log'})")
    timing = parse_report_checks(checks_txt)
    power = parse_report_power(power_txt)
    delay = period - timing["slack_ns"]
    f_hz = clock_mhz * 1e6
    res = {
        "key": key, "class": op_class, "bits": bits, "what": mod.what, "register_bits": mod.register_bits,
        "area_um2": stat["area_um2"], "area_seq_um2": seq_area, "cells": stat["cells"],
        "delay_ns": delay, "period_ns": period, "latency_cycles": max(1, math.ceil(delay / period - 1e-9)),
        "power_w": power, "energy_pj": power["total"]["total"] / f_hz * 1e12,
        "energy_seq_pj": power.get("sequential", {}).get("total", 0.0) / f_hz * 1e12,
        "energy_comb_pj": power.get("combinational", {}).get("total", 0.0) / f_hz * 1e12,
        "energy_switching_sta_pj": power["total"]["switching"] / f_hz * 1e12, "energy_switching_vcd_pj": switch_vcd,
        "cycles": cycles, "annotated_pins": n_pins, "seconds": round(time.perf_counter() - t_start, 2),
    }
    atomic_write_json(cached, res)
    res["cached"] = False
    return res


# --------------------------------------------------------------------------------------------
# the table

def _g(x: float, digits: int = 4) -> str:
    """A short number: 4 significant digits, no exponent for the usual ranges."""
    if x == 0:
        return "0"
    s = f"{x:.{digits}g}"
    if "e" in s:
        s = f"{x:.{max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))}f}"
    return s


def _area(x: float) -> str:
    return str(int(round(x))) if x >= 100 else _g(x)


def _q(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid YAML double-quoted scalar


def energy_scale() -> float:
    """C V^2 scaling from the 45 nm table: C ~ feature size, V from 0.9 V to 1.8 V."""
    return (NODE_NM / BASE_NODE_NM) * (VDD / BASE_VDD) ** 2


def area_scale() -> float:
    return (NODE_NM / BASE_NODE_NM) ** 2


def measured_entry(r: dict[str, Any], logic_only: bool = False) -> dict[str, Any]:
    """One table entry from a characterize result."""
    e_total, a_total = r["energy_pj"], r["area_um2"]
    e_logic = r["energy_comb_pj"]
    a_logic = a_total - r["area_seq_um2"]
    note = (f"{r['what']}; {r['register_bits']} flip-flops included"
            if not logic_only else f"{r['what']}; logic only, {r['register_bits']} flip-flops excluded")
    note += (f"; logic alone {_g(e_logic, 3)} pJ, {_area(a_logic)} um2" if not logic_only
             else f"; with registers {_g(e_total, 3)} pJ, {_area(a_total)} um2")
    note += f"; critical path {r['delay_ns']:.2f} ns"
    return {"energy_pj": e_logic if logic_only else e_total, "area_um2": a_logic if logic_only else a_total,
            "latency_cycles": r["latency_cycles"], "source": "measured", "note": note}


def scaled_entry(base: dict[str, Any]) -> dict[str, Any]:
    """A 45 nm entry scaled to this node (for classes with no measured entry at all)."""
    return {"energy_pj": base["energy_pj"] * energy_scale(), "area_um2": base["area_um2"] * area_scale(),
            "latency_cycles": base.get("latency_cycles", 1), "source": "scaled from 45nm",
            "note": f"45nm ({base.get('source', '')}) x{energy_scale():g} energy, x{area_scale():g} area; "
                    "latency cycles kept"}


def derived_entry(base_cls: dict[str, Any], fmt: str, measured: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A format not measured (int64, fp) of a measured class: the measured integer entry nearest in
    width times the 45 nm table's ratio between the two formats. This keeps the measured library's
    cost level for the class and the 45 nm table's relative cost between formats."""
    bits = _fmt_key(fmt)
    refs = [k for k in measured if k in base_cls and base_cls[k].get("energy_pj") and base_cls[k].get("area_um2")]
    if not refs:
        return scaled_entry(base_cls[fmt])
    ref = min(refs, key=lambda k: (abs(_fmt_key(k) - bits), -_fmt_key(k)))
    b, r, m = base_cls[fmt], base_cls[ref], measured[ref]
    re_, ra = b["energy_pj"] / r["energy_pj"], b["area_um2"] / r["area_um2"]
    return {"energy_pj": m["energy_pj"] * re_, "area_um2": m["area_um2"] * ra,
            "latency_cycles": max(b.get("latency_cycles", 1), m["latency_cycles"]), "source": "derived",
            "note": f"measured {ref} x the 45nm {fmt}/{ref} ratio ({_g(re_, 3)} energy, {_g(ra, 3)} area); "
                    "latency: the larger of the 45nm and the measured cycles"}


def scaled_memories(base: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(key, value text, comment) lines of the memories section, scaled from the 45 nm table."""
    es, as_ = energy_scale(), area_scale()
    sram = ", ".join(f"{k}: {_g(float(v) * es)}" for k, v in base["sram_read_pj_64b"].items())
    return [
        ("sram_read_pj_64b", "{" + sram + "}", f"KiB -> pJ; 45nm x{es:g} (C V^2)"),
        ("sram_write_scale", _g(float(base["sram_write_scale"])), "a ratio: kept from 45nm"),
        ("regfile_read_pj_64b", _g(float(base["regfile_read_pj_64b"]) * es), f"45nm x{es:g} (C V^2)"),
        ("dram_pj_per_bit", _g(float(base["dram_pj_per_bit"])),
         "kept from 45nm: off-chip DRAM and its I/O do not scale with the logic node"),
        ("sram_area_um2_per_bit", _g(float(base["sram_area_um2_per_bit"]) * as_), f"45nm x{as_:g} (feature size^2)"),
        ("regfile_area_um2_per_bit", _g(float(base["regfile_area_um2_per_bit"]) * as_),
         f"45nm x{as_:g} (feature size^2)"),
        ("sram_leakage_mw_per_kib", _g(float(base["sram_leakage_mw_per_kib"])),
         "kept from 45nm (assumed): 16x larger cells, far lower subthreshold leakage per device"),
    ]


def _fmt_key(k: str) -> int:
    return int("".join(c for c in k if c.isdigit()) or 0)


def tech_yaml(results: Iterable[dict[str, Any]], name: str, header: list[str], base: dict[str, Any],
              logic_only: bool = False, fill: bool = True) -> str:
    """The technology table text: measured entries; with ``fill``, every other entry of the 45 nm table,
    derived from a measured width of the same class or else scaled (see :func:`derived_entry`)."""
    ops: dict[str, dict[str, dict[str, Any]]] = {}
    for r in results:
        ops.setdefault(r["class"], {})[f"int{r['bits']}"] = measured_entry(r, logic_only)
    if fill:
        measured = {cls: dict(fmts) for cls, fmts in ops.items()}
        for cls, fmts in base["operators"].items():
            for fmt, entry in fmts.items():
                if fmt in ops.get(cls, {}):
                    continue
                ops.setdefault(cls, {})[fmt] = (derived_entry(fmts, fmt, measured[cls]) if cls in measured
                                                else scaled_entry(entry))
    order = list(base["operators"]) + [c for c in ops if c not in base["operators"]]
    lines = [f"# {h}" if h else "#" for h in header]
    lines += [f"technology: {name}", f"node_nm: {NODE_NM}", "operators:",
              "  # class -> numeric format and width -> figures"]
    for cls in order:
        if cls not in ops:
            continue
        lines.append(f"  {cls}:")
        fmts = sorted(ops[cls], key=lambda k: (not k.startswith("int"), _fmt_key(k)))
        for fmt in fmts:
            e = ops[cls][fmt]
            lines.append(f"    {fmt + ':':6} {{energy_pj: {_g(e['energy_pj'])}, area_um2: {_area(e['area_um2'])}, "
                         f"latency_cycles: {int(e['latency_cycles'])}, source: {e['source']}, note: {_q(e['note'])}}}")
    lines += ["memories:",
              f"  # not measured: scaled from the {BASE_TECH} table. Energy ~ C V^2 = "
              f"({NODE_NM}/{BASE_NODE_NM}) x ({VDD}/{BASE_VDD})^2 = x{energy_scale():g};",
              f"  # area ~ feature size^2 = ({NODE_NM}/{BASE_NODE_NM})^2 = x{area_scale():g}.",
              f"  source: scaled from {BASE_TECH}"]
    for k, v, c in scaled_memories(base["memories"]):
        lines.append(f"  {k}: {v}   # {c}")
    return "\n".join(lines) + "\n"


def header_lines(command: str, tools: Tools, clock_mhz: float, vectors: int, seed: int, seconds: float,
                 logic_only: bool, n_measured: int) -> list[str]:
    es, as_ = energy_scale(), area_scale()
    return [
        f"Technology table for the OSU 0.18 um standard cells ({NODE_NM} nm, {VDD} V, typical corner),",
        "measured with the open-source flow of `llmulator characterize` (plugins/characterize, docs/technology.md).",
        f"command:  {command}",
        f"date:     {_dt.date.today().isoformat()}",
        f"clock:    {clock_mhz:g} MHz (energy per op = total power / f; latency_cycles = ceil(delay / period), >= 1)",
        f"vectors:  {vectors} uniformly random operand sets per design, one operation per cycle (seed {seed})",
        f"tools:    {tools.versions.get('yosys', '?')}; {tools.versions.get('iverilog', '?')};",
        f"          {tools.versions.get('opensta', '?')}; {tools.versions.get('liberty', '?')}",
        f"flow:     {n_measured} designs, {seconds:.0f} s of tool time on this machine",
        "Sources:",
        "  measured:         each integer operator synthesised as a registered module (inputs and output in",
        "                    flip-flops) by Yosys + ABC against the liberty; area = Yosys `stat -liberty`;",
        "                    delay = OpenSTA report_checks (register to register, incl. clock-to-Q and setup);",
        "                    energy = OpenSTA report_power with per-pin activity from a zero-delay Icarus",
        "                    simulation of the gate netlist. "
        + ("Registers are excluded (logic only)." if logic_only else
           "Includes the registers (their share is in each note)."),
        "                    Ignored: wire and routing capacitance, glitches, the clock tree beyond the",
        "                    register clock pins, process/voltage/temperature corners other than typical.",
        "  derived:          formats not measured (int64, floating point) of a measured class: the measured",
        "                    integer entry nearest in width x the 45nm table's ratio between the two formats.",
        "  scaled from 45nm: classes not measured at all (sqrt, exp) and the memories: the 45nm table",
        f"                    x{es:g} energy ((180/45) x (1.8/0.9)^2, C V^2), x{as_:g} area ((180/45)^2).",
    ]


def base_table() -> dict[str, Any]:
    from llmulator import tech
    return tech.table(BASE_TECH)


def default_out() -> Path:
    import llmulator
    return Path(llmulator.__file__).resolve().parent / "tech" / "osu018.yaml"


def default_work() -> Path:
    root = ROOT if (ROOT / "pyproject.toml").is_file() else Path.cwd()
    return root / ".eda" / "work" / "characterize"


def plan(classes: Iterable[str], bits: Iterable[int]) -> list[tuple[str, int]]:
    out = []
    for c in classes:
        if c not in CLASSES:
            raise UserError(f"unknown operator class '{c}' for characterize (known: {', '.join(CLASSES)})")
        for b in bits:
            if b not in (8, 16, 32, 64):
                raise UserError(f"--bits: {b} is not one of 8, 16, 32, 64")
            out.append((c, b))
    return out


def _lock(work: Path):
    """An exclusive lock on the work folder: two runs must not write the same design folders."""
    import fcntl
    f = open(work / ".lock", "w")  # noqa: SIM115 - held open for the whole run
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        raise UserError(f"another characterize run is using the work folder {work}; wait for it, "
                        "or pass a different --work") from None
    return f


def _run_all(jobs, clock_mhz, vectors, tools, work, seed, timeout, keep_vcd, con):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    results, failures = [], []
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[step]}"), console=con, transient=False) as prog:
        task = prog.add_task("characterize", total=len(jobs), step="")
        for c, b in jobs:
            label = f"{c} int{b}"

            def step(s: str, _label: str = label) -> None:
                prog.update(task, step=f"{_label}: {s}")

            step("starting")
            try:
                r = characterize_one(c, b, clock_mhz, vectors, tools, work, seed, timeout, step, keep_vcd)
            except FlowError as e:
                failures.append((label, str(e)))
                con.print(f"[red]failed[/red] {label}: {e}")
            else:
                results.append(r)
                tag = " (cached)" if r.get("cached") else ""
                con.print(f"{label:>13}: {r['energy_pj']:8.3f} pJ  {r['area_um2']:9.0f} um2  "
                          f"{r['delay_ns']:6.2f} ns -> {r['latency_cycles']} cycle(s){tag}")
            prog.advance(task)
        prog.update(task, step="done")
    return results, failures


def run(classes: Iterable[str], bits: Iterable[int], clock_mhz: float, out: Path, vectors: int,
        work: Path, seed: int = 1, command: str = "llmulator characterize", logic_only: bool = False,
        timeout: float = 900.0, console: Any = None, keep_vcd: bool = False) -> dict[str, Any]:
    """Characterize every (class, width), then write the table atomically. Returns a summary."""
    from llmulator.fileio import atomic_write_text
    from rich.console import Console
    if clock_mhz <= 0:
        raise UserError("--clock-mhz must be positive")
    if vectors < 10:
        raise UserError("--vectors must be at least 10")
    jobs = plan(classes, bits)
    tools = find_tools()
    work.mkdir(parents=True, exist_ok=True)
    eda = work.parent.parent
    if eda.name == ".eda" and not (eda / ".gitignore").exists():
        (eda / ".gitignore").write_text("*\n")
    con = console or Console(stderr=True)
    lock = _lock(work)
    try:
        results, failures = _run_all(jobs, clock_mhz, vectors, tools, work, seed, timeout, keep_vcd, con)
    finally:
        lock.close()
    if failures:
        raise UserError(f"{len(failures)} design(s) failed, no table written (finished ones are cached in "
                        f"{work}; rerun to continue): " + "; ".join(f"{lb}: {m.splitlines()[0]}" for lb, m in failures))
    seconds = sum(float(r.get("seconds", 0.0)) for r in results)
    header = header_lines(command, tools, clock_mhz, vectors, seed, seconds, logic_only, len(results))
    text = tech_yaml(results, out.stem, header, base_table(), logic_only)
    check_table_text(text, out.stem)
    atomic_write_text(out, text)
    out.chmod(0o644)   # the atomic write's temporary file is private; a table is for everyone to read
    return {"out": str(out), "designs": len(results), "tool_seconds": seconds,
            "cached": sum(1 for r in results if r.get("cached"))}


def check_table_text(text: str, name: str) -> dict[str, Any]:
    """The written table parses and has the shape llmulator.tech reads (raises ValueError if not)."""
    import yaml
    data = yaml.safe_load(text)
    if data.get("technology") != name:
        raise ValueError(f"table names technology {data.get('technology')!r}, expected {name!r}")
    for cls, fmts in data["operators"].items():
        for fmt, e in fmts.items():
            for k in ("energy_pj", "area_um2", "latency_cycles", "source"):
                if k not in e:
                    raise ValueError(f"operators.{cls}.{fmt} has no {k}")
    for k in ("sram_read_pj_64b", "sram_write_scale", "regfile_read_pj_64b", "dram_pj_per_bit",
              "sram_area_um2_per_bit", "regfile_area_um2_per_bit", "sram_leakage_mw_per_kib"):
        if k not in data["memories"]:
            raise ValueError(f"memories has no {k}")
    return data
