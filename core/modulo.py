"""The placement of a pipelined body in a modulo reservation table (``modulo_schedule``), and iterative modulo
scheduling (Rau, MICRO 1994) at a given II: its fallback where the greedy list scheduler finds no legal one.

The greedy scheduler places nodes cycle by cycle and never takes a decision back, so a recurrence whose
operations must sit exactly II apart (a body at II = RecMII) breaks as soon as another node took the slot one
of them needs, and the II grows although a legal placement exists at it (seidel-2d-opt of the synthetic data:
the greedy rounds found none below II 106 where RecMII is 84). Here a node that finds no free slot in its
window of II cycles takes one anyway and evicts the nodes in its way, which are placed again later; a node
placed too early for a dependence it feeds evicts its consumers. A budget of placements bounds the search: on
running out, the II is taken as infeasible (the caller tries the next).

Dependences: a node's consumers may issue from its ``finish`` (issue + latency + the cycles its words take,
less one: ``list_schedule``'s convention); a carried dependence of distance d from ``src`` to ``dst`` asks
``start[dst] >= finish[src] - d x II``.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict

from .design import Design
from .list_schedule import (
    Node,
    NoModuloSlot,
    Schedule,
    _broken,
    _prepare,
    _producers,
    _tally,
    carried_rounds,
    issues_per_cycle,
    list_schedule,
    respect_carried,
)

#: placements per node the search may make before it gives up on an II
BUDGET_PER_NODE = 30


#: IIs from the first that ``modulo_schedule`` tries before it keeps a plain list schedule
MODULO_TRIES = 64


def modulo_schedule(design: Design, nodes: list[Node], carried, ii: int) -> Schedule:
    """A pipelined body placed at the smallest II from ``ii`` (its MII) at which every node finds a slot of its
    resource modulo the II and every carried dependence holds (``respect_carried``), with that II in
    ``Schedule.ii``.

    Before hlsim 0.42 a body was list-scheduled as one iteration alone: three dependent multiplies on one
    multiplier at II 3 issued at 2, 5 and 8, all in slot 2, so the iterations in flight asked for the one unit
    three times in a cycle (an outside probe; depth 12 where the legal placement needs 14). And where resources
    spread a recurrence beyond its RecMII (two loads and a store of one array on one port around a cycle of
    three), no placement keeps every carried dependence at the II the bounds give: the rescheduling crept its
    consumers a cycle a round and kept a schedule that broke them (one II short a trip). Here the II grows
    until a legal placement exists: at each II the greedy list scheduler first (with ``respect_carried``'s
    rounds), then the iterative modulo scheduler, which takes decisions back (``iterative_modulo``). Ends after
    ``MODULO_TRIES`` IIs with the plain list schedule (``ii`` 0)."""
    for k in range(max(1, ii), max(1, ii) + MODULO_TRIES):
        try:
            sched = respect_carried(design, nodes, list_schedule(design, nodes, modulo=k), carried, k, modulo=k)
            if not _broken(sched, carried, k):
                return _shorten(design, nodes, carried, k, sched)
        except NoModuloSlot:
            pass
        placed = iterative_modulo(design, nodes, carried, k)
        if placed is not None:
            return _shorten(design, nodes, carried, k, placed)
    return respect_carried(design, nodes, list_schedule(design, nodes), carried, ii)


#: bodies of at most this many nodes try moving their recurrences' nodes (``_shorten``), at most this many times
SHORTEN_NODES, SHORTEN_TRIES = 48, 96


def _shorten(design: Design, nodes: list[Node], carried, ii: int, sched: Schedule) -> Schedule:
    """The legal placement at ``ii`` with the smallest depth found by moving one node of a carried dependence
    (its producer, its consumer, or what the producer waits for) to each other cycle within an II of where it
    is, the rest placed greedily around it. The greedy rounds start a recurrence at its earliest cycle, which
    may take the slot a longer chain needs later: `s = s * c; b[i] = a[i] * c * c` on one multiplier at II 3 had
    depth 11 where starting the recurrence a cycle later gives 10; `a[i] = a[i-2] + a[i-1]` on one port at II 5
    settled at depth 8 where 7 is legal (an outside probe, 4 of 31 hand-counted bodies one cycle deep).
    Only where the depth is above the body's unconstrained critical path, and within ``SHORTEN_TRIES``."""
    if not carried or len(nodes) > SHORTEN_NODES:
        return sched
    free = {nd.resource: math.inf for nd in nodes if nd.resource is not None}
    if sched.depth <= list_schedule(design, nodes, free).depth:
        return sched
    movable = sorted(_producers(nodes, carried) | {c.dst for c in carried})
    tries = 0
    improved = True
    while improved and tries < SHORTEN_TRIES:
        improved = False
        for n in movable:
            for t in range(max(0, sched.start[n] - ii + 1), sched.start[n] + ii):
                if t == sched.start[n] or tries >= SHORTEN_TRIES:
                    continue
                tries += 1
                got = _placed_with(design, nodes, carried, ii, {n: t})
                if got is not None and got.depth < sched.depth:
                    sched, improved = got, True
    return sched


