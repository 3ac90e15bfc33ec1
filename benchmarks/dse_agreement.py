"""Analytical vs hlsim on random valid points of each bundled design space (materialised one by one).

Run:  .venv/bin/python benchmarks/dse_agreement.py [--points 25]
Prints, per space, the range of analytical / hlsim cycles over the points; docs/dse.md quotes it.
"""

from __future__ import annotations

import argparse

import numpy as np
from llmulator.errors import SpecError
from llmulator.library import resolve
from llmulator_plugins.analytical.estimator import AnalyticalEstimator
from llmulator_plugins.dse.space import load_space, resolve_space
from llmulator_plugins.hlsim.profiler import HlsimProfiler

SPACES = {"conv2d-medium-systolic": ("systolic-16x16", "conv2d"), "gemm-large-systolic": ("systolic-16x16", "gemm"),
          "gemm-small-systolic": ("systolic-16x16", "gemm")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=25)
    args = ap.parse_args()
    est, prof = AnalyticalEstimator(), HlsimProfiler()
    for name, (arch, work) in SPACES.items():
        space = load_space(resolve_space(name), resolve("architecture", arch), resolve("workload", work))
        rng = np.random.default_rng(0)
        ratios = []
        while len(ratios) < args.points:
            try:
                d = space.materialise(int(rng.integers(space.size)))
            except SpecError:
                continue  # an invalid point (tiles that do not fit, too many PEs)
            ratios.append(est.estimate([d])[0].metrics["cycles"] / prof.profile(d).metrics["cycles"])
        r = np.array(ratios)
        print(f"{name}: {len(r)} points, analytical / hlsim cycles {r.min():.4f}-{r.max():.4f}, "
              f"{int((np.abs(r - 1) <= 0.001).sum())} within 0.1 %")


if __name__ == "__main__":
    main()
