"""Which top-level nests of a ``dataflow: true`` design wait for which: the task graph of one run.

Why: under ``dataflow`` an HLS tool runs each top-level loop nest (and statement) as a task of its own, and
tasks that share nothing run at once. Arrays passed between tasks are ping-pong buffers (Vitis HLS's
default channel for arrays): the consumer starts on a buffer when the producer has written all of it, so a
run's latency is the longest path through the tasks' dependences, not the slowest task. hlsim 0.38 and
earlier took the slowest task (and the shared units and bandwidth): a consumer reading the producer's
last element first (`d[i] = b[N-1-i]`) finished with it, 95 cycles where the chain needs 131 (an outside
probe), and a statement after the nests that reads their result added nothing.

A task depends on an earlier one when it reads or writes an array or local the earlier one writes, or
writes one the earlier one reads (the earlier one must read it first). Locals are matched by name: two
nests that each declare their own ``k`` are taken as sharing it (they then run one after the other).
"""

from __future__ import annotations

import math

from .costs import resource_cap


def _touched(inst, k: int) -> tuple[set[str], set[str]]:
    """(names read, names written) by top-level nest ``k``'s statements, conditions included."""
    reads: set[str] = set()
    writes: set[str] = set()
    for s in inst.sites:
        if s.nest != k:
            continue
        for st in s.stmts:
            for a in st.accesses:
                if a.is_write:
                    writes.add(a.array)
                if a.is_read:
                    reads.add(a.array)
            reads.update(st.reads_locals)
            if st.writes_local:
                writes.add(st.writes_local)
    return reads, writes


def waits_for(inst) -> list[set[int]]:
    """For each top-level nest (``inst.nest_loops`` order), the earlier nests it must wait for."""
    touched = [_touched(inst, k) for k in range(len(inst.nest_loops))]
    out = []
    for k, (r, w) in enumerate(touched):
        out.append({j for j in range(k) if touched[j][1] & (r | w) or touched[j][0] & w})
    return out


def critical_path(cycles: list[float], waits: list[set[int]]) -> float:
    """The run's cycles when every nest starts as soon as the nests it waits for have ended."""
    finish: list[float] = []
    for k, c in enumerate(cycles):
        finish.append(max((finish[j] for j in waits[k]), default=0.0) + c)
    return max(finish, default=0.0)


def issue_pressure(design, timing, site, groups: float, busy, rate) -> None:
    """Add a pipelined or unrolled region's use of its schedule's resources to its task's ``busy`` (resource ->
    cycles the resource is taken: ``groups`` x issues a group / issues per cycle) and ``rate`` (resource -> the
    share of the resource's issues per cycle the region takes in its steady state: issues a group / (II, or an
    unrolled group's cycles, x issues per cycle))."""
    sched = timing.schedules.get(site.id)
    info = timing.info.get(site.id, {})
    # an unrolled region runs its groups one after another, each for its schedule's depth (before hlsim 0.58 only a
    # pipelined region shared its units and ports with the tasks it overlaps: two unrolled nests on one DRAM
    # channel moved 256 words in 129 cycles; an outside probe)
    ii = info.get("ii", 0.0) if site.region == "pipeline" else info.get("depth", 0.0) + 1.0
    if sched is None or not ii or groups <= 0:
        return
    for r, u in sched.uses.items():
        cap = resource_cap(design, r)
        if math.isinf(cap) or cap <= 0:
            continue
        busy[r] = busy.get(r, 0.0) + groups * u / cap
        rate[r] = max(rate.get(r, 0.0), u / (ii * cap))


def issuing_span(design, compute, transfer, exposed):
    """The part of a nest's cycles its issuing lengthens (:func:`shared_path`'s ``compute``): its compute and what
    runs in series with it, the exposed transfers where double buffering overlaps the rest (``llmulator.traffic.
    nest_time``), else every transfer. Before hlsim 0.46 the compute alone: two nests that each wait for their
    first tile (62 cycles), issue 44 and drain (62) shared two multipliers for 64 cycles of issue and took 168,
    where 62 + 64 + 62 is the least."""
    from .traffic import overlapped
    return compute + (exposed if overlapped(design) else transfer)


def shared_path(cycles: list[float], waits: list[set[int]], busy: list[dict], rate: list[dict],
                compute: list[float] | None = None) -> float:
    """The run's cycles when tasks start as soon as the ones they wait for have ended, and tasks that overlap share
    the resources their pipelines issue to (an operator class's units, an array's bank ports, a DRAM channel).

    Where overlapping tasks together ask for more than a resource's issues per cycle (their steady-state
    ``rate`` shares summing to more than 1), each gets its share and its issuing stretches by the excess,
    ``phase x (sum of rates - 1)`` for its ``phase`` of ``busy / rate`` cycles, but by no more than the other tasks'
    own ``busy`` cycles on it (they cannot hold it longer than that). Before hlsim 0.40 overlapped tasks shared
    nothing but the units' and bandwidth's totals: two independent loops that each load 32 elements over one
    DRAM channel at II 1 ran in 95 cycles where the 64 issues and the latency need 126 (an outside probe).
    ``compute``: each task's issuing part of its ``cycles`` with what runs in series with it (:func:`issuing_span`;
    the rest waits on tile transfers or bandwidth); a
    stretch lengthens a task only beyond that slack (before 2026-12-06 it was added to the whole: two nests that
    each wait 124 cycles on transfers and share two multipliers for 64 took 156; an outside probe)."""
    compute = list(cycles) if compute is None else compute
    start: list[float] = []
    finish: list[float] = []
    stretch: dict[int, float] = {}
    for k, c in enumerate(cycles):
        s = max((finish[j] for j in waits[k]), default=0.0)
        start.append(s)
        finish.append(s + c)
        over = [j for j in range(k) if finish[j] > s]
        extra: dict[int, float] = {}
        for r, b in busy[k].items():
            sharing = [j for j in over if busy[j].get(r, 0.0) > 0]
            total = rate[k].get(r, 0.0) + sum(rate[j].get(r, 0.0) for j in sharing)
            if not sharing or total <= 1.0:
                continue
            for x in [*sharing, k]:
                others = sum(busy[y].get(r, 0.0) for y in (*sharing, k) if y != x) if x == k else b
                phase = busy[x][r] / rate[x][r] if rate[x].get(r) else 0.0
                extra[x] = max(extra.get(x, 0.0), min(phase * (total - 1.0), others))
        for x, e in extra.items():
            stretch[x] = stretch.get(x, 0.0) + e
            finish[x] = start[x] + max(cycles[x], min(compute[x], cycles[x]) + stretch[x])
    return max(finish, default=0.0)
