"""Replaying recorded inputs on a gate netlist: a module's energy on the RTL simulation's own stimulus.

The rtl profiler's figures for its PEs and its memory-system modules (plugins/rtl/pe_replay.py,
module_replay.py) and the cross-check's reference columns come from here: the input values an instance
saw in the hierarchical RTL VCD, sampled before every rising clock edge (``sample_inputs``), are driven
cycle by cycle into that module's gate netlist under Icarus, and the replay's own gate-level VCD is priced
cell by cell from the liberty (``replay_energy`` with vcdpower) -- the method of the technology table's
structure entries (structures.py), so the two compare like with like.
"""

from __future__ import annotations

import re
from pathlib import Path

from .liberty import parse_netlist
from .scripts import netlist_ports
from .settings import VDD
from .structures import Structure
from .tools import Tools, _run
from .vcd import NetActivity, parse_vcd
from .vcdpower import cell_outputs, library_pins, library_power, vcd_energy_per_cycle


def sample_inputs(vcd_path: Path, scope: list[str], insts: list[str], names: dict[str, int],
                  window: int | None = None) -> dict[str, list[dict[str, int]]]:
    """The values of the ``names`` inputs of each instance ``scope + [inst]`` of a hierarchical RTL VCD just
    before every rising edge of the top's ``clk`` (what the registers sample), for at most ``window``
    cycles: {inst: [{name: value}, ...]}. x and z read as 0."""
    ids: dict[str, list[tuple[str, str]]] = {}
    clk = None
    stack: list[str] = []
    vals: dict[str, dict[str, int]] = {i: {} for i in insts}
    rows: dict[str, list[dict[str, int]]] = {i: [] for i in insts}
    want = set(insts)
    with open(vcd_path) as f:
        for line in f:
            if line.startswith("$scope"):
                stack.append(line.split()[2])
                continue
            if line.startswith("$upscope"):
                stack.pop()
                continue
            if line.startswith("$var"):
                p = line.split()
                code, name = p[3], p[4]
                if len(stack) == len(scope) + 1 and stack[:-1] == scope and stack[-1] in want and name in names:
                    ids.setdefault(code, []).append((stack[-1], name))
                if name == "clk" and clk is None:   # the first clk declared: the top's (one net everywhere)
                    clk = code
                continue
            if not line.strip() or line[0] in "#$":
                continue
            if line[0] == "b":
                v, code = line[1:].split()
            else:
                v, code = line[0], line[1:].strip()
            if code == clk and v == "1":
                for i in insts:
                    rows[i].append(dict(vals[i]))
                if window is not None and len(rows[insts[0]]) >= window:
                    break
                continue
            for inst, name in ids.get(code, ()):
                vals[inst][name] = int(v.replace("x", "0").replace("z", "0"), 2)
    return rows


def replay_energy(st: Structure, rows: list[dict[str, int]], tools: Tools, folder: Path, period_ns: float = 10.0,
                  timeout: float = 600.0, submodules: bool = False) -> dict[str, float]:
    """Energy per cycle of one structure replaying recorded input values (``sample_inputs``) on its gate
    netlist, priced from the gate-level VCD cell by cell (vcdpower: the characterize method on the RTL's own
    stimulus). ``folder`` holds the structure's synthesised ``net.v`` (characterize_structure's folder).

    With ``submodules`` ``net.v`` may also hold the modules ``st.name`` instantiates (a piece of a hierarchical
    netlist): they are simulated, so that the module's own cells see what they drive, but only the module's
    own cells are priced (its instances of other modules are priced on their own, or not at all). A module
    without a clock (the buffer's crossbar) is priced per replayed row."""
    names = [(n, w) for n, w in st.inputs]
    folder = Path(folder)
    with open(folder / "replay.hex", "w") as f:
        for r in rows:
            word = 0
            for n, w in names:
                word = (word << w) | (r.get(n, 0) & ((1 << w) - 1))
            f.write(f"{word:x}\n")
    total = sum(w for _, w in names)
    net = (folder / "net.v").read_text()
    ports = netlist_ports(net, st.name)
    conns = []
    for p in ports:
        m = re.fullmatch(r"(\w+)\[(\d+)\]", p)
        conns.append(f".\\{p} ({m.group(1)}[{m.group(2)}])" if m else f".{p}({p})")
    unpack = "{" + ", ".join(n for n, _ in names) + "}"
    tb = "\n".join([
        "`timescale 1ns/1ps", "module tb;", "  reg clk = 1'b0;",
        *[f"  reg [{w - 1}:0] {n} = 0;" for n, w in names],
        *[f"  wire [{w - 1}:0] {n};" for n, w in st.outputs],
        f"  reg [{total - 1}:0] mem [0:{len(rows) - 1}];",
        f"  {st.name} dut (" + ", ".join(conns) + ");",
        f"  always #{period_ns / 2:g} clk = ~clk;",
        "  integer i;",
        f'  initial begin $readmemh("replay.hex", mem); {unpack} = mem[0];',
        '    $dumpfile("replay.vcd"); $dumpvars(1, tb.dut);',
        f"    for (i = 1; i < {len(rows)}; i = i + 1) begin @(negedge clk); {unpack} = mem[i]; end",
        "    @(negedge clk); $dumpflush; $finish;", "  end", "endmodule", ""])
    (folder / "tb_replay.v").write_text(tb)
    _run([tools.iverilog, "-Ttyp", "-o", "replay.vvp", "tb_replay.v", "net.v", str(tools.cells_v)], folder,
         "iverilog_replay.log", timeout)
    _run([tools.vvp, "-n", "replay.vvp"], folder, "vvp_replay.log", timeout)
    with open(folder / "replay.vcd") as f:
        vcd = parse_vcd(f, scope="tb.dut")
    if "clk" not in ports:   # a combinational module (the buffer's crossbar): the dump spans one cycle per row
        vcd.nets["clk"] = NetActivity(toggles=2 * len(rows))
    pins = library_pins(tools)
    nl = parse_netlist(net, st.name, pins, submodules=submodules)
    own = _module_text(net, st.name) if submodules else net    # other modules' nets may reuse the names
    e = vcd_energy_per_cycle(vcd, nl, cell_outputs(own, pins), pins, library_power(tools), VDD)
    for junk in ("replay.vcd", "replay.vvp", "replay.hex"):
        (folder / junk).unlink(missing_ok=True)
    return {g: e[g]["total"] for g in ("sequential", "combinational", "total")}


def _module_text(netlist: str, name: str) -> str:
    """The text of module ``name`` in a netlist of several modules."""
    m = re.search(r"^module\s+\\?" + re.escape(name) + r"\s*\(.*?^endmodule", netlist, re.S | re.M)
    if not m:
        raise ValueError(f"module {name} not found in the netlist")
    return m.group(0)
