"""The instrumented-program memo never hands one design another design's loop tree.

The timing model matches the instrumented program's statements to the design's own loop tree by
``id()``; two designs of one kernel read through two paths have two trees. Before the memo was keyed
by the tree, the second design's branch was not recognised and its cycles depended on which of the
two a process had estimated or profiled first (bfs-plain: 17,616 cycles alone, 20,688 after another).
"""

from __future__ import annotations

from pathlib import Path

from llmulator import instrument
from llmulator.design import load_design
from llmulator_plugins.analytical.estimator import AnalyticalEstimator

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "library"


def _bfs(base: Path):
    return load_design(base / "arch_specs" / "hls-fpga.yaml", base / "workloads" / "bfs.yaml",
                       base / "mappings" / "bfs-plain.yaml", variant="skewed")


def _cycles(d) -> float:
    return AnalyticalEstimator().estimate([d])[0].metrics["cycles"]


def test_a_design_read_through_another_path_gets_its_own_instrumented_program(monkeypatch):
    monkeypatch.setattr(instrument, "_MEMO", {})
    alone = _cycles(_bfs(LIB))
    other = _bfs(ROOT)  # the repository's top-level links to the same files: another path, another tree
    assert other.tree is not _bfs(LIB).tree
    monkeypatch.setattr(instrument, "_MEMO", {})
    instrument.instrumented(other)  # the other path's design fills the memo first
    assert _cycles(_bfs(LIB)) == alone
    assert _cycles(other) == alone
