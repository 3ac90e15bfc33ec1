"""Leave-one-family-out and learning curves for the learned estimators (docs/learning-curve.md).

``lofo``: for each application family F, train a model without F (``--holdout-family F``) and measure it
on every row of F (split ``test_family``), next to the analytical prior on the same rows (the prior
each prompt carries, from the dataset's prompt cache) and next to the same kind of model trained on
every family (its ``test_app`` figure is the in-distribution reference).

``curve``: train the same model on seeded subsets of the training rows (``--max-train-rows``) at a
fixed budget (epochs for the baselines, steps for the llm) and measure it on the held-out splits:
error against data size; ``--llm-arch`` sizes give error against parameters.

Every figure is the training run's own final evaluation on all rows of the split (baselines) or on
up to ``--eval-limit`` rows of it (llm), cycles MAPE; each section names the command that made it.
The llm runs also write every evaluated row's prediction (``predictions.jsonl``), scored here for median,
P90, Kendall tau and the share of rows where the model beats or loses to its analytical prior. ``--jobs N``
runs N trainings at once (``--device cuda``: several small models share one lent GPU).

    .venv/bin/python benchmarks/generalisation_curves.py lofo --data data/synth-v2 --kinds tensetmlp,gnn --epochs 8
    .venv/bin/python benchmarks/generalisation_curves.py curve --data data/synth-v2 --kinds tensetmlp \\
        --sizes 500,2000,8000,0 --epochs 8
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "learning-curve.md"


def _rows(data: str):
    from llmulator_plugins.baselines.data import load_rows
    return load_rows(data)


def prior_mape(data: str, rows: list[dict[str, Any]], split: str, holdout_family: str | None) -> tuple[float, int]:
    """(cycles MAPE of the analytical prior on a split's rows: the prior each prompt carries, NaN where the prompt
    cache holds no prior of the current analytical model; the split's rows). Before 2026-12-06 the count was of
    the rows with a prior, so a stale cache made every family read 0 rows."""
    from llmulator.dataset import split_of
    from llmulator.scoring import ape
    priors = _priors(data)
    in_split = [r for r in rows if split_of(r, holdout_family) == split]
    errs = [float(ape(priors[r["sample_id"]], r["cycles"])) for r in in_split if r["sample_id"] in priors]
    return (float(np.mean(errs)) if errs else math.nan), len(in_split)


def train_baseline(kind: str, data: str, out: Path, epochs: int, holdout_family: str | None = None,
                   max_train_rows: int | None = None, workers: int = 1) -> dict[str, Any]:
    from llmulator_plugins.baselines.train import train
    state = train(kind, data, out, epochs=epochs, threads=1, progress=False, holdout_family=holdout_family,
                  max_train_rows=max_train_rows, workers=workers)
    cfg = json.loads((out / "config.json").read_text())
    return {"final": state["final"], "train_rows": cfg["trained"].get("train_rows"),
            "seconds": round(state["seconds"], 1)}


def train_llm(data: str, out: Path, steps: int, init: str | None, holdout_family: str | None = None,
              max_train_rows: int | None = None, eval_limit: int = 128, arch: dict | None = None,
              pretrain_steps: int = 0, device: str = "cpu", batch: int = 8, time_limit: float | None = None,
              seed: int = 0, target: str = "absolute") -> dict[str, Any]:
    from llmulator_plugins.llm.train import train
    t0 = time.perf_counter()
    state = train(data, out, pretrain_steps=pretrain_steps, steps=steps, batch=batch,
                  threads=1 if device == "cpu" else 2, init=init, holdout_family=holdout_family,
                  max_train_rows=max_train_rows, eval_limit=eval_limit, progress=False, arch=arch, device=device,
                  time_limit=time_limit, seed=seed, eval_each_epoch=False, target=target)
    meta = json.loads((out / "llmulator.json").read_text())
    final = {k: v for k, v in state["evals"][-1].items() if isinstance(v, dict)}
    return {"final": final, "train_rows": meta.get("train_rows"), "seconds": round(time.perf_counter() - t0, 1),
            "steps": state["step"], "scores": score_predictions(data, out, holdout_family)}


TIE = 0.1  # APE points: closer than this to the prior's error is a tie (the prompt's prior has 3 digits)


def score_predictions(data: str, out: Path, holdout_family: str | None) -> dict[str, dict[str, float]]:
    """Cycles scores per split from a run's ``predictions.jsonl``: n, MAPE, median, P90, Kendall tau, and
    against the analytical prior on the same rows its MAPE and the % of rows the model beats / ties."""
    from llmulator.scoring import ape, kendall_tau, summarise
    priors = _priors(data)
    truth = {r["sample_id"]: float(r["cycles"]) for r in _rows(data)}
    by_split: dict[str, list[tuple[float, float, float]]] = {}
    f = out / "predictions.jsonl"
    for line in (f.read_text().splitlines() if f.is_file() else []):
        rec = json.loads(line)
        if rec["id"] in truth and rec["id"] in priors:
            by_split.setdefault(rec["split"], []).append(
                (float(rec["metrics"]["cycles"]), priors[rec["id"]], truth[rec["id"]]))
    res = {}
    for split, trip in by_split.items():
        pred, prior, t = (np.array(v) for v in zip(*trip, strict=True))
        e, q = ape(pred, t), ape(prior, t)
        res[split] = {"n": len(t), **summarise(e), "tau": kendall_tau(pred, t), "prior_mape": float(q.mean()),
                      "beats": float(100 * (e < q - TIE).mean()), "worse": float(100 * (e > q + TIE).mean())}
    return res


def _priors(data: str) -> dict[str, float]:
    """Analytical cycles by sample id from the dataset's prompt cache (only lines the current analytical
    model wrote: a cache of an older one holds a superseded prior)."""
    from llmulator_plugins.analytical.estimator import VERSION
    cache = Path(data) / "prompts-analytical.jsonl"
    priors = {}
    for line in (cache.read_text().splitlines() if cache.is_file() else []):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("prior") and rec.get("static") == VERSION:
            priors[rec["id"]] = float(rec["prior"]["cycles"])
    return priors


def ensure_prompts(args) -> None:
    """Build the dataset's prompt cache once, before parallel llm runs would each append to it."""
    if "llm" in args.kinds.split(","):
        from llmulator_plugins.llm.train import load_rows, prompt_records
        prompt_records(load_rows(args.data), "analytical", Path(args.data) / "prompts-analytical.jsonl",
                       progress=True, workers=args.workers)


