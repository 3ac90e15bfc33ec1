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
