"""Atomic file writes: nothing a user computed is left half-written on a crash or Ctrl-C."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def user_home() -> Path:
    """Where llmulator keeps a user's own files (calibration contexts, ``train --quick`` models):
    ``$LLMULATOR_HOME``, default ``~/.cache/llmulator``; never the repository."""
    env = os.environ.get("LLMULATOR_HOME")
    return Path(env) if env else Path.home() / ".cache" / "llmulator"


def cache_root() -> Path:
    """Where llmulator keeps what it can recompute (validation memos, bank schedules, compiled kernels):
    ``$LLMULATOR_CACHE``, default ``~/.cache/llmulator``."""
    return Path(os.environ.get("LLMULATOR_CACHE") or Path.home() / ".cache" / "llmulator")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        from .errors import UserError
        raise UserError(f"cannot write {path}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600 files; give the mode a plain open() would
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError):  # a full disk, a read-only folder: a message, and the old file intact
            from .errors import UserError
            raise UserError(f"cannot write {path}: {e.strerror or e}") from None
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def update_section(path: str | Path, key: str, body: str, title: str = "Results") -> str:
    """Replace one generated section of a shared Markdown report, keeping the others.

    Several commands write parts of one document (``docs/results.md``: the
    bench tables, the ablation, the calibration experiment). Each owns the text
    between ``<!-- begin:KEY -->`` and ``<!-- end:KEY -->``; a missing section is
    appended, a missing file is created with ``# title``. Written atomically.
    """
    path = Path(path)
    begin, end = f"<!-- begin:{key} -->", f"<!-- end:{key} -->"
    block = f"{begin}\n{body.strip()}\n{end}"
    text = path.read_text() if path.is_file() else f"# {title}\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
        text = head + block + tail
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    atomic_write_text(path, text)
    return text
