"""Benchmark of the rtl profiler: wall seconds per phase of `llmulator profile --profiler rtl`.

Run:  nice -n 10 .venv/bin/python benchmarks/bench_rtl.py [--sizes 2,4,8,16] [--preset mini]
          [--sims icarus,verilator] [--synth 2,4,8,16] [--synth-designs gemm-ws] [--rows FILE]
      .venv/bin/python benchmarks/bench_rtl.py --from-rows FILE      # only rewrite the document

Every measurement is one `llmulator profile ARCH WORKLOAD MAPPING --profiler rtl --json` process on
the NxN versions of the library's systolic-16x16 that benchmarks/rtl_crosscheck.py uses (GEMM and
conv2d, ws/is/os), first with an empty cache (uncached: generate, build, simulate, and with
--synth Yosys and OpenSTA), then again (cached). The phases come from the profile's counters
(generate_seconds, sim_build_seconds, sim_run_seconds, yosys_seconds, sta_seconds). Verilator
compiles with ccache into a fresh ccache folder that holds only the Verilator runtime (built once
at the start and timed: what a machine pays once), so every design's own C++ is compiled, as for a
design never seen before. Rows accumulate in --rows (default bench-results/rtl-rows.json), keyed by
design and simulator, so parts can run separately; docs/benchmarks-rtl.md is written from all rows.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from llmulator_plugins.rtl import simulators

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from _report import md_table, write_report  # noqa: E402
from rtl_crosscheck import ARCH, MAPS  # noqa: E402

CLI = str(ROOT / ".venv" / "bin" / "llmulator")
OUT = ROOT / "docs" / "benchmarks-rtl.md"
COMMAND = "nice -n 10 .venv/bin/python benchmarks/bench_rtl.py"
#: the runs whose rows the document holds (rows accumulate in --rows)
RUNS = (f"{COMMAND} --sizes 2,4,8,16; {COMMAND} --sizes 16 --preset small; "
        f"{COMMAND} --sizes '' --synth 16,8,4,2 --sims icarus")


def files(folder: Path, n: int, work: str, df: str) -> tuple[Path, Path]:
    a = folder / f"arch-{n}.yaml"
    a.write_text(ARCH.format(n=n, nn=n * n))
    loops, order, place = MAPS[(work, df)]
    m = folder / f"map-{work}-{df}-{n}.yaml"
    m.write_text(f"mapping:\n  version: 1\n  name: {work}-{df}-{n}\n  workload: {work}\n  loops:\n    "
                 f"{loops.format(n=n, k=min(n, 4))}\n  order: {order}\n  placement: {place}\n")
    return a, m


def profile(a: Path, work: str, m: Path, preset: str, env: dict[str, str]) -> tuple[float, float, dict]:
    """(wall s, CPU s of the process and every tool it ran, the profile)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([CLI, "profile", str(a), work, str(m), "--preset", preset, "--profiler", "rtl", "--json",
                        "--time-limit", "3600", "--mem-limit", "8192"], capture_output=True, text=True,
                       env={**os.environ, **env})
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if r.returncode not in (0, 4):
        raise Failed(f"llmulator profile failed (status {r.returncode}) after {wall:.0f} s wall, {cpu:.0f} CPU-s: "
                     + " ".join(r.stderr.split())[:400], wall, cpu)
    return wall, cpu, json.loads(r.stdout)["profile"]


class Failed(Exception):
    """A profile that failed: its message, wall and CPU seconds."""


