"""Training the LLM estimator: pretraining on the program corpus, then fine-tuning on digit targets.

``llmulator train llm --data DIR --out DIR`` reads the synthesizer's Parquet
shards, rebuilds each sample's design and writes its compact model prompt
(``text.model_prompt``, with the chosen ``--hints``; cached in
``prompts.jsonl``), builds the tokenizer from the training split's prompts,
creates a small Llama-style causal LM from a config (no weights are
downloaded), and runs

1. pretraining: next-token loss over the prompts (the programs, mappings and
   hardware descriptions), ``--pretrain-steps`` steps; the result is kept in
   ``pretrained/`` so variants can start from the same trunk (``--init``);
2. supervised fine-tuning, ``--steps`` steps: with ``--head digits`` (the
   method) next-token loss on the target tokens only
   (``<cycles> + 0 4 1 2 3 ...``); with ``mse``/``logmse``/``binned`` (the
   ablation, ``heads.py``) a head on the last prompt position;

with a progress bar, a checkpoint every ``--save-every`` steps (safetensors
weights, tokenizer, optimizer state and step: an interrupted run resumes with
``--resume``), evaluation on the validation and held-out splits (up to
``eval_limit`` samples each) after every epoch of fine-tuning and at the end,
and fixed seeds.
The checkpoint's ``llmulator.json`` records the prompt format, hints and head,
so the estimator builds the prompt the model was trained on.
``--base-model PATH [--lora]`` fine-tunes a local Hugging Face causal LM with
its own tokenizer instead (no pretraining; ``base_model.py``).
"""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path
from typing import Any

from llmulator.dataset import SPLITS
from llmulator.errors import UserError
from llmulator.fileio import atomic_write_json, atomic_write_text
from llmulator.scoring import ape

from . import base_model as BM
from . import heads as H
from . import residual as R
from .interval import apply as calibrated_interval
from .interval import calibrate_items
from .text import HINTS, METRICS, PROMPT_FORMAT, model_prompt, target_text

DEFAULT_ARCH = {"hidden_size": 192, "intermediate_size": 512, "num_hidden_layers": 3, "num_attention_heads": 4,
                "num_key_value_heads": 4, "max_position_embeddings": 2048}
META = "llmulator.json"
PREDICTIONS = "predictions.jsonl"  # the last evaluation's prediction of every evaluated held-out row


def load_rows(data: str | Path, holdout_family: str | None = None) -> list[dict[str, Any]]:
    """The dataset's rows, each with its ``split`` (``holdout_family``: that family's rows are ``test_family``)."""
    from llmulator.dataset import check_holdout_family, read_records, split_of
    rows = read_records(data)
    if not rows:
        raise UserError(f"no samples under {data}/data; make a dataset with `llmulator synth`")
    check_holdout_family(rows, holdout_family)
    for r in rows:
        r["split"] = split_of(r, holdout_family)
    return rows


def _prompt_chunk(job: tuple[list[dict[str, Any]], str]) -> list[dict[str, Any]]:
    """Prompt records of some rows (runs in a worker process): id, prompt, and the analytical prior."""
    from llmulator.dataset import Rejected, design_of_row
    rows, hints = job
    out = []
    for r in rows:
        try:
            d = design_of_row(r)
        except Rejected:
            continue
        prior = None
        if hints == "analytical":
            try:
                from llmulator_plugins.analytical.estimator import AnalyticalEstimator
                prior = {k: float(v) for k, v in AnalyticalEstimator().estimate([d])[0].metrics.items()}
            except Exception:  # noqa: BLE001 - a design the static model cannot price gets "static none"
                prior = None
        out.append({"id": r["sample_id"], "prompt": model_prompt(d, r["variant"] or None, hints, prior),
                    "prior": prior, "answer": R.prior_answer(d) if prior is not None else None})
    return out


