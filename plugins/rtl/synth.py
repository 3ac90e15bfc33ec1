"""Synthesis, timing and power of a generated design (Yosys + OpenSTA against the OSU 0.18 um liberty).

Hierarchical: Yosys maps each unique module once (the PE module once for all PEs, the buffer's
crossbar pieces once for all bank ports and lanes) and keeps the hierarchy, so an array costs about
what its unique modules cost; every module's area is its own cells x its instance count (read from
the hierarchical netlist). The buffer banks are stand-ins (datapath.bank_module(sim=False)): this
liberty has no SRAM macros, so a bank's area and energy come from the architecture's memory figures
(technology table) and its stand-in registers are subtracted; they exist so that the paths into and
out of the memories are timed.

ABC buffers and sizes the mapped logic against the clock period (yosys_script). Timing: OpenSTA
report_checks on the flattened netlist. Energy: OpenSTA report_power of every child instance of the top,
each linked on its own from the hierarchical netlist with its constant pins tied to named wires
(tie_constants: OpenSTA 2.0.17 crashes in report_power on the whole design, flat or hierarchical, and
on pe_array above 4x4 with the constants), with switching activity from the RTL
simulation's VCD annotated on the load pins of every net whose RTL name survives synthesis; OpenSTA
propagates the rest. Power at the simulated activity / clock = logic energy per cycle. docs/rtl.md.
"""

from __future__ import annotations

import math
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from llmulator.buflayout import Layout
from llmulator.errors import UserError
from llmulator.pearray import Plan
from llmulator_plugins.characterize import flow as cz
from llmulator_plugins.characterize.sta import register_output_tcl
from llmulator_plugins.characterize.vcd import NetActivity

from .simulators import ToolTimeout
from .top import Rtl

FLOW = "8"   # bump when the scripts below change what a cached synthesis result holds
# 8: the liberty's cells are read first (the array's control trees instantiate its buffer cell, array.py)
# 6: power runs read net_power.v, the hierarchical netlist with its constant pins tied to named wires;
#    ABC buffers and sizes against the clock period
# 4: flip-flop outputs and the linked instance's input ports annotated from the VCD (were: the default 0.1)