def prime_ccache(ccache: Path, timeout: float = 1800.0) -> dict[str, float]:
    """Build a trivial design with and without --trace: the Verilator runtime's objects into ccache."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "tb.v").write_text("module tb; reg clk = 0; always #5 clk = ~clk; initial begin #20 $finish; end\n"
                                "endmodule\n")
        (t / "design.v").write_text("module unused; endmodule\n")
        os.environ["CCACHE_DIR"] = str(ccache)
        for trace in (False, True):
            _exe, s, _hit = simulators.verilator_program(t / "tb.v", t / "design.v", t, timeout, trace=trace)
            out["trace" if trace else "plain"] = s
    return out


def measure(n: int, work: str, df: str, preset: str, sim: str, synth: bool, ccache: Path) -> dict:
    t = Path(tempfile.mkdtemp(prefix="bench-rtl-"))      # kept (with its logs) when the profile fails
    a, m = files(t, n, work, df)
    env = {"LLMULATOR_CACHE": str(t / "cache"), "LLMULATOR_RTL_SIM": sim, "CCACHE_DIR": str(ccache),
           "LLMULATOR_RTL_SYNTH": "1" if synth else "0"}
    try:
        wall, cpu, p = profile(a, work, m, preset, env)
    except Failed as e:
        row = {"n": n, "work": work, "df": df, "preset": preset, "sim": sim, "synth": synth, "failed": e.args[0],
               "wall": e.args[1], "cpu": e.args[2], "load": os.getloadavg()[0], "kept": str(t)}
        print(json.dumps(row), flush=True)
        return row
    vcds = list((t / "cache" / "rtl").glob("sim-*/act.vcd"))
    vcd_mb = vcds[0].stat().st_size / 2**20 if vcds else 0.0
    wall2, _cpu2, p2 = profile(a, work, m, preset, env)
    shutil.rmtree(t, ignore_errors=True)
    c, b = p["counters"], p["breakdown"]
    ran = "verilator" if c.get("simulator.verilator") else "icarus"
    row = {"n": n, "work": work, "df": df, "preset": preset, "sim": ran, "synth": synth, "wall": wall, "cpu": cpu,
           "cached_wall": wall2, "cycles": p["metrics"]["cycles"], "check": p["functional_check"],
           "generate": c.get("generate_seconds", 0.0), "build": c.get("sim_build_seconds", 0.0),
           "simulate": c.get("sim_run_seconds", 0.0), "yosys": c.get("yosys_seconds", 0.0),
           "sta": c.get("sta_seconds", 0.0), "vcd_mb": vcd_mb,
           "area_um2": b.get("area_um2.logic"), "fmax_mhz": b.get("fmax_mhz"),
           "cached_again": p2["counters"].get("cached_simulation", 0.0), "load": os.getloadavg()[0]}
    print(json.dumps(row), flush=True)
    return row


def key(r: dict) -> str:
    return f"{r['preset']}/{r['n']}/{r['work']}/{r['df']}/{r['sim']}/{'syn' if r['synth'] else 'sim'}"


def document(rows: list[dict], prime: dict, out: Path) -> None:
    sims = sorted((r for r in rows if not r["synth"]), key=lambda r: (r["preset"] != "mini", r["n"], r["work"],
                                                                        r["df"], r["sim"]))
    t1 = md_table(["preset", "array", "design", "simulator", "cycles", "generate", "build", "simulate",
                   "uncached wall", "uncached CPU", "cached wall", "check"],
                  [(r["preset"], f"{r['n']}x{r['n']}", f"{r['work']} {r['df']}", r["sim"], f"{r['cycles']:,.0f}",
                    f"{r['generate']:.2f}", f"{r['build']:.1f}", f"{r['simulate']:.2f}", f"{r['wall']:.1f}",
                    f"{r['cpu']:.1f}", f"{r['cached_wall']:.1f}", r["check"]) for r in sims])
    failed = [r for r in rows if "failed" in r]
    rows = [r for r in rows if "failed" not in r]
    syn = sorted((r for r in rows if r["synth"]), key=lambda r: (r["n"], r["work"], r["df"]))
    t2 = md_table(["preset", "array", "design", "simulator", "generate", "build", "simulate (+ VCD window)",
                   "VCD MB", "Yosys", "OpenSTA timing + power", "uncached wall", "uncached CPU", "cached wall",
                   "logic area um2",
                   "fmax MHz"],
                  [(r["preset"], f"{r['n']}x{r['n']}", f"{r['work']} {r['df']}", r["sim"], f"{r['generate']:.2f}",
                    f"{r['build']:.1f}", f"{r['simulate']:.2f}", f"{r['vcd_mb']:.1f}", f"{r['yosys']:.0f}",
                    f"{r['sta']:.0f}", f"{r['wall']:.0f}", f"{r['cpu']:.0f}", f"{r['cached_wall']:.1f}",
                    f"{r['area_um2']:,.0f}" if r["area_um2"] else "-",
                    f"{r['fmax_mhz']:.0f}" if r["fmax_mhz"] else "-") for r in syn]) if syn else "(not run)"
    loads = [r["load"] for r in rows + failed]
    fails = "".join(f"\n- {r['n']}x{r['n']} {r['work']} {r['df']} ({r['preset']}, "
                    f"{'synthesis' if r['synth'] else 'simulation'}): {r['failed']}" for r in failed)
    body = (
        "Wall seconds of `llmulator profile ARCH WORKLOAD MAPPING --profiler rtl` (one process per run) on "
        "the NxN versions of systolic-16x16 that [rtl-crosscheck.md](rtl-crosscheck.md) uses (128-bit GLB, "
        "4 banks, 2 ports, latency 2), GEMM and conv2d at the given preset. **uncached**: an empty "
        "`LLMULATOR_CACHE`; **cached**: the same command again (simulation and synthesis results come from "
        "the cache; what remains is Python start-up, the design's generation and the functional check). "
        "Phases from the profile's counters: **generate** (plan, layout, Verilog text), **build** (Icarus: "
        "`iverilog`; Verilator: verilate + C++ at -O0 + link), **simulate** (running it; with synthesis also "
        "the activity window's VCD), **Yosys** (hierarchical synthesis and the flattened netlist), **OpenSTA** "
        "(timing on the flat netlist, then report_power per child of the top with the VCD's activity).\n\n"
        f"Verilator's runtime (verilated.cpp, timing, threads), compiled once per machine into ccache and "
        f"then reused by every design: {prime.get('plain', 0):.1f} s wall, {prime.get('trace', 0):.1f} s more with "
        "`--trace` (the VCD support that synthesis runs need). The build column is each design's own C++ "
        "(a ccache miss: a design never built before); rebuilding a design whose C++ ccache has seen takes "
        "about 1-2 s, and a design whose program is in `LLMULATOR_CACHE` builds nothing.\n\n"
        "**uncached CPU**: user + system seconds of the profile process and every tool it ran (what the "
        "run costs on an idle core, whatever the load).\n\n"
        f"Load average during the runs: {min(loads):.1f}-{max(loads):.1f} on 2 cores (other jobs ran too; "
        "`nice -n 10`), so the seconds are upper bounds for an idle machine.\n\n"
        "## Simulation\n\n" + t1 + "\n\n## Simulation + synthesis (`LLMULATOR_RTL_SYNTH=1`)\n\n" + t2 + "\n"
        + ("\n## Runs that failed\n" + fails + "\n" if failed else ""))
    write_report(out, "rtl profiler benchmarks", RUNS, body)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2,4,8,16", help="array sizes simulated ('' for none)")
    ap.add_argument("--preset", default="mini")
    ap.add_argument("--works", default="gemm,conv2d")
    ap.add_argument("--dataflows", default="ws,is,os")
    ap.add_argument("--sims", default="icarus,verilator")
    ap.add_argument("--synth", default="", help="array sizes also synthesised (LLMULATOR_RTL_SYNTH=1)")
    ap.add_argument("--synth-designs", default="gemm-ws", help="WORK-DF,... synthesised")
    ap.add_argument("--synth-sim", default="auto", help="the simulator of the synthesis runs")
    ap.add_argument("--rows", default=str(ROOT / "bench-results" / "rtl-rows.json"))
    ap.add_argument("--from-rows", help="only rewrite the document from these rows")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    path = Path(args.from_rows or args.rows)
    saved = json.loads(path.read_text()) if path.is_file() else {"rows": {}, "prime": {}}
    if not args.from_rows:
        ints = [int(x) for x in args.sizes.split(",") if x]
        with tempfile.TemporaryDirectory(prefix="bench-rtl-ccache-") as cc:
            ccache = Path(cc)
            if "verilator" in args.sims or args.synth_sim != "icarus":
                saved["prime"] = prime_ccache(ccache)
                print("verilator runtime:", saved["prime"], flush=True)
            jobs = [(n, w, d, s, False) for n in ints for w in args.works.split(",") for d in args.dataflows.split(",")
                    for s in args.sims.split(",")]
            jobs += [(int(n), *wd.split("-"), args.synth_sim, True) for n in args.synth.split(",") if n
                     for wd in args.synth_designs.split(",")]
            for n, w, d, s, syn in jobs:
                r = measure(n, w, d, args.preset, s, syn, ccache)
                saved["rows"][key(r)] = r
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(saved, indent=1))
    document(list(saved["rows"].values()), saved["prime"], Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