def _placed_with(design: Design, nodes: list[Node], carried, ii: int, fixed: dict[int, int]) -> Schedule | None:
    """The shortest legal placement ``respect_carried``'s rounds find in the modulo table with some nodes held
    from given cycles, or None."""
    return carried_rounds(design, nodes, carried, ii, ii, fixed)[0]




def iterative_modulo(design, nodes: list[Node], carried, ii: int) -> Schedule | None:
    """A legal modulo schedule of ``nodes`` at ``ii`` (``Schedule.ii`` set), or None within the budget."""
    return _Search(design, nodes, carried, ii).run()


class _Search:
    """One iterative modulo scheduling search at one II: the placements so far and the modulo reservation table."""

    def __init__(self, design, nodes: list[Node], carried, ii: int):
        n = len(nodes)
        succ, self.cap = _prepare(design, nodes, None)
        self.nodes, self.ii = nodes, ii
        self.takes = [issues_per_cycle(nd, self.cap) for nd in nodes]
        self.delay = [nd.latency + len(self.takes[i]) - 1 for i, nd in enumerate(nodes)]  # finish - start
        self.preds: list[list[tuple[int, int]]] = [[(p, 0) for p in nd.deps] for nd in nodes]  # (pred, distance)
        self.outs: list[list[tuple[int, int]]] = [[(s, 0) for s in succ[i]] for i in range(n)]
        for c in carried:
            self.preds[c.dst].append((c.src, c.distance))
            self.outs[c.src].append((c.dst, c.distance))
        self.rank = {k: r for r, k in enumerate(_height_order(n, self.delay, self.outs, ii))}
        self.cyclic = _on_cycles(n, self.outs)
        self.start: list[int | None] = [None] * n
        self.last: list[int | None] = [None] * n  # where each node was last placed (a re-placement moves on)
        self.table: defaultdict[int, Counter] = defaultdict(Counter)  # slot mod II -> resource -> issues
        self.holders: defaultdict[tuple[int, str], set[int]] = defaultdict(set)  # (slot, resource) -> nodes
        self.waiting = sorted((r, k) for k, r in self.rank.items())  # a heap: the highest unplaced node first

    def run(self) -> Schedule | None:
        n, ii, start, delay = len(self.nodes), self.ii, self.start, self.delay
        budget = BUDGET_PER_NODE * n
        while self.waiting and budget > 0:
            budget -= 1
            i = heapq.heappop(self.waiting)[1]
            t = self._slot(i)
            while not self._fits(i, t):  # evict the lowest of the nodes holding what it needs
                self._unplace(max(self._in_the_way(i, t), key=self.rank.__getitem__))
            self._place(i, t)
            for s, d in self.outs[i]:  # consumers placed before this node now ran too early
                if s != i and start[s] is not None and start[s] < t + delay[i] - d * ii:
                    self._unplace(s)
        if self.waiting or any(start[s] < start[i] + delay[i] - d * ii for i in range(n) for s, d in self.outs[i]):
            return None
        return _as_schedule(self.nodes, self.takes, [int(x) for x in start], delay, ii)

    def _slot(self, i: int) -> int:
        """Where node i goes: within the window its placed producers and consumers leave it (from the earliest up
        where it has producers placed, from the latest down where only consumers: swing modulo scheduling's
        rule, so a node does not push a recurrence it closes later than it must), the first cycle with room; a
        node on a recurrence may take one held by nodes on none (they make room); else one anyway (Rau's rule:
        its earliest, or one past where it was last)."""
        ii, start, delay = self.ii, self.start, self.delay
        early = max([0] + [start[p] + delay[p] - d * ii for p, d in self.preds[i] if start[p] is not None])
        lates = [start[s] - delay[i] + d * ii for s, d in self.outs[i] if s != i and start[s] is not None]
        if lates and not any(start[p] is not None for p, _ in self.preds[i] if p != i):
            window = range(min(lates), max(min(lates) - ii, -1), -1)
        else:
            window = range(early, min(early + ii - 1, min(lates, default=early + ii)) + 1)
        t = next((c for c in window if self._fits(i, c)), None)
        if t is None and i in self.cyclic:
            t = next((c for c in window if not self.cyclic & self._in_the_way(i, c)), None)
        if t is None:
            t = early if self.last[i] is None or early > self.last[i] else self.last[i] + 1
        return t

    def _fits(self, i: int, t: int) -> bool:
        r = self.nodes[i].resource
        if r is None or math.isinf(self.cap[r]):
            return True
        return all(self.table[s][r] + x <= self.cap[r] for s, x in _need(self.takes[i], t, self.ii).items())

    def _in_the_way(self, i: int, t: int) -> set[int]:
        """The nodes holding the slots node i takes at ``t``."""
        r = self.nodes[i].resource
        if r is None:
            return set()
        return set().union(*(self.holders[s, r] for s in _need(self.takes[i], t, self.ii)))

    def _place(self, i: int, t: int) -> None:
        self.start[i] = self.last[i] = t
        r = self.nodes[i].resource
        if r is not None:
            for s, x in _need(self.takes[i], t, self.ii).items():
                self.table[s][r] += x
                self.holders[s, r].add(i)

    def _unplace(self, j: int) -> None:
        r = self.nodes[j].resource
        if r is not None:
            for s, x in _need(self.takes[j], self.start[j], self.ii).items():
                self.table[s][r] -= x
                self.holders[s, r].discard(j)
        self.start[j] = None
        heapq.heappush(self.waiting, (self.rank[j], j))


