"""The synthesis driver: deterministic shards, written atomically, resumable, local or on Dask.

Sample ``i`` of stage ``s`` is a pure function of (seed, s, i): its *group*
``i // GROUP`` (program, sizes and mapping structure) draws from
``default_rng([seed, s, group, group_attempt])`` and the sample itself
(hardware variant, input variant and seed) from ``default_rng([seed, s, i,
attempt])``; a design that fails validation or labelling is redrawn with the
next attempt number. Shards of ``shard_size`` consecutive samples are the unit
of work and of storage (``data/stage<s>-<k>.parquet``, written to a temporary
name and renamed); a shard that exists is never redone, so an interrupted run
resumes with no lost and no duplicated sample, and the same code runs in local
worker processes or as Dask tasks with identical results. A draw the profiler
refuses (it broke a physical bound: a bug of the timing model) is drawn again
too, and kept under ``refused/`` with the command that reproduces it
(:mod:`.refusals`).
"""

from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from llmulator import plugins
from llmulator.dataset import GROUP, Rejected, shard_complete, write_shard
from llmulator.errors import InvariantError, SpecError, UserError
from llmulator.expr import ExprError
from llmulator.fileio import atomic_write_json

from . import refusals
from .sample import label

MAX_ATTEMPTS = 12
MAX_GROUP_ATTEMPTS = 8
SAMPLE_TIME_LIMIT_S = 5.0


@attrs.frozen
class ShardTask:
    stage: int
    shard: int
    start: int
    stop: int
    seed: int

    @property
    def name(self) -> str:
        return f"stage{self.stage}-{self.shard:05d}"


def generators_by_stage() -> dict[int, Any]:
    out: dict[int, Any] = {}
    for name in plugins.names("generators"):
        g = plugins.get("generators", name)
        out.setdefault(int(g.stage), g)
    return out


