"""Area of a design as its schedules allocate it: the units the busiest schedule needs (shared across
loops, capped by the architecture), every memory instance, and the pipeline registers of each region.

Static (schedules only), so hlsim and the analytical estimator report the same area for a design.
"""

from __future__ import annotations

import math
from collections import Counter

from . import costs, dataflow_tasks, tech
from . import nest as lnest
from .design import Design
from .instrument import Instrumented
from .pecost import pe_cost
from .periphery import periphery_cost
from .timing import Timing


def allocated_area(d: Design, inst: Instrumented, timing: Timing) -> tuple[float, dict[str, float], dict[str, int]]:
    """Units allocated after sharing across loops (the most any one schedule needs, capped by the
    architecture; under ``dataflow`` tasks that may overlap do not share: :func:`overlapping_units`), memories,
    and pipeline registers."""
    arch = d.arch
    by_nest: dict[int, Counter] = {}
    pipe_bits = 0.0
    for s in inst.sites:
        need = by_nest.setdefault(s.nest if d.mapping.dataflow else 0, Counter())
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
            for cls in costs.tree_combining_ops(d, s.loop):   # the exit tree's units (a mac tree's adder)
                need[cls] = max(need[cls], 1)
            muxes = math.ceil(sched.selects / ii) if s.region == "pipeline" else sched.select_peak
            need["select"] = max(need["select"], muxes)
            if s.region == "pipeline":   # (an unrolled loop is not pipelined: before hlsim 0.44 it paid them too)
                pipe_bits += info["depth"] * 32 * max(1, len(sched.uses))
    need = overlapping_units(inst, by_nest) if d.mapping.dataflow else by_nest.get(0, Counter())
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


def overlapping_units(inst: Instrumented, by_nest: dict[int, Counter]) -> Counter:
    """Units of a ``dataflow`` design: tasks that may run at once (neither waits for the other, directly or through
    others: ``llmulator.dataflow_tasks``) each keep their own, so per class the most any set of such tasks needs
    together; tasks that run one after the other share. Before hlsim 0.40 the most any one task needed: two
    overlapped nests that each multiply every cycle were charged one multiplier while their cycles assumed two (an
    outside probe). Exact over every set of mutually unordered tasks up to ``EXACT_TASKS`` tasks; beyond, each
    task with all those unordered with it (more than any such set needs)."""
    waits = dataflow_tasks.waits_for(inst)
    before: list[set[int]] = []
    for direct in waits:
        before.append(set(direct).union(*(before[j] for j in direct)))
    n = len(waits)
    free = [[j for j in range(n) if j != k and j not in before[k] and k not in before[j]] for k in range(n)]
    best: Counter = Counter(by_nest.get(-1, Counter()))  # sites outside every task (none today)
    sets: list[list[int]] = []
    if n <= EXACT_TASKS:
        def grow(chosen: list[int], candidates: list[int]) -> None:
            sets.append(chosen)
            for i, c in enumerate(candidates):
                grow(chosen + [c], [x for x in candidates[i + 1:] if x in free[c]])
        grow([], list(range(n)))
    else:
        sets = [[k, *free[k]] for k in range(n)]
    for chosen in sets:
        total: Counter = Counter()
        for k in chosen:
            total.update(by_nest.get(k, Counter()))
        for cls, u in total.items():
            best[cls] = max(best[cls], u)
    return best


#: top-level tasks up to which ``overlapping_units`` tries every set of tasks that may run at once
EXACT_TASKS = 12


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
