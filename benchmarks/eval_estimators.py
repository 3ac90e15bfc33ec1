"""Kept for old instructions: the estimator evaluation is now `llmulator bench` (plugins/bench).

Run:  .venv/bin/python benchmarks/eval_estimators.py --data data/synth-v1 --llm models/llm-v1 [--per-split 100]
is the same as
      llmulator bench --data data/synth-v1 --estimators analytical,llm --model llm=models/llm-v1 --per-split 100
and writes the ``bench`` section of docs/results.md; any other option is passed on to `llmulator bench`.
"""

from __future__ import annotations

import argparse
import sys


def translate(argv: list[str]) -> list[str]:
    """This script's old options -> `llmulator bench` arguments."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="data/synth-v1")
    ap.add_argument("--llm", help="LLM checkpoint folder (omit to run the analytical estimator only)")
    ap.add_argument("--per-split", default="100")
    args, rest = ap.parse_known_args(argv)
    out = ["bench", "--data", args.data, "--per-split", args.per_split]
    if "--estimators" not in rest:
        out += ["--estimators", "analytical,llm" if args.llm else "analytical"]
    if args.llm:
        out += ["--model", f"llm={args.llm}"]
    return out + rest


if __name__ == "__main__":
    from llmulator.cli import main

    sys.exit(main(translate(sys.argv[1:])))
