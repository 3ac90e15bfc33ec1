"""Simulation: the testbench, memory images in and out, and running Icarus.

The testbench loads every bank with ``$readmemh`` (the operands packed into words as layout.py
places them; outputs start at zero), pulses ``start``, waits for ``done`` and prints the hardware's
cycle and access counters, then writes the banks back with ``$writememh``; the outputs are read
from those images. Optionally (run with ``+vcd``) it dumps a VCD window for switching activity;
``+vcd_only`` stops after the window. simulators.py compiles and runs it (Verilator or Icarus).
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import numpy as np
from llmulator.buflayout import Layout
from llmulator.errors import UserError
from llmulator.pearray import Plan

from . import simulators

PERIOD_NS = 10.0


@attrs.frozen
class SimResult:
    cycles: int
    reads: dict[str, int]
    writes: dict[str, int]
    outputs: dict[str, np.ndarray]
    vcd: Path | None
    vcd_cycles: int


def pack(lay: Layout, plan: Plan, arrays: dict[str, np.ndarray]) -> dict[str, list[int]]:
    """Word images per level (index = global word), operands packed, the output zero unless ``arrays`` holds its
    starting values (an ``inout`` output)."""
    images: dict[str, list[int]] = {n: [0] * lv.used_words for n, lv in lay.levels.items()}
    for role, pl in lay.placed.items():
        op = plan.operands[role]
        if role == "O" and op.array not in arrays:
            continue
        flat = np.asarray(arrays[op.array]).reshape(-1).astype(np.int64) & ((1 << op.bits) - 1)
        img = images[pl.level]
        for e, v in enumerate(flat.tolist()):
            w = pl.base_word + e // pl.epw
            img[w] |= int(v) << ((e % pl.epw) * op.bits)
    return images


def unpack(lay: Layout, plan: Plan, images: dict[str, list[int]], shape: tuple[int, ...], dtype) -> np.ndarray:
    op = plan.operands["O"]
    pl = lay.placed["O"]
    img = images[pl.level]
    mask = (1 << op.bits) - 1
    vals = []
    for e in range(op.elems):
        v = (img[pl.base_word + e // pl.epw] >> ((e % pl.epw) * op.bits)) & mask
        if op.signed and v >> (op.bits - 1):
            v -= 1 << op.bits
        vals.append(v)
    return np.array(vals, dtype=np.int64).astype(dtype).reshape(shape)


def bank_files(lay: Layout, images: dict[str, list[int]], folder: Path) -> list[tuple[str, int, Path, Path, int]]:
    """(level, bank, input file, output file, rows) for every bank that holds data."""
    out = []
    for name, lv in lay.levels.items():
        img = images[name]
        rows = -(-len(img) // lv.banks)
        digits = lv.width // 4
        for b in range(lv.banks):
            words = [img[w] if (w := lv.word_at(b, r)) < len(img) else 0 for r in range(rows)]
            src = folder / f"mem_{name}_{b}.hex"
            src.write_text("".join(f"{w:0{digits}x}\n" for w in words))
            out.append((name, b, src, folder / f"out_{name}_{b}.hex", rows))
    return out


def testbench(lay: Layout, files, limit: int, vcd: str | None = None, vcd_from: int = 0, vcd_cycles: int = 0) -> str:
    half = PERIOD_NS / 2
    L = ["`timescale 1ns/1ps", "module tb;", "  reg clk = 0, rst = 1, start = 0;", "  wire done; wire [63:0] cycles;"]
    ports = [".clk(clk)", ".rst(rst)", ".start(start)", ".done(done)", ".cycles(cycles)"]
    for lv in lay.levels:
        L.append(f"  wire [31:0] reads_{lv}, writes_{lv};")
        ports += [f".reads_{lv}(reads_{lv})", f".writes_{lv}(writes_{lv})"]
    L.append("  accel dut (" + ", ".join(ports) + ");")
    L.append(f"  always #{half:g} clk = ~clk;")
    L.append("  integer n;")
    L.append("  initial begin")
    for lv, b, src, _dst, rows in files:
        L.append(f'    $readmemh("{src.name}", dut.u_buf_{lv}.u_bank_{b}.mem, 0, {rows - 1});')
    L += ["    repeat (3) @(posedge clk);", "    @(negedge clk) rst = 0;", "    @(negedge clk) start = 1;",
          "    @(negedge clk) start = 0;"]
    if vcd:
        L += ['    if ($test$plusargs("vcd")) begin', f"      repeat ({vcd_from}) @(negedge clk);",
              f'      $dumpfile("{vcd}");', "      $dumpvars(0, tb.dut);",
              f"      n = 0; while (!done && n < {vcd_cycles}) begin @(negedge clk); n = n + 1; end",
              '      $dumpoff; $display("VCD_CYCLES %0d", n);', '      if ($test$plusargs("vcd_only")) $finish;',
              "    end"]
    L += [f"    n = 0; while (!done && n < {limit}) begin @(negedge clk); n = n + 1; end",
          '    if (!done) $display("TIMEOUT");',
          '    $display("CYCLES %0d", cycles);']
    for lv in lay.levels:
        L.append(f'    $display("ACCESS {lv} %0d %0d", reads_{lv}, writes_{lv});')
    for lv, b, _src, dst, rows in files:
        L.append(f'    $writememh("{dst.name}", dut.u_buf_{lv}.u_bank_{b}.mem, 0, {rows - 1});')
    L += ["    $finish;", "  end", "endmodule", ""]
    return "\n".join(L)


def read_hex(path: Path) -> list[int]:
    out = []
    for line in path.read_text().splitlines():
        line = line.split("//")[0].strip()
        if line and not line.startswith("@"):
            if any(c in line for c in "xXzZ"):
                raise UserError(f"rtl: {path.name} holds unknown (x/z) bits after the simulation: the generated "
                                "design read or wrote a register that was never set")
            out.append(int(line, 16))
    return out


def run(simulator: str, design_v: Path, lay: Layout, plan: Plan, arrays: dict[str, np.ndarray],
        out_shape, out_dtype, folder: Path, limit: int, timeout: float, vcd_window: tuple[int, int] | None = None,
        cache: Path | None = None) -> tuple[SimResult, simulators.Ran]:
    """Simulate the design on the arrays with ``simulator`` (simulators.choose()) in ``folder``;
    Verilator programs are cached under ``cache`` (default: ``folder``)."""
    images = pack(lay, plan, arrays)
    files = bank_files(lay, images, folder)
    vcd = "act.vcd" if vcd_window else None
    tb = testbench(lay, files, limit, vcd, *(vcd_window or (0, 0)))
    (folder / "tb.v").write_text(tb)
    ran = simulators.run(simulator, folder, design_v, timeout, vcd is not None, cache or folder)
    out = ran.stdout
    if "TIMEOUT" in out:
        raise UserError(f"rtl: the simulation did not finish within {limit} cycles (log: {folder / ran.log}); "
                        "the generated controller stalled")
    m = re.search(r"^CYCLES (\d+)", out, re.M)
    if not m:
        raise UserError(f"rtl: the simulation printed no cycle count (log: {folder / ran.log})")
    reads, writes = {}, {}
    for lv, r, w in re.findall(r"^ACCESS (\S+) (\d+) (\d+)", out, re.M):
        reads[lv], writes[lv] = int(r), int(w)
    back: dict[str, list[int]] = {n: [] for n in lay.levels}
    for name in lay.levels:
        banks = [read_hex(dst) for lv, _b, _s, dst, _r in files if lv == name]
        rows = max(len(x) for x in banks)
        lv = lay.levels[name]
        back[name] = [banks[lv.bank_of(w)][w // lv.banks] if w // lv.banks < len(banks[lv.bank_of(w)]) else 0
                      for w in range(rows * lv.banks)]
    outputs = {plan.operands["O"].array: unpack(lay, plan, back, out_shape, out_dtype)}
    mv = re.search(r"^VCD_CYCLES (\d+)", out, re.M)
    return SimResult(int(m.group(1)), reads, writes, outputs, folder / vcd if vcd else None,
                     int(mv.group(1)) if mv else 0), ran

