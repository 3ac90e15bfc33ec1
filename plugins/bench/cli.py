"""`llmulator bench`: accuracy, ranking and speed tables plus figures for the registered estimators.

Writes the ``bench`` section of a shared Markdown report (docs/results.md by
default) with ``llmulator.fileio.update_section``, leaving the sections other
commands own untouched, and one scatter and one error-CDF PNG per split.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from llmulator.errors import UserError

EPILOG = """example:
  llmulator bench --data data/synth-v1 --estimators analytical --per-split 100
  llmulator bench --data data/synth-v1 --model llm=models/llm-v1 --split test_app,test_hw
  llmulator bench --data data/synth-v1 --estimators analytical,llm --seeds 0,1,2
  llmulator bench --data data/synth-v1 --holdout-family stencil --model llm=models/llm-no-stencil
--model NAME=PATH sets LLMULATOR_<NAME>_MODEL for the estimator NAME before it is built."""


def add_command(subparsers) -> None:
    p = subparsers.add_parser("bench", help="accuracy (MAPE, P90, Kendall tau) and speed of estimators on "
                              "held-out splits; writes a Markdown report and PNG figures",
                              formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("--data", required=True, help="dataset folder made by `llmulator synth`")
    p.add_argument("--estimators", help="comma-separated estimator names (default: every registered one that is "
                   "available)")
    p.add_argument("--split", help="comma-separated splits (default: test_app,test_hw,test_input, and "
                   "test_family with --holdout-family)")
    p.add_argument("--holdout-family", metavar="FAMILY",
                   help="leave-one-family-out: every row of this application family forms split test_family "
                        "(and leaves the other splits); evaluate a model trained with the same option")
    p.add_argument("--per-split", type=int, default=100, metavar="N",
                   help="rows drawn at random per split (0: all; default 100)")
    seeds = p.add_mutually_exclusive_group()
    seeds.add_argument("--seed", type=int, default=0, help="seed of the per-split draw (default 0)")
    seeds.add_argument("--seeds", metavar="LIST",
                       help="comma-separated seeds: repeat the draw with each and report the mean and spread of "
                            "MAPE (the other tables are the first seed's)")
    p.add_argument("--model", action="append", default=[], metavar="NAME=PATH",
                   help="checkpoint folder for estimator NAME (repeatable)")
    p.add_argument("--single", type=int, default=20, metavar="K",
                   help="designs timed one per call for the single-query latency (default 20)")
    p.add_argument("--out", default="docs/results.md", help="Markdown report; only its bench section is "
                   "rewritten (default docs/results.md)")
    p.add_argument("--figures", default="docs/figures", help="folder for the PNG figures (default docs/figures)")
    p.add_argument("--no-figures", action="store_true", help="skip the figures (no matplotlib needed)")
    p.add_argument("--section", default="bench", metavar="KEY",
                   help="which section of --out to write, and the figures' name prefix (default bench; e.g. "
                        "ablation for the LLM output-head ablation)")
    p.add_argument("--title", help="heading of the section (default: the bench heading)")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=run_command)


def _csv(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def parse_models(items: list[str], known: list[str]) -> dict[str, str]:
    out = {}
    for it in items:
        name, sep, path = it.partition("=")
        name, path = name.strip(), path.strip()
        if not sep or not name or not path:
            raise UserError(f"--model {it!r}: expected NAME=PATH, e.g. --model llm=models/llm-v1")
        if name not in known:
            raise UserError(f"--model {it!r}: unknown estimator '{name}' (registered: {', '.join(known) or 'none'})")
        if not Path(path).exists():
            raise UserError(f"--model {it!r}: no such file or folder {path}")
        out[name] = path
    return out


def command_line(args) -> str:
    """The command that reproduces this report, as the user gave its options."""
    parts = ["llmulator", "bench", "--data", args.data]
    if args.estimators:
        parts += ["--estimators", args.estimators]
    if args.split:
        parts += ["--split", args.split]
    if args.holdout_family:
        parts += ["--holdout-family", args.holdout_family]
    parts += ["--per-split", str(args.per_split)]
    if args.seeds:
        parts += ["--seeds", args.seeds]
    elif args.seed:
        parts += ["--seed", str(args.seed)]
    for m in args.model:
        parts += ["--model", m]
    if args.single != 20:
        parts += ["--single", str(args.single)]
    if args.out != "docs/results.md":
        parts += ["--out", args.out]
    if args.no_figures:
        parts.append("--no-figures")
    elif args.figures != "docs/figures":
        parts += ["--figures", args.figures]
    if args.section != "bench":
        parts += ["--section", args.section]
    if args.title:
        parts += ["--title", args.title]
    return shlex.join(parts)


def run_command(args) -> int:
    from llmulator import plugins
    from llmulator.fileio import update_section
    from llmulator_plugins.synth.splits import SPLITS, TEST_SPLITS

    from . import data, report, run

    if not args.section.replace("-", "").replace("_", "").isalnum():
        raise UserError(f"--section {args.section!r}: use letters, digits, '-' or '_'")
    known = plugins.names("estimators")
    family = args.holdout_family.strip() if args.holdout_family else None
    if args.holdout_family is not None and not family:
        raise UserError("--holdout-family: give an application family")
    if args.split is None:
        splits = list(TEST_SPLITS) + (["test_family"] if family else [])
    else:
        splits = list(dict.fromkeys(_csv(args.split)))
    bad = [s for s in splits if s not in SPLITS]
    if not splits or bad:
        raise UserError(f"--split {args.split!r}: unknown split {', '.join(bad) or '(none given)'} "
                        f"(expected some of {', '.join(SPLITS)})")
    if "test_family" in splits and not family:
        raise UserError("--split test_family needs --holdout-family FAMILY (the family it holds out)")
    seeds = [args.seed]
    if args.seeds is not None:
        try:
            seeds = list(dict.fromkeys(int(x) for x in _csv(args.seeds)))
        except ValueError:
            seeds = []
        if not seeds:
            raise UserError(f"--seeds {args.seeds!r}: expected comma-separated integers, e.g. --seeds 0,1,2")
    requested = _csv(args.estimators) if args.estimators else list(known)
    unknown = [e for e in requested if e not in known]
    if not requested or unknown:
        raise UserError(f"--estimators {args.estimators!r}: unknown estimator {', '.join(unknown) or '(none)'} "
                        f"(registered: {', '.join(known) or 'none'}; see `llmulator plugins`)")
    if args.per_split < 0 or args.single < 0:
        raise UserError("--per-split and --single take a number >= 0")
    models = parse_models(args.model, known)
    if not args.no_figures:
        from .plots import have_matplotlib
        if not have_matplotlib():
            raise UserError("figures need matplotlib: pip install 'llmulator[plots]' (or pass --no-figures)")
    rows = data.load_rows(args.data)
    data.check_holdout_family(rows, family)
    load_line = report.machine()
    run.set_model_paths(models)

    estimators, skipped = {}, {}
    for name in requested:
        est = plugins.get("estimators", name)
        why = est.available()
        if why:
            skipped[name] = why
            print(f"skipping {name}: {why}", file=sys.stderr)
        else:
            estimators[name] = est
    if not estimators:
        raise UserError("no estimator to run: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  disable=args.no_progress, transient=False) as bar:
        task = bar.add_task("bench", total=len(estimators) * len(splits) * len(seeds))
        by_seed: dict[int, list] = {}
        for k, seed in enumerate(seeds):
            bar.update(task, description=f"seed {seed}: rebuilding designs")
            drawn = data.draw(rows, splits, args.per_split, seed, family)
            by_seed[seed] = []
            for name, est in estimators.items():
                if k == 0:
                    bar.update(task, description=f"{name}: warm-up")
                    run.warm_up(est, list(drawn.values()))
                for s in splits:
                    bar.update(task, description=f"{name} / {s}" + (f" / seed {seed}" if len(seeds) > 1 else ""))
                    # speed is measured on the first seed's draw only
                    by_seed[seed].append(run.run_one(name, est, drawn[s], single=args.single, timing=k == 0,
                                                     seed=seed))
                    bar.advance(task)
        outcomes = by_seed[seeds[0]]

    out = Path(args.out)
    figures = {}
    if not args.no_figures:
        from . import plots
        fig_dir = Path(args.figures)
        for s in splits:
            oc = [o for o in outcomes if o.split == s]
            sc = plots.scatter(oc, s, fig_dir / f"{args.section}-scatter-{s}.png")
            cdf = plots.error_cdf(oc, s, fig_dir / f"{args.section}-cdf-{s}.png")
            figures[s] = tuple(Path(os.path.relpath(p.resolve(), out.resolve().parent)).as_posix() for p in (sc, cdf))
    text = report.body(command_line(args), outcomes, skipped, args.per_split, seeds[0], figures, load_line,
                       title=args.title, seed_outcomes=by_seed if len(seeds) > 1 else None,
                       holdout_family=family)
    update_section(out, args.section, text)
    print(text)
    print(f"wrote the {args.section} section of {out}" + (f" and {2 * len(figures)} figures in {args.figures}"
                                                  if figures else ""), file=sys.stderr)
    return 0