def run_jobs(jobs: list[tuple], n: int) -> list[dict[str, Any]]:
    """Each job is ``(function, kwargs)``; with ``n`` > 1 they run in that many spawned processes (one GPU
    is shared by several small models better than it is used by one)."""
    if n <= 1:
        return [fn(**kw) for fn, kw in jobs]
    import multiprocessing

    from llmulator.pools import worker_pool  # (Ctrl-C cancels the trainings not started)
    with worker_pool(n, mp_context=multiprocessing.get_context("spawn")) as ex:
        futs = [ex.submit(fn, **kw) for fn, kw in jobs]
        return [f.result() for f in futs]


def llm_kwargs(args) -> dict[str, Any]:
    return {"steps": args.llm_steps, "init": args.llm_init, "eval_limit": args.eval_limit,
            "pretrain_steps": 0 if args.llm_init else args.llm_pretrain, "device": args.device,
            "batch": args.llm_batch, "time_limit": args.llm_time_limit, "data": args.data,
            "target": args.llm_target}


def llm_detail_rows(label: str, res: dict[str, Any], split: str) -> str:
    sc = res.get("scores", {}).get(split)
    if not sc:
        return f"| {label} | 0 | - | - | - | - | - | - | - |"
    return (f"| {label} | {sc['n']} | {_f(sc['mape'])} | {_f(sc['median'])} | {_f(sc['p90'])} | {sc['tau']:.3f} | "
            f"{_f(sc['prior_mape'])} | {_f(sc['beats'])} | {_f(sc['worse'])} |")


LLM_DETAIL_HEAD = ["| llm run | rows | MAPE | median | P90 | Kendall tau | prior MAPE | beats prior % | worse % |",
                   "|---|---|---|---|---|---|---|---|---|"]


def _mape(res: dict[str, Any], split: str) -> float:
    return float(res["final"].get(split, {}).get("mape.cycles", math.nan))


def _f(v: float) -> str:
    return "-" if not np.isfinite(v) else f"{v:.1f}"


def _job(kind: str, args, out: Path, **kw) -> tuple:
    if kind == "llm":
        return train_llm, {**llm_kwargs(args), "out": out, **kw}
    return train_baseline, {"kind": kind, "data": args.data, "out": out, "epochs": args.epochs,
                            "workers": args.workers, **kw}


