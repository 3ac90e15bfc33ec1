"""Whole words: what a PE array's operand streams cost a word-organised buffer's bandwidth.

A buffer level moves whole words of ``width_bits`` per port and cycle; the elements a PE array reads
or writes in one step are bandwidth only as the words that hold them. Counted in element bits, a
vector of four int8 operands from a 128-bit buffer costs 32 bits where the buffer moves 128, and
hlsim could report fewer cycles than the buffer can feed (the generated RTL, plugins/rtl, measured
2.4x the element bits on a 4x4 weight-stationary GEMM). Two things let a step use less than a word
per element, both in that RTL and in any word-organised memory system:

* **packing**: the lanes along a spatial loop that steps the array's last (contiguous) dimension by
  one element read neighbouring elements, so up to ``width / bits`` of them share one word;
* **a line per lane**: each lane keeps the last word it fetched, so the steps of the innermost
  temporal loop that moves its index, when that loop steps the last dimension by one, find the next
  element in the same word. The line is the lane's own: where lanes also pack and walk the word (a
  window sliding along it, a convolution's input under its fused taps), the lanes fetch their first
  words together and then each fetches every word it crosses into (hlsim 0.7 multiplied packing and
  line, crediting such a window up to ``width / bits`` times too little traffic).

Both hold for any stride smaller than a word, not only a unit one: lanes or steps ``s`` elements apart
fit at most ``ceil(width / bits / s)`` to a word (a stride-2 convolution's lanes share words too), and a
line runs on across loops where each outer loop continues where the inner one ended (flattened
strides: ``W[k][c][r][s]`` walked over (c, r, s) is one run of C*R*S elements). Until analytical 0.21
the line ended at the innermost loop and only unit strides shared, which charged a stride-2
convolution 1.47x the words its schedule moves (tests/test_rtl_words.py) and left the dse batch's rows
above their exact values.

:func:`word_factor` is the bits a stream moves per element bit it accesses (1 when the words are full,
more for partial words);
hlsim (per fold, ``llmulator.nest.fold``) and the analytical model (per batch of mappings) multiply
the datapath bits they charge to a level's bandwidth by it. Alignment is ignored (a vector is taken
to start at a word boundary), and a lane keeps its word from one walk to the next: where the loop
that starts the next walk (a loop around it, or the next fold's tile loop) may leave the lane in the
word the last walk ended in (it repeats a walk of at most a word, or moves the lane less than a word
from where the walk ended), that walk's first fetch is not charged. So the factor can be below 1: a
walk repeated in one word costs one fetch. Where lanes and steps share words at two different strides,
a walk of every packed lane costs at least one word (all of it in one word at best). Where lanes share
words along two spatial loops that do not continue each other, or a fused loop's members walk the array,
the factor is the element bits less the walks that may be free: the closed form does not follow those.
Signs of strides are not kept (every stride is taken as forward). On the 465 replayable PE-array buffer
levels of synth-v3 the factor is never above the replayed schedule's words (benchmarks/word_bound.py).
"""

from __future__ import annotations

import numpy as np

from .costs import port_words


def flat_strides(coefs: list[list[tuple[int, int]]], shape: tuple[int, ...], n_loops: int) -> np.ndarray:
    """(n_loops,) elements a loop's step moves an array's row-major address by (0: the loop does not index
    it). ``coefs`` per dimension: (loop index, |coefficient|), as ``llmulator.traffic.ArrayUse`` holds them."""
    out = np.zeros(n_loops, dtype=np.int64)
    row = 1
    for d in range(len(shape) - 1, -1, -1):
        for li, c in coefs[d] if d < len(coefs) else ():
            out[li] += int(c) * row
        row *= max(int(shape[d]), 1)
    return out


