"""Held-out splits and the dataset card (docs/dataset.md), generated from the shards.

Splits hold out whole groups, so every accuracy figure is a generalisation
figure: ``test_app`` — every sample of an application (a library kernel or a
stage-1 program) whose name hashes into the held-out 15 %; ``test_hw`` — every
sample on a hardware configuration that hashes into the held-out 10 %;
``test_input`` — every sample drawn from an input distribution (workload:variant)
that hashes into the held-out 15 %; ``val`` — 5 % of the rest by sample id;
``train`` — the remainder. The rules are a pure function of the record, so any
tool (training, bench) recomputes the same split.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from llmulator.fileio import atomic_write_text

SPLITS = ("train", "val", "test_app", "test_hw", "test_input")
HELD_OUT = {"app": 15, "hw": 10, "input_dist": 15}


def _bucket(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest(), 16) % 100


def split_of(rec: dict[str, Any]) -> str:
    if _bucket("app:" + rec["app"].split(".mut")[0]) < HELD_OUT["app"]:
        return "test_app"
    if _bucket("hw:" + rec["hw"]) < HELD_OUT["hw"]:
        return "test_hw"
    if _bucket("input:" + rec["input_dist"]) < HELD_OUT["input_dist"]:
        return "test_input"
    if _bucket("id:" + rec["sample_id"]) < 5:
        return "val"
    return "train"


def read_records(out: str | Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq
    rows: list[dict[str, Any]] = []
    for f in sorted((Path(out) / "data").glob("*.parquet")):
        rows.extend(pq.read_table(f).to_pylist())
    return rows


def _stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = max(len(rows), 1)
    ops: Counter = Counter()
    for r in rows:
        ops.update(json.loads(r["op_mix_json"]))
    total_ops = sum(ops.values()) or 1
    trips = []
    for r in rows:
        facts = json.loads(r.get("facts_json", "{}"))
        trips.extend(v for k, v in facts.items() if k.startswith("trips."))
    acc = sum(r["affine_accesses"] + r["indirect_accesses"] for r in rows) or 1
    depth = Counter(r["loop_depth"] for r in rows)
    out = {
        "samples": len(rows),
        "loop depth": " ".join(f"{k}:{depth[k] / n:.0%}" for k in sorted(depth)),
        "loops per program (mean)": f"{np.mean([r['n_loops'] for r in rows]):.2f}" if rows else "-",
        "programs with data-dependent loops": f"{sum(r['data_dependent_loops'] > 0 for r in rows) / n:.0%}",
        "programs with branches": f"{sum(r['branches'] > 0 for r in rows) / n:.0%}",
        "trip count p10 / p50 / p90": (" / ".join(f"{np.percentile(trips, q):.3g}" for q in (10, 50, 90))
                                       if trips else "-"),
        "operation mix": ", ".join(f"{k} {v / total_ops:.0%}" for k, v in ops.most_common(6)),
        "indirect accesses": f"{sum(r['indirect_accesses'] for r in rows) / acc:.1%}",
    }
    for p in ("pipeline", "unroll", "tile", "spatial", "partition"):
        out[f"designs with {p}"] = f"{sum(r[f'pragma_{p}'] > 0 for r in rows) / n:.0%}"
    for m in ("cycles", "energy_pj", "power_mw", "area_um2"):
        vals = np.array([r[m] for r in rows if r.get(m)])
        out[f"{m} min / median / max"] = (f"{vals.min():.3g} / {np.median(vals):.3g} / {vals.max():.3g}"
                                          if vals.size else "-")
    return out


def library_records() -> list[dict[str, Any]]:
    """The same statistics over the workload library (each mapping on its own architecture, profiled)."""
    import yaml
    from llmulator import plugins
    from llmulator.design import load_design
    from llmulator.library import entries

    from .sample import structure_stats
    prof = plugins.get("profilers", "hlsim")
    rows = []
    for e in entries("mapping"):
        m = yaml.safe_load(Path(e["path"]).read_text())["mapping"]
        try:
            d = load_design(Path(e["path"]).parent.parent / "arch_specs" / f"{m['architecture']}.yaml",
                            Path(e["path"]).parent.parent / "workloads" / f"{m['workload']}.yaml", e["path"])
            p = prof.profile(d)
        except Exception:  # noqa: BLE001 - a library entry that does not run is skipped in the comparison
            continue
        facts = {k: v for k, v in p.counters.items() if k.startswith("trips.")}
        rows.append({**structure_stats(d), **{k: p.metrics[k] for k in ("cycles", "energy_pj", "power_mw",
                                                                         "area_um2")},
                     "facts_json": json.dumps(facts)})
    return rows


def write_card(out: str | Path, path: str | Path, library: bool = True) -> str:
    out = Path(out)
    rows = read_records(out)
    manifest = json.loads((out / "dataset.json").read_text())
    splits = Counter(split_of(r) for r in rows)
    by_stage: dict[int, list] = {}
    for r in rows:
        by_stage.setdefault(r["stage"], []).append(r)
    lines = ["# Dataset card", "",
             f"Generated by `llmulator synth --stages {','.join(map(str, manifest['stages']))} --n {manifest['n']} "
             f"--seed {manifest['seed']} --out {out} --card {path}` on {time.strftime('%Y-%m-%d')}; do not edit by "
             "hand. Labels: the hlsim profiler (docs/timing-model.md) on each sample's concrete inputs.", "",
             "Storage: Parquet shards `data/stage<s>-<k>.parquet` (one row per sample: the three specs as YAML, "
             "the prompt, the input variant and seed, `cycles`, `energy_pj`, `power_mw`, `area_um2`, and "
             "`facts_json` with the intermediate facts — trip counts, II, depth, traffic per level, units — as "
             "reasoning targets). Load with `datasets.load_dataset(\"parquet\", data_files=\"DIR/data/*.parquet\")`.",
             "", "## Sizes", "", "| stage | generator | samples | mutations |", "|---|---|---|---|"]
    for s in sorted(by_stage):
        rs = by_stage[s]
        muts = Counter(m for r in rs for m in r["mutations"].split(",") if m)
        lines.append(f"| {s} | {rs[0]['generator']} | {len(rs)} | "
                     f"{', '.join(f'{k} {v}' for k, v in muts.most_common()) or '-'} |")
    lines += ["", "## Splits", "",
              "Rules (a pure function of each record, `llmulator_plugins.synth.card.split_of`): an application, "
              f"hardware configuration or input distribution is held out when the SHA-1 of its name falls in the "
              f"first {HELD_OUT['app']} % / {HELD_OUT['hw']} % / {HELD_OUT['input_dist']} % of buckets; "
              "`val` is 5 % of the remaining sample ids.", "", "| split | samples |", "|---|---|"]
    lines += [f"| {k} | {splits.get(k, 0)} |" for k in SPLITS]
    held_apps = sorted({r["app"] for r in rows if split_of(r) == "test_app" and r["stage"] == 2})
    lines += ["", f"Held-out library applications present: {', '.join(held_apps) or 'none'}.", ""]
    cols = {f"stage {s}": _stats(rs) for s, rs in sorted(by_stage.items())}
    cols["all"] = _stats(rows)
    if library:
        cols["workload library"] = _stats(library_records())
    keys = list(next(iter(cols.values())).keys())
    lines += ["## Distributions, side by side with the workload library", "",
              "| statistic | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for k in keys:
        lines.append(f"| {k} | " + " | ".join(str(c.get(k, "-")) for c in cols.values()) + " |")
    text = "\n".join(lines) + "\n"
    atomic_write_text(path, text)
    return text
