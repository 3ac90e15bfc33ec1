"""`llmulator synth --relabel`: bring a dataset's labels up to the current profiler.

Every row records the profiler that labelled it (``profiler``: ``hlsim 0.4``).
When the profiler's timing, energy or area rules change its version changes,
and the rows labelled before no longer say what ``llmulator synth`` would
write today. ``relabel`` re-profiles exactly those rows the way the driver
labels a sample (:func:`~llmulator_plugins.synth.sample.label` on the row's
specs, input variant and seed; the outputs checked on the first sample of each
program+mapping group only, as the driver does), so a relabelled row is the
row generation writes today: metrics, ``facts_json``, ``prompt``,
``functional_check``, ``profiler`` and the structure statistics.

A row that no longer labels (its outputs now fail the check, a metric is now
zero, its specs no longer build) is replaced by the sample generation draws
today for the same index (the driver's redraw rule, from the manifest's seed):
it is counted and named in the summary. Only if that redraw fails too is the
row dropped, again counted and named (``llmulator synth`` with the dataset's
settings would then regenerate that shard). A row the profiler now refuses (it
broke a physical bound on it: a bug of the timing model) is redrawn the same
way, and the refused design kept under ``refused/`` (:mod:`.refusals`).

Shards are the unit of work as in the driver: each is rewritten atomically
(:func:`~llmulator.dataset.write_shard`), a shard whose rows are all current is
skipped, so an interrupted relabel loses at most the shards in progress and the
same command resumes it. The cumulative summary is kept in ``relabel.json``
next to ``dataset.json``. Derived caches whose key is not the labels
themselves (:data:`DERIVED`) are removed before the first shard is rewritten.
"""

from __future__ import annotations

import copy
import json
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs
from llmulator import plugins
from llmulator.dataset import GROUP, Rejected, family_of, spec_of_row, write_shard
from llmulator.errors import InvariantError, SpecError, UserError
from llmulator.expr import ExprError
from llmulator.fileio import atomic_write_json

from . import refusals

#: caches of derived data in a dataset's folder, removed by a relabel. The baselines' feature caches hold the
#: log-metric targets (their key hashes the metrics too, but a relabel makes them stale: removed, not kept);
#: ``prompts-*.jsonl`` hold no label (the prompt and the analytical prior, keyed by the analytical model's
#: version) and stay.
DERIVED = ("features-*.npz",)
COMPARED = ("cycles", "energy_pj", "area_um2")
REL_TOL = 1e-6
SUMMARY = "relabel.json"


def current_profiler() -> str:
    """The ``profiler`` field generation writes today (``hlsim <VERSION>``)."""
    p = plugins.get("profilers", "hlsim")
    return f"{p.name} {p.version}"


def full_spec(row: dict[str, Any]):
    """The complete SampleSpec of a row: the specs and also the split keys, input seed and mutations (a row
    of the format before ``family`` was stored gets the family every reader gives it, :func:`family_of`)."""
    return attrs.evolve(spec_of_row(row), input_seed=int(row["input_seed"]), app=row["app"], hw=row["hw"],
                        input_dist=row["input_dist"], family=family_of(row),
                        mutations=[m for m in str(row["mutations"]).split(",") if m])


def relabel_row(row: dict[str, Any], profiler) -> dict[str, Any]:
    """The row as generation labels it today; Rejected (with the reason) if it no longer labels."""
    from .sample import label
    profiler.check_outputs = int(row["index"]) % GROUP == 0  # as the driver: one check per compiled kernel
    try:
        rec = label(full_spec(row), profiler)
    except Rejected:
        raise
    except (SpecError, ExprError, KeyError, ValueError, TypeError) as e:
        raise Rejected(f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}") from None
    rec["index"] = row["index"]
    rec["sample_id"] = row["sample_id"]
    return rec


def _redraw(row: dict[str, Any], seed: int | None, refused: list) -> dict[str, Any] | None:
    """The sample generation draws today for the row's stage and index (None: it cannot); draws the profiler
    refuses on the way are appended to ``refused``."""
    from .driver import SAMPLE_TIME_LIMIT_S, _one, generators_by_stage
    gen = generators_by_stage().get(int(row["stage"]))
    if seed is None or gen is None:
        return None
    prof = copy.copy(plugins.get("profilers", "hlsim"))
    prof.time_limit_s = SAMPLE_TIME_LIMIT_S
    try:
        return _one(gen, prof, seed, int(row["stage"]), int(row["index"]), refused)
    except UserError:
        return None


