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
to start at a word boundary). Where lanes and steps share words at two different strides, or the loop
around a lane's walk may bring it back to the word it holds (it repeats a walk of at most a word, or
moves it by less than a word past its end), the factor is 1 (the element bits, always a lower
bound): the closed form does not follow those. Not covered: a fold's lane keeps its word into the next
fold, which can save a word per lane and fold (on a stride-2 convolution with a 128-bit single-port
buffer, 12 of 216 batch points stayed above their exact cycles, up to 1.06x; docs/dse.md).
"""

from __future__ import annotations

import numpy as np


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
                pos: np.ndarray, per_word: float) -> np.ndarray:
    """(B,) bits moved per element bit accessed, for B mappings of one array in a PE-array fold.

    ``dep`` (G,) whether the array's index uses each mapped loop; ``stride`` (G,) the elements one step of
    the loop moves the array's flattened address by (:func:`flat_strides`; 0 where unknown, an indirect
    index); ``extent`` (B, G) the iterations of that loop within one tile; ``is_sp``, ``t``, ``pos`` (B, G)
    spatial flags, point sizes and order positions (as in :func:`llmulator.nest.operand_reuse`);
    ``per_word`` elements in one word of the array's level.
    """
    B, G = t.shape
    if per_word <= 1:
        return np.ones(B)
    s = np.abs(np.asarray(stride, dtype=float))
    small = dep & (s > 0) & (s < per_word)
    slots = np.where(small, np.ceil(per_word / np.maximum(s, 1.0)), 1.0)   # (G,) of a loop's elements in a word
    rows = np.arange(B)
    # packing: the spatial loop whose lanes share the most words
    packv = np.where(is_sp & small[None, :], np.minimum(extent, slots[None, :]), 1.0)
    gp = packv.argmax(axis=1)
    pack = packv[rows, gp]
    line, gl, revisit = _line(dep, s, small, slots, extent, is_sp, t, pos)
    both = (pack > 1) & (line > 1)
    mixed = both & (s[gp] != s[np.maximum(gl, 0)])
    per = np.where(pack > 1, slots[gp], np.where(line > 1, slots[np.maximum(gl, 0)], per_word))
    # over one walk of ``line`` steps (vectors taken to start at a word boundary): the packed lanes fetch
    # their first words together, then each lane fetches the next word it crosses into on its own (its
    # line is its own, so lanes sliding along a word do not share what a neighbour fetched a step before)
    j = np.arange(int(per_word))[None, :]
    crossings = np.where(j < pack[:, None], np.floor((j + line[:, None] - 1) / per[:, None]), 0.0).sum(axis=1)
    words = np.ceil(pack / per) + crossings
    return np.where(mixed | revisit, 1.0, np.maximum(per_word * words / (pack * line), 1.0))


def _line(dep, s, small, slots, extent, is_sp, t, pos) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(B,) steps of a lane's walk that stay in one word, (B,) the loop that starts it (-1: none), and (B,)
    whether the next walk may start in the word the last one ended in. The walk: the innermost temporal
    loop of more than one trip that moves the index, run on outward through the next such loops while
    each continues where the inner ones ended (its stride = the run's elements x the first stride, every
    loop of the run whole within the tile, no loop in between that repeats it). The loop that ends the
    run may bring the lane back to its word: one that repeats the walk (it does not move the index) when
    the walk spans at most a word, one that moves it by less than a word past the walk's end."""
    B, G = t.shape
    rows = np.arange(B)
    gl = np.full(B, -1)
    run = np.ones(B)        # steps of the run so far
    open_ = np.zeros(B, dtype=bool)
    revisit = np.zeros(B, dtype=bool)
    inner_first = np.argsort(-pos, axis=1, kind="stable")
    for r in range(G):
        li = inner_first[:, r]
        active = ~is_sp[rows, li] & (t[rows, li] > 1)
        ext = extent[rows, li]
        whole = ext >= t[rows, li]
        start = (gl < 0) & active & dep[li]
        first_s = s[np.maximum(gl, 0)]
        cont = open_ & active & dep[li] & (s[li] == run * first_s)
        ends = open_ & active & ~cont
        span = (run - 1.0) * first_s + 1.0           # elements the walk reaches
        back = np.where(dep[li], np.abs(s[li] - (span - 1.0)), span - 1.0)
        per = slots[np.maximum(gl, 0)] * first_s     # the word, in elements
        revisit |= ends & (back < per)
        gl = np.where(start, li, gl)
        run = np.where(start, ext, np.where(cont, run * ext, run))
        open_ = np.where(start, small[li] & whole, np.where(cont, whole, open_ & ~active))
    ok = gl >= 0
    g = np.maximum(gl, 0)
    line = np.where(ok & small[g], np.minimum(run, slots[g]), 1.0)
    return line, gl, revisit & ok & small[g]


def per_word(width_bits: int, bits: int) -> float:
    """Elements of ``bits`` in one word of ``width_bits`` (elements never straddle words)."""
    return float(max(width_bits // max(bits, 1), 1))
