"""One design-space exploration: search, verify with a profiler, Pareto front, files.

``explore`` is the whole job behind ``llmulator dse`` and returns a JSON-ready
summary; the verb only parses arguments and prints. Files written into the
output folder (each atomically): ``points.csv`` (every evaluated point: its
values, predicted metrics, validity and reason), ``summary.json``,
``pareto.png``, and ``profiles.json`` (the profiler cache that makes a rerun
skip designs already measured).
"""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path
from typing import Any

import numpy as np
from llmulator import plugins
from llmulator.errors import UserError
from llmulator.fileio import atomic_write_json, atomic_write_text
from llmulator.scoring import kendall_tau

from . import pareto, search
from .evaluate import Evaluator
from .ranking import front_of, rank_points, refine, top_distinct  # noqa: F401 - rank_points: network's
from .space import Space
from .verify import profile_all

OBJECTIVE_METRIC = {"cycles": "cycles", "energy": "energy_pj", "edp": "edp"}


def describe(space: Space, point: int) -> str:
    """The point's values on the dimensions that vary, as ``key=value`` words."""
    vals = space.values_of(point)
    words = []
    for d in space.dims:
        if len(d.values) < 2:
            continue
        v = vals[d.key]
        key = d.key.removeprefix("loop.").removeprefix("hw.")
        if d.key == "order":
            v = ">".join(v)
        elif isinstance(v, float) and v.is_integer():
            v = int(v)
        words.append(f"{key}={v}")
    return " ".join(words)


