"""`llmulator train gnn|tlp|tensetmlp`: train a learned baseline on a synthesized dataset."""

from __future__ import annotations

import argparse
import json
import sys

EPILOG = """example:
  llmulator train {name} --quick --data data/demo --out quick-{name}   (a small model in well under a minute)
  llmulator train {name} --data data/synth-v1 --out models/{name}-v1
  llmulator train {name} --data data/synth-v1 --out models/{name}-v1 --resume
  llmulator train {name} --data data/synth-v1 --out models/{name}-no-stencil --holdout-family stencil
Use the result with: LLMULATOR_{env}_MODEL=models/{name}-v1 llmulator estimate ...
(ship it: copy model.safetensors and config.json to plugins/baselines/default_model/{name}/)"""

HELP = {"gnn": "the GNN baseline (control/data-flow graph of the mapped kernel)",
        "tlp": "the TLP baseline (attention over mapping primitives)",
        "tensetmlp": "the Tenset-MLP baseline (segment-sum MLP over statements)"}


class BaselineTrainer:
    """``llmulator train NAME`` for one learned baseline: a ``llmulator.hookspecs.Trainer``, registered by the
    plugin's ``register_trainers``."""

    name = ""

    def __init__(self):
        self.help = HELP[self.name]
        self.description = f"Train {self.help}."
        self.epilog = EPILOG.format(name=self.name, env=self.name.upper())

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser, self.name)
        parser.set_defaults(baseline=self.name)

    def train(self, args) -> int:
        return run(args)


class GNNTrainer(BaselineTrainer):
    name = "gnn"


class TLPTrainer(BaselineTrainer):
    name = "tlp"


class TensetMLPTrainer(BaselineTrainer):
    name = "tensetmlp"


TRAINERS = (GNNTrainer, TLPTrainer, TensetMLPTrainer)  # in HELP's order: `llmulator train --help` lists them so


def add_arguments(p: argparse.ArgumentParser, name: str) -> None:
    """The options of ``llmulator train NAME`` (gnn, tlp or tensetmlp)."""
    p.add_argument("--data", required=True, help="dataset folder made by `llmulator synth`")
    p.add_argument("--out", help="checkpoint folder (model.safetensors, config.json, state/); required unless "
                                  f"--quick, whose default is {quick_out(name, shown=True)}")
    p.add_argument("--quick", action="store_true",
                   help=f"a first model to try the tool with, in well under a minute: {quick_text(name)} "
                        "(options given explicitly win)")
    p.add_argument("--epochs", type=int, metavar="N", help=f"training epochs (default {DEFAULT_EPOCHS[name]})")
    p.add_argument("--batch", type=int, metavar="N", help="designs per step (default 32)")
    p.add_argument("--lr", type=float, help=f"peak learning rate (default {DEFAULT_LR[name]:g})")
    p.add_argument("--weight-decay", type=float, help="AdamW weight decay (default 1e-5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the initialisation and batch order (default 0)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--resume", action="store_true", help="continue from the state in --out")
    p.add_argument("--holdout-family", metavar="FAMILY",
                   help="leave-one-family-out: train without this application family (its rows form split "
                        "test_family, evaluated at the end; bench it with `llmulator bench --holdout-family`)")
    p.add_argument("--workers", type=int, default=1,
                   help="processes for featurisation; with 2 or more, every baseline kind is featurised in the "
                        "same pass and cached in the dataset folder for the other kinds' runs (default 1)")
    p.add_argument("--max-train-rows", type=int, metavar="N",
                   help="train on a seeded random subset of N training rows (learning curves; --quick: "
                        f"{QUICK['max_train_rows']})")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


# the defaults of train.DEFAULTS, repeated here so that --help needs no torch (a test keeps them equal)
DEFAULT_EPOCHS = {"gnn": 80, "tlp": 60, "tensetmlp": 100}
DEFAULT_LR = {"gnn": 2e-3, "tlp": 1e-3, "tensetmlp": 1e-3}
# what --quick uses instead: a few hundred rows, a narrow model, a few epochs
QUICK = {"epochs": 8, "max_train_rows": 300}
QUICK_HYPER = {"gnn": {"hidden": 32, "layers": 2}, "tlp": {"hidden": 32, "heads": 2}, "tensetmlp": {"hidden": 32}}


def quick_text(kind: str) -> str:
    return (f"at most {QUICK['max_train_rows']} training rows, {QUICK['epochs']} epochs, width "
            f"{QUICK_HYPER[kind]['hidden']}")


def quick_out(kind: str, shown: bool = False) -> str:
    """Where ``train KIND --quick`` writes without --out: a per-user working folder, never the repository
    (``$LLMULATOR_HOME/quick/KIND``, default ``~/.cache/llmulator/quick/KIND``, where calibration contexts live too).
    """
    if shown:
        return f"$LLMULATOR_HOME/quick/{kind} (~/.cache/llmulator/quick/{kind})"
    from llmulator.fileio import user_home
    return str(user_home() / "quick" / kind)


def run(args) -> int:
    from llmulator.errors import UserError

    from .train import train
    if args.quick:
        for k, v in QUICK.items():
            if getattr(args, k) is None:
                setattr(args, k, v)
    if args.out is None:
        if not args.quick:
            raise UserError("--out FOLDER is required (where the checkpoint goes); or try --quick, which has a "
                            "default folder")
        args.out = quick_out(args.baseline)
    for k in ("epochs", "batch", "max_train_rows", "workers", "threads"):
        v = getattr(args, k)
        if v is not None and v < 1:
            raise UserError(f"--{k.replace('_', '-')} must be a positive number, got {v}")
    state = train(args.baseline, args.data, args.out, epochs=args.epochs, batch=args.batch, lr=args.lr,
                  weight_decay=args.weight_decay, seed=args.seed, threads=args.threads, resume=args.resume,
                  progress=not args.no_progress, holdout_family=args.holdout_family, workers=args.workers,
                  max_train_rows=args.max_train_rows, hyper=QUICK_HYPER[args.baseline] if args.quick else None)
    print(json.dumps({"out": str(args.out), "epochs": state["epoch"], "seconds": round(state["seconds"], 1),
                      "best": state["best"], "held_out": state.get("final", {})}, indent=2))
    print(f"use it with: llmulator bench --data {args.data} --model {args.baseline}={args.out}\n"
          f"         or: LLMULATOR_{args.baseline.upper()}_MODEL={args.out} llmulator estimate ...", file=sys.stderr)
    return 0
