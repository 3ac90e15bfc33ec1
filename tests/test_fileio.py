"""Atomic writes and the shared, sectioned report file."""

from __future__ import annotations

import os
import stat

from llmulator.fileio import atomic_write_text, update_section


def test_sections_are_replaced_in_place_and_others_kept(tmp_path):
    f = tmp_path / "results.md"
    update_section(f, "bench", "## Bench\n\nold")
    update_section(f, "ablation", "## Ablation\n\nA")
    update_section(f, "bench", "## Bench\n\nnew")
    text = f.read_text()
    assert text.startswith("# Results\n")
    assert "old" not in text and "new" in text and "## Ablation\n\nA" in text
    assert text.index("begin:bench") < text.index("begin:ablation")  # order kept
    assert text.count("<!-- begin:bench -->") == 1


def test_atomic_writes_get_the_umask_mode_not_0600(tmp_path):
    f = tmp_path / "x.txt"
    atomic_write_text(f, "hi")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(f.stat().st_mode) == 0o666 & ~mask
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
