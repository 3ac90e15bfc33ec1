"""Run workload code confined by the operating system.

A workload file carries code: a C kernel (compiled and run by hlsim) and Python (the NumPy
``reference`` and the input ``generator``). Workload files are shared like papers' artefacts, so
that code is untrusted. It runs here, in a child process, behind layers that do not depend on what
the code is called or how it spells a call:

1. **bubblewrap** (Linux namespaces; Debian package ``bubblewrap``): new user, PID, network, IPC,
   UTS and cgroup namespaces — no network at all (only a loopback that reaches nothing outside), no
   view of the host's processes, and when the child's PID namespace ends every process in it ends
   too, so nothing outlives the run. A private filesystem: the system's ``/usr``, ``/lib*`` and
   ``/bin`` (and, for Python, its installation and the virtual environment) read-only, an empty
   ``/tmp``, a fresh read-only ``/proc`` (no writable ``/proc/sys``) and ``/dev``, and one read-write
   folder, the run's own; the rest of the host (home, the repository, ``/etc``, the cache of other
   designs) does not exist inside. All capabilities dropped; the environment cleared.
2. **seccomp** (libseccomp through ``pyseccomp``): no new processes or threads (``fork``, ``vfork``,
   ``clone``, ``clone3``), no sockets, and none of ``ptrace``, ``mount``,
   ``unshare``, ``setns``, ``bpf``, ``perf_event_open``, ``keyctl``: those calls fail with an error.
3. **resource limits**: CPU time, address space, size of any file written (so output is bounded),
   open files, no core dumps; and a wall-time limit after which the whole process group is killed.

``available()`` says whether layers 1 and 2 work on this machine. When they do not, ``run`` refuses
with exit status 2 and says why, unless the user passed ``--trust-workload`` (``trust=True``), in
which case the code runs with layer 3 only and one notice on stderr. docs/security.md has the threat
model.
"""

from __future__ import annotations

import errno
import functools
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attrs

from .errors import UserError

#: ``--trust-workload`` or this variable set to 1: run workload code without the sandbox
TRUST_ENV = "LLMULATOR_TRUST_WORKLOAD"


@attrs.frozen
class Limits:
    """What one run of workload code may use; every limit is finite and positive (``check``)."""

    wall_s: float = 60.0
    cpu_s: float = 60.0
    mem_bytes: int = 2048 << 20
    file_bytes: int = 1 << 30  # the largest file it may write (outputs, stdout, stderr)

    def check(self) -> Limits:
        import math
        # the largest values the kernel's limits take (a week; 1 PiB): above them setrlimit fails in the child's
        # start-up, which an outside review saw end in exit 3 (`--time-limit 1e308`)
        most = {"wall_s": 604800.0, "cpu_s": 604800.0, "mem_bytes": float(1 << 50), "file_bytes": float(1 << 50)}
        for name in ("wall_s", "cpu_s", "mem_bytes", "file_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise UserError(f"limit {name} must be a positive, finite number (got {v!r}); "
                                "no value turns a limit off")
            if v > most[name]:
                raise UserError(f"limit {name} is {v:g}; at most {most[name]:g} is accepted")
        return self


@attrs.frozen
class Result:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False


class Refused(UserError):
    """The sandbox is not available and the user did not say to trust the workload."""


def trusted(flag: bool = False) -> bool:
    return flag or os.environ.get(TRUST_ENV, "") == "1"


@functools.cache
def available() -> str | None:
    """None when bubblewrap and seccomp both work here; else why not (one line)."""
    if sys.platform != "linux":
        return f"the sandbox needs Linux namespaces and seccomp; this is {sys.platform}"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    try:
        _filter_bpf()
    except Exception as e:  # noqa: BLE001 - any failure to build the filter means no seccomp layer
        return f"seccomp is not usable ({type(e).__name__}: {e}); pip install pyseccomp and libseccomp2"
    try:
        r = subprocess.run([bwrap, *_namespaces(), *_system_binds(()), "--", "/bin/true"],
                           capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap does not run here ({e})"
    if r.returncode != 0:
        return f"bubblewrap cannot create namespaces here: {r.stderr.strip()[:200]}"
    return None


def _namespaces() -> list[str]:
    return ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]


