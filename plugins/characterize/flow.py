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

import shutil  # noqa: F401 - tests patch flow.shutil.which (the module, so every piece sees it)
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from llmulator.errors import UserError

# the flow's pieces, one module per job (settings, opverilog, scripts, vcd, liberty, sta, tools, measure,
# table); their names are re-exported here because callers (the rtl profiler, the tests) use ``flow.<name>``
from .liberty import Netlist, liberty_cell_areas, parse_liberty_pins, parse_netlist, switching_energy_pj  # noqa: F401
from .measure import cache_key, characterize_one  # noqa: F401
from .opverilog import OpModule, mac_acc_bits, operator_module  # noqa: F401
from .scripts import netlist_ports, testbench, yosys_script  # noqa: F401
from .settings import CELLS_NAME, CLASSES, DEFAULT_BITS, FLOW_VERSION, INSTALL_HINT, LIB_NAME, ROOT  # noqa: F401
from .sta import activity_tcl, parse_report_checks, parse_report_power, parse_yosys_stat, sta_script  # noqa: F401
from .table import (  # noqa: F401
    area_scale,
    base_table,
    default_out,
    default_work,
    derived_entry,
    energy_scale,
    header_lines,
    measured_entry,
    scaled_entry,
    scaled_memories,
    tech_yaml,
)
from .tools import FlowError, Tools, find_tools, liberty_dir  # noqa: F401
from .vcd import NetActivity, VcdActivity, parse_vcd  # noqa: F401


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


def _run_structures(kinds, bits, clock_mhz, vectors, tools, work, seed, timeout, keep_vcd, con, acc_bits=None):
    from . import structures as st_mod
    results, failures = [], []
    widths = st_mod.pe_widths(list(bits), list(acc_bits or st_mod.ACC_BITS))
    for kind in kinds:
        per_unit = kind in st_mod.UNIT_KEY     # one entry per bit or crosspoint, not per operand width
        for b, acc in ([(8, 0)] if per_unit else widths):
            st = st_mod.structure(kind, b) if per_unit else st_mod.structure(kind, b, acc)
            label = kind if per_unit else f"{kind} {st.fmt}"
            try:
                r = st_mod.characterize_structure(st, clock_mhz, vectors, tools, work, seed, timeout, None, keep_vcd)
            except FlowError as e:
                failures.append((label, str(e)))
                con.print(f"[red]failed[/red] {label}: {e}")
                continue
            results.append(r)
            tag = " (cached)" if r.get("cached") else ""
            unit = {"skew_reg": "pJ/cycle", "queue_bit": "pJ/bit moved", "xbar_in": "pJ/cycle",
                    "xbar_out": "pJ/cycle"}.get(kind, "pJ/MAC")   # per bit or crosspoint
            con.print(f"{label:>13}: {r['energy_pj']:8.3f} {unit}  idle {r['idle_energy_pj']:7.3f} pJ/cycle  "
                      f"{r['area_um2']:9.0f} um2{tag}")
    return results, failures


def run(classes: Iterable[str], bits: Iterable[int], clock_mhz: float, out: Path, vectors: int,
        work: Path, seed: int = 1, command: str = "llmulator characterize", logic_only: bool = False,
        timeout: float = 900.0, console: Any = None, keep_vcd: bool = False,
        structures: Iterable[str] = (), acc_bits: Iterable[int] | None = None) -> dict[str, Any]:
    """Characterize every (class, width), then write the table atomically. Returns a summary."""
    from llmulator.fileio import atomic_write_text
    from rich.console import Console
    if clock_mhz <= 0:
        raise UserError("--clock-mhz must be positive")
    if vectors < 10:
        raise UserError("--vectors must be at least 10")
    jobs = plan(classes, bits)
    from .structures import STRUCTURES
    kinds = list(structures)
    for k in kinds:
        if k not in STRUCTURES:
            raise UserError(f"unknown structure '{k}' for characterize (known: {', '.join(STRUCTURES)})")
    tools = find_tools()
    work.mkdir(parents=True, exist_ok=True)
    eda = work.parent.parent
    if eda.name == ".eda" and not (eda / ".gitignore").exists():
        (eda / ".gitignore").write_text("*\n")
    con = console or Console(stderr=True)
    lock = _lock(work)
    try:
        results, failures = _run_all(jobs, clock_mhz, vectors, tools, work, seed, timeout, keep_vcd, con)
        st_results, st_failures = _run_structures(kinds, list(bits), clock_mhz, vectors, tools, work, seed, timeout,
                                                  keep_vcd, con, acc_bits)
        failures += st_failures
    finally:
        lock.close()
    if failures:
        raise UserError(f"{len(failures)} design(s) failed, no table written (finished ones are cached in "
                        f"{work}; rerun to continue): " + "; ".join(f"{lb}: {m.splitlines()[0]}" for lb, m in failures))
    seconds = sum(float(r.get("seconds", 0.0)) for r in results + st_results)
    header = header_lines(command, tools, clock_mhz, vectors, seed, seconds, logic_only,
                          len(results) + len(st_results))
    text = tech_yaml(results, out.stem, header, base_table(), logic_only, structures=st_results)
    check_table_text(text, out.stem)
    atomic_write_text(out, text)
    out.chmod(0o644)   # the atomic write's temporary file is private; a table is for everyone to read
    return {"out": str(out), "designs": len(results) + len(st_results), "tool_seconds": seconds,
            "cached": sum(1 for r in results + st_results if r.get("cached"))}


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
    for kind, fmts in (data.get("structures") or {}).items():
        for fmt, e in fmts.items():
            for k in ("energy_pj", "idle_energy_pj", "area_um2", "source"):
                if k not in e:
                    raise ValueError(f"structures.{kind}.{fmt} has no {k}")
    for k in ("sram_read_pj_64b", "sram_write_scale", "regfile_read_pj_64b", "dram_pj_per_bit",
              "sram_area_um2_per_bit", "regfile_area_um2_per_bit", "sram_leakage_mw_per_kib"):
        if k not in data["memories"]:
            raise ValueError(f"memories has no {k}")
    return data
