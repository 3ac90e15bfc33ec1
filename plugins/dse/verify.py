"""Re-measure chosen designs with a profiler (hlsim) on local worker processes or a Dask cluster.

A task is plain data (architecture and mapping bodies, workload file, preset),
so it pickles to a worker process or a Dask worker and the design is rebuilt
there; the same ``profile_task`` runs in all three modes (in-process, local
pool, ``--scheduler``), as the synthesizer's shards do. A profiler that raises
anything other than ``SpecError``/``UserError`` comes back as an error with
``raised`` and ``where`` set (a bug in its plugin; ``dse`` blames it and exits
with 3); the other designs are still profiled. Finished profiles are
kept in ``DIR/profiles.json`` (written atomically after each one) keyed by the
design's content, so an interrupted or repeated run re-profiles nothing.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from llmulator.errors import SpecError, UserError
from llmulator.fileio import atomic_write_json


def task_key(task: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(task, sort_keys=True, default=str).encode()).hexdigest()[:20]


def profile_task(task: dict[str, Any]) -> dict[str, Any]:
    """Build the design from plain data and profile it; errors come back as text, never raised."""
    from llmulator import plugins
    from llmulator.design import Design, check_design
    from llmulator.schema import validate
    from llmulator.specs import architecture_from_dict, load_workload, mapping_from_dict
    from llmulator.yamlsrc import SourceMap

    t0 = time.perf_counter()
    try:
        a_smap, m_smap = SourceMap("<dse architecture>"), SourceMap("<dse mapping>")
        validate("architecture", {"architecture": task["architecture"]}, a_smap)
        validate("mapping", {"mapping": task["mapping"]}, m_smap)
        d = Design(architecture_from_dict(task["architecture"], a_smap), load_workload(task["workload_file"]),
                   mapping_from_dict(task["mapping"], m_smap), task.get("preset"))
        check_design(d)
        prof = plugins.get("profilers", task.get("profiler", "hlsim"))
        if task.get("time_limit_s"):
            prof.time_limit_s = task["time_limit_s"]
        p = prof.profile(d)
        return {"measured": {k: float(v) for k, v in p.metrics.items()}, "functional_check": p.functional_check,
                "seconds": time.perf_counter() - t0, "profiler": p.profiler, "error": ""}
    except (SpecError, UserError) as e:
        return {"measured": None, "error": str(e).splitlines()[0][:300], "seconds": time.perf_counter() - t0}
    except Exception as e:  # noqa: BLE001 - the profiler's plugin's bug: reported with the plugin to blame
        import traceback
        frames = traceback.extract_tb(e.__traceback__)
        text = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".strip()[:300]
        return {"measured": None, "error": f"profiler raised {text}", "raised": text,
                "where": f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else "",
                "seconds": time.perf_counter() - t0}


def _map(tasks: list[dict[str, Any]], workers: int, scheduler: str | None) -> Iterable[tuple[int, dict]]:
    if not tasks:
        return
    if scheduler is not None:
        try:
            from dask.distributed import Client, as_completed
        except ImportError:
            raise UserError("--scheduler needs dask.distributed (pip install 'dask[distributed]')") from None
        own = isinstance(scheduler, str)
        client = Client(scheduler) if own else scheduler
        try:
            futures = {client.submit(profile_task, t, pure=False): i for i, t in enumerate(tasks)}
            for fut in as_completed(futures):
                yield futures[fut], fut.result()
        finally:
            if own:
                client.close()
        return
    if workers <= 1:
        for i, t in enumerate(tasks):
            yield i, profile_task(t)
        return
    from llmulator.pools import as_done
    yield from as_done(profile_task, tasks, workers)  # (Ctrl-C cancels the profiles not started)


def profile_all(tasks: list[dict[str, Any]], workers: int = 1, scheduler: str | None = None,
                cache: str | Path | None = None, on_done: Callable[[int, dict], None] | None = None) -> list[dict]:
    """Profile every task (reusing cached results); results in task order."""
    store: dict[str, Any] = {}
    if cache is not None and Path(cache).is_file():
        try:
            store = json.loads(Path(cache).read_text())
        except json.JSONDecodeError:
            store = {}
    keys = [task_key(t) for t in tasks]
    out: list[dict | None] = [dict(store[k], cached=True) if k in store else None for k in keys]
    todo = [i for i, r in enumerate(out) if r is None]
    for i, r in enumerate(out):
        if r is not None and on_done:
            on_done(i, r)
    for j, r in _map([tasks[i] for i in todo], workers, scheduler):
        i = todo[j]
        out[i] = dict(r, cached=False)
        if r.get("measured") is not None:
            store[keys[i]] = r
            if cache is not None:
                atomic_write_json(cache, store)
        if on_done:
            on_done(i, out[i])
    return [r for r in out if r is not None]