def _on_cycles(n: int, outs) -> set[int]:
    """The nodes on a dependence cycle (through carried dependences): the strongly connected components of more
    than one node or with a self-loop (Tarjan's algorithm, iterative)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on: set[int] = set()
    found: set[int] = set()
    for root in range(n):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, k = work.pop()
            if k == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on.add(v)
            succs = outs[v]
            if k < len(succs):
                work.append((v, k + 1))
                w = succs[k][0]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or any(s == v for s, _ in outs[v]):
                    found.update(comp)
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
    return found


def _height_order(n: int, delay: list[int], outs, ii: int) -> list[int]:
    """Nodes by decreasing height: the longest path to the end of the body, through carried dependences at
    ``ii`` (each counts its delay less ``distance x II``); ties in topological (index) order."""
    height = [delay[i] for i in range(n)]
    for _ in range(n):  # relaxation: no positive cycle at II >= RecMII, so it settles within n rounds
        changed = False
        for i in range(n - 1, -1, -1):
            h = delay[i] + max([0] + [height[s] - d * ii for s, d in outs[i] if s != i])
            if h > height[i]:
                height[i], changed = h, True
        if not changed:
            break
    return sorted(range(n), key=lambda i: (-height[i], i))


def _need(takes: list[int], t: int, ii: int) -> Counter:
    need: Counter = Counter()
    for k, x in enumerate(takes):
        need[(t + k) % ii] += x
    return need


def _as_schedule(nodes: list[Node], takes, start: list[int], delay: list[int], ii: int) -> Schedule:
    """The placement as a ``Schedule``: depth, issues per resource and per cycle, selects."""
    per_cycle: defaultdict[int, Counter] = defaultdict(Counter)
    muxes: Counter = Counter()
    for i, nd in enumerate(nodes):
        if nd.resource is not None:
            for k, x in enumerate(takes[i]):
                per_cycle[start[i] + k][nd.resource] += x
        if nd.op == "select":
            muxes[start[i]] += 1
    uses: Counter = Counter()
    peak: Counter = Counter()
    for c in sorted(per_cycle):
        _tally(per_cycle[c], uses, peak)
    finish = [start[i] + delay[i] for i in range(len(nodes))]
    return Schedule(max(1, max(finish)), uses, peak, len(nodes), start=start, finish=finish,
                    selects=sum(muxes.values()), select_peak=max(muxes.values(), default=0), ii=ii)
