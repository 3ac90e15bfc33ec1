"""Bank conflicts: the cycles a PE array waits for a banked buffer, from a transaction-level schedule.

hlsim charges a buffer level's bandwidth as an average over the nest (whole words / (banks x ports x
width)). That is a bound no memory system beats, and on a buffer with fewer bank ports than a step
has words it is optimistic: the words of one step collide in a bank, and a stream that fetches its
vectors in order cannot use a free port of another bank for the next vector while one word waits.
Measured against the generated RTL (plugins/rtl, docs/rtl-crosscheck.md), the average alone was
0.63-0.82x of the RTL's cycles on GLBs of 2 banks x 1 port and on the library's ``edge-tiny``.

This module replays the schedule of the memory system the spec describes, the one ``plugins/rtl``
builds from the same Design (its plan and layout): operands stored row-major in whole words, words
hashed over the banks, one engine per operand stream that walks the mapping's loop nest and fetches
each vector's words in order (a one-word line per lane; lanes sharing a word fetch it once), a
writer that combines a lane's elements of one word and writes it back, the old outputs read only
after the previous fold wrote them, a fixed-priority arbiter granting ``ports`` requests per bank
per cycle, and the array advancing when its operands are there and its output queue has room. It
replays whole words and grants, not data, so it runs in Python in time linear in the vectors
simulated: hlsim runs the first folds of a long nest (``MAX_ADVANCES``) and scales their waits to
the rest.

:func:`stall_cycles` returns the waits: the schedule's cycles on the spec's banks minus the same
schedule with unlimited ports (so the constant start-up and drain cycles, which hlsim's nest model
already counts, cancel). ``None`` where the design is not a PE-array design the plan supports.
:func:`schedule` returns them with the words the schedule moves through each level (reads and
write-backs, as the generated RTL's arbiter counts them): what that level's bandwidth carries. The
closed-form word bound (``llmulator.words``) charges one lane's line to the innermost loop that steps
the contiguous dimension only; lanes that stride through a word together and windows that run on across
loops (a 3x3 filter's taps, a stride-2 convolution's input) fetch fewer words, and the bound read up to
2.2x the RTL's words (docs/rtl-crosscheck.md).
"""

from __future__ import annotations

import math
import weakref

import attrs

from .bankstreams import Reader, Writer, lane_words, reader_items, stream_extent
from .design import Design
from .errors import UserError

# advances simulated at most, then the sample's waits are scaled (hlsim: ~0.1-1 s of Python per nest)
MAX_ADVANCES = 20000

# a reader's ring holds the bank latency's vectors in flight plus this many ready ones: deep enough that a
# reader prefetches past a run of bank conflicts. Measured on the cross-check's 24 rows (docs/rtl-crosscheck.md),
# hlsim compute / rtl at 3 / 8 / 13 / 29: conv2d@small ws 8x8 0.89 / 0.93 / 0.95 / 0.996 (29 with a 16-deep
# output queue), gemm@small ws 8x8 0.90 / 0.96 / 0.999; no row got slower
RING_EXTRA = 29
# the old-output reader is urgent with fewer than latency + URGENT_LEAD vectors issued (3 measured best of 2, 3,
# 4, 6, 12 on gemm@small ws 16x16 and conv2d@small ws 4x4, 8x8, 16x16: benchmarks/rtl_crosscheck.py)
URGENT_LEAD = 3
# the output queue between the array and the writer (RING_EXTRA says why so deep)
FIFO_DEPTH = 16


def _plan(d: Design):
    """The plan and the layout; a level whose stated ``bandwidth_bytes_per_cycle`` is above what its banks
    and ports move gets the ports per bank that carry it (the spec's intent: it does not stall there)."""
    from .buflayout import layout
    from .pearray import make_plan
    plan = make_plan(d)
    lay = layout(d, plan, fit=False)
    levels = {}
    for name, lv in lay.levels.items():
        carry = math.ceil(d.arch.level(name).bandwidth_bytes_per_cycle / (lv.width / 8 * lv.banks) - 1e-9)
        levels[name] = attrs.evolve(lv, ports=max(lv.ports, carry))
    return plan, attrs.evolve(lay, levels=levels)


def _phases(plan, steps: int) -> list[tuple[str, int]]:
    A, B = plan.A, plan.B
    if plan.shape == "psum":
        return [("PRE", A), ("STR", steps), ("DRAIN", A + B - 1)]
    return [("STR", steps)] + ([("WAIT", A + B - 2)] if A + B - 2 > 0 else []) + [("DRAIN", A)]


