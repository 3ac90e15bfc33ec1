"""Calibrate an llm checkpoint's 90 % interval on val, and measure its coverage on the held-out splits.

Run:  .venv/bin/python benchmarks/llm_interval.py --data data/synth-v3 [--model plugins/llm/default_model]
          [--write] [--out docs/llm-interval.md]

On the rows the model answers (its prior is not the answer, ``residual.prior_answer``) of val, test_app,
test_hw and test_input, the checkpoint's predictions are made once (``train.predict``, the estimator's own
decoding, from the dataset's prompt cache); val's give the factors of ``plugins/llm/interval.py`` (split
conformal: the 5th and 95th percentiles of label / prediction), and every split reports the coverage and
the median width of the digits' interval and of the calibrated one. ``--write`` stores the factors in the
checkpoint's ``llmulator.json`` (``interval``), where the estimator reads them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from _report import md_table, write_report  # noqa: E402

SPLITS = ("val", "test_app", "test_hw", "test_input")


def model_rows(data: str) -> dict[str, list[tuple]]:
    """Per split, the ``train.examples`` tuples of the rows the model answers."""
    from llmulator_plugins.llm.train import examples, load_rows, prompt_records
    rows = load_rows(data)
    recs = prompt_records(rows, "analytical", Path(data) / "prompts-analytical.jsonl", progress=True, workers=2)
    prompts = {k: v["prompt"] for k, v in recs.items()}
    priors = {k: v["prior"] for k, v in recs.items()}
    answers = {k: v["answer"] for k, v in recs.items()}
    return {s: [c for c in examples([r for r in rows if r["split"] == s], prompts, priors, "ratio", answers)
                if not c[4]] for s in SPLITS}


def predictions(path: Path, items: list[tuple]) -> list[dict]:
    """The checkpoint's predictions with its digits' interval (any stored calibration left out)."""
    from llmulator_plugins.llm.estimator import LLMEstimator
    from llmulator_plugins.llm.interval import predict_items
    est = LLMEstimator(path)
    model, tok = est.load()
    return predict_items(model, tok, items, {k: v for k, v in est.meta.items() if k != "interval"})


def coverage(preds: list[dict], items: list[tuple], metric: str) -> tuple[float, float]:
    """(share of labels inside the interval, median width relative to the prediction)."""
    inside, width = [], []
    for p, c in zip(preds, items, strict=True):
        lo, hi = p["interval"][metric]
        v, t = p["metrics"][metric], c[2][metric]
        inside.append(lo <= t <= hi)
        width.append((hi - lo) / v if v else np.nan)
    return float(np.mean(inside)), float(np.nanmedian(width))


def main(argv: list[str] | None = None) -> int:
    from llmulator.fileio import atomic_write_json
    from llmulator_plugins.llm.interval import apply, calibrate
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--model", default=str(ROOT / "plugins" / "llm" / "default_model"))
    ap.add_argument("--write", action="store_true", help="store val's factors in the checkpoint")
    ap.add_argument("--out", default=str(ROOT / "docs" / "llm-interval.md"))
    a = ap.parse_args(argv)
    items = model_rows(a.data)
    preds = {s: predictions(Path(a.model), items[s]) for s in SPLITS}
    cal = calibrate(preds["val"], [c[2] for c in items["val"]])
    rows = []
    for s in SPLITS:
        calibrated = [apply(p, cal) for p in preds[s]]
        for m in ("cycles", "energy_pj"):
            if not items[s]:
                rows.append([s, m, 0, "-", "-", "-", "-"])
                continue
            c0, w0 = coverage(preds[s], items[s], m)
            c1, w1 = coverage(calibrated, items[s], m)
            rows.append([s, m, len(items[s]), f"{100 * c0:.1f}", f"{100 * w0:.1f}", f"{100 * c1:.1f}",
                         f"{100 * w1:.1f}"])
    factors = ", ".join(f"{m} [{lo:.4f}, {hi:.4f}]" for m, (lo, hi) in cal["factors"].items())
    body = (f"Checkpoint `{Path(a.model).name}`; the rows each split's model answers (the rest get the prior "
            f"with its own interval). Factors from val ({cal['rows']} rows): {factors}.\n\n"
            + md_table(["split", "metric", "rows", "digits: coverage %", "digits: median width %",
                        "calibrated: coverage %", "calibrated: median width %"], rows)
            + "\n\nval is where the factors were measured, so its coverage is ~90 % by construction; the test "
              "splits are the check. Width: (high - low) / prediction.")
    command = "python benchmarks/llm_interval.py " + " ".join(argv if argv is not None else sys.argv[1:])
    write_report(Path(a.out), "The llm's 90 % interval: digits vs calibrated on val", command, body)
    if a.write:
        import json
        meta_path = Path(a.model) / "llmulator.json"
        meta = json.loads(meta_path.read_text())
        meta["interval"] = cal
        atomic_write_json(meta_path, meta)
        print(f"wrote the factors into {meta_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
