"""Measured PE-array structures in the area/energy model (technology tables with a ``structures`` section).

A technology table measured by ``llmulator characterize`` (``osu018``) holds, besides its operator
classes, the systolic PE the rtl profiler generates (MAC + operand and accumulator registers + the
array's advance enable), measured per shape (``pe_psum``: weight/input stationary, the partial sum
flows down; ``pe_os``: output stationary, the accumulator stays) and operand width, and the array's
enabled skew-register bit (``skew_reg``). For a systolic PE-array design whose ``mac`` figures come
from that table the model uses them instead of MAC + PE register file (docs/technology.md, "PE-array
structures"):

* area: PEs x the PE entry's area + the edge skew/de-skew bits x the skew-register bit's area, in place
  of the MAC units' area and the per-PE register-file level's area (when that level's area was
  defaulted too: its registers are the PE entry's);
* energy: MACs x the PE entry's ``energy_pj`` + (PEs x cycles - MACs) x its ``idle_energy_pj`` (the
  generated hardware clocks every PE every cycle: no clock gating) + the skew bits, each cycle at the
  bit's idle energy plus, per array step with data (MACs / PEs), the active-idle difference; in place
  of the MAC energy and the operand accesses to the per-PE register file (when its access energy was
  defaulted).

Everything else (memories, tile traffic, leakage) is unchanged; a table without ``structures`` (45nm)
or an architecture that states its MAC's energy or area keeps the MAC + register-file rule.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from . import nest as lnest
from . import tech


@attrs.frozen
class PeCost:
    shape: str                     # pe_psum | pe_os
    pe: dict[str, Any]             # the table entry of the PE
    skew: dict[str, Any] | None    # the table entry of one skew-register bit
    n_pe: int
    skew_bits: int
    regfile: str | None            # the per-PE register-file level the PE entry stands for
    regfile_area: bool             # its area was defaulted (so the PE entry's registers replace it)
    regfile_energy: bool           # its access energy was defaulted

    def area_um2(self) -> float:
        return self.n_pe * float(self.pe["area_um2"]) + self.skew_bits * float((self.skew or {}).get("area_um2", 0.0))

    def energy_pj(self, macs: float, cycles: np.ndarray) -> np.ndarray:
        cycles = np.asarray(cycles, dtype=float)
        idle = np.maximum(self.n_pe * cycles - macs, 0.0)
        e = macs * float(self.pe["energy_pj"]) + idle * float(self.pe.get("idle_energy_pj", 0.0))
        if self.skew is not None and self.skew_bits:
            e_on, e_off = float(self.skew["energy_pj"]), float(self.skew.get("idle_energy_pj", 0.0))
            steps = min(macs / self.n_pe, 1e300)
            e = e + self.skew_bits * (cycles * e_off + steps * (e_on - e_off))
        return e


def _array_band(design) -> list[str] | None:
    m = design.mapping
    for lb in design.tree.loops:
        if m.loop(lb).spatial:
            return lnest.band_labels(design.tree, lb)
    return None


def _entry(group: dict[str, Any] | None, bits: int) -> dict[str, Any] | None:
    if not group:
        return None
    key = f"int{bits}"
    if key in group:
        return group[key]
    ints = [k for k in group if k.startswith("int")]
    if not ints:
        return None
    return group[min(ints, key=lambda k: abs(int(k[3:]) - bits))]


def pe_cost(design) -> PeCost | None:
    """The measured PE-array figures that replace MAC + PE register file for this design, or None when
    the rule does not apply (no systolic array, no table entry, or MAC figures stated by the architecture)."""
    arch = design.arch
    pe = arch.pe_array
    mac = arch.operators.get("mac")
    if pe is None or pe.interconnect != "systolic" or mac is None or mac.numeric != "int":
        return None
    if mac.count < pe.size or not {"energy_pj", "area_um2"} <= set(mac.defaulted):
        return None
    structures = tech.table(arch.technology).get("structures") or {}
    if not structures:
        return None
    band = _array_band(design)
    if band is None:
        return None
    # the output-stationary PE when the array the band writes stays in the PEs for a fold, else the
    # partial-sum PE
    shape = "pe_os" if lnest.fold(design, band)["output_stationary"] else "pe_psum"
    entry = _entry(structures.get(shape), mac.bits)
    if entry is None:
        return None
    skew = (structures.get("skew_reg") or {}).get("bit")
    acc = int(entry.get("acc_bits", 32))
    R, C = pe.rows, pe.cols
    # the edge skews of pe_array (plugins/rtl/datapath.py): west lane r delayed r steps; psum: the bottom
    # outputs de-skewed (column c waits C-1-c steps) and a valid bit through R+C-1 steps; os: north lane c
    # delayed c steps
    tri_r, tri_c = R * (R - 1) // 2, C * (C - 1) // 2
    bits = tri_r * mac.bits + (tri_c * acc + R + C - 1 if shape == "pe_psum" else tri_c * mac.bits)
    rf = lnest.pe_register_level(design)
    return PeCost(shape, entry, skew, pe.size, bits if skew is not None else 0, rf.name if rf else None,
                  rf is not None and "area_um2" in rf.defaulted,
                  rf is not None and {"read_energy_pj", "write_energy_pj"} <= set(rf.defaulted))
