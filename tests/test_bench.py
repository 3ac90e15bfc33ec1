"""`llmulator bench`: the statistics it prints, the report section and figures it writes, and its input errors."""

from __future__ import annotations

import math
import os
from collections import Counter

import numpy as np
import pytest
from llmulator import plugins
from llmulator.cli import main
from llmulator.dataset import designs_of, family_of, read_records, split_of
from llmulator.hookspecs import hookimpl
from llmulator_plugins.bench import metrics
from llmulator_plugins.synth import driver

# -- statistics on hand-computed numbers ------------------------------------------------------------

def test_ape_mape_median_p90_on_known_numbers():
    e = metrics.ape([110, 80, 100, 300], [100, 100, 100, 100])
    assert np.allclose(e, [10, 20, 0, 200])
    s = metrics.summarise(e)
    assert s["mape"] == pytest.approx(57.5)
    assert s["median"] == pytest.approx(15.0)
    # sorted 0, 10, 20, 200: the 90th percentile sits at rank 2.7 -> 20 + 0.7 * 180
    assert s["p90"] == pytest.approx(146.0)
    assert math.isnan(metrics.summarise([])["mape"])


def test_kendall_tau_b_on_known_rankings():
    assert metrics.kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert metrics.kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # one discordant pair of six: (5 - 1) / 6
    assert metrics.kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    # ties: x has one tied pair, y has one tied pair; concordant 4, discordant 0 of the 6 pairs
    # tau-b = 4 / sqrt((6 - 1) * (6 - 1)) = 0.8
    assert metrics.kendall_tau([1, 2, 2, 3], [1, 2, 3, 3]) == pytest.approx(0.8)
    # the blocked computation agrees with one block
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=50), rng.normal(size=50)
    assert metrics.kendall_tau(x, y, chunk=7) == pytest.approx(metrics.kendall_tau(x, y, chunk=1000))
    assert math.isnan(metrics.kendall_tau([1, 1, 1], [1, 2, 3]))
    assert math.isnan(metrics.kendall_tau([1], [1]))


def test_confidence_quartiles_compare_most_and_least_confident():
    conf = [0.9, 0.8, 0.2, 0.1, 0.5, 0.6, 0.4, 0.7]
    errs = [1, 2, 30, 40, 10, 10, 10, 10]
    top, bottom = metrics.confidence_quartiles(conf, errs)
    # q3 of conf = 0.725 -> 0.9, 0.8; q1 = 0.35 -> 0.2, 0.1
    assert (top, bottom) == (pytest.approx(1.5), pytest.approx(35.0))
    assert metrics.confidence_quartiles([0.5, 0.5], [1, 2]) is None


# -- a run on a tiny dataset -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-data")
    driver.run([2], 16, out, seed=11, shard_size=8, progress=False)
    return out


def _splits_with_rows(dataset, least=2):
    c = Counter(split_of(r) for r in read_records(dataset))
    return [s for s in ("train", "val", "test_app", "test_hw", "test_input") if c[s] >= least]


class Flaky:
    """The analytical estimator, failing on the designs named in ``FAIL`` and reporting a confidence."""

    name = "flaky-test"
    version = "t1"
    FAIL: set[str] = set()

    def __init__(self):
        from llmulator_plugins.analytical.estimator import AnalyticalEstimator
        self.inner = AnalyticalEstimator()
        self.model = os.environ.get("LLMULATOR_FLAKY_TEST_MODEL")

    def available(self):
        return None

    def estimate(self, designs):
        if any(d.name in self.FAIL for d in designs):
            raise ValueError("cannot price this one")
        out = self.inner.estimate(designs)
        for e in out:
            e.confidence = {m: 0.5 for m in e.metrics}
        return out


class Unavailable:
    name = "unavailable-test"
    version = "0"

    def available(self):
        return "no checkpoint here"

    def estimate(self, designs):  # pragma: no cover - never called
        raise AssertionError("an unavailable estimator was run")