def prompt_records(rows: list[dict[str, Any]], hints: str, cache: Path | None = None, progress: bool = False,
                   workers: int = 1, chunk: int = 128) -> dict[str, dict[str, Any]]:
    """Prompt (and analytical prior) of every row by sample id, read from and appended to ``cache``.

    The cache is JSON lines, appended chunk by chunk as prompts are made, so a killed run keeps what it
    built (a torn last line is ignored); lines written for another prompt format, hint set or analytical
    model version are stale: they are dropped and the file is rewritten atomically at the end."""
    from llmulator_plugins.analytical.estimator import VERSION as STATIC_VERSION
    from rich.progress import track

    # a prompt with analytical hints is only as current as the analytical model that wrote them
    static = STATIC_VERSION if hints == "analytical" else None
    known: dict[str, dict[str, Any]] = {}
    stale = False
    if cache is not None and cache.is_file():
        for line in cache.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                stale = True  # a line torn by a kill: rewrite the file without it
                continue
            if rec.get("hints") == hints and rec.get("format") == PROMPT_FORMAT and rec.get("static") == static \
                    and "answer" in rec:  # a line from before the record said whether the prior is the answer
                known[rec["id"]] = {"prompt": rec["prompt"], "prior": rec.get("prior"), "answer": rec.get("answer")}
            else:
                stale = True
    todo = [r for r in rows if r["sample_id"] not in known]
    jobs = [(todo[k:k + chunk], hints) for k in range(0, len(todo), chunk)]

    def tag(rec):
        return json.dumps({"id": rec["id"], "hints": hints, "format": PROMPT_FORMAT, "static": static,
                           "prompt": rec["prompt"], "prior": rec.get("prior"), "answer": rec.get("answer")}) + "\n"

    if stale and cache is not None:
        atomic_write_text(cache, "".join(tag({"id": k, **v}) for k, v in known.items()))
    if jobs:
        if workers > 1 and len(jobs) > 1:
            from concurrent.futures import ProcessPoolExecutor
            ex = ProcessPoolExecutor(max_workers=workers)
            results = ex.map(_prompt_chunk, jobs)
        else:
            ex = None
            results = map(_prompt_chunk, jobs)
        fh = cache.open("a") if cache is not None else None
        try:
            for recs in track(results, total=len(jobs), description=f"prompts ({len(todo)} rows)",
                              disable=not progress):
                for rec in recs:
                    known[rec["id"]] = {"prompt": rec["prompt"], "prior": rec["prior"], "answer": rec["answer"]}
                if fh is not None:
                    fh.write("".join(tag(rec) for rec in recs))
                    fh.flush()
        finally:
            if fh is not None:
                fh.close()
            if ex is not None:
                ex.shutdown(cancel_futures=True)
    return known


def prompts_for(rows: list[dict[str, Any]], hints: str, cache: Path | None = None,
                progress: bool = False, workers: int = 1) -> dict[str, str]:
    """Model prompt of every row (by sample id), read from and added to ``cache`` (JSON lines)."""
    return {k: v["prompt"] for k, v in prompt_records(rows, hints, cache, progress, workers).items()}


def hint_error(row: dict[str, Any], prior: dict[str, float] | None) -> float:
    """|log(measured / analytical)| of the cycles: how far the prior in the prompt is from the label."""
    if not prior or not prior.get("cycles") or prior["cycles"] <= 0:
        return math.inf
    return abs(math.log(float(row["cycles"]) / float(prior["cycles"])))


def examples(rows: list[dict[str, Any]], prompts: dict[str, str], priors: dict[str, dict | None] | None = None,
             target: str = "absolute", answers: dict[str, str | None] | None = None) -> list[tuple]:
    """(prompt, target text, labels, analytical prior, why the prior is the answer) of each row with a
    prompt; a row the ``target`` cannot write (a ratio without a prior, ``residual.to_target``) is left
    out. ``answers``: ``residual.prior_answer`` of each row's design (``fixed``, ``drawn``; "" for the rows
    the model answers)."""
    out = []
    for r in rows:
        if r["sample_id"] in prompts:
            truth = {m: float(r[m]) for m in METRICS}
            prior = (priors or {}).get(r["sample_id"])
            written = R.to_target(truth, prior, target)
            if written is not None:
                out.append((prompts[r["sample_id"]], target_text(written), truth, prior,
                            (answers or {}).get(r["sample_id"]) or ""))
    return out


def check_device(device: str):
    """The torch device to train on; a clear error where it does not exist on this machine."""
    import torch
    try:
        dev = torch.device(device)
    except RuntimeError as e:
        raise UserError(f"--device {device}: not a torch device ({e})") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"--device {device}: this machine has no CUDA GPU that torch can use; train with "
                        "--device cpu (the default)")
    if dev.type not in ("cpu", "cuda"):
        raise UserError(f"--device {device}: only cpu and cuda are supported")
    return dev


