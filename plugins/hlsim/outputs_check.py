"""The functional check: a design's outputs against the workload's NumPy reference, run on the same inputs.

Integers must be equal; floats close (relative 1e-3, 1e-2 for fp16, and an absolute floor of 1e-5 of the
largest *finite* reference value). Non-finite values match only themselves: before, one ``inf`` in an input
made the floor infinite and any output passed (an outside probe passed a wrong GELU that way).
"""

from __future__ import annotations

import numpy as np
from llmulator.inputs import run_reference


def functional_check(d, arrays: dict[str, np.ndarray], outs: dict[str, np.ndarray]) -> str:
    """``pass``, ``fail: <the worst element of each output that differs>``, or ``not-run: <why>``."""
    if not d.workload.reference:
        return "not-run: the workload has no reference"
    ref = run_reference(d.workload, arrays, d.sizes)
    bad = []
    for name, got in outs.items():
        want = ref[name]
        if np.issubdtype(want.dtype, np.integer):
            wrong = got != want
        else:
            g, w = got.astype(np.float64), want.astype(np.float64)
            scale = float(np.max(np.abs(w), where=np.isfinite(w), initial=1.0))
            rtol = 1e-2 if want.dtype == np.float16 else 1e-3
            wrong = ~np.isclose(g, w, rtol=rtol, atol=1e-5 * scale, equal_nan=True)
        if np.any(wrong):
            with np.errstate(invalid="ignore", over="ignore"):
                diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            # the largest difference among the elements that differ (an inf against itself is nan, and matches)
            diff = np.where(wrong, np.nan_to_num(diff, nan=np.inf), -1.0)
            idx = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.size else ()
            where = "".join(f"[{int(i)}]" for i in idx)
            bad.append(f"{name}{where}: got {_plain(got[idx])}, reference {_plain(want[idx])}")
    return "pass" if not bad else "fail: " + "; ".join(bad)


def _plain(v) -> str:
    """A value as a person writes it (``-38``, ``0.125``), not as NumPy reprs it (``np.int32(-38)``)."""
    v = v.item() if hasattr(v, "item") else v
    return f"{v:.6g}" if isinstance(v, float) else str(v)
