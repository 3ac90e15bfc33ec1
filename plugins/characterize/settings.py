"""Constants of the characterize flow: the operator classes and widths, where the tools and the OSU018
liberty live, and the nodes and supplies the measured and the base tables belong to.
"""

from __future__ import annotations

from pathlib import Path

# 3: flip-flop outputs annotated with their simulated activity (sta.register_output_tcl)
# 4: energies priced from the VCD cell by cell (vcdpower); OpenSTA's report_power kept as a cross-check
FLOW_VERSION = 4
CLASSES = ("add", "mul", "mac", "cmp", "logic", "shift", "select", "div")
DEFAULT_BITS = (8, 16, 32)
INSTALL_HINT = "run `bash scripts/install_eda.sh` (apt: yosys, iverilog, opensta; the OSU018 liberty into .eda/osu018)"
ROOT = Path(__file__).resolve().parents[2]
LIB_NAME = "osu018_stdcells.lib"
CELLS_NAME = "osu018_stdcells.v"
# node and supply of the measured library, and of the 45 nm table the memories are scaled from
NODE_NM, VDD = 180, 1.8
BASE_TECH, BASE_NODE_NM, BASE_VDD = "45nm", 45, 0.9