def _autocast(dev):
    """bfloat16 autocast on a GPU (the loss and optimizer stay float32); nothing on the CPU, where
    float32 is what the shipped model runs in."""
    import contextlib

    import torch
    if dev.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


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


def _batches(items: list, batch: int, rng: random.Random, weights: list[float] | None = None):
    """Batches without replacement within an epoch; with ``weights``, drawn by weight (focus sampling)."""
    if weights is not None:
        while True:
            yield rng.choices(items, weights=weights, k=batch)
    while True:
        order = list(range(len(items)))
        rng.shuffle(order)
        for k in range(0, len(order) - batch + 1, batch):
            yield [items[i] for i in order[k:k + batch]]


def _encode(tokenizer, pairs: list[tuple[str, str]], sft: bool, max_length: int):
    tokenizer.padding_side = "right"
    prompts = tokenizer([p for p, _ in pairs], add_special_tokens=False)["input_ids"]
    targets = BM.target_ids(tokenizer, [t for _, t in pairs])  # one id per symbol, as decoding uses them
    seqs, labels = [], []
    for p, t in zip(prompts, targets, strict=True):
        p = p[-(max_length - len(t)):]
        seqs.append(p + t)
        labels.append(([-100] * len(p) if sft else list(p)) + t)
    return _pad(tokenizer, seqs, labels)


def _pad(tokenizer, seqs, labels=None):
    import torch
    n = max(len(s) for s in seqs)
    pad = tokenizer.pad_token_id
    ids = torch.tensor([s + [pad] * (n - len(s)) for s in seqs])
    att = torch.tensor([[1] * len(s) + [0] * (n - len(s)) for s in seqs])
    lab = None if labels is None else torch.tensor([s + [-100] * (n - len(s)) for s in labels])
    return ids, att, lab


def _encode_prompts(tokenizer, prompts: list[str], max_length: int):
    tokenizer.padding_side = "right"
    seqs = [s[-max_length:] for s in tokenizer(prompts, add_special_tokens=False)["input_ids"]]
    ids, att, _ = _pad(tokenizer, seqs)
    return ids, att


def predict(model, tokenizer, prompts: list[str], meta: dict[str, Any], head_module=None,
            max_length: int = 1536, priors: list[dict | None] | None = None) -> list[dict]:
    """Predictions of a checkpoint with any head, as ``decode_batch`` returns them, in the metrics' units
    (``priors``: the prompts' analytical priors, which a ``ratio`` checkpoint's digits multiply)."""
    head = meta.get("head", "digits")
    if head == "digits":
        from .decode import decode_batch
        target = R.target_of(meta)
        if target == "absolute":
            preds = decode_batch(model, tokenizer, prompts, max_length)
        elif priors is None:
            raise ValueError("a ratio checkpoint predicts relative to the analytical prior: pass the priors")
        else:
            preds = [R.from_target(p, prior, target) for p, prior in
                     zip(decode_batch(model, tokenizer, prompts, max_length, draft=R.ratio_draft), priors, strict=True)]
        return [calibrated_interval(p, meta.get("interval")) for p in preds]  # interval.py
    import torch
    dev = next(model.parameters()).device
    with torch.inference_mode():
        ids, att = _encode_prompts(tokenizer, prompts, max_length)
        out = head_module(H.last_hidden(model, ids.to(dev), att.to(dev)).float()).cpu()
    res = []
    for vals, conf in H.predict(head, meta["stats"], out):
        res.append({"metrics": dict(zip(METRICS, vals, strict=True)),
                    "confidence": None if conf is None else dict(zip(METRICS, conf, strict=True)),
                    "interval": None})
    return res


def evaluate(model, tokenizer, items, meta: dict[str, Any], head_module=None, limit: int = 64,
             batch: int = 16, keep: list | None = None) -> dict[str, float]:
    """MAPE per metric on up to ``limit`` examples (``keep``: each prediction is appended to it, in order)."""
    items = items[:limit]
    errs: dict[str, list[float]] = {}
    model.eval()
    for k in range(0, len(items), batch):
        chunk = items[k:k + batch]
        preds = _predict_as_estimator(model, tokenizer, chunk, meta, head_module)
        if keep is not None:
            keep.extend(preds)
        for (_, _, truth, _, _), pred in zip(chunk, preds, strict=True):
            for m, v in truth.items():
                errs.setdefault(m, []).append(float(ape(pred["metrics"][m], v)))
    model.train()
    return {f"mape.{m}": round(sum(v) / len(v), 2) for m, v in errs.items()}


