"""Designs the profiler refused while a dataset was made: kept, reproducible, counted, and the run goes on.

hlsim proves physical bounds on every profile (cycles against units, ports and recurrences; DRAM words
against the distinct elements the run touched) and raises ``InvariantError`` where its own timing model
breaks one. That is a bug of the model, not of the sample, and no row may carry such a label. Before, one
refusal stopped ``llmulator synth`` (or ``--relabel``) with a traceback after hours of work (2026-12-07: an
fdtd-2d mutation at 40,832 rows); the sample is now drawn again like any sample that does not label, and the
refused design is written to ``<out>/refused/<sample>-<attempt>/`` as the three spec files and a
``refusal.json`` with the message and the ``llmulator profile`` command that reproduces it. The run's manifest
(``refused``) and the relabel summary count them.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from llmulator.dataset import SampleSpec, spec_yaml
from llmulator.fileio import atomic_write_json, atomic_write_text

FOLDER = "refused"


def refusal(spec: SampleSpec, sample_id: str, attempt: str, err: Exception) -> dict[str, Any]:
    """One refused draw as plain data (it crosses from a worker process to the parent that writes it)."""
    return {"sample_id": sample_id, "attempt": attempt, "message": str(err).splitlines()[0][:2000],
            "arch": spec_yaml("architecture", spec.arch), "workload": spec_yaml("workload", spec.workload),
            "mapping": spec_yaml("mapping", spec.mapping), "preset": spec.preset, "variant": spec.variant,
            "input_seed": int(spec.input_seed)}


def save(out: str | Path, refused: list[dict[str, Any]]) -> list[Path]:
    """Write each refused draw to its own folder under ``<out>/refused/``; returns the folders."""
    folders = []
    for r in refused:
        folder = Path(out) / FOLDER / f"{r['sample_id']}-{r['attempt']}"
        for kind in ("arch", "workload", "mapping"):
            atomic_write_text(folder / f"{kind}.yaml", r[kind])
        cmd = ["llmulator", "profile", str(folder / "arch.yaml"), str(folder / "workload.yaml"),
               str(folder / "mapping.yaml"), "--inputs", str(r["input_seed"])]
        cmd += ["--preset", r["preset"]] if r["preset"] else []
        cmd += ["--variant", r["variant"]] if r["variant"] else []
        atomic_write_json(folder / "refusal.json", {k: r[k] for k in ("sample_id", "attempt", "message",
                                                                        "preset", "variant", "input_seed")}
                          | {"reproduce": shlex.join(cmd)})
        folders.append(folder)
    return folders


def count(out: str | Path) -> int:
    """How many refused draws the dataset's folder holds (every run so far)."""
    root = Path(out) / FOLDER
    return sum(1 for p in root.glob("*/refusal.json")) if root.is_dir() else 0
