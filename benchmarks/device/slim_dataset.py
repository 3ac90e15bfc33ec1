"""A label-only copy of a dataset, small enough to travel to a lent GPU machine (the `device` tool).

Training the llm reads, per row, only its labels, the fields that place it in a split and a family,
and its prompt, which the dataset's prompt cache (``prompts-HINTS.jsonl``) already holds. The stored
specs and the dataset's own prompt (most of a shard's bytes) are needed only to rebuild a design, which a
complete prompt cache makes unnecessary. This writes DST with the same shard names, every column but
those, and the prompt cache, refusing a source whose cache misses rows (the copy could not rebuild them).

    .venv/bin/python benchmarks/device/slim_dataset.py data/synth-v3 .carry/synth-v3-slim
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

# the columns only a design rebuild reads (SampleSpec) or that repeat the prompt
HEAVY = ("architecture_yaml", "workload_yaml", "mapping_yaml", "prompt", "facts_json", "op_mix_json")


def slim(src: Path, dst: Path, hints: str = "analytical") -> dict[str, int]:
    import pyarrow.parquet as pq

    cache = src / f"prompts-{hints}.jsonl"
    if not cache.is_file():
        raise SystemExit(f"{cache}: no prompt cache; build it first (llmulator train llm ... or "
                         "generalisation_curves.py builds it)")
    cached = set()
    for line in cache.read_text().splitlines():
        try:
            cached.add(json.loads(line)["id"])
        except (json.JSONDecodeError, KeyError):
            continue
    (dst / "data").mkdir(parents=True, exist_ok=True)
    rows = missing = 0
    for f in sorted((src / "data").glob("*.parquet")):
        t = pq.read_table(f)
        ids = t.column("sample_id").to_pylist()
        missing += sum(1 for i in ids if i not in cached)
        rows += len(ids)
        pq.write_table(t.drop_columns([c for c in HEAVY if c in t.schema.names]), dst / "data" / f.name,
                       compression="zstd")
    if missing:
        raise SystemExit(f"{missing} of {rows} rows have no cached prompt in {cache}: the slim copy could not "
                         "rebuild them; build the cache for every row first")
    shutil.copy2(cache, dst / cache.name)
    if (src / "dataset.json").is_file():
        shutil.copy2(src / "dataset.json", dst / "dataset.json")
    return {"rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--hints", default="analytical")
    a = ap.parse_args(argv)
    print(json.dumps(slim(Path(a.src), Path(a.dst), a.hints)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
