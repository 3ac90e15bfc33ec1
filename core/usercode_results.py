"""The arrays workload Python hands back (``result.npz`` in its run folder), read without trusting the file.

Why a module of its own: the child that wrote the archive runs code from a workload file, and this process
reads it unconfined. An outside review made the parent allocate 4 GiB from a small compressed archive whose
member declared a 4 GiB array (every member used to be loaded, before any check), and left a link to a
host file in the archive's place. Here the archive must be a regular file (``sandbox.open_child``); only the
names asked for are read; each member's ``.npy`` header is read first, and an array is loaded only if it
holds no Python objects and is no larger than the value it replaces allows (at most 16 bytes per element of
the array of that name handed in; 1 GiB for a name the code makes anew, a generator's input).
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from . import sandbox

NEW_ARRAY_BYTES = 1 << 30  # the most a name the parent holds no array for may bring back


def load(folder: Path, want: Iterable[str], namespace: dict[str, Any],
         caps: dict[str, int] | None = None) -> dict[str, np.ndarray]:
    """The arrays of ``want`` the child left in ``folder``/result.npz (names it did not leave are absent), each at
    most ``caps[name]`` bytes where given, else as :func:`_cap` allows. Raises ValueError (too large, objects, a
    header it cannot read) or OSError (not a regular file)."""
    out: dict[str, np.ndarray] = {}
    with sandbox.open_child(folder, "result.npz") as f:
        _few_entries(f)
        with zipfile.ZipFile(f) as z:
            members = {i.filename: i for i in z.infolist()}
            for name in want:
                info = members.get(f"{name}.npy")
                if info is None:
                    continue
                cap = caps[name] if caps and name in caps else _cap(namespace.get(name))
                with z.open(info) as m:
                    shape, dtype = _header(m)
                size = math.prod(shape) * dtype.itemsize
                if dtype.hasobject or size > cap:
                    what = "Python objects" if dtype.hasobject else f"{size:,} bytes ({shape}, {dtype})"
                    raise ValueError(f"'{name}' holds {what}; at most {cap:,} bytes of numbers are accepted")
                with z.open(info) as m:
                    out[name] = np.lib.format.read_array(m, allow_pickle=False)
    return out


MAX_ENTRIES = 4096  # members an archive of the child's arrays may list (it writes one per array it returns)


def _few_entries(f) -> None:
    """Refuse an archive whose directory lists more than ``MAX_ENTRIES`` members or takes more than 1 MiB, read from
    its end record before ``zipfile`` builds an object per member (an outside probe's 2,000,000-entry archive took
    the parent to 846 MB, an 8,000,000-entry one past 2.9 GB)."""
    f.seek(0, 2)
    size = f.tell()
    f.seek(max(0, size - 65557))
    tail = f.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) < at + 16:
        raise zipfile.BadZipFile("no end of the archive's directory")
    entries = int.from_bytes(tail[at + 10:at + 12], "little")
    directory = int.from_bytes(tail[at + 12:at + 16], "little")
    if entries > MAX_ENTRIES or directory > (1 << 20) and directory != 0xFFFFFFFF:
        raise ValueError(f"an archive listing {entries:,} members in a {directory:,}-byte directory; at most "
                         f"{MAX_ENTRIES:,} are read")
    f.seek(0)


def _cap(given: Any) -> int:
    if isinstance(given, np.ndarray):
        return max(int(given.size), 1) * 16
    return NEW_ARRAY_BYTES


def _header(m) -> tuple[tuple[int, ...], np.dtype]:
    fmt = np.lib.format
    version = fmt.read_magic(m)
    if version == (1, 0):
        shape, _, dtype = fmt.read_array_header_1_0(m)
    elif version == (2, 0):
        shape, _, dtype = fmt.read_array_header_2_0(m)
    else:
        raise ValueError(f"an array file of format version {version}, not 1.0 or 2.0")
    return tuple(int(s) for s in shape), np.dtype(dtype)
