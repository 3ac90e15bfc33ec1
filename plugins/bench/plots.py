"""Predicted-vs-measured scatter and error-CDF figures, one PNG of each per split (matplotlib, Agg backend).

matplotlib is the ``plots`` extra; it is imported here only, when figures are
asked for, and the Agg backend is selected before pyplot loads so the command
runs without a display.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from llmulator.fileio import atomic_write_bytes
from llmulator.results import METRICS, UNITS

from .metrics import ape


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot():
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path: Path) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
    atomic_write_bytes(path, buf.getvalue())


def scatter(outcomes, split: str, path: Path) -> Path:
    """Log-log predicted vs measured per metric, one colour per estimator, with the y = x line."""
    plt = _pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(9, 8))
    for ax, m in zip(axes.flat, METRICS, strict=True):
        lo, hi = np.inf, -np.inf
        for k, o in enumerate(outcomes):
            x, y = o.measured[m], o.predicted[m]
            keep = o.ok(m) & (x > 0) & (y > 0)  # a log axis cannot show zero or negative values
            if keep.any():
                ax.scatter(x[keep], y[keep], s=10, alpha=0.6, color=f"C{k}",
                           label=f"{o.estimator} (n={o.n_metric(m)})")
                lo, hi = min(lo, x[keep].min(), y[keep].min()), max(hi, x[keep].max(), y[keep].max())
        if np.isfinite(lo):
            ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_title(m)
        ax.set_xlabel(f"measured (hlsim) [{UNITS[m]}]")
        ax.set_ylabel(f"predicted [{UNITS[m]}]")
        ax.grid(True, which="both", alpha=0.2)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(f"predicted vs measured, split {split}")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return path


def error_cdf(outcomes, split: str, path: Path) -> Path:
    """Fraction of designs with APE at most x, per metric, one line per estimator (log x axis)."""
    plt = _pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(9, 8))
    for ax, m in zip(axes.flat, METRICS, strict=True):
        for k, o in enumerate(outcomes):
            keep = o.ok(m)
            e = np.sort(ape(o.predicted[m][keep], o.measured[m][keep]))
            if e.size:
                frac = np.arange(1, e.size + 1) / e.size
                ax.step(np.maximum(e, 1e-2), frac, where="post", color=f"C{k}",
                        label=f"{o.estimator} (n={e.size})")
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_title(m)
        ax.set_xlabel("absolute percentage error [%]")
        ax.set_ylabel("fraction of designs")
        ax.grid(True, which="both", alpha=0.2)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(f"error CDF, split {split} (APE under 0.01 % drawn at 0.01 %)")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return path
