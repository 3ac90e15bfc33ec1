"""A variant that moves only a scalar moves a hinted loop over undeclared inputs (analytical 0.90, 2026-12-08).

An outside probe's kernel: per row, the first element above a threshold, over an int16 array with no
``inputs.arrays`` entry. The lanes cannot run its control on declared inputs, so its trips are the hint (9), and
the variants ``high`` (thr 126) and ``low`` (thr -120) left every static estimate at 2,632 cycles while hlsim
measured 3,026 / 14,795 / 342. The profilers fill such an input uniformly on [-128, 127]
(``inputs.default_description``), so the closed form is the reference: with p = P(a <= thr) = (thr + 129) / 256
a row's scan runs sum_{k=1..C} p^k trips, and the hint moves by that count's ratio between the variant and the
base (``llmulator.variant_trips``).
"""

from __future__ import annotations

import math

import pytest
from llmulator import plugins
from llmulator.design import load_design
from llmulator.library import resolve

C = 64
KERNEL = """    L_r: for (int r = 0; r < R; r++) {
      int j = 0;
      L_s: while (j < C && a[r][j] <= thr) {
        j++;
      }
      first[r] = j;
    }"""


def _workload(hint: str = "9", variant_hint: str = "", base_thr: int = 100) -> str:
    own = f"\n        hints: {{L_s: {{expected_trips: {variant_hint}}}}}" if variant_hint else ""
    return f"""
workload:
  version: 1
  name: first-above
  parameters: {{R: 32, C: {C}}}
  scalars: {{thr: {{dtype: int32, value: {base_thr}}}}}
  arrays:
    a: {{shape: [R, C], dtype: int16, role: in}}
    first: {{shape: [R], dtype: int32, role: out}}
  kernel: |
{KERNEL}
  hints: {{L_s: {{expected_trips: "{hint}"}}}}
  inputs:
    seed: 0
    variants:
      high:
        scalars: {{thr: 126}}{own}
      low:
        scalars: {{thr: -120}}
      same:
        scalars: {{thr: {base_thr}}}
  reference: |
    for r in range(R):
        j = 0
        while j < C and a[r, j] <= thr:
            j += 1
        first[r] = j
"""


MAPPING = """
mapping:
  version: 1
  name: m
  placement: {a: BRAM, first: BRAM}
"""


def _design(write, variant, **kw):
    return load_design(resolve("architecture", "hls-fpga"), write("w.yaml", _workload(**kw)),
                       write("m.yaml", MAPPING), variant=variant)


def _scan(thr: int) -> float:
    p = (thr + 129) / 256
    return sum(p ** k for k in range(1, C + 1))


# the ratio comes from 512 lanes (32 rows x 16 draws): ``low`` scans past its first element on ~18 of them, so
# its Monte Carlo error is ~25 %; ``high`` runs ~30,000 trips, ~2 %
@pytest.mark.parametrize("variant,thr,rel", [("high", 126, 0.05), ("low", -120, 0.3)])
def test_the_hint_moves_by_the_default_fill_ratio(write, variant, thr, rel):
    d = _design(write, variant)
    assert d.trips("L_s") == pytest.approx(9 * _scan(thr) / _scan(100), rel=rel)
    assert _design(write, None).trips("L_s") == 9.0  # the base keeps the hint as written


def test_the_estimate_follows_hlsim_across_the_variants(write):
    est, prof = plugins.get("estimators", "analytical"), plugins.get("profilers", "hlsim")
    got = {}
    for v in (None, "high", "low"):
        d = _design(write, v)
        p = prof.profile(d)
        assert p.functional_check == "pass"
        got[v] = (est.estimate([d])[0].metrics["cycles"], p.metrics["cycles"])
    # hlsim 3,026 / 14,795 / 342: the estimate moves the same way, each within 15 % of the run (flat before)
    assert got["high"][0] > 4 * got[None][0] > 16 * got["low"][0]
    for e, h in got.values():
        assert e == pytest.approx(h, rel=0.15)
    # no note that the variant leaves the loop at the base's expectation (a probe: it said so while moving it);
    # a variant that moves nothing still gets it
    assert not any("gives no hint" in n for n in est.estimate([_design(write, "high")])[0].notes)
    assert any("gives no hint" in n for n in est.estimate([_design(write, "same")])[0].notes)


def test_the_hint_stays_where_the_variant_or_the_hint_already_speaks(write):
    assert _design(write, "high", variant_hint="40").trips("L_s") == 40.0  # the variant's own hint
    assert _design(write, "same").trips("L_s") == 9.0  # no scalar value changes
    # a hint that reads the scalar follows the variant already: no second scaling
    assert _design(write, "high", hint="thr / 10").trips("L_s") == pytest.approx(12.6)


BRANCH = """    L_i: for (int i = 0; i < N; i++) {
      int v = 2 * a[i];
      L_b: if (v > thr) {
        y[i] = a[i] * a[i] + 3 * a[i];
      } else {
        y[i] = 0;
      }
    }"""


def _branch_design(write, variant):
    w = f"""
workload:
  version: 1
  name: above
  parameters: {{N: 256}}
  scalars: {{thr: {{dtype: int32, value: 200}}}}
  arrays:
    a: {{shape: [N], dtype: int16, role: in}}
    y: {{shape: [N], dtype: int32, role: out}}
  kernel: |
{BRANCH}
  hints: {{L_b: {{taken_probability: 0.1}}}}
  inputs:
    variants:
      half: {{scalars: {{thr: -2}}}}
  reference: |
    y[:] = np.where(2 * a.astype(np.int32) > thr, a.astype(np.int32) ** 2 + 3 * a, 0)
"""
    return load_design(resolve("architecture", "hls-fpga"), write("w.yaml", w),
                       write("m.yaml", MAPPING.replace("a: BRAM, first: BRAM", "a: BRAM, y: BRAM")), variant=variant)


def test_a_taken_probability_hint_moves_on_the_log_odds_scale(write):
    logit = lambda p: math.log(p / (1 - p))  # noqa: E731
    # `2 * a[i] > thr` is no single-element comparison (``branch_inputs``), and `a` has no declared distribution,
    # so the base answers with the hint; P(2a > thr) on the default fill: thr 200 and -2
    base, half = 27 / 256, 128 / 256
    want = 1 / (1 + math.exp(-(logit(0.1) + logit(half) - logit(base))))  # 0.486
    d = _branch_design(write, "half")
    br = next(n for n in d.tree.walk() if getattr(n, "label", None) == "L_b")
    assert d.branch_probability(br)[0] == pytest.approx(want, abs=0.04)
    b = _branch_design(write, None)
    assert b.branch_probability(next(n for n in b.tree.walk() if getattr(n, "label", None) == "L_b"))[0] == 0.1
    p, e = (plugins.get("profilers", "hlsim").profile(x) for x in (b, d)), plugins.get("estimators", "analytical")
    runs, ests = [q.metrics["cycles"] for q in p], [r.metrics["cycles"] for r in e.estimate([b, d])]
    assert runs[1] > runs[0] and ests[1] > ests[0]  # the run's direction (flat before)
