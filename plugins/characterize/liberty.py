"""Liberty pins and cell areas, gate netlists, and the switching energy they imply.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from .scripts import _unescape, netlist_ports
from .vcd import VcdActivity


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
    # net -> ((instance, pin), ...) of the output pins of flip-flops and latches that drive it: OpenSTA
    # 2.0.17 gives a register's output the global default input activity, not its D pin's, unless told
    reg_outputs: dict[str, tuple[tuple[str, str], ...]] = attrs.field(factory=dict)


def is_register(cell: str) -> bool:
    """A flip-flop or latch of the OSU018 library (DFFPOSX1, DFFNEGX1, DFFSR, LATCH)."""
    return cell.startswith(("DFF", "LATCH"))


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
    regs: dict[str, list[tuple[str, str]]] = {}
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
            direction = pins[ctype].get(pin, {}).get("direction")
            if direction == "input":
                loads.setdefault(net, []).append((inst, pin))
            elif direction == "output" and is_register(ctype):
                regs.setdefault(net, []).append((inst, pin))
    return Netlist(top, ports, cells, {k: tuple(v) for k, v in loads.items()}, {k: tuple(v) for k, v in regs.items()})


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
