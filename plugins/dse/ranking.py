"""Rank a search's points, and make the ones it reports exact.

``rank_points`` and ``top_distinct`` order the valid points by the objective (shared by the design search
and the whole-network hardware search). ``refine`` turns the batch path's lower bounds into the
estimator's one-design figures where they matter.

Why refine: a ``BatchEstimator`` may mark rows not ``exact`` (``llmulator.hookspecs``): the analytical
estimator's vectorised path leaves out the PE array's waits for banked buffers (a replay of the memory
system's schedule, ``llmulator.banks``, milliseconds per mapping, too slow for thousands of points), so
those rows' cycles and energy are lower bounds. On a buffer with few banks the waits are large (on the
library's ``edge-tiny``, gemm@small: the batch said 22,016 cycles for the best mappings, ``estimate``
35,246). ``refine`` is branch and bound on those bounds: it re-prices, one design at a time, the points
the report would show (the best ``k`` distinct by the objective and the Pareto front) until all of them
are exact. A re-priced value only grows, so a point still ranked below the k-th on its bound is below it
on its exact value too, and a point dominated on its bounds by exact front points is dominated on its
exact values: the report is the one the one-design path would give on the same points.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import pareto
from .evaluate import objective_of

# points re-priced at most per search (a refinement past it reports what it has, and says so)
MAX_REPRICED = 2000


def rank_points(res: dict[str, np.ndarray], objective: str | None) -> tuple[dict[str, int], np.ndarray]:
    """(invalid points counted by reason, the valid points' indices best first by the objective).

    Ties on the objective (common: many mappings hit the same bandwidth bound) break on energy, then
    area. Shared by the design search (``explore``) and the whole-network hardware search.
    """
    reasons: dict[str, int] = {}
    for r in res["reason"][~res["valid"]]:
        reasons[r or "invalid"] = reasons.get(r or "invalid", 0) + 1
    obj = objective_of(res, objective)
    order = np.lexsort((np.nan_to_num(res["area_um2"], nan=np.inf), np.nan_to_num(res["energy_pj"], nan=np.inf),
                        obj))
    return reasons, order[np.isfinite(obj[order])]


def top_distinct(res: dict[str, np.ndarray], order: np.ndarray, k: int) -> list[int]:
    """The first ``k`` points of ``order`` with pairwise different predicted (cycles, energy, area).

    Mappings the estimator cannot tell apart (a loop order that changes no reuse, a buffer size
    that no tile needs) would otherwise fill the top-K with copies of one design and say nothing
    about the ranking.
    """
    seen: set[tuple] = set()
    out: list[int] = []
    if k <= 0:  # `--verify 0`: nothing to verify (the loop below would otherwise never stop at k)
        return out
    for i in order:
        key = tuple(round(float(res[m][i]), 6) for m in ("cycles", "energy_pj", "area_um2"))
        if key in seen:
            continue
        seen.add(key)
        out.append(int(i))
        if len(out) == k:
            break
    return out


def front_of(res: dict[str, np.ndarray]) -> np.ndarray:
    """The Pareto front of the valid points over the objectives the estimator reports, by cycles."""
    valid = res["valid"]
    vals = np.stack([np.where(valid, res[m], np.nan) for m in pareto.OBJECTIVES], axis=1)
    reported = np.isfinite(vals).any(axis=0)  # an estimator may report a subset (say, cycles only)
    front = pareto.front(vals[:, reported]) if reported.any() else np.zeros(0, dtype=np.int64)
    return front[np.argsort(res["cycles"][front], kind="stable")]


def refine(ev: Any, res: dict[str, np.ndarray], objective: str, k: int, with_front: bool = True,
           on_round: Callable[[int], None] | None = None, limit: int = MAX_REPRICED) -> dict[str, Any]:
    """Re-price with ``ev.reprice`` (the estimator's ``estimate``) the points of ``res`` that the best
    ``k`` distinct points and (``with_front``) the Pareto front are made of, until all of them are exact
    or ``limit`` points were re-priced. Returns ``{"repriced", "rounds", "complete"}``."""
    exact = res.get("exact")
    done = {"repriced": 0, "rounds": 0, "complete": True}
    if exact is None or bool(exact.all()):
        return done
    while True:
        _, order = rank_points(res, objective)
        want = set(top_distinct(res, order, max(k, 1)))
        if with_front:
            want.update(int(i) for i in front_of(res))
        todo = np.array(sorted(i for i in want if not res["exact"][i]), dtype=np.int64)
        if todo.size == 0:
            return done
        room = limit - done["repriced"]
        if room <= 0:
            done["complete"] = False
            return done
        todo = todo[:room]
        ev.reprice(res, todo)
        done["repriced"] += int(todo.size)
        done["rounds"] += 1
        if on_round is not None:
            on_round(int(todo.size))