def cmd_lofo(args) -> str:
    from llmulator.dataset import FAMILIES, family_of
    rows = _rows(args.data)
    present = sorted({family_of(r) for r in rows} & set(FAMILIES))
    families = [f for f in (args.families.split(",") if args.families else present) if f]
    kinds = [k for k in args.kinds.split(",") if k]
    work = Path(args.work or tempfile.mkdtemp(prefix="llmulator-lofo-"))
    lines = [f"Generated by `{shlex.join(['.venv/bin/python', 'benchmarks/generalisation_curves.py', *sys.argv[1:]])}`"
             f" on {time.strftime('%Y-%m-%d')}; do not edit by hand.", "",
             "Each cell: cycles MAPE (%) on every row of the family (llm: the first `--eval-limit` rows), by a model "
             "trained without that family (`--holdout-family`), and by the analytical prior on every row. "
             "`in-dist.` is the same kind trained on all families, on its own `test_app` split (unseen applications "
             "of seen families).", "",
             "| family | rows | analytical prior | " + " | ".join(f"{k} without it" for k in kinds) + " |",
             "|---|---|---|" + "---|" * len(kinds)]
    keys = [(k, None) for k in kinds] + [(k, fam) for fam in families for k in kinds]
    jobs = [_job(k, args, work / f"{k}-{fam or 'all'}", **({"holdout_family": fam} if fam else {}))
            for k, fam in keys]
    done = dict(zip(keys, run_jobs(jobs, args.jobs), strict=True))
    for fam in families:
        pm, n = prior_mape(args.data, rows, "test_family", fam)
        cells = [_f(_mape(done[(k, fam)], "test_family")) for k in kinds]
        lines.append(f"| {fam} | {n} | {_f(pm)} | " + " | ".join(cells) + " |")
    pm, n = prior_mape(args.data, rows, "test_app", None)
    lines.append(f"| in-dist. (test_app) | {n} | {_f(pm)} | " + " | ".join(_f(_mape(done[(k, None)], "test_app"))
                                                                         for k in kinds) + " |")
    if "llm" in kinds:
        lines += ["", f"The llm runs in detail (cycles; up to {args.eval_limit} rows of each family; "
                  f"beats/worse: APE more than {TIE} points below/above the prior's on the same row):", "",
                  *LLM_DETAIL_HEAD]
        lines += [llm_detail_rows(f"without {fam}", done[("llm", fam)], "test_family") for fam in families]
        lines.append(llm_detail_rows("all families, test_app", done[("llm", None)], "test_app"))
    return "\n".join(lines) + "\n"


def cmd_curve(args) -> str:
    rows = _rows(args.data)
    kinds = [k for k in args.kinds.split(",") if k]
    sizes = [int(s) for s in args.sizes.split(",")]
    work = Path(args.work or tempfile.mkdtemp(prefix="llmulator-curve-"))
    splits = ("val", "test_app", "test_hw", "test_input")
    llm_budget = (f"{args.llm_time_limit:g} s of fine-tuning on {args.device} (at most {args.llm_steps} steps of "
                  f"{args.llm_batch})" if args.llm_time_limit else f"{args.llm_steps} fine-tuning steps")
    parts = ([f"{args.epochs} epochs (baselines)"] if any(k != "llm" for k in kinds) else []) + \
        ([f"{llm_budget} (llm)"] if "llm" in kinds else [])
    budget = ", ".join(parts)
    lines = [f"Generated by `{shlex.join(['.venv/bin/python', 'benchmarks/generalisation_curves.py', *sys.argv[1:]])}`"
             f" on {time.strftime('%Y-%m-%d')}; do not edit by hand.", "",
             f"Cycles MAPE (%) per held-out split against the number of training rows, at a fixed budget of "
             f"{budget}; `0` is every training row. Analytical prior on the same splits for reference: " +
             ", ".join(f"{s} {_f(prior_mape(args.data, rows, s, None)[0])}" for s in splits) + ".", "",
             "| model | parameters | training rows | " + " | ".join(splits) + " | steps | seconds |",
             "|---|---|---|" + "---|" * len(splits) + "---|---|"]
    archs = [None] + [json.loads(a) for a in args.llm_arch]
    keys = [(k, arch, n) for k in kinds for arch in (archs if k == "llm" else [None]) for n in sizes]
    outs = [work / f"{k}-{n}-{i}" for i, (k, _, n) in enumerate(keys)]
    jobs = []
    for (k, arch, n), out in zip(keys, outs, strict=True):
        kw = {"max_train_rows": n or None}
        if k == "llm" and arch is not None:  # another size: its own trunk, pretrained from scratch
            kw.update(arch=arch, init=None, pretrain_steps=args.llm_pretrain)
        jobs.append(_job(k, args, out, **kw))
    detail = []
    for (k, arch, _), out, res in zip(keys, outs, run_jobs(jobs, args.jobs), strict=True):
        label = f"{k}{'' if arch is None else ' ' + json.dumps(arch)}"
        lines.append(f"| {label} | {_params(out, k)} | {res['train_rows']} | " +
                     " | ".join(_f(_mape(res, s)) for s in splits) + f" | {res.get('steps', '-')} | {res['seconds']} |")
        if k == "llm":
            detail.append(llm_detail_rows(f"{label}, {res['train_rows']} rows", res, "test_app"))
    if detail:
        lines += ["", f"The llm runs on test_app in detail (cycles; up to {args.eval_limit} rows):", "",
                  *LLM_DETAIL_HEAD, *detail]
    return "\n".join(lines) + "\n"


