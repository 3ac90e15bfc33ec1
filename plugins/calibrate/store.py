"""Named calibration contexts on disk, and the bounded replay buffer of profiler feedback.

A *context* is what a calibration leaves behind for later estimates: a folder
``$LLMULATOR_HOME/contexts/NAME`` (default ``~/.cache/llmulator/contexts/NAME``)
holding

* ``context.json`` — which calibrator and estimator made it, the model it was
  calibrated on, the current state (per-metric scale factors, or the name of the
  current LoRA adapter folder) and a log of updates; written atomically, it is
  the commit point: an adapter folder counts only once ``context.json`` names it;
* ``buffer.json`` — the replay buffer (feedback: prompt, profiled metrics, the
  model's own prediction), written atomically after every new sample, so a
  calibration killed at any point loses no feedback it has collected;
* ``adapter-NNNN/`` — LoRA adapters (``dpo``/``sft``); older ones are deleted
  once a newer one is committed.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from llmulator.errors import UserError
from llmulator.fileio import atomic_write_json

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
CONTEXT_FILE = "context.json"
BUFFER_FILE = "buffer.json"


def home() -> Path:
    from llmulator.fileio import user_home
    return user_home()


def contexts_dir() -> Path:
    return home() / "contexts"


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise UserError(f"bad context name {name!r}: expected letters, digits, '.', '_' or '-' "
                        "(starting with a letter or digit, at most 100 characters)")
    return name


def context_path(name: str) -> Path:
    return contexts_dir() / check_name(name)


def read_context(name: str) -> dict[str, Any] | None:
    """The context's metadata, or None when there is no such context."""
    f = context_path(name) / CONTEXT_FILE
    if not f.is_file():
        return None
    try:
        meta = json.loads(f.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"context '{name}' is damaged: {f}: {e}") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("calibrator", ""), str):
        raise UserError(f"context '{name}' is damaged: {f} does not hold a context's metadata (a JSON object)")
    return meta


def write_context(name: str, meta: dict[str, Any]) -> None:
    meta = {**meta, "name": name, "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    atomic_write_json(context_path(name) / CONTEXT_FILE, meta)


def list_contexts() -> dict[str, dict[str, Any]]:
    out = {}
    root = contexts_dir()
    if root.is_dir():
        for d in sorted(root.iterdir()):
            if d.is_dir() and NAME_RE.match(d.name) and (d / CONTEXT_FILE).is_file():
                try:  # one damaged context must not hide (or break) the others
                    meta = read_context(d.name)
                    if meta is not None:
                        meta["buffer_entries"] = len(ReplayBuffer(d / BUFFER_FILE).entries)
                        out[d.name] = meta
                except (UserError, OSError, ValueError, TypeError, KeyError) as e:
                    print(f"notice: skipping calibration context '{d.name}': {e}", file=sys.stderr)
    return out


def remove_context(name: str) -> None:
    p = context_path(name)
    if not (p / CONTEXT_FILE).is_file():
        raise UserError(f"no calibration context '{name}' under {contexts_dir()} (see `llmulator contexts`)")
    shutil.rmtree(p)


def open_context(name: str, calibrator: str, estimator: str, model: str | None) -> dict[str, Any]:
    """Existing metadata, checked to belong to this calibrator and model; or fresh metadata for a new context."""
    meta = read_context(name)
    if meta is None:
        return {"name": name, "calibrator": calibrator, "estimator": estimator, "model": model,
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "updates": 0, "rollbacks": 0,
                "log": []}
    if meta.get("calibrator") != calibrator or meta.get("estimator") != estimator:
        raise UserError(f"context '{name}' was made by calibrator '{meta.get('calibrator')}' for estimator "
                        f"'{meta.get('estimator')}', not '{calibrator}' for '{estimator}'; choose another "
                        "--context name or remove it with `llmulator contexts --remove`")
    if model is not None and meta.get("model") not in (None, model):
        raise UserError(f"context '{name}' was calibrated on model {meta.get('model')}, but the estimator now "
                        f"loads {model}; use another --context name")
    return meta


class ReplayBuffer:
    """A bounded list of feedback samples, persisted (atomically) after every change.

    When full, a new sample evicts a random one among the older half, never one
    of the newest ``capacity // 2``: recent feedback is kept and older feedback
    survives with decreasing probability, so updates keep mixing old samples in.
    Every ``hold_every``-th sample (by id), once it is no longer the newest, is
    held back from training and used to check updates.
    """

    def __init__(self, path: str | Path, capacity: int = 256, hold_every: int = 4, seed: int = 0):
        self.path = Path(path)
        self.capacity = max(2, int(capacity))
        self.hold_every = hold_every
        self.rng = random.Random(seed)
        self.entries: list[dict[str, Any]] = []
        self.next_id = 0
        if self.path.is_file():
            try:
                data = json.loads(self.path.read_text())
            except json.JSONDecodeError as e:
                raise UserError(f"replay buffer {self.path} is damaged: {e}") from None
            self.entries = list(data.get("entries", []))
            self.next_id = int(data.get("next_id", len(self.entries)))

    def add(self, entry: dict[str, Any]) -> dict[str, Any]:
        entry = {**entry, "id": self.next_id, "time": time.time()}
        self.next_id += 1
        self.entries.append(entry)
        while len(self.entries) > self.capacity:
            older = len(self.entries) - self.capacity // 2
            del self.entries[self.rng.randrange(older)]
        self.save()
        return entry

    def save(self) -> None:
        atomic_write_json(self.path, {"version": 1, "capacity": self.capacity, "next_id": self.next_id,
                                      "entries": self.entries})

    def held_back(self, entry: dict[str, Any]) -> bool:
        return self.hold_every > 0 and entry["id"] % self.hold_every == self.hold_every - 1

    def split(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(training entries, check entries).

        The newest entry always trains (it is the feedback the update is for); held-back entries are the older
        ones marked by id. With nothing held back yet, the check uses the training entries.
        """
        newest = self.entries[-1:] if self.entries else []
        older = self.entries[:-1]
        train = [e for e in older if not self.held_back(e)] + newest
        check = [e for e in older if self.held_back(e)]
        return train, (check or train)

    def sample(self, train: list[dict[str, Any]], newest: int = 1, older: int = 7) -> list[dict[str, Any]]:
        """The ``newest`` most recent training entries plus up to ``older`` random earlier ones (replay)."""
        recent = train[-newest:] if newest else []
        rest = train[:-newest] if newest else list(train)
        return self.rng.sample(rest, min(older, len(rest))) + recent
