"""The dataset card (docs/dataset.md), generated from the shards.

The dataset format and the split rules live in :mod:`llmulator.dataset` (``read_records``, ``split_of``,
``SPLITS`` are importable from here too).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from llmulator.dataset import HELD_OUT, SPLITS, family_of, hw_family, read_records, split_of
from llmulator.fileio import atomic_write_text

from . import refusals

__all__ = ["SPLITS", "HELD_OUT", "split_of", "family_of", "read_records", "write_card"]


def _has_ops(rec: dict[str, Any], kinds: tuple[str, ...]) -> bool:
    mix = json.loads(rec.get("op_mix_json") or "{}")
    return any(mix.get(k, 0) > 0 for k in kinds)


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
    for k, what in (("while_loops", "while loops"), ("geometric_loops", "geometric loops (<<=, *=)"),
                    ("strided_loops", "strided loops (+= c, += expr)"), ("triangular_loops", "triangular loops"),
                    ("local_arrays", "local arrays"), ("divided_subscripts", "subscripts divided by an integer"),
                    ("scalar_subscripts", "subscripts shifted by a scalar")):
        out[f"programs with {what}"] = (f"{sum(r.get(k, 0) > 0 for r in rows) / n:.0%}"
                                        if rows and k in rows[0] else "-")
    out["programs with bitwise/shift ops"] = f"{sum(_has_ops(r, ('logic', 'shift')) for r in rows) / n:.0%}"
    for p in ("pipeline", "unroll", "tile", "spatial", "partition"):
        out[f"designs with {p}"] = f"{sum(r[f'pragma_{p}'] > 0 for r in rows) / n:.0%}"
    for text, what in (("reduction: tree", "reduction: tree"), ("dataflow: true", "dataflow")):
        out[f"designs with {what}"] = f"{sum(text in r.get('mapping_yaml', '') for r in rows) / n:.1%}"
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


def _splits_section(rows: list[dict[str, Any]]) -> list[str]:
    """The card's split rules, sizes and what each test split holds out."""
    splits = Counter(split_of(r) for r in rows)
    lines: list[str] = []
    lines += ["", "## Splits", "",
              "Rules (a pure function of each record, `llmulator.dataset.split_of`; each test split "
              "holds out one thing): `test_app` — every sample "
              f"of an application whose name hashes into the first {HELD_OUT['app']} % of buckets; `test_hw` — "
              "samples of trained applications on a base architecture (hardware family) that hashes into the "
              f"first {HELD_OUT['hw']} % (every variant of it is held out; generated programs never use these "
              "families); `test_input` — samples of trained applications under a non-default input variant "
              f"that hashes into the first {HELD_OUT['input_dist']} % (the same code is trained on, under other "
              f"data); `val` — every sample of an application whose name hashes into the next "
              f"{HELD_OUT['val']} % (neither trained on nor tested on: early stopping and the 90 % intervals "
              "are measured on unseen code). `--holdout-family F` (train, bench) moves every sample of "
              "family F into `test_family` first: leave-one-family-out.", "",
              "| split | samples |", "|---|---|"]
    lines += [f"| {k} | {splits.get(k, 0)} |" for k in SPLITS if k != "test_family"]
    held_apps = sorted({r["app"] for r in rows if split_of(r) == "test_app" and r["stage"] == 2})
    held_hw = sorted({hw_family(r["hw"]) for r in rows if split_of(r) == "test_hw"})
    held_in = sorted({r["input_dist"] for r in rows if split_of(r) == "test_input" and r["stage"] != 1})
    lines += ["", f"Held-out library applications present: {', '.join(held_apps) or 'none'}.",
              f"Held-out hardware families present: {', '.join(held_hw) or 'none'}.",
              f"Held-out library input variants present: {', '.join(held_in) or 'none'}.", ""]
    return lines


def _families_section(rows: list[dict[str, Any]]) -> list[str]:
    """The card's application families: samples per family, generated and library-derived."""
    lines: list[str] = []
    fams = Counter(family_of(r) for r in rows)
    lines += ["## Application families (leave-one-family-out)", "",
              "| family | samples | generated programs (stage 1) | library-derived (stages 2-3) |", "|---|---|---|---|"]
    for f, n in sorted(fams.items()):
        n1 = sum(1 for r in rows if r["stage"] == 1 and family_of(r) == f)
        lines.append(f"| {f} | {n} | {n1} | {n - n1} |")
    lines.append("")
    return lines


def _labelled_by(out: Path, rows: list[dict[str, Any]]) -> str:
    """Which profiler versions labelled the rows, and the last relabel (``llmulator synth --relabel``)."""
    profs = Counter(str(r.get("profiler")) for r in rows)
    text = ("rows labelled by " + ", ".join(f"{p} ({n})" for p, n in profs.most_common()) if len(profs) > 1
            else f"every row labelled by {next(iter(profs), 'none')}")
    try:
        rl = json.loads((out / "relabel.json").read_text())
    except (OSError, json.JSONDecodeError):
        return text
    if rl.get("complete"):
        text += (f" (relabelled by `llmulator synth --relabel` on {str(rl.get('finished', ''))[:10]}: "
                 f"{rl.get('rows_relabelled', 0)} rows re-profiled, {rl.get('changed', {}).get('any', 0)} labels "
                 f"changed, {len(rl.get('redrawn', []))} redrawn, {len(rl.get('dropped', []))} dropped)")
    return text


def write_card(out: str | Path, path: str | Path, library: bool = True) -> str:
    out = Path(out)
    rows = read_records(out)
    manifest = json.loads((out / "dataset.json").read_text())
    by_stage: dict[int, list] = {}
    for r in rows:
        by_stage.setdefault(r["stage"], []).append(r)
    lines = ["# Dataset card", "",
             f"Generated by `llmulator synth --stages {','.join(map(str, manifest['stages']))} --n {manifest['n']} "
             f"--seed {manifest['seed']} --out {out} --card {path}` on {time.strftime('%Y-%m-%d')}; do not edit by "
             "hand. Labels: the hlsim profiler (docs/timing-model.md) on each sample's concrete inputs; "
             f"{_labelled_by(out, rows)}.", "",
             *([f"**Partial run:** {len(rows)} of the {manifest['n']} planned samples are present (stages "
                "interleaved, so every stage is in proportion); the same command resumes it.", ""]
               if len(rows) < manifest["n"] else []),
             *([f"**Refused draws:** hlsim refused {refusals.count(out)} drawn designs (it broke a physical bound "
                "on them: a timing-model bug each); they were drawn again and are kept under `refused/` with the "
                "command that reproduces each.", ""] if refusals.count(out) else []),
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
    lines += _splits_section(rows) + _families_section(rows)
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
