"""Featurisation shared by the three learned baselines: hardware vector, loop context, numeric helpers.

Every baseline sees a design as a *set of vectors* (graph nodes, schedule
steps or statements; optionally typed edges between them) plus one
graph-level vector for the architecture (operator units, memory levels, PE
array, clock) and the design-wide ``dataflow`` flag. That common shape
(:class:`Featurised`) lets one training loop, one cache format and one
estimator class serve all three models. Pure Python + NumPy: no torch here.

Counts and sizes enter as ``log2(1 + x)``: trip counts, footprints and
execution counts span many orders of magnitude.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np
from llmulator.design import Design
from llmulator.errors import SpecError

OPS = ("add", "mul", "mac", "div", "sqrt", "exp", "cmp", "select", "logic", "shift")
MEM_KINDS = ("dram", "sram", "regfile")
MAX_LEVELS = 4
CTYPE_BITS = {"int8_t": 8, "uint8_t": 8, "int16_t": 16, "uint16_t": 16, "int32_t": 32, "uint32_t": 32,
              "int64_t": 64, "int": 32, "long": 64, "char": 8, "short": 16, "float": 32, "double": 64,
              "_Float16": 16, "unsigned": 32}
FLOAT_CTYPES = ("float", "double", "_Float16")


def lg(x: float) -> float:
    """log2(1 + x) of a non-negative quantity (0 for 0)."""
    return math.log2(1.0 + max(float(x), 0.0))


def one_hot(value: Any, choices: tuple) -> list[float]:
    return [1.0 if value == c else 0.0 for c in choices]


@attrs.define
class Featurised:
    """One design as a set of vectors (n x F), optional typed edges (m x 3: src, dst, type), a global vector."""

    x: np.ndarray
    g: np.ndarray
    edges: np.ndarray | None = None


# ----------------------------------------------------------------------------------------------
# architecture (graph-level features, shared by all three models)

def arch_vector(d: Design) -> np.ndarray:
    a = d.arch
    v: list[float] = [lg(a.clock_mhz), float(d.mapping.dataflow)]
    pe = a.pe_array
    v += [1.0 if pe else 0.0, lg(pe.rows) if pe else 0.0, lg(pe.cols) if pe else 0.0,
          float(pe.pipeline_depth_cycles) if pe else 0.0, 1.0 if pe and pe.interconnect == "systolic" else 0.0]
    for op in OPS:
        o = a.operators.get(op)
        if o is None:
            v += [0.0] * 7
        else:
            v += [1.0, lg(o.count), float(o.latency_cycles), o.bits / 32.0, float(o.numeric == "float"),
                  lg(o.energy_pj * 1000), lg(o.area_um2)]
    for i in range(MAX_LEVELS):
        if i >= len(a.memory):
            v += [0.0] * (1 + len(MEM_KINDS) + 12)
            continue
        m = a.memory[i]
        cap = 0.0 if m.capacity_kib is None else lg(m.capacity_kib)
        v += [1.0, *one_hot(m.kind, MEM_KINDS), cap, lg(m.width_bits), lg(m.banks), float(m.ports),
              lg(m.instances), lg(m.bandwidth_bytes_per_cycle), lg(m.latency_cycles), lg(m.read_energy_pj * 1000),
              lg(m.write_energy_pj * 1000), lg(m.leakage_mw * 1000), lg(m.area_um2), float(m.double_buffered)]
    v.append(float(len(a.memory)))
    return np.asarray(v, dtype=np.float32)


ARCH_DIM = 2 + 5 + 7 * len(OPS) + MAX_LEVELS * (1 + len(MEM_KINDS) + 12) + 1


def idle_arch_columns(d: Design) -> set[int]:
    """Columns of :func:`arch_vector` that describe a unit class the architecture lacks and no statement of the
    design names (a `mac` on an architecture without one, for a kernel with no multiply-accumulate): all zeros,
    outside every training range when training architectures all had the class, yet nothing the design runs
    reads them. The out-of-distribution check notes them rather than flag the design (an outside probe: every
    design on an architecture without a mac unit was flagged, so the flag no longer told good predictions
    from bad)."""
    named = {k for st, _ in d.statements_with_loops() for k, v in st.ops.items() if v}
    names = arch_feature_names()
    return {c for op in OPS if op not in d.arch.operators and op not in named
            for c, name in enumerate(names) if name.startswith(f"{op} ")}


def arch_feature_names() -> list[str]:
    """What each entry of :func:`arch_vector` is (for notes that name a feature); ``lg`` = log2(1 + x)."""
    names = ["clock (lg MHz)", "dataflow", "PE array present", "PE rows (lg)", "PE cols (lg)", "PE pipeline depth",
             "PE systolic"]
    for op in OPS:
        names += [f"{op} unit present", f"{op} unit count (lg)", f"{op} latency", f"{op} bits / 32", f"{op} float",
                  f"{op} energy (lg fJ)", f"{op} area (lg um^2)"]
    for i in range(MAX_LEVELS):
        names += [f"memory level {i} present", *(f"memory level {i} is {k}" for k in MEM_KINDS)]
        names += [f"memory level {i} {what}" for what in (
            "capacity (lg KiB)", "width (lg bits)", "banks (lg)", "ports", "instances (lg)",
            "bandwidth (lg B/cycle)", "latency (lg)", "read energy (lg fJ)", "write energy (lg fJ)",
            "leakage (lg uW)", "area (lg um^2)", "double buffered")]
    names.append("memory levels")
    return names


# ----------------------------------------------------------------------------------------------
# loops, mapping and memory context

def trips(d: Design, label: str) -> float:
    """Expected trips of a kernel loop per entry; 1 when the workload gives no hint for a data-dependent loop."""
    try:
        return max(float(d.trips(label)), 0.0)
    except (SpecError, KeyError, ZeroDivisionError, ValueError):
        return 1.0


def unknown_trips(d: Design) -> list[str]:
    """Loops whose expected trips nothing gives (no hint, and their control is not run from declared inputs):
    the features read them as 1 trip (``trips``), so a prediction built on them is a guess."""
    out = []
    for label in d.tree.loops:
        try:
            d.trips(label)
        except (SpecError, KeyError, ZeroDivisionError, ValueError):
            out.append(label)
    return out


def mapped_trips(d: Design, label: str) -> tuple[float, float | None]:
    """Trips of the point loop and of its tile loop (None when the loop is not strip-mined), as the rendered
    code has them (llmulator.hls): a loop with others fused into it runs over the product of their trips,
    and it is strip-mined where ``llmulator.nest.strip_mined`` says so."""
    from llmulator import nest
    t = 1.0
    for m in nest.members(d, label):
        t *= trips(d, m)
    if not nest.strip_mined(d, label):
        return t, None
    tile = d.mapping.loop(label).tile
    return float(min(tile, t)), float(math.ceil(t / tile))


def branch_probability(d: Design, branch) -> float:
    """Taken probability of a kernel branch (``Design.branch_probability``: the variant's hint, the exact
    share of an index-only condition, else 0.5); ``branch`` may also be the C text of its condition."""
    if isinstance(branch, str):
        branch = next((n for n in d.tree.walk() if getattr(n, "kind", "") == "branch" and n.cond_text == branch),
                      None)
        if branch is None:
            return 0.5
    return d.branch_probability(branch)[0]


def level_of(d: Design, array: str) -> tuple[int, Any]:
    name = d.placement(array)
    lvl = d.arch.level(name)
    idx = [m.name for m in d.arch.memory].index(name) if lvl is not None else 0
    return idx, lvl


def memory_vector(d: Design, array: str | None) -> list[float]:
    """Where an array lives and what that level can do: 11 values (zeros for locals)."""
    if array is None or array not in d.workload.arrays:
        return [0.0] * 11
    idx, lvl = level_of(d, array)
    part = d.mapping.partition.get(array)
    pfac = 0.0
    if part is not None:
        shape = d.workload.shape(array, d.sizes)
        pfac = lg(shape[part.dim - 1] if part.type == "complete" and part.dim <= len(shape) else part.factor)
    kind = lvl.kind if lvl is not None else "dram"
    return [float(idx), *one_hot(kind, MEM_KINDS), lg(lvl.bandwidth_bytes_per_cycle) if lvl else 0.0,
            lg(lvl.latency_cycles) if lvl else 0.0, lg(lvl.banks) if lvl else 0.0, float(lvl.ports) if lvl else 0.0,
            pfac, lg(array_elems(d, array)), d.workload.arrays[array].bits / 32.0]


MEMORY_DIM = 11


def array_elems(d: Design, array: str) -> float:
    return float(np.prod(d.workload.shape(array, d.sizes), dtype=np.float64))


def unit_vector(d: Design, op: str) -> list[float]:
    """The architecture's unit for an operator class: present, log count, latency (3 values)."""
    o = d.arch.operators.get(op)
    if o is None and op == "mac":
        o = d.arch.operators.get("mul")
    return [0.0, 0.0, 0.0] if o is None else [1.0, lg(o.count), float(o.latency_cycles)]