def _changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [k for k in COMPARED if abs(float(new[k]) - float(old[k])) > REL_TOL * abs(float(old[k]))]


def relabel_shard(job: tuple[str, int | None, str]) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    """Re-profile the stale rows of one shard (runs in a worker process): (path, new rows, shard summary)."""
    import pyarrow.parquet as pq
    path, seed, want = job
    rows = pq.read_table(path).to_pylist()
    prof = copy.copy(plugins.get("profilers", "hlsim"))  # a private copy: check_outputs is set per row
    out, s = [], _empty()
    for row in rows:
        s["rows_checked"] += 1
        if row.get("profiler") == want:
            out.append(row)
            continue
        s["from"][str(row.get("profiler"))] += 1
        s["rows_relabelled"] += 1
        try:
            new = relabel_row(row, prof)
        except (Rejected, InvariantError) as e:
            if isinstance(e, InvariantError):
                s["refused"].append(refusals.refusal(full_spec(row), row["sample_id"], "relabel", e))
            new = _redraw(row, seed, s["refused"])
            what = "redrawn" if new is not None else "dropped"
            s[what].append({"sample_id": row["sample_id"], "family": family_of(row), "reason": str(e)[:200]})
            if new is not None:
                out.append(new)
            continue
        out.append(new)
        changed = _changes(row, new)
        for k in changed:
            s["changed"][k] += 1
        if changed:
            s["changed"]["any"] += 1
            s["changed_by_family"][family_of(row)] += 1
            s["changed_by_stage"][str(row["stage"])] += 1
            s["examples"].append({"sample_id": row["sample_id"], **{k: [row[k], new[k]] for k in changed}})
    return path, out, s


def _empty() -> dict[str, Any]:
    return {"rows_checked": 0, "rows_relabelled": 0, "shards_rewritten": 0, "from": Counter(),
            "changed": Counter(), "changed_by_family": Counter(), "changed_by_stage": Counter(),
            "redrawn": [], "dropped": [], "examples": [], "refused": []}


def _merge(total: dict[str, Any], s: dict[str, Any]) -> None:
    for k, v in s.items():
        if isinstance(v, int):
            total[k] = total.get(k, 0) + v
        elif isinstance(v, list):
            total[k] = total.get(k, []) + v
        else:
            total[k] = dict(Counter(total.get(k, {})) + Counter(v))


def stale_shards(data: Path, want: str) -> list[tuple[Path, int]]:
    """The shards that hold a row not labelled by ``want``, with their row counts."""
    import pyarrow.parquet as pq
    out = []
    for f in sorted(data.glob("*.parquet")):
        try:
            col = pq.read_table(f, columns=["profiler"]).column("profiler").to_pylist()
        except Exception as e:  # noqa: BLE001 - a shard that does not read: say which
            raise UserError(f"{f}: not a readable dataset shard ({type(e).__name__}); regenerate it with "
                            "`llmulator synth` and the dataset's settings, then relabel") from None
        if any(p != want for p in col):
            out.append((f, len(col)))
    return out


def _summary_start(out: Path, want: str) -> dict[str, Any]:
    """The summary so far of a relabel to ``want`` (a resumed one continues its counts)."""
    path = out / SUMMARY
    if path.is_file():
        try:
            old = json.loads(path.read_text())
            if old.get("profiler") == want and not old.get("complete", False):
                return old
        except (OSError, json.JSONDecodeError):
            pass
    return {"profiler": want, "started": time.strftime("%Y-%m-%d %H:%M:%S"), "complete": False}


