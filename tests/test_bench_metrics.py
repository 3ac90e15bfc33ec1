"""The bench's statistics beyond MAPE, on hand-made numbers and rows, and leave-one-family-out in the loaders."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest
from llmulator.dataset import SPLITS, family_of, split_of
from llmulator.errors import UserError
from llmulator.results import METRICS, Estimate
from llmulator_plugins.bench import metrics, report
from llmulator_plugins.bench.data import SplitDesigns
from llmulator_plugins.bench.run import Outcome, run_one

NAN = float("nan")

# -- the statistics ---------------------------------------------------------------------------------


def test_pairs_by_key_pairs_equal_keys_with_different_variants():
    pairs = metrics.pairs_by_key(["a", "a", "b", "a", "b"], ["x", "y", "x", "x", "z"])
    # (0, 3) share key and variant: not a pair
    assert sorted(pairs) == [(0, 1), (1, 3), (2, 4)]


def test_ranking_accuracy_counts_the_faster_design_and_skips_measured_ties():
    t = [100, 200, 50, 50.2, 300]
    p = [150, 120, 10, 90, 400]
    # (0,1): 0 is faster, predicted slower -> wrong; (2,3): measured within 1 % -> left out;
    # (0,4): right; (1,4): right -> 2 of 3
    acc, n = metrics.ranking_accuracy(p, t, [(0, 1), (2, 3), (0, 4), (1, 4)])
    assert (acc, n) == (pytest.approx(2 / 3), 3)
    assert metrics.ranking_accuracy([5, 5], [1, 2], [(0, 1)]) == (0.0, 1)  # a predicted tie is wrong
    assert metrics.ranking_accuracy([NAN, 5], [1, 2], [(0, 1)])[1] == 0  # not priced: left out
    assert math.isnan(metrics.ranking_accuracy([1, 2], [1, 1], [(0, 1)])[0])


def test_direction_accuracy_agrees_on_up_down_and_both_tied():
    t = [100, 100.5, 100, 130, 100, 80]
    p = [10, 50, 10, 10.05, 10, 5]
    # (0,1): measured tie, predicted up -> no; (2,3): measured up, predicted tie -> no;
    # (4,5): both down -> yes; (0,2): both tied -> yes
    acc, n = metrics.direction_accuracy(p, t, [(0, 1), (2, 3), (4, 5), (0, 2)])
    assert (acc, n) == (pytest.approx(0.5), 4)
    assert metrics.direction(100, 101) == 0 and metrics.direction(100, 102) == 1 and metrics.direction(2, 1) == -1


def test_interval_coverage_includes_the_bounds_and_skips_rows_without_one():
    cov, n = metrics.interval_coverage([1, 5, NAN, 10], [3, 6, NAN, 20], [3, 7, 1, 9])
    assert (cov, n) == (pytest.approx(1 / 3), 3)
    cov, n = metrics.interval_coverage([NAN, NAN], [NAN, NAN], [1, 2])
    assert math.isnan(cov) and n == 0


def test_beats_prior_is_strict_and_skips_unpriced_rows():
    assert metrics.beats_prior([5, 10, 20, NAN], [10, 10, 5, 1]) == (pytest.approx(1 / 3), 3)


def test_confident_misses_need_both_more_than_3x_off_and_confidence_above_half():
    p = [400, 30, 100, 10, 0, 50, 300]
    t = [100] * 7
    c = [0.9, 0.6, 0.99, 0.4, 0.8, NAN, 0.9]
    # ratios 4, 3.3, 1, 10, inf (<= 0), 2, 3 (not more than 3x); rows 0, 1, 4 are off and confident;
    # row 5 has no confidence -> 3 of 6
    assert metrics.confident_misses(p, t, c) == (pytest.approx(0.5), 6)
    frac, n = metrics.confident_misses([1, 2], [1, 2], [NAN, NAN])
    assert math.isnan(frac) and n == 0


def test_mean_std_is_the_sample_spread():
    assert metrics.mean_std([10, 12, 14]) == (pytest.approx(12.0), pytest.approx(2.0))
    m, s = metrics.mean_std([5, NAN])
    assert m == 5 and math.isnan(s)


# -- the report's tables on hand-made outcomes ------------------------------------------------------

def _row(sid, app="gemm", hw="tpu-like.v1", dist="gemm:base", mapping="m1", arch="a1", **metric):
    r = {"sample_id": sid, "app": app, "hw": hw, "input_dist": dist, "preset": "", "workload_yaml": f"w-{app}",
         "mapping_yaml": mapping, "architecture_yaml": arch}
    r.update({m: float(metric.get(m, 100.0)) for m in METRICS})
    return r


def _outcome(name, rows, pred, conf=None, lo=None, hi=None, seed=0):
    """pred: metric -> list (NaN: not reported); metrics not given are not reported by the estimator."""
    n = len(rows)
    nan = np.full(n, np.nan)
    predicted = {m: np.array(pred.get(m, nan), dtype=float) for m in METRICS}
    return Outcome(name, "t", "test_app", n, 0, Counter(), {m: np.array([r[m] for r in rows]) for m in METRICS},
                   predicted, {m: np.array((conf or {}).get(m, nan), dtype=float) for m in METRICS}, None,
                   rows=rows, lower={m: np.array((lo or {}).get(m, nan), dtype=float) for m in METRICS},
                   upper={m: np.array((hi or {}).get(m, nan), dtype=float) for m in METRICS}, seed=seed)


@pytest.fixture
def pairs_rows():
    # six mappings of gemm on one hardware family and distribution (15 ranking pairs), plus one row on another
    # family; rows 6 and 7 are one design under two input distributions (one direction pair)
    cyc = [100, 200, 300, 400, 500, 600]
    rows = [_row(f"r{k}", mapping=f"m{k}", hw=f"tpu-like.v{k}", cycles=c) for k, c in enumerate(cyc)]
    rows.append(_row("r6", hw="eyeriss-like.v0", dist="gemm:base", mapping="mx", arch="ax", cycles=1000))
    rows.append(_row("r7", hw="eyeriss-like.v0", dist="gemm:skewed", mapping="mx", arch="ax", cycles=1500))
    return rows


def test_beyond_rows_on_hand_made_outcomes(pairs_rows):
    rows = pairs_rows
    # the learned estimator puts the first mapping (100 cycles) between 400 and 500: pairs (0,1), (0,2), (0,3)
    # wrong, 12 of 15 right; it moves up between the input variants as hlsim does; it reports cycles only,
    # with an interval and a confidence
    learned = {"cycles": [450, 180, 300, 400, 500, 600, 1000, 1200]}
    conf = {"cycles": [0.9] * 7 + [0.2]}
    lo = {"cycles": [150, 100, 100, 100, 100, 100, 100, 100]}
    hi = {"cycles": [250, 210, 290, 1000, 1000, 1000, 1000, 1000]}
    # truths 100..600, 1000, 1500: row 0 (100 not in [150, 250]), row 2 (300 > 290), row 7 (1500 > 1000)
    # are outside -> 5 of 8 covered
    o = _outcome("learned", rows, learned, conf, lo, hi)
    # the prior: APE 5 % everywhere except rows 0 and 6 (exact)
    prior_pred = {m: [r[m] * (1.0 if k in (0, 6) else 1.05) for k, r in enumerate(rows)] for m in METRICS}
    prior = _outcome("analytical", rows, prior_pred)
    table = {(r[0], r[2]): r for r in report.beyond_rows([o, prior])}
    est, split, metric, n, rank, direction, cov, beats, misses = table[("learned", "cycles")]
    assert (est, split, n) == ("learned", "test_app", 8)
    assert rank == "80.0 (15)"  # 12 / 15
    assert direction == "- (1)"  # one pair: fewer than MIN_PAIRS
    assert cov == "62.5 (8)"
    # learned APEs: 350, 10, 0, 0, 0, 0, 0, 20 vs prior 0, 5, 5, 5, 5, 5, 0, 5 -> beats on rows 2..5 = 4 of 8
    assert beats == "50.0 (8)"
    # row 0 is 4.5x off with confidence 0.9: 1 of 8 (row 7 is 1.25x off, confidence 0.2)
    assert misses == "12.5 (8)"
    # metrics the estimator did not report: no row for them; it is not a failure
    assert ("learned", "energy_pj") not in table
    assert o.n == 8 and o.n_metric("energy_pj") == 0
    acc = {(r[0], r[2]): r for r in report.accuracy_rows([o])}
    assert acc[("learned", "energy_pj")][3:] == (0, "-", "-", "-", "-")
    assert acc[("learned", "cycles")][3] == 8
    # the prior itself: no comparison with itself, no interval, no confidence
    assert table[("analytical", "cycles")][6:] == ("-", "-", "-")


def test_ranking_pairs_stay_within_an_application_family_and_distribution(pairs_rows):
    keys = [report.ranking_key(r) for r in pairs_rows]
    assert len(metrics.pairs_by_key(keys, [r["mapping_yaml"] for r in pairs_rows])) == 15
    dkeys = [report.direction_key(r) for r in pairs_rows]
    assert metrics.pairs_by_key(dkeys, [r["input_dist"] for r in pairs_rows]) == [(6, 7)]


def test_seed_rows_give_mean_and_spread_of_mape():
    rows = [_row("a", cycles=100), _row("b", cycles=200)]
    by_seed = {0: [_outcome("e", rows, {"cycles": [110, 200]}, seed=0)],   # APE 10, 0 -> MAPE 5
               1: [_outcome("e", rows, {"cycles": [100, 220]}, seed=1)],   # APE 0, 10 -> MAPE 5
               2: [_outcome("e", rows, {"cycles": [130, 260]}, seed=2)]}   # APE 30, 30 -> MAPE 30
    table = {r[2]: r for r in report.seed_rows(by_seed)}
    est, split, metric, seeds, mape, mape_sd = table["cycles"][:6]
    # mean 40 / 3 = 13.33; sample std sqrt(((5-13.33)^2 * 2 + (30-13.33)^2) / 2) = 14.43
    assert (seeds, mape, mape_sd) == (3, "13.3", "14.4")
    assert table["energy_pj"][3:6] == (0, "-", "-")


def test_the_report_body_has_the_new_tables(pairs_rows):
    o = _outcome("learned", pairs_rows, {"cycles": [r["cycles"] for r in pairs_rows]})
    text = report.body("llmulator bench", [o], {}, 100, 0, {}, "machine", seed_outcomes={0: [o], 1: [o]},
                       holdout_family="stencil")
    assert "### Beyond MAPE" in text and "### Over seeds 0, 1" in text
    assert "every row of application family `stencil` is in test_family" in text
    assert "`-`: the analytical estimator was not run." in text


# -- the runner: an estimator with a subset of the metrics ------------------------------------------

class CyclesOnly:
    """Reports cycles only; nothing for design 'none'; raises on design 'bad'."""

    name = "cycles-only"
    version = "1"

    def estimate(self, designs):
        if "bad" in designs:
            raise ValueError("cannot price")
        return [Estimate(self.name, self.version, {} if d == "none" else {"cycles": 2.0 * len(d)},
                         interval={"cycles": (1.0, 10.0)}, notes=["unavailable: no prior"] if d == "none" else [])
                for d in designs]


def test_an_estimator_with_a_subset_of_metrics_is_not_failed():
    rows = [_row(f"r{k}") for k in range(4)]
    sd = SplitDesigns("test_app", 4, 4, list(zip(rows, ["abc", "abcd", "none", "bad"], strict=True)))
    o = run_one("cycles-only", CyclesOnly(), sd, single=0, timing=False)
    # 'bad' raised, 'none' returned no metric: two failures; the others count, with cycles only
    assert sum(o.failed.values()) == 2
    assert o.failed["ValueError: cannot price"] == 1
    assert o.failed["no finite metric (unavailable: no prior)"] == 1
    assert o.n == 2 and o.n_metric("cycles") == 2 and o.n_metric("energy_pj") == 0
    assert list(o.predicted["cycles"][:2]) == [6.0, 8.0] and np.isnan(o.predicted["cycles"][2:]).all()
    assert o.missing == Counter({"energy_pj": 2, "power_mw": 2, "area_um2": 2})
    assert list(o.lower["cycles"][:2]) == [1.0, 1.0] and list(o.upper["cycles"][:2]) == [10.0, 10.0]


# -- leave-one-family-out in the training loaders --------------------------------------------------

def _family_rows():
    rows = []
    for k, app in enumerate(["gemm", "jacobi-2d", "heat-3d", "conv2d", "atax", "seidel-2d"] * 2):
        rows.append({"sample_id": f"s2-{k:07d}", "stage": 2, "index": k, "app": app, "hw": "tpu-like.v1",
                     "input_dist": f"{app}:base", "family": "", **{m: 10.0 + k for m in METRICS}})
    return rows


def test_baseline_features_recompute_splits_for_the_held_out_family(tmp_path, monkeypatch):
    from llmulator import dataset as sample
    from llmulator_plugins.baselines import data as bd
    from llmulator_plugins.baselines.features import ARCH_DIM, Featurised

    calls = []

    def featurise(design):
        calls.append(design)
        return Featurised(np.ones((1, bd.DIMS["tensetmlp"]), np.float32), np.zeros(ARCH_DIM, np.float32), None)

    monkeypatch.setitem(bd.FEATURISERS, "tensetmlp", featurise)
    monkeypatch.setattr(sample, "design_of_row", lambda r: r["sample_id"])
    rows = _family_rows()
    cache = tmp_path / "features.npz"
    plain = bd.load_or_featurise("tensetmlp", rows, cache, progress=False)
    assert [SPLITS[i] for i in plain["split"]] == [split_of(r) for r in rows]
    assert len(calls) == len(rows)
    held = bd.load_or_featurise("tensetmlp", rows, cache, progress=False, holdout_family="stencil")
    assert len(calls) == len(rows)  # the features came from the cache, the splits did not
    expected = ["test_family" if family_of(r) == "stencil" else split_of(r) for r in rows]
    assert [SPLITS[i] for i in held["split"]] == expected
    assert expected.count("test_family") == 6  # jacobi-2d, heat-3d, seidel-2d, twice each
    with np.load(cache) as z:
        assert "split" not in z.files and list(z["row"]) == list(range(len(rows)))


def test_baseline_training_checks_the_held_out_family(tmp_path):
    pytest.importorskip("torch")
    from llmulator_plugins.baselines.train import train
    with pytest.raises(UserError, match="no row of the dataset belongs to that family"):
        train("tensetmlp", "unused", tmp_path / "a", rows=_family_rows(), holdout_family="nope", progress=False)
    state = tmp_path / "b" / "state"
    state.mkdir(parents=True)
    (state / "train_state.json").write_text(json.dumps({"epoch": 1, "holdout_family": "ml"}))
    with pytest.raises(UserError, match="trained with --holdout-family ml, not stencil"):
        train("tensetmlp", "unused", tmp_path / "b", rows=_family_rows(), holdout_family="stencil", resume=True,
              progress=False)


def test_llm_rows_carry_the_leave_one_family_out_split(monkeypatch):
    from llmulator import dataset as card
    from llmulator_plugins.llm import train as lt
    monkeypatch.setattr(card, "read_records", lambda data: _family_rows())
    rows = lt.load_rows("unused", holdout_family="ml")
    assert {r["app"] for r in rows if r["split"] == "test_family"} == {"conv2d"}
    assert all(r["split"] == split_of(r) for r in rows if r["app"] != "conv2d")
    with pytest.raises(UserError, match="families present: dense-la, ml, stencil"):
        lt.load_rows("unused", holdout_family="nope")
