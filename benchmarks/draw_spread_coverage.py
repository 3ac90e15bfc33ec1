"""How often a `drawn` design's label falls inside the llm's 90 % interval: the fixed ±6 % against its own draws.

A design whose input-dependent control the analytical model prices from draws of the declared inputs gets the
prior as the llm's answer (``residual.prior_answer`` "drawn"); its interval was ±6 % (val's spread of one
draw) until llm 0.7, and is since ``residual.draw_spread`` (1.645 x the coefficient of variation of the loops'
per-draw trips, at least ±6 %). This samples such rows of each split, rebuilds their designs, and prints the
coverage of either interval against the stored hlsim label, the median half-width and the share widened.

    .venv/bin/python benchmarks/draw_spread_coverage.py --data data/synth-v3 [--rows 120] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import statistics
import warnings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="data/synth-v3")
    ap.add_argument("--rows", type=int, default=120, help="drawn rows per split")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--splits", default="val,test_app,test_input")
    args = ap.parse_args()
    from llmulator.dataset import Rejected, design_of_row
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    from llmulator_plugins.llm import residual
    from llmulator_plugins.llm.train import load_rows
    warnings.simplefilter("ignore")
    rows = load_rows(args.data)
    rng = random.Random(args.seed)
    an = AnalyticalEstimator()
    print("| split | drawn rows | coverage, ±6 % | coverage, own draws | median half-width | widened |")
    print("|---|---|---|---|---|---|")
    for split in args.splits.split(","):
        cand = [r for r in rows if r["split"] == split]
        rng.shuffle(cand)
        got = []
        for r in cand:
            if len(got) >= args.rows:
                break
            try:
                d = design_of_row(r)
            except Rejected:
                continue
            if residual.prior_answer(d) != "drawn":
                continue
            prior = an.estimate([d])[0].metrics["cycles"]
            got.append((residual.draw_spread(d), abs(r["cycles"] / prior - 1)))
        if not got:
            continue
        fixed = residual.PRIOR_SPREAD["drawn"]
        print(f"| {split} | {len(got)} | {sum(e <= fixed for _, e in got) / len(got):.3f} | "
              f"{sum(e <= s for s, e in got) / len(got):.3f} | {statistics.median(s for s, _ in got):.3f} | "
              f"{sum(s > fixed + 1e-4 for s, _ in got) / len(got):.2f} |")


if __name__ == "__main__":
    main()