def relabel(out: str | Path, workers: int = 1, progress: bool = True,
            on_shard: Callable[[Path], None] | None = None) -> dict[str, Any]:
    """Relabel the stale rows of the dataset in ``out``; returns the summary (also in ``out/relabel.json``)."""
    out = Path(out)
    data = out / "data"
    if not any(data.glob("*.parquet")):
        raise UserError(f"--out {out}: no Parquet shards under {data} (expected a dataset made by "
                        "`llmulator synth --out DIR`)")
    for stale in data.glob(".*.tmp"):  # left by a run that was killed while writing
        stale.unlink(missing_ok=True)
    manifest = out / "dataset.json"
    seed = json.loads(manifest.read_text()).get("seed") if manifest.is_file() else None
    want = current_profiler()
    todo = stale_shards(data, want)
    summary = _summary_start(out, want)
    if not todo and not summary.get("rows_relabelled"):
        return {**summary, "complete": True, "rows_relabelled": 0, "up_to_date": True}
    summary["removed_caches"] = sorted(set(summary.get("removed_caches", [])) | set(_remove_derived(out)))
    t0 = time.perf_counter()
    for path, rows, s in _progress(_map(todo, seed, want, workers), sum(n for _, n in todo), progress):
        s["refused"] = [f.name for f in refusals.save(out, s["refused"])]  # the folders, not the specs
        write_shard(Path(path), rows)
        s["shards_rewritten"] = 1
        _merge(summary, s)
        summary["seconds"] = round(summary.get("seconds", 0) + time.perf_counter() - t0, 1)
        t0 = time.perf_counter()
        atomic_write_json(out / SUMMARY, summary)
        if on_shard is not None:
            on_shard(Path(path))
    summary.update(complete=True, finished=time.strftime("%Y-%m-%d %H:%M:%S"))
    atomic_write_json(out / SUMMARY, summary)
    return summary


def _remove_derived(out: Path) -> list[str]:
    gone = []
    for pattern in DERIVED:
        for f in sorted(out.glob(pattern)):
            f.unlink(missing_ok=True)
            gone.append(f.name)
    return gone


def _map(todo: list[tuple[Path, int]], seed: int | None, want: str,
         workers: int) -> Iterable[tuple[str, list[dict[str, Any]], dict[str, Any]]]:
    jobs = [(str(f), seed, want) for f, _ in todo]
    if workers <= 1 or len(jobs) <= 1:
        yield from map(relabel_shard, jobs)
        return
    from llmulator.pools import as_done
    for _, res in as_done(relabel_shard, jobs, workers):  # (Ctrl-C cancels the shards not started)
        yield res


def _progress(items: Iterable, total: int, progress: bool) -> Iterable:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = [TextColumn("relabel"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
               TimeRemainingColumn()]
    t0, done = time.perf_counter(), 0
    with Progress(*columns, disable=not progress, transient=False) as bar:
        task_id = bar.add_task("relabel", total=total, rate="")
        for item in items:
            yield item
            done += item[2]["rows_checked"]
            bar.update(task_id, advance=item[2]["rows_checked"],
                       rate=f"{done / max(time.perf_counter() - t0, 1e-9):.1f} rows/s")


def format_summary(out: str | Path, s: dict[str, Any]) -> list[str]:
    """The lines `llmulator synth --relabel` prints."""
    if s.get("up_to_date"):
        return [f"{out}: every row is labelled by {s['profiler']}; nothing to relabel"]
    ch = s.get("changed", {})
    lines = [f"{out}: {s.get('rows_relabelled', 0)} rows re-profiled by {s['profiler']} "
             f"(were {_counts(s.get('from', {}))}) in {s.get('shards_rewritten', 0)} shards, "
             f"{s.get('seconds', 0):.0f} s",
             f"  label changed: {ch.get('any', 0)} rows (cycles {ch.get('cycles', 0)}, energy_pj "
             f"{ch.get('energy_pj', 0)}, area_um2 {ch.get('area_um2', 0)})",
             f"  by family: {_counts(s.get('changed_by_family', {}))}",
             f"  by stage: {_counts(s.get('changed_by_stage', {}))}"]
    for what, verb in (("redrawn", "no longer label, replaced by the sample generation draws today for their "
                                   "index"), ("dropped", "no longer label and could not be redrawn: dropped")):
        items = s.get(what, [])
        lines.append(f"  {len(items)} rows {verb}" + "".join(
            f"\n    {it['sample_id']} ({it['family']}): {it['reason']}" for it in items[:10])
            + (f"\n    ... {len(items) - 10} more in relabel.json" if len(items) > 10 else ""))
    if s.get("refused"):
        lines.append(f"  {len(s['refused'])} draws the profiler refused (a timing-model bug; each redrawn): "
                     f"kept under {Path(out) / refusals.FOLDER}")
    if s.get("removed_caches"):
        lines.append(f"  removed derived caches: {', '.join(s['removed_caches'])}")
    return lines


def _counts(c: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"


__all__ = ["DERIVED", "SUMMARY", "current_profiler", "full_spec", "relabel_row", "relabel_shard", "stale_shards",
           "relabel", "format_summary"]