class TestPlugin:
    @hookimpl
    def register_estimators(self, register):
        register(Flaky)
        register(Unavailable)


@pytest.fixture
def with_test_plugin():
    plugins.reset()
    plugins.register_plugin(TestPlugin(), name="bench-test")
    yield
    plugins.reset()


def test_bench_writes_its_section_and_figures_and_keeps_other_sections(dataset, tmp_path, capsys):
    out = tmp_path / "results.md"
    out.write_text("# Results\n\n<!-- begin:ablation -->\nablation table\n<!-- end:ablation -->\n\n"
                   "<!-- begin:bench -->\nstale bench table\n<!-- end:bench -->\n\n"
                   "<!-- begin:calibration -->\ncalibration table\n<!-- end:calibration -->\n")
    splits = _splits_with_rows(dataset)
    args = ["bench", "--data", str(dataset), "--estimators", "analytical", "--split", ",".join(splits),
            "--per-split", "6", "--single", "3", "--out", str(out), "--figures", str(tmp_path / "fig"),
            "--no-progress"]
    assert main(args) == 0
    text = out.read_text()
    assert "ablation table" in text and "calibration table" in text and "stale bench table" not in text
    assert text.index("begin:ablation") < text.index("begin:bench") < text.index("begin:calibration")
    bench = text.split("<!-- begin:bench -->")[1].split("<!-- end:bench -->")[0]
    assert f"`llmulator bench --data {dataset} --estimators analytical --split {','.join(splits)}" in bench
    # one accuracy row per split and metric, with a number of designs and a Kendall tau in [-1, 1]
    acc = [line.split("|")[1:-1] for line in bench.splitlines() if line.startswith("| analytical |")]
    acc_rows = [c for c in acc if len(c) == 8]
    assert {(c[1].strip(), c[2].strip()) for c in acc_rows} == {
        (s, m) for s in splits for m in ("cycles", "energy_pj", "power_mw", "area_um2")}
    for c in acc_rows:
        assert 2 <= int(c[3]) <= 6 and float(c[4]) >= 0 and -1 <= float(c[7]) <= 1
    for s in splits:
        for kind in ("scatter", "cdf"):
            png = tmp_path / "fig" / f"bench-{kind}-{s}.png"
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert f"(fig/bench-{kind}-{s}.png)" in bench


def test_failures_are_counted_unavailable_skipped_and_model_env_set(dataset, tmp_path, capsys, monkeypatch,
                                                                     with_test_plugin):
    monkeypatch.delenv("LLMULATOR_FLAKY_TEST_MODEL", raising=False)
    split = _splits_with_rows(dataset, least=4)[0]
    rows = sorted((r for r in read_records(dataset) if split_of(r) == split), key=lambda r: r["sample_id"])
    pairs, _ = designs_of(rows)
    target = pairs[0][1].name
    n_fail = sum(d.name == target for _, d in pairs)
    monkeypatch.setattr(Flaky, "FAIL", {target})
    out = tmp_path / "r.md"
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    rc = main(["bench", "--data", str(dataset), "--estimators", "flaky-test,unavailable-test", "--split", split,
               "--per-split", "0", "--model", f"flaky-test={ckpt}", "--out", str(out), "--no-figures",
               "--no-progress"])
    assert rc == 3  # a ValueError is not a decline (SpecError/UserError) but a bug in its plugin: named, exit 3
    err = capsys.readouterr().err
    assert "skipping unavailable-test: no checkpoint here" in err
    assert f"estimator 'flaky-test' raised ValueError: cannot price this one on {n_fail} design" in err
    assert os.environ["LLMULATOR_FLAKY_TEST_MODEL"] == str(ckpt)
    assert plugins.get("estimators", "flaky-test").model == str(ckpt)  # built after the variable was set
    text = out.read_text()
    assert "unavailable-test (no checkpoint here)" in text
    cov = [line for line in text.splitlines() if line.startswith(f"| flaky-test | {split} | {len(rows)} |")]
    assert len(cov) == 1 and f"| {n_fail} | {n_fail}x ValueError: cannot price this one |" in cov[0]
    acc = [line for line in text.splitlines() if line.startswith(f"| flaky-test | {split} | cycles |")]
    assert acc and acc[0].split("|")[4].strip() == str(len(pairs) - n_fail)
    assert "### Is the confidence informative?" in text and f"| flaky-test | {split} | cycles |" in text


