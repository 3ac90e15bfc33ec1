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
  bit's idle energy plus, per step the array advances (the folds' steps with their fill and drain: the
  nest's compute cycles without bank waits; hlsim 0.36), the active-idle difference; in place
  of the MAC energy and the operand accesses to the per-PE register file (when its access energy was
  defaulted). Where the data needs fewer bits than the PE holds, a MAC's switching follows the bits the
  streaming operands toggle (a stationary one changes once a fold): a non-negative narrow operand its
  magnitude bits, a signed one every bit of the PE (sign extension flips the upper bits with the sign);
  the narrower entry where all toggle few, the PE's own where all toggle all, between them by the
  multiplier's partial products (width x width) where the two streams differ. Every cycle's clock is the
  PE's own flip-flops' (the PE entry's idle). conv2d (unsigned 8-bit inputs, signed 8-bit weights) on
  int16 PEs: 0.88-1.27x of the gate-level replay over nine rows, the int8 entry alone 0.62-0.95x, the
  int16 entry alone 0.95-2.35x (docs/rtl-crosscheck.md).

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
    energy_pe: dict[str, Any] | None = None   # the entry whose energy applies, where the data is narrower

    def area_um2(self) -> float:
        return self.n_pe * float(self.pe["area_um2"]) + self.skew_bits * float((self.skew or {}).get("area_um2", 0.0))

    def energy_pj(self, macs: float, cycles: np.ndarray, steps: np.ndarray | float | None = None) -> np.ndarray:
        """PE and skew-register energy over ``cycles``; ``steps``: the cycles the array advances (the rtl's
        ``adv``: every step of a fold, its fill and drain included; None: one per MAC a PE does)."""
        cycles = np.asarray(cycles, dtype=float)
        idle = np.maximum(self.n_pe * cycles - macs, 0.0)
        # a cycle without a MAC costs the clock of the PE's own flip-flops (the physical entry's idle); a
        # MAC adds the switching of the bits the data toggles (the narrower entry's active less its idle)
        idle_pj = float(self.pe.get("idle_energy_pj", 0.0))
        pe = self.energy_pe or self.pe
        active_pj = float(pe["energy_pj"]) - float(pe.get("idle_energy_pj", 0.0)) + idle_pj
        e = macs * active_pj + idle * idle_pj
        if self.skew is not None and self.skew_bits:
            e_on, e_off = float(self.skew["energy_pj"]), float(self.skew.get("idle_energy_pj", 0.0))
            # a skew bit shifts on every advancing step, the fold's fill and drain too (before hlsim 0.36 only
            # the steps with MACs: a 1x4 array's de-skew, most of its skew bits, 0.66x the rtl's, probe 17 #6)
            adv = macs / self.n_pe if steps is None else np.minimum(np.asarray(steps, dtype=float), cycles)
            e = e + self.skew_bits * (cycles * e_off + adv * (e_on - e_off))
        return e


def _array_band(design) -> list[str] | None:
    m = design.mapping
    for lb in design.tree.loops:
        if m.loop(lb).spatial:
            return lnest.band_labels(design.tree, lb)
    return None


def _key_bits(key: str) -> int:
    """The operand width of a PE entry's key (``int16``, ``int16_acc16``: 16)."""
    return int(key[3:].split("_")[0])


def _entry(group: dict[str, Any] | None, bits: int, acc: int = 32) -> dict[str, Any] | None:
    """The PE entry for ``bits``-bit operands and an ``acc``-bit accumulator: the nearest operand width,
    then the nearest accumulator among that width's entries (a table without ``acc_bits`` measured 32)."""
    if not group:
        return None
    ints = [k for k in group if k.startswith("int")]
    if not ints:
        return None
    best = min(ints, key=lambda k: (abs(_key_bits(k) - bits), abs(int(group[k].get("acc_bits", 32)) - acc),
                                    -int(group[k].get("acc_bits", 32))))
    return group[best]


def _band_arrays(design, band: list[str]) -> tuple[set[str], set[str]]:
    """(inputs, outputs) of the band's innermost statements: the names they read and never write (the PEs'
    operands), and the names they write (the partial sums)."""
    stmts = design.tree.loops[band[-1]].statements()
    written = {a.array for st in stmts for a in st.accesses if a.is_write}
    return {a.array for st in stmts for a in st.accesses if a.is_read and a.array not in written}, written


def _operand_bits(design, band: list[str]) -> int:
    """The widest input array the band's innermost statements read (0 when none)."""
    arrays = design.workload.arrays
    return max((arrays[n].bits for n in _band_arrays(design, band)[0] if n in arrays), default=0)


def _output_bits(design, band: list[str]) -> int:
    """The widest array the band's innermost statements write: the PE's partial sum or accumulator, as wide
    as the output (the rtl's PE: an int16 x int16 -> int16 layer wraps in 16 bits), 32 where none is found."""
    arrays = design.workload.arrays
    return max((arrays[n].bits for n in _band_arrays(design, band)[1] if n in arrays), default=32)


def _declared_range(design, name: str) -> list[int] | None:
    """The declared integer values (range ends, or the constant) of input array ``name`` under the design's input
    variant (the data hlsim runs; before hlsim 0.29 a variant's narrow range was priced at the base range's), or
    None."""
    from .inputs import resolve_inputs

    spec = resolve_inputs(design.workload, design.variant)["arrays"].get(name) or {}
    if spec.get("distribution") == "zeros":
        return [0]
    if spec.get("distribution") == "randint" and spec.get("range"):
        return [int(v) for v in spec["range"]]
    if spec.get("distribution") == "constant" and "value" in spec:
        return [int(spec["value"])]
    return None


def _need(values: list[int]) -> int:
    return max((v.bit_length() if v >= 0 else (~v).bit_length()) + 1 for v in values)


def _declared_bits(design, band: list[str]) -> int | None:
    """Two's-complement bits the declared input ranges of the band's input arrays need, or None where an
    input has no declared integer range (generated, copied, or another distribution)."""
    need = 0
    for name in _band_arrays(design, band)[0]:
        values = _declared_range(design, name)
        if values is None:
            return None
        need = max(need, _need(values))
    return need or None


def _streaming_widths(design, shape: str, width: int, narrow: int) -> list[int] | None:
    """The bits each operand streaming through the PEs toggles (the west-east one for pe_psum, both for
    pe_os; a stationary operand changes once a fold): its declared width where its range is non-negative,
    the PE's ``width`` where the range holds negative values (a sign-extended narrow value flips every upper
    bit when its sign changes). None where the plan or a declared range is missing."""
    from .errors import UserError
    from .pearray import make_plan
    try:
        plan = make_plan(design)
    except (UserError, ValueError, KeyError):
        return None
    out = []
    for role in (("X",) if shape == "pe_psum" else ("X", "Y")):
        values = _declared_range(design, plan.operands[role].array) if role in plan.operands else None
        if values is None:
            return None
        # non-negative values toggle their magnitude bits only (0..255 in a 16-bit register: the low 8)
        out.append(width if min(values) < 0 else min(max(max(values).bit_length(), narrow), width))
    return out


def _any_negative(design) -> bool:
    """Whether the declared range of an input the PE array's band reads holds negative values."""
    band = _array_band(design)
    return bool(band) and any(min(_declared_range(design, n) or [0]) < 0 for n in _band_arrays(design, band)[0])


def _switching_entry(design, shape: str, group: dict[str, Any], bits: int, data: int, acc: int = 32
                     ) -> dict[str, Any] | None:
    """The entry whose switching a MAC pays where the data is narrower than the PE (``data`` < ``bits``
    bits): the narrow entry when every streaming operand toggles only its declared bits, the PE's own when
    every one is sign-extended, and between them, by the multiplier's partial products (width x width),
    when the two streaming operands differ (an unsigned input against a signed weight, output stationary)."""
    narrow, wide = _entry(group, data, acc), _entry(group, bits, acc)
    if narrow is None or narrow is wide:
        return narrow
    nb = _key_bits(next(k for k, v in group.items() if v is narrow))
    widths = _streaming_widths(design, shape, bits, nb)
    if widths is None:
        # no plan (the rtl does not build this design, e.g. int64 outputs): a signed input range sign-extends
        # through the PE's upper bits (its own entry), a non-negative one toggles its declared bits (the narrow
        # entry); before hlsim 0.37 always the narrow one: signed int32 -> int64 cost less per MAC than
        # int32 -> int32 (an outside probe)
        return None if _any_negative(design) else narrow
    if len(widths) == 1:
        widths = widths * 2               # the stationary operand holds: the streaming one sets both ports' share
    f = (widths[0] * widths[1] - nb * nb) / (bits * bits - nb * nb)
    if f <= 0:
        return narrow
    if f >= 1:
        return None                       # the PE's own entry
    return {k: float(narrow[k]) + f * (float(wide[k]) - float(narrow[k])) for k in ("energy_pj", "idle_energy_pj")}


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
    # the PEs hold the operands: as wide as the MAC the architecture states, or the operands where wider
    # (an int16 layer on an 8-bit MAC array: the generated PE is 16 bits wide)
    bits = max(mac.bits, _operand_bits(design, band))
    acc = _output_bits(design, band)
    entry = _entry(structures.get(shape), bits, acc)
    # switching energy follows the bits the data toggles: where the workload declares every input's range
    # and it needs fewer bits than the PE holds (an int16 layer of 8-bit values), the narrower PE's energy
    data = _declared_bits(design, band)
    energy_entry = (_switching_entry(design, shape, structures.get(shape) or {}, bits, data, acc)
                    if data is not None and data < bits else None)
    if entry is None:
        return None
    skew = (structures.get("skew_reg") or {}).get("bit")
    R, C = pe.rows, pe.cols
    # the edge skews of pe_array (plugins/rtl/datapath.py): west lane r delayed r steps; psum: the bottom
    # outputs de-skewed (column c waits C-1-c steps) and a valid bit through R+C-1 steps; os: north lane c
    # delayed c steps
    tri_r, tri_c = R * (R - 1) // 2, C * (C - 1) // 2
    bits = tri_r * bits + (tri_c * acc + R + C - 1 if shape == "pe_psum" else tri_c * bits)
    rf = lnest.pe_register_level(design)
    return PeCost(shape, entry, skew, pe.size, bits if skew is not None else 0, rf.name if rf else None,
                  rf is not None and "area_um2" in rf.defaulted,
                  rf is not None and {"read_energy_pj", "write_energy_pj"} <= set(rf.defaulted), energy_entry)
