"""The command line and the plugin contract, as a user and a third-party plugin author see them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from llmulator.cli import main

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ["systolic-16x16", "gemm", "gemm-ws-16x16"]


def run_cli(*args, env=None, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "llmulator.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


def test_help_lists_verbs_and_does_not_import_torch():
    code = ("import sys\nfrom llmulator.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit as e:\n    assert e.code == 0\n"
            "assert 'torch' not in sys.modules\nprint('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "estimate" in r.stdout and "validate" in r.stdout and r.stdout.strip().endswith("ok")


def test_every_verb_help_has_an_example(capsys):
    for verb in ("validate", "render", "estimate", "plugins", "list"):
        with pytest.raises(SystemExit) as e:
            main([verb, "--help"])
        assert e.value.code == 0
        assert "example" in capsys.readouterr().out


def test_estimate_prints_a_table_with_the_analytical_column(capsys):
    assert main(["estimate", *DESIGN]) == 0
    out = capsys.readouterr().out
    for word in ("analytical", "cycles", "energy_pj", "power_mw", "area_um2", "latency_us"):
        assert word in out


def test_estimate_json_is_machine_readable(capsys):
    assert main(["estimate", *DESIGN, "--estimator", "analytical", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (e,) = data["estimates"]
    assert e["estimator"] == "analytical"
    assert set(e["metrics"]) >= {"cycles", "energy_pj", "power_mw", "area_um2"}
    assert e["metrics"]["cycles"] > 0 and e["terms"]["ideal_cycles"] > 0


def test_estimate_and_profile_print_the_warnings_validate_prints(capsys):
    """attention-qk's fp scale on systolic-16x16's int units: validate warns, and estimate, which prices it on
    them, says the same (on stderr, and under "warnings" in its JSON)."""
    design = ["systolic-16x16", "attention-qk", "attention-qk-opt"]
    assert main(["validate", *design]) == 0
    said = [ln for ln in capsys.readouterr().err.splitlines() if "warning:" in ln]
    assert said
    assert main(["estimate", *design, "--estimator", "analytical"]) == 0
    assert said[0] in capsys.readouterr().err
    assert main(["estimate", *design, "--estimator", "analytical", "--json"]) == 0
    assert any(said[0] in w for w in json.loads(capsys.readouterr().out)["warnings"])
    # and profile, which runs the same design (an outside audit found hlsim's side silent)
    assert main(["profile", *design, "--profiler", "hlsim", "--preset", "mini"]) == 0
    assert said[0] in capsys.readouterr().err
    assert main(["profile", *design, "--profiler", "hlsim", "--preset", "mini", "--json"]) == 0
    assert any(said[0] in w for w in json.loads(capsys.readouterr().out)["warnings"])


def test_bad_usage_exits_2_with_a_message(capsys):
    assert main(["estimate", *DESIGN, "--estimator", "nope"]) == 2
    assert "unknown estimator 'nope'" in capsys.readouterr().err
    assert main(["estimate", "no-such-arch", "gemm", "gemm-ws-16x16"]) == 2
    err = capsys.readouterr().err
    assert "no-such-arch" in err and "systolic-16x16" in err
    assert main(["estimate", *DESIGN, "--preset", "huge"]) == 2
    err = capsys.readouterr().err
    assert "unknown size preset 'huge'" in err
    # --preset is the user's, not the mapping file's: the message names the workload's presets and file
    assert "workload 'gemm' has presets large, mini, small" in err and "gemm.yaml" in err
    assert "gemm-ws-16x16.yaml" not in err
    assert main(["validate", *DESIGN, "--preset", "huge", "--json"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False and "has presets large, mini, small" in out["errors"][0]


def test_list_and_plugins(capsys):
    assert main(["list", "--json"]) == 0
    lib = json.loads(capsys.readouterr().out)
    assert {"gemm", "conv2d", "atax", "jacobi-2d", "spmv-csr", "softmax"} <= {e["name"] for e in lib["workload"]}
    assert len(lib["architecture"]) >= 3
    assert main(["plugins", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"kind": "estimator", "name": "analytical"}.items() <= next(
        r for r in rows if r["name"] == "analytical").items()


EXAMPLE = ROOT / "docs" / "examples" / "my_estimator.py"  # the plugin example of docs/plugins.md


def _install_toy(tmp_path: Path) -> dict:
    site = tmp_path / "site"
    site.mkdir()
    (site / "my_estimator.py").write_text(EXAMPLE.read_text(encoding="utf-8"))
    dist = site / "toy_llmulator_plugin-0.0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-llmulator-plugin\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text("[llmulator]\nmy_estimator = my_estimator\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    return env


def test_a_third_party_estimator_registered_by_entry_point_appears_in_estimate(tmp_path):
    env = _install_toy(tmp_path)
    r = run_cli("plugins", "--json", env=env)
    assert r.returncode == 0, r.stderr
    names = {row["name"]: row for row in json.loads(r.stdout)}
    row = names["my-estimator"]
    assert row["plugin"] == "my_estimator" and row["kind"] == "estimator"
    assert row["package"] == "toy-llmulator-plugin 0.0.1"
    r = run_cli("estimate", *DESIGN, "--json", env=env)
    assert r.returncode == 0, r.stderr
    est = {e["estimator"]: e for e in json.loads(r.stdout)["estimates"]}
    assert set(est) >= {"analytical", "my-estimator"}
    assert est["my-estimator"]["metrics"]["cycles"] == 64**3
    r = run_cli("estimate", *DESIGN, env=env)
    assert "my-estimator" in r.stdout and "(50%)" in r.stdout  # confidence shown in the table


def test_internal_errors_exit_1_with_a_hint(tmp_path, capsys, monkeypatch):
    from llmulator import cli

    def boom(args):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(cli, "cmd_list", boom)
    assert main(["list"]) == 1
    err = capsys.readouterr().err
    assert "internal error" in err and "report" in err


def test_estimate_for_an_input_variant_uses_its_expected_trips(capsys):
    cycles = {}
    for v in (None, "weak", "dominant"):
        args = ["estimate", "hls-fpga", "iterative-solver", "iterative-solver-opt", "--estimator", "analytical",
                "--json"] + (["--variant", v] if v else [])
        assert main(args) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["design"]["variant"] == v
        cycles[v] = out["estimates"][0]["metrics"]["cycles"]
    assert cycles["dominant"] < cycles[None] < cycles["weak"]  # 6 < default < 51 expected sweeps
    assert main(["estimate", "hls-fpga", "iterative-solver", "iterative-solver-opt", "--variant", "nope"]) == 2
    assert "no input variant 'nope'" in capsys.readouterr().err


def test_estimate_context_adds_a_column_and_drops_no_estimator(capsys, monkeypatch):
    """`--context` "also runs" the calibrated estimator: the estimators chosen without it still run."""
    from llmulator import plugins
    from llmulator.hookspecs import hookimpl
    from llmulator.results import Estimate

    class Halve:
        name = "halve"
        version = "0"

        def contexts(self):
            return {"ctx1": {"estimator": "analytical"}}

        def apply(self, estimator, context):
            class Calibrated:
                name = f"{estimator.name}@{context}"

                def estimate(self, designs):
                    return [Estimate(self.name, "0", {"cycles": e.metrics["cycles"] / 2})
                            for e in estimator.estimate(designs)]
            return Calibrated()

    class Plugin:
        @hookimpl
        def register_calibrators(self, register):
            register(Halve)

    plugins.reset()
    plugins.register_plugin(Plugin(), name="halve-test")
    real = plugins.names
    monkeypatch.setattr(plugins, "names", lambda kind: ["analytical"] if kind == "estimators" else real(kind))
    try:
        assert main(["estimate", *DESIGN, "--context", "ctx1", "--json"]) == 0  # no --estimator: all of them
        est = {e["estimator"]: e["metrics"] for e in json.loads(capsys.readouterr().out)["estimates"]}
        assert list(est) == ["analytical", "analytical@ctx1"]
        assert est["analytical@ctx1"]["cycles"] == est["analytical"]["cycles"] / 2
    finally:
        plugins.reset()


@pytest.mark.parametrize("verb, args, dest", [
    ("estimate", DESIGN, "estimator"),
    ("bench", ["--data", "d"], "estimators"),
    ("dse", ["systolic-16x16", "gemm", "--space", "gemm-small-systolic"], "estimator"),
])
def test_every_verb_takes_estimator_and_estimators_alike(verb, args, dest):
    """--estimator NAME (repeatable) and --estimators A,B mean the same on estimate, bench and dse."""
    from llmulator.cli import build_parser
    p = build_parser()
    for given in (["--estimator", "a", "--estimator", "b", "--estimator", "c"], ["--estimators", "a,b,c"],
                  ["--estimator", "a", "--estimators", "b,c", "--estimator", "a"], ["--estimator", "a,b,c"]):
        assert getattr(p.parse_args([verb, *args, *given]), dest) == ["a", "b", "c"], given
    assert getattr(p.parse_args([verb, *args]), dest) is None  # the verb's default


def test_dse_is_driven_by_one_estimator(capsys):
    assert main(["dse", "systolic-16x16", "gemm", "--space", "gemm-small-systolic", "--estimators",
                 "analytical,llm"]) == 2
    assert "dse is driven by one estimator" in capsys.readouterr().err


def test_every_option_says_something_in_help():
    """No option of any verb (plugins' verbs included) is listed in --help without a word about it."""
    import argparse

    from llmulator.cli import build_parser
    missing = []

    def walk(p, path):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sp in a.choices.items():
                    walk(sp, [*path, name])
            elif a.option_strings and not a.help:
                missing.append(f"llmulator {' '.join(path)} {'/'.join(a.option_strings)}")
        assert p.format_help()  # and every help page renders
    walk(build_parser(), [])
    assert not missing, "options without help: " + ", ".join(missing)


def _wide_plugin(monkeypatch):
    """Five more estimator columns with long names next to analytical: more than 80 columns' worth."""
    from llmulator import plugins
    from llmulator.hookspecs import hookimpl
    from llmulator.results import Estimate

    def make(n):
        class E:
            name = n
            version = "0"

            def estimate(self, designs):
                return [Estimate(self.name, "0", {"cycles": 123456789.0, "energy_pj": 9.87654e9},
                                 confidence={"cycles": 0.5}) for _ in designs]
        return E

    class Plugin:
        @hookimpl
        def register_estimators(self, register):
            for n in ("first-long-name", "second-long-name", "third-long-name", "fourth-long-name"):
                register(make(n))

    plugins.reset()
    plugins.register_plugin(Plugin(), name="wide-test")
    return ["--estimator", "analytical", "--estimators",
            "first-long-name,second-long-name,third-long-name,fourth-long-name"]


def test_tables_wrap_at_80_columns_and_cut_nothing(capsys, monkeypatch):
    from llmulator import plugins
    monkeypatch.setenv("COLUMNS", "80")
    chosen = _wide_plugin(monkeypatch)
    try:
        assert main(["estimate", *DESIGN, *chosen]) == 0
        out = capsys.readouterr().out
        table = [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]
        assert table and max(len(line) for line in table) <= 80
        assert "…" not in out
        for name in ("first-long-name", "fourth-long-name"):  # a name too long for its column folds, whole
            assert name not in out and name[:8] in "".join(out.split())
        assert "2,604" in out  # numbers are not split
        monkeypatch.delenv("COLUMNS")
        assert main(["--wide", "estimate", *DESIGN, *chosen]) == 0  # --wide: one line per metric
        out = capsys.readouterr().out
        assert "fourth-long-name" in out and max(len(line) for line in out.splitlines()) > 80
    finally:
        plugins.reset()
        import os
        os.environ.pop("LLMULATOR_WIDE", None)


@pytest.mark.parametrize("argv", [["list", "--kind", "mapping"], ["plugins", "--no-check"]])
def test_other_tables_fit_80_columns_too(argv, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "…" not in out
    assert max(len(line) for line in out.splitlines() if line[:1] in "┏┃┡│└") <= 80


def _verbs(parser):
    import argparse
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_a_verb_built_alone_is_the_verb_built_with_all(monkeypatch):
    """`main` builds only the invoked verb's parser (the others are stand-ins, every plugin hook still runs):
    each verb's help and its nested sub-commands' help are what the whole parser has."""
    import argparse

    from llmulator.cli import _parser_for, build_parser, invoked_verb
    full = build_parser()
    names = [n for n in _verbs(full) if n != "train"]
    assert "estimate" in names and len(names) > 6

    def helps(p):
        out = [p.format_help()]
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for sp in a.choices.values():
                    out += helps(sp)
        return out

    for name in names:
        alone = _verbs(build_parser(name))
        assert isinstance(alone[name], argparse.ArgumentParser)
        assert list(alone) == list(_verbs(full)) or set(alone) <= set(_verbs(full))
        assert helps(alone[name]) == helps(_verbs(full)[name]), name
    assert invoked_verb(["--wide", "estimate", "a"]) == "estimate"
    assert invoked_verb(["-h", "estimate"]) is None and invoked_verb(["train", "llm"]) is None
    assert invoked_verb([]) is None
    # a typo gets the whole parser, whose error lists every verb
    assert isinstance(_verbs(_parser_for(["estimat"]))["bench"], argparse.ArgumentParser)


def test_a_command_that_loads_a_design_starts_the_blas_on_one_thread():
    """`estimate` imports NumPy with OPENBLAS_NUM_THREADS=1 for the import only (no thread pool per core at
    start; the learned estimators raise the count where they compute), and leaves the environment as it was."""
    import subprocess
    import sys
    code = ("import os, sys\n"
            "from llmulator.cli import main\n"
            "rc = main(['estimate', 'systolic-16x16', 'gemm', 'gemm-ws-16x16', '--estimator', 'analytical', "
            "'--json'])\n"
            "from llmulator.npinfer import _blas_controls\n"
            "ctl = _blas_controls()\n"
            "print(rc, 'OPENBLAS_NUM_THREADS' in os.environ, ctl[0]() if ctl else 1)\n")
    env = {k: v for k, v in __import__("os").environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-3:] == ["0", "False", "1"]
