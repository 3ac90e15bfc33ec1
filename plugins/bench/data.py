"""Dataset rows -> the designs to estimate, per held-out split.

Each row of a synthesized dataset stores its three spec documents; they are
validated and rebuilt into :class:`llmulator.design.Design` objects here. A
row whose specs no longer rebuild (the schema moved on since the dataset was
made) is counted, with its reason, rather than dropped silently.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import yaml
from llmulator.errors import UserError


@attrs.define
class SplitDesigns:
    """The rows drawn from one split and the designs rebuilt from them (``pairs``: row, design)."""

    split: str
    available: int  # rows of this split in the dataset
    drawn: int  # rows drawn (per-split cap)
    pairs: list[tuple[dict[str, Any], Any]]
    not_rebuilt: Counter = attrs.field(factory=Counter)  # reason -> rows


def load_rows(data: str | Path) -> list[dict[str, Any]]:
    from llmulator_plugins.synth.card import read_records
    d = Path(data)
    if not d.is_dir():
        raise UserError(f"--data {data}: no such folder (expected a dataset made by `llmulator synth`)")
    if not any((d / "data").glob("*.parquet")):
        raise UserError(f"--data {data}: no Parquet shards under {d / 'data'} (expected a dataset made by "
                        "`llmulator synth --out DIR`)")
    return read_records(d)


def designs_of(rows: list[dict[str, Any]]) -> tuple[list[tuple[dict[str, Any], Any]], Counter]:
    """Rebuild each row's design; returns (row, design) pairs and a Counter of the reasons rows failed."""
    from llmulator_plugins.synth.sample import Rejected, design_of_row
    out, bad = [], Counter()
    for r in rows:
        try:
            out.append((r, design_of_row(r)))
        except (Rejected, KeyError, TypeError, yaml.YAMLError) as e:
            bad[f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"] += 1
    return out, bad


def check_holdout_family(rows: list[dict[str, Any]], family: str | None, option: str = "--holdout-family") -> None:
    """A UserError unless some row belongs to application family ``family`` (None: nothing to check)."""
    from llmulator_plugins.synth.splits import family_of
    if family is None:
        return
    present = sorted({family_of(r) for r in rows})
    if family not in present:
        raise UserError(f"{option} {family!r}: no row of the dataset belongs to that family "
                        f"(families present: {', '.join(present) or 'none'})")


def draw(rows: list[dict[str, Any]], splits: list[str], per_split: int, seed: int,
         holdout_family: str | None = None) -> dict[str, SplitDesigns]:
    """Up to ``per_split`` rows of each split, drawn uniformly at random (seeded) and rebuilt.

    ``holdout_family``: every row of that application family is in split ``test_family`` (and in no other).

    Rows are ordered by sample id before drawing, so the draw does not depend on
    how the dataset was sharded; shards are written stage by stage, so taking the
    first N rows instead would pick stage-1 programs only.
    """
    from llmulator_plugins.synth.splits import SPLITS, split_of
    by_split: dict[str, list[dict[str, Any]]] = {s: [] for s in splits}
    for r in sorted(rows, key=lambda r: r["sample_id"]):
        s = split_of(r, holdout_family)
        if s in by_split:
            by_split[s].append(r)
    out = {}
    for s in splits:
        cand = by_split[s]
        if per_split and len(cand) > per_split:
            rng = np.random.default_rng([seed, SPLITS.index(s)])  # same draw whichever splits are asked for
            idx = np.sort(rng.choice(len(cand), size=per_split, replace=False))
            chosen = [cand[k] for k in idx]
        else:
            chosen = cand
        pairs, bad = designs_of(chosen)
        out[s] = SplitDesigns(s, len(cand), len(chosen), pairs, bad)
    return out
