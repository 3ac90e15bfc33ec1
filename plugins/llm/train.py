"""Training the LLM estimator: pretraining on the program corpus, then fine-tuning on digit targets.

``llmulator train llm --data DIR --out DIR`` reads the synthesizer's Parquet
shards, builds the tokenizer from the training split's prompts, creates a
small Llama-style causal LM from a config (no weights are downloaded), and runs

1. pretraining: next-token loss over the prompts (the programs, mappings and
   hardware descriptions), ``--pretrain-steps`` steps;
2. supervised fine-tuning: next-token loss on the target tokens only
   (``<cycles> d d d e s d d ...``), ``--steps`` steps;

with a progress bar, a checkpoint every ``--save-every`` steps (model weights
as safetensors, tokenizer, optimizer state and step: an interrupted run
resumes with ``--resume``), evaluation on the held-out splits at the end of
each phase, and fixed seeds. ``--base-model PATH`` starts from any local
Hugging Face causal-LM checkpoint instead (LoRA adapters through ``peft``
with ``--lora``).
"""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path
from typing import Any

from llmulator.errors import UserError
from llmulator.fileio import atomic_write_json

from .text import strip_prompt, target_text

DEFAULT_ARCH = {"hidden_size": 192, "intermediate_size": 512, "num_hidden_layers": 3, "num_attention_heads": 4,
                "num_key_value_heads": 4, "max_position_embeddings": 2048}


def load_rows(data: str | Path) -> list[dict[str, Any]]:
    from llmulator_plugins.synth.card import read_records, split_of
    rows = read_records(data)
    if not rows:
        raise UserError(f"no samples under {data}/data; make a dataset with `llmulator synth`")
    for r in rows:
        r["split"] = split_of(r)
    return rows


def examples(rows: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, float]]]:
    return [(strip_prompt(r["prompt"]), target_text(r), {m: r[m] for m in ("cycles", "energy_pj", "power_mw",
                                                                              "area_um2")}) for r in rows]


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def new_model(tokenizer, arch: dict[str, Any] | None = None):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                      eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id,
                      tie_word_embeddings=True, **{**DEFAULT_ARCH, **(arch or {})})
    return LlamaForCausalLM(cfg)


def _batches(items: list, batch: int, rng: random.Random):
    while True:
        order = list(range(len(items)))
        rng.shuffle(order)
        for k in range(0, len(order) - batch + 1, batch):
            yield [items[i] for i in order[k:k + batch]]


def _encode(tokenizer, pairs: list[tuple[str, str]], sft: bool, max_length: int):
    import torch
    tokenizer.padding_side = "right"
    prompts = tokenizer([p for p, _ in pairs], add_special_tokens=False)["input_ids"]
    targets = tokenizer([t for _, t in pairs], add_special_tokens=False)["input_ids"]
    seqs, labels = [], []
    for p, t in zip(prompts, targets, strict=True):
        p = p[-(max_length - len(t)):]
        seqs.append(p + t)
        labels.append(([-100] * len(p) if sft else list(p)) + t)
    n = max(len(s) for s in seqs)
    pad = tokenizer.pad_token_id
    ids = torch.tensor([s + [pad] * (n - len(s)) for s in seqs])
    lab = torch.tensor([s + [-100] * (n - len(s)) for s in labels])
    att = torch.tensor([[1] * len(s) + [0] * (n - len(s)) for s in seqs])
    return ids, att, lab


def evaluate(model, tokenizer, items, limit: int = 64, batch: int = 16) -> dict[str, float]:
    """MAPE per metric of greedy constrained decoding on up to ``limit`` examples."""
    from .decode import decode_batch
    items = items[:limit]
    errs: dict[str, list[float]] = {}
    model.eval()
    for k in range(0, len(items), batch):
        chunk = items[k:k + batch]
        preds = decode_batch(model, tokenizer, [p for p, _, _ in chunk])
        for (_, _, truth), pred in zip(chunk, preds, strict=True):
            for m, v in truth.items():
                errs.setdefault(m, []).append(abs(pred["metrics"][m] - v) / max(abs(v), 1e-12) * 100)
    model.train()
    return {f"mape.{m}": sum(v) / len(v) for m, v in errs.items()}


def train(data: str | Path, out: str | Path, pretrain_steps: int = 200, steps: int = 1000, batch: int = 8,
          lr: float = 1e-3, seed: int = 0, max_length: int = 1536, save_every: int = 200, resume: bool = False,
          arch: dict[str, Any] | None = None, progress: bool = True, eval_limit: int = 64,
          threads: int | None = None) -> dict[str, Any]:
    import torch
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from .text import build_tokenizer, load_tokenizer

    if threads:
        torch.set_num_threads(threads)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seed_everything(seed)
    rows = load_rows(data)
    train_rows = [r for r in rows if r["split"] == "train"]
    held = {s: examples([r for r in rows if r["split"] == s]) for s in ("val", "test_app", "test_hw", "test_input")}
    items = examples(train_rows)
    if not items:
        raise UserError("the dataset has no training samples")
    state_file = out / "train_state.json"
    if resume and state_file.is_file():
        state = json.loads(state_file.read_text())
        tokenizer = load_tokenizer(out)
        from transformers import LlamaForCausalLM
        model = LlamaForCausalLM.from_pretrained(out)
    else:
        state = {"step": 0, "history": []}
        tokenizer = build_tokenizer([p for p, _, _ in items])
        model = new_model(tokenizer, arch)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.01)
    if resume and (out / "optimizer.pt").is_file():
        opt.load_state_dict(torch.load(out / "optimizer.pt", weights_only=True))
    total = pretrain_steps + steps
    rng = random.Random(seed + state["step"])
    pairs = [(p, t) for p, t, _ in items]
    batches = _batches(pairs, min(batch, len(pairs)), rng)
    model.train()
    t0 = time.perf_counter()

    def lr_at(step: int) -> float:
        warm = max(1, total // 20)
        if step < warm:
            return lr * (step + 1) / warm
        return lr * 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, total - warm)))

    def save():
        model.save_pretrained(out, safe_serialization=True)
        tokenizer.save_pretrained(out)
        torch.save(opt.state_dict(), out / "optimizer.pt")
        atomic_write_json(state_file, state)

    columns = [TextColumn("train llm"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
               TimeRemainingColumn()]
    with Progress(*columns, disable=not progress) as bar:
        task = bar.add_task("train", total=total, completed=state["step"], info="")
        while state["step"] < total:
            step = state["step"]
            sft = step >= pretrain_steps
            ids, att, lab = _encode(tokenizer, next(batches), sft, max_length)
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            loss = model(input_ids=ids, attention_mask=att, labels=lab).loss
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            loss_value = loss.item()
            state["step"] = step + 1
            state["history"].append({"step": step + 1, "phase": "sft" if sft else "pretrain",
                                     "loss": round(loss_value, 5)})
            bar.update(task, advance=1, info=f"{'sft' if sft else 'pretrain'} loss {loss_value:.3f}")
            if state["step"] % save_every == 0 or state["step"] in (pretrain_steps, total):
                if state["step"] in (pretrain_steps, total) and state["step"] > 0 and sft or state["step"] == total:
                    state.setdefault("evals", []).append(
                        {"step": state["step"], **{s: evaluate(model, tokenizer, v, eval_limit)
                                                   for s, v in held.items() if v}})
                save()
    state["seconds"] = round(time.perf_counter() - t0, 1)
    save()
    return state
