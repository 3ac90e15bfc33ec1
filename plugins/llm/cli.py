"""`llmulator train llm`: train the LLM estimator on a synthesized dataset."""

from __future__ import annotations

import argparse
import json
import sys

EPILOG = """example:
  llmulator train llm --quick --data data/demo --out quick-llm   (a tiny model in well under a minute)
  llmulator train llm --data data/synth-v1 --out models/llm-v1
  llmulator train llm --data data/synth-v1 --out models/llm-v1 --resume
  llmulator train llm --data data/synth-v1 --out models/llm-logmse --head logmse --init models/llm-v1/pretrained
  llmulator train llm --data data/synth-v1 --out models/llm-lora --base-model /path/to/local-hf-model --lora
  llmulator train llm --data data/synth-v1 --out models/llm-no-stencil --holdout-family stencil
use the result with:
  LLMULATOR_LLM_MODEL=models/llm-v1 llmulator estimate systolic-16x16 gemm gemm-ws-16x16
ablation heads (one model each):
  LLMULATOR_LLM_LOGMSE_MODEL=models/llm-logmse llmulator estimate hls-fpga atax atax-hls-fpga --estimator llm-logmse"""


class LLMTrainer:
    """``llmulator train llm``: a ``llmulator.hookspecs.Trainer``, registered by the plugin's ``register_trainers``."""

    name = "llm"
    help = "the LLM estimator (digit-by-digit prediction)"
    description = ""
    epilog = EPILOG

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def train(self, args) -> int:
        return run(args)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``llmulator train llm``."""
    p.add_argument("--data", required=True, help="dataset folder made by `llmulator synth`")
    p.add_argument("--out", help="checkpoint folder (safetensors, tokenizer, training state); required unless "
                                  f"--quick, whose default is {quick_out('llm', shown=True)}")
    p.add_argument("--quick", action="store_true",
                   help=f"a first model to try the tool with, in well under a minute: {quick_text()} (options given "
                        "explicitly win)")
    p.add_argument("--pretrain-steps", type=int, metavar="N",
                   help=f"next-token steps over the prompts before fine-tuning (default {FULL['pretrain_steps']})")
    p.add_argument("--steps", type=int, metavar="N",
                   help=f"fine-tuning steps on the digit targets (default {FULL['steps']})")
    p.add_argument("--batch", type=int, metavar="N", help=f"prompts per step (default {FULL['batch']})")
    p.add_argument("--lr", type=float, help=f"peak learning rate (default {FULL['lr']:g})")
    p.add_argument("--seed", type=int, default=0, help="seed of the initialisation and batch order (default 0)")
    p.add_argument("--save-every", type=int, metavar="N",
                   help=f"write a checkpoint every N steps (default {FULL['save_every']})")
    p.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out")
    p.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    p.add_argument("--time-limit", type=float, metavar="SECONDS",
                   help="end fine-tuning after this many seconds of training (the learning rate still cools to "
                        "zero: its schedule follows the time fraction when that is ahead of the step fraction)")
    p.add_argument("--device", default="cpu", help="torch device to train on: cpu (default) or cuda (a GPU, "
                                                   "bfloat16 autocast; the checkpoint is float32 either way)")
    p.add_argument("--hints", choices=["none", "static", "analytical"], default="analytical",
                   help="facts added to the prompt: none (code only), static trip counts, or those and the "
                        "analytical estimate (default)")
    p.add_argument("--head", choices=["digits", "mse", "logmse", "binned"], default="digits",
                   help="output: digit tokens (the method; default) or an ablation head")
    p.add_argument("--target", choices=["absolute", "ratio"], default="absolute",
                   help="what the digits are: the metric (default) or its ratio to the analytical prior, which "
                        "the estimator multiplies back (a model that learned nothing returns the prior exactly)")
    p.add_argument("--init", help="start fine-tuning from this checkpoint (e.g. another run's pretrained/) "
                                  "instead of pretraining a new model")
    p.add_argument("--base-model", metavar="PATH",
                   help="fine-tune this local Hugging Face causal LM (its own tokenizer, our tokens added) instead "
                        "of training our small model; nothing is downloaded")
    p.add_argument("--lora", action="store_true", help="with --base-model: train a LoRA adapter (peft) and the "
                                                        "new token rows only; saved as adapter/ plus a merged copy")
    p.add_argument("--lora-r", type=int, default=8, help="LoRA rank (default 8)")
    p.add_argument("--holdout-family", metavar="FAMILY",
                   help="leave-one-family-out: train without this application family (its rows form split "
                        "test_family, evaluated at the end; bench it with `llmulator bench --holdout-family`)")
    p.add_argument("--workers", type=int, default=1,
                   help="processes that build the prompts (design rebuild + analytical prior; default 1)")
    p.add_argument("--focus", type=float, default=1.0, metavar="W",
                   help="draw training rows whose analytical prior is off by more than 5 %% W times as often "
                        "(default 1: uniform)")
    p.add_argument("--max-train-rows", type=int, metavar="N",
                   help="train on a seeded random subset of N training rows (learning curves; --quick: "
                        f"{QUICK['max_train_rows']})")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


# what a full run uses when an option is not given, and what --quick uses instead
FULL = {"pretrain_steps": 300, "steps": 2000, "batch": 8, "lr": 1e-3, "save_every": 200, "max_train_rows": None}
QUICK = {"pretrain_steps": 10, "steps": 30, "batch": 4, "lr": 3e-3, "save_every": 1000, "max_train_rows": 200}
QUICK_MAX_LENGTH = 384  # prompt tokens trained on: the tail, where the facts and the analytical prior are


# the model --quick trains: small enough for a few dozen CPU steps to show a loss going down
QUICK_ARCH = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
              "num_key_value_heads": 2}


def quick_text() -> str:
    return (f"at most {QUICK['max_train_rows']} training rows, a {QUICK_ARCH['num_hidden_layers']}-layer model of "
            f"width {QUICK_ARCH['hidden_size']}, {QUICK['pretrain_steps']} + {QUICK['steps']} steps of "
            f"{QUICK['batch']} prompts cut to their last {QUICK_MAX_LENGTH} tokens, checked on 4 held-out rows per "
            "split at the end")


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
    preset = QUICK if args.quick else FULL
    for k, v in preset.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.out is None:
        if not args.quick:
            raise UserError("--out FOLDER is required (where the checkpoint goes); or try --quick, which has a "
                            "default folder")
        args.out = quick_out("llm")
    if args.quick and not args.threads:  # a short burst of small tensors: as many threads as cores are idle
        from llmulator.threads import choose
        args.threads = choose()
    if args.quick and (args.base_model or args.init):
        raise UserError("--quick trains a tiny model of its own; leave out --base-model and --init")
    for k in ("pretrain_steps", "steps", "batch", "save_every", "max_train_rows"):
        v = getattr(args, k)
        if v is not None and (v < 0 or (v == 0 and k not in ("pretrain_steps", "steps"))):
            raise UserError(f"--{k.replace('_', '-')} must be a positive number, got {v}")
    state = train(args.data, args.out, pretrain_steps=args.pretrain_steps, steps=args.steps, batch=args.batch,
                  lr=args.lr, seed=args.seed, save_every=args.save_every, resume=args.resume, threads=args.threads,
                  hints=args.hints, head=args.head, init=args.init, base_model=args.base_model, lora=args.lora,
                  lora_r=args.lora_r, holdout_family=args.holdout_family, workers=args.workers,
                  focus=args.focus, max_train_rows=args.max_train_rows, progress=not args.no_progress,
                  device=args.device, time_limit=args.time_limit, target=args.target,
                  **({"arch": QUICK_ARCH, "eval_limit": 4, "eval_each_epoch": False, "max_length": QUICK_MAX_LENGTH}
                     if args.quick else {}))
    print(json.dumps({"out": str(args.out), "steps": state["step"], "seconds": state.get("seconds"),
                      "evals": state.get("evals", [])}, indent=2))
    print(f"use it with: llmulator bench --data {args.data} --model llm={args.out}\n"
          f"         or: LLMULATOR_LLM_MODEL={args.out} llmulator estimate ...", file=sys.stderr)
    return 0
