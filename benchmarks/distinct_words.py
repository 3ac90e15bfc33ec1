"""How often hlsim's tile model moves fewer backing-store words than the distinct elements the run touched.

Every element of an ``in``/``inout`` array that a run reads before writing it crosses the backing store at
least once, and every element of an ``out``/``inout`` array it writes goes back at least once; the instrumented
run counts them (``llmulator.element_marks``) and hlsim refuses a profile whose tile model moved fewer words
(``plugins/hlsim/bounds.check_words``). This script profiles the library (every design and input variant), the
outside kernels (tests/outside: own and plain mappings, four architectures, their variants) and a fresh
synthesized sample, and tabulates how many each source has and how many break the bound: the ground-truth
gaps of the tile model still open.

    .venv/bin/python benchmarks/distinct_words.py --synth 300 --out docs/distinct-words.md
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import md_table, write_report  # noqa: E402

TOP = 15  # designs listed in the over-count table
OVER = """
## The most words per element read, among designs with no tiled loop and every array on chip

The other side of the bound, where it can be read: with no tile loop and every array on chip, a nest loads each
array it reads once, so words well above the elements read point at a footprint larger than what the subscripts
name (or at several nests that each load the array: read the design before calling it an error). The {top}
highest of {of}:

"""


def _library() -> list[tuple[str, object, str | None]]:
    from llmulator import library
    from llmulator.design import load_design
    out = []
    for m in library.entries("mapping"):
        if "architecture" not in m or "workload" not in m:
            continue
        d = load_design(library.resolve("architecture", m["architecture"]), library.resolve("workload", m["workload"]),
                        m["path"])
        for v in [None, *sorted(d.workload.inputs.get("variants", {}) if isinstance(d.workload.inputs, dict)
                                else [])]:
            out.append(("library", d, v))
    return out


def _outside() -> list[tuple[str, object, str | None]]:
    from generalisation import designs
    from llmulator.dataset import Rejected, build_design
    out = []
    for it in designs():
        try:
            out.append(("outside", build_design(it["spec"]), it["spec"].variant))
        except Rejected:
            continue
    return out


def _synth(n: int, seed: int) -> list[tuple[str, object, str | None]]:
    from llmulator.dataset import design_of_row, read_records
    from llmulator_plugins.synth import driver
    if n <= 0:
        return []
    with tempfile.TemporaryDirectory() as tmp:
        driver.run([1, 2, 3], n, Path(tmp) / "d", seed=seed, workers=2, progress=False)
        rows = read_records(Path(tmp) / "d")
    return [(f"synth stage {r['stage']}", d, d.variant) for r in rows for d in [design_of_row(r)]]


def measure(items) -> list[dict]:
    from llmulator import plugins
    from llmulator.errors import InvariantError
    from llmulator.inputs import inputs_for
    prof = plugins.get("profilers", "hlsim")
    rows = []
    for source, d, variant in items:
        row = {"source": source, "design": d.name, "variant": variant or ""}
        try:
            p = prof.profile(d, inputs_for(d, "0", variant))
            row.update(read=p.counters.get("distinct_read", 0.0), written=p.counters.get("distinct_written", 0.0),
                       words=p.counters.get(f"reads.{d.arch.memory[0].name}", 0.0),
                       untiled=not any(lm.tile for lm in d.mapping.loops.values())
                       and all(d.placement(a) != d.arch.memory[0].name for a in d.workload.arrays))
        except InvariantError as e:
            row["short"] = str(e).split(": ", 1)[-1][:200]
        except Exception as e:  # noqa: BLE001 - a design hlsim refuses for another reason is counted, not fatal
            row["error"] = f"{type(e).__name__}: {str(e)[:120]}"
        rows.append(row)
    return rows


def report(rows: list[dict], seconds: float) -> str:
    summary = []
    for g in sorted({r["source"] for r in rows}):
        rs = [r for r in rows if r["source"] == g]
        ok = [r for r in rs if "read" in r]
        summary.append([g, len(rs), len(ok), f"{sum(r['read'] for r in ok):,.0f}",
                        f"{sum(r['written'] for r in ok):,.0f}", sum(1 for r in rs if "short" in r),
                        sum(1 for r in rs if "error" in r)])
    broken = [[r["source"], r["design"], r["variant"], r["short"]] for r in rows if "short" in r]
    over, seen = [], set()  # one row per workload and mapping (its architectures and variants read alike)
    for r in sorted((r for r in rows if r.get("untiled") and r.get("read")), key=lambda r: -r["words"] / r["read"]):
        if r["design"].rsplit("/", 1)[0] not in seen:
            seen.add(r["design"].rsplit("/", 1)[0])
            over.append(r)
    top = [[r["source"], r["design"], r["variant"], f"{r['words']:,.0f}", f"{r['read']:,.0f}",
            f"{r['words'] / r['read']:.2f}"] for r in over[:TOP]]
    return (f"{len(rows)} profiles in {seconds:.0f} s. Each run counts the distinct elements it read (of `in`/`inout` "
            "arrays, before writing them) and wrote (of `out`/`inout` arrays); the backing store must have moved at "
            "least that many words, whatever the tiles, reuse and forwarding (`bounds.check_words` refuses a profile "
            "that did not: counted here as breaking the bound).\n\n"
            + md_table(["source", "designs", "profiled", "distinct read", "distinct written", "break the bound",
                        "refused otherwise"], summary)
            + "\n\n## Designs that break the bound\n\n"
            + (md_table(["source", "design", "variant", "what hlsim reported"], broken) if broken else "None.") + "\n"
            + OVER.format(top=TOP, of=len(over))
            + md_table(["source", "design", "variant", "backing-store words read", "distinct read", "ratio"], top)
            + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--synth", type=int, default=300, help="synthesized designs to draw (0: none)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", default="docs/distinct-words.md")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    rows = measure(_library() + _outside() + _synth(args.synth, args.seed))
    cmd = f".venv/bin/python benchmarks/distinct_words.py --synth {args.synth} --seed {args.seed} --out {args.out}"
    write_report(Path(args.out), "Backing-store words against the distinct elements a run touches", cmd,
                 report(rows, time.perf_counter() - t0))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
