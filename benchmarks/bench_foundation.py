"""Benchmark of the foundation: analytical evaluations per second and CLI start-up time.

Run:  .venv/bin/python benchmarks/bench_foundation.py
Writes docs/benchmarks-foundation.md (atomically) and prints the same table.

* batch: 10,000 random mappings of the library GEMM (tiles, spatial binding of
  k/n to PE rows/cols, outer-loop order) on systolic-16x16, evaluated in one
  call of AnalyticalEstimator.evaluate_batch (NumPy), best of 5 repeats;
* scalar: the same model one design at a time through estimate() (200 designs);
* start-up: wall time of `llmulator --help` in a fresh interpreter, best of 5.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import attrs
import numpy as np
from llmulator.design import load_design
from llmulator.specs import LoopMapping
from llmulator_plugins.analytical.estimator import AnalyticalEstimator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from _report import md_table, write_report  # noqa: E402


def random_mappings(rng, n, labels):
    choices = np.array([1, 2, 4, 8, 16, 32, 64])
    tiles = rng.choice(choices, size=(n, len(labels))).astype(float)
    spatial = np.zeros((n, len(labels)), dtype=int)
    spatial[:, labels.index("L_k")] = 1
    spatial[:, labels.index("L_n")] = 2
    tiles[:, labels.index("L_k")] = np.minimum(tiles[:, labels.index("L_k")], 16)
    tiles[:, labels.index("L_n")] = np.minimum(tiles[:, labels.index("L_n")], 16)
    order = np.argsort(rng.random((n, len(labels))), axis=1)
    return tiles, spatial, order


def main() -> None:
    d = load_design(ROOT / "arch_specs/systolic-16x16.yaml", ROOT / "workloads/gemm.yaml",
                    ROOT / "mappings/gemm-ws-16x16.yaml", preset="large")
    est = AnalyticalEstimator()
    labels = est.nest_labels(d)
    rng = np.random.default_rng(0)
    n = 10_000
    tiles, spatial, order = random_mappings(rng, n, labels)
    est.evaluate_batch(d, tiles[:10], spatial[:10], order[:10])  # warm-up
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        out = est.evaluate_batch(d, tiles, spatial, order)
        best = min(best, time.perf_counter() - t0)
    batch_rate = n / best
    valid = int(out["valid"].sum())

    m_scalar = 200
    t0 = time.perf_counter()
    for b in range(m_scalar):
        loops = {lb: LoopMapping(tile=int(tiles[b, i]),
                                 spatial={1: "rows", 2: "cols"}.get(int(spatial[b, i])))
                 for i, lb in enumerate(labels)}
        inv = {int(p): labels[i] for i, p in enumerate(order[b])}
        m = attrs.evolve(d.mapping, loops=loops, order=tuple(inv[p] for p in range(len(labels))))
        est.estimate([attrs.evolve(d, mapping=m)])
    scalar_rate = m_scalar / (time.perf_counter() - t0)

    starts = []
    env = dict(os.environ)
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "llmulator.cli", "--help"], capture_output=True, check=True, env=env)
        starts.append(time.perf_counter() - t0)

    rows = [
        ("analytical, batched (10,000 GEMM-256 mappings, one call)", f"{batch_rate:,.0f} evaluations/s",
         f"{best * 1e3:.1f} ms per 10,000; {valid:,} of them fit the buffers"),
        ("analytical, one design at a time (estimate())", f"{scalar_rate:,.0f} evaluations/s",
         f"{1e3 / scalar_rate:.2f} ms per design"),
        ("`llmulator --help` start-up (fresh interpreter)", f"{min(starts):.3f} s",
         f"best of 5; median {sorted(starts)[2]:.3f} s"),
    ]
    write_report(ROOT / "docs" / "benchmarks-foundation.md", "Foundation benchmarks",
                 ".venv/bin/python benchmarks/bench_foundation.py", md_table(["what", "result", "detail"], rows),
                 extra=f"NumPy {np.__version__}.")


if __name__ == "__main__":
    main()
