"""Private scratch folders under the temporary directory that do not outlive the process that made them.

Why a module of its own: each run of workload code (hlsim's compiled kernel, a reference, a SCALE-Sim run)
works in a folder of its own under /tmp, removed when the run ends. A process killed before that (SIGKILL, the
OOM killer, a pool worker killed with its parent) left it behind: 92 folders and seccomp filters on the
development machine after a week of data jobs (2026-12-07). A folder's name now carries the id of the process
that owns it, and each process, before its first folder, removes the folders whose owner no longer runs: only
its own user's, and only those untouched for ``STALE_S`` (a process of another PID namespace sharing /tmp looks
gone, so a folder in use is never taken for a leftover by its owner's absence alone). SIGTERM ends the command
line as Ctrl-C does (``llmulator.cli``), so its own folders go at once.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

PREFIX = "llmulator-"
STALE_S = 600.0  # a leftover's folder is untouched for this long (a live run writes its files at the start)
_NAME = re.compile(r"^llmulator-[a-z]+-(\d+)-[A-Za-z0-9_]+$")
_swept_by: int | None = None  # the process that last swept (a forked worker sweeps again)


@contextlib.contextmanager
def folder(kind: str) -> Iterator[Path]:
    """A new private folder ``/tmp/llmulator-<kind>-<pid>-XXXXXXXX``, removed with all it holds on leaving."""
    global _swept_by
    if _swept_by != os.getpid():
        _swept_by = os.getpid()
        sweep()
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{os.getpid()}-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def sweep(root: str | Path | None = None, stale_s: float = STALE_S) -> list[Path]:
    """Remove the scratch folders under ``root`` (the temporary directory) that a process which no longer runs
    left (this user's, untouched for ``stale_s`` seconds); the folders removed."""
    gone = []
    now = time.time()
    for p in Path(root or tempfile.gettempdir()).glob(PREFIX + "*"):
        m = _NAME.match(p.name)
        try:
            st = p.lstat()
        except OSError:
            continue
        if m is None or not p.is_dir() or p.is_symlink() or st.st_uid != os.getuid() or now - st.st_mtime < stale_s:
            continue
        if not _running(int(m.group(1))):
            shutil.rmtree(p, ignore_errors=True)
            gone.append(p)
    return gone


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process of that id: not ours to judge
        return True
    return True