def _streams(plan, lay, folds: list[dict[str, int]]) -> tuple[list[tuple], tuple]:
    """What the run of ``folds`` asks of the buffers: per reader (in the arbiter's priority order) its
    vectors' requests, and the writer's lane words per fold (built once for both schedules)."""
    readers = []
    geo = {"rd_S": ("S", plan.loop_b, True), "rd_X": ("X", plan.loop_a, False),
           "rd_Y": ("Y", plan.loop_b, False), "old": ("O", plan.loop_b, plan.shape == "os")}
    for name, (role, lane_loop, rows) in geo.items():
        if role not in plan.operands:
            continue
        lv = lay.levels[lay.placed[role].level]
        vecs = [lane_words(plan, lay, role, lane_loop, rows, f) for f in folds]
        readers.append((name, reader_items(vecs, lv, clear_each_fold=name == "old"), lv.name, lv.latency,
                        lv.latency + RING_EXTRA))
    lv = lay.levels[lay.placed["O"].level]
    wvecs = [lane_words(plan, lay, "O", plan.loop_b, plan.shape == "os", f).tolist() for f in folds]
    return readers, (wvecs, lv.name, lv.bank_of)


def _arbitrate(lay, requests: list[tuple[str, list[int]]], unlimited: bool) -> tuple[list[list[bool]], int]:
    """Grants per request list (in priority order, a request is granted while its bank has a free port),
    and how many requests were refused."""
    total: dict[str, int] = {}
    for level, banks in requests:
        total[level] = total.get(level, 0) + len(banks)
    if unlimited or all(n <= lay.levels[level].ports for level, n in total.items()):
        return [[True] * len(banks) for _level, banks in requests], 0   # no bank can be full
    used: dict[tuple[str, int], int] = {}
    out = []
    refused = 0
    for level, banks in requests:
        ports = lay.levels[level].ports
        flags = []
        for b in banks:
            n = used.get((level, b), 0)
            ok = n < ports
            if ok:
                used[(level, b)] = n + 1
            refused += not ok
            flags.append(ok)
        out.append(flags)
    return out, refused


class _Array:
    """The controller and the array: phases per fold, which stream heads an advance pops, whether the
    array holds an output vector, the output queue."""

    def __init__(self, plan, folds: list[dict[str, int]], by: dict[str, Reader]):
        self.by, self.psum, self.lag = by, plan.shape == "psum", plan.A + plan.B - 1
        stream = [by["rd_X"]] + ([by["rd_Y"]] if "rd_Y" in by else [])
        self.sched = [(f, ph, n, {"PRE": [by["rd_S"]] if "rd_S" in by else [], "STR": stream}.get(ph, []))
                      for f, bases in enumerate(folds) for ph, n in _phases(plan, _steps(plan, bases))]
        self.pi, self.k, self.since_str, self.fifo = 0, 0, 0, 0
        self._enter()

    def _enter(self) -> None:
        """Cache what the current phase means (the loop asks every cycle)."""
        done = self.pi >= len(self.sched)
        self.phase = "FLUSH" if done else self.sched[self.pi][1]
        self.needs = [] if done else self.sched[self.pi][3]
        self.streaming = self.phase in ("STR", "DRAIN")

    def out_valid(self) -> bool:
        if self.psum:
            return self.streaming and self.since_str >= self.lag
        return self.phase == "DRAIN"

    def can_advance(self, c: int, depth: int) -> bool:
        return self.phase != "FLUSH" and self.fifo < depth and all(r.head(c) for r in self.needs)

    def advance(self) -> None:
        for r in self.needs:
            r.pop()
        self.fifo += self.out_valid()
        self.k += 1
        if self.phase != "PRE":
            self.since_str += 1
        if self.k == self.sched[self.pi][2]:
            self.pi, self.k = self.pi + 1, 0
            if self.pi < len(self.sched) and self.sched[self.pi][0] != self.sched[self.pi - 1][0]:
                self.since_str = 0
            self._enter()


def _old_may_read(old: Reader, wr: Writer) -> bool:
    """The old-output reader reads vector v of fold f once the writer wrote vector v of fold f-1."""
    if old.done() or old.cnt >= old.slots:
        return False
    fo, vo, _b = old.items[old.idx]
    return fo <= wr.folds_done or (fo == wr.folds_done + 1 and vo < wr.vec_limit())


