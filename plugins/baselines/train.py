"""Training a baseline: ``llmulator train gnn|tlp|tensetmlp --data DIR --out DIR``.

Reads the synthesizer's shards, featurises every row once (cached in
``OUT/state/features.npz``), trains on the ``train`` split with AdamW, a
cosine schedule and MSE on normalised log-metrics, evaluates on ``val``
after every epoch (loss and MAPE per metric) and keeps the best epoch's
weights as the predictor. Everything is written atomically after each epoch:
``OUT/model.safetensors`` + ``OUT/config.json`` (the predictor: all an
estimator needs) and ``OUT/state/`` (last weights, optimizer, history) for
``--resume``. Seeds fix the initialisation and the batch order of every
epoch, so a resumed run ends where an uninterrupted one would.
"""

from __future__ import annotations

import io
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from llmulator.errors import UserError
from llmulator.fileio import atomic_write_bytes, atomic_write_json

from .data import (
    DIMS,
    FEATURE_VERSION,
    METRICS,
    SPLITS,
    load_or_featurise,
    load_rows,
    prefeaturise,
    shared_cache,
    to_batch,
)
from .features import ARCH_DIM
from .guards import training_ranges

DEFAULTS = {"gnn": {"epochs": 80, "batch": 32, "lr": 2e-3, "weight_decay": 1e-5},
            "tlp": {"epochs": 60, "batch": 32, "lr": 1e-3, "weight_decay": 1e-5},
            "tensetmlp": {"epochs": 100, "batch": 32, "lr": 1e-3, "weight_decay": 1e-5}}


def _save_tensors(path: Path, tensors: dict) -> None:
    from safetensors.torch import save
    atomic_write_bytes(path, save({k: v.detach().contiguous() for k, v in tensors.items()}))


def _load_tensors(path: Path) -> dict:
    from safetensors.torch import load_file
    return load_file(str(path))


def _logs(model, packed: dict[str, np.ndarray], idx: np.ndarray, batch: int = 256):
    """(predicted, labelled) log-metrics of rows ``idx``, torch tensors [rows, metrics]."""
    import torch
    model.eval()
    preds, ys = [], []
    with torch.no_grad():
        for k in range(0, len(idx), batch):
            b = to_batch(packed, idx[k:k + batch])
            preds.append(model.to_log(model(b)))
            ys.append(b["y"])
    model.train()
    return torch.cat(preds), torch.cat(ys)


def interval_calibration(model, packed: dict[str, np.ndarray], idx: np.ndarray) -> dict:
    """The split-conformal factors of the 90 % interval (``llmulator.conformal``) on held-out rows ``idx``:
    cycles, energy and area, the metrics the estimator reports as the network predicts them (power is
    derived from energy and cycles)."""
    from llmulator.conformal import QUANTILES, factors
    ratios = {}
    if len(idx):
        p, y = _logs(model, packed, idx)
        r = (y - p).numpy()
        ratios = {m: r[:, i].tolist() for i, m in enumerate(METRICS) if m in ("cycles", "energy_pj", "area_um2")}
    return {"factors": factors(ratios), "rows": int(len(idx)), "split": "val", "quantiles": list(QUANTILES)}


def evaluate(model, packed: dict[str, np.ndarray], idx: np.ndarray, batch: int = 256) -> dict[str, float]:
    """Normalised MSE and MAPE (%) per metric on rows ``idx``."""
    if len(idx) == 0:
        return {}
    p, y = _logs(model, packed, idx, batch)
    mse = (((p - y) / model.y_std) ** 2).mean().item()
    ape = ((p.exp() - y.exp()).abs() / y.exp()).mean(0) * 100
    return {"loss": round(mse, 5), **{f"mape.{m}": round(float(ape[i]), 2) for i, m in enumerate(METRICS)}}


