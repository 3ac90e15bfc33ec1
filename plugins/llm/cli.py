"""`llmulator train llm`: train the LLM estimator on a synthesized dataset."""

from __future__ import annotations

import argparse
import json

EPILOG = """example:
  llmulator train llm --data data/synth-v1 --out models/llm-v1
  llmulator train llm --data data/synth-v1 --out models/llm-v1 --resume
Use the result with: LLMULATOR_LLM_MODEL=models/llm-v1 llmulator estimate ..."""


def add_command(subparsers) -> None:
    p = subparsers.add_parser("train", help="train a learned estimator on a synthesized dataset",
                              formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("model", choices=["llm"], help="which estimator to train")
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
    p.set_defaults(func=run)


def run(args) -> int:
    from .train import train
    state = train(args.data, args.out, pretrain_steps=args.pretrain_steps, steps=args.steps, batch=args.batch,
                  lr=args.lr, seed=args.seed, save_every=args.save_every, resume=args.resume, threads=args.threads)
    print(json.dumps({"steps": state["step"], "seconds": state.get("seconds"), "evals": state.get("evals", [])},
                     indent=2))
    return 0
