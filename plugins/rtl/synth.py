"""Synthesis, timing and power of a generated design (Yosys + OpenSTA against the OSU 0.18 um liberty).

Hierarchical: Yosys maps each unique module once (the PE module once for all PEs) and keeps the
hierarchy, so a 16x16 array costs about what one PE and the controller cost. The buffer banks are
stand-ins (datapath.bank_module(sim=False)): this liberty has no SRAM macros, so a bank's area and
energy come from the architecture's memory figures (technology table) and its stand-in registers
are subtracted; they exist so that the paths into and out of the memories are timed.

Energy: OpenSTA report_power with switching activity from the RTL simulation's VCD, annotated on
the load pins of every net whose RTL name survives synthesis (registers and ports, per instance);
OpenSTA propagates the rest. Power at the simulated activity / clock = logic energy per cycle.
"""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path
from typing import Any

from llmulator.errors import UserError
from llmulator_plugins.characterize import flow as cz

from .layout import Layout
from .plan import Plan
from .top import Rtl


def yosys_script(liberty: Path) -> str:
    lib = str(liberty)
    return "\n".join([
        "read_verilog design_syn.v",
        "hierarchy -check -top accel",
        "synth -top accel",          # no -flatten: every unique module is mapped once
        f"dfflibmap -liberty {lib}",
        f"abc -liberty {lib}",
        "opt_clean",
        "setundef -zero",
        "splitnets -ports",
        "opt_clean -purge",
        "insbuf -buf BUFX2 A Y",
        f"tee -q -o stat.txt stat -liberty {lib}",
        "write_verilog -noattr -noexpr -nohex -nodec net.v",
        ""])


def module_areas(stat: str) -> dict[str, float]:
    """Area of each module (its own cells, submodules not included) from ``stat -liberty``."""
    out = {}
    for m in re.finditer(r"Chip area for module '\\?([^']+)':\s*([\d.]+)", stat):
        out[m.group(1)] = float(m.group(2))
    if not out:
        raise UserError("rtl: yosys stat printed no chip area")
    return out


def instance_counts(plan: Plan, lay: Layout, rtl: Rtl) -> dict[str, int]:
    counts = {"accel": 1, "pe_array": 1, "pe": plan.A * plan.B, "out_fifo": 1}
    for e in rtl.engines:
        counts[e] = 1
    for name, lv in lay.levels.items():
        counts[f"buf_{name}"] = 1
        counts[f"bank_{name}"] = lv.banks
    return counts


def instance_paths(plan: Plan, lay: Layout, rtl: Rtl) -> dict[str, list[str]]:
    """Hierarchical instance paths (OpenSTA's '/' form) of every module."""
    paths = {"accel": [""], "pe_array": ["u_array"], "out_fifo": ["u_wq"],
             "pe": [f"u_array/u_pe_{a}_{b}" for a in range(plan.A) for b in range(plan.B)]}
    for e in rtl.engines:
        paths[e] = [f"u_{e}"]
    for name, lv in lay.levels.items():
        paths[f"buf_{name}"] = [f"u_buf_{name}"]
        paths[f"bank_{name}"] = [f"u_buf_{name}/u_bank_{b}" for b in range(lv.banks)]
    return paths


def split_modules(netlist: str) -> dict[str, str]:
    out = {}
    for m in re.finditer(r"^module\s+\\?(\S+?)\s*\(.*?^endmodule", netlist, re.S | re.M):
        out[m.group(1)] = m.group(0)
    return out


def activity_tcl(vcd: cz.VcdActivity, netlist: str, paths: dict[str, list[str]], pins, cycles: float,
                 skip: set[str]) -> tuple[str, int]:
    """Per-instance load-pin activity from a hierarchical RTL VCD (names below tb.dut)."""
    lines, n = [], 0
    mods = split_modules(netlist)
    for mod, text in mods.items():
        if mod in skip or mod not in paths:
            continue
        nl = cz.parse_netlist(text, mod, pins, submodules=True)
        for inst in paths[mod]:
            prefix = inst.replace("/", ".") + "." if inst else ""
            for net, loads in nl.loads.items():
                rec = vcd.nets.get(prefix + net)
                if rec is None or net == "clk":
                    continue
                span = vcd.t_end - vcd.t_start
                act = rec.toggles / cycles if cycles else 0.0
                duty = rec.high_time / span if span > 0 else 0.0
                for cell, pin in loads:
                    where = f"{inst}/{cell}/{pin}" if inst else f"{cell}/{pin}"
                    lines.append(f"sta::set_power_pin_activity [get_pins {{{where}}}] {act:.6g} {duty:.6g}")
                    n += 1
    return "\n".join(lines) + "\n", n