def _params(out: Path, kind: str) -> str:
    from safetensors import safe_open
    f = out / "model.safetensors"
    if not f.is_file():
        return "-"
    n = 0
    with safe_open(str(f), "np") as t:
        for key in t.keys():  # noqa: SIM118 - safe_open has keys(), not iteration
            n += int(np.prod(t.get_slice(key).get_shape()))
    return f"{n / 1e6:.2f} M" if n >= 1e5 else f"{n / 1e3:.0f} k"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("lofo", "curve"):
        p = sub.add_parser(name)
        p.add_argument("--data", required=True)
        p.add_argument("--kinds", default="tensetmlp", help="comma list of gnn, tlp, tensetmlp, llm")
        p.add_argument("--epochs", type=int, default=8, help="baseline epochs per run")
        p.add_argument("--llm-steps", type=int, default=300, help="llm fine-tuning steps per run")
        p.add_argument("--llm-init", help="llm runs fine-tune from this checkpoint (e.g. models/llm-v3/pretrained); "
                            "default: each run pretrains a trunk of its own on its own training prompts, so a "
                            "held-out family's code is never read")
        p.add_argument("--eval-limit", type=int, default=128, help="llm: held-out rows evaluated per split")
        p.add_argument("--workers", type=int, default=1, help="featurisation processes (baselines)")
        p.add_argument("--jobs", type=int, default=1, help="runs at once, each in its own process (default 1)")
        p.add_argument("--device", default="cpu", help="llm runs: torch device (cuda: a lent GPU)")
        p.add_argument("--llm-batch", type=int, default=8, help="llm prompts per step (default 8)")
        p.add_argument("--llm-target", choices=["absolute", "ratio"], default="absolute",
                       help="llm: what the digits are (train llm --target)")
        p.add_argument("--llm-time-limit", type=float, metavar="SECONDS",
                       help="llm: fine-tune for this long (the schedule follows time; --llm-steps caps it)")
        p.add_argument("--llm-pretrain", type=int, default=200,
                       help="llm runs without --llm-init (and other sizes): pretraining steps of their own trunk")
        p.add_argument("--work", help="folder for the runs' checkpoints (default: a new temporary folder)")
        p.add_argument("--out", default=str(OUT), help="Markdown file; only this command's section is rewritten")
        if name == "lofo":
            p.add_argument("--families", help="comma list (default: every family in the dataset)")
        else:
            p.add_argument("--sizes", default="500,2000,8000,0", help="training-row counts (0: all)")
            p.add_argument("--llm-arch", action="append", default=[], metavar="JSON",
                           help='an llm size to add, e.g. \'{"hidden_size": 96, "num_hidden_layers": 2}\' '
                                "(pretrained from scratch for --llm-pretrain steps)")
    args = ap.parse_args(argv)
    ensure_prompts(args)
    text = cmd_lofo(args) if args.cmd == "lofo" else cmd_curve(args)
    print(text)
    from llmulator.fileio import update_section
    title = ("Leave-one-family-out" if args.cmd == "lofo" else "Learning curve: error against training rows")
    update_section(args.out, args.cmd, f"## {title}\n\n{text}", title="Generalisation: families and learning curves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
