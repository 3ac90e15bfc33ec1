"""OpenSTA: the activity annotation and timing scripts, and the parsers of its (and Yosys's) reports.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .liberty import Netlist
from .vcd import VcdActivity

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
    out += register_output_tcl(vcd, netlist.reg_outputs, cycles)
    return "\n".join(out) + "\n", n


def register_output_tcl(vcd: VcdActivity, reg_outputs, cycles: float, prefix: str = "", where: str = "") -> list[str]:
    """``set_power_pin_activity`` on every flip-flop output from its simulated net. Without it this OpenSTA
    gives a register output the global default input activity (``set_power_activity -input``) whatever
    its D pin does, and charges the clock-to-Q internal energy and the output net's switching at that
    rate (measured: one DFFPOSX1 with D at 0.3 toggles/cycle reports Q at the default 0.1 or 0.5).
    ``prefix``: the net's scope in the VCD; ``where``: the instance path in OpenSTA."""
    out = []
    for net in sorted(reg_outputs):
        rec = vcd.nets.get(prefix + net.replace(" [", "["))
        if rec is None:
            continue
        span = vcd.t_end - vcd.t_start
        act = rec.toggles / cycles if cycles else 0.0
        duty = rec.high_time / span if span > 0 else 0.0
        if rec.toggles == 0:
            duty = 0.5   # OpenSTA 2.0.17 computes NaN power for some cells with a constant pin at duty 0 or 1
        for inst, pin in reg_outputs[net]:
            out.append(f"sta::set_power_pin_activity [get_pins {{{where}{inst}/{pin}}}] {act:.6g} {duty:.6g}")
    return out


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
