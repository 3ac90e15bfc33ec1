"""The memory system's modules measured gate-level on the simulation's own stimulus.

OpenSTA's figure for a module outside the PE array (an operand engine, the writer, the output queue) is
propagated from the nets that keep their RTL names, and it is high: replayed gate-level on their
recorded inputs those modules read 2.5-6.8x less (docs/rtl-crosscheck.md, "The buffer periphery"). As
for the PEs (pe_replay.py), each such module's netlist (its piece of the design's hierarchical netlist)
is driven cycle by cycle with the input values its instance saw in the RTL run, read from the run's VCD,
and priced from the replay's own VCD cell by cell (characterize's vcdpower). The buffer module (arbiter,
crossbar, bank stand-ins) keeps OpenSTA's figure: its banks are stand-ins, not the memory.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

SCOPE = ["tb", "dut"]   # where the testbench instantiates the design's top


def instance_of(module: str) -> str:
    """The top's instance of an engine (``u_<engine>``) or of the output queue (``u_wq``, top.py)."""
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


def replay_module(name: str, verilog: str, netlist: str, vcd: Path, window: int, tools, work: Path,
                  inst: str | None = None) -> float | None:
    """Energy per cycle (pJ) of module ``name`` (its RTL ``verilog`` for the ports, its gate ``netlist``)
    replaying the inputs its instance saw in the run's ``vcd``; None when the VCD has no cycle of it."""
    from llmulator_plugins.characterize import structures as st_mod
    ins, outs = rtl_ports(verilog, name)
    st = st_mod.Structure("queue_bit", 1, 0, name, verilog, tuple(ins), tuple(outs), 0, f"the rtl {name}")
    folder = Path(work) / f"{name}-{hashlib.sha256(netlist.encode()).hexdigest()[:12]}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "net.v").write_text(netlist)
    inst = inst or instance_of(name)
    rows = st_mod.sample_inputs(vcd, SCOPE, [inst], dict(ins), window=window).get(inst) or []
    if not rows:
        return None
    return st_mod.replay_energy(st, rows, tools, folder)["total"]
