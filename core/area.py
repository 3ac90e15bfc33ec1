"""Area of a design as its schedules allocate it: the units the busiest schedule needs (shared across
loops, capped by the architecture), every memory instance, and the pipeline registers of each region.

Static (schedules only), so hlsim and the analytical estimator report the same area for a design.
"""

from __future__ import annotations

import math
from collections import Counter

from . import nest as lnest
from . import tech
from .design import Design
from .instrument import Instrumented
from .pecost import pe_cost
from .periphery import periphery_cost
from .timing import Timing


def allocated_area(d: Design, inst: Instrumented, timing: Timing) -> tuple[float, dict[str, float], dict[str, int]]:
    """Units allocated after sharing across loops (the most any one schedule needs, capped by the
    architecture), memories, and pipeline registers."""
    arch = d.arch
    need: Counter = Counter()
    pipe_bits = 0.0
    for s in inst.sites:
        info = timing.info.get(s.id)
        if s.kind in ("block", "cond", "loop") and not s.in_region and s.id in timing.schedules:
            _peak_units(d, s, timing.schedules[s.id], need)
            continue
        if info is None:
            continue
        if s.region == "array":
            # the PE array is fixed hardware: every PE's units; shared classes as the bound PEs need them
            for r, u in timing.schedules[s.id].uses.items():
                cls = r[3:]
                if r.startswith("op:") and cls in arch.operators:
                    per = lnest.units_per_pe(d, cls)
                    need[cls] = max(need[cls], arch.operators[cls].count if per else
                                    math.ceil(u * info["lanes"] / info["ii"]))
        elif s.kind == "region":
            sched = timing.schedules[s.id]
            ii = info.get("ii", 1.0) or 1.0
            for r, u in sched.uses.items():
                if r.startswith("op:"):
                    need[r[3:]] = max(need[r[3:]], math.ceil(u / ii) if s.region == "pipeline" else sched.peak[r])
            muxes = math.ceil(sched.selects / ii) if s.region == "pipeline" else sched.select_peak
            need["select"] = max(need["select"], muxes)
            pipe_bits += info["depth"] * 32 * max(1, len(sched.uses))
    parts: dict[str, float] = {}
    units: dict[str, int] = {}
    total = 0.0
    pc = pe_cost(d)   # a measured PE entry stands for MAC + PE registers (llmulator.pecost)
    for name, op in arch.operators.items():
        n = min(op.count, need.get(name, 0))
        units[name] = n
        a = 0.0 if pc is not None and name == "mac" else n * op.area_um2
        parts[f"area_um2.op.{name}"] = a
        total += a
    if pc is not None:
        measured = _measured_array_parts(d, pc)
        parts.update(measured)
        total += sum(measured.values())
    for lv in arch.memory:
        a = 0.0 if pc is not None and pc.regfile == lv.name and pc.regfile_area else lv.area_um2 * lv.instances
        parts[f"area_um2.{lv.name}"] = a
        total += a
    reg_area = pipe_bits * tech.table(arch.technology)["memories"]["regfile_area_um2_per_bit"]
    parts["area_um2.pipeline_registers"] = reg_area
    total += reg_area
    return total, parts, units


def _peak_units(d: Design, s, sched, need: Counter) -> None:
    """Units a straight-line run, a branch condition or a loop's data-dependent test needs: the most issues of
    each class its schedule makes in one cycle, at least one of each class it uses. Before hlsim 0.39 a run
    that issued two adds in one cycle was charged one adder, and a plain `while` loop's compares none at all
    (an outside probe: the schedule's cycles assumed units the area did not have)."""
    for st in s.stmts:
        if s.kind == "loop" and not (st.accesses or st.reads_locals):
            continue  # a counter's test is the loop control's own (llmulator.timing)
        for k in d.stmt_ops(st):
            need[k] = max(need[k], 1)
    for r, k in sched.peak.items():
        if r.startswith("op:"):
            need[r[3:]] = max(need[r[3:]], k)
    need["select"] = max(need["select"], sched.select_peak)


def _measured_array_parts(d, pc) -> dict[str, float]:
    """The measured PE array (llmulator.pecost) and, where the table prices it, the memory system's registers
    around its buffer (llmulator.periphery)."""
    parts = {"area_um2.pe_array": pc.area_um2()}
    pp = periphery_cost(d)
    if pp is not None:
        parts["area_um2.buffer_periphery"] = pp.area_um2()
        xbar = pp.crossbar_area_um2()
        if xbar is not None:
            parts["area_um2.buffer_crossbar"] = xbar
    return parts
