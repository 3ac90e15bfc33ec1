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
