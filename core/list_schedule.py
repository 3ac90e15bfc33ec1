"""Resource-constrained list scheduling of one body's data-flow graph (``llmulator.schedule`` builds it),
and the initiation interval of a pipelined loop from it: shared by hlsim and the analytical estimator.

Nodes are scheduled cycle by cycle in order of their longest path to the end, each taking a unit of its
resource (``Node.resource``: an operator class, an array's bank, a DRAM channel) up to the resource's issues
per cycle (``llmulator.costs.resource_cap``). A dynamic index of a cyclic or block partitioned array may hit
any bank (the tool reads every bank and multiplexes): where a body has one, every access of that array takes
the ports they all share (before hlsim 0.34 the dynamic accesses had a port of their own, apart from the
banks the static ones used: an unrolled geometric loop's copies, i and 2i, were taken as different banks).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import attrs

from .costs import resource_cap
from .design import Design


@attrs.define
class Node:
    op: str  # operator class, 'load', 'store'
    latency: int
    deps: list[int]
    resource: str | None  # 'op:<class>' or 'mem:<array>[#bank]' or 'mem:@<dram level>' or None (free)
    prio: int = 0
    slots: int = 1  # issues of its resource it takes: the words of an element wider than an SRAM port


@attrs.define
class Schedule:
    depth: int
    uses: Counter  # resource -> issues in the body
    peak: Counter  # resource -> most issues in one cycle (units needed without sharing over time)
    nodes: int
    start: list[int] = attrs.field(factory=list)  # node -> the cycle it issues
    finish: list[int] = attrs.field(factory=list)  # node -> the cycle its result is ready
    selects: int = 0  # multiplexers (select nodes: no issue limit, but each one is a mux in the datapath)
    select_peak: int = 0  # most selects in one cycle
    ii: int = 0  # the II of the modulo reservation table it was placed with (0: not a modulo schedule)
    exit_tree: int = 0  # of ``depth``, the cycles of a ``reduction: tree``'s combining tree, paid once on exit


class NoModuloSlot(Exception):
    """A node found no free slot of its resource in any cycle modulo the II (``list_schedule(modulo=...)``)."""


def list_schedule(design: Design, nodes: list[Node], caps: dict[str, float] | None = None,
                  release: dict[int, int] | None = None, first: set[int] | None = None,
                  modulo: int = 0) -> Schedule:
    """Resource-constrained list scheduling; returns the schedule length and resource use.

    ``caps`` overrides the issues per cycle of some resources (one PE's own units); ``release`` gives some
    nodes a cycle before which they may not issue, and ``first`` some nodes precedence over every other ready
    node (``respect_carried``). ``modulo`` > 0 places a pipelined body at that II: a resource's issues count
    against its slot ``cycle mod II`` (the iterations in flight issue in the same slots, so at II 3 three
    multiplies on one multiplier must take three different slots); raises ``NoModuloSlot`` where a node finds
    none."""
    n = len(nodes)
    if n == 0:  # constants into registers: wiring, no cycle
        return Schedule(0, Counter(), Counter(), 0)
    succ, cap = _prepare(design, nodes, caps, first)
    finish, start = [0] * n, [0] * n
    remaining = [len(nd.deps) for nd in nodes]
    ready_at = [max(0, (release or {}).get(i, 0)) for i in range(n)]
    ready = [i for i in range(n) if remaining[i] == 0]
    scheduled = cycle = depth = 0
    uses: Counter = Counter()
    peak: Counter = Counter()
    booked: defaultdict[int, Counter] = defaultdict(Counter)  # cycle -> resource -> issues taken
    table = _Table(cap, booked, modulo)
    waiting: dict[int, int] = {}  # node -> the first cycle it could issue but for its resource (modulo)
    muxes: Counter = Counter()  # cycle -> selects issued
    while scheduled < n:
        progress = True
        while progress:  # repeat within a cycle so zero-latency operations chain
            progress = False
            ready.sort(key=lambda i: -nodes[i].prio)
            keep: list[int] = []
            for i in ready:
                nd = nodes[i]
                span = table.span(nd, cycle) if ready_at[i] <= cycle else None
                if span is None:
                    if ready_at[i] <= cycle and modulo and cycle - waiting.setdefault(i, cycle) >= modulo:
                        raise NoModuloSlot(i)  # every slot mod II tried, and slots only fill
                    keep.append(i)
                    continue
                start[i], finish[i] = cycle, cycle + nd.latency + span - 1
                if nd.op == "select":
                    muxes[cycle] += 1
                depth = max(depth, finish[i])
                scheduled += 1
                progress = True
                for s_ in succ[i]:
                    remaining[s_] -= 1
                    ready_at[s_] = max(ready_at[s_], finish[i])
                    if remaining[s_] == 0:
                        keep.append(s_)
            ready = keep
        _tally(booked.pop(cycle, Counter()), uses, peak)
        cycle += 1
    for later in booked.values():  # the words of the last wide accesses, issued after the last node started
        _tally(later, uses, peak)
    return Schedule(max(depth, 1) if n else 0, uses, peak, n, start=start, finish=finish,
                    selects=sum(muxes.values()), select_peak=max(muxes.values(), default=0), ii=modulo)


#: rounds of rescheduling ``respect_carried`` tries before it keeps the last schedule
CARRIED_ROUNDS = 16


def respect_carried(design: Design, nodes: list[Node], sched: Schedule, carried, ii: int,
                    modulo: int = 0) -> Schedule:
    """The body rescheduled so that every loop-carried dependence holds at ``ii``: the consumer ``c.dst`` of
    the iteration ``c.distance`` later issues ``c.distance x ii`` cycles after this one's, so it may not issue
    before ``finish(c.src) - c.distance x ii`` (a modulo schedule's dependence constraint).

    RecMII makes II long enough for the dependences on a cycle; this places the consumers. Before hlsim 0.39
    a carried dependence on no cycle did not delay its consumer at all: `b[i] = s * c; s = a[i] * 7;` at II 1
    multiplied the next iteration's s at offset 0 where s is ready at 5 (depth 5 where 8 is the floor; an
    outside probe). Where a schedule breaks one, the producers of carried values and everything they wait for
    go first among the nodes ready in a cycle (their priority, the path to the body's end, does not see the
    next iteration waiting for them: in 0.39 a producer lost its unit to a node of a longer tail round after
    round, and its consumer slipped a cycle a round, up to 48 % over a legal schedule; an outside probe), and the
    consumers' release times are recomputed from each schedule, starting from none, until they no longer change
    (0.39 kept a release that an earlier round's late producer had set). Ends at ``CARRIED_ROUNDS`` with the
    shortest schedule that keeps every dependence (the last one if none does). ``modulo``: every round is
    placed in a modulo reservation table of that II (``llmulator.modulo.modulo_schedule``); a round that finds
    no slot ends the rounds."""
    if not _broken(sched, carried, ii):
        return sched
    best, last = carried_rounds(design, nodes, carried, ii, modulo)
    return best if best is not None else last if last is not None else sched


def carried_rounds(design: Design, nodes: list[Node], carried, ii: int, modulo: int = 0,
                   fixed: dict[int, int] | None = None) -> tuple[Schedule | None, Schedule | None]:
    """:func:`respect_carried`'s rounds (``fixed``: nodes held from given cycles in every round, as
    ``llmulator.modulo._shorten`` moves them): (the shortest schedule that keeps every carried dependence, or
    None; the last one scheduled, or None)."""
    first = _producers(nodes, carried)
    release: dict[int, int] = dict(fixed or {})
    best = last = None
    for _ in range(CARRIED_ROUNDS):
        try:
            last = list_schedule(design, nodes, None, release, first, modulo)
        except NoModuloSlot:
            break
        if not _broken(last, carried, ii) and (best is None or last.depth < best.depth):
            best = last
        want: dict[int, int] = dict(fixed or {})
        for c in carried:
            need = last.finish[c.src] - c.distance * ii
            if need > want.get(c.dst, 0):
                want[c.dst] = need
        if want == release:
            break
        release = want
    return best, last


def _broken(sched: Schedule, carried, ii: int) -> bool:
    """Whether some carried dependence's consumer issues before its producer's result is there."""
    return any(sched.finish[c.src] - c.distance * ii > sched.start[c.dst] for c in carried)


def _producers(nodes: list[Node], carried) -> set[int]:
    """The producers of carried values and every node they wait for, within one iteration."""
    todo = [c.src for c in carried]
    seen: set[int] = set()
    while todo:
        i = todo.pop()
        if i not in seen:
            seen.add(i)
            todo.extend(nodes[i].deps)
    return seen


def _prepare(design: Design, nodes: list[Node], caps: dict[str, float] | None, first: set[int] | None = None
             ) -> tuple[list[list[int]], dict]:
    """Each node's successors and priority (its longest path to the end; ``first`` above every other), and every
    resource's issues per cycle."""
    succ: list[list[int]] = [[] for _ in nodes]
    for i, nd in enumerate(nodes):
        for dep in nd.deps:
            succ[dep].append(i)
    for i in range(len(nodes) - 1, -1, -1):  # deps point backwards: reverse order is a topological order
        nodes[i].prio = nodes[i].latency + max((nodes[s].prio for s in succ[i]), default=0)
    if first:
        top = 1 + max(nd.prio for nd in nodes)
        for i in first:
            nodes[i].prio += top
    _dynamic_banks(design, nodes)
    cap: dict[str, float] = dict(caps or {})
    for nd in nodes:
        if nd.resource is not None and nd.resource not in cap:
            cap[nd.resource] = resource_cap(design, nd.resource)
    return succ, cap


def _tally(issued: Counter, uses: Counter, peak: Counter) -> None:
    """Add one cycle's issues per resource to the body's uses and peaks."""
    for r, k in issued.items():
        peak[r] = max(peak[r], k)
        uses[r] += k


class _Table:
    """The issues booked per resource: per cycle, and with ``modulo`` > 0 also per slot ``cycle mod modulo``
    (a modulo reservation table: a pipelined body's iterations in flight share the slots)."""

    def __init__(self, cap: dict[str, float], booked: defaultdict, modulo: int):
        self.cap, self.booked, self.modulo = cap, booked, modulo
        self.slots: defaultdict[int, Counter] = defaultdict(Counter)

    def span(self, nd: Node, cycle: int) -> int | None:
        """Book ``nd``'s issues from ``cycle`` on if its resource has room, and return the cycles they take
        (an element of two words on a one-port bank: two, its data a cycle later); None if it has no room.
        A node of several slots takes what the resource issues per cycle in each cycle until its words are
        done, so an int64 load on a 32-bit single-port SRAM holds the port for two cycles (hlsim 0.38; before,
        one, while the energy and the level's bandwidth counted both words: probe 18)."""
        r = nd.resource
        if r is None:
            return 1
        c = self.cap[r]
        take = issues_per_cycle(nd, self.cap)
        span = len(take)
        modulo = 0 if math.isinf(c) else self.modulo  # (an unlimited resource is only counted)
        tables = [self.booked, self.slots]
        need: Counter = Counter()  # (table, key) -> issues this node adds (its words may wrap onto one slot)
        for k, t in enumerate(take):
            need[0, cycle + k] += t
            if modulo:
                need[1, (cycle + k) % modulo] += t
        if any(tables[ti][key][r] + t > c for (ti, key), t in need.items()):
            return None
        for (ti, key), t in need.items():
            tables[ti][key][r] += t
        return span


def issues_per_cycle(nd: Node, cap: dict[str, float]) -> list[int]:
    """The issues a node takes of its resource in each cycle from its start: all at once where they fit, else
    what the resource issues per cycle (whole ports and units) until its words are done."""
    c = cap.get(nd.resource, math.inf) if nd.resource is not None else math.inf
    if math.isinf(c) or nd.slots <= c:
        return [nd.slots]
    return [min(int(c), nd.slots - k * int(c)) for k in range(math.ceil(nd.slots / c))]


def _dynamic_banks(design: Design, nodes: list[Node]) -> None:
    """Where an access of a cyclic or block partitioned array has a dynamic index (``#*``), every access of the
    array in the body takes the ports they share (the module's docstring)."""
    dynamic = {nd.resource[:-2] for nd in nodes if nd.resource is not None and nd.resource.endswith("#*")}
    for nd in nodes:
        r = nd.resource
        if r is not None and "#" in r and r.split("#")[0] in dynamic:
            p = design.mapping.partition.get(r[4:].split("#")[0])
            if p is not None and p.type in ("cyclic", "block"):
                nd.resource = r.split("#")[0] + "#*"


def initiation_interval(design: Design, sched: Schedule, target: int, rec: tuple[int, str] = (1, "")
                        ) -> dict[str, float]:
    """II = max(target, ResMII, MemMII, RecMII) for a pipelined loop with this body schedule."""
    res_mii = mem_mii = 1
    for r, u in sched.uses.items():
        cap = resource_cap(design, r)
        if cap == math.inf:
            continue
        if r.startswith("op:"):
            res_mii = max(res_mii, math.ceil(u / cap))
        else:
            mem_mii = max(mem_mii, math.ceil(u / cap))
    ii = max(target, res_mii, mem_mii, rec[0])
    return {"ii": ii, "res_mii": res_mii, "mem_mii": mem_mii, "rec_mii": rec[0]}
