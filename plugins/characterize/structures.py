"""PE-array structures measured like the operators: the systolic PE the rtl profiler generates, the
array's enabled skew-register bit, and a bit of the memory system's vector queues.

An operator entry is one registered operation per cycle on random operands. A structure entry is a
piece of the generated PE array (plugins/rtl/datapath.py, the very Verilog the profiler synthesises)
measured in the two states it spends its cycles in:

* **active** (``adv`` = 1, one MAC per cycle): int operands uniformly random and new every cycle,
  the partial sum arriving from the PE above the sum of three random products (a PE in row 3), the
  stationary operand (psum PE) reloaded or the accumulator drained (os PE) once per fold of
  ``FOLD`` cycles; ``energy_pj`` = energy of the run / its cycles: the energy of one advancing cycle
  (a MAC; the os PE's drain cycle, 1 in FOLD, is priced alike, because the model charges the
  array's drain steps as cycles without a MAC, at ``idle_energy_pj``, already);
* **idle** (``adv`` = 0: a stalled or unused PE): the inputs hold, only the clock toggles;
  ``idle_energy_pj`` = energy per cycle. The generated hardware has no clock gating, so every PE pays
  this in every cycle it does no MAC.

The queue bit (``queue_bit``) is the profiler's output queue (``datapath.fifo_module``, QUEUE_DEPTH
vectors of QUEUE_BITS bits), the storage every operand engine's return ring and the output queue are
made of: **active** pushes and pops a random vector every cycle, **idle** neither; ``idle_energy_pj``
is per stored bit per cycle, ``energy_pj`` per bit that passes through (pushed and popped once: the
active run's energy less the idle run's, per cycle and vector bit), ``area_um2`` per stored bit
(llmulator.periphery).

All from a zero-delay gate-level simulation (Icarus) whose VCD prices every cell's toggles with the
liberty's tables (vcdpower), as for the operators (docs/technology.md; OpenSTA's report_power on the
annotated netlist is kept beside it as a cross-check). The table stores them under ``structures`` and
the area/energy model uses them for systolic PE-array designs (llmulator.pecost).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import attrs

from . import xbar
from .liberty import parse_netlist
from .measure import cached_result, synthesize
from .scripts import tb_dut
from .settings import FLOW_VERSION, VDD
from .sta import activity_tcl, parse_report_checks, parse_report_power, sta_script
from .tools import FlowError, Tools, _run
from .vcd import parse_vcd
from .vcdpower import cell_outputs, library_pins, library_power, vcd_energy_per_cycle

STRUCTURES = ("pe_psum", "pe_os", "skew_reg", "queue_bit", "xbar_in", "xbar_out")
#: structures whose entry is per unit (a stored bit, a crossbar crosspoint) rather than per operand width: the
#: table's key for that unit
UNIT_KEY = {"skew_reg": "bit", "queue_bit": "bit", "xbar_in": "crosspoint", "xbar_out": "crosspoint"}
FOLD = 16          # active cycles per stationary reload (psum) / accumulator drain (os)
ROWS_ABOVE = 3     # products in the partial sum a psum PE receives (a PE in row 3)
DEFAULT_ACC_BITS = 32   # the accumulator of a PE entry keyed by its operand width alone (``int8``)
ACC_BITS = (16, 32, 64)  # accumulator widths characterize measures by default (the workload's output dtype)
SKEW_BITS = 32     # width of the measured skew register (the entry is per bit)
QUEUE_BITS = 32    # vector width of the measured queue (the entry is per bit)
QUEUE_DEPTH = 16   # its vectors (the profiler's output queue holds llmulator.banks.FIFO_DEPTH)
# 2: energy_pj per advancing cycle (was per MAC: the os drain cycle counted twice)
# 3: energies priced from the VCD cell by cell (vcdpower), OpenSTA's kept as active_sta_pj / idle_sta_pj
STRUCTURE_VERSION = 3


@attrs.frozen
class Structure:
    kind: str                                  # pe_psum, pe_os, skew_reg, queue_bit
    bits: int                                  # operand width (skew_reg: 1, per bit)
    acc_bits: int
    name: str                                  # Verilog module
    verilog: str
    inputs: tuple[tuple[str, int], ...]        # without clk
    outputs: tuple[tuple[str, int], ...]
    register_bits: int
    what: str

    @property
    def fmt(self) -> str:
        return structure_key(self.kind, self.bits, self.acc_bits)


def structure_key(kind: str, bits: int, acc_bits: int) -> str:
    """The table key of a structure: a per-unit one's unit; a PE's operand width, with its accumulator's
    where that is not the 32 bits every PE entry had before acc widths were measured (``int16_acc16``)."""
    if kind in UNIT_KEY:
        return UNIT_KEY[kind]
    return f"int{bits}" if acc_bits == DEFAULT_ACC_BITS else f"int{bits}_acc{acc_bits}"


def pe_widths(bits: list[int], acc_bits: list[int]) -> list[tuple[int, int]]:
    """(operand, accumulator) widths of the PEs to measure: every accumulator at least as wide as the
    operands (an int16 x int16 -> int16 layer wraps in a 16-bit partial sum, as the rtl's PE does)."""
    return [(b, a) for b in bits for a in acc_bits if a >= b]


class _Operand(SimpleNamespace):
    pass


def structure(kind: str, bits: int = 8, acc_bits: int = 32) -> Structure:
    """The Verilog of one structure: the rtl profiler's own ``pe`` module for the psum (weight/input
    stationary) or os (output stationary) shape with signed ``bits`` operands and an ``acc_bits``
    accumulator, or an enabled, resettable skew register like the array's edge skews."""
    if kind in xbar.KINDS:
        return xbar.xbar_structure(kind)
    if kind == "skew_reg":
        n = SKEW_BITS
        name = f"skew_reg_{n}"
        text = (f"// {n} enabled skew-register bits, as pe_array's edge skews (generated by llmulator characterize)\n"
                f"module {name} (input clk, input rst, input adv, input [{n - 1}:0] d, output reg [{n - 1}:0] q);\n"
                f"  always @(posedge clk) if (rst) q <= 0; else if (adv) q <= d;\nendmodule\n")
        return Structure(kind, 1, 0, name, text, (("rst", 1), ("adv", 1), ("d", n)), (("q", n),), n,
                         "skew-register bit: a flip-flop with the array's advance enable and synchronous reset")
    if kind == "queue_bit":
        from llmulator_plugins.rtl.datapath import fifo_module
        name = f"queue_{QUEUE_DEPTH}x{QUEUE_BITS}"
        text = ("// the rtl profiler's vector queue (plugins/rtl/datapath.fifo_module), generated by llmulator "
                "characterize\n" + fifo_module(name, QUEUE_BITS, QUEUE_DEPTH))
        return Structure(kind, 1, 0, name, text, (("rst", 1), ("push", 1), ("din", QUEUE_BITS), ("pop", 1)),
                         (("dout", QUEUE_BITS), ("empty", 1), ("full", 1)), QUEUE_DEPTH * QUEUE_BITS,
                         f"vector-queue bit: the rtl profiler's first-in first-out queue ({QUEUE_DEPTH} vectors of "
                         f"{QUEUE_BITS} bits, a write enable per vector, the read multiplexer, the pointers)")
    from llmulator_plugins.rtl.array import pe_module
    if kind not in ("pe_psum", "pe_os"):
        raise ValueError(f"unknown structure '{kind}' (known: {', '.join(STRUCTURES)})")
    shape = kind[3:]
    op = _Operand(bits=bits, signed=True)
    ops = {"O": _Operand(bits=acc_bits, signed=True), "X": op}
    ops["S" if shape == "psum" else "Y"] = op
    text = pe_module(SimpleNamespace(shape=shape, operands=ops))
    name = f"pe_{shape}_{bits}_{acc_bits}"
    if "module pe (" not in text:
        raise ValueError("plugins/rtl/array.pe_module no longer names its module 'pe'")
    text = "// the rtl profiler's PE (plugins/rtl/array.pe_module), generated by llmulator characterize\n" + \
        text.replace("module pe (", f"module {name} (", 1)
    if shape == "psum":
        ins = (("rst", 1), ("adv", 1), ("load", 1), ("s_in", bits), ("x_in", bits), ("p_in", acc_bits))
        outs = (("x_out", bits), ("p_out", acc_bits))
        what = (f"systolic PE, weight/input stationary: {bits}-bit stationary register, {bits}x{bits} multiplier, "
                f"{acc_bits}-bit partial-sum adder and register, {bits}-bit west-east register, advance enable")
    else:
        ins = (("rst", 1), ("adv", 1), ("drain", 1), ("x_in", bits), ("y_in", bits), ("acc_in", acc_bits))
        outs = (("x_out", bits), ("y_out", bits), ("acc", acc_bits))
        what = (f"systolic PE, output stationary: {bits}x{bits} multiplier, {acc_bits}-bit accumulator with drain "
                f"mux, {bits}-bit west-east and north-south registers, advance enable")
    return Structure(kind, bits, acc_bits, name, text, ins, outs, 2 * bits + acc_bits, what)


def testbench(st: Structure, ports: list[str], cycles: int, period_ns: float, mode: str, seed: int = 1,
              vcd: str = "act.vcd") -> str:
    """Random stimulus for one structure: ``mode`` "active" (advancing every cycle, operands new every
    cycle, one reload/drain per FOLD cycles) or "idle" (not advancing, inputs held). The dump covers
    exactly ``cycles`` clock cycles after a reset and a warm-up."""
    L = tb_dut(st.name, st.inputs, st.outputs, ports, free=("clk",))
    L.append(f"  always #{period_ns / 2.0:g} clk = ~clk;")
    L.append(f"  integer i, j, seed = {int(seed)};")
    b = st.bits
    rnd = "$random(seed)"    # truncated to the target: uniformly random two's-complement operands
    if st.kind in xbar.KINDS:
        return "\n".join(L + xbar.stimulus(st.kind, cycles, mode, vcd))
    if st.kind == "queue_bit":
        # half full after the warm-up; active: a random vector in and the oldest out every cycle
        on = int(mode == "active")
        return "\n".join(L + [
            "  initial begin",
            f"    rst = 1'b1; push = 1'b0; pop = 1'b0; din = {rnd};",
            "    repeat (2) @(negedge clk);",
            "    @(negedge clk) rst = 1'b0;",
            f"    repeat ({QUEUE_DEPTH // 2}) @(negedge clk) begin push = 1'b1; din = {rnd}; end",
            f"    @(negedge clk) begin push = 1'b{on}; pop = 1'b{on}; din = {rnd}; end",
            f'    $dumpfile("{vcd}");',
            "    $dumpvars(1, tb.dut);",
            f"    for (i = 1; i <= {int(cycles)}; i = i + 1) @(negedge clk) "
            + (f"din = {rnd};" if on else "begin end"),
            "    $dumpflush;",
            "    $finish;",
            "  end",
            "endmodule", ""])
    if st.kind == "pe_psum":
        # p_in: the sum of ROWS_ABOVE products of random signed operands (a partial sum from row 3)
        L.append(f"  reg signed [{b - 1}:0] u, v; reg signed [{st.acc_bits - 1}:0] ps;")
        draw = (f"x_in = {rnd}; ps = 0; for (j = 0; j < {ROWS_ABOVE}; j = j + 1) begin u = {rnd}; v = {rnd}; "
                "ps = ps + u * v; end p_in = ps; "
                f"load = (i % {FOLD}) == 0; if (load) s_in = {rnd};")
    elif st.kind == "pe_os":
        L.append(f"  reg signed [{b - 1}:0] u, v; reg signed [{st.acc_bits - 1}:0] ps;")
        draw = (f"x_in = {rnd}; y_in = {rnd}; drain = (i % {FOLD}) == {FOLD - 1}; "
                f"if (drain) begin ps = 0; for (j = 0; j < {FOLD - 1}; j = j + 1) begin u = {rnd}; v = {rnd}; "
                "ps = ps + u * v; end acc_in = ps; end")
    else:
        draw = f"d = {rnd};"
    active = mode == "active"
    L += ["  task draw; begin " + draw + " end endtask",
          "  initial begin",
          "    rst = 1'b1; i = 0; draw;",
          "    repeat (2) @(negedge clk) draw;",
          "    @(negedge clk) begin rst = 1'b0; adv = 1'b1; draw; end",
          f"    repeat ({FOLD + 3}) @(negedge clk) begin i = i + 1; draw; end",   # fill every register
          f"    @(negedge clk) begin adv = 1'b{int(active)}; i = 0; draw; end",
          f'    $dumpfile("{vcd}");',
          "    $dumpvars(1, tb.dut);",
          f"    for (i = 1; i <= {int(cycles)}; i = i + 1) @(negedge clk) " + ("draw;" if active else "begin end"),
          "    $dumpflush;",
          "    $finish;",
          "  end",
          "endmodule", ""]
    return "\n".join(L)


def cache_key(st: Structure, clock_mhz: float, vectors: int, seed: int, tools: Tools) -> dict[str, Any]:
    lib_hash = hashlib.sha256(tools.liberty.read_bytes()).hexdigest()[:16]
    return {"flow": FLOW_VERSION, "structure_flow": STRUCTURE_VERSION, "structure": st.kind, "bits": st.bits,
            "acc_bits": st.acc_bits, "clock_mhz": float(clock_mhz), "vectors": int(vectors), "seed": int(seed),
            "fold": FOLD, "rows_above": ROWS_ABOVE, "liberty_sha256": lib_hash,
            "verilog_sha256": hashlib.sha256(st.verilog.encode()).hexdigest()[:16],
            "tools": {k: v for k, v in tools.versions.items() if k != "liberty"}}


def _measure_state(st: Structure, mode: str, ports: list[str], nl, tools: Tools, d: Path, vectors: int,
                   period: float, seed: int, timeout: float, keep_vcd: bool):
    """One state of a structure: gate-level simulation, activity, OpenSTA timing and power.
    Returns (report_power rows, report_checks, annotated pins, the VCD-priced energy per cycle: vcdpower)."""
    (d / f"tb_{mode}.v").write_text(testbench(st, ports, vectors, period, mode, seed, vcd=f"{mode}.vcd"))
    _run([tools.iverilog, "-Ttyp", "-o", f"{mode}.vvp", f"tb_{mode}.v", "net.v", str(tools.cells_v)], d,
         f"iverilog_{mode}.log", timeout)
    _run([tools.vvp, "-n", f"{mode}.vvp"], d, f"vvp_{mode}.log", timeout)
    with open(d / f"{mode}.vcd") as f:
        vcd = parse_vcd(f, scope="tb.dut")
    lib_pins = library_pins(tools)
    vpow = vcd_energy_per_cycle(vcd, nl, cell_outputs((d / "net.v").read_text(), lib_pins), lib_pins,
                                library_power(tools), VDD)
    tcl, n = activity_tcl(vcd, nl)
    (d / f"activity_{mode}.tcl").write_text(tcl)
    if not keep_vcd:
        (d / f"{mode}.vcd").unlink(missing_ok=True)
        (d / f"{mode}.vvp").unlink(missing_ok=True)
    (d / f"sta_{mode}.tcl").write_text(sta_script(tools.liberty, "net.v", st.name, period, f"activity_{mode}.tcl"))
    out = _run([tools.sta, "-no_splash", "-no_init", "-exit", f"sta_{mode}.tcl"], d, f"sta_{mode}.log", timeout)
    if "@@power" not in out:
        raise FlowError(f"OpenSTA stopped before report_power (log: {d / f'sta_{mode}.log'})")
    checks_txt, power_txt = out.split("@@power", 1)
    if "Error" in out:
        err = next(ln for ln in out.splitlines() if "Error" in ln)
        raise FlowError(f"OpenSTA: {err.strip()} (log: {d / f'sta_{mode}.log'})")
    return parse_report_power(power_txt), parse_report_checks(checks_txt), n, vpow


def characterize_structure(st: Structure, clock_mhz: float, vectors: int, tools: Tools, work: Path,
                           seed: int = 1, timeout: float = 900.0, step: Callable[[str], None] | None = None,
                           keep_vcd: bool = False) -> dict[str, Any]:
    """Synthesis (area), timing, and power in the active and the idle state; cached in ``work``."""
    from llmulator.fileio import atomic_write_json
    d = work / f"{st.kind}-{st.fmt}" if st.kind not in UNIT_KEY else work / st.kind
    key = cache_key(st, clock_mhz, vectors, seed, tools)
    res = cached_result(d, key)
    if res is not None:
        return res
    step = step or (lambda _s: None)
    d.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    period = 1000.0 / clock_mhz
    f_hz = clock_mhz * 1e6
    (d / "op.v").write_text(st.verilog)
    stat, seq_area, netlist_text, ports = synthesize(st, tools, d, timeout, step)
    lib_pins = library_pins(tools)
    nl = parse_netlist(netlist_text, st.name, lib_pins)
    power: dict[str, Any] = {}
    vpow: dict[str, Any] = {}
    timing: dict[str, float] = {}
    n_pins = 0
    for mode in ("active", "idle"):
        step(f"{mode}: gate-level simulation and power (iverilog, OpenSTA)")
        power[mode], timing, n, vpow[mode] = _measure_state(st, mode, ports, nl, tools, d, vectors, period, seed,
                                                            timeout, keep_vcd)
        n_pins = max(n_pins, n)
    delay = period - timing["slack_ns"]
    per = float(st.register_bits) if st.kind in UNIT_KEY else 1.0   # per stored bit, per crosspoint

    def pj(mode: str, group: str = "total") -> float:
        """The energy the simulation did per cycle (vcdpower), per bit where the entry is per bit."""
        return vpow[mode][group]["total"] / per

    def sta_pj(mode: str) -> float:
        """OpenSTA's report_power for the same cycle (the cross-check)."""
        return power[mode].get("total", {}).get("total", 0.0) / f_hz * 1e12 / per
    active_cycle = pj("active")
    # a queue bit: the energy of a bit passing through (a vector in and one out per active cycle) on top of
    # the stored bits' idle cost
    move = (active_cycle - pj("idle")) * QUEUE_DEPTH if st.kind == "queue_bit" else None
    cross = st.kind in xbar.KINDS   # logic alone: the wrapper's flip-flops, their clock and loads left out
    energy, area = ((pj("active", "combinational"), stat["area_um2"] - seq_area) if cross else
                    (active_cycle if move is None else move, stat["area_um2"]))
    res = {
        "key": key, "structure": st.kind, "bits": st.bits, "acc_bits": st.acc_bits, "what": st.what,
        "register_bits": st.register_bits, "per_bit": st.kind in UNIT_KEY,
        "area_um2": area / per, "area_seq_um2": seq_area / per, "cells": stat["cells"],
        "delay_ns": delay, "period_ns": period, "latency_cycles": max(1, math.ceil(delay / period - 1e-9)),
        "power_w": power, "active_cycle_pj": active_cycle, "energy_pj": energy,
        "energy_seq_pj": pj("active", "sequential"), "energy_comb_pj": pj("active", "combinational"),
        "idle_energy_pj": pj("idle", "combinational") if cross else pj("idle"),
        "idle_seq_pj": pj("idle", "sequential"),
        "active_sta_pj": sta_pj("active"), "idle_sta_pj": sta_pj("idle"), "vcd_power_pj": vpow,
        "cycles": vectors, "annotated_pins": n_pins, "seconds": round(time.perf_counter() - t_start, 2),
    }
    atomic_write_json(d / "result.json", res)
    res["cached"] = False
    return res


def structure_entry(r: dict[str, Any]) -> dict[str, Any]:
    """One ``structures`` table entry from a characterize_structure result."""
    from .table import _area, _g
    if r["structure"] in xbar.KINDS:
        note = (f"{r['what']}; per crosspoint, logic alone (measured in a registered wrapper, its flip-flops left "
                "out); energy_pj: combinational energy per cycle with every input random every cycle (an upper "
                "figure: the area model uses the area only), idle_energy_pj with the inputs held")
    elif r["structure"] == "queue_bit":
        note = (f"{r['what']}; per stored bit, measured as {QUEUE_DEPTH} x {QUEUE_BITS} bits; energy_pj per bit "
                "passing through (pushed and popped: a random vector in and one out every cycle, less the idle "
                "cost), idle_energy_pj per stored bit per cycle (no push, no pop, the clock running)")
    elif r["structure"] == "skew_reg":
        note = (f"{r['what']}; per bit, measured as a {SKEW_BITS}-bit register; energy_pj per advancing cycle "
                "with random data, idle_energy_pj per held cycle")
    else:
        note = (f"{r['what']}; {r['register_bits']} flip-flops included; energy_pj per advancing cycle (a MAC) "
                f"on random operands (one reload/drain per {FOLD} cycles; flip-flops "
                f"{_g(r['energy_seq_pj'], 3)} pJ of {_g(r['active_cycle_pj'], 3)} pJ per cycle), idle_energy_pj "
                f"per cycle without a MAC (not advancing, inputs held, the clock running); logic alone "
                f"{_area(r['area_um2'] - r['area_seq_um2'])} um2")
    note += f"; critical path {r['delay_ns']:.2f} ns"
    return {"energy_pj": r["energy_pj"], "idle_energy_pj": r["idle_energy_pj"], "area_um2": r["area_um2"],
            "latency_cycles": r["latency_cycles"], "source": "measured", "note": note}
