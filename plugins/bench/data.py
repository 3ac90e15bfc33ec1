"""Dataset rows -> the designs to estimate, per held-out split.

Each row of a synthesized dataset stores its three spec documents; they are
validated and rebuilt into :class:`llmulator.design.Design` objects
(``llmulator.dataset.designs_of``). A row whose specs no longer rebuild (the
schema moved on since the dataset was made) is counted, with its reason,
rather than dropped silently.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import attrs
import numpy as np


@attrs.define
class SplitDesigns:
    """The rows drawn from one split and the designs rebuilt from them (``pairs``: row, design)."""

    split: str
    available: int  # rows of this split in the dataset
    drawn: int  # rows drawn (per-split cap)
    pairs: list[tuple[dict[str, Any], Any]]
    not_rebuilt: Counter = attrs.field(factory=Counter)  # reason -> rows


def draw(rows: list[dict[str, Any]], splits: list[str], per_split: int, seed: int,
         holdout_family: str | None = None) -> dict[str, SplitDesigns]:
    """Up to ``per_split`` rows of each split, drawn uniformly at random (seeded) and rebuilt.

    ``holdout_family``: every row of that application family is in split ``test_family`` (and in no other).

    Rows are ordered by sample id before drawing, so the draw does not depend on
    how the dataset was sharded; shards are written stage by stage, so taking the
    first N rows instead would pick stage-1 programs only.
    """
    from llmulator.dataset import SPLITS, designs_of, rows_by_split
    by_split = rows_by_split(rows, splits, holdout_family)
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
