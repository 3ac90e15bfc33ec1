"""Worker pools that stop when their caller stops: Ctrl-C ends a long job in seconds, not after its queue.

``concurrent.futures.ProcessPoolExecutor`` used as a context manager shuts down with ``wait=True`` even when
the block is left by an exception: on Ctrl-C during `llmulator synth --relabel` (3,000 shards queued) the
parent waited for every queued shard, and the workers, which catch the interrupt of their current job and
return it as its result, went on with the next ones (observed: still running a minute after Ctrl-C, until
killed). :func:`worker_pool` cancels the jobs not yet started when its block is left by any exception,
``GeneratorExit`` included (a generator that yields results from the pool and is closed), and waits only
for the ones running. The work each job finished is already written (shards are atomic), so the same
command resumes it.

Left that way, the queue still ran on in about half the runs (2026-12-07: a relabel's workers busy 3 minutes after
`terminated`, writing nothing; a 60-job script ran all 60 in 2 of 4 runs): ``shutdown(wait=False,
cancel_futures=True)`` cancels only when the pool's manager thread next finds the executor alive, which it holds
by a weak reference, and the closed generator dropped it at once. So :func:`as_done` cancels its own futures and
a pool stopped early is kept alive; :func:`cancel_all`, which the command line calls on Ctrl-C and SIGTERM, also
stops a pool whose generator was left suspended rather than closed.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

_OPEN: weakref.WeakSet = weakref.WeakSet()  # the pools not yet shut down
_STOPPED: list = []  # pools shut down early, kept alive until their manager thread has cancelled the queue


@contextlib.contextmanager
def worker_pool(workers: int, **kwargs: Any) -> Iterator[Any]:
    """A ``ProcessPoolExecutor`` of ``workers`` processes whose workers die with this process
    (:func:`llmulator.sandbox.die_with_parent`); left by an exception, it cancels what has not started."""
    from concurrent.futures import ProcessPoolExecutor

    from .sandbox import die_with_parent
    ex = ProcessPoolExecutor(max_workers=workers, initializer=die_with_parent, **kwargs)
    _OPEN.add(ex)
    try:
        yield ex
    except BaseException:
        _stop(ex)
        raise
    finally:
        _OPEN.discard(ex)
    ex.shutdown(wait=True)


def _stop(ex) -> None:
    # (the manager thread kept for ``wait_stopped``: shutdown drops the executor's own reference to it, so a
    # second ``shutdown(wait=True)`` returns at once; CPython's private attribute, None where it has none)
    _STOPPED.append((ex, getattr(ex, "_executor_manager_thread", None)))
    ex.shutdown(wait=False, cancel_futures=True)


def cancel_all() -> int:
    """Cancel the jobs not yet started in every pool still open (the running ones finish); how many pools."""
    pools = list(_OPEN)
    for ex in pools:
        _stop(ex)
        _OPEN.discard(ex)
    return len(pools)


def wait_stopped() -> None:
    """Wait for the pools :func:`cancel_all` stopped to finish their running jobs and close: the command line
    calls it after saying it stops. Without it the interpreter's exit woke a pool's manager thread while that
    thread was closing its pipe, and Python 3.11 printed a traceback (`OSError: Bad file descriptor`) after
    `terminated` (seen on a SIGTERM to `synth --relabel`, 2026-12-07)."""
    for _, thread in list(_STOPPED):
        if thread is not None:
            thread.join()


def as_done(fn: Callable[[Any], Any], jobs: Iterable[Any], workers: int) -> Iterator[tuple[int, Any]]:
    """``(index of the job, fn(job))`` in the order the jobs finish, in ``workers`` processes; closing the
    generator (or an exception in it) cancels the jobs not yet started."""
    from concurrent.futures import as_completed
    with worker_pool(workers) as ex:
        futures = {ex.submit(fn, j): i for i, j in enumerate(jobs)}
        try:
            for fut in as_completed(futures):
                yield futures[fut], fut.result()
        finally:  # (a pending future cancelled here never starts, whatever the pool's manager thread sees)
            for fut in futures:
                fut.cancel()