def make_shard(task: ShardTask) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Label every sample of one shard (runs in a worker process or a Dask task): (its records, the draws the
    profiler refused, :func:`.refusals.refusal`)."""
    gen = generators_by_stage().get(task.stage)
    if gen is None:
        raise UserError(f"no generator registered for stage {task.stage}")
    # a private copy: the limits and the once-per-group check below must not leak into the registered
    # profiler that `profile`, `dse` or a test in the same process uses afterwards
    profiler = copy.copy(plugins.get("profilers", "hlsim"))
    profiler.time_limit_s = SAMPLE_TIME_LIMIT_S  # a generated program that runs longer is redrawn
    records: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for i in range(task.start, task.stop):
        records.append(_one(gen, profiler, task.seed, task.stage, i, refused))
    return records, refused


def _one(gen, profiler, seed: int, stage: int, i: int, refused: list | None = None) -> dict[str, Any]:
    """Sample ``i`` of ``stage``: the first draw that labels. A draw the profiler refuses is appended to
    ``refused`` and drawn again (with ``refused`` None the ``InvariantError`` propagates)."""
    g = i // GROUP
    reasons = []
    for ga in range(MAX_GROUP_ATTEMPTS):
        for attempt in range(MAX_ATTEMPTS // 2 if ga < MAX_GROUP_ATTEMPTS - 1 else MAX_ATTEMPTS):
            group_rng = np.random.default_rng([seed, stage, g, ga])
            rng = np.random.default_rng([seed, stage, i, ga, attempt])
            try:
                spec = gen.sample(group_rng, rng)
                profiler.check_outputs = i % GROUP == 0  # one reference check per compiled kernel
                rec = label(spec, profiler)
            except Rejected as e:
                reasons.append(str(e)[:200])
                continue
            except (SpecError, ExprError, KeyError, ValueError) as e:
                # a generated program the analysis cannot price statically: draw another
                reasons.append(f"{type(e).__name__}: {str(e)[:200]}")
                continue
            except InvariantError as e:  # the timing model broke a bound: keep the design, draw another
                if refused is None:
                    raise
                refused.append(refusals.refusal(spec, f"s{stage}-{i:07d}", f"g{ga}a{attempt}", e))
                reasons.append(f"refused: {str(e)[:200]}")
                continue
            rec["index"] = i
            rec["sample_id"] = f"s{stage}-{i:07d}"
            return rec
    raise UserError(f"stage {stage} sample {i}: no valid design after {len(reasons)} draws; last reasons: "
                    + " | ".join(reasons[-3:]))


def plan(stages: list[int], n: int, seed: int, shard_size: int) -> list[ShardTask]:
    per = [n // len(stages) + (1 if k < n % len(stages) else 0) for k in range(len(stages))]
    tasks = []
    for s, ns in zip(stages, per, strict=True):
        for k in range(math.ceil(ns / shard_size)):
            tasks.append(ShardTask(s, k, k * shard_size, min((k + 1) * shard_size, ns), seed))
    # stages interleaved: a run stopped part-way leaves a dataset with every stage in proportion
    return sorted(tasks, key=lambda t: (t.shard, t.stage))


def run(stages: list[int], n: int, out: str | Path, seed: int = 0, workers: int = 1, scheduler: str | None = None,
        shard_size: int = 32, progress: bool = True,
        on_shard: Callable[[ShardTask], None] | None = None) -> dict[str, Any]:
    """Generate (or finish generating, or grow to a larger ``n``) the dataset; returns the manifest."""
    out = Path(out)
    data = out / "data"
    manifest_path = out / "dataset.json"
    if manifest_path.is_file():
        old = json.loads(manifest_path.read_text())
        # a larger --n grows the dataset: sample i is a function of (seed, stage, i) alone, so the shards
        # already written stay exactly what a run of the larger n writes (a stage's partial last shard is
        # redone whole); a smaller n would leave shards outside the plan, other settings other samples
        want = {"stages": stages, "seed": seed, "shard_size": shard_size}
        have = {k: old.get(k) for k in want}
        if have != want or n < old.get("n", 0):
            raise UserError(f"{out} holds a dataset made with {dict(have, n=old.get('n'))}; this run asks for "
                            f"{dict(want, n=n)}: use another --out folder, or the same settings to resume "
                            "(a larger --n grows the dataset)")
    tasks = plan(stages, n, seed, shard_size)
    for stale in data.glob(".*.tmp"):  # left by a run that was killed while writing
        stale.unlink(missing_ok=True)
    todo = [t for t in tasks if not shard_complete(data / f"{t.name}.parquet", t.stop - t.start)]
    atomic_write_json(manifest_path, {"stages": stages, "n": n, "seed": seed, "shard_size": shard_size,
                                      "shards": [t.name for t in tasks], "complete": False})
    t0 = time.perf_counter()
    done_samples = sum(t.stop - t.start for t in tasks) - sum(t.stop - t.start for t in todo)
    refused = _execute(todo, data, workers, scheduler, progress, done_samples, n, on_shard)
    manifest = {"stages": stages, "n": n, "seed": seed, "shard_size": shard_size,
                "shards": [t.name for t in tasks], "complete": True,
                "seconds_this_run": round(time.perf_counter() - t0, 3), "new_samples_this_run":
                sum(t.stop - t.start for t in todo), "refused_this_run": refused, "refused": refusals.count(out)}
    atomic_write_json(manifest_path, manifest)
    return manifest


def _execute(todo: list[ShardTask], data: Path, workers: int, scheduler: str | None, progress: bool,
             done: int, total: int, on_shard) -> int:
    """Run the shards, writing each as it finishes (and the draws the profiler refused); returns how many
    draws were refused."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = [TextColumn("synth"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
               TimeRemainingColumn()]
    t0 = time.perf_counter()
    with Progress(*columns, disable=not progress, transient=False) as bar:
        task_id = bar.add_task("synth", total=total, completed=done, rate="")
        new = refused = 0

        def finished(t: ShardTask, result: tuple[list[dict[str, Any]], list[dict[str, Any]]]):
            nonlocal new, refused
            records, refused_here = result
            for folder, r in zip(refusals.save(data.parent, refused_here), refused_here, strict=True):
                bar.console.print(f"synth: {r['sample_id']}: {r['message'][:300]} -- drawn again; the refused "
                                  f"design is in {folder}", markup=False, highlight=False)
            refused += len(refused_here)
            write_shard(data / f"{t.name}.parquet", records)
            new += len(records)
            rate = new / max(time.perf_counter() - t0, 1e-9)
            bar.update(task_id, advance=len(records), rate=f"{rate:.1f} samples/s")
            if on_shard is not None:
                on_shard(t)

        for t, result in _map(todo, workers, scheduler):
            finished(t, result)
    return refused


def _map(todo: list[ShardTask], workers: int, scheduler: str | None) -> Iterable[tuple[ShardTask, list]]:
    if not todo:
        return
    if scheduler is not None:
        try:
            from dask.distributed import Client, as_completed
        except ImportError:
            raise UserError("--scheduler needs dask.distributed (pip install 'dask[distributed]')") from None
        client = scheduler if not isinstance(scheduler, str) else Client(scheduler)
        futures = {client.submit(make_shard, t, pure=False): t for t in todo}
        for fut in as_completed(futures):
            yield futures[fut], fut.result()
        return
    if workers <= 1:
        for t in todo:
            yield t, make_shard(t)
        return
    from llmulator.pools import as_done
    for i, res in as_done(make_shard, todo, workers):  # (Ctrl-C cancels the shards not started)
        yield todo[i], res
