"""The one place where Python code from a workload file runs: in a confined child process.

A workload carries Python: its NumPy ``reference`` (which computes the expected outputs) and,
optionally, an input ``generator`` (which makes input arrays that depend on each other). Both run
through :func:`run_user_code`, and nothing else in llmulator executes workload Python. The code runs
in a child Python process inside the operating-system sandbox of :mod:`llmulator.sandbox` (no network,
no files outside its own folder, no new processes, time and memory limits): what goes in is written
by this process (a pickle it makes itself), what comes back is read as plain arrays and JSON
(``numpy.load(allow_pickle=False)``), so nothing the code does reaches this process except values.
Monkey-patching NumPy, ``sys.exit(0)``, a daemon or ``while True: pass`` in the code change nothing
here: the child is killed at its time limit with everything it started, and a child that did not
finish normally is a failure.

Every failure of the user's code (a syntax error, an exception at run time, a time or memory limit)
becomes a :class:`llmulator.errors.UserError` that names the workload, what was running
(``reference`` / ``input generator``) and the line within that code.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import signal
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from . import sandbox, scratch
from . import usercode_results as results
from .errors import UserError, escaped

#: limits of one run of workload Python (the reference of a large preset can take a while)
LIMITS = sandbox.Limits(wall_s=120.0, cpu_s=120.0, mem_bytes=8 << 30, file_bytes=4 << 30)


def limit_wall_time(seconds: float) -> None:
    """Run workload Python within ``seconds`` of wall and CPU time from now on (``profile --time-limit``)."""
    global LIMITS
    LIMITS = attrs.evolve(LIMITS, wall_s=float(seconds), cpu_s=float(seconds))
    LIMITS.check()


#: the longest code accepted (compiled in this process first, for its syntax errors)
MAX_CODE_CHARS = 1 << 20

# The child's program: self-contained (NumPy only), so the sandbox needs no view of llmulator.
_CHILD = r'''
import json, pickle, sys, traceback
import numpy as np
fname, want = sys.argv[1], json.loads(sys.argv[2])
with open("ns.pickle", "rb") as f:
    code, ns = pickle.load(f)
ns["np"] = np
status = {"ok": True}
try:
    compiled = compile(code, fname, "exec")
except SyntaxError as e:
    status = {"ok": False, "syntax": True, "line": e.lineno, "type": "SyntaxError", "msg": e.msg}
if status["ok"]:
    try:
        with np.errstate(all="ignore"):
            exec(compiled, ns)
    except BaseException as e:  # SystemExit and KeyboardInterrupt too: the code did not finish
        line = next((fr.lineno for fr in reversed(traceback.extract_tb(e.__traceback__))
                     if fr.filename == fname), None)
        status = {"ok": False, "line": line, "type": type(e).__name__, "msg": str(e)[:2000]}
arrays, kinds = {}, {}
if status["ok"]:
    for name in want:
        if name not in ns:
            continue
        v = ns[name]
        try:
            a = np.asarray(v)
        except BaseException:
            a = None
        if a is not None and a.dtype.kind in "biuf":
            arrays[name] = a
            kinds[name] = "array"
        else:
            kinds[name] = type(v).__name__
np.savez("result.npz", **arrays)
with open("result.json", "w") as f:
    json.dump({"status": status, "kinds": kinds}, f)
'''


def run_user_code(kind: str, workload: str, code: str, namespace: dict[str, Any],
                  want: Iterable[str] = (), *, trust: bool = False, memo: bool = False,
                  caps: dict[str, int] | None = None) -> dict[str, Any]:
    """Execute ``code`` (a workload's ``kind`` -- e.g. ``"reference"`` or ``"input generator"``) with
    ``namespace`` in scope, in a confined child process; return ``namespace`` updated with the names
    of ``want`` that the code left (numeric values as arrays; anything else as an object whose type
    name is the one the code left, so callers can say what they got).

    ``namespace`` holds what the code may use (sizes, scalars, arrays, ``rng``, ``params``; ``np`` is
    the child's own NumPy). Line numbers in error messages are lines of ``code`` (1 = its first line).
    With ``memo`` (a reference: a function of its inputs) the results of the same code on the same
    values are kept in this process (a sweep profiles one workload's inputs under many mappings), so
    the child starts once per distinct input, not once per design. ``caps`` bounds the bytes a name may bring
    back (default: 16 per element of the array of that name in ``namespace``, 1 GiB for a new name).
    """
    fname = f"<{kind} of workload '{workload}'>"
    if len(code) > MAX_CODE_CHARS:  # compiled here, outside the sandbox: its size bounds this process's memory
        raise UserError(f"{kind} of workload '{workload}' is {len(code):,} characters long; at most "
                        f"{MAX_CODE_CHARS:,} are accepted (read large data from inputs, not literals)")
    try:
        compile(code, fname, "exec")  # syntax errors without starting a child
    except SyntaxError as e:
        raise UserError(f"{kind} of workload '{workload}' has a syntax error at line {e.lineno}: "
                        f"{plain_text(e.msg)}") from None
    except (MemoryError, RecursionError):
        raise UserError(f"{kind} of workload '{workload}' nests too deeply to compile") from None
    want = list(dict.fromkeys(want))
    inside = {k: v for k, v in namespace.items() if k != "np" and not k.startswith("__")}
    try:
        payload = pickle.dumps((code, inside), protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError) as e:  # pragma: no cover - our own values
        raise RuntimeError(f"cannot hand the namespace to the child: {e}") from None
    key = hashlib.sha256(payload + json.dumps(want).encode()).hexdigest() if memo else None
    if key is not None and key in _MEMO:
        namespace.update({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in _MEMO[key].items()})
        return namespace
    with scratch.folder("code") as t:
        (t / "ns.pickle").write_bytes(payload)
        (t / "child.py").write_text(_CHILD)
        r = sandbox.run([sys.executable, "-S", "-B", "child.py", fname, json.dumps(want)], t, LIMITS,
                        ro_paths=sandbox.python_paths(), env=_python_env(), trust=trust,
                        what=f"the {kind} of workload '{workload}'")
        prefix = f"{kind} of workload '{workload}'"
        if r.timed_out:
            raise UserError(f"{prefix} did not finish within {LIMITS.wall_s:g} s (an infinite loop?)")
        if r.returncode in (-signal.SIGXCPU, 128 + signal.SIGXCPU):  # the CPU-time limit can fire first (bwrap: 128+)
            raise UserError(f"{prefix} did not finish within {LIMITS.cpu_s:g} s of CPU time (an infinite loop?)")
        meta = _read_json(t)
        if meta is None:
            raise UserError(f"{prefix} did not finish normally (exit status {r.returncode}"
                            + (f"; {plain_text(_last_line(r.stderr))}" if r.stderr.strip() else "")
                            + "): a time or memory limit, a crash, or the code ended the process")
        st = meta.get("status", {})
        if not isinstance(st, dict) or not st.get("ok"):
            st = st if isinstance(st, dict) else {}
            if st.get("syntax"):
                raise UserError(f"{prefix} has a syntax error at line {st.get('line')}: {plain_text(st.get('msg'))}")
            where = f" at line {st['line']}" if isinstance(st.get("line"), int) else ""
            raise UserError(f"{prefix} failed{where}: {plain_text(st.get('type'))}: {plain_text(st.get('msg'))}")
        kinds = meta.get("kinds", {})
        if not isinstance(kinds, dict):
            raise UserError(f"{prefix} left results that cannot be read: 'kinds' is not a mapping")
        try:
            arrays = results.load(t, want, namespace, caps)
        except Exception as e:  # noqa: BLE001 - the archive is the workload's: any way its parsing fails is theirs
            raise UserError(f"{prefix} left results that cannot be read: {type(e).__name__}: "
                            f"{plain_text(str(e))}") from None
    out = {}
    for name, kind_of in kinds.items():
        if name not in want:
            continue
        out[name] = arrays[name] if kind_of == "array" and name in arrays else type(str(kind_of), (), {})()
    if key is not None:
        if len(_MEMO) >= 256:
            _MEMO.pop(next(iter(_MEMO)))
        _MEMO[key] = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in out.items()}
    namespace.update(out)
    return namespace


_MEMO: dict[str, dict[str, Any]] = {}


def _python_env() -> dict[str, str]:
    env = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
    site = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    if site:
        env["PYTHONPATH"] = os.pathsep.join(site)  # numpy, without the user's site or llmulator
    return env


def _read_json(folder: Path) -> dict | None:
    """The child's ``result.json``: a regular file of at most 16 MiB (``sandbox.child_file``), else None."""
    try:
        data = json.loads(sandbox.child_file(folder, "result.json", 16 << 20))
    except (OSError, ValueError, RecursionError):  # (a forged file nested 200,000 deep: RecursionError)
        return None
    return data if isinstance(data, dict) else None


def plain_text(text) -> str:
    """Text from workload code as one plain line for a message: control characters (terminal escapes, a
    newline that would fake a line of our output) shown escaped, and at most 2,000 characters."""
    return escaped(str(text)[:2000])


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""
