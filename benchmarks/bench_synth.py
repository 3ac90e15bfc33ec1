"""Benchmark of the data synthesizer: labelled samples per second on this machine.

Run:  .venv/bin/python benchmarks/bench_synth.py [--n 200] [--workers 2]
Writes docs/benchmarks-synth.md (atomically) and prints the same table.

Each stage is generated on its own into a temporary folder with an empty
binary cache (so every compile is paid), with the given number of local worker
processes; the rate is samples / wall time, labelling (hlsim) included.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from llmulator_plugins.synth import driver

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from _report import md_table, write_report  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    rows = []
    for stage in (1, 2, 3):
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["LLMULATOR_CACHE"] = str(Path(tmp) / "cache")
            t0 = time.perf_counter()
            driver.run([stage], args.n, Path(tmp) / "out", seed=0, workers=args.workers, progress=False)
            dt = time.perf_counter() - t0
            rows.append((stage, args.n, dt, args.n / dt))
    table = md_table(["stage", "samples", "wall s", "samples/s"],
                     [(st, n, f"{dt:.1f}", f"{r:.1f}") for st, n, dt, r in rows])
    write_report(ROOT / "docs" / "benchmarks-synth.md", "Synthesizer benchmarks",
                 f".venv/bin/python benchmarks/bench_synth.py --n {args.n} --workers {args.workers}",
                 "Target (issue 5): at least 20 labelled samples per second for stage 2 on 2 cores.\n\n" + table,
                 extra="Labels by hlsim (compile included: empty binary cache).")


if __name__ == "__main__":
    main()
