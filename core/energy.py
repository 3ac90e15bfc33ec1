"""Energy of a run (Accelergy-style): operation counts x energy per operation, accesses x energy per
access, leakage x time. Shared by hlsim (counts it measured) and the analytical model (expected counts)."""

from __future__ import annotations

import numpy as np

from .design import Design
from .pecost import pe_cost
from .periphery import periphery_cost


def energy(design: Design, ops: dict[str, float], traffic: dict[str, np.ndarray], cycles: np.ndarray,
           datapath: tuple[float, float] | None = None) -> dict[str, np.ndarray]:
    """Energy = operation counts x energy per op + accesses x energy per access + leakage x time."""
    arch = design.arch
    B = cycles.shape[0]
    out: dict[str, np.ndarray] = {}
    total = np.zeros(B)
    pc = pe_cost(design)   # a measured PE entry stands for MAC + PE registers (llmulator.pecost)
    if pc is not None:
        e = pc.energy_pj(float(ops.get("mac", 0.0)), cycles) * np.ones(B)
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
        e = (traffic[f"read_bits.{lv.name}"] * lv.read_energy_pj
             + traffic[f"write_bits.{lv.name}"] * lv.write_energy_pj) / lv.width_bits
        if datapath is not None and rf and i == rf[-1] and not (pc is not None and pc.regfile == lv.name
                                                                  and pc.regfile_energy):
            # operands of every operation pass through the PE register file
            loads, stores = datapath
            e = e + (loads * lv.read_energy_pj + stores * lv.write_energy_pj) * min(1.0, 32 / lv.width_bits)
        out[f"energy_pj.{lv.name}"] = e
        total = total + e
    leak_mw = sum(o.leakage_mw * o.count for o in arch.operators.values()) + \
        sum(lv.leakage_mw * lv.instances for lv in arch.memory)
    leak = leak_mw * (cycles / arch.clock_mhz) * 1e3  # mW x us = nJ; x 1e3 -> pJ
    out["energy_pj.leakage"] = leak
    out["energy_pj"] = total + leak
    return out
