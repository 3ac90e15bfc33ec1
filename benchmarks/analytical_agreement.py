"""Agreement of the analytical estimator with the hlsim ground truth over the whole library.

Run:  .venv/bin/python benchmarks/analytical_agreement.py [--out docs/analytical-agreement.md] [--only NAME]
                                                        [--data data/synth-v1]
Writes the report atomically and prints the same tables. With ``--data``, also every static row of a
synthesized dataset (generated kernels the library does not hold) against the hlsim label stored with it.

For every library mapping (default inputs) it profiles the design with hlsim and estimates it with the
analytical model, and reports per design the cycles and energy ratio (analytical / hlsim) and the
distribution. A design is *static* when no loop trip count or branch outcome depends on the input data
(its hints are then not needed); for static designs the two models price the same program and should
agree closely. For every input-dependent workload with input variants, it checks that the analytical
estimate moves in the same direction as hlsim between each variant and the default inputs.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from llmulator import library
from llmulator.design import load_design as _load
from llmulator.inputs import inputs_for, variants
from llmulator_plugins.analytical.estimator import AnalyticalEstimator
from llmulator_plugins.hlsim.profiler import HlsimProfiler
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from _report import md_table, write_report  # noqa: E402


def load_design(arch: str, work: str, mapping: str, variant: str | None = None):
    return _load(library.resolve("architecture", arch), library.resolve("workload", work),
                 library.resolve("mapping", mapping), variant=variant)


def is_static(d) -> bool:
    """No data-dependent loop or branch: the analytical model needs no hint for this design."""
    return d.tree.input_independent()


def designs(only: str | None):
    for e in library.entries("mapping"):
        if only and only not in e["name"]:
            continue
        if "workload" not in e or "architecture" not in e:
            continue
        yield e["name"], e["architecture"], e["workload"]


def fmt(x: float) -> str:
    return f"{x:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "docs/analytical-agreement.md"))
    ap.add_argument("--only", default=None, help="only mappings whose name contains this")
    ap.add_argument("--data", default=None, help="also check the static rows of this `llmulator synth` dataset")
    args = ap.parse_args()
    warnings.simplefilter("error", RuntimeWarning)  # a numpy warning reaching the user is a defect
    est, prof = AnalyticalEstimator(), HlsimProfiler()
    rows, var_rows = [], []
    for name, arch, work in tqdm(list(designs(args.only)), desc="library designs", unit="design"):
        d = load_design(arch, work, name)
        p = prof.profile(d, inputs_for(d))
        e = est.estimate([d])[0]
        rc = e.metrics["cycles"] / p.metrics["cycles"]
        re = e.metrics["energy_pj"] / p.metrics["energy_pj"]
        ra = e.metrics["area_um2"] / p.metrics["area_um2"]
        rows.append({"design": name, "arch": arch, "static": is_static(d), "hlsim": p.metrics["cycles"],
                     "analytical": e.metrics["cycles"], "rc": rc, "re": re, "ra": ra})
        for v in variants(d.workload):
            dv = load_design(arch, work, name, variant=v)
            pv = prof.profile(dv, inputs_for(dv, None, v))
            ev = est.estimate([dv])[0]
            mh = pv.metrics["cycles"] / p.metrics["cycles"]
            ma = ev.metrics["cycles"] / e.metrics["cycles"]
            same = (abs(mh - 1) < 0.02 and abs(ma - 1) < 0.02) or (mh - 1) * (ma - 1) > 0
            var_rows.append({"design": name, "variant": v, "mh": mh, "ma": ma, "same": same,
                             "rc": ev.metrics["cycles"] / pv.metrics["cycles"]})
    static = [r for r in rows if r["static"]]

    def dist(rs, key):
        a = np.array([r[key] for r in rs])
        err = np.abs(a - 1)
        return [len(rs), fmt(float(np.median(a))), fmt(float(np.percentile(a, 10))),
                fmt(float(np.percentile(a, 90))), f"{(err <= 0.05).sum()}", f"{(err <= 0.15).sum()}",
                fmt(float(a.min())), fmt(float(a.max()))]

    summary = md_table(["designs", "metric", "n", "median", "P10", "P90", "within 5 %", "within 15 %", "min", "max"],
                       [["static", "cycles", *dist(static, "rc")], ["static", "energy", *dist(static, "re")],
                        ["static", "area", *dist(static, "ra")], ["all", "cycles", *dist(rows, "rc")],
                        ["all", "energy", *dist(rows, "re")], ["all", "area", *dist(rows, "ra")]])
    per = md_table(["design", "arch", "static", "hlsim cycles", "analytical cycles", "cycles ratio",
                    "energy ratio"],
                   [[r["design"], r["arch"], "yes" if r["static"] else "no", f"{r['hlsim']:,.0f}",
                     f"{r['analytical']:,.0f}", fmt(r["rc"]), fmt(r["re"])]
                    for r in sorted(rows, key=lambda r: -abs(np.log(r["rc"])))])
    same = sum(r["same"] for r in var_rows)
    var = md_table(["design", "variant", "hlsim variant/default", "analytical variant/default", "same direction",
                    "cycles ratio"],
                   [[r["design"], r["variant"], fmt(r["mh"]), fmt(r["ma"]), "yes" if r["same"] else "NO",
                     fmt(r["rc"])] for r in var_rows])
    body = (f"## Distribution of analytical / hlsim\n\n{summary}\n\n"
            f"## Input variants: does the estimate move with the measurement?\n\n"
            f"{same} of {len(var_rows)} variant/default pairs move in the same direction (both within 2 % "
            f"counts as the same).\n\n{var}\n\n## Per design (worst first)\n\n{per}")
    if args.data:
        body += "\n\n" + dataset_section(est, args.data)
    cmd = "python benchmarks/analytical_agreement.py" + (f" --only {args.only}" if args.only else "") + (
        f" --data {args.data}" if args.data else "")
    write_report(Path(args.out), "Analytical model vs hlsim over the library", cmd, body)


def dataset_section(est, data: str) -> str:
    """Every static row of a synthesized dataset: the analytical estimate against the stored label."""
    from llmulator.dataset import Rejected, design_of_row, read_records, split_of

    rows = read_records(data)
    per: dict[str, list] = {}
    worst = []
    refused = 0  # rows whose design today's checks refuse (e.g. a pipelined loop around a while loop)
    for r in tqdm(rows, desc="dataset rows", unit="row"):
        try:
            d = design_of_row(r)
        except Rejected:
            refused += 1
            continue
        if not is_static(d):
            continue
        e = est.estimate([d])[0]
        q = {m: e.metrics[m] / r[m] for m in ("cycles", "energy_pj", "area_um2")}
        per.setdefault(f"stage {r['stage']}", []).append(q)
        per.setdefault(split_of(r), []).append(q)
        worst.append((max(abs(v - 1) for v in q.values()), r["sample_id"], d.name))
    table = md_table(["rows", "static rows", "cycles within 1 %", "energy within 1 %", "area within 1 %"],
                     [[k, len(v), *(sum(abs(x[m] - 1) <= 0.01 for x in v) for m in ("cycles", "energy_pj", "area_um2"))]
                      for k, v in sorted(per.items())])
    top = max(worst, default=(0.0, "-", "-"))
    return (f"## Static rows of the dataset `{data}` (label = hlsim)\n\n{len(worst)} of {len(rows)} rows have no "
            f"data-dependent loop or branch (stage 1 holds generated programs that are in no library file)"
            + (f"; {refused} rows are designs today's checks refuse (a loop pipelined or unrolled around a loop "
               "whose trips only the run knows) and are left out" if refused else "") + ".\n\n"
            f"{table}\n\nLargest relative difference in any metric: {top[0]:.2e} ({top[1]}).")


if __name__ == "__main__":
    main()
