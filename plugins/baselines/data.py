"""Dataset rows -> featurised, packed arrays (cached once per training folder) and torch batches.

A packed set stores the per-design vector sets back to back (``x`` with
offsets ``x_off``), local edges likewise (``e``/``e_off``), the architecture
vectors ``g``, the log-metric targets ``y``, the sample ids and the position
of every packed design among the dataset's rows (``row``). It is written as one
``.npz`` (no pickles) keyed by the featuriser version and the sample ids, so a
second training run or a resumed one skips featurisation. The split of every
row is not cached: :func:`load_or_featurise` recomputes it from the rows with
the current split rules and the run's ``holdout_family`` every time.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from llmulator.dataset import METRICS, SPLITS, split_of
from llmulator.design import Design
from llmulator.errors import SpecError, UserError
from llmulator.fileio import atomic_write_bytes

from . import graph, sequence, statements
from .features import ARCH_DIM, Featurised

FEATURE_VERSION = "1"
FEATURISERS: dict[str, Callable[[Design], Featurised]] = {
    "gnn": graph.featurise, "tlp": sequence.featurise, "tensetmlp": statements.featurise}
DIMS = {"gnn": graph.NODE_DIM, "tlp": sequence.STEP_DIM, "tensetmlp": statements.STMT_DIM}


def pack(items: Sequence[Featurised], dim: int) -> dict[str, np.ndarray]:
    xs = [f.x for f in items]
    es = [f.edges if f.edges is not None else np.zeros((0, 3), np.int64) for f in items]
    x_off = np.zeros(len(items) + 1, np.int64)
    x_off[1:] = np.cumsum([len(x) for x in xs])
    e_off = np.zeros(len(items) + 1, np.int64)
    e_off[1:] = np.cumsum([len(e) for e in es])
    return {"x": np.concatenate(xs).astype(np.float32) if xs else np.zeros((0, dim), np.float32), "x_off": x_off,
            "e": np.concatenate(es).astype(np.int64) if es else np.zeros((0, 3), np.int64), "e_off": e_off,
            "g": np.stack([f.g for f in items]).astype(np.float32) if items else np.zeros((0, ARCH_DIM), np.float32)}


def split_codes(rows: list[dict[str, Any]], holdout_family: str | None = None) -> np.ndarray:
    """Index in :data:`SPLITS` of every row's split (``holdout_family``: that family is ``test_family``)."""
    return np.asarray([SPLITS.index(split_of(r, holdout_family)) for r in rows], np.int64)


def featurise_rows(kind: str, rows: list[dict[str, Any]], progress: bool = True,
                   holdout_family: str | None = None) -> dict[str, np.ndarray]:
    """Rebuild each row's design, featurise it; rows whose design no longer builds are dropped."""
    from llmulator.dataset import Rejected, design_of_row
    from rich.progress import Progress

    fn = FEATURISERS[kind]
    items, ys, kept, ids = [], [], [], []
    with Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task(f"featurise {kind}", total=len(rows))
        for k, r in enumerate(rows):
            bar.advance(task)
            try:
                f = fn(design_of_row(r))
            except (Rejected, SpecError):
                continue
            items.append(f)
            ys.append([np.log(max(float(r[m]), 1e-30)) for m in METRICS])
            kept.append(k)
            ids.append(str(r.get("sample_id", len(ids))))
    out = pack(items, DIMS[kind])
    out["y"] = np.asarray(ys, np.float32).reshape(-1, len(METRICS))
    out["row"] = np.asarray(kept, np.int64)
    out["split"] = split_codes([rows[k] for k in kept], holdout_family)
    out["ids"] = np.asarray(ids, dtype=np.str_)
    return out