def sta_script(liberty: Path, period_ns: float, banks: list[str], activity: bool) -> str:
    L = [f"read_liberty {liberty}", "read_verilog net.v", "link_design accel",
         f"create_clock -name clk -period {period_ns:g} [get_ports clk]",
         "set_input_delay 0 -clock clk [delete_from_list [all_inputs] [get_ports clk]]",
         'puts "@@checks"', "report_checks -path_delay max -digits 4",
         "set_power_activity -input -activity 0.1 -duty 0.5"]
    if activity:
        L.append("source activity.tcl")
    L += ['puts "@@power"', "report_power -digits 6"]
    if banks:
        L += ['puts "@@banks"', "report_power -digits 6 -instances [get_cells {" + " ".join(banks) + "}]"]
    L += ["exit", ""]
    return "\n".join(L)


def parse_instance_power(text: str) -> float:
    """Sum of the Total column of ``report_power -instances`` (W)."""
    total = 0.0
    num = r"(-?[\d.]+(?:e[-+]?\d+)?)"
    for m in re.finditer(rf"^\s*{num}\s+{num}\s+{num}\s+{num}\s+(\S+)\s*$", text, re.M):
        total += float(m.group(4))
    return total


def run_synthesis(rtl: Rtl, plan: Plan, lay: Layout, tools: cz.Tools, folder: Path, clock_mhz: float,
                  vcd: Path | None, vcd_cycles: int, timeout: float) -> dict[str, Any]:
    """Area (um2, logic and bank stand-ins apart), critical path (ns), logic power and energy per cycle."""
    (folder / "design_syn.v").write_text(rtl.text(synth=True))
    (folder / "synth.ys").write_text(yosys_script(tools.liberty))
    _run([tools.yosys, "-q", "-l", "yosys.log", "-s", "synth.ys"], folder, timeout, "yosys")
    stat = (folder / "stat.txt").read_text()
    areas = module_areas(stat)
    counts = instance_counts(plan, lay, rtl)
    parts = {m: areas.get(m, 0.0) * counts.get(m, 1) for m in counts}
    bank_mods = {f"bank_{n}" for n in lay.levels}
    logic_area = sum(v for m, v in parts.items() if m not in bank_mods)
    stub_area = sum(v for m, v in parts.items() if m in bank_mods)
    period = 1000.0 / clock_mhz
    paths = instance_paths(plan, lay, rtl)
    netlist = (folder / "net.v").read_text()
    n_pins = 0
    if vcd is not None and vcd.is_file():
        with open(vcd) as f:
            act = cz.parse_vcd(f, scope="tb.dut", hierarchical=True)
        pins = cz.parse_liberty_pins(tools.liberty.read_text())
        tcl, n_pins = activity_tcl(act, netlist, paths, pins, float(vcd_cycles), bank_mods)
        (folder / "activity.tcl").write_text(tcl)
    banks = [p for m in bank_mods for p in paths[m]]
    (folder / "sta.tcl").write_text(sta_script(tools.liberty, period, banks, n_pins > 0))
    out = _run([tools.sta, "-no_splash", "-no_init", "-exit", "sta.tcl"], folder, timeout, "sta")
    if "@@power" not in out:
        raise UserError(f"rtl: OpenSTA stopped before report_power (log {folder / 'sta.log'})")
    checks, rest = out.split("@@power", 1)
    power_txt, bank_txt = rest.split("@@banks", 1) if "@@banks" in rest else (rest, "")
    timing = cz.parse_report_checks(checks)
    power = cz.parse_report_power(power_txt)
    stub_w = parse_instance_power(bank_txt) if bank_txt else 0.0
    delay = period - timing["slack_ns"]
    f_hz = clock_mhz * 1e6
    logic_w = power["total"]["total"] - stub_w
    return {"area_um2": parts, "logic_area_um2": logic_area, "bank_standin_area_um2": stub_area,
            "critical_path_ns": delay, "fmax_mhz": 1000.0 / delay if delay > 0 else math.inf,
            "logic_power_w": logic_w, "logic_energy_per_cycle_pj": logic_w / f_hz * 1e12,
            "leakage_w": power["total"]["leakage"], "bank_standin_power_w": stub_w, "annotated_pins": n_pins}


def _run(cmd: list[str], cwd: Path, timeout: float, log: str) -> str:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise UserError(f"rtl: {Path(cmd[0]).name} timed out after {timeout:g} s (folder {cwd})") from None
    (cwd / f"{log}.out").write_text(r.stdout + ("\n--- stderr ---\n" + r.stderr if r.stderr else ""))
    if r.returncode != 0:
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-8:])
        raise UserError(f"rtl: {Path(cmd[0]).name} failed (status {r.returncode}; log {cwd / (log + '.out')}):\n{tail}")
    return r.stdout
