"""Accuracy and speed of the estimators on the held-out splits of a synthesized dataset.

Run:  .venv/bin/python benchmarks/eval_estimators.py --data data/synth-v1 --llm models/llm-v1 [--per-split 100]
Writes docs/results.md (atomically) and prints it.

For each held-out split (test_app: unseen applications; test_hw: unseen hardware
configurations; test_input: unseen input distributions) up to ``--per-split``
samples are rebuilt from their stored specs and estimated; the error is against the
sample's hlsim label. Reported per estimator and metric: MAPE, median and P90
absolute percentage error; for the llm estimator also the MAPE of the most and the
least confident quartile (is the confidence informative?) and predictions per second.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from _report import md_table, write_report  # noqa: E402

METRICS = ("cycles", "energy_pj", "power_mw", "area_um2")
SPLITS = ("test_app", "test_hw", "test_input")


def designs_of(rows):
    from llmulator_plugins.synth.sample import Rejected, SampleSpec, build_design
    out = []
    for r in rows:
        spec = SampleSpec(stage=r["stage"], generator=r["generator"],
                          arch=yaml.safe_load(r["architecture_yaml"])["architecture"],
                          workload=yaml.safe_load(r["workload_yaml"])["workload"],
                          mapping=yaml.safe_load(r["mapping_yaml"])["mapping"], preset=r["preset"] or None,
                          variant=r["variant"] or None)
        try:
            out.append((r, build_design(spec)))
        except Rejected:
            continue
    return out


def ape(pred: float, truth: float) -> float:
    return abs(pred - truth) / max(abs(truth), 1e-12) * 100


def summarise(errs: list[float]) -> tuple[str, str, str]:
    a = np.array(errs)
    return f"{a.mean():.1f}", f"{np.median(a):.1f}", f"{np.percentile(a, 90):.1f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data/synth-v1")
    ap.add_argument("--llm", help="LLM checkpoint folder (omit to skip the llm estimator)")
    ap.add_argument("--per-split", type=int, default=100)
    args = ap.parse_args()
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    from llmulator_plugins.synth.card import read_records, split_of
    rows = read_records(args.data)
    estimators = {"analytical": AnalyticalEstimator()}
    if args.llm:
        from llmulator_plugins.llm.estimator import LLMEstimator
        estimators["llm"] = LLMEstimator(args.llm)
    table_rows, conf_rows, speed_rows = [], [], []
    for split in SPLITS:
        chosen = [r for r in rows if split_of(r) == split][: args.per_split]
        pairs = designs_of(chosen)
        for name, est in estimators.items():
            errs: dict[str, list[float]] = {m: [] for m in METRICS}
            confs: dict[str, list[float]] = {m: [] for m in METRICS}
            t0 = time.perf_counter()
            if name == "analytical":
                done = []
                for r, d in pairs:
                    try:
                        done.append((r, est.estimate([d])[0]))
                    except Exception:  # noqa: BLE001 - a design the static model cannot price is counted out
                        continue
            else:
                done = list(zip([r for r, _ in pairs], est.estimate([d for _, d in pairs]), strict=True))
            n_done = len(done)
            for r, e in done:
                for m in METRICS:
                    errs[m].append(ape(e.metrics[m], r[m]))
                    if e.confidence:
                        confs[m].append(e.confidence[m])
            dt = time.perf_counter() - t0
            speed_rows.append((name, split, n_done, f"{n_done / dt:.1f}" if dt > 0 else "-"))
            for m in METRICS:
                if errs[m]:
                    table_rows.append((name, split, m, len(errs[m]), *summarise(errs[m])))
                if confs[m]:
                    c, e_ = np.array(confs[m]), np.array(errs[m])
                    q1, q3 = np.percentile(c, 25), np.percentile(c, 75)
                    top, bottom = e_[c >= q3], e_[c <= q1]
                    conf_rows.append((split, m, f"{top.mean():.1f}", f"{bottom.mean():.1f}",
                                      "yes" if top.mean() < bottom.mean() else "no"))
    body = ("## Accuracy on held-out splits (APE %, against hlsim labels)\n\n"
            + md_table(["estimator", "split", "metric", "n", "MAPE", "median APE", "P90 APE"], table_rows))
    if conf_rows:
        body += ("\n\n## Is the llm confidence informative?\n\nMAPE of the predictions in the most confident "
                 "quartile vs the least confident quartile.\n\n"
                 + md_table(["split", "metric", "top-quartile MAPE", "bottom-quartile MAPE", "top better"], conf_rows))
    body += "\n\n## Speed\n\n" + md_table(["estimator", "split", "predictions", "predictions/s"], speed_rows)
    cmd = (f".venv/bin/python benchmarks/eval_estimators.py --data {args.data}"
           + (f" --llm {args.llm}" if args.llm else "") + f" --per-split {args.per_split}")
    write_report(ROOT / "docs" / "results.md", "Estimator results", cmd, body)


if __name__ == "__main__":
    main()