def train(kind: str, data: str | Path, out: str | Path, epochs: int | None = None, batch: int | None = None,
          lr: float | None = None, seed: int = 0, threads: int | None = 1, resume: bool = False,
          progress: bool = True, hyper: dict[str, Any] | None = None, rows: list[dict] | None = None,
          weight_decay: float | None = None, holdout_family: str | None = None, workers: int = 1,
          max_train_rows: int | None = None) -> dict:
    """Train baseline ``kind``; ``holdout_family``: leave that application family out (split ``test_family``,
    evaluated at the end with the other held-out splits)."""
    import torch
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from .models import build

    if kind not in DIMS:
        raise UserError(f"unknown baseline '{kind}' (one of: {', '.join(DIMS)})")
    d = DEFAULTS[kind]
    epochs = epochs or d["epochs"]
    batch = batch or d["batch"]
    lr = lr or d["lr"]
    weight_decay = d["weight_decay"] if weight_decay is None else weight_decay
    if threads:
        torch.set_num_threads(threads)
    rows = rows if rows is not None else load_rows(data)
    from llmulator.dataset import check_holdout_family
    check_holdout_family(rows, holdout_family)
    out = Path(out)
    state_dir = out / "state"
    state_file = state_dir / "train_state.json"
    if resume and state_file.is_file():  # a resumed run trains on the rows the first run trained on
        was = json.loads(state_file.read_text()).get("holdout_family")
        if was != holdout_family:
            raise UserError(f"--resume: the run in {out} was trained with --holdout-family {was or '(none)'}, "
                            f"not {holdout_family or '(none)'}; resume with the same option")
    state_dir.mkdir(parents=True, exist_ok=True)
    # features are cached in the dataset's folder (shared by every run on it: other kinds, families, seeds);
    # in the run's own state folder when the dataset's folder is read-only
    cache = shared_cache(data, kind) if data is not None else state_dir / "features.npz"
    if workers > 1 and data is not None:
        prefeaturise(data, rows, workers, progress)  # every kind at once, one design rebuild per row
    if data is not None and not os.access(cache.parent, os.W_OK) and not cache.is_file():
        cache = state_dir / "features.npz"
    packed = load_or_featurise(kind, rows, cache, progress, holdout_family)
    split = packed["split"]
    tr = np.flatnonzero(split == SPLITS.index("train"))
    if max_train_rows is not None and len(tr) > max_train_rows:  # learning curves: a seeded subset
        tr = np.sort(np.random.default_rng(seed).choice(tr, size=max_train_rows, replace=False))
    va = np.flatnonzero(split == SPLITS.index("val"))
    if len(tr) == 0:
        raise UserError(f"the dataset at {data} has no training samples")
    held = {s: np.flatnonzero(split == SPLITS.index(s)) for s in SPLITS[1:]}

    torch.manual_seed(seed)
    config = {"kind": kind, "in_dim": DIMS[kind], "arch_dim": ARCH_DIM, "hyper": dict(hyper or {}),
              "feature_version": FEATURE_VERSION, "metrics": list(METRICS), "target": "log(metric)",
              "seed": seed, "epochs": epochs, "batch": batch, "lr": lr,
              "weight_decay": weight_decay}
    if holdout_family is not None:
        config["holdout_family"] = holdout_family  # trained without that application family
    model = build(config)
    full = to_batch(packed, tr)
    model.set_stats(full["x"], full["g"], full["y"])
    # what the estimator clips its outputs to and checks a design's features against (guards.py)
    config.update(training_ranges(METRICS, full["x"].numpy(), full["g"].numpy(), full["y"].numpy()))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    state: dict[str, Any] = {"epoch": 0, "history": [], "best": None, "seconds": 0.0,
                             "holdout_family": holdout_family}
    if resume and state_file.is_file() and (state_dir / "last.safetensors").is_file():
        state = json.loads(state_file.read_text())
        model.load_state_dict(_load_tensors(state_dir / "last.safetensors"))
        opt.load_state_dict(torch.load(state_dir / "optimizer.pt", weights_only=True))
    steps_per_epoch = math.ceil(len(tr) / batch)
    total = epochs * steps_per_epoch

    def lr_at(step: int) -> float:
        warm = max(1, steps_per_epoch)
        if step < warm:
            return lr * (step + 1) / warm
        return lr * 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warm) / max(1, total - warm))))

    def save_epoch(best: bool) -> None:
        if best:
            _save_tensors(out / "model.safetensors", model.state_dict())
            atomic_write_json(out / "config.json", {**config, "trained": {
                "best_epoch": state["best"]["epoch"], "val": state["best"]["val"],
                "train_rows": int(len(tr)), "seconds": round(state["seconds"], 1)}})
        _save_tensors(state_dir / "last.safetensors", model.state_dict())
        buf = io.BytesIO()
        torch.save(opt.state_dict(), buf)
        atomic_write_bytes(state_dir / "optimizer.pt", buf.getvalue())
        atomic_write_json(state_file, state)

    columns = [TextColumn(f"train {kind}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
               TimeRemainingColumn()]
    model.train()
    with Progress(*columns, disable=not progress) as bar:
        task = bar.add_task("epochs", total=epochs, completed=state["epoch"], info="")
        while state["epoch"] < epochs:
            t0 = time.perf_counter()
            ep = state["epoch"]
            order = np.random.default_rng([seed, ep]).permutation(tr)
            losses = []
            for k in range(steps_per_epoch):
                idx = order[k * batch:(k + 1) * batch]
                b = to_batch(packed, idx)
                for g in opt.param_groups:
                    g["lr"] = lr_at(ep * steps_per_epoch + k)
                loss = torch.nn.functional.mse_loss(model(b), (b["y"] - model.y_mean) / model.y_std)
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                losses.append(loss.item())
            val = evaluate(model, packed, va) if len(va) else evaluate(model, packed, tr[:64])
            state["epoch"] = ep + 1
            state["seconds"] += time.perf_counter() - t0
            state["history"].append({"epoch": ep + 1, "train_loss": round(float(np.mean(losses)), 5), "val": val})
            is_best = state["best"] is None or val["loss"] < state["best"]["val"]["loss"]
            if is_best:
                state["best"] = {"epoch": ep + 1, "val": val}
            save_epoch(is_best)
            bar.update(task, advance=1, info=f"loss {np.mean(losses):.4f} val {val['loss']:.4f} "
                                             f"cycles {val['mape.cycles']:.1f}%")
    # final: the best weights on every held-out split
    model.load_state_dict(_load_tensors(out / "model.safetensors"))
    state["final"] = {s: evaluate(model, packed, idx) for s, idx in held.items() if len(idx)}
    atomic_write_json(state_file, state)
    cfg = json.loads((out / "config.json").read_text())
    cfg["trained"]["held_out"] = state["final"]
    cfg["trained"]["seconds"] = round(state["seconds"], 1)
    cfg["interval"] = interval_calibration(model, packed, va)  # a 90 % interval from val's residuals
    atomic_write_json(out / "config.json", cfg)
    return state
