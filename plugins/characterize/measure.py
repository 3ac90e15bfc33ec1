"""One design through the whole flow (synthesis, timing, gate simulation, power), cached by content.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .liberty import liberty_cell_areas, parse_netlist, switching_energy_pj
from .opverilog import OpModule, operator_module
from .scripts import netlist_ports, testbench, yosys_script
from .settings import FLOW_VERSION, VDD
from .sta import activity_tcl, parse_report_checks, parse_report_power, parse_yosys_stat, sta_script
from .tools import FlowError, Tools, _run
from .vcd import parse_vcd
from .vcdpower import cell_outputs, library_pins, library_power, vcd_energy_per_cycle

# --------------------------------------------------------------------------------------------
# one design

def cache_key(mod: OpModule, clock_mhz: float, vectors: int, seed: int, tools: Tools) -> dict[str, Any]:
    lib_hash = hashlib.sha256(tools.liberty.read_bytes()).hexdigest()[:16]
    return {"flow": FLOW_VERSION, "class": mod.op_class, "bits": mod.bits, "clock_mhz": float(clock_mhz),
            "vectors": int(vectors), "seed": int(seed), "liberty_sha256": lib_hash,
            "verilog_sha256": hashlib.sha256(mod.verilog.encode()).hexdigest()[:16],
            "tools": {k: v for k, v in tools.versions.items() if k != "liberty"}}


def cached_result(folder: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    """The flow's result cached in ``folder/result.json`` when it was made with ``key`` (marked
    ``cached``), else None (no file, an unreadable one, or another key: the flow runs again)."""
    cached = folder / "result.json"
    if not cached.is_file():
        return None
    try:
        res = json.loads(cached.read_text())
    except (OSError, ValueError):
        return None
    if res.get("key") != key:
        return None
    res["cached"] = True
    return res


def synthesize(mod, tools: Tools, d: Path, timeout: float, step: Callable[[str], None]):
    """Yosys on ``mod`` (``name``, ``verilog`` already in ``d/op.v``) against the liberty, in ``d``:
    (the ``stat`` figures, the area of its flip-flops and latches, the netlist's text, its ports)."""
    step("synthesis (yosys)")
    (d / "synth.ys").write_text(yosys_script(mod, tools.liberty))
    _run([tools.yosys, "-q", "-l", "yosys.log", "-s", "synth.ys"], d, "yosys.out", timeout)
    stat = parse_yosys_stat((d / "stat.txt").read_text())
    areas = liberty_cell_areas(tools.liberty.read_text())
    seq_area = sum(k * areas.get(c, 0.0) for c, k in stat["cells"].items() if c.startswith(("DFF", "LATCH")))
    netlist_text = (d / "net.v").read_text()
    return stat, seq_area, netlist_text, netlist_ports(netlist_text, mod.name)


def characterize_one(op_class: str, bits: int, clock_mhz: float, vectors: int, tools: Tools, work: Path,
                     seed: int = 1, timeout: float = 900.0, step: Callable[[str], None] | None = None,
                     keep_vcd: bool = False) -> dict[str, Any]:
    """Run the whole flow for one operator; the result dict is cached in ``work/<class>-int<bits>``."""
    from llmulator.fileio import atomic_write_json
    mod = operator_module(op_class, bits)
    d = work / f"{op_class}-int{bits}"
    key = cache_key(mod, clock_mhz, vectors, seed, tools)
    res = cached_result(d, key)
    if res is not None:
        return res
    step = step or (lambda _s: None)
    d.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    period = 1000.0 / clock_mhz
    (d / "op.v").write_text(mod.verilog)

    stat, seq_area, netlist_text, ports = synthesize(mod, tools, d, timeout, step)

    step("gate-level simulation (iverilog)")
    (d / "tb.v").write_text(testbench(mod, ports, vectors, period, seed))
    _run([tools.iverilog, "-Ttyp", "-o", "sim.vvp", "tb.v", "net.v", str(tools.cells_v)], d, "iverilog.log", timeout)
    _run([tools.vvp, "-n", "sim.vvp"], d, "vvp.log", timeout)

    step("switching activity (VCD)")
    with open(d / "act.vcd") as f:
        vcd = parse_vcd(f, scope="tb.dut")
    lib_pins = library_pins(tools)
    nl = parse_netlist(netlist_text, mod.name, lib_pins)
    tcl, n_pins = activity_tcl(vcd, nl)
    switch_vcd = switching_energy_pj(vcd, nl, lib_pins, VDD)
    # the table's energy: what the simulation did, priced cell by cell from the liberty (vcdpower); OpenSTA's
    # report_power below is kept as a cross-check (it propagates its own activities through the cells)
    vpow = vcd_energy_per_cycle(vcd, nl, cell_outputs(netlist_text, lib_pins), lib_pins, library_power(tools), VDD)
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
        "power_w": power, "energy_pj": vpow["total"]["total"], "vcd_power_pj": vpow,
        "energy_seq_pj": vpow["sequential"]["total"], "energy_comb_pj": vpow["combinational"]["total"],
        "energy_sta_pj": power["total"]["total"] / f_hz * 1e12,
        "energy_switching_sta_pj": power["total"]["switching"] / f_hz * 1e12, "energy_switching_vcd_pj": switch_vcd,
        "cycles": cycles, "annotated_pins": n_pins, "seconds": round(time.perf_counter() - t_start, 2),
    }
    atomic_write_json(d / "result.json", res)
    res["cached"] = False
    return res