def _predict_as_estimator(model, tokenizer, chunk: list[tuple], meta: dict[str, Any], head_module=None) -> list[dict]:
    """Predictions of examples as the estimator makes them: where the prior is the answer (``residual.prior_answer``)
    a checkpoint that reads the prior gets the prior itself (``residual.copies_prior``), the others the model's."""
    copy = [bool(c[4]) and c[3] is not None and meta.get("hints") == "analytical" for c in chunk]
    run = [c for c, k in zip(chunk, copy, strict=True) if not k]
    got = iter(predict(model, tokenizer, [c[0] for c in run], meta, head_module, priors=[c[3] for c in run])
               if run else [])
    return [R.prior_prediction(c[3], c[4]) if k else next(got) for c, k in zip(chunk, copy, strict=True)]


def write_predictions(path: Path, step: int, ids: dict[str, list[str]], preds: dict[str, list[dict]]) -> None:
    """One JSON line per evaluated held-out row (sample id, split, step, metrics, confidence): what
    leave-one-family-out and learning-curve reports score beyond MAPE (median, P90, tau, beats the prior)."""
    lines = []
    for split, got in preds.items():
        for sid, p in zip(ids[split], got, strict=False):
            lines.append(json.dumps({"id": sid, "split": split, "step": step, "metrics": p["metrics"],
                                     "confidence": p.get("confidence")}) + "\n")
    atomic_write_text(path, "".join(lines))


def load_head(path: Path, meta: dict[str, Any], hidden: int):
    from safetensors.torch import load_file
    head = H.new_head(meta["head"], hidden)
    head.load_state_dict(load_file(str(path / "head.safetensors")))
    head.eval()
    return head