def _featurise_chunk(job: tuple[list[str], list[dict[str, Any]], int]) -> dict[str, list]:
    """Featurise some rows for several kinds from one design rebuild (runs in a worker process)."""
    from llmulator.dataset import Rejected, design_of_row
    kinds, rows, start = job
    out: dict[str, list] = {k: [] for k in kinds}
    for k, r in enumerate(rows):
        try:
            d = design_of_row(r)
            feats = {kind: FEATURISERS[kind](d) for kind in kinds}
        except (Rejected, SpecError):
            continue
        y = [np.log(max(float(r[m]), 1e-30)) for m in METRICS]
        for kind in kinds:
            out[kind].append((start + k, feats[kind], y, str(r.get("sample_id", start + k))))
    return out


def featurise_all(kinds: Sequence[str], rows: list[dict[str, Any]], workers: int = 1, progress: bool = True,
                  chunk: int = 256) -> dict[str, dict[str, np.ndarray]]:
    """Packed features of ``rows`` for every kind in ``kinds`` (one design rebuild per row serves them all),
    in ``workers`` processes; rows whose design no longer builds are dropped. No ``split`` (see
    :func:`load_or_featurise`)."""
    from rich.progress import track
    jobs = [(list(kinds), rows[k:k + chunk], k) for k in range(0, len(rows), chunk)]
    got: dict[str, list] = {k: [] for k in kinds}
    if workers > 1 and len(jobs) > 1:
        from llmulator.pools import worker_pool
        with worker_pool(workers) as ex:
            for res in track(ex.map(_featurise_chunk, jobs), total=len(jobs), disable=not progress,
                             description=f"featurise {','.join(kinds)} ({len(rows)} rows, {workers} workers)"):
                for kind in kinds:
                    got[kind].extend(res[kind])
    else:
        for res in track(map(_featurise_chunk, jobs), total=len(jobs), disable=not progress,
                         description=f"featurise {','.join(kinds)} ({len(rows)} rows)"):
            for kind in kinds:
                got[kind].extend(res[kind])
    out = {}
    for kind in kinds:
        items = got[kind]
        packed = pack([f for _, f, _, _ in items], DIMS[kind])
        packed["y"] = np.asarray([y for _, _, y, _ in items], np.float32).reshape(-1, len(METRICS))
        packed["row"] = np.asarray([k for k, _, _, _ in items], np.int64)
        packed["ids"] = np.asarray([i for _, _, _, i in items], dtype=np.str_)
        out[kind] = packed
    return out


def save_cache(cache: Path, key: str, packed: dict[str, np.ndarray]) -> bool:
    """Write a feature cache atomically; False (and nothing written) where the folder is not writable."""
    buf = io.BytesIO()
    np.savez(buf, key=np.asarray(key), **{k: v for k, v in packed.items() if k != "split"})
    try:
        atomic_write_bytes(cache, buf.getvalue())
    except (OSError, UserError):
        return False
    return True


def shared_cache(data: str | Path, kind: str) -> Path:
    """Where the features of a dataset are cached for every training run on it (the dataset's folder)."""
    return Path(data) / f"features-{kind}-v{FEATURE_VERSION}.npz"


def prefeaturise(data: str | Path, rows: list[dict[str, Any]], workers: int, progress: bool = True) -> None:
    """Fill the dataset's shared feature caches of every baseline kind that lacks a current one."""
    todo = [k for k in FEATURISERS if not _cache_matches(shared_cache(data, k), cache_key(k, rows), rows)]
    if not todo:
        return
    for kind, packed in featurise_all(todo, rows, workers, progress).items():
        save_cache(shared_cache(data, kind), cache_key(kind, rows), packed)


def _cache_matches(cache: Path, key: str, rows: list[dict[str, Any]]) -> bool:
    if not cache.is_file():
        return False
    try:
        with np.load(cache, allow_pickle=False) as z:
            return str(z["key"]) == key and _cached_rows(z, rows) is not None
    except (OSError, ValueError, KeyError):
        return False