def test_leave_one_family_out_and_several_seeds(dataset, tmp_path):
    rows = read_records(dataset)
    fam = Counter(family_of(r) for r in rows).most_common(1)[0][0]
    count = Counter(split_of(r, fam) for r in rows)
    assert count["test_family"] == sum(family_of(r) == fam for r in rows) > 0
    out = tmp_path / "r.md"
    assert main(["bench", "--data", str(dataset), "--estimators", "analytical", "--holdout-family", fam,
                 "--per-split", "0", "--seeds", "0,1", "--single", "1", "--out", str(out), "--no-figures",
                 "--no-progress"]) == 0
    text = out.read_text()
    assert f"--holdout-family {fam} --per-split 0 --seeds 0,1" in text
    # test_family is reported by default with --holdout-family; every split holds the rows split_of gives it
    coverage = text.split("### Coverage")[1].split("###")[0]
    for s in ("test_app", "test_hw", "test_input", "test_family"):
        lines = [line for line in coverage.splitlines() if line.startswith(f"| analytical | {s} | {count[s]} |")]
        assert len(lines) == 1, s
    assert "### Beyond MAPE" in text and "| analytical | test_family | cycles |" in text
    seeds = [line.split("|")[1:-1] for line in text.split("### Over seeds 0, 1")[1].splitlines()
             if line.startswith("| analytical | test_family | cycles |")]
    # every row drawn by both seeds: the same MAPE twice, spread 0
    assert len(seeds) == 1 and seeds[0][3].strip() == "2" and seeds[0][5].strip() == "0.0"


@pytest.mark.parametrize("extra, message", [
    (["--data", "/nonexistent/dataset"], "no such folder"),
    (["--estimators", "nope"], "unknown estimator nope"),
    (["--model", "analytical"], "expected NAME=PATH"),
    (["--model", "nope=/tmp"], "unknown estimator 'nope'"),
    (["--model", "analytical=/nonexistent/ckpt"], "no such file or folder"),
    (["--split", "test_app,test_nowhere"], "unknown split test_nowhere"),
    (["--per-split", "-1"], "take a number >= 0"),
    (["--split", "test_family"], "needs --holdout-family"),
    (["--holdout-family", "nope"], "no row of the dataset belongs to that family"),
    (["--seeds", "0,x"], "expected comma-separated integers"),
])
def test_bad_input_exits_2_with_a_message(dataset, tmp_path, capsys, extra, message):
    args = ["bench", "--data", str(dataset), "--out", str(tmp_path / "r.md"), "--no-figures", "--no-progress"]
    args += extra
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err
    assert not (tmp_path / "r.md").exists()


def test_a_folder_without_shards_is_bad_input(tmp_path, capsys):
    assert main(["bench", "--data", str(tmp_path), "--no-figures", "--no-progress"]) == 2
    assert "no Parquet shards" in capsys.readouterr().err


def test_bench_writes_outside_docs_unless_asked(dataset, tmp_path, monkeypatch):
    """The tour's bench must not rewrite tracked files: the default goes to ./bench-results; --docs is explicit."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    assert main(["bench", "--data", str(dataset), "--estimators", "analytical", "--per-split", "2", "--single",
                 "1", "--no-figures", "--no-progress"]) == 0
    assert (tmp_path / "bench-results" / "results.md").is_file() and not any((tmp_path / "docs").iterdir())
    assert main(["bench", "--data", str(dataset), "--docs", "--out", "x.md", "--no-figures"]) == 2
