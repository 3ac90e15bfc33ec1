"""Benchmark of the hlsim profiler: a new design (compile included) and a cached rerun.

Run:  .venv/bin/python benchmarks/bench_hlsim.py
Writes docs/benchmarks-hlsim.md (atomically) and prints the same table.

For each case: 'new' = first profile of the design with an empty binary cache
(instrument + gcc + schedule + run + functional check); 'cached' = profile of
the same structure on a hardware variant with other timing constants (operator
and memory latencies changed), which reuses the binary: best of 5.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import attrs
from llmulator.design import load_design
from llmulator.inputs import inputs_for
from llmulator_plugins.hlsim.profiler import HlsimProfiler
from llmulator_plugins.hlsim.runner import compiler

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from _report import md_table, write_report  # noqa: E402

CASES = [
    ("GEMM 64^3 on systolic-16x16 (gemm-ws-16x16)", "systolic-16x16", "gemm", "gemm-ws-16x16", None),
    ("SpMV CSR 128x128, 2048 nnz, skewed rows (hls-fpga)", "hls-fpga", "spmv-csr", "spmv-csr-hls-fpga", "skewed"),
]


def slower(arch):
    """The same architecture with every latency one cycle longer (new timing constants, same binary)."""
    ops = {k: attrs.evolve(v, latency_cycles=v.latency_cycles + 1) for k, v in arch.operators.items()}
    mem = tuple(attrs.evolve(m, latency_cycles=m.latency_cycles + 1) for m in arch.memory)
    return attrs.evolve(arch, operators=ops, memory=mem, name=arch.name + "-slow")


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        os.environ["LLMULATOR_CACHE"] = cache
        for title, a, w, m, variant in CASES:
            d = load_design(ROOT / f"arch_specs/{a}.yaml", ROOT / f"workloads/{w}.yaml", ROOT / f"mappings/{m}.yaml")
            inp = inputs_for(d, None, variant)
            prof = HlsimProfiler()
            t0 = time.perf_counter()
            p_new = prof.profile(d, inp)
            new = time.perf_counter() - t0
            assert p_new.counters["compiled"] == 1 and p_new.functional_check == "pass"
            d2 = attrs.evolve(d, arch=slower(d.arch))
            best = float("inf")
            for _ in range(5):
                prof2 = HlsimProfiler()  # a fresh profiler: nothing cached in memory, only the binary on disk
                t0 = time.perf_counter()
                p2 = prof2.profile(d2, inp)
                best = min(best, time.perf_counter() - t0)
                assert p2.counters["compiled"] == 0
            rows.append((title, f"{new * 1e3:.0f} ms", f"{best * 1e3:.1f} ms",
                         f"{p_new.metrics['cycles']:,.0f} -> {p2.metrics['cycles']:,.0f}"))
    table = md_table(["design", "new design (compile included)", "cached rerun, other timing constants", "cycles"],
                     rows)
    write_report(ROOT / "docs" / "benchmarks-hlsim.md", "hlsim benchmarks",
                 ".venv/bin/python benchmarks/bench_hlsim.py",
                 "Targets (issue 3): under 1 s for a new design, under 50 ms for a cached rerun.\n\n" + table,
                 extra=f"Compiler: {compiler()[1]}.")


if __name__ == "__main__":
    main()
