"""How many threads torch may use for a burst of small tensor work (a learned estimator's forward passes).

torch starts with one intra-op thread per core. The learned estimators' work comes in many small operations
(a few hundred rows of a 192-wide model), and a parallel operation waits for all its threads: on a machine
whose cores are busy with other processes, a second thread that is not scheduled makes every operation wait
for a time slice. Measured on this project's 2-core machine at a load average of 5: the ``llm`` estimate of
one design took 1.1 s with 2 threads and 0.08 s with 1 (docs/benchmarks-estimate.md).

:func:`torch_threads` therefore uses the cores that are idle (the cores this process may run on, less the
1-minute load average of the other processes; at least 1), unless told otherwise: an explicit count (an
estimator's ``threads``) or ``LLMULATOR_THREADS``. The previous setting is restored afterwards. Thread counts change
float rounding in a few products, not the decoded digits (tests/test_llm_lean.py).
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator


def _own_load() -> float:
    """This process's own share of the 1-minute load average (Linux; 0 elsewhere): its average CPU use since
    it started, weighted as the kernel's moving average weighs it (1 - e^(-t/60) after t seconds). A process
    that has computed for minutes counts about 1, a command that just started about 0."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        elapsed = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
        t = os.times()
        busy = (t.user + t.system) / max(elapsed, 1e-3)
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0
    return min(busy, 1.0 * os.cpu_count()) * (1.0 - math.exp(-max(elapsed, 0.0) / 60.0))


def idle_cores() -> int:
    """The cores this process may run on, less the load of the other processes (at least 1)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cores
    free = cores - max(0.0, load - _own_load())
    # a core at least half free counts (measured here: 2 threads beat 1 by 1.3x with the others' load at about
    # 0.6, and lost by 10x with it at 3 to 5 - erring towards fewer threads is the safe side)
    return max(1, min(cores, round(free + 0.5)))


def choose(threads: int | None = None) -> int:
    """``threads`` if given, else ``LLMULATOR_THREADS``, else the idle cores."""
    if threads:
        return int(threads)
    env = os.environ.get("LLMULATOR_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return idle_cores()


@contextlib.contextmanager
def torch_threads(threads: int | None = None) -> Iterator[int]:
    """Run the block with torch's intra-op threads set by :func:`choose`; restore them afterwards."""
    import torch
    before = torch.get_num_threads()
    n = choose(threads)
    if n != before:
        torch.set_num_threads(n)
    try:
        yield n
    finally:
        if n != before:
            torch.set_num_threads(before)
