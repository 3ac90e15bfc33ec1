"""The one place where Python code from a workload file runs.

A workload carries Python: its NumPy ``reference`` (which computes the expected
outputs) and, optionally, an input ``generator`` (which makes input arrays that
depend on each other). Both run through :func:`run_user_code`, and nothing else
in llmulator executes workload Python, so confining that code -- the
operating-system sandbox of the security issue (#16: a child process with no
network, no writes outside its folder, time and memory limits) -- is a change
to this function alone. Today the code runs in-process, in a fresh namespace,
with NumPy floating-point warnings silenced; it is *not* sandboxed.

Every failure of the user's code (a syntax error, an exception at run time)
becomes a :class:`llmulator.errors.UserError` that names the workload, what
was running (``reference`` / ``input generator``) and the line within that code.
"""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np

from .errors import UserError


def run_user_code(kind: str, workload: str, code: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Execute ``code`` (a workload's ``kind`` -- e.g. ``"reference"`` or ``"input generator"``) in
    ``namespace`` and return that namespace, updated by the code.

    ``namespace`` holds everything the code may use (``np``, sizes, scalars, arrays, ...); the
    caller reads its results back from the returned mapping. Line numbers in error messages are
    lines of ``code`` (1 = its first line). This is the single entry point for running Python
    that comes from a workload file: the sandbox of issue #16 confines it here, for the reference
    and the input generator alike.
    """
    fname = f"<{kind} of workload '{workload}'>"
    try:
        compiled = compile(code, fname, "exec")
    except SyntaxError as e:
        raise UserError(f"{kind} of workload '{workload}' has a syntax error at line {e.lineno}: "
                        f"{e.msg}") from None
    namespace.setdefault("__name__", f"{kind.replace(' ', '_')}_{workload}")
    try:
        with np.errstate(all="ignore"):
            exec(compiled, namespace)
    except Exception as e:  # noqa: BLE001 - any failure of user code becomes a UserError
        line = next((f.lineno for f in reversed(traceback.extract_tb(e.__traceback__))
                     if f.filename == fname), None)
        where = f" at line {line}" if line else ""
        raise UserError(f"{kind} of workload '{workload}' failed{where}: "
                        f"{type(e).__name__}: {e}") from None
    return namespace
