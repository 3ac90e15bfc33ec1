"""Energy of a run (Accelergy-style): operation counts x energy per operation, accesses x energy per
access, leakage x time. Shared by hlsim (counts it measured) and the analytical model (expected counts)."""

from __future__ import annotations

import numpy as np

from .design import Design
from .pecost import pe_cost
from .periphery import periphery_cost


def energy(design: Design, ops: dict[str, float], traffic: dict[str, np.ndarray], cycles: np.ndarray,
           datapath: tuple[float, float] | None = None, units: dict[str, int] | None = None,
           array_steps: np.ndarray | float | None = None) -> dict[str, np.ndarray]:
    """Energy = operation counts x energy per op + accesses x energy per access + leakage x time.

    ``datapath``: the bits the operations load and store (they pass through the PE register file, priced per
    bit of its width as every level's accesses are; before hlsim 0.29 per 32-bit operand whatever the data,
    so int8 and int64 operands cost the same). ``units``: the operator units the design allocates
    (``llmulator.area.allocated_area``): the ones that leak, as the area counts them (before hlsim 0.29 every
    unit the architecture lists leaked, also those no schedule uses: twice the leakage of a vector add's
    design). None: every unit. ``array_steps``: the cycles a systolic PE array advances (its skew registers
    shift on each; ``llmulator.pecost``); None: one per MAC a PE does."""
    arch = design.arch
    B = cycles.shape[0]
    out: dict[str, np.ndarray] = {}
    total = np.zeros(B)
    pc = pe_cost(design)   # a measured PE entry stands for MAC + PE registers (llmulator.pecost)
    if pc is not None:
        e = pc.energy_pj(float(ops.get("mac", 0.0)), cycles, array_steps) * np.ones(B)
        out["energy_pj.pe_array"] = e
        total = total + e
        pp = periphery_cost(design)   # the memory system's registers around the buffer (llmulator.periphery)
        if pp is not None:
            e = pp.energy_pj(cycles) * np.ones(B)
            out["energy_pj.buffer_periphery"] = e
            total = total + e
    for cls, n in ops.items():
        op = arch.operators.get(cls)
        if pc is not None and cls == "mac":
            out["energy_pj.op.mac"] = np.zeros(B)
            continue
        if op is None and cls == "mac":
            e = (arch.operators["mul"].energy_pj + arch.operators["add"].energy_pj) * n
        else:
            e = (op.energy_pj if op is not None else 0.0) * n
        out[f"energy_pj.op.{cls}"] = np.full(B, e)
        total += e
    rf = [i for i, lv in enumerate(arch.memory) if lv.kind == "regfile"]
    for i, lv in enumerate(arch.memory):
        e = _access_pj(lv, traffic)
        if datapath is not None and rf and i == rf[-1] and not (pc is not None and pc.regfile == lv.name
                                                                  and pc.regfile_energy):
            # operands of every operation pass through the PE register file
            load_bits, store_bits = datapath
            e = e + (load_bits * lv.read_energy_pj + store_bits * lv.write_energy_pj) / lv.width_bits
        out[f"energy_pj.{lv.name}"] = e
        total = total + e
    # a measured PE entry's idle energy stands for its MACs' leakage (as its area stands for their area)
    leak_mw = sum(o.leakage_mw * (o.count if units is None else units.get(name, 0))
                  for name, o in arch.operators.items() if not (pc is not None and name == "mac")) + \
        sum(lv.leakage_mw * lv.instances for lv in arch.memory)
    leak = leak_mw * (cycles / arch.clock_mhz) * 1e3  # mW x us = nJ; x 1e3 -> pJ
    out["energy_pj.leakage"] = leak
    out["energy_pj"] = total + leak
    return out


def _access_pj(lv, traffic: dict[str, np.ndarray]) -> np.ndarray:
    """Energy of the bits level ``lv`` reads and writes: the elements, the rest of the whole words a PE
    array's schedule moves (``pad_bits``, at the elements' mix of reads and writes), and the rest of the
    whole SRAM words scalar reads and writes take (``pad_read_bits`` / ``pad_write_bits``,
    llmulator.words.access_bits), each per bit of the level's width."""
    rb, wb = traffic[f"read_bits.{lv.name}"], traffic[f"write_bits.{lv.name}"]
    e = (rb * lv.read_energy_pj + wb * lv.write_energy_pj) / lv.width_bits
    pad = traffic.get(f"pad_bits.{lv.name}")
    if pad is not None:
        mix = np.where(rb + wb > 0, (rb * lv.read_energy_pj + wb * lv.write_energy_pj) / np.maximum(rb + wb, 1e-30),
                       (lv.read_energy_pj + lv.write_energy_pj) / 2)
        e = e + pad * mix / lv.width_bits
    pr, pw = traffic.get(f"pad_read_bits.{lv.name}", 0.0), traffic.get(f"pad_write_bits.{lv.name}", 0.0)
    return e + (pr * lv.read_energy_pj + pw * lv.write_energy_pj) / lv.width_bits
