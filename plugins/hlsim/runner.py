"""Compile and run instrumented kernels safely.

Binaries are cached by the hash of their source (and compiler) under
``$LLMULATOR_CACHE`` (default ``~/.cache/llmulator``)/hlsim; compiling writes
to a temporary name and renames, so a crash never leaves a broken binary.
Each run happens in a fresh temporary directory under a wall-time limit, an
address-space limit and no core dumps; an infinite loop, a crash or an
allocation beyond the limit ends with a clear UserError, never a hung CLI. An
out-of-bounds subscript (the instrumented program checks every one: ``__CHK`` in
``llmulator.instrument``) ends the run with :class:`OutOfBounds`, which the profiler
words with the array, the index and the loop iteration.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from llmulator import sandbox, scratch
from llmulator.errors import UserError

# -fstack-clash-protection: a frame larger than the stack's guard gap (a huge local array) is probed page by page,
# so it ends in SIGSEGV at the guard instead of reaching past it into another mapping of the process (where an
# in-bounds element could overwrite the simulator's counters; an outside probe, 2026-12-06)
CFLAGS = ["-O2", "-std=gnu11", "-w", "-fno-strict-aliasing", "-fstack-clash-protection"]
OOB_EXIT = 5  # the instrumented program's exit status on an out-of-bounds subscript


class OutOfBounds(UserError):
    """The kernel indexed an array outside its declared extent: the check's id
    (``Instrumented.checks``), the index value and the values of the check's loop variables."""

    def __init__(self, check: int, value: int, loop_values: tuple[int, ...]):
        self.check, self.value, self.loop_values = check, value, loop_values
        super().__init__(f"hlsim: out-of-bounds array access (check {check}: index {value})")


def cache_dir() -> Path:
    root = Path(os.environ.get("LLMULATOR_CACHE", Path.home() / ".cache" / "llmulator"))
    d = root / "hlsim"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"hlsim: cannot create the kernel cache {d} ({e.strerror}); set LLMULATOR_CACHE to a "
                        "writable folder") from None
    return d


