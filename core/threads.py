"""How many threads torch may use for a burst of small tensor work (a learned estimator's forward passes).

torch starts with one intra-op thread per core. The learned estimators' work comes in many small operations
(a few hundred rows of a 192-wide model), and a parallel operation waits for all its threads: on a machine
whose cores are busy with other processes, a second thread that is not scheduled makes every operation wait
for a time slice. Measured on this project's 2-core machine at a load average of 5: the ``llm`` estimate of
one design took 1.1 s with 2 threads and 0.08 s with 1 (docs/benchmarks-estimate.md).

:func:`torch_threads` therefore uses the cores that are idle (the cores this process may run on, less the
1-minute load average, rounded; at least 1), unless told otherwise: an explicit count (an estimator's
``threads``) or ``LLMULATOR_THREADS``. The previous setting is restored afterwards. Thread counts change
float rounding in a few products, not the decoded digits (tests/test_llm_lean.py).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


def idle_cores() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cores
    return max(1, min(cores, round(cores - load)))


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