def cache_key(kind: str, rows: list[dict[str, Any]]) -> str:
    h = hashlib.sha1(f"{kind}:{FEATURE_VERSION}:".encode())
    for r in rows:
        h.update(str(r.get("sample_id", "")).encode())
        h.update(repr([r[m] for m in METRICS]).encode())
    return h.hexdigest()


def _cached_rows(z, rows: list[dict[str, Any]]) -> np.ndarray | None:
    """Positions in ``rows`` of a cache's packed designs (a cache from before ``row`` was stored: by sample id)."""
    if "row" in z.files:
        return np.asarray(z["row"], np.int64)
    where = {str(r.get("sample_id", "")): k for k, r in enumerate(rows)}
    pos = [where.get(str(i)) for i in z["ids"]]
    return None if any(p is None for p in pos) else np.asarray(pos, np.int64)


def load_or_featurise(kind: str, rows: list[dict[str, Any]], cache: Path, progress: bool = True,
                      holdout_family: str | None = None):
    """The packed features of ``rows`` (from ``cache`` when its key matches), with ``split`` computed afresh
    from the rows: split rules and ``holdout_family`` never come from the cache."""
    key = cache_key(kind, rows)
    if cache.is_file():
        with np.load(cache, allow_pickle=False) as z:
            pos = _cached_rows(z, rows) if str(z["key"]) == key else None
            if pos is not None:
                packed = {k: z[k] for k in z.files if k not in ("key", "split")}
                packed["row"] = pos
                packed["split"] = split_codes([rows[k] for k in pos], holdout_family)
                return packed
    packed = featurise_rows(kind, rows, progress, holdout_family)
    save_cache(cache, key, packed)
    return packed


def load_rows(data: str | Path) -> list[dict[str, Any]]:
    """The dataset's rows, ordered by sample id."""
    from llmulator.dataset import read_records
    if not (Path(data) / "data").is_dir():
        raise UserError(f"no dataset at {data}: expected {data}/data/*.parquet made by `llmulator synth`")
    rows = read_records(data)
    if not rows:
        raise UserError(f"no samples under {data}/data; make a dataset with `llmulator synth`")
    return sorted(rows, key=lambda r: str(r.get("sample_id", "")))


def select(packed: dict[str, np.ndarray], idx: Sequence[int]) -> dict[str, np.ndarray]:
    """A sub-set of a packed set (rows ``idx``), re-packed."""
    items = []
    for i in idx:
        a, b = packed["x_off"][i], packed["x_off"][i + 1]
        ea, eb = packed["e_off"][i], packed["e_off"][i + 1]
        items.append(Featurised(packed["x"][a:b], packed["g"][i], packed["e"][ea:eb]))
    out = pack(items, packed["x"].shape[1])
    for k in ("y", "split"):
        if k in packed:
            out[k] = packed[k][list(idx)]
    return out


def to_batch(packed: dict[str, np.ndarray], idx: Sequence[int] | None = None) -> dict[str, Any]:
    """Torch tensors for the model: node/step/statement rows with their design index, edges, padding."""
    import torch
    p = packed if idx is None else select(packed, idx)
    x_off, e_off = p["x_off"], p["e_off"]
    n = len(x_off) - 1
    counts = np.diff(x_off)
    seg = np.repeat(np.arange(n), counts)
    e = p["e"]
    shift = np.repeat(x_off[:-1], np.diff(e_off))
    pos = np.arange(len(p["x"])) - np.repeat(x_off[:-1], counts)
    batch = {"x": torch.from_numpy(p["x"]), "seg": torch.from_numpy(seg), "n": n,
             "src": torch.from_numpy(e[:, 0] + shift), "dst": torch.from_numpy(e[:, 1] + shift),
             "etype": torch.from_numpy(e[:, 2].copy()), "g": torch.from_numpy(p["g"]),
             "pos": torch.from_numpy(pos), "max_len": int(counts.max()) if n else 0}
    if "y" in p:
        batch["y"] = torch.from_numpy(p["y"])
    return batch
