"""hlsim's loop iterations and operation counts equal gcov's execution counts of the same kernel text, compiled
by gcc and run on the same input arrays (benchmarks/gcov_counts.py: an outside count of what ran, for `while`
loops left by the data, `break`, `continue`, `do`-`while`, triangular and zero-trip loops, `else if` chains and a
pipelined `while`). An outside probe built this comparison and found a `for` left by `break` counting its
counter compare (22 compares where the body's `if` ran 11 times): the `for-break` case."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gcov_counts  # noqa: E402


@pytest.mark.parametrize("case", sorted(gcov_counts.CASES))
def test_hlsim_counts_what_gcov_counts(case, tmp_path):
    rows = gcov_counts.compare(case, tmp_path)
    assert rows and all(want > 0 for _, want, _ in rows)   # (each case exercises what it names)
    assert [(c, float(want)) for c, want, _ in rows] == [(c, got) for c, _, got in rows]