@functools.cache
def compiler() -> tuple[str, str]:
    cc = os.environ.get("CC", "gcc")
    path = shutil.which(cc)
    if path is None:
        raise UserError(f"hlsim needs a C compiler ('{cc}' not found); install gcc (apt-get install gcc)")
    ver = subprocess.run([path, "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    return path, (ver[0] if ver else "")


def ensure_binary(source: str, key: str, timeout_s: float = 120.0) -> tuple[Path, bool]:
    """The compiled binary for ``source`` (cached); returns (path, compiled_now).

    An entry is a folder named by the hash of the source, compiler and flags, holding ``kernel.c``,
    ``sim`` and ``entry.json`` (the SHA-256 of both, written last and atomically). It is used only
    when both files still hash to what the entry recorded; anything else (a damaged, truncated or
    replaced binary, a half-written entry) is rebuilt with a one-line notice and never executed. One
    process builds an entry at a time (an exclusive lock on the entry's ``.lock``), so concurrent
    runs on a cold cache wait for one build instead of racing on its files.
    """
    cc, ver = compiler()
    full = hashlib.sha256((source + "\0" + ver + "\0" + " ".join(CFLAGS)).encode()).hexdigest()[:24]
    d = cache_dir() / full
    exe = d / "sim"
    try:
        d.mkdir(parents=True, exist_ok=True)
        lock = open(d / ".lock", "a+")
    except OSError as e:
        raise UserError(f"hlsim: cannot use the kernel cache {d.parent} ({e}); set LLMULATOR_CACHE to a "
                        "writable folder") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = _entry_state(d, source)
        if state == "ok":
            return exe, False
        if state == "damaged":
            print(f"notice: hlsim: the cached kernel {d.name} did not match its record; rebuilding it",
                  file=sys.stderr)
        return _build(d, source, cc, timeout_s), True


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _entry_state(d: Path, source: str) -> str:
    """'ok' (verified), 'missing' (never built) or 'damaged' (anything else)."""
    rec = d / "entry.json"
    if not rec.exists():
        return "missing"  # never finished (or built before entries were recorded): built afresh
    try:
        meta = json.loads(rec.read_text())
        src_ok = (d / "kernel.c").read_text() == source and _sha(d / "kernel.c") == meta["source_sha256"]
        if src_ok and _sha(d / "sim") == meta["binary_sha256"]:
            return "ok"
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return "damaged"


def _build(d: Path, source: str, cc: str, timeout_s: float) -> Path:
    """Compile into the (locked) entry folder: every file written under a temporary name, then renamed;
    the record last."""
    exe, src = d / "sim", d / "kernel.c"
    for p in (d / "entry.json", exe):
        p.unlink(missing_ok=True)
    _atomic_write(src, source.encode())
    fd, tmp = tempfile.mkstemp(prefix=".sim.", dir=d)
    os.close(fd)
    try:
        r = subprocess.run([cc, *CFLAGS, "-o", tmp, str(src), "-lm"], capture_output=True, text=True,
                           timeout=timeout_s)
        if r.returncode != 0:
            errs = [ln for ln in r.stderr.splitlines() if "error" in ln][:8]
            raise UserError("hlsim: the instrumented kernel does not compile:\n  " + "\n  ".join(errs or
                            r.stderr.splitlines()[:8]) + f"\n(source kept in {src})")
        os.chmod(tmp, 0o755)
        os.replace(tmp, exe)
    except subprocess.TimeoutExpired:
        raise UserError(f"hlsim: compiling the kernel took more than {timeout_s:.0f} s") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    record = {"source_sha256": _sha(src), "binary_sha256": _sha(exe), "compiler": compiler()[1]}
    _atomic_write(d / "entry.json", json.dumps(record).encode())
    return exe


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def run(exe: Path, arrays: dict[str, np.ndarray], outputs: dict[str, tuple[np.dtype, tuple[int, ...]]],
        timing: np.ndarray, time_limit_s: float = 60.0, mem_limit_mb: int = 2048, trust: bool = False
        ) -> tuple[dict[str, float], dict[str, np.ndarray], list[tuple[int, int, int, int]]]:
    """Run once on the input arrays, confined (``llmulator.sandbox``: the binary sees only a copy of
    itself and its run folder); ``outputs`` gives dtype and shape of each array to read back.

    Returns (cycles and per-nest cycles, output arrays, per-site (id, count, iterations, invocations)).
    """
    out_bytes = sum(int(np.dtype(dt).itemsize * int(np.prod(shape, dtype=np.int64))) for dt, shape in outputs.values())
    limits = sandbox.Limits(wall_s=time_limit_s, cpu_s=time_limit_s + 1, mem_bytes=int(mem_limit_mb) << 20,
                            file_bytes=out_bytes + (64 << 20)).check()
    with scratch.folder("hlsim") as t:
        for name, a in arrays.items():
            np.ascontiguousarray(a).tofile(t / f"{name}.bin")
        np.asarray(timing, dtype="<f8").tofile(t / "timing.bin")
        shutil.copy2(exe, t / "sim")  # the run sees this copy, never the cache
        cmd = [str(t / "sim"), str(t), str(t / "timing.bin"), str(t / "counters.txt")]
        r = sandbox.run(cmd, t, limits, trust=trust, what="the compiled kernel")
        if r.timed_out:
            raise UserError(f"hlsim: the kernel did not finish within {time_limit_s:g} s (an infinite loop? "
                            "a data-dependent bound that never ends?); raise --time-limit if it is just "
                            "slow")
        msg = r.stderr.strip()
        rc = r.returncode
        if rc > 128 and rc - 128 in signal.valid_signals():  # bubblewrap reports a signal as 128 + its number
            rc = -(rc - 128)
        if rc < 0:
            sig = signal.Signals(-rc).name
            why = {"SIGSEGV": "a segmentation fault (a stack overflow, e.g. a large array declared in "
                   "the kernel, or an access through a pointer)",
                   "SIGXCPU": "the CPU-time limit", "SIGKILL": "being killed (out of memory or time)",
                   "SIGFPE": "an arithmetic error (integer division by zero)",
                   "SIGABRT": "an abort"}.get(sig, sig)
            raise UserError(f"hlsim: the kernel crashed with {sig}: {why}" + (f"\n{msg}" if msg else ""))
        if rc == OOB_EXIT:
            oob = _oob_record(msg)
            if oob is not None:
                raise oob
        if rc == 3 or "out of memory" in msg:
            raise UserError(f"hlsim: the kernel ran out of memory (limit {mem_limit_mb} MiB; raise --mem-limit)"
                            + (f"\n{msg}" if msg else ""))
        if rc != 0:
            raise UserError(f"hlsim: the simulation failed (exit {rc}): {msg}")
        try:
            # read as the run left them, but only regular files of the sizes expected (sandbox.child_file: the
            # kernel could have put a link to a host file, a FIFO or a device in their place)
            scalars, sites = _counters(sandbox.child_file(t, "counters.txt", 256 << 20).decode())
            outs = {}
            for name, (dtype, shape) in outputs.items():
                count = int(np.prod(shape, dtype=np.int64))
                with sandbox.open_child(t, f"{name}.out") as f:
                    if os.fstat(f.fileno()).st_size != count * np.dtype(dtype).itemsize:
                        raise ValueError(f"{name}.out is not the {count:,} elements of {name}")
                    outs[name] = np.fromfile(f, dtype=dtype, count=count).reshape(shape)  # one copy, in place
        except (OSError, ValueError, IndexError) as e:
            raise UserError(f"hlsim: the run left counters or outputs that cannot be read ({e}); the kernel "
                            "wrote over the simulator's own state") from None
        return scalars, outs, sites


def _counters(text: str) -> tuple[dict[str, float], list[tuple[int, int, int, int]]]:
    """The counters file the run wrote: written by code the workload controls, so every number is
    checked (finite, not negative) before it is believed."""
    import math
    scalars: dict[str, float] = {}
    sites = []
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "cycles":
            scalars["cycles"] = float(parts[1])
        elif parts[0] == "nest":
            scalars[f"nest.{int(parts[1])}"] = float(parts[2])
        elif parts[0] == "site":
            sites.append(tuple(int(x) for x in parts[1:5]))
        elif parts[0] == "marks":  # distinct elements read before any write, and written (llmulator.element_marks)
            scalars[f"marks.{int(parts[1])}.read"] = float(parts[2])
            scalars[f"marks.{int(parts[1])}.written"] = float(parts[3])
    if "cycles" not in scalars:
        raise ValueError("no cycle count")
    bad = [k for k, v in scalars.items() if not math.isfinite(v) or v < 0]
    if bad or any(x < 0 for s in sites for x in s):
        raise ValueError(f"negative or non-finite counts ({', '.join(bad) or 'site counters'})")
    return scalars, sites


def _oob_record(stderr: str) -> OutOfBounds | None:
    """The ``hlsim-oob CHECK VALUE LOOPVALUES...`` line the program printed, if any."""
    for line in reversed(stderr.splitlines()):
        parts = line.split()
        if parts[:1] == ["hlsim-oob"] and len(parts) >= 3:
            try:
                nums = [int(x) for x in parts[1:]]
            except ValueError:
                return None
            return OutOfBounds(nums[0], nums[1], tuple(nums[2:]))
    return None
