"""Worker pools that stop when their caller stops: Ctrl-C ends a long job in seconds, not after its queue.

``concurrent.futures.ProcessPoolExecutor`` used as a context manager shuts down with ``wait=True`` even when
the block is left by an exception: on Ctrl-C during `llmulator synth --relabel` (3,000 shards queued) the
parent waited for every queued shard, and the workers, which catch the interrupt of their current job and
return it as its result, went on with the next ones (observed: still running a minute after Ctrl-C, until
killed). :func:`worker_pool` cancels the jobs not yet started when its block is left by any exception,
``GeneratorExit`` included (a generator that yields results from the pool and is closed), and waits only
for the ones running. The work each job finished is already written (shards are atomic), so the same
command resumes it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any


@contextlib.contextmanager
def worker_pool(workers: int, **kwargs: Any) -> Iterator[Any]:
    """A ``ProcessPoolExecutor`` of ``workers`` processes whose workers die with this process
    (:func:`llmulator.sandbox.die_with_parent`); left by an exception, it cancels what has not started."""
    from concurrent.futures import ProcessPoolExecutor

    from .sandbox import die_with_parent
    ex = ProcessPoolExecutor(max_workers=workers, initializer=die_with_parent, **kwargs)
    try:
        yield ex
    except BaseException:
        ex.shutdown(wait=False, cancel_futures=True)
        raise
    ex.shutdown(wait=True)


def as_done(fn: Callable[[Any], Any], jobs: Iterable[Any], workers: int) -> Iterator[tuple[int, Any]]:
    """``(index of the job, fn(job))`` in the order the jobs finish, in ``workers`` processes; closing the
    generator (or an exception in it) cancels the jobs not yet started."""
    from concurrent.futures import as_completed
    with worker_pool(workers) as ex:
        futures = {ex.submit(fn, j): i for i, j in enumerate(jobs)}
        for fut in as_completed(futures):
            yield futures[fut], fut.result()
