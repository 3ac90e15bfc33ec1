"""The Pareto front of evaluated points (all objectives minimised) and its plot.

A point is on the front when no other valid point is at least as good in
every objective and strictly better in one. Points are swept in lexicographic
order of the objectives, so a point can only be dominated by one seen before
it; each is compared with the current front (small in practice).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

OBJECTIVES = ("cycles", "energy_pj", "area_um2")


def front(values: np.ndarray) -> np.ndarray:
    """Indices of the non-dominated rows of ``values`` (N, M); rows with a non-finite value never qualify."""
    values = np.asarray(values, dtype=float)
    ok = np.nonzero(np.isfinite(values).all(axis=1))[0]
    if ok.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = ok[np.lexsort(values[ok].T[::-1])]
    kept: list[int] = []
    kept_vals = np.zeros((0, values.shape[1]))
    for i in order:
        v = values[i]
        if kept_vals.shape[0]:
            dom = (kept_vals <= v).all(axis=1) & (kept_vals < v).any(axis=1)
            same = (kept_vals == v).all(axis=1)
            if dom.any() or same.any():
                continue
        kept.append(int(i))
        kept_vals = np.vstack([kept_vals, v])
    return np.array(sorted(kept), dtype=np.int64)


def plot(path: str | Path, res: dict[str, np.ndarray], front_idx: np.ndarray, verified: dict[int, dict],
         title: str) -> None:
    """Cycles vs energy of every valid point (colour = area), the front ringed, hlsim-measured designs marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from llmulator.fileio import atomic_write_bytes

    valid = res["valid"]
    fig, ax = plt.subplots(figsize=(7.5, 5.2), dpi=120)
    sc = ax.scatter(res["cycles"][valid], res["energy_pj"][valid], c=res["area_um2"][valid], s=6, cmap="viridis",
                    alpha=0.5, linewidths=0, label="evaluated (predicted)")
    fig.colorbar(sc, ax=ax, label="area (um^2)")
    if front_idx.size:
        ax.scatter(res["cycles"][front_idx], res["energy_pj"][front_idx], s=40, facecolors="none",
                   edgecolors="red", linewidths=1.2, label="Pareto front (cycles, energy, area)")
    meas = [(v["measured"]["cycles"], v["measured"]["energy_pj"]) for v in verified.values()
            if v.get("measured")]
    if meas:
        m = np.array(meas)
        ax.scatter(m[:, 0], m[:, 1], marker="x", s=50, c="black", label="hlsim-measured (verified)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("cycles")
    ax.set_ylabel("energy (pJ)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())