def word_factor(dep: np.ndarray, stride: np.ndarray, extent: np.ndarray, is_sp: np.ndarray, t: np.ndarray,
                pos: np.ndarray, per_word: float, tiles: np.ndarray | None = None) -> np.ndarray:
    """(B,) bits moved per element bit accessed, for B mappings of one array in a PE-array fold.

    ``dep`` (G,) whether the array's index uses each mapped loop; ``stride`` (G,) the elements one step of
    the loop moves the array's flattened address by (:func:`flat_strides`; 0 where unknown, an indirect
    index); ``extent`` (B, G) the iterations of that loop within one tile; ``is_sp``, ``t``, ``pos`` (B, G)
    spatial flags, point sizes and order positions (as in :func:`llmulator.nest.operand_reuse`);
    ``per_word`` elements in one word of the array's level; ``tiles`` (B, G) the tile loops' trips (the
    folds; None: one fold), whose first walks may find the word the fold before left in a lane.
    """
    B, G = t.shape
    if per_word <= 1:
        return np.ones(B)
    s = np.abs(np.asarray(stride, dtype=float))
    small = dep & (s > 0) & (s < per_word)
    slots = np.where(small, np.ceil(per_word / np.maximum(s, 1.0)), 1.0)   # (G,) of a loop's elements in a word
    pack, gp, crossed = _lanes(s, small, slots, extent, is_sp)
    w = _walks(dep, s, small, slots, extent, is_sp, t, pos, per_word, np.ones_like(t) if tiles is None else tiles)
    line, gl = w["line"], np.maximum(w["start"], 0)
    mixed = (pack > 1) & (line > 1) & (s[gp] != s[gl])
    per = np.where(pack > 1, slots[gp], np.where(line > 1, slots[gl], per_word))
    # over one walk of ``line`` steps (vectors taken to start at a word boundary): the packed lanes fetch
    # their first words together, then each lane fetches the next word it crosses into on its own (its
    # line is its own, so lanes sliding along a word do not share what a neighbour fetched a step before)
    j = np.arange(int(per_word))[None, :]
    crossings = np.where(j < pack[:, None], np.floor((j + line[:, None] - 1) / per[:, None]), 0.0).sum(axis=1)
    first = np.ceil(pack / per)
    # a run's first fetch is saved where the loop that starts the next run may leave the lane in its word
    free = w["near"] * line / np.maximum(w["run"], 1.0)
    words = first * (1.0 - free) + crossings
    # lanes and steps at two strides: at best the whole walk of every packed lane sits in one word
    words = np.where(mixed, 1.0 - free, words)
    out = per_word * words / (pack * line)
    # where the closed form does not follow the lanes (two directions that do not continue each other, a
    # fused loop's members): the element bits, less the walks that may be free
    return np.where(crossed | w["unknown"], 1.0 - w["near"], np.where(mixed, np.maximum(out, 1.0 - w["near"]), out))