def train(data: str | Path, out: str | Path, pretrain_steps: int = 200, steps: int = 1000, batch: int = 8,
          lr: float = 1e-3, seed: int = 0, max_length: int = 1536, save_every: int = 200, resume: bool = False,
          arch: dict[str, Any] | None = None, progress: bool = True, eval_limit: int = 64,
          threads: int | None = None, hints: str = "analytical", head: str = "digits",
          init: str | Path | None = None, base_model: str | Path | None = None, lora: bool = False,
          lora_r: int = 8, holdout_family: str | None = None, workers: int = 1, focus: float = 1.0,
          max_train_rows: int | None = None, eval_each_epoch: bool = True,
          device: str = "cpu", time_limit: float | None = None, target: str = "absolute") -> dict[str, Any]:
    """Train (or resume) a checkpoint in ``out``; ``eval_each_epoch`` False evaluates at the end only
    (``--quick``), ``eval_limit`` 0 not at all; ``device`` a torch device (``cuda``: a lent GPU, with
    bfloat16 autocast; the saved weights are float32 either way). ``time_limit`` (seconds of training,
    counted across resumes) ends fine-tuning early: the learning-rate schedule then runs on the larger of
    the step and the time fraction, so a run cut by time still cools down to zero. ``target``: what the
    digits are, the metric (``absolute``) or its ratio to the analytical prior (``residual.py``)."""
    import torch
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from safetensors.torch import save_file
    from transformers import LlamaForCausalLM

    from .text import build_tokenizer, load_tokenizer

    if hints not in HINTS:
        raise UserError(f"--hints must be one of {', '.join(HINTS)}, not '{hints}'")
    if head not in H.HEADS:
        raise UserError(f"--head must be one of {', '.join(H.HEADS)}, not '{head}'")
    if target not in R.TARGETS:
        raise UserError(f"--target must be one of {', '.join(R.TARGETS)}, not '{target}'")
    if target == "ratio" and (hints != "analytical" or head != "digits"):
        raise UserError("--target ratio writes each metric's ratio to the analytical prior: it needs "
                        f"--hints analytical and --head digits (got --hints {hints} --head {head})")
    if init is not None and not (Path(init) / "config.json").is_file():
        raise UserError(f"--init {init}: no checkpoint there (expected config.json and tokenizer.json)")
    if resume and base_model is None and BM.is_base_checkpoint(out):  # a --base-model run goes on as one
        base_model, lora, lora_r = BM.recorded(out)
    if base_model is not None:
        base_model = BM.check(base_model, init, head, lora)
    elif lora:
        raise UserError("--lora adapts a --base-model; give the base model's folder")
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()  # a "Writing model shards" bar at every checkpoint drowns ours
    if threads:
        torch.set_num_threads(threads)
    dev = check_device(device)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seed_everything(seed)
    if resume and (out / META).is_file():  # a resumed run trains on the rows the first run trained on
        was = json.loads((out / META).read_text()).get("holdout_family")
        if was != holdout_family:
            raise UserError(f"--resume: the checkpoint in {out} was trained with --holdout-family "
                            f"{was or '(none)'}, not {holdout_family or '(none)'}; resume with the same option")
    rows = load_rows(data, holdout_family)
    cache = Path(data) / f"prompts-{hints}.jsonl"
    recs = prompt_records(rows, hints, cache, progress, workers)
    prompts = {k: v["prompt"] for k, v in recs.items()}
    priors = {k: v["prior"] for k, v in recs.items()}
    answers = {k: v.get("answer") for k, v in recs.items()}
    train_rows = [r for r in rows if r["split"] == "train" and r["sample_id"] in prompts]
    if max_train_rows is not None and len(train_rows) > max_train_rows:  # learning curves: a seeded subset
        keep = sorted(random.Random(seed).sample(range(len(train_rows)), max_train_rows))
        train_rows = [train_rows[i] for i in keep]
    items = examples(train_rows, prompts, priors, target, answers)
    if target == "ratio":  # where the estimator answers with the prior (residual.py) there is nothing to learn
        items = [it for it in items if not it[4]]
    # focus: rows whose analytical prior is off by more than 5 % (data-dependent control the hints miss)
    # are drawn ``focus`` times as often: where the prior is exact, copying it is all there is to learn
    weights = None
    if focus != 1.0 and hints == "analytical":
        weights = [focus if hint_error(it[2], it[3]) > math.log(1.05) else 1.0 for it in items]
    held = {s: examples([r for r in rows if r["split"] == s], prompts, priors, target, answers)
            for s in SPLITS[1:]}
    held_ids = {s: [r["sample_id"] for r in rows if r["split"] == s and r["sample_id"] in prompts
                    and R.to_target({m: float(r[m]) for m in METRICS}, priors.get(r["sample_id"]), target)]
                for s in held}
    if not items:
        raise UserError("the dataset has no training samples")
    meta = {"format": PROMPT_FORMAT, "hints": hints, "head": head, "data": str(data), "seed": seed,
            "train_rows": len(items), "focus": focus, "target": target}
    if holdout_family is not None:
        meta["holdout_family"] = holdout_family  # trained without that application family
    if head != "digits":
        meta["stats"] = H.fit_stats(head, [[it[2][m] for m in METRICS] for it in items])
    if base_model is not None:
        meta.update(BM.meta(base_model, lora, lora_r))
    if init is not None or base_model is not None:  # fine-tune only
        pretrain_steps = 0
    state_file = out / "train_state.json"
    if resume and state_file.is_file():
        state = json.loads(state_file.read_text())
        if base_model is not None:
            tokenizer, model = BM.resume(out, base_model, lora)
        else:
            tokenizer = load_tokenizer(out)
            model = LlamaForCausalLM.from_pretrained(out)
    else:
        state = {"step": 0, "history": []}
        if init is not None:
            tokenizer = load_tokenizer(init)
            model = LlamaForCausalLM.from_pretrained(init)
        elif base_model is not None:
            tokenizer, model = BM.load(base_model, lora, lora_r)
        else:
            tokenizer = build_tokenizer([it[0] for it in items])
            model = new_model(tokenizer, arch)
    model.to(dev)
    head_module = None
    params = [p for p in model.parameters() if p.requires_grad]  # LoRA: the adapter and the new token rows
    if head != "digits":
        head_module = (load_head(out, meta, model.config.hidden_size) if resume and (out / "head.safetensors")
                       .is_file() else H.new_head(head, model.config.hidden_size)).to(dev)
        head_module.train()
        params += list(head_module.parameters())
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=0.01)
    if resume and (out / "optimizer.pt").is_file():
        opt.load_state_dict(torch.load(out / "optimizer.pt", weights_only=True))
    total = pretrain_steps + steps
    rng = random.Random(seed + state["step"])
    batches = _batches(items, min(batch, len(items)), rng, weights)
    steps_per_epoch = max(1, len(items) // min(batch, len(items)))
    model.train()
    t0 = time.perf_counter()

    spent = state.get("seconds_trained", 0.0)

    def progress_at(step: int) -> float:
        """How far through the schedule: the step fraction, or past pretraining the time fraction if larger."""
        frac = step / total
        if time_limit and step >= pretrain_steps:
            frac = max(frac, (spent + time.perf_counter() - t0) / time_limit)
        return min(frac, 1.0)

    def lr_at(step: int) -> float:
        warm = max(1, total // 20) if not time_limit else max(1, min(total // 20, 200))
        if step < warm:
            return lr * (step + 1) / warm
        w = warm / total
        return lr * 0.5 * (1 + math.cos(math.pi * max(0.0, progress_at(step) - w) / max(1e-9, 1 - w)))

    def save(folder: Path = out):
        BM.save_model(model, folder)
        tokenizer.save_pretrained(folder)
        atomic_write_json(folder / META, meta)
        if head_module is not None:
            save_file({k: v.contiguous() for k, v in head_module.state_dict().items()},
                      str(folder / "head.safetensors"))
        if folder == out:
            state["seconds_trained"] = round(spent + time.perf_counter() - t0, 1)
            torch.save(opt.state_dict(), out / "optimizer.pt")
            atomic_write_json(state_file, state)

    def run_eval(bar):
        if head_module is not None:
            head_module.eval()
        kept: dict[str, list] = {s: [] for s in held}
        state.setdefault("evals", []).append(
            {"step": state["step"], **{s: evaluate(model, tokenizer, v, meta, head_module, eval_limit, keep=kept[s])
                                       for s, v in held.items() if v}})
        write_predictions(out / PREDICTIONS, state["step"], held_ids, kept)
        if head_module is not None:
            head_module.train()
        bar.console.print(f"step {state['step']}: " + ", ".join(
            f"{s} cycles MAPE {r['mape.cycles']:.1f} %" for s, r in state["evals"][-1].items()
            if isinstance(r, dict) and "mape.cycles" in r))

    columns = [TextColumn("train llm"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
               TimeRemainingColumn()]
    with Progress(*columns, disable=not progress) as bar:
        task = bar.add_task("train", total=total, completed=state["step"], info="")
        while state["step"] < total:
            step = state["step"]
            if step > pretrain_steps and progress_at(step) >= 1.0:
                total = step  # --time-limit: out of time; evaluate and save as at the last step
                bar.update(task, total=total)
                if eval_limit > 0 and (state.get("evals") or [{}])[-1].get("step") != step:
                    run_eval(bar)
                break
            sft = step >= pretrain_steps
            chunk = next(batches)
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            if sft and head_module is not None:
                ids, att = _encode_prompts(tokenizer, [c[0] for c in chunk], max_length)
                tgt = H.targets(head, meta["stats"], [[c[2][m] for m in METRICS] for c in chunk]).to(dev)
                with _autocast(dev):
                    hid = H.last_hidden(model, ids.to(dev), att.to(dev))
                loss = H.loss(head, head_module(hid.float()), tgt)
            else:
                ids, att, lab = _encode(tokenizer, [(c[0], c[1]) for c in chunk], sft, max_length)
                with _autocast(dev):
                    loss = model(input_ids=ids.to(dev), attention_mask=att.to(dev), labels=lab.to(dev)).loss
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            loss_value = loss.item()
            state["step"] = step + 1
            state["history"].append({"step": step + 1, "phase": "sft" if sft else "pretrain",
                                     "loss": round(loss_value, 5)})
            bar.update(task, advance=1, info=f"{'sft' if sft else 'pretrain'} loss {loss_value:.3f}")
            if pretrain_steps and state["step"] == pretrain_steps:
                save(out / "pretrained")
            epoch_end = eval_each_epoch and sft and (state["step"] - pretrain_steps) % steps_per_epoch == 0
            if eval_limit > 0 and (state["step"] == total or epoch_end):
                run_eval(bar)
            if state["step"] % save_every == 0 or state["step"] == total:
                save()
    state["seconds"] = round(time.perf_counter() - t0, 1)
    if head_module is None and (cal := calibrate_items(model, tokenizer, held.get("val"), meta)) is not None:
        meta["interval"] = cal  # the 90 % interval's factors, from the val rows the model answers (interval.py)
    save()
    return state
