"""The `llmulator synth` verb."""

from __future__ import annotations

import argparse
from pathlib import Path

from llmulator.errors import UserError

EPILOG = """example:
  llmulator synth --stages 1,2,3 --n 3000 --out data/synth --workers 2
  llmulator synth --stages 2 --n 200 --out data/s2 --scheduler tcp://127.0.0.1:8786
  llmulator synth --relabel --out data/synth-v2
An interrupted run resumes where it stopped when run again with the same settings (a relabel too)."""


def add_command(subparsers) -> None:
    p = subparsers.add_parser("synth", help="generate a labelled dataset (three progressive stages)",
                              formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("--stages", default="1,2,3", help="comma-separated stages: 1 AST programs, 2 templates x "
                   "mappings x hardware, 3 mutations (default: 1,2,3)")
    p.add_argument("--n", type=int, help="number of samples in total (split evenly over stages); required "
                   "unless --relabel")
    p.add_argument("--out", required=True, help="output folder (Parquet shards under data/, dataset.json)")
    p.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    p.add_argument("--workers", type=int, default=1, help="local worker processes (default 1)")
    p.add_argument("--scheduler", help="address of a Dask scheduler (runs the same shards as Dask tasks)")
    p.add_argument("--shard-size", type=int, default=32, metavar="N",
                   help="samples per Parquet shard, the unit of work and of resuming (default 32)")
    p.add_argument("--card", help="also write the dataset card (Markdown) to this file")
    p.add_argument("--card-only", action="store_true",
                   help="with --card: describe the shards already in --out without generating more (a run that "
                        "was stopped part-way; the same command without it resumes)")
    p.add_argument("--relabel", action="store_true",
                   help="re-profile the rows of the dataset in --out that an older profiler version labelled "
                        "(resumable; prints what changed; removes the derived feature caches)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run_command)


def run_command(args) -> int:
    from .driver import run
    if args.relabel:
        return _relabel(args)
    try:
        stages = sorted({int(s) for s in args.stages.split(",") if s.strip()})
    except ValueError:
        raise UserError(f"--stages takes numbers from 1 to 3 separated by commas, not {args.stages!r}") from None
    if not stages or any(s not in (1, 2, 3) for s in stages):
        raise UserError(f"--stages takes numbers from 1 to 3, not {args.stages!r}")
    if args.n is None:
        raise UserError("synth needs --n (the number of samples), unless it is --relabel")
    if args.n < 1:
        raise UserError("--n must be at least 1")
    if args.card_only:
        if not args.card:
            raise UserError("--card-only needs --card FILE")
        from .card import write_card
        write_card(args.out, args.card)
        print(f"dataset card: {args.card}")
        return 0
    manifest = run(stages, args.n, args.out, seed=args.seed, workers=args.workers, scheduler=args.scheduler,
                   shard_size=args.shard_size, progress=not args.no_progress)
    print(f"{args.n} samples in {args.out} ({manifest['new_samples_this_run']} new, "
          f"{manifest['seconds_this_run']:.1f} s)")
    if manifest["refused"]:
        print(f"{manifest['refused_this_run']} draws refused by the profiler this run ({manifest['refused']} in all: "
              "a timing-model bug each, drawn again; the designs and the command that reproduces each are under "
              f"{Path(args.out) / 'refused'})")
    if args.card:
        from .card import write_card
        write_card(args.out, args.card)
        print(f"dataset card: {args.card}")
    return 0


def _relabel(args) -> int:
    from .relabel import format_summary, relabel
    if args.card_only:
        raise UserError("--relabel and --card-only do not go together (relabel first, then --card-only)")
    if args.workers < 1:
        raise UserError("--workers must be at least 1")
    if args.scheduler:
        raise UserError("--relabel runs in local worker processes (--workers N), not on --scheduler")
    summary = relabel(args.out, workers=args.workers, progress=not args.no_progress)
    print("\n".join(format_summary(args.out, summary)))
    if args.card:
        from .card import write_card
        write_card(args.out, args.card)
        print(f"dataset card: {args.card}")
    return 0
