"""Plugin isolation inside `dse` and `bench`: a third-party estimator or profiler that raises is named with its
exception and package, the other estimators' results still come out, and the exit status is 3.

The plugins are the installed distributions of tests/test_plugin_isolation.py (an estimator and a profiler
that raise, an estimator that returns cycles only), loaded through entry points as after ``pip install``.
"""

from __future__ import annotations

import json

import pytest
from llmulator import plugins
from llmulator.cli import main
from llmulator.dataset import SPLITS
from test_plugin_isolation import BROKEN, CYCLES_ONLY, _install

DSE = ["dse", "systolic-16x16", "gemm", "--space", "gemm-small-systolic", "--budget", "40", "--search", "random",
       "--no-progress"]


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on sys.path to install plugin distributions into (as in test_plugin_isolation)."""
    d = tmp_path / "site"
    d.mkdir()
    monkeypatch.syspath_prepend(str(d))
    monkeypatch.delenv("LLMULATOR_NO_ENTRY_POINTS", raising=False)
    plugins.reset()
    yield d
    plugins.reset()


@pytest.fixture
def two_plugins(site):
    _install(site, "broken-llmulator-plugin", "1.2.3", "broken", "broken_llmulator_plugin", BROKEN)
    _install(site, "cycles-llmulator-plugin", "0.1", "cyclesonly", "cycles_llmulator_plugin", CYCLES_ONLY)
    return site


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from llmulator_plugins.synth import driver
    out = tmp_path_factory.mktemp("iso-data")
    driver.run([2], 16, out, seed=11, shard_size=8, progress=False)
    return out


def _splits(dataset) -> str:
    from collections import Counter

    from llmulator.dataset import load_rows, split_of
    c = Counter(split_of(r) for r in load_rows(dataset))
    return ",".join(s for s in SPLITS if s.startswith("test_") and c[s] >= 1)


def test_bench_names_an_estimator_that_raises_and_keeps_the_others(two_plugins, dataset, tmp_path, capsys,
                                                                   monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc = main(["bench", "--data", str(dataset), "--estimators", "analytical,broken,cyclesonly", "--split",
               _splits(dataset), "--per-split", "3", "--single", "1", "--no-figures", "--no-progress"])
    out, err = capsys.readouterr()
    assert rc == 3
    assert "estimator 'broken' raised ZeroDivisionError: division by zero" in err
    assert "plugin 'broken' (package broken-llmulator-plugin 1.2.3), not in llmulator" in err
    assert "broken_llmulator_plugin.py" in err and "bug in llmulator;" not in err
    report = (tmp_path / "bench-results" / "results.md").read_text()  # written all the same
    rows = [line for line in report.splitlines() if line.startswith("| ")]
    # analytical's and cycles-only's accuracy rows are there; cycles-only is scored on cycles and not failed
    assert any(r.startswith("| analytical |") and "| cycles |" in r and "| 0 |" not in r for r in rows)
    cyc = [r for r in rows if r.startswith("| cyclesonly |") and "| cycles |" in r]
    assert cyc and all("| 0 | - |" not in r for r in cyc)
    coverage = [r for r in rows if r.startswith("| cyclesonly |") and "energy_pj 3" in r]
    assert coverage and all("| 0 | - |" in r for r in coverage)  # 0 failed: the other metrics are "missing"
    broken = [r for r in rows if r.startswith("| broken |") and "ZeroDivisionError" in r]
    assert broken  # the coverage table counts its designs as failed, with the reason
    assert "ZeroDivisionError" not in out.split("### Accuracy")[0]  # the report is printed too


def test_bench_with_an_estimator_that_raises_when_built(site, dataset, tmp_path, capsys, monkeypatch):
    code = CYCLES_ONLY.replace("    def estimate(self, designs):",
                               "    def __init__(self):\n        raise OSError('no model file')\n\n"
                               "    def estimate(self, designs):")
    _install(site, "fragile-plugin", "0.2", "fragile", "fragile_plugin", code)
    monkeypatch.chdir(tmp_path)
    rc = main(["bench", "--data", str(dataset), "--estimators", "analytical,cyclesonly", "--split", _splits(dataset),
               "--per-split", "2", "--single", "0", "--no-figures", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 3
    assert "estimator 'cyclesonly' raised OSError: no model file" in err and "package fragile-plugin 0.2" in err
    assert "| analytical |" in (tmp_path / "bench-results" / "results.md").read_text()


def test_bench_with_a_cycles_only_estimator_alone_exits_0(two_plugins, dataset, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--data", str(dataset), "--estimators", "cyclesonly", "--split", _splits(dataset),
                 "--per-split", "2", "--single", "1", "--no-figures", "--no-progress"]) == 0
    assert "error:" not in capsys.readouterr().err


def test_dse_blames_an_estimator_that_raises_and_prints_the_rest(two_plugins, capsys):
    rc = main([*DSE, "--estimator", "broken", "--verify", "0", "--json"])
    out, err = capsys.readouterr()
    assert rc == 3
    s = json.loads(out)  # the summary is printed all the same
    assert s["evaluated"] == 40 and s["valid"] == 0 and s["best"] is None
    n = s["invalid_reasons"]["estimator raised ZeroDivisionError: division by zero"]  # the others broke a rule
    assert n > 0 and sum(s["invalid_reasons"].values()) == 40
    f = s["failures"]["estimators"]["broken"]
    assert f["package"] == "broken-llmulator-plugin 1.2.3" and f["points"] == n
    assert f"estimator 'broken' raised ZeroDivisionError: division by zero on {n} points" in err
    assert "plugin 'broken' (package broken-llmulator-plugin 1.2.3), not in llmulator" in err
    assert "internal error" not in err


def test_dse_blames_a_profiler_that_raises_and_keeps_the_search(two_plugins, capsys):
    rc = main([*DSE, "--profiler", "broken-prof", "--verify", "2"])
    out, err = capsys.readouterr()
    assert rc == 3
    assert "Pareto front" in out and "profiler raised KeyError" in out  # the table, with the error in its rows
    assert "profiler 'broken-prof' raised KeyError: 'no such counter' on 2 designs" in err
    assert "package broken-llmulator-plugin 1.2.3" in err


def test_dse_with_a_cycles_only_estimator(two_plugins, capsys):
    assert main([*DSE, "--estimator", "cyclesonly", "--verify", "1", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["valid"] > 0 and s["best"]["cycles"] == 1234.0 and s["failures"] == {}
    assert s["verified"] and s["verified"][0]["measured"]["cycles"] > 0
    assert len(s["pareto"]) == 1 and s["pareto"][0]["cycles"] == 1234.0  # the front over what it reports


def test_dse_with_an_estimator_whose_factory_raises(site, capsys):
    code = CYCLES_ONLY.replace("    def estimate(self, designs):",
                               "    def available(self):\n        raise OSError('disk on fire')\n\n"
                               "    def estimate(self, designs):")
    _install(site, "fragile-plugin", "0.2", "fragile", "fragile_dse_plugin", code)
    assert main([*DSE, "--estimator", "cyclesonly"]) == 3
    err = capsys.readouterr().err
    assert "estimator 'cyclesonly' raised OSError: disk on fire" in err and "package fragile-plugin 0.2" in err