def _lanes(s, small, slots, extent, is_sp) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lanes that share words, for B mappings: (B,) how many one word can serve, (B,) the spatial loop
    they run along (the smallest stride under a word), and (B,) whether another spatial loop moves them by
    less than a word without continuing that loop's run (lanes sharing words in two directions the closed
    form does not follow). A spatial loop whose stride is the lanes so far x the first stride continues
    them: C[m][n] over 16 x 16 lanes of 16-element rows is one run of 256 (before analytical 0.26 the
    bound packed along one spatial loop only and charged each row of such lanes its own word)."""
    B, G = extent.shape
    gp = np.zeros(B, dtype=int)
    run, first_s = np.ones(B), np.zeros(B)
    started, crossed = np.zeros(B, dtype=bool), np.zeros(B, dtype=bool)
    for g in np.argsort(s, kind="stable"):
        if not small[g]:
            continue
        cand = is_sp[:, g] & (extent[:, g] > 1)
        start = cand & ~started
        cont = cand & started & (s[g] == run * first_s)
        crossed |= cand & started & ~cont
        gp = np.where(start, g, gp)
        first_s = np.where(start, s[g], first_s)
        run = np.where(start | cont, run * extent[:, g], run)
        started |= start
    pack = np.where(started, np.minimum(run, slots[gp]), 1.0)
    return pack, gp, crossed


def _walks(dep, s, small, slots, extent, is_sp, t, pos, per_word, tiles) -> dict[str, np.ndarray]:
    """A lane's walks, for B mappings. ``start`` (-1: none) the innermost temporal point loop of more
    than one trip that moves the index; ``run`` its steps, run on outward through the next such loops
    while each continues where the inner ones ended (its stride = the run's elements x the first stride,
    every loop of the run whole within the tile, no loop in between that repeats it), and on through the
    tile loops (the folds) the same way; ``line`` the run's steps that stay in one word; ``near`` the
    share of runs whose start may find the lane's word: a run starts when an outer loop steps and the
    loops inside it wrap, moving the lane by that loop's stride less what the inner loops had walked, and
    it may land in the word the last run ended in when that is under a word (a loop that repeats a walk
    of at most a word, one that steps back over a window); ``unknown`` where a fused loop's members walk
    what this does not follow."""
    B, G = t.shape
    rows = np.arange(B)
    gl = np.full(B, -1)
    run, first_s = np.ones(B), np.zeros(B)
    open_, closed, unknown = (np.zeros(B, dtype=bool) for _ in range(3))
    span, prod, near = np.zeros(B), np.ones(B), np.zeros(B)   # elements walked inside; trips after the run
    inner_first = np.argsort(-pos, axis=1, kind="stable")
    levels = [(inner_first[:, r], False) for r in range(G)] + [(inner_first[:, r], True) for r in range(G)]
    for r, (li, tile) in enumerate(levels):
        if r == G:   # the fold's stream ends: a lane whose index it never moved read its word once per fold
            closed |= gl < 0
        if tile:
            active, e = tiles[rows, li] > 1, tiles[rows, li]
            st, whole = s[li] * t[rows, li], np.ones(B, dtype=bool)
        else:
            active = ~is_sp[rows, li] & (t[rows, li] > 1)
            e, st = t[rows, li], s[li]
            whole = extent[rows, li] >= e
            unknown |= active & dep[li] & ~whole
        moves = active & dep[li]
        start = (gl < 0) & moves & (not tile)
        cont = open_ & moves & (st == run * first_s)
        closed |= (gl >= 0) & active & ~cont   # a loop after the run's start that does not continue it
        after = closed & active
        d = st - span                      # where the step takes the lane, from where the walk ended
        hit = after & (np.abs(d) < per_word)
        prod = np.where(after, prod * e, prod)
        near = near + np.where(hit, (e - 1.0) / prod, 0.0)
        gl = np.where(start, li, gl)
        first_s = np.where(start, s[li], first_s)
        run = np.where(start | cont, run * e, run)
        open_ = np.where(start, small[li] & whole, np.where(cont, whole, open_ & ~active))
        span = span + np.where(active & ((gl >= 0) | closed), (e - 1.0) * st, 0.0)
    g = np.maximum(gl, 0)
    line = np.where((gl >= 0) & small[g], np.minimum(run, slots[g]), 1.0)
    return {"line": line, "start": gl, "run": run, "near": np.minimum(near, 1.0), "unknown": unknown}


def per_word(width_bits: int, bits: int) -> float:
    """Elements of ``bits`` in one word of ``width_bits`` (elements never straddle words)."""
    return float(max(width_bits // max(bits, 1), 1))


def access_bits(level, bits: int) -> int:
    """Bits one scalar datapath access of a ``bits``-wide element moves at ``level``: an SRAM port or a DRAM
    channel reads or writes whole words (an int8 load on a 32-bit port takes the port for the word; the port
    schedule does not pack neighbours into one access, so neither does the energy: probe 14 #5, hlsim 0.35;
    DRAM since hlsim 0.40, probe 21 F6), a register file the element's bits (registers hold elements)."""
    return port_words(level, bits) * level.width_bits if level.kind in ("sram", "dram") else bits


#: traffic keys (``<key>.<level>``) of the bits a level moves: elements read and written, the rest of the
#: words a PE-array schedule moves (``pad_bits``, priced at the level's mix of reads and writes) and the
#: rest of the whole words scalar reads and writes take (:func:`access_bits`)
MOVED_KEYS = ("read_bits", "write_bits", "pad_bits", "pad_read_bits", "pad_write_bits")


def moved_bits(traffic, level: str):
    """Every bit ``level`` moves in ``traffic`` (its bandwidth's load): :data:`MOVED_KEYS` summed."""
    return sum(traffic.get(f"{k}.{level}", 0.0) for k in MOVED_KEYS)
