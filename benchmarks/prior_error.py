"""Where the analytical prior misses hlsim's cycles on a synthesized dataset, by split and by the kind of
control that depends on the input.

Run:  .venv/bin/python benchmarks/prior_error.py --data data/synth-v3 [--workers 2] [--out docs/prior-error.md]

Every row's prior is the current analytical model's estimate, read from the dataset's prompt cache
(``prompts-analytical.jsonl``, built here if it is missing or stale, as ``llmulator train llm`` builds it).
A row's kind is its first of: ``while`` (a while loop), ``data-bounded loop`` (a for loop whose bounds read
array data), ``branch`` (a branch, the only such control), ``indirect`` (indirect accesses only),
``static``. Columns: rows, the prior's cycles MAPE on them, the share of rows off by more than 5 %, and the
kind's share of the split's summed error: what is left for a learned correction to fix.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from _report import md_table, write_report  # noqa: E402

KINDS = ("while", "data-bounded loop", "branch", "indirect", "static")


def kind_of(r: dict) -> str:
    if r["while_loops"]:
        return "while"
    if r["data_dependent_loops"]:
        return "data-bounded loop"
    if r["branches"]:
        return "branch"
    if r["indirect_accesses"]:
        return "indirect"
    return "static"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "docs/prior-error.md"))
    args = ap.parse_args()
    from llmulator_plugins.analytical.estimator import VERSION
    from llmulator_plugins.llm.train import load_rows, prompt_records

    t0 = time.perf_counter()
    rows = load_rows(args.data)
    recs = prompt_records(rows, "analytical", Path(args.data) / "prompts-analytical.jsonl", progress=True,
                          workers=args.workers)
    errs: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        prior = (recs.get(r["sample_id"]) or {}).get("prior")
        if not prior or not prior.get("cycles"):
            continue
        errs.setdefault((r["split"], kind_of(r)), []).append(abs(prior["cycles"] - float(r["cycles"]))
                                                            / float(r["cycles"]) * 100)
    lines = []
    for split in ("train", "val", "test_app", "test_hw", "test_input"):
        total = sum(sum(v) for (s, _), v in errs.items() if s == split) or 1.0
        n_all = sum(len(v) for (s, _), v in errs.items() if s == split)
        every = [e for (s, _), v in errs.items() if s == split for e in v]
        lines.append([split, "all", n_all, f"{np.mean(every):.2f}" if every else "-",
                      f"{100 * np.mean(np.array(every) > 5):.1f}" if every else "-", "100"])
        for kind in KINDS:
            v = errs.get((split, kind), [])
            if v:
                lines.append(["", kind, len(v), f"{np.mean(v):.2f}", f"{100 * np.mean(np.array(v) > 5):.1f}",
                              f"{100 * sum(v) / total:.0f}"])
    table = md_table(["split", "control", "rows", "prior cycles MAPE %", "rows off > 5 %", "share of error %"],
                     lines)
    body = (f"Analytical model {VERSION} against the hlsim labels of `{args.data}` ({len(rows)} rows), "
            f"{time.perf_counter() - t0:.0f} s.\n\n{table}")
    write_report(Path(args.out), "Where the analytical prior misses", "python benchmarks/prior_error.py "
                 f"--data {args.data}", body)


if __name__ == "__main__":
    main()