def explore(space: Space, estimator_name: Any = "analytical", budget: int = 20000, strategy: str = "auto",
            objective: str | None = None, verify: int = 5, low_confidence: float | None = None,
            workers: int = 1, scheduler: str | None = None, out: str | Path | None = None, seed: int = 0,
            progress: bool = True, profiler: str = "hlsim", time_limit_s: float = 60.0) -> dict[str, Any]:
    objective = objective or space.objective
    if budget < 1:
        raise UserError("--budget must be at least 1")
    if verify < 0:
        raise UserError("--verify must be 0 or more")
    est = plugins.get("estimators", estimator_name) if isinstance(estimator_name, str) else estimator_name
    estimator_name = getattr(est, "name", str(estimator_name))
    why = est.available() if hasattr(est, "available") else None
    if why is not None:
        raise UserError(f"estimator '{estimator_name}' is not available: {why}")
    ev = Evaluator(space, est, objective)
    n_planned = space.size if (strategy in ("auto", "exhaustive") and space.size <= budget) else min(budget,
                                                                                                     space.size)
    t0 = time.perf_counter()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("dse {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  disable=not progress, transient=False) as bar:
        tid = bar.add_task(f"{space.name} ({estimator_name})", total=n_planned)
        res, used = search.run(ev, budget, strategy, seed, on_chunk=lambda n: bar.update(tid, advance=n))
        # the batch path's lower bounds made exact where the report reads them (ranking.refine)
        rid = bar.add_task("re-pricing the best points one by one", total=None)
        refined = refine(ev, res, objective, max(verify, 1), on_round=lambda n: bar.update(rid, advance=n))
        bar.update(rid, total=refined["repriced"], completed=refined["repriced"])
    search_s = time.perf_counter() - t0
    n = res["point"].size
    valid = res["valid"]
    reasons, order = rank_points(res, objective)
    # -- verification: top-K by the objective, plus low-confidence designs ---------------------
    chosen: list[tuple[int, str]] = [(i, "top") for i in top_distinct(res, order, verify)]
    if low_confidence is not None:
        conf = res["confidence"]
        low = [int(i) for i in order if np.isfinite(conf[i]) and conf[i] < low_confidence
               and int(i) not in {c for c, _ in chosen}]
        chosen += [(i, "low-confidence") for i in low[:max(verify, 1)]]
    tasks = []
    for i, _why in chosen:
        docs = space.spec_docs(int(res["point"][i]))
        tasks.append({**docs, "profiler": profiler, "time_limit_s": time_limit_s})
    t1 = time.perf_counter()
    cache = Path(out) / "profiles.json" if out is not None else None
    with Progress(TextColumn("verify with {task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), disable=not progress or not tasks, transient=False) as bar:
        tid = bar.add_task(profiler, total=len(tasks))
        profiles = profile_all(tasks, workers=workers, scheduler=scheduler, cache=cache,
                               on_done=lambda i, r: bar.update(tid, advance=1))
    verify_s = time.perf_counter() - t1
    metric = OBJECTIVE_METRIC[objective]
    verified = []
    for rank, ((i, why), prof) in enumerate(zip(chosen, profiles, strict=True)):
        pred = {m: float(res[m][i]) for m in ("cycles", "energy_pj", "area_um2", "power_mw")}
        pred["edp"] = pred["cycles"] * pred["energy_pj"]
        meas = prof.get("measured")
        if meas is not None:
            meas = dict(meas)
            meas["edp"] = meas.get("cycles", np.nan) * meas.get("energy_pj", np.nan)
        verified.append({"point": int(res["point"][i]), "why": why,
                         "predicted_rank": rank + 1 if why == "top" else None,
                         "params": describe(space, int(res["point"][i])), "predicted": pred, "measured": meas,
                         "confidence": None if np.isnan(res["confidence"][i]) else float(res["confidence"][i]),
                         "error": prof.get("error", ""), "profile_seconds": prof.get("seconds", 0.0),
                         "cached": prof.get("cached", False)})
    top = [v for v in verified if v["why"] == "top" and v["measured"] is not None]
    tau = float("nan")
    if len(top) >= 2:
        meas_vals = np.array([v["measured"][metric] for v in top])
        meas_energy = np.array([v["measured"].get("energy_pj", np.nan) for v in top])
        ranks = np.argsort(np.lexsort((meas_energy, meas_vals)), kind="stable") + 1
        for v, r in zip(top, ranks, strict=True):
            v["measured_rank"] = int(r)
        # the search's ranking (ties already broken on energy and area) against the measured objective
        tau = kendall_tau(np.array([v["predicted_rank"] for v in top], dtype=float), meas_vals)
    # -- Pareto front -------------------------------------------------------------------------
    front = front_of(res)
    summary: dict[str, Any] = {
        "space": space.name, "space_file": space.file, "base_mapping": space.base_mapping_file,
        "workload": space.workload.name, "preset": space.preset, "architecture": space.arch_doc["name"],
        "estimator": estimator_name, "objective": objective, "strategy": used, "budget": budget, "seed": seed,
        "space_size": space.size, "dimensions": {d.key: len(d.values) for d in space.dims},
        "evaluated": int(n), "valid": int(valid.sum()), "invalid": int(n - valid.sum()), "invalid_reasons": reasons,
        "vectorised_points": ev.n_fast, "materialised_points": ev.n_materialised - refined["repriced"],
        # batch rows priced again one by one (their batch figures were lower bounds), and whether every point
        # reported (best, top --verify, Pareto front) is exact
        "repriced_points": refined["repriced"], "report_exact": refined["complete"],
        "search_seconds": round(search_s, 4), "verify_seconds": round(verify_s, 3),
        "points_per_second": round(n / max(search_s, 1e-9), 1),
        "best": None, "verified": verified, "kendall_tau_top": None if np.isnan(tau) else tau,
        "pareto": [{"point": int(res["point"][i]), "params": describe(space, int(res["point"][i])),
                    **{m: float(res[m][i]) for m in pareto.OBJECTIVES}} for i in front],
        "profiler": profiler, "workers": workers, "scheduler": scheduler,
        # exceptions that are plugins' bugs (not designs declined): {"estimators"|"profilers": {name: {...}}}
        "failures": failures(estimator_name, ev.bug, profiler, profiles),
    }
    if order.size:
        b = int(order[0])
        summary["best"] = {"point": int(res["point"][b]), "params": describe(space, int(res["point"][b])),
                           "values": {k: (list(v) if isinstance(v, tuple) else v)
                                      for k, v in space.values_of(int(res["point"][b])).items()},
                           **{m: float(res[m][b]) for m in ("cycles", "energy_pj", "area_um2", "power_mw")}}
    if out is not None:
        write_outputs(Path(out), space, res, front, summary)
    summary["_results"] = res
    summary["_front"] = front
    return summary


def failures(estimator: str, bug: dict[str, Any] | None, profiler: str, profiles: list[dict]) -> dict[str, Any]:
    """The estimator's and the profiler's exceptions other than SpecError/UserError, with whom to blame."""
    out: dict[str, Any] = {}

    def origin(kind: str, name: str) -> dict[str, Any]:
        r = plugins.registry()[kind].get(name)
        return {"plugin": r.plugin if r else None, "package": r.distribution if r else None,
                "blame": plugins.blame(kind, name)}

    if bug is not None:
        out["estimators"] = {estimator: {**bug, **origin("estimators", estimator)}}
    raised = [p for p in profiles if p.get("raised")]
    if raised:
        out["profilers"] = {profiler: {"error": raised[0]["raised"], "where": raised[0].get("where", ""),
                                       "designs": len(raised), **origin("profilers", profiler)}}
    return out


def write_outputs(out: Path, space: Space, res: dict[str, np.ndarray], front: np.ndarray,
                  summary: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    on_front = np.zeros(res["point"].size, dtype=bool)
    on_front[front] = True
    verified = {v["point"] for v in summary["verified"]}
    buf = io.StringIO()
    w = csv.writer(buf)
    keys = [d.key for d in space.dims]
    w.writerow(["point", *keys, "valid", "reason", "cycles", "energy_pj", "area_um2", "power_mw", "confidence",
                "pareto", "verified", "exact"])
    choice = space.decode(res["point"])
    for j in range(res["point"].size):
        vals = []
        for d, c in zip(space.dims, choice[j], strict=True):
            v = d.values[c]
            vals.append(">".join(v) if isinstance(v, tuple) else v)
        row = [int(res["point"][j]), *vals, int(res["valid"][j]), res["reason"][j]]
        row += ["" if not np.isfinite(res[m][j]) else f"{res[m][j]:.6g}"
                for m in ("cycles", "energy_pj", "area_um2", "power_mw", "confidence")]
        # exact 0: the batch path's lower bound on cycles and energy (ranking.refine), never re-priced
        row += [int(on_front[j]), int(int(res["point"][j]) in verified), int(res["exact"][j]) if "exact" in res else 1]
        w.writerow(row)
    atomic_write_text(out / "points.csv", buf.getvalue())
    try:
        pareto.plot(out / "pareto.png", res, front, {v["point"]: v for v in summary["verified"]},
                    f"{space.name}: {summary['evaluated']:,} points, {len(front)} on the front")
    except ImportError:  # matplotlib is optional (the `plots` extra): the tables and CSV are written anyway
        summary.setdefault("notes", []).append("pareto.png not written: pip install 'llmulator[plots]'")
    atomic_write_json(out / "summary.json", {k: v for k, v in summary.items() if not k.startswith("_")})
