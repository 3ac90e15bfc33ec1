"""`llmulator train llm`: train the LLM estimator on a synthesized dataset."""

from __future__ import annotations

import argparse
import json

EPILOG = """example:
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
    p.add_argument("--out", required=True, help="checkpoint folder (safetensors, tokenizer, training state)")
    p.add_argument("--pretrain-steps", type=int, default=300)
    p.add_argument("--steps", type=int, default=2000, help="fine-tuning steps on the digit targets")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save-every", type=int, default=200)
    p.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out")
    p.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    p.add_argument("--hints", choices=["none", "static", "analytical"], default="analytical",
                   help="facts added to the prompt: none (code only), static trip counts, or those and the "
                        "analytical estimate (default)")
    p.add_argument("--head", choices=["digits", "mse", "logmse", "binned"], default="digits",
                   help="output: digit tokens (the method) or an ablation head")
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
                   help="train on a seeded random subset of N training rows (learning curves)")


def run(args) -> int:
    from .train import train
    state = train(args.data, args.out, pretrain_steps=args.pretrain_steps, steps=args.steps, batch=args.batch,
                  lr=args.lr, seed=args.seed, save_every=args.save_every, resume=args.resume, threads=args.threads,
                  hints=args.hints, head=args.head, init=args.init, base_model=args.base_model, lora=args.lora,
                  lora_r=args.lora_r, holdout_family=args.holdout_family, workers=args.workers,
                  focus=args.focus, max_train_rows=args.max_train_rows)
    print(json.dumps({"steps": state["step"], "seconds": state.get("seconds"), "evals": state.get("evals", [])},
                     indent=2))
    return 0
