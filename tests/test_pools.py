"""Worker pools stop with their caller (llmulator.pools): leaving the loop over a pool's results, by an
exception such as Ctrl-C's KeyboardInterrupt or by closing the generator, cancels the jobs not yet started.
Before, the pool's `with` block waited for every queued job: a Ctrl-C'd `synth --relabel` ran on through its
3,000 shards (observed)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from llmulator.pools import as_done

JOBS = 40


def _job(path: str) -> str:
    time.sleep(0.1)
    Path(path).write_text("ran")
    return path


def _ran(tmp_path: Path) -> int:
    return sum(1 for _ in tmp_path.glob("job-*"))


def test_all_jobs_run_and_report_their_index(tmp_path):
    jobs = [str(tmp_path / f"job-{i}") for i in range(6)]
    got = dict(as_done(_job, jobs, 2))
    assert got == dict(enumerate(jobs)) and _ran(tmp_path) == 6


def test_an_interrupt_in_the_caller_cancels_the_jobs_not_started(tmp_path):
    jobs = [str(tmp_path / f"job-{i}") for i in range(JOBS)]
    with pytest.raises(KeyboardInterrupt):
        for _ in as_done(_job, jobs, 2):
            raise KeyboardInterrupt  # Ctrl-C while the caller handles the first result
    time.sleep(0.5)  # (a job still running when the pool was left finishes)
    assert _ran(tmp_path) < JOBS // 2


def test_closing_the_generator_cancels_the_jobs_not_started(tmp_path):
    jobs = [str(tmp_path / f"job-{i}") for i in range(JOBS)]
    gen = as_done(_job, jobs, 2)
    next(gen)
    gen.close()
    time.sleep(0.5)
    assert _ran(tmp_path) < JOBS // 2


def _interrupted_outside_the_loop(jobs: list[str]) -> None:
    """Ctrl-C while the caller works between results, the pool's generator two generators down (as `synth
    --relabel` writing a shard): unwinding closes them and drops the pool at once."""
    def outer(it):
        yield from it
    with pytest.raises(KeyboardInterrupt):
        for k, _ in enumerate(outer(as_done(_job, jobs, 2))):
            if k == 1:
                raise KeyboardInterrupt


def test_a_dropped_pool_still_cancels_its_queue(tmp_path):
    """``shutdown(wait=False, cancel_futures=True)`` cancels only when the pool's manager thread next finds the
    executor alive; a pool dropped at once ran its whole queue in about half the runs (every job written a
    second later). Four runs: each must leave most of its 20 jobs unstarted once the running ones are done."""
    for run in range(4):
        jobs = [str(tmp_path / f"job-{run}-{i}") for i in range(20)]
        _interrupted_outside_the_loop(jobs)
        time.sleep(1.5)  # (20 jobs of 0.1 s on 2 workers: all done by now if the queue ran on)
        assert sum(1 for _ in tmp_path.glob(f"job-{run}-*")) < 10


def test_cancel_all_stops_a_pool_whose_generator_was_left_suspended(tmp_path):
    """A generator over a pool left suspended, not closed (SIGTERM landed outside it and a reference cycle kept it):
    the command line's ``cancel_all`` cancels the queue of every pool still open (before, `synth --relabel`'s
    workers ran on for minutes after `terminated`, writing nothing)."""
    from llmulator.pools import cancel_all
    jobs = [str(tmp_path / f"job-{i}") for i in range(20)]
    gen = as_done(_job, jobs, 2)
    next(gen)
    assert cancel_all() == 1
    time.sleep(1.5)
    assert _ran(tmp_path) < 10
    gen.close()


def test_wait_stopped_returns_once_the_running_jobs_are_done(tmp_path):
    """After `terminated` the command line waits for the stopped pools (``wait_stopped``): the jobs that were
    running have written their files when it returns, and nothing runs after it (before, the interpreter's exit
    raced the pools' manager threads and Python printed a traceback after `terminated`)."""
    from llmulator.pools import cancel_all, wait_stopped
    jobs = [str(tmp_path / f"job-{i}") for i in range(20)]
    gen = as_done(_job, jobs, 2)
    next(gen)
    cancel_all()
    wait_stopped()
    ran = _ran(tmp_path)
    time.sleep(0.5)
    assert _ran(tmp_path) == ran < 10
    gen.close()
