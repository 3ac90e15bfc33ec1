"""SCALE-Sim's run configuration from the architecture and mapping, and its reports read back.

* array: ``compute.pe_array`` rows -> ArrayHeight, cols -> ArrayWidth (swapped
  when the mapping binds the loops transposed, see ``DATAFLOWS``).
* dataflow: from the mapping's spatial bindings, in SCALE-Sim's im2col view
  (M = output pixels / GEMM rows, N = filters / GEMM cols, K = window / reduction).
* SRAM: the largest ``sram`` level (capacity x instances) split in three equal
  parts for the ifmap, filter and ofmap buffers (whole kB, at least 1).
* ``InterfaceBandwidth: CALC``: SCALE-Sim sizes DRAM bandwidth so that nothing
  stalls; the reported cycles are compute cycles of the systolic schedule.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import attrs
from llmulator.design import Design
from llmulator.errors import UserError

from .layer import Layer

# (role on PE rows, role on PE cols) -> (SCALE-Sim dataflow, array transposed)
# Roles in SCALE-Sim's im2col view of a layer: M = output pixels (GEMM rows of A and C),
# N = filters (GEMM columns of B and C), K = convolution window (GEMM reduction).
DATAFLOWS: dict[tuple[str, str], tuple[str, bool]] = {
    ("K", "N"): ("ws", False),
    ("M", "N"): ("os", False),
    ("K", "M"): ("is", False),
    ("N", "K"): ("ws", True),
    ("N", "M"): ("os", True),
    ("M", "K"): ("is", True),
}
DF_NAMES = {"ws": "weight stationary", "os": "output stationary", "is": "input stationary"}
DATAFLOW_HELP = ("SCALE-Sim dataflows by spatial binding (rows x cols; M = output rows/pixels, "
                 "N = output columns/filters, K = reduction/window): K x N -> ws (weight stationary), "
                 "M x N -> os (output stationary), K x M -> is (input stationary); the transposed "
                 "bindings (N x K, N x M, M x K) run the same dataflow on the transposed array")

RUN_NAME = "llmulator"  # SCALE-Sim's run name: the report folder under the output folder


# -- architecture and mapping -> config ------------------------------------------------------------
@attrs.frozen
class RunConfig:
    rows: int  # SCALE-Sim ArrayHeight
    cols: int  # SCALE-Sim ArrayWidth
    dataflow: str
    transposed: bool
    ifmap_kb: int
    filter_kb: int
    ofmap_kb: int
    sram_level: str

    def ini(self) -> str:
        """SCALE-Sim 3.0.0's config file: every key its parser reads, CALC bandwidth, no sparsity."""
        return f"""\
[general]
run_name = {RUN_NAME}

[architecture_presets]
ArrayHeight = {self.rows}
ArrayWidth = {self.cols}
IfmapSramSzkB = {self.ifmap_kb}
FilterSramSzkB = {self.filter_kb}
OfmapSramSzkB = {self.ofmap_kb}
IfmapOffset = 0
FilterOffset = 10000000
OfmapOffset = 20000000
Dataflow = {self.dataflow}
Bandwidth = 10
ReadRequestBuffer = 32
WriteRequestBuffer = 32

[layout]
IfmapCustomLayout = False
IfmapSRAMBankBandwidth = 10
IfmapSRAMBankNum = 10
IfmapSRAMBankPort = 2
FilterCustomLayout = False
FilterSRAMBankBandwidth = 10
FilterSRAMBankNum = 10
FilterSRAMBankPort = 2

[sparsity]
SparsitySupport = false
SparseRep = ellpack_block
OptimizedMapping = false
BlockSize = 8
RandomNumberGeneratorSeed = 40

[run_presets]
InterfaceBandwidth = CALC
UseRamulatorTrace = False
"""


