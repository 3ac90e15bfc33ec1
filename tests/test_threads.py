"""llmulator.threads: torch's threads for the learned estimators' small passes - the idle cores, unless told."""

from __future__ import annotations

import os

import pytest
from llmulator import threads


def _cores() -> int:
    return len(os.sched_getaffinity(0))


def test_a_busy_machine_gets_one_thread_an_idle_one_all_its_cores(monkeypatch):
    monkeypatch.setattr(threads, "_own_load", lambda: 0.0)
    monkeypatch.setattr(os, "getloadavg", lambda: (_cores() + 5.0, 0.0, 0.0))
    assert threads.idle_cores() == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert threads.idle_cores() == _cores()


def test_the_process_s_own_load_is_not_counted_against_it(monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 0.0, 0.0))
    monkeypatch.setattr(threads, "_own_load", lambda: 1.0)  # a process that has computed for minutes
    assert threads.idle_cores() == _cores()


def test_the_own_load_of_a_fresh_process_is_small():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "from llmulator import threads; print(threads._own_load())"],
                         capture_output=True, text=True, check=True).stdout
    assert 0.0 <= float(out) < 0.2  # a second of computing weighs 1 - e^(-1/60) of the moving average


def test_an_explicit_count_and_the_environment_win(monkeypatch):
    monkeypatch.setattr(threads, "idle_cores", lambda: 1)
    assert threads.choose(3) == 3
    monkeypatch.setenv("LLMULATOR_THREADS", "2")
    assert threads.choose() == 2
    monkeypatch.setenv("LLMULATOR_THREADS", "")
    assert threads.choose() == 1


def test_torch_threads_are_restored_afterwards():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    with threads.torch_threads(1 if before != 1 else 2) as n:
        assert torch.get_num_threads() == n != before
    assert torch.get_num_threads() == before
