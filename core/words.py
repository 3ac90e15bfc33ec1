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

:func:`word_factor` is the bits a stream moves per element bit it accesses (1 when the words are full,
more for partial words);
hlsim (per fold, ``llmulator.nest.fold``) and the analytical model (per batch of mappings) multiply
the datapath bits they charge to a level's bandwidth by it. Alignment is ignored (a vector is taken
to start at a word boundary), so the factor is a lower bound on the words a step moves.
"""

from __future__ import annotations

import numpy as np


def word_factor(dep: np.ndarray, unit: np.ndarray, extent: np.ndarray, is_sp: np.ndarray, t: np.ndarray,
                pos: np.ndarray, per_word: float) -> np.ndarray:
    """(B,) bits moved per element bit accessed, for B mappings of one array in a PE-array fold.

    ``dep`` (G,) whether the array's index uses each mapped loop; ``unit`` (G,) whether the loop steps
    the array's last dimension by one element; ``extent`` (B, G) the iterations of that loop within
    one tile; ``is_sp``, ``t``, ``pos`` (B, G) spatial flags, point sizes and order positions (as in
    :func:`llmulator.nest.operand_reuse`); ``per_word`` elements in one word of the array's level.
    """
    B = t.shape[0]
    if per_word <= 1:
        return np.ones(B)
    packing = is_sp & dep[None, :] & unit[None, :]
    pack = np.where(packing, np.minimum(extent, per_word), 1.0).max(axis=1)
    # the innermost temporal loop of more than one trip that moves the index: a lane's next element
    line = np.ones(B)
    found = np.zeros(B, dtype=bool)
    inner_first = np.argsort(-pos, axis=1, kind="stable")
    for r in range(t.shape[1]):
        li = inner_first[:, r]
        take = ~found & ~np.take_along_axis(is_sp, li[:, None], axis=1)[:, 0] & dep[li] \
            & (np.take_along_axis(t, li[:, None], axis=1)[:, 0] > 1)
        ext = np.take_along_axis(extent, li[:, None], axis=1)[:, 0]
        line = np.where(take & unit[li], np.minimum(ext, per_word), line)
        found |= take
    # over one walk of ``line`` steps (vectors taken to start at a word boundary): the packed lanes fetch
    # their first words together, then each lane fetches the next word it crosses into on its own (its
    # line is its own, so lanes sliding along a word do not share what a neighbour fetched a step before)
    j = np.arange(int(per_word))[None, :]
    crossings = np.where(j < pack[:, None], np.floor((j + line[:, None] - 1) / per_word), 0.0).sum(axis=1)
    words = np.ceil(pack / per_word) + crossings
    return per_word * words / (pack * line)


def per_word(width_bits: int, bits: int) -> float:
    """Elements of ``bits`` in one word of ``width_bits`` (elements never straddle words)."""
    return float(max(width_bits // max(bits, 1), 1))
