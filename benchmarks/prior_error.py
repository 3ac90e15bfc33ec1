"""Where the analytical prior misses hlsim's cycles on a synthesized dataset, by split and by the kind of
control that depends on the input.

Run:  .venv/bin/python benchmarks/prior_error.py --data data/synth-v3 [--workers 2] [--out docs/prior-error.md]
          [--own-draw 150]

Every row's prior is the current analytical model's estimate, read from the dataset's prompt cache
(``prompts-analytical.jsonl``, built here if it is missing or stale, as ``llmulator train llm`` builds it).
A row's kind is its first of: ``while`` (a while loop), ``data-bounded loop`` (a for loop whose bounds read
array data), ``branch`` (a branch, the only such control), ``indirect`` (indirect accesses only),
``static``. Columns: rows, the prior's cycles MAPE on them, the share of rows off by more than 5 %, and the
kind's share of the split's summed error: what is left for a learned correction to fix.

``--own-draw N``: on up to N rows per test split whose input-dependent control the prior prices from the
declared inputs (the prompt cache's ``answer`` is ``drawn``) and which have no data-dependent branch, the
prior again with ``llmulator.input_trips`` drawing the row's own input (its ``input_seed``, one draw) instead
of fresh ones: if that count equals hlsim's, what the prior misses on such rows is the draw, which no model
of the design can know.
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
    ap.add_argument("--own-draw", type=int, default=0, help="rows per test split priced on their own draw")
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
    cmd = f"python benchmarks/prior_error.py --data {args.data}"
    if args.own_draw:
        body += "\n\n" + own_draw(rows, recs, args.own_draw)
        cmd += f" --own-draw {args.own_draw}"
    write_report(Path(args.out), "Where the analytical prior misses", cmd, body)


def own_draw(rows: list[dict], recs: dict, per_split: int) -> str:
    """The prior of rows it prices from declared inputs, with fresh draws and with the row's own (module
    docstring)."""
    import random

    import llmulator.input_trips as it
    from llmulator.dataset import design_of_row
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    est = AnalyticalEstimator()
    fresh = (it.SEED0, it.MAX_DRAWS, it.MIN_LANES)
    lines = []
    for split in ("test_app", "test_hw", "test_input"):
        pick = [r for r in rows if r["split"] == split and (recs.get(r["sample_id"]) or {}).get("answer") == "drawn"
                and not r["branches"]]
        random.Random(0).shuffle(pick)
        errs: list[tuple[float, float]] = []
        for r in pick[:per_split]:
            y = float(r["cycles"])
            prior = recs[r["sample_id"]]["prior"]["cycles"]
            it.SEED0, it.MAX_DRAWS, it.MIN_LANES = int(r["input_seed"]), 1, 1
            it._CACHE.clear()
            try:
                own = est.estimate([design_of_row(r)])[0].metrics["cycles"]
            finally:
                it.SEED0, it.MAX_DRAWS, it.MIN_LANES = fresh
                it._CACHE.clear()
            errs.append((abs(prior - y) / y * 100, abs(own - y) / y * 100))
        if errs:
            e = np.array(errs)
            lines.append([split, len(e), f"{e[:, 0].mean():.2f}", f"{e[:, 1].mean():.3f}", f"{e[:, 1].max():.3f}",
                          int((e[:, 1] < 0.1).sum())])
    table = md_table(["split", "rows", "prior (fresh draws) MAPE %", "own draw MAPE %", "own draw max APE %",
                      "own draw within 0.1 %"], lines)
    return ("## What the prior misses where it prices the control from declared inputs\n\n"
            f"Up to {per_split} rows per test split whose prompt-cache answer is `drawn`, without data-dependent "
            "branches (whose shares are probabilities, not draws): the prior as the estimator computes it (fresh "
            "draws of the declared inputs), and the same count with the row's own input drawn instead.\n\n" + table)


if __name__ == "__main__":
    main()
