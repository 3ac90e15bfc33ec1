"""Writing the technology table: measured entries, the classes derived and the memories scaled from the
45 nm base table, and its header.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .settings import BASE_NODE_NM, BASE_TECH, BASE_VDD, NODE_NM, ROOT, VDD
from .tools import Tools

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
              logic_only: bool = False, fill: bool = True, structures: Iterable[dict[str, Any]] = ()) -> str:
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
    st = list(structures)
    if st:
        from .structures import UNIT_KEY, structure_entry, structure_key
        lines += ["structures:",
                  "  # PE-array structures (characterize --structures): the rtl profiler's systolic PE per shape,",
                  "  # operand width and accumulator width (pe_psum: weight/input stationary; pe_os: output",
                  "  # stationary; int16: a 32-bit accumulator, int16_acc16: a 16-bit one) and the array's",
                  "  # skew-register bit; used instead of MAC + PE register file for systolic arrays",
                  "  # (llmulator.pecost, docs/technology.md); a bit of the memory system's vector queues",
                  "  # (queue_bit: the buffer periphery, llmulator.periphery) and a crosspoint of the buffer's",
                  "  # crossbar (xbar_in / xbar_out, area: llmulator.periphery)"]
        kinds: dict[str, list[dict[str, Any]]] = {}
        for r in st:
            kinds.setdefault(r["structure"], []).append(r)
        for kind, rs in kinds.items():
            lines.append(f"  {kind}:")
            for r in sorted(rs, key=lambda r: (r["bits"], r["acc_bits"])):
                e = structure_entry(r)
                per_bit = r["structure"] in UNIT_KEY
                fmt = structure_key(r["structure"], r["bits"], r["acc_bits"])
                acc = f", acc_bits: {r['acc_bits']}" if not per_bit else ""
                lines.append(f"    {fmt + ':':6} {{energy_pj: {_g(e['energy_pj'])}, idle_energy_pj: "
                             f"{_g(e['idle_energy_pj'])}, area_um2: {_area(e['area_um2'])}{acc}, latency_cycles: "
                             f"{int(e['latency_cycles'])}, source: measured, note: {_q(e['note'])}}}")
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
        f"clock:    {clock_mhz:g} MHz (energy per op = the simulation's energy per cycle; "
        "latency_cycles = ceil(delay / period), >= 1)",
        f"vectors:  {vectors} uniformly random operand sets per design, one operation per cycle (seed {seed})",
        f"tools:    {tools.versions.get('yosys', '?')}; {tools.versions.get('iverilog', '?')};",
        f"          {tools.versions.get('opensta', '?')}; {tools.versions.get('liberty', '?')}",
        f"flow:     {n_measured} designs, {seconds:.0f} s of tool time on this machine",
        "Sources:",
        "  measured:         each integer operator synthesised as a registered module (inputs and output in",
        "                    flip-flops) by Yosys + ABC against the liberty; area = Yosys `stat -liberty`;",
        "                    delay = OpenSTA report_checks (register to register, incl. clock-to-Q and setup);",
        "                    energy = every cell's toggles in a zero-delay Icarus simulation of the gate",
        "                    netlist priced with the liberty's internal-energy tables and load capacitance",
        "                    (vcdpower; OpenSTA's report_power is kept in each result as a cross-check). "
        + ("Registers are excluded (logic only)." if logic_only else
           "Includes the registers (their share is in each note)."),
        "                    Ignored: wire and routing capacitance, glitches, the clock tree beyond the",
        "                    register clock pins, process/voltage/temperature corners other than typical.",
        "  structures:       the rtl profiler's systolic PE (plugins/rtl/array.pe_module) per shape and the",
        "                    array's skew-register bit, measured the same way in two states: advancing every",
        "                    cycle on random operands (energy_pj per cycle: a MAC) and stalled with the clock running",
        "                    (idle_energy_pj per cycle), priced from the simulation like the operators;",
        "                    and a bit of the profiler's vector queue (energy_pj per bit passing through,",
        "                    idle_energy_pj per stored bit per cycle, area_um2 per stored bit).",
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
