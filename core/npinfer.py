"""What the learned estimators' NumPy inference shares: weights from safetensors, and BLAS threads.

The shipped models are small (a 1.5 M-parameter Llama, three baselines of ~0.1-0.2 M): importing torch
(1.5-3 s on this project's 2-core machine) costs far more than running them. Their inference is also
written in NumPy (``llmulator_plugins.llm.lean_numpy``, ``llmulator_plugins.baselines.numpy_models``, tested
against the torch forwards); torch stays for training.

* :func:`load_safetensors`: a checkpoint's tensors as NumPy arrays (``safetensors.numpy``, no torch).
* :func:`blas_threads`: NumPy's BLAS (OpenBLAS in the wheels) with the thread count of
  :func:`llmulator.threads.choose` (the idle cores, ``LLMULATOR_THREADS``, or an explicit count) for the
  block, as ``torch_threads`` does for torch: a parallel product waits for all its threads, and on busy cores
  one that is not scheduled stalls every product. Where the BLAS library offers no thread control it does
  nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def load_safetensors(path: str | Path) -> dict[str, Any]:
    """Every tensor of a ``.safetensors`` file as a NumPy array (its own dtype)."""
    from safetensors.numpy import load_file
    return load_file(str(path))


_BLAS: list = []  # [(get, set)] of the loaded OpenBLAS, or [None] when there is none to control


def _blas_controls():
    if _BLAS:
        return _BLAS[0]
    found = None
    try:
        import ctypes

        import numpy  # noqa: F401 - loads the BLAS library
        libs = []
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.rsplit(None, 1)[-1] if "/" in line else ""
                if "openblas" in p.lower() and p not in libs:
                    libs.append(p)
        for p in libs:
            lib = ctypes.CDLL(p)
            for get, set_ in (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
                              ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
                              ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
                              ("openblas_get_num_threads", "openblas_set_num_threads")):
                if hasattr(lib, get) and hasattr(lib, set_):
                    g, s = getattr(lib, get), getattr(lib, set_)
                    g.restype, s.argtypes = ctypes.c_int, [ctypes.c_int]
                    found = (g, s)
                    break
            if found:
                break
    except (OSError, ImportError, AttributeError):  # not Linux, or no OpenBLAS: nothing to control
        found = None
    _BLAS.append(found)
    return found


@contextlib.contextmanager
def blas_threads(threads: int | None = None) -> Iterator[int]:
    """Run the block with the BLAS threads set by :func:`llmulator.threads.choose`; restore them afterwards."""
    from .threads import choose
    n = choose(threads)
    ctl = _blas_controls()
    if ctl is None:
        yield n
        return
    get, set_ = ctl
    before = int(get())
    if n != before:
        set_(n)
    try:
        yield n
    finally:
        if n != before:
            set_(before)
