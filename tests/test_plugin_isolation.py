"""Plugin isolation, as a user with a broken third-party plugin installed sees it.

Third-party plugins here are real installed distributions (a ``*.dist-info`` with an ``llmulator``
entry point on ``sys.path``), loaded through ``importlib.metadata`` exactly as after ``pip install``:
one whose estimator and profiler raise, one whose estimator returns cycles only, one that does not
import, and one that registers a name another plugin already has.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
from llmulator import plugins
from llmulator.cli import main

DESIGN = ["systolic-16x16", "gemm", "gemm-ws-16x16"]

BROKEN = '''
from llmulator.hookspecs import hookimpl


class Broken:
    name = "broken"
    version = "1"

    def available(self):
        return None

    def estimate(self, designs):
        return [1 / 0 for d in designs]


class BrokenProfiler:
    name = "broken-prof"
    version = "1"

    def profile(self, design, inputs=None):
        raise KeyError("no such counter")


@hookimpl
def register_estimators(register):
    register(Broken)


@hookimpl
def register_profilers(register):
    register(BrokenProfiler)
'''

CYCLES_ONLY = '''
from llmulator.hookspecs import hookimpl
from llmulator.results import Estimate


class CyclesOnly:
    name = "cyclesonly"
    version = "0.1"

    def estimate(self, designs):
        return [Estimate(self.name, self.version, {"cycles": 1234.0}) for d in designs]


@hookimpl
def register_estimators(register):
    register(CyclesOnly)
'''

NO_IMPORT = "import a_module_that_is_not_installed\n"


def _install(site: Path, dist: str, version: str, entry: str, module: str, code: str) -> None:
    # another test may have installed a module of this name with other code: forget it, or the entry point
    # would load the stale one from sys.modules (an order-dependent failure of the whole suite)
    sys.modules.pop(module, None)
    importlib.invalidate_caches()
    (site / f"{module}.py").write_text(textwrap.dedent(code))
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[llmulator]\n{entry} = {module}\n")


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on sys.path to install plugin distributions into; the registry is rebuilt from it."""
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


def test_an_estimator_that_raises_gets_its_own_column_and_the_others_still_print(two_plugins, capsys):
    args = ["estimate", *DESIGN, "--estimator", "analytical", "--estimator", "broken", "--estimator", "cyclesonly"]
    assert main(args) == 3
    out, err = capsys.readouterr()
    header = next(line for line in out.splitlines() if "analytical" in line)
    assert "broken" in header and "cyclesonly" in header  # its own column, next to the others
    cycles = next(line for line in out.splitlines() if line.strip("│┃ ").startswith("cycles"))
    assert "1,234" in cycles and "failed" in cycles  # the cycles-only plugin's number; the broken one says so
    energy = next(line for line in out.splitlines() if "energy_pj" in line)
    assert "-" in energy  # cycles only: the other metrics are blank, not an error
    assert "estimator 'broken' failed: ZeroDivisionError: division by zero" in err
    assert "plugin 'broken' (package broken-llmulator-plugin 1.2.3), not in llmulator" in err
    assert "broken_llmulator_plugin.py" in err  # where it raised
    assert "bug in llmulator;" not in err


def test_the_json_names_the_failure_and_its_package(two_plugins, capsys):
    args = ["estimate", *DESIGN, "--estimator", "analytical", "--estimator", "broken", "--estimator", "cyclesonly",
            "--json"]
    assert main(args) == 3
    out = json.loads(capsys.readouterr().out)
    est = {e["estimator"]: e for e in out["estimates"]}
    assert set(est) == {"analytical", "cyclesonly"} and est["cyclesonly"]["metrics"] == {"cycles": 1234.0}
    f = out["failed"]["broken"]
    assert f["error"] == "ZeroDivisionError: division by zero"
    assert f["plugin"] == "broken" and f["package"] == "broken-llmulator-plugin 1.2.3"
    assert out["refused"] == {}


def test_alone_it_still_blames_the_plugin_not_llmulator(two_plugins, capsys):
    assert main(["estimate", *DESIGN, "--estimator", "broken"]) == 3
    err = capsys.readouterr().err
    assert "broken-llmulator-plugin 1.2.3" in err and "internal error" not in err