def simulate(plan, lay, folds: list[dict[str, int]], unlimited: bool = False, streams=None,
             stats: dict | None = None) -> int:
    """Cycles from start to the last write-back of the run of ``folds`` (tile bases, walk order);
    ``streams``: what ``_streams`` returns for them, where the caller has it already; ``stats`` gets
    ``refused``, the requests a bank turned away, and ``words``, level -> the words granted there."""
    refused = 0
    moved: dict[str, int] = {}  # words granted per level: reads and write-backs
    rd, w = streams or _streams(plan, lay, folds)
    readers, wr = [Reader(*r) for r in rd], Writer(*w)
    by = {r.name: r for r in readers}
    old, arr = by["old"], _Array(plan, folds, by)
    held = [r is not old and r.level == old.level for r in readers]
    urgent_below = old.latency + URGENT_LEAD
    limit = 64 * (len(arr.sched) * max(plan.A, plan.B) + sum(len(r.items) for r in readers) + 100)
    for c in range(1, limit):
        old_can = _old_may_read(old, wr)
        # the old reader falling behind: the stream readers of its level hold their requests
        hold = old_can and old.cnt < urgent_below and (arr.fifo > 0 or arr.out_valid())
        lanes = wr.flushing()
        wreqs = wr.requests(lanes) if lanes else []
        reqs = [(wr.level, [b for _i, b in wreqs])]
        can = [old_can if r is old else r.idx < len(r.items) and r.cnt < r.slots and not (hold and h)
               for r, h in zip(readers, held, strict=True)]
        reqs += [(r.level, r.left) for r, ok in zip(readers, can, strict=True) if ok]
        got, n = _arbitrate(lay, reqs, unlimited)
        refused += n
        for (lv, _banks), flags in zip(reqs, got, strict=True):
            moved[lv] = moved.get(lv, 0) + sum(flags)
        adv = arr.can_advance(c, FIFO_DEPTH)
        merged = wr.step(lanes, wreqs, got[0]) if (lanes or wr.cur) else False
        load = arr.fifo > 0 and old.head(c) and (not wr.cur or merged)
        k = 1
        for r, ok in zip(readers, can, strict=True):
            if ok:
                r.granted(c, got[k])
                k += 1
        if adv:
            arr.advance()
        if load:
            arr.fifo -= 1
            old.pop()
            wr.cur = True
        if arr.phase == "FLUSH" and wr.walk_done and not wr.fph:
            if stats is not None:
                stats["refused"] = refused
                stats["words"] = moved
            return c
    raise RuntimeError("the bank schedule did not finish")   # a bug in this model, not a property of the design


@attrs.frozen
class Schedule:
    """What the replay of a PE-array nest's memory system found: the array's waits for its banks (cycles)
    and the words moved through each buffer level (level name -> words, reads and write-backs)."""

    waits: float
    words: dict[str, float]


def stall_cycles(d: Design, budget: int = MAX_ADVANCES) -> float | None:
    """The cycles the PE array of ``d`` waits for its banked buffers (see the module docstring), or None
    where the design is not a PE-array design the plan supports."""
    s = schedule(d, budget)
    return None if s is None else s.waits


def schedule(d: Design, budget: int = MAX_ADVANCES) -> Schedule | None:
    """The waits and the words of the PE array's schedule (module docstring), or None where the design is
    not a PE-array design the plan supports. A nest of more than ``budget`` advances is sampled (its first
    folds, or the first steps of one long fold) and the sample's figures scaled. Once per design object and
    budget."""
    memo = _MEMO.setdefault(d, {})
    if budget not in memo:
        memo[budget] = _schedule(d, budget)
    return memo[budget]


_MEMO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# the schedule depends on the plan and the layout only: designs that differ elsewhere (timing constants,
# energies, inputs) share it within a process
_BY_CONTENT: dict[tuple, Schedule] = {}


def _schedule(d: Design, budget: int) -> Schedule | None:
    try:
        plan, lay = _plan(d)
    except UserError:
        return None
    key = (repr(plan), repr(lay), budget)
    if key not in _BY_CONTENT:
        if len(_BY_CONTENT) > 512:
            _BY_CONTENT.clear()
        _BY_CONTENT[key] = _remembered(key, lambda: _sampled(plan, lay, budget))
    return _BY_CONTENT[key]


def _code_stamp() -> bytes:
    """The source of the replay (this module and bankstreams): any change to it is a new cache key."""
    from pathlib import Path
    global _STAMP
    if _STAMP is None:
        here = Path(__file__).resolve().parent
        _STAMP = b"".join((here / n).read_bytes() for n in ("banks.py", "bankstreams.py", "pearray.py", "buflayout.py"))
    return _STAMP


