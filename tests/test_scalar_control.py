"""Branches on scalars the kernel computes itself (llmulator.scalar_control): hand counts of their shares,
the analytical cycles equal to hlsim's where the 0.5 default was 11 % off, and everything outside the subset
left to the hint, with the llm no longer calling such a design's prior exact."""

from __future__ import annotations

import numpy as np
import pytest
from llmulator.c_lanes import Lanes, Unsupported
from llmulator.kernel import Branch
from llmulator.scalar_control import scalar_branch_shares
from llmulator_plugins.llm.residual import prior_answer
from pycparser import c_parser
from test_analytical_agreement import both, small

# the circular-buffer FIR of tests/outside/fircirc.yaml, smaller: k walks the delay line backwards and wraps,
# state advances once per sample and wraps
FIR = """    int state = 0;
    L_n: for (int n = 0; n < LEN; n++) {
      buf[state] = x[n];
      float acc = 0;
      int k = state;
      L_t: for (int i = 0; i < NTAPS; i++) {
        acc += h[i] * buf[k];
        if (--k < 0) k += NTAPS;  // an add on the wrap: the branch's share moves the cycles
      }
      y[n] = acc;
      if (++state >= NTAPS) state = 0;
    }"""
FIR_ARRAYS = ("    x: {shape: [LEN], dtype: fp32, role: in}\n    h: {shape: [NTAPS], dtype: fp32, role: in}\n"
              "    y: {shape: [LEN], dtype: fp32, role: out}\n    buf: {shape: [NTAPS], dtype: fp32, role: temp}")
FIR_REF = """    for n in range(LEN):
        acc = np.float32(0)
        for i in range(NTAPS):
            acc = np.float32(acc + np.float32(h[i] * (x[n - i] if n - i >= 0 else np.float32(0))))
        y[n] = acc"""


def fir(write, kernel=FIR, hints="{}", params="{LEN: 48, NTAPS: 8}"):
    return small(write, kernel=kernel, arrays=FIR_ARRAYS, reference=FIR_REF, loops="{}",
                 placement="{x: BUF, h: BUF, y: BUF, buf: BUF}", params=params, hints=hints)


def branches(d):
    return [b for b in d.tree.walk() if isinstance(b, Branch)]


def test_a_wrapping_index_and_a_modulo_counter_take_their_exact_shares(write):
    """k wraps once in NTAPS taps (k starts at state and steps down NTAPS times: it passes below 0 exactly
    once), state once in NTAPS samples: 1/8 each, where the default said 0.5."""
    d = fir(write)
    wrap_k, wrap_state = branches(d)
    assert not wrap_k.data_dependent and id(wrap_k) not in d._index_branches
    assert d.branch_probability(wrap_k) == (pytest.approx(1 / 8), None)
    assert d.branch_probability(wrap_state) == (pytest.approx(1 / 8), None)


def test_the_analytical_model_then_counts_what_hlsim_measures(write, monkeypatch):
    """Cycles and energy equal to hlsim's (which runs the compiled kernel), and no note asks for a hint;
    without the run (the 0.5 default) the count is well above."""
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    d = fir(write, hints="{}")
    e, p = both(d)
    assert e.metrics["cycles"] == pytest.approx(p.metrics["cycles"], rel=1e-9)
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-6)
    assert not any("taken_probability" in n for n in e.notes)
    assert prior_answer(d) == "fixed"
    import llmulator.scalar_control as sc
    monkeypatch.setattr(sc, "scalar_branch_shares", lambda design, known: {})
    guessed = AnalyticalEstimator().estimate([fir(write, hints="{}")])[0]
    assert guessed.metrics["cycles"] > 1.05 * p.metrics["cycles"]
    assert any("taken_probability" in n for n in guessed.notes)


def test_steps_inside_a_condition_run_once_on_the_lanes_that_evaluate_it():
    """``--k < 0`` decrements k on the masked lanes only and yields the new value; ``k-- < 0`` the old one;
    a watched ``if`` evaluates its condition once (a second evaluation would step twice)."""
    ast = c_parser.CParser().parse("void f(){ int k = 1; if (--k < 0) k = 9; if (k-- < 0) k = 7; }")
    body = ast.ext[0].body.block_items
    lanes = Lanes({}, set(), {}, np.zeros(3, dtype=np.int64))
    lanes.watch = {id(body[1]): [0, 0], id(body[2]): [0, 0]}
    lanes.block(body, np.array([True, True, False]))
    assert lanes.env["k"][:2].tolist() == [-1, -1]  # 1 -> 0 (not < 0) -> -1 (0 was not < 0)
    assert lanes.watch[id(body[1])] == [2, 0] and lanes.watch[id(body[2])] == [2, 0]


def test_an_increment_c_may_skip_is_refused():
    ast = c_parser.CParser().parse("void f(){ int k = 1; int j = 0; if (j > 0 && --k < 0) k = 9; }")
    lanes = Lanes({}, set(), {}, np.zeros(1, dtype=np.int64))
    with pytest.raises(Unsupported):
        lanes.block(ast.ext[0].body.block_items, np.ones(1, dtype=bool))


@pytest.mark.parametrize("kernel, why", [
    (FIR.replace("int k = state;", "int k = (int)h[0];"), "a scalar the control needs reads an array"),
])
def test_what_it_does_not_run_stays_with_the_hint(write, kernel, why):
    d = fir(write, kernel=kernel)
    wrap_k = branches(d)[0]
    assert id(wrap_k) not in d._scalar_branches, why
    p, note = d.branch_probability(wrap_k)
    assert p == 0.5 and "taken_probability" in note
    assert prior_answer(d) is None  # the prior rests on a default: the llm's model answers, not "fixed"


def test_a_continue_in_the_control_is_run_too(write):
    """`continue` ends the pass over the loop body on its lanes (since analytical 0.30, llmulator.c_lanes): the
    wrap, now with a `continue` after it, keeps its exact share (before, the control was left to the hint)."""
    d = fir(write, kernel=FIR.replace("if (--k < 0) k = NTAPS - 1;", "if (--k < 0) { k = NTAPS - 1; continue; }"))
    wrap_k = branches(d)[0]
    assert d.branch_probability(wrap_k) == (pytest.approx(1 / 8), None)


def test_a_run_past_the_trip_budget_stays_with_the_hint(write, monkeypatch):
    import llmulator.scalar_control as sc
    monkeypatch.setattr(sc, "MAX_TRIPS", 100)  # 48 x 8 inner trips
    sc._CACHE.clear()
    d = fir(write)
    assert scalar_branch_shares(d, set(d._index_branches)) == {}
    sc._CACHE.clear()


def test_an_index_condition_under_a_data_branch_takes_its_share_among_the_entries_that_reach_it():
    """sparse-conv's bounds check ``L_in`` sits under ``if (a != 0)``: the index enumeration cannot condition
    on that side, so it was the hint (0.735); the draws give the share of the bounds check among the
    nonzero entries. With iid inputs it is the unconditional index share, counted here by hand."""
    from test_analytical_agreement import named
    d = named("hls-fpga", "sparse-conv", "sparse-conv-plain")
    l_in = next(b for b in branches(d) if b.label == "L_in")
    P, Q, R, S = (int(d.sizes[k]) for k in ("P", "Q", "R", "S"))
    hand = np.mean([0 <= y - r < P and 0 <= x - s < Q for y in range(P + R - 1) for x in range(Q + S - 1)
                    for r in range(R) for s in range(S)])
    p, note = d.branch_probability(l_in)
    assert note is None and p == pytest.approx(hand, abs=0.02)
    assert prior_answer(d) == "drawn"
