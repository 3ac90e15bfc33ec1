"""Search strategies over point numbers, bounded by a budget of evaluated points.

* exhaustive: every point, when the space is no larger than the budget;
* random: ``budget`` distinct points drawn uniformly (seeded);
* evolve: a simple (mu + lambda) evolutionary search: a random first
  generation, then children of tournament-picked good parents by uniform
  crossover and per-dimension mutation (a new random value, or a neighbour
  value on ordered dimensions), never re-evaluating a point.

All strategies hand points to the evaluator in chunks, so a rich progress bar
moves while they run, and return the concatenated results.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from .evaluate import Evaluator

CHUNK = 4096
STRATEGIES = ("auto", "exhaustive", "random", "evolve")


def _concat(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    if not parts:
        return {}
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def random_points(rng: np.random.Generator, size: int, n: int, exclude: set[int] | None = None) -> np.ndarray:
    """``n`` distinct point numbers in [0, size), none in ``exclude``."""
    exclude = exclude or set()
    n = min(n, size - len(exclude))
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    if size <= 4 * (n + len(exclude)):
        pool = np.setdiff1d(np.arange(size, dtype=np.int64), np.fromiter(exclude, dtype=np.int64, count=len(exclude)))
        return rng.choice(pool, size=n, replace=False)
    got: set[int] = set()
    while len(got) < n:
        for x in rng.integers(0, size, size=2 * (n - len(got))):
            x = int(x)
            if x not in exclude and x not in got:
                got.add(x)
                if len(got) == n:
                    break
    return np.fromiter(got, dtype=np.int64, count=n)


def run(ev: Evaluator, budget: int, strategy: str = "auto", seed: int = 0,
        on_chunk: Callable[[int], None] | None = None) -> tuple[dict[str, np.ndarray], str]:
    """Evaluate points of ``ev.space`` under ``budget``; returns (results, the strategy used)."""
    size = ev.space.size
    if strategy == "auto":
        strategy = "exhaustive" if size <= budget else "evolve"
    if strategy == "exhaustive" and size > budget:
        strategy = "random"
    rng = np.random.default_rng(seed)
    tick = on_chunk or (lambda n: None)
    parts: list[dict[str, np.ndarray]] = []
    if strategy in ("exhaustive", "random"):
        pts = np.arange(size, dtype=np.int64) if strategy == "exhaustive" else random_points(rng, size, budget)
        for s in range(0, pts.size, CHUNK):
            parts.append(ev.evaluate(pts[s:s + CHUNK]))
            tick(min(CHUNK, pts.size - s))
        return _concat(parts), strategy
    return _evolve(ev, budget, rng, tick), "evolve"


def _evolve(ev: Evaluator, budget: int, rng: np.random.Generator, tick: Callable[[int], None]) -> dict[str, np.ndarray]:
    space = ev.space
    shape = np.array(space.shape, dtype=np.int64)
    D = shape.size
    gen = int(min(max(64, budget // 20), CHUNK))
    seen: set[int] = set()
    parts: list[dict[str, np.ndarray]] = []
    first = random_points(rng, space.size, min(max(gen * 2, budget // 5), budget))
    seen.update(int(x) for x in first)
    parts.append(ev.evaluate(first))
    tick(first.size)
    done = first.size
    stale = 0
    while done < budget and len(seen) < space.size and stale < 20:
        res = _concat(parts)
        obj, ch = res["objective"], space.decode(res["point"])
        fin = np.isfinite(obj)
        n_children = min(gen, budget - done)
        if fin.sum() >= 2:
            elite = np.argsort(obj)[: max(2, int(fin.sum() // 4))]
            elite = elite[np.isfinite(obj[elite])]
            a = elite[np.minimum(rng.integers(0, elite.size, size=(n_children, 2)).min(axis=1), elite.size - 1)]
            b = elite[rng.integers(0, elite.size, size=n_children)]
            mask = rng.random((n_children, D)) < 0.5
            child = np.where(mask, ch[a], ch[b])
            mut = rng.random((n_children, D)) < 1.0 / max(D, 1)
            mut[np.arange(n_children), rng.integers(0, D, size=n_children)] = True
            step = rng.choice([-1, 1], size=(n_children, D))
            jump = rng.integers(0, shape[None, :].repeat(n_children, axis=0))
            near = np.clip(child + step, 0, shape - 1)
            child = np.where(mut, np.where(rng.random((n_children, D)) < 0.5, near, jump), child)
            cand = space.encode(child)
            new = []
            for x in cand:
                x = int(x)
                if x not in seen:
                    seen.add(x)
                    new.append(x)
            pts = np.array(new, dtype=np.int64)
        else:
            pts = np.zeros(0, dtype=np.int64)
        if pts.size < n_children // 4:  # the population has converged: explore
            extra = random_points(rng, space.size, n_children - pts.size, seen)
            seen.update(int(x) for x in extra)
            pts = np.concatenate([pts, extra])
        if pts.size == 0:
            stale += 1
            continue
        parts.append(ev.evaluate(pts))
        tick(pts.size)
        done += pts.size
    return _concat(parts)


def timed(fn, *a, **k):
    t0 = time.perf_counter()
    r = fn(*a, **k)
    return r, time.perf_counter() - t0
