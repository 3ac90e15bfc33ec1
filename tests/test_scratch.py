"""Scratch folders do not outlive their process (llmulator.scratch): a killed process's folder is removed by the
next one, a live one's is kept, SIGTERM ends a command as Ctrl-C does and removes its run folder, and the
seccomp program lies in no file. Before 2026-12-07, 92 folders and filters of killed runs and pool workers lay in
the development machine's /tmp."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from llmulator import sandbox, scratch

CHILD = ("import time\nfrom llmulator import scratch\nwith scratch.folder('hlsim') as p:\n"
         "    print(p, flush=True)\n    time.sleep(120)\n")


def _aged(path: Path) -> None:
    old = time.time() - 2 * scratch.STALE_S
    os.utime(path, (old, old))


def test_a_killed_processs_folder_is_swept_and_a_live_ones_kept(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        path = Path(proc.stdout.readline().strip())
        assert path.is_dir() and path.parent == tmp_path and f"-{proc.pid}-" in path.name
        _aged(path)
        assert scratch.sweep(tmp_path) == []  # its owner still runs
    finally:
        proc.kill()
        proc.wait()
    assert path.is_dir()  # SIGKILL: nothing in the process could remove it
    fresh = tmp_path / f"llmulator-code-{proc.pid}-abcdefgh"  # the same dead owner, touched a moment ago
    fresh.mkdir()
    foreign = tmp_path / "llmulator-notes"  # not a scratch folder's name
    foreign.mkdir()
    _aged(foreign)
    assert scratch.sweep(tmp_path) == [path]
    assert not path.exists() and fresh.is_dir() and foreign.is_dir()


def test_a_new_folder_sweeps_first(tmp_path, monkeypatch):
    """The first folder a process makes removes what dead processes left (once per process)."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setattr(scratch, "_swept_by", None)
    left = tmp_path / "llmulator-hlsim-999999999-deadbeef"  # no process has this id (above pid_max)
    left.mkdir()
    (left / "x.bin").write_bytes(b"0" * 16)
    _aged(left)
    with scratch.folder("code") as p:
        assert p.is_dir() and not left.exists()
    assert not p.exists()


needs_sandbox = pytest.mark.skipif(sandbox.available() is not None,
                                   reason=f"sandbox unavailable: {sandbox.available()}")


@needs_sandbox
def test_sigterm_ends_profile_and_removes_its_run_folder(tmp_path):
    """`kill -TERM` of `llmulator profile` while its kernel runs (a loop that never ends): exit 143, its run
    folder gone, no child left (before: the process died where it stood and the folder stayed)."""
    import yaml
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump({"workload": {
        "version": 1, "name": "w", "parameters": {"N": 8},
        "arrays": {"y": {"shape": ["N"], "dtype": "int32", "role": "out"}},
        "kernel": "int k = 0;\nL_w: while (k < 1) {\n  y[0] = y[0] + 1;\n}\n", "reference": "pass\n"}}))
    m = tmp_path / "m.yaml"
    m.write_text("mapping:\n  version: 1\n  name: m\n  loops: {}\n  placement: {y: BRAM}\n")
    run = tmp_path / "tmp"
    run.mkdir()
    exe = Path(sys.executable).with_name("llmulator")
    proc = subprocess.Popen([str(exe), "profile", "hls-fpga", str(w), str(m), "--time-limit", "120"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(run)})
    try:
        deadline = time.monotonic() + 90
        while not list(run.glob("llmulator-hlsim-*")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert list(run.glob(f"llmulator-hlsim-{proc.pid}-*")), proc.communicate(timeout=5)
        time.sleep(0.5)  # the kernel runs
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err[-400:]
    assert "terminated" in err
    assert list(run.iterdir()) == []


@needs_sandbox
def test_the_seccomp_program_lies_in_no_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    sandbox._filter_bpf.cache_clear()  # built afresh here, under this TMPDIR
    work = tmp_path / "run"
    work.mkdir()
    r = sandbox.run(["/bin/true"], work, sandbox.Limits(wall_s=30))
    assert r.returncode == 0
    assert [p.name for p in tmp_path.iterdir()] == ["run"]
