"""What each engine of a PE array's memory system asks of its banked buffer, for ``llmulator.banks``.

The words every lane of an engine touches, vector by vector (the subscript's affine address over the
loop nest, the layout's whole words), the banks they fall in, the requests that remain once a lane's
one-word line and its neighbours' shared words are taken out, and the two kinds of engine state the
schedule replays: a reader's ring of fetched vectors and the combining writer's lanes.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np


def lane_words(plan, lay, role: str, lane_loop: str, rows: bool, bases: dict[str, int]) -> np.ndarray:
    """(vectors, lanes): the word each lane of one engine touches, vector by vector, in one fold (-1: idle).
    A loop variable is a digit of its loop's value (the tile base, plus the lane, the row or the stream
    step where the loop is the engine's); the address is the subscript's affine form."""
    op, pl = plan.operands[role], lay.placed[role]
    log = int(math.log2(pl.epw)) if pl.epw > 1 else 0
    nl = plan.A if role == "X" else plan.B
    la = plan.loop_a
    if rows:
        inner = {la: np.arange(plan.A)}
        nvec = plan.A
    else:
        exts = [stream_extent(plan, lb, bases) for lb in plan.temporal]
        nvec = math.prod(exts)
        grids = np.indices(exts).reshape(len(exts), -1) if exts else np.zeros((0, 1), dtype=int)
        inner = {lb: grids[j] for j, lb in enumerate(plan.temporal)}
    lanes = np.arange(nl)
    addr = np.full((nvec, nl), op.const, dtype=np.int64)
    for lp in plan.loops:
        base = bases.get(lp.label, 0)
        value = (base + lanes[None, :] if lp.label == lane_loop
                 else base + inner[lp.label][:, None] if lp.label in inner else np.array([[base]]))
        if not lp.vars:  # the one-lane stand-in for a PE dimension no loop is bound to (pearray.DUMMY_A/B): it
            continue     # indexes nothing (before, zip(strict) over its no variables and one radix crashed hlsim)
        stride = 1
        for var, radix in reversed(list(zip(lp.vars, lp.radices, strict=True))):
            if var in op.coefs:
                addr = addr + op.coefs[var] * ((value // stride) % radix)
            stride *= radix
    words = pl.base_word + (addr >> log)
    ok = np.broadcast_to(lanes[None, :] < plan.extent(lane_loop, bases), (nvec, nl))
    if rows:
        ok = ok & (inner[la] < plan.extent(la, bases))[:, None]
    return np.where(ok, words, -1)


def bank_of(lv, words: np.ndarray) -> np.ndarray:
    """``Level.bank_of`` of every word (-1 stays -1): the XOR of the address's bit groups for a power-of-two
    number of banks, else the word modulo the banks."""
    nb = lv.banks
    if nb == 1 or nb & (nb - 1):
        return np.where(words >= 0, words % nb, -1)
    lb, b, w = nb.bit_length() - 1, np.zeros_like(words), np.maximum(words, 0)
    while w.any():
        b ^= w & (nb - 1)
        w = w >> lb
    return np.where(words >= 0, b, -1)


def reader_items(folds: list[np.ndarray], lv, clear_each_fold: bool) -> list[tuple]:
    """A reader's requests, vector by vector: (fold, index in fold, banks of the words it fetches).
    A lane keeps the last word it fetched (the old outputs' reader forgets them at each fold), so it
    fetches when its word differs from its last valid one; neighbouring lanes on one word fetch it once."""
    if not folds:
        return []
    w = np.concatenate(folds)
    fold_of = np.concatenate([np.full(len(f), k) for k, f in enumerate(folds)])
    start = np.concatenate([[0], np.cumsum([len(f) for f in folds])[:-1]])[fold_of]
    rows = np.arange(len(w))[:, None]
    last = np.maximum.accumulate(np.where(w >= 0, rows, -1), axis=0)   # the last valid vector up to here
    before = np.vstack([np.full((1, w.shape[1]), -1), last[:-1]])
    if clear_each_fold:
        before = np.where(before >= start[:, None], before, -1)
    line = np.where(before >= 0, np.take_along_axis(w, np.maximum(before, 0), axis=0), -1)
    miss = (w >= 0) & (line != w)
    shared = np.zeros_like(miss)
    shared[:, 1:] = miss[:, :-1] & (w[:, :-1] == w[:, 1:])
    lead = miss & ~shared
    banks = bank_of(lv, w)
    return [(int(fold_of[v]), int(v - start[v]), banks[v][lead[v]].tolist()) for v in range(len(w))]


class Reader:
    """One reader: its vectors' bank requests in order, the ring of fetched vectors the array pops."""

    def __init__(self, name: str, items: list[tuple], level: str, latency: int, slots: int):
        self.name, self.items, self.level, self.latency, self.slots = name, items, level, latency, slots
        self.idx, self.cnt = 0, 0
        self.left = list(items[0][2]) if items else []
        self.ready: deque[int] = deque()   # the cycle from which each fetched, unpopped vector is valid

    def done(self) -> bool:
        return self.idx >= len(self.items)

    def head(self, c: int) -> bool:
        return bool(self.ready) and self.ready[0] <= c

    def pop(self) -> None:
        self.ready.popleft()
        self.cnt -= 1

    def granted(self, c: int, flags: list[bool]) -> None:
        """Grants of the current vector's outstanding words this cycle; all granted: it is fetched."""
        self.left = [b for b, g in zip(self.left, flags, strict=True) if not g]
        if not self.left:
            self.ready.append(c + self.latency + 1)
            self.cnt += 1
            self.idx += 1
            if self.idx < len(self.items):
                self.left = list(self.items[self.idx][2])


class Writer:
    """The writer: per lane the word being combined; a lane moving to another word, and every lane at
    the end of a fold, writes its word back first (neighbouring lanes on one word in one write)."""

    def __init__(self, folds: list[list[list]], level: str, bank_of):
        self.folds, self.level, self.bank_of = folds, level, bank_of
        nl = len(folds[0][0]) if folds and folds[0] else 0
        self.ct: list = [None] * nl        # the lane's word while it holds one
        self.cf = [0] * nl
        self.f, self.v = 0, 0              # the next vector to merge
        self.cur = False
        self.fph = False
        self.folds_done, self.vm = 0, 0
        self.walk_done = not folds

    def flushing(self) -> list[int]:
        """Lanes that must write back before the loaded vector merges (all held lanes at a fold's end)."""
        if self.fph:
            return [i for i, t in enumerate(self.ct) if t is not None]
        if not self.cur or self.walk_done:
            return []
        vec = self.folds[self.f][self.v]
        return [i for i, t in enumerate(self.ct) if t is not None and vec[i] >= 0 and vec[i] != t]

    def requests(self, lanes: list[int]) -> list[tuple[int, int]]:
        out, prev = [], None
        for i in lanes:
            if prev is None or self.ct[i] != self.ct[prev] or i != prev + 1:
                out.append((i, self.bank_of(self.ct[i])))
            prev = i
        return out

    def vec_limit(self) -> int:
        return min([self.vm] + [self.cf[i] for i, t in enumerate(self.ct) if t is not None])

    def step(self, lanes: list[int], reqs: list[tuple[int, int]], flags: list[bool]) -> bool:
        """Apply this cycle's grants (``flags``, one per request); True when the loaded vector merged.
        A granted leader writes back the lanes after it up to the next leader."""
        k = -1
        for j in lanes:     # both ascending: each lane's leader is the last one at or before it
            while k + 1 < len(reqs) and reqs[k + 1][0] <= j:
                k += 1
            if flags[k]:
                self.ct[j] = None
        waiting = not all(flags)
        was_fph = self.fph
        if self.fph and not waiting:
            self.fph, self.folds_done, self.vm = False, self.folds_done + 1, 0
        if not (self.cur and not waiting and not self.walk_done):
            return False
        vec = self.folds[self.f][self.v]
        for i, w in enumerate(vec):
            if w >= 0 and self.ct[i] != w:
                self.ct[i], self.cf[i] = w, (0 if was_fph else self.vm)
        self.vm = (0 if was_fph else self.vm) + 1
        self.cur = False
        self.v += 1
        if self.v == len(self.folds[self.f]):
            self.fph = True
            self.f, self.v = self.f + 1, 0
            self.walk_done = self.f == len(self.folds)
        return True


def stream_extent(plan, label: str, bases: dict) -> int:
    return bases.get(("cut", label), plan.extent(label, bases))