_STAMP: bytes | None = None


def _remembered(key: tuple, compute) -> Schedule:
    """The schedule's figures from ``$LLMULATOR_CACHE/banks`` (a pure function of the plan, the layout,
    the budget and the replay's code, whose source is part of the key), computed and stored when
    missing; a cache that cannot be read or written only costs the replay."""
    import hashlib
    import json

    from .fileio import atomic_write_text, cache_root
    h = hashlib.sha256(_code_stamp() + repr(key).encode()).hexdigest()
    path = cache_root() / "banks" / f"{h}.json"
    try:
        got = json.loads(path.read_text())
        return Schedule(float(got["waits"]), {str(k): float(v) for k, v in got["words"].items()})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    found = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({"waits": found.waits, "words": found.words}))
    except OSError:
        pass
    return found


def _sampled(plan, lay, budget: int) -> Schedule:
    """The waits and words of the whole fold walk from a replay of at most about ``budget`` advances. The
    walk's length is counted in closed form and the sampled folds are built by index: a large GEMM has
    hundreds of thousands of folds, and listing them cost seconds per design."""
    n_folds = plan.fold_count()
    first = plan.fold_at(0)
    fixed = _per(plan, first) - _steps(plan, first)        # the phases other than streaming: equal per fold
    total = plan.total_stream_steps() + n_folds * fixed
    if _per(plan, first) > budget:    # one long fold: its first steps (its outermost stream loop cut short)
        cut = _cut(plan, first, budget)
        return _scaled(_run(plan, lay, [cut]), total / _per(plan, cut))
    if total <= budget:
        return _run(plan, lay, plan.folds())
    # folds spread evenly over the walk (conflicts differ from fold to fold: edge tiles, the window's words)
    k = max(2, min(n_folds, round(n_folds * budget / total)))
    picked = [plan.fold_at(i) for i in sorted({round(i * (n_folds - 1) / (k - 1)) for i in range(k)})]
    return _scaled(_run(plan, lay, picked), total / sum(_per(plan, f) for f in picked))


def _scaled(s: Schedule, factor: float) -> Schedule:
    return Schedule(s.waits * factor, {k: v * factor for k, v in s.words.items()})


def _per(plan, bases: dict) -> int:
    """Advances of one fold: its stream steps and the phases around them."""
    return sum(n for _p, n in _phases(plan, _steps(plan, bases)))


def _steps(plan, bases: dict) -> int:
    return math.prod(stream_extent(plan, lb, bases) for lb in plan.temporal)


def _cut(plan, bases: dict, budget: int) -> dict:
    """A fold whose outermost stream loop stops after enough steps for about ``budget`` stream steps."""
    if not plan.temporal:
        return bases
    outer, inner = plan.temporal[0], math.prod(plan.extent(lb, bases) for lb in plan.temporal[1:])
    return {**bases, ("cut", outer): max(1, min(plan.extent(outer, bases), budget // max(inner, 1)))}


def _run(plan, lay, folds: list[dict[str, int]]) -> Schedule:
    """The schedule's cycles minus :func:`ideal_cycles` (what it takes with unlimited ports and no fold
    waiting for the last one's write-backs), and the words it moved (the same with any number of ports: a
    vector's words and a lane's write-backs do not depend on when they are granted). The waits are the
    ports' refusals and the old-output reader's wait for the previous fold's writer (the controller the
    rtl profiler builds gates it by fold): on short folds over a buffer of latency 2 or more that round trip
    is longer than the fold (before hlsim 0.34 it counted only where a port had refused a request: a 2x2
    matrix-vector fold on a latency-4 buffer took 8 cycles in RTL, 6 here; an outside probe)."""
    stats: dict = {}
    real = simulate(plan, lay, folds, stats=stats)
    waits = max(0, real - ideal_cycles(plan, lay, folds))
    return Schedule(float(waits), {k: float(v) for k, v in stats["words"].items()})


def ideal_cycles(plan, lay, folds: list[dict[str, int]]) -> int:
    """Cycles of the schedule with unlimited ports: the array's advances, the first vector's fetch (a
    registered request, then the bank latency) and the last output's way out (queue, accumulation with
    the old value, its write)."""
    advances = sum(n for f in folds for _p, n in _phases(plan, _steps(plan, f)))
    return advances + max(lv.latency for lv in lay.levels.values()) + 4