def yosys_script(liberty: Path, period_ps: float | None = None) -> str:
    """Hierarchical synthesis (every unique module mapped once, ``synth`` without ``-flatten``), the
    per-module areas from ``stat -liberty``, then the mapped netlist flattened for OpenSTA (its 2019
    build crashes in report_power on hierarchical netlists). Cells get public names before the
    flatten so that every cell keeps its instance path (``u_array.u_pe_0_0.c12_``).

    With ``period_ps`` (synth FLOW 6) ABC also buffers and sizes the mapped logic against that delay
    target (``buffer -c; upsize -c; dnsize -c``, the tail of the script Yosys runs with ``-D`` and
    ``-constr``): unbuffered, one INVX1 driving the 4x4 output queue's read select took 219 of the
    270 ns critical path; buffered, the 4x4 gemm ws path is 28.0 ns for +4.6 % logic area
    (docs/rtl.md)."""
    lib = str(liberty)
    sizing = ";buffer,-c;topo;stime,-c;upsize,-c,{D};dnsize,-c,{D}" if period_ps else ""
    target = f"-D {period_ps:.0f} " if period_ps else ""
    return "\n".join([
        f"read_liberty -lib {lib}",   # its cells as black boxes: the array's buffer trees instantiate one
        "read_verilog design_syn.v",
        "hierarchy -check -top accel",
        "synth -top accel",          # no -flatten: every unique module is mapped once
        f"dfflibmap -liberty {lib}",
        # ABC's default liberty script less its first step, &fraig -x (SAT sweeping): on the 16x16
        # buffer module that step ran > 5 CPU-min (the rest of the script: 3 s); 4x4 areas per module
        # move -1.1 % to +2.1 %, total +0.5 % (docs/benchmarks-rtl.md)
        f"abc -liberty {lib} {target}-script +strash;scorr;dc2;dretime;strash;&get,-n;&dch,-f;&nf;&put{sizing}",
        "opt_clean",
        "setundef -zero",
        f"tee -q -o stat.txt stat -liberty {lib}",
        "splitnets -ports",          # bit-level nets and ports: OpenSTA's reader refuses concatenated lvalues
        "opt_clean -purge",
        "write_verilog -noattr -noexpr -nohex -nodec net_hier.v",
        "rename -enumerate -pattern c%_ t:*",
        "flatten",
        "opt_clean",
        "splitnets -ports",
        "opt_clean -purge",
        "insbuf -buf BUFX2 A Y",
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


def instance_paths(netlist: str, top: str = "accel") -> dict[str, list[str]]:
    """Hierarchical instance paths (OpenSTA's '/' form) of every module of a hierarchical netlist,
    read from the netlist itself (so every generated submodule is counted as often as it is used)."""
    mods = split_modules(netlist)
    children: dict[str, list[tuple[str, str]]] = {}
    for name, text in mods.items():
        kids = []
        for m in re.finditer(r"^\s*\\?([A-Za-z_][\w$]*)\s+(\\\S+|[A-Za-z_][\w$]*)\s*\(", text, re.M):
            if m.group(1) in mods and m.group(1) != name:
                kids.append((m.group(1), m.group(2).lstrip("\\")))
        children[name] = kids
    if top not in mods:
        raise UserError(f"rtl: module {top} is not in the synthesised netlist")
    out: dict[str, list[str]] = {}

    def walk(mod: str, path: str) -> None:
        out.setdefault(mod, []).append(path)
        for kid, inst in children[mod]:
            walk(kid, f"{path}/{inst}" if path else inst)
    walk(top, "")
    return out


def tie_constants(netlist: str) -> str:
    """Constant pin connections (``.A(1'b0)``) through one named wire per module and value (``llm_tie0``,
    ``llm_tie1``), for the power runs. OpenSTA 2.0.17 segfaults in ``report_power`` of pe_array at 8x8
    (smallest case found: 7 PEs of row 0, their 7 x 32 partial-sum inputs tied to ``1'b0``; 6 work) and
    of the ABC-buffered 4x4 pe_array; ``set_case_analysis 0`` on named wires instead crashes too, the
    named wires alone do not. Not the count alone: 1000 AND gates with an input at ``1'b0`` do not
    crash. The wires are undriven, so OpenSTA does not propagate the constant: their load pins are
    annotated with activity 0 (activity_tcl), a PE's own port nets from the VCD (0 toggles), both at
    duty 0.5 like every constant net here (unbuffered 4x4 gemm ws: pe_array -2.1 %, the design -0.08 %
    against the constants)."""
    def fix(mod: str) -> str:
        used: set[str] = set()

        def sub(m: re.Match) -> str:
            used.add(f"llm_tie{m.group(1)}")
            return f"(llm_tie{m.group(1)})"
        body = re.sub(r"\(\s*1'b([01])\s*\)", sub, mod)
        if not used:
            return mod
        i = body.index(";") + 1
        return body[:i] + "".join(f"\n  wire {w};" for w in sorted(used)) + body[i:]
    return re.sub(r"^module\s.*?^endmodule", lambda m: fix(m.group(0)), netlist, flags=re.S | re.M)


def split_modules(netlist: str) -> dict[str, str]:
    out = {}
    for m in re.finditer(r"^module\s+\\?(\S+?)\s*\(.*?^endmodule", netlist, re.S | re.M):
        out[m.group(1)] = m.group(0)
    return out


def activity_tcl(vcd: cz.VcdActivity, modules: dict[str, str], paths: dict[str, list[str]], root: str, pins,
                 cycles: float) -> tuple[str, int]:
    """Load-pin activity of the instance ``root`` (linked on its own) and everything below it, from the
    hierarchical RTL VCD (names below tb.dut): nets of the hierarchical netlist keep their RTL names."""
    lines, n = [], 0
    span = vcd.t_end - vcd.t_start
    parsed: dict[str, Any] = {}
    # the linked instance's own input ports: OpenSTA propagates activity into the logic from the ports
    # (and register outputs); an input port not annotated takes the script's default (0.1) whatever the
    # load pins say (measured: one PE linked alone with its load pins annotated from the VCD reports
    # 22 pJ/cycle at default 0.1, 68 at 0.5)
    top_mod = next((m for m, insts in paths.items() if root in insts), None)
    if top_mod is not None:
        for port in re.findall(r"^\s*input\s+(?:\[[^]]*\]\s*)?(\\\S+|\w+)\s*;", modules[top_mod], re.M):
            port = port.lstrip("\\")
            rec = vcd.nets.get(root.replace("/", ".") + "." + port)
            if rec is None or port == "clk":
                continue
            act = rec.toggles / cycles if cycles else 0.0
            duty = rec.high_time / span if span > 0 and rec.toggles else 0.5
            lines.append(f"sta::set_power_input_port_activity [get_ports {{{port}}}] {act:.6g} {duty:.6g}")
    for mod, insts in paths.items():
        for inst in insts:
            if inst != root and not inst.startswith(root + "/"):
                continue
            rel = inst[len(root) + 1:]
            if mod not in parsed:
                parsed[mod] = cz.parse_netlist(modules[mod], mod, pins, submodules=True)
            prefix = inst.replace("/", ".") + "."
            for net, loads in parsed[mod].loads.items():
                rec = vcd.nets.get(prefix + net.replace(" [", "["))
                if rec is None and net.startswith("llm_tie"):
                    rec = NetActivity()   # a constant (tie_constants): 0 toggles
                if rec is None or net == "clk":
                    continue
                act = rec.toggles / cycles if cycles else 0.0
                duty = rec.high_time / span if span > 0 else 0.0
                if rec.toggles == 0:
                    # a constant net: OpenSTA 2.0.17 computes NaN power for some cells with a pin at
                    # duty 0 or 1 and zero activity; the duty only weights the leakage states
                    duty = 0.5
                for cell, pin in loads:
                    where = f"{rel}/{cell}/{pin}" if rel else f"{cell}/{pin}"
                    lines.append(f"sta::set_power_pin_activity [get_pins {{{where}}}] {act:.6g} {duty:.6g}")
                    n += 1
            # flip-flop outputs: OpenSTA 2.0.17 otherwise charges them at the global default input activity
            lines += register_output_tcl(vcd, parsed[mod].reg_outputs, cycles, prefix, f"{rel}/" if rel else "")
    return "\n".join(lines) + "\n", n


def timing_script(liberty: Path, period_ns: float) -> str:
    return "\n".join([f"read_liberty {liberty}", "read_verilog net.v", "link_design accel",
                      f"create_clock -name clk -period {period_ns:g} [get_ports clk]",
                      "set_input_delay 0 -clock clk [delete_from_list [all_inputs] [get_ports clk]]",
                      'puts "@@checks"', "report_checks -path_delay max -digits 4", "exit", ""])


def power_script(liberty: Path, module: str, period_ns: float, activity: str | None, banks: list[str],
                 netlist: str = "net_power.v", pes: list[str] = ()) -> str:
    """report_power of one child of the top, linked on its own from ``netlist``, the hierarchical netlist
    with its constants tied (tie_constants; OpenSTA 2.0.17 crashed in report_power on the whole design,
    flat or hierarchical, with the constants; each child alone worked up to 4x4)."""
    L = [f"read_liberty {liberty}", f"read_verilog {netlist}", f"link_design {module}",
         f"create_clock -name clk -period {period_ns:g} [get_ports clk]",
         "set_power_activity -input -activity 0.1 -duty 0.5"]
    if activity:
        L.append(f"source {activity}")
    L += ['puts "@@power"', "report_power -digits 6"]
    if banks:
        cells = " ".join(f"{b}/*" for b in banks)
        L += ['puts "@@banks"', "report_power -digits 6 -instances [get_cells {" + cells + "}]"]
    for p in pes:   # the sampled PEs one by one (pe_replay compares each with its gate-level replay)
        L += [f'puts "@@pe {p}"', "report_power -digits 6 -instances [get_cells {" + p + "/*}]"]
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
                  vcd: Path | None, vcd_cycles: int, timeout: float, pes: list[str] = ()) -> dict[str, Any]:
    """Area (um2, logic and bank stand-ins apart), critical path (ns), logic power and energy per cycle;
    with ``pes`` (PE instance names inside the array) also each of those PEs' energy per cycle."""
    (folder / "design_syn.v").write_text(rtl.text(synth=True))
    (folder / "synth.ys").write_text(yosys_script(tools.liberty, 1e6 / clock_mhz))
    t0 = time.perf_counter()
    _run([tools.yosys, "-q", "-l", "yosys.log", "-s", "synth.ys"], folder, timeout, "yosys")
    t_yosys = time.perf_counter() - t0
    stat = (folder / "stat.txt").read_text()
    areas = module_areas(stat)
    paths = instance_paths((folder / "net_hier.v").read_text())
    counts = {m: len(p) for m, p in paths.items()}
    parts = {m: areas.get(m, 0.0) * counts[m] for m in counts}
    bank_mods = {f"bank_{n}" for n in lay.levels}
    logic_area = sum(v for m, v in parts.items() if m not in bank_mods)
    stub_area = sum(v for m, v in parts.items() if m in bank_mods)
    period = 1000.0 / clock_mhz
    t0 = time.perf_counter()
    (folder / "timing.tcl").write_text(timing_script(tools.liberty, period))
    out = _run([tools.sta, "-no_splash", "-no_init", "-exit", "timing.tcl"], folder, timeout, "timing")
    timing = cz.parse_report_checks(out)
    # power: each child instance of the top on its own (the top's own glue, the controller, is not counted)
    hier = tie_constants((folder / "net_hier.v").read_text())
    (folder / "net_power.v").write_text(hier)
    modules = split_modules(hier)
    act = pins = None
    if vcd is not None and vcd.is_file():
        with open(vcd) as f:
            act = cz.parse_vcd(f, scope="tb.dut", hierarchical=True)
        pins = cz.parse_liberty_pins(tools.liberty.read_text())
    n_pins = 0
    total_w = leak_w = stub_w = 0.0
    per_child: dict[str, float] = {}
    pe_w: dict[str, float] = {}
    for mod, insts in paths.items():
        for inst in insts:
            if not inst or "/" in inst:
                continue
            tcl = None
            if act is not None:
                text, n = activity_tcl(act, modules, paths, inst, pins, float(vcd_cycles))
                tcl = f"act_{inst}.tcl"
                (folder / tcl).write_text(text)
                n_pins += n
            banks = [p[len(inst) + 1:] for m in bank_mods for p in paths.get(m, []) if p.startswith(inst + "/")]
            sample = list(pes) if mod == "pe_array" and act is not None else []
            (folder / f"power_{inst}.tcl").write_text(power_script(tools.liberty, mod, period, tcl, banks,
                                                                   pes=sample))
            out = _run([tools.sta, "-no_splash", "-no_init", "-exit", f"power_{inst}.tcl"], folder, timeout,
                       f"power_{inst}")
            if "@@power" not in out:
                raise UserError(f"rtl: OpenSTA stopped before report_power (log {folder / f'power_{inst}.out'})")
            rest = out.split("@@power", 1)[1]
            for chunk in rest.split("@@pe ")[1:]:
                name, _, text = chunk.partition("\n")
                pe_w[name.strip()] = parse_instance_power(text)
            rest = rest.split("@@pe ", 1)[0]
            power_txt, bank_txt = rest.split("@@banks", 1) if "@@banks" in rest else (rest, "")
            pw = cz.parse_report_power(power_txt)["total"]
            stub = parse_instance_power(bank_txt) if bank_txt else 0.0
            total_w += pw["total"]
            leak_w += pw["leakage"]
            stub_w += stub
            per_child[mod] = per_child.get(mod, 0.0) + pw["total"] - stub
            if tcl:
                (folder / tcl).unlink()
    t_sta = time.perf_counter() - t0
    delay = period - timing["slack_ns"]
    f_hz = clock_mhz * 1e6
    logic_w = total_w - stub_w
    return {"area_um2": parts, "instances": counts, "logic_area_um2": logic_area, "bank_standin_area_um2": stub_area,
            "critical_path_ns": delay, "fmax_mhz": 1000.0 / delay if delay > 0 else math.inf,
            "logic_power_w": logic_w, "logic_energy_per_cycle_pj": logic_w / f_hz * 1e12,
            "energy_per_cycle_pj_by_module": {m: w / f_hz * 1e12 for m, w in per_child.items()},
            "pe_energy_per_cycle_pj": {p: w / f_hz * 1e12 for p, w in pe_w.items()},
            "leakage_w": leak_w, "bank_standin_power_w": stub_w, "annotated_pins": n_pins,
            "yosys_s": t_yosys, "sta_s": t_sta}


def _run(cmd: list[str], cwd: Path, timeout: float, log: str) -> str:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolTimeout(f"rtl: {Path(cmd[0]).name} timed out after {timeout:g} s; synthesis of a larger array "
                          "needs a longer limit: `llmulator profile ... --time-limit SECONDS`") from None
    (cwd / f"{log}.out").write_text(r.stdout + ("\n--- stderr ---\n" + r.stderr if r.stderr else ""))
    if r.returncode != 0:
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-8:])
        raise UserError(f"rtl: {Path(cmd[0]).name} failed (status {r.returncode}; log {cwd / (log + '.out')}):\n{tail}")
    return r.stdout