def _system_binds(extra_ro: tuple[str, ...]) -> list[str]:
    """The system's programs and libraries read-only, a private /proc, /dev and an empty /tmp, then ``extra_ro``
    read-only: bwrap mounts in order, so a path under /tmp (a virtual environment there) is bound after the empty
    /tmp, not hidden by it (before, Python under /tmp could not start its child: every reference failed)."""
    out = []
    for p in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin"):
        if os.path.exists(p):
            out += ["--ro-bind", p, p]
    # /proc read-only: as root, the child is root on the host's files, and /proc/sys holds global settings
    # (kernel.core_pattern runs a command as host root on the next crash; an outside review could write it)
    out += ["--proc", "/proc", "--remount-ro", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for p in extra_ro:
        out += ["--ro-bind", p, p]
    return out


@functools.cache
def _filter_bpf() -> bytes:
    """The seccomp program (BPF), built once per process."""
    import pyseccomp as sc

    f = sc.SyscallFilter(sc.ALLOW)
    deny = sc.ERRNO(errno.EPERM)
    for call in ("fork", "vfork", "ptrace", "mount", "umount2", "unshare", "setns", "bpf", "perf_event_open",
                 "keyctl", "add_key", "request_key", "pivot_root", "chroot", "kexec_load", "init_module",
                 "finit_module", "process_vm_readv", "process_vm_writev"):
        f.add_rule(deny, call)
    # io_uring: sockets and files past the rules above; pidfd_*: another process's descriptors (an outside probe took
    # bwrap's own with pidfd_getfd); the new mount API beside mount(2)
    for call in ("io_uring_setup", "io_uring_enter", "io_uring_register", "pidfd_open", "pidfd_getfd",
                 "pidfd_send_signal", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
                 "mount_setattr"):
        try:
            f.add_rule(deny, call)
        except (ValueError, RuntimeError, OSError):  # a libseccomp that does not know the call: nor does the kernel
            pass
    f.add_rule(sc.ERRNO(errno.EACCES), "socket")
    f.add_rule(sc.ERRNO(errno.EACCES), "socketpair")
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # libc falls back to clone, denied below
    # no threads either: the kernel binary and the NumPy child (one BLAS thread) start none, and threads are
    # processes to the kernel's PID count (an outside review started 2,000; pid_max is 32,768)
    f.add_rule(deny, "clone")
    with tempfile.TemporaryFile() as fh:
        f.export_bpf(fh)
        fh.seek(0)
        return fh.read()


def _filter_fd() -> int:
    """A descriptor bwrap reads the seccomp program from: an anonymous in-memory file (``memfd_create``), so no
    file is left behind. Before 2026-12-07 the program lay in /tmp, removed at the process's normal exit only:
    every killed run and every pool worker (they end with ``os._exit``) left one, 87 on the development
    machine."""
    bpf = _filter_bpf()
    fd = os.memfd_create("llmulator-seccomp", os.MFD_CLOEXEC) if hasattr(os, "memfd_create") else None
    if fd is None:  # pragma: no cover - Linux has had memfd_create since 3.17
        fh = tempfile.TemporaryFile()  # unlinked at once: nothing left behind either
        fd = os.dup(fh.fileno())
        fh.close()
    os.write(fd, bpf)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _rlimits(limits: Limits):
    def apply():
        _lower(resource.RLIMIT_AS, int(limits.mem_bytes))
        _lower(resource.RLIMIT_CORE, 0)
        cpu = max(1, int(limits.cpu_s + 0.999))
        _lower(resource.RLIMIT_CPU, cpu, cpu + 1)
        _lower(resource.RLIMIT_FSIZE, int(limits.file_bytes))
        _lower(resource.RLIMIT_NOFILE, 256)
        os.setsid()
    return apply


def _lower(what: int, soft: int, hard: int | None = None) -> None:
    """Set a limit, never above the hard limit the user's shell already set (an 8 GiB ``--mem-limit`` under
    ``ulimit -v`` of 4 GiB failed every run in ``preexec_fn``: an outside probe); the tighter one holds."""
    _, cap = resource.getrlimit(what)
    hard = soft if hard is None else hard
    if cap != resource.RLIM_INFINITY:
        soft, hard = min(soft, cap), min(hard, cap)
    resource.setrlimit(what, (soft, hard))


def run(argv: list[str], workdir: Path, limits: Limits, *, ro_paths: tuple[str, ...] = (),
        env: dict[str, str] | None = None, trust: bool = False, what: str = "workload code") -> Result:
    """Run ``argv`` confined, with ``workdir`` its only writable (and, beside the system and
    ``ro_paths``, only readable) folder; stdout and stderr go to files there (bounded by
    ``limits.file_bytes``). Raises :class:`Refused` when the sandbox is unavailable and not trusted."""
    limits.check()
    workdir = Path(workdir).resolve()
    why = available()
    base_env = {"PATH": "/usr/bin:/bin", "HOME": str(workdir), "LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1",
                "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **(env or {})}
    if why is None:
        bpf = _filter_fd()
        full = [shutil.which("bwrap"), *_namespaces(), *_system_binds(tuple(p for p in ro_paths if os.path.exists(p))),
                "--bind", str(workdir), str(workdir), "--chdir", str(workdir), "--clearenv"]
        for k, v in base_env.items():
            full += ["--setenv", k, v]
        full += ["--seccomp", str(bpf), "--", *argv]
        fds: tuple[int, ...] = (bpf,)
        # bwrap itself gets no environment either: it is the child's PID 1, and /proc/1/environ showed the user's
        # whole environment (tokens and keys) to the workload code (an outside probe)
        run_env = {"PATH": "/usr/bin:/bin"}
    elif trusted(trust):
        _notice_unconfined(why)
        full, fds, bpf, run_env = list(argv), (), None, base_env
    else:
        raise Refused(f"refusing to run {what} unconfined: {why}. Workload files are code; pass "
                      f"--trust-workload (or set {TRUST_ENV}=1) only for files you trust")
    out_path, err_path = workdir / ".stdout", workdir / ".stderr"
    try:
        with open(out_path, "w+b") as out, open(err_path, "w+b") as err:
            try:
                proc = subprocess.Popen(full, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=workdir,
                                        env=run_env, pass_fds=fds, preexec_fn=_rlimits(limits))
            except OSError as e:
                raise UserError(f"cannot start {what}: {e}") from None
            timed_out = False
            try:
                _wait_exit(proc, limits.wall_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
            except BaseException:
                _kill_group(proc)  # Ctrl-C: nothing of the workload outlives the command
                raise
            # read through this process's own descriptors: the child may have put a link, a FIFO or a device
            # in the files' places (a link to a host file would echo it in an error message)
            tails = _tail(out), _tail(err)
    finally:
        if bpf is not None:
            os.close(bpf)
    return Result(proc.returncode, *tails, timed_out)


def _wait_exit(proc: subprocess.Popen, timeout: float) -> None:
    """``proc.wait(timeout)`` without its polling: Python 3.11 sleeps in steps that double up to 50 ms
    between checks, so a 35 ms run was noticed at 63.5 ms (in a relabel, 1.4 s of 3.3 s went to those sleeps).
    A pidfd becomes readable the moment the child exits; where there is none (not Linux 5.3+), poll."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        proc.wait(timeout=timeout)
        return
    try:
        with select.epoll() as ep:
            ep.register(fd, select.EPOLLIN)
            end = time.monotonic() + timeout
            while proc.poll() is None:  # EINTR is retried by epoll itself (PEP 475)
                left = end - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(proc.args, timeout)
                ep.poll(left)
    finally:
        os.close(fd)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _tail(f, limit: int = 64 << 10) -> str:
    """The last ``limit`` bytes of the child's stdout or stderr (it may have written up to its file limit),
    read through the open file ``f`` this process gave the child."""
    try:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - limit))
        return f.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


def child_file(folder: Path, name: str, limit: int) -> bytes:
    """The bytes of a file the confined child left in its run ``folder``: a regular file of at most ``limit``
    bytes, opened without following a link and without waiting on a FIFO. The child owns that folder and may
    have replaced the file with a link to a host file (read back, it would leak), a FIFO (the read would
    hang) or a device such as /dev/zero (the read would never end). Raises OSError otherwise."""
    with open_child(folder, name) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise OSError(errno.EFBIG, f"{name} holds {size:,} bytes, more than the {limit:,} expected")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"{name} holds more than the {limit:,} bytes expected")
    return data


def open_child(folder: Path, name: str):
    """A file the child left in its run ``folder``, opened for reading (binary) only if it is a regular file
    (see :func:`child_file`: no link followed, no FIFO waited on, no device read)."""
    import stat

    fd = os.open(Path(folder) / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"{name} is not a regular file")
    return os.fdopen(fd, "rb")


_noticed = False


def _notice_unconfined(why: str) -> None:
    global _noticed
    if not _noticed:
        _noticed = True
        print(f"notice: running workload code WITHOUT the sandbox (--trust-workload): {why}", file=sys.stderr)


def python_paths() -> tuple[str, ...]:
    """What a Python child needs to read: this interpreter's installation and its environment."""
    paths = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), sys.base_prefix, sys.prefix}
    exe = os.path.realpath(sys.executable)
    paths.add(os.path.dirname(os.path.dirname(exe)))
    return tuple(sorted(p for p in paths if p and p != "/"))


def die_with_parent() -> None:
    """A pool worker's initializer (``ProcessPoolExecutor(initializer=...)``): the kernel kills this
    process when the one that started it dies (Linux ``PR_SET_PDEATHSIG``), so a killed ``synth`` or
    ``dse --verify`` leaves no worker behind. Elsewhere it does nothing."""
    if sys.platform != "linux":
        return
    import ctypes
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the call: nobody would kill us
        os._exit(1)
