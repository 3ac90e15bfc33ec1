"""`llmulator train gnn|tlp|tensetmlp`: train a learned baseline on a synthesized dataset."""

from __future__ import annotations

import argparse
import json

EPILOG = """example:
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
        add_arguments(parser)
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


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``llmulator train gnn|tlp|tensetmlp``."""
    p.add_argument("--data", required=True, help="dataset folder made by `llmulator synth`")
    p.add_argument("--out", required=True, help="checkpoint folder (model.safetensors, config.json, state/)")
    p.add_argument("--epochs", type=int, help="training epochs (default: the model's)")
    p.add_argument("--batch", type=int, help="designs per step (default 32)")
    p.add_argument("--lr", type=float, help="peak learning rate")
    p.add_argument("--weight-decay", type=float, help="AdamW weight decay (default 1e-5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--resume", action="store_true", help="continue from the state in --out")
    p.add_argument("--holdout-family", metavar="FAMILY",
                   help="leave-one-family-out: train without this application family (its rows form split "
                        "test_family, evaluated at the end; bench it with `llmulator bench --holdout-family`)")
    p.add_argument("--workers", type=int, default=1,
                   help="processes for featurisation; with 2 or more, every baseline kind is featurised in the "
                        "same pass and cached in the dataset folder for the other kinds' runs (default 1)")
    p.add_argument("--max-train-rows", type=int, metavar="N",
                   help="train on a seeded random subset of N training rows (learning curves)")
    p.add_argument("--no-progress", action="store_true")


def run(args) -> int:
    from .train import train
    state = train(args.baseline, args.data, args.out, epochs=args.epochs, batch=args.batch, lr=args.lr,
                  weight_decay=args.weight_decay, seed=args.seed, threads=args.threads, resume=args.resume,
                  progress=not args.no_progress, holdout_family=args.holdout_family, workers=args.workers,
                  max_train_rows=args.max_train_rows)
    print(json.dumps({"epochs": state["epoch"], "seconds": round(state["seconds"], 1), "best": state["best"],
                      "held_out": state.get("final", {})}, indent=2))
    return 0
