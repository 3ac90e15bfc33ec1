"""Does an llm checkpoint beat the analytical prior it reads? Per split, on the same rows, through the estimator.

Run:  .venv/bin/python benchmarks/llm_vs_prior.py --data data/synth-v3 \\
          --model shipped=plugins/llm/default_model --model ratio=models/gpu-ratio-s0,models/gpu-ratio-s1 \\
          [--per-split 300] [--seed 1] [--out docs/llm-vs-prior.md]

Each ``--model NAME=PATH[,PATH...]`` is one configuration; several paths are its seeds, reported as the
mean and spread over them. Every row is priced by ``LLMEstimator`` exactly as ``llmulator estimate`` prices a
design (its guards, and the prior itself where the prior is the answer, ``residual.copies_prior``) and by the
analytical model (the prior the prompt carries). Columns, cycles: MAPE of the llm and of the prior on the same
rows; the rows the llm beats / loses to the prior by more than 0.1 APE points; the same on the rows the model
answers (input-dependent control that rests on hints: where the prior can miss by more than a draw's noise and
a correction can be learned at all). The dataset's
prompt cache supplies the prior (``prompts-analytical.jsonl``, written by ``train llm``).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from _report import md_table, write_report  # noqa: E402
from generalisation_curves import _priors as priors_of  # noqa: E402 - the prompt cache's current priors

TIE = 0.1  # APE points: closer than this to the prior's error is a tie
SPLITS = ("val", "test_app", "test_hw", "test_input")


def draw(data: str, split: str, n: int, seed: int, priors: dict[str, float]):
    """``n`` rows of the split that have a prior, drawn with ``seed``, and their designs."""
    from llmulator.dataset import Rejected, design_of_row
    from llmulator_plugins.llm.train import load_rows
    rows = [r for r in load_rows(data) if r["split"] == split and r["sample_id"] in priors]
    random.Random(seed).shuffle(rows)
    picked, designs = [], []
    for r in rows:
        if len(picked) == n:
            break
        try:
            designs.append(design_of_row(r))
        except Rejected:
            continue
        picked.append(r)
    return picked, designs


def score(pred: np.ndarray, prior: np.ndarray, truth: np.ndarray, dependent: np.ndarray) -> dict[str, float]:
    e, q = 100 * np.abs(pred - truth) / truth, 100 * np.abs(prior - truth) / truth
    return {"mape": e.mean(), "prior": q.mean(), "beats": int((e < q - TIE).sum()), "worse": int((e > q + TIE).sum()),
            "dep_n": int(dependent.sum()), "dep_mape": e[dependent].mean() if dependent.any() else np.nan,
            "dep_prior": q[dependent].mean() if dependent.any() else np.nan,
            "dep_beats": int((e < q - TIE)[dependent].sum()), "dep_worse": int((e > q + TIE)[dependent].sum())}


def cell(vals: list[float], digits: int = 2) -> str:
    if len(vals) == 1:
        return f"{vals[0]:.{digits}f}"
    return f"{np.mean(vals):.{digits}f} ± {np.std(vals):.{digits}f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--model", action="append", required=True, metavar="NAME=PATH[,PATH...]")
    ap.add_argument("--per-split", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1, help="seed of the per-split draw")
    ap.add_argument("--splits", default=",".join(SPLITS))
    ap.add_argument("--out", default=str(ROOT / "docs/llm-vs-prior.md"))
    args = ap.parse_args()
    from llmulator_plugins.llm.estimator import LLMEstimator
    from tqdm import tqdm

    configs = {}
    for spec in args.model:
        name, _, paths = spec.partition("=")
        configs[name] = [p for p in paths.split(",") if p]
    priors = priors_of(args.data)
    lines = []
    t0 = time.perf_counter()
    for split in args.splits.split(","):
        rows, designs = draw(args.data, split, args.per_split, args.seed, priors)
        truth = np.array([float(r["cycles"]) for r in rows])
        prior = np.array([priors[r["sample_id"]] for r in rows])
        from llmulator_plugins.llm.residual import prior_answer
        dependent = np.array([prior_answer(d) is None for d in designs])
        for name, paths in configs.items():
            got = []
            for path in tqdm(paths, desc=f"{split} {name}", unit="seed"):
                est = LLMEstimator(path)
                pred = np.array([e.metrics["cycles"] for e in est.estimate(designs)])
                got.append(score(pred, prior, truth, dependent))
            lines.append([split, name, len(paths), len(rows), cell([g["mape"] for g in got]), f"{got[0]['prior']:.2f}",
                          cell([g["beats"] for g in got], 1), cell([g["worse"] for g in got], 1), got[0]["dep_n"],
                          cell([g["dep_mape"] for g in got]), f"{got[0]['dep_prior']:.2f}",
                          cell([g["dep_beats"] for g in got], 1), cell([g["dep_worse"] for g in got], 1)])
    table = md_table(["split", "llm", "seeds", "rows", "llm MAPE", "prior MAPE", "beats", "worse",
                      "model's rows", "llm MAPE there", "prior MAPE there", "beats there", "worse there"], lines)
    cmd = "python benchmarks/llm_vs_prior.py " + " ".join(
        [f"--data {args.data}", *(f"--model {s}" for s in args.model), f"--per-split {args.per_split}",
         f"--seed {args.seed}", f"--splits {args.splits}"])
    from llmulator_plugins.analytical.estimator import VERSION
    body = (f"Cycles, {args.per_split} rows per split drawn with seed {args.seed}, each priced by the llm estimator "
            f"(as `llmulator estimate` prices it) and by the analytical prior (analytical {VERSION}). "
            "beats / worse: rows where the llm's APE "
            f"is more than {TIE} points below / above the prior's. Several seeds: mean ± standard deviation over "
            f"them. {time.perf_counter() - t0:.0f} s.\n\n{table}")
    write_report(Path(args.out), "The llm against its analytical prior", cmd, body)


if __name__ == "__main__":
    main()
