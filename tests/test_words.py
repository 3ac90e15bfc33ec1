"""The closed-form word bound (llmulator.words) against hand counts of whole 64-bit words of int8 elements.

The bound must never charge more words than a stream moves: the dse batch ranks mappings by it and
refine re-prices only the points a bound cannot rule out (docs/dse.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from llmulator.words import flat_strides, word_factor

PW = 8.0   # int8 elements in a 64-bit word


def factor(dep, stride, t, is_sp, extent=None):
    t = np.array([t], dtype=float)
    return float(word_factor(np.array(dep), np.array(stride), t.copy() if extent is None else np.array([extent]),
                             np.array([is_sp]), t, np.array([list(range(t.shape[1]))]), PW)[0])


def test_flat_strides_of_a_row_major_array():
    # W[k][c][r][s] of shape (8, 4, 3, 3), loops k, c, r, s: strides 36, 9, 3, 1
    coefs = [[(0, 1)], [(1, 1)], [(2, 1)], [(3, 1)]]
    assert flat_strides(coefs, (8, 4, 3, 3), 4).tolist() == [36, 9, 3, 1]
    # I[c][2p + r][2q + s] of shape (4, 13, 13), loops c, p, q, r, s
    coefs = [[(0, 1)], [(1, 2), (3, 1)], [(2, 2), (4, 1)]]
    assert flat_strides(coefs, (4, 13, 13), 5).tolist() == [169, 26, 2, 13, 1]


def test_unit_lanes_and_line_as_before():
    # 8 lanes along the contiguous dimension, one temporal loop elsewhere: one word per step for 8 elements
    assert factor([True, True], [1, 64], [8, 4], [True, False]) == pytest.approx(1.0)
    # one lane walking 4 contiguous elements: a word per walk of 4 -> 8 / 4
    assert factor([True], [1], [4], [False]) == pytest.approx(2.0)


def test_a_run_continues_across_loops():
    """W[k][c][r][s] streamed over (c, r, s) in that order is one run of 36 elements: 5 aligned words,
    36 accesses, 40 / 36 bits per element bit. Before analytical 0.21 the line stopped at s (3 steps):
    8 / 3."""
    f = factor([True, True, True], [9, 3, 1], [4, 3, 3], [False, False, False])
    assert 1.0 <= f <= 8 * math.ceil(36 / 8) / 36
    # a loop in between that does not move the index repeats the walk: the run stops at s, and the next
    # walks may come back to the word (below). By hand (aligned): 0-2, again 0-2, 3-5, 3-5, 6-8, 6-8 fetch
    # words 0, 1, 0, 1: 4 words for 18 accesses
    f = factor([True, False, True], [3, 0, 1], [3, 2, 3], [False, False, False])
    assert 0.0 < f <= 8 * 4 / 18
    # an outer loop that does not continue where the inner one ended (a row of 13, a window of 3)
    f = factor([True, True], [13, 1], [3, 3], [False, False])
    assert f == pytest.approx(8 / 3)


def test_strided_lanes_share_words():
    """Four lanes two elements apart (a stride-2 convolution's output columns) sit in one word: 2 bits
    per element bit, not a word each (8)."""
    assert factor([True, True], [2, 100], [4, 3], [True, False]) == pytest.approx(2.0)
    # lanes a word or more apart share nothing
    assert factor([True, True], [8, 100], [4, 3], [True, False]) == pytest.approx(8.0)


def test_lanes_and_steps_at_different_strides_fall_back_to_the_element_bits():
    # lanes 2 apart, each walking its 3 taps one apart (I[2q + s]): the closed form does not follow it
    assert factor([True, True], [2, 1], [4, 3], [True, False]) == pytest.approx(1.0)


def test_a_walk_that_may_come_back_to_its_word_saves_its_first_fetch():
    """A lane keeps its last word: a loop around a walk that repeats it (does not move the index), or
    moves it by less than a word past its end, can find the next walk in that word. Hand counts, aligned."""
    # a walk of 3 repeated 4 times: one word for 12 accesses
    assert factor([False, True], [0, 1], [4, 3], [False, False]) == pytest.approx(8 / 12)
    # 0-2 then 4-6: one word for 6 accesses
    assert factor([True, True], [4, 1], [2, 3], [False, False]) == pytest.approx(8 / 6)
    # 0-2 then 13-15: a word each
    assert factor([True, True], [13, 1], [2, 3], [False, False]) == pytest.approx(8 / 3)
    # a walk over more than a word, repeated: each walk fetches its words again (12 steps of 2: 3 words)
    assert factor([False, True], [0, 2], [4, 12], [False, False]) == pytest.approx(2.0)


def test_the_next_fold_may_start_in_the_word_the_last_one_left():
    """Lanes keep their words across folds: W[k][c][r][s] streamed over s alone (3 elements) in folds
    that step q (not in W's index) repeats the walk in the same word: 1 word for 6 folds, not 6."""
    t = np.array([[3.0, 1.0]])
    f = word_factor(np.array([True, False]), np.array([1, 0]), t.copy(), np.zeros((1, 2), dtype=bool), t,
                    np.array([[1, 0]]), PW, tiles=np.array([[1.0, 6.0]]))
    assert float(f[0]) == pytest.approx(8 / 18)


def test_a_run_on_a_stride_of_a_word_still_ends_and_the_next_may_start_in_its_word():
    """W[k][c][r][s] streamed over (r, s, c), c innermost (stride 9, a word of 4 apart: every access a
    new word), two folds stepping c by 2: the first ends at element 17 and the second starts at 18, in the
    same word (16-19). Replayed (llmulator.banks) on such a design (tests/test_dse_refine.py's stride-2
    convolution, 32-bit buffer): 5,040 words where one per access says 5,184, 1 of 36 saved; the closed
    form says the same (0.14 saved none)."""
    t = np.array([[3.0, 3.0, 2.0]])
    f = word_factor(np.array([True, True, True]), np.array([3, 1, 9]), t.copy(), np.zeros((1, 3), dtype=bool), t,
                    np.array([[0, 1, 2]]), 4.0, tiles=np.array([[1.0, 1.0, 2.0]]))
    assert float(f[0]) == pytest.approx(4.0 * (1 - 1 / 36))


def test_lanes_in_two_directions_that_run_on_share_words_together():
    """C[m][n] (int32, 16 x 16) over 16 x 16 lanes, in 2048-bit words of 64: the lanes' 256 elements are one
    run, 4 words a step. Before analytical 0.26 the bound packed along n only (a word per row of 16 lanes,
    4 bits per element bit); a tpu-like gemm@mini whose schedule moves 10 words was charged 34
    (benchmarks/word_bound.py)."""
    t = np.array([[16.0, 16.0]])
    f = word_factor(np.array([True, True]), np.array([16, 1]), t.copy(), np.array([[True, True]]), t,
                    np.array([[0, 1]]), 64.0)
    assert float(f[0]) == pytest.approx(1.0)
    # lanes along a loop that does not continue the run (rows of 20 elements): the element bits
    t = np.array([[2.0, 16.0]])
    f = word_factor(np.array([True, True]), np.array([20, 1]), t.copy(), np.array([[True, True]]), t,
                    np.array([[0, 1]]), 64.0)
    assert float(f[0]) == pytest.approx(1.0)
    # a spatial loop a word or more apart shares nothing: the n lanes' words only (16 of 64 per word)
    f = word_factor(np.array([True, True]), np.array([64, 1]), t.copy(), np.array([[True, True]]), t,
                    np.array([[0, 1]]), 64.0)
    assert float(f[0]) == pytest.approx(4.0)


def test_a_stationary_operand_may_find_its_word_in_the_next_fold():
    """A[n][k] held in the PEs (no stream loop moves it), 8 lanes along k in 16-element words: the fold that
    takes k's next tile of 8 finds each row's word in its lane (elements 8-15 of the word 0-7 came from),
    so 16 words for 256 elements over 4 folds, not 32 (a gemm mutation of synth-v3, s3-0010579: replayed
    16 words, bound 32 before)."""
    t = np.array([[16.0, 8.0, 8.0]])   # loops m (stream, not in A), n (rows), k (cols)
    f = word_factor(np.array([False, True, True]), np.array([0, 16, 1]), t.copy(),
                    np.array([[False, True, True]]), t, np.array([[0, 1, 2]]), 16.0,
                    tiles=np.array([[1.0, 2.0, 2.0]]))
    assert float(f[0]) == pytest.approx(16 * 16 / 256)


def test_lanes_and_steps_at_two_strides_cost_a_word_per_walk_at_least():
    """B[n][k] in 256-element words, 4 lanes along k (stride 1), the stream along n (rows of 64): 4 steps
    per word, the 4 lanes inside it: a word per 4 steps, 16 bits per element bit (the replay: 16 words a
    fold over 64 steps). 0.17 charged the element bits (1 per element bit), 16x under."""
    t = np.array([[64.0, 4.0]])
    f = word_factor(np.array([True, True]), np.array([64, 1]), t.copy(), np.array([[False, True]]), t,
                    np.array([[0, 1]]), 256.0)
    assert float(f[0]) == pytest.approx(16.0)
