"""RecMII of a pipelined body: the largest ``ceil(L / D)`` over its dependence cycles (Rau's bound), where a cycle
may pass through any number of loop-carried dependences, ``L`` is the latency along it and ``D`` the iterations
its carried dependences span.

Why a module of its own: until hlsim 0.29 each carried dependence was tried alone (its consumer back to its
producer through one iteration's body), and only the 64 of shortest distance. A cycle through two carried
edges was never seen: `a[i] = b[i-1] + 1; b[i] = a[i-1] * c;`, two locals feeding each other (`t = u; u = v * c;
v = t + x[i];`), or an unrolled `a[i] = a[i-3] * c + b[i]`, whose copies chain through each other. hlsim then
reported fewer cycles than the chain of dependent operations needs (an outside probe: 25 cycles where 80 is the
floor). Now the cycles are found on the graph whose vertices are the carried dependences: an edge e -> f where
the consumer of e reaches the producer of f within one iteration, weighted by that path's latency and f's
distance. Its maximum cycle ratio (a cycle's summed latency over its summed distance) is found per strongly
connected part by a search over integer IIs, each tested for a cycle of positive weight ``L - II * D`` with a
max-plus closure (Floyd-Warshall). The ratio of a cycle never exceeds the largest ratio of its edges, which
bounds the search.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .list_schedule import Node
    from .schedule import Carried


def recurrence_mii(nodes: list[Node], carried: list[Carried]) -> tuple[int, str]:
    """(RecMII, why): the largest ceil(L / D) over the dependence cycles of the body ``nodes`` closed by the
    ``carried`` dependences (1 and "" where there is none)."""
    edges = _distinct(carried)
    if not edges:
        return 1, ""
    L = _path_latencies(nodes, edges)  # (K, K): consumer of e -> producer of f within an iteration, -inf: none
    dist = np.array([e.distance for e in edges], dtype=float)
    best, why = 1, ""
    for k, e in enumerate(edges):  # a single carried dependence: the form the message has always named
        if L[k, k] > -np.inf:
            mii = math.ceil(L[k, k] / e.distance)
            if mii > best:
                best, why = mii, f"{e.what}: a cycle of {L[k, k]:g} cycles over {e.distance} iteration(s)"
    for part in _components(L > -np.inf):
        if len(part) < 2:
            continue
        sub, d = L[np.ix_(part, part)], dist[part]
        top = math.ceil(float(np.max(np.where(sub > -np.inf, sub / d[None, :], 1.0))))
        lo = best
        if top <= lo or not _positive_cycle(sub, d, lo):
            continue
        hi = top  # no cycle at `top`; a cycle at `lo`: the smallest II without one lies in (lo, top]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if _positive_cycle(sub, d, mid) else (lo, mid)
        names = ", ".join(dict.fromkeys(edges[part[i]].what for i in _on_cycles(sub, d, hi - 1)))
        best, why = hi, f"a cycle through {names}"
    return best, why


def _distinct(carried: list[Carried]) -> list[Carried]:
    """One dependence per (producer, consumer): the shortest distance (a longer one closes no tighter cycle)."""
    out: dict[tuple[int, int], Carried] = {}
    for c in carried:
        k = (c.src, c.dst)
        if k not in out or c.distance < out[k].distance:
            out[k] = c
    return sorted(out.values(), key=lambda c: (c.distance, c.dst, c.src))


def _path_latencies(nodes: list[Node], edges: list[Carried]) -> np.ndarray:
    """(K, K) latency from the start of edge e's consumer to the finish of edge f's producer within one iteration
    (the consumer's latency included), -inf where the one does not reach the other."""
    starts = sorted({e.dst for e in edges})
    col = {s: i for i, s in enumerate(starts)}
    lo, hi = starts[0], max(e.src for e in edges)
    finish = np.full((max(hi - lo + 1, 0), len(starts)), -np.inf)
    for x in range(lo, hi + 1):
        row = np.full(len(starts), -np.inf)
        for p in nodes[x].deps:
            if p >= lo:
                np.maximum(row, finish[p - lo], out=row)
        row += nodes[x].latency
        if x in col:
            row[col[x]] = max(row[col[x]], float(nodes[x].latency))
        finish[x - lo] = row
    out = np.full((len(edges), len(edges)), -np.inf)
    for f, e_f in enumerate(edges):
        if e_f.src >= lo:
            out[:, f] = finish[e_f.src - lo, [col[e.dst] for e in edges]]
    return out


def _components(adj: np.ndarray) -> list[list[int]]:
    """Strongly connected parts of the graph ``adj`` (K, K) bool (Kosaraju, iterative)."""
    k = adj.shape[0]
    succ = [np.flatnonzero(adj[i]).tolist() for i in range(k)]
    pred = [np.flatnonzero(adj[:, i]).tolist() for i in range(k)]
    order, seen = [], [False] * k
    for s in range(k):
        if seen[s]:
            continue
        seen[s], stack = True, [(s, iter(succ[s]))]
        while stack:
            v, it = stack[-1]
            w = next((w for w in it if not seen[w]), None)
            if w is None:
                order.append(v)
                stack.pop()
            else:
                seen[w] = True
                stack.append((w, iter(succ[w])))
    comp, parts = [-1] * k, []
    for s in reversed(order):
        if comp[s] >= 0:
            continue
        comp[s], todo, part = len(parts), [s], []
        while todo:
            v = todo.pop()
            part.append(v)
            for w in pred[v]:
                if comp[w] < 0:
                    comp[w] = comp[s]
                    todo.append(w)
        parts.append(sorted(part))
    return parts


def _closure(L: np.ndarray, d: np.ndarray, ii: int) -> np.ndarray:
    """Max-plus closure of the weights ``L - ii * d`` (Floyd-Warshall), stopped at the first positive cycle."""
    a = np.where(L > -np.inf, L - ii * d[None, :], -np.inf)
    for k in range(a.shape[0]):
        a = np.maximum(a, a[:, k:k + 1] + a[k:k + 1, :])
        if (np.diagonal(a) > 0).any():
            break
    return a


def _positive_cycle(L: np.ndarray, d: np.ndarray, ii: int) -> bool:
    """Whether some cycle has latency above ``ii`` times its distance (the loop cannot start every ``ii``)."""
    return bool((np.diagonal(_closure(L, d, ii)) > 0).any())


def _on_cycles(L: np.ndarray, d: np.ndarray, ii: int) -> list[int]:
    """The vertices on cycles of positive weight at ``ii`` (what a message names)."""
    return [int(i) for i in np.flatnonzero(np.diagonal(_closure(L, d, ii)) > 0)]