def detect_dataflow(d: Design, layer: Layer) -> tuple[str, bool]:
    """(SCALE-Sim dataflow, transposed) from the mapping's spatial bindings, or a UserError."""
    bound: dict[str, list[str]] = {"rows": [], "cols": []}
    for label, lm in d.mapping.loops.items():
        if lm.spatial in bound:
            bound[lm.spatial].extend((label,) + tuple(lm.fuse))  # a fused loop binds all its members
    where = f"mapping '{d.mapping.name}'"
    if not bound["rows"] or not bound["cols"]:
        have = "; ".join(f"{k}: {', '.join(v)}" for k, v in bound.items() if v) or "no spatial loops"
        raise UserError(f"scalesim: {where} must bind loops to both PE rows and PE cols ({have}). "
                        + DATAFLOW_HELP)
    roles = {}
    for dim, labels in bound.items():
        unknown = [lb for lb in labels if lb not in layer.roles]
        if unknown:
            raise UserError(f"scalesim: {where} binds loop(s) {', '.join(unknown)} to PE {dim}, but they are "
                            f"not loops of the {layer.kind} einsum")
        rs = sorted({layer.roles[lb] for lb in labels})
        if len(rs) != 1:
            raise UserError(f"scalesim: {where} mixes roles {'+'.join(rs)} on PE {dim} "
                            f"({', '.join(labels)}). " + DATAFLOW_HELP)
        roles[dim] = rs[0]
    key = (roles["rows"], roles["cols"])
    if key not in DATAFLOWS:
        raise UserError(f"scalesim: {where} binds {key[0]} to PE rows and {key[1]} to PE cols, which is no "
                        "SCALE-Sim dataflow. " + DATAFLOW_HELP)
    return DATAFLOWS[key]


def sram_split(d: Design) -> tuple[str, int, int, int]:
    """(level name, ifmap kB, filter kB, ofmap kB): the largest SRAM level in three equal parts."""
    srams = [lv for lv in d.arch.memory if lv.kind == "sram"]
    if not srams:
        raise UserError(f"scalesim: architecture '{d.arch.name}' has no memory level of kind sram; SCALE-Sim "
                        "needs on-chip SRAM buffers for the ifmap, filter and ofmap")
    lv = max(srams, key=lambda m: m.capacity_kib * m.instances)
    third = max(1, int(lv.capacity_kib * lv.instances // 3))
    return lv.name, third, third, third


def run_config(d: Design, layer: Layer) -> RunConfig:
    pe = d.arch.pe_array
    if pe is None:
        raise UserError(f"scalesim: architecture '{d.arch.name}' has no compute.pe_array; SCALE-Sim simulates "
                        "a systolic PE array (rows -> ArrayHeight, cols -> ArrayWidth)")
    df, transposed = detect_dataflow(d, layer)
    level, ik, fk, ok = sram_split(d)
    rows, cols = (pe.cols, pe.rows) if transposed else (pe.rows, pe.cols)
    return RunConfig(rows, cols, df, transposed, ik, fk, ok, level)


# -- reports ---------------------------------------------------------------------------------------
def _read_report(path: Path) -> dict[str, str]:
    """First data row of a SCALE-Sim report, keyed by its (stripped) header names."""
    rows = [[c.strip() for c in r] for r in csv.reader(io.StringIO(path.read_text())) if any(c.strip() for c in r)]
    if len(rows) < 2:
        raise UserError(f"scalesim: {path.name} has no data row")
    return {h: v for h, v in zip(rows[0], rows[1], strict=False) if h}


def parse_reports(folder: Path) -> tuple[float, dict[str, float]]:
    """(total cycles without prefetch, counters) from SCALE-Sim's report folder."""
    comp = _read_report(folder / "COMPUTE_REPORT.csv")
    try:
        cycles = float(comp["Total Cycles"])
        counters = {
            "cycles_incl_prefetch": float(comp["Total Cycles (incl. prefetch)"]),
            "stall_cycles": float(comp["Stall Cycles"]),
            "overall_util_pct": float(comp["Overall Util %"]),
            "mapping_efficiency_pct": float(comp["Mapping Efficiency %"]),
            "compute_util_pct": float(comp["Compute Util %"]),
        }
    except (KeyError, ValueError) as e:
        raise UserError(f"scalesim: unexpected COMPUTE_REPORT.csv (columns {', '.join(comp)}): {e}") from None
    keys = {"SRAM IFMAP Reads": "sram_ifmap_reads", "SRAM Filter Reads": "sram_filter_reads",
            "SRAM OFMAP Writes": "sram_ofmap_writes", "DRAM IFMAP Reads": "dram_ifmap_reads",
            "DRAM Filter Reads": "dram_filter_reads", "DRAM OFMAP Writes": "dram_ofmap_writes",
            "Avg IFMAP DRAM BW": "avg_dram_bw_ifmap_words", "Avg FILTER DRAM BW": "avg_dram_bw_filter_words",
            "Avg OFMAP DRAM BW": "avg_dram_bw_ofmap_words"}
    for name in ("DETAILED_ACCESS_REPORT.csv", "BANDWIDTH_REPORT.csv"):
        if (folder / name).is_file():
            for h, v in _read_report(folder / name).items():
                if h in keys:
                    try:
                        counters[keys[h]] = float(v)
                    except ValueError:
                        pass
    return cycles, counters
