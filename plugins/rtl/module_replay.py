"""The memory system's modules measured gate-level on the simulation's own stimulus.

OpenSTA's figure for a module outside the PE array (an operand engine, the writer, the output queue) is
propagated from the nets that keep their RTL names, and it is high: replayed gate-level on their
recorded inputs those modules read 2.5-6.8x less (docs/rtl-crosscheck.md, "The buffer periphery"). As
for the PEs (pe_replay.py), each such module's netlist (its piece of the design's hierarchical netlist)
is driven cycle by cycle with the input values its instance saw in the RTL run, read from the run's VCD,
and priced from the replay's own VCD cell by cell (characterize's vcdpower).

The buffer module of a level (``buf_<level>``) is replayed in its parts (``replay_buffer``): its own cells
(the arbiter's grant logic, the return path, the access counters) on its recorded requests, with its
banks and crossbar simulated but not priced; then every crossbar instance (``xin`` per bank port,
``xout`` per reading lane) on its own recorded inputs, which include the real banks' read data (the
synthesised banks are stand-ins whose outputs are not the memory's). The banks themselves are priced
by the architecture's memory figures, as everywhere in the profiler.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

SCOPE = ["tb", "dut"]   # where the testbench instantiates the design's top


def instance_of(module: str) -> str:
    """The top's instance of an engine (``u_<engine>``), of the output queue (``u_wq``, top.py) or of a level's
    buffer (``u_buf_<level>``)."""
    return "u_wq" if module == "out_fifo" else f"u_{module}"


def rtl_ports(text: str, name: str) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(inputs, outputs) of an ANSI Verilog module header as (name, width) pairs, clk left out."""
    m = re.search(r"\bmodule\s+" + re.escape(name) + r"\s*\((.*?)\)\s*;", text, re.S)
    if not m:
        raise ValueError(f"module {name} not found")
    ins: list[tuple[str, int]] = []
    outs: list[tuple[str, int]] = []
    direction, width = "input", 1
    for item in m.group(1).split(","):
        p = re.fullmatch(r"\s*(input|output)?\s*(?:reg|wire)?\s*(?:\[(\d+):(\d+)\])?\s*(\w+)\s*", item)
        if not p:
            raise ValueError(f"cannot read port '{item.strip()}' of module {name}")
        if p.group(1):
            direction, width = p.group(1), (int(p.group(2)) - int(p.group(3)) + 1 if p.group(2) else 1)
        if p.group(4) != "clk":
            (ins if direction == "input" else outs).append((p.group(4), width))
    return ins, outs


def replay_instances(name: str, verilog: str, netlist: str, vcd: Path, window: int, tools, work: Path,
                     insts: list[str], scope: list[str] | None = None,
                     submodules: bool = False) -> dict[str, float]:
    """Energy per cycle (pJ) of each instance ``insts`` (below ``scope``) of module ``name`` (its RTL ``verilog``
    for the ports, its gate ``netlist``), replaying the inputs it saw in the run's ``vcd``; instances the VCD
    has no cycle of are left out. ``submodules``: the netlist holds the modules it instantiates too, and
    only its own cells are priced (characterize.replay.replay_energy)."""
    from llmulator_plugins.characterize import replay
    from llmulator_plugins.characterize import structures as st_mod
    ins, outs = rtl_ports(verilog, name)
    st = st_mod.Structure("queue_bit", 1, 0, name, verilog, tuple(ins), tuple(outs), 0, f"the rtl {name}")
    folder = Path(work) / f"{name}-{hashlib.sha256(netlist.encode()).hexdigest()[:12]}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "net.v").write_text(netlist)
    rows = replay.sample_inputs(vcd, scope or SCOPE, insts, dict(ins), window=window)
    return {i: replay.replay_energy(st, rows[i], tools, folder, submodules=submodules)["total"]
            for i in insts if rows.get(i)}


def replay_module(name: str, verilog: str, netlist: str, vcd: Path, window: int, tools, work: Path,
                  inst: str | None = None) -> float | None:
    """Energy per cycle (pJ) of the top's instance of module ``name`` (replay_instances); None when the VCD has
    no cycle of it."""
    inst = inst or instance_of(name)
    return replay_instances(name, verilog, netlist, vcd, window, tools, work, [inst]).get(inst)


def buffer_parts(level: str, verilog: dict[str, str]) -> dict[str, list[str]]:
    """The crossbar instances of level ``level``'s buffer module, by module (``xin_<level>``, ``xout_<level>``),
    read from the buffer's RTL (``verilog``: the design's modules by name)."""
    text = verilog[f"buf_{level}"]
    return {m: sorted(set(re.findall(r"^\s*" + re.escape(m) + r"\s+(\w+)\s*\(", text, re.M)))
            for m in (f"xin_{level}", f"xout_{level}")}


def replay_buffer(level: str, verilog: dict[str, str], netlists: dict[str, str], vcd: Path, window: int, tools,
                  work: Path) -> dict[str, float] | None:
    """Energy per cycle (pJ) of level ``level``'s buffer module in parts: ``arbiter`` (the module's own cells),
    ``xin`` and ``xout`` (the crossbar instances, summed); None when a netlist is missing or the VCD has no
    cycle of the buffer. ``verilog`` and ``netlists``: the design's RTL and gate-level modules by name."""
    buf = f"buf_{level}"
    parts = buffer_parts(level, verilog)
    needed = [buf, f"bank_{level}", *parts]
    if any(m not in netlists or m not in verilog for m in needed):
        return None
    piece = "\n".join(netlists[m] for m in needed)     # the buffer with the modules it instantiates
    own = replay_instances(buf, verilog[buf], piece, vcd, window, tools, work, [instance_of(buf)],
                           submodules=True)
    if not own:
        return None
    out = {"arbiter": next(iter(own.values()))}
    for m, insts in parts.items():
        got = replay_instances(m, verilog[m], netlists[m], vcd, window, tools, work, insts,
                               scope=[*SCOPE, instance_of(buf)])
        out[m.split("_", 1)[0]] = sum(got.values())
    return out