def test_the_default_run_includes_every_plugin(two_plugins, capsys, monkeypatch):
    """No --estimator: every registered estimator runs (the slow learned ones are left out here)."""
    real = plugins.names
    monkeypatch.setattr(plugins, "names", lambda kind: [n for n in real(kind) if n in
                                                         ("analytical", "broken", "cyclesonly")])
    assert main(["estimate", *DESIGN, "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert {e["estimator"] for e in out["estimates"]} == {"analytical", "cyclesonly"}
    assert list(out["failed"]) == ["broken"]


def test_a_profiler_that_raises_is_blamed_on_its_plugin(two_plugins, capsys):
    assert main(["profile", *DESIGN, "--profiler", "broken-prof"]) == 3
    err = capsys.readouterr().err
    assert "profiler 'broken-prof' failed: KeyError: 'no such counter'" in err
    assert "package broken-llmulator-plugin 1.2.3" in err


def test_plugins_lists_the_package_of_each_component(two_plugins, capsys):
    assert main(["plugins", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["broken"]["package"] == "broken-llmulator-plugin 1.2.3"
    assert rows["cyclesonly"]["package"] == "cycles-llmulator-plugin 0.1"
    assert rows["analytical"]["package"].startswith("llmulator ")
    assert rows["analytical"]["available"] is True and rows["broken-prof"]["available"] is True  # none: usable


def test_plugins_shows_availability_and_blames_an_available_that_raises(site, capsys):
    code = CYCLES_ONLY.replace("    def estimate(self, designs):",
                               "    def available(self):\n        raise OSError('disk on fire')\n\n"
                               "    def estimate(self, designs):")
    _install(site, "fragile-plugin", "0.2", "fragile", "fragile_plugin", code)
    assert main(["plugins", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["cyclesonly"]["available"] is False
    assert "OSError: disk on fire" in rows["cyclesonly"]["reason"]
    assert "package fragile-plugin 0.2" in rows["cyclesonly"]["reason"]
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    n = re.search(r"cyclesonly .* no \[(\d+)\]", out).group(1)  # a footnote, so the table fits 80 columns
    assert f"[{n}] cyclesonly: raised OSError: disk on fire" in out
    assert main(["plugins", "--no-check", "--json"]) == 0
    assert {r["available"] for r in json.loads(capsys.readouterr().out)} == {None}


def test_a_duplicate_component_name_is_an_error_naming_both_plugins(two_plugins, capsys):
    _install(two_plugins, "other-cycles-plugin", "2.0", "cycles2", "other_cycles_plugin", CYCLES_ONLY)
    assert main(["estimate", *DESIGN, "--estimator", "analytical"]) == 2
    err = capsys.readouterr().err
    assert "two plugins register the estimator 'cyclesonly'" in err
    assert "cycles-llmulator-plugin 0.1" in err and "other-cycles-plugin 2.0" in err


def test_a_duplicate_of_a_built_in_name_is_an_error_too(site, capsys):
    _install(site, "fake-analytical", "0.1", "fakeanalytical", "fake_analytical_plugin",
             CYCLES_ONLY.replace('name = "cyclesonly"', 'name = "analytical"'))
    assert main(["plugins"]) == 2
    err = capsys.readouterr().err
    assert "'analytical'" in err and "llmulator 0.1.0" in err and "fake-analytical 0.1" in err


def test_a_plugin_that_does_not_import_loses_only_itself(site, capsys):
    _install(site, "cycles-llmulator-plugin", "0.1", "cyclesonly", "cycles_llmulator_plugin", CYCLES_ONLY)
    _install(site, "noimport-plugin", "0.3", "noimport", "noimport_plugin", NO_IMPORT)
    assert main(["estimate", *DESIGN, "--estimator", "analytical", "--estimator", "cyclesonly", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["estimates"]) == 2
    assert main(["plugins"]) == 3  # listed, with the broken one named on stderr
    out, err = capsys.readouterr()
    assert "cyclesonly" in out
    assert "plugin 'noimport' (package noimport-plugin 0.3) failed to import" in err
    assert "ModuleNotFoundError" in err


def test_a_register_hook_that_raises_loses_only_its_components(site, capsys):
    code = CYCLES_ONLY + '''

@hookimpl
def register_profilers(register):
    raise RuntimeError("half-written plugin")
'''
    _install(site, "half-plugin", "0.1", "half", "half_plugin", code)
    assert main(["estimate", *DESIGN, "--estimator", "cyclesonly", "--json"]) == 0
    capsys.readouterr()
    assert main(["plugins"]) == 3
    assert "its register_profilers hook raised RuntimeError: half-written plugin" in capsys.readouterr().err
