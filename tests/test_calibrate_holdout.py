"""`calibrate` says which errors are in-sample and measures one on an input it never fitted to.

A ``scale`` update fits the input it was given exactly, so "0.00 %" after one update on one input is only
in-sample; the held-out figure is the one that says whether the calibration helps.
iterative-solver's sweep count differs from input to input: the held-out error after calibrating on seed 1 is
not 0.
"""

from __future__ import annotations

import json

import pytest
from llmulator import plugins
from llmulator.cli import main
from llmulator.design import load_design
from llmulator.inputs import inputs_for
from llmulator.library import resolve

SOLVER = ["hls-fpga", "iterative-solver", "iterative-solver-opt", "--variant", "weak", "--calibrator", "scale",
          "--estimator", "analytical"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMULATOR_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_one_input_is_in_sample_and_a_held_out_input_is_measured(home, capsys):
    assert main(["calibrate", *SOLVER, "--inputs", "1", "--tol", "1", "--context", "solver", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    first, last = r["iterations"][0], r["iterations"][-1]
    assert not first["in_sample"] and first["ape"]["cycles"] > 1  # the static estimate, before any update
    assert last["in_sample"] and last["ape"]["cycles"] < 1e-6  # fitted to the very input it is scored on
    h = r["held_out"]
    assert h["inputs"] == ["generated: seed=1000, variant=weak"] and h["profiler_runs"] == 1
    assert h["calibrated_ape"]["cycles"] > 1  # the other input's sweeps differ: the fit does not carry over
    assert r["profiler_runs"] == 1  # the held-out run is not counted against --budget


def test_the_table_says_in_sample_and_held_out(home, capsys):
    assert main(["calibrate", *SOLVER, "--inputs", "1", "--tol", "1", "--context", "solver"]) == 0
    out = capsys.readouterr().out
    assert "in-sample: fitted to it" in out and "seed 1 (before calibration)" in out
    assert "in-sample: on an input it was fitted to, so this says the fit worked" in out
    assert "held out (seed 1000, never fitted to): cycles APE" in out


def test_a_new_input_is_not_in_sample_and_the_default_held_out_seed_avoids_used_ones(home, capsys):
    assert main(["calibrate", *SOLVER, "--inputs", "1", "--inputs", "2", "--max-iters", "1", "--tol", "0.001",
                 "--context", "solver", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert [it["in_sample"] for it in r["iterations"]] == [False, False]  # seed 2 is new when it is scored
    # the context now holds feedback from seed 1; calibrating on seed 1000 into it holds out seed 1001
    assert main(["calibrate", *SOLVER, "--inputs", "1000", "--max-iters", "1", "--context", "solver",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["held_out"]["inputs"] == ["generated: seed=1001, variant=weak"]
    # an input the context has fitted cannot be held out
    assert main(["calibrate", *SOLVER, "--inputs", "3", "--holdout", "1", "--context", "solver"]) == 2
    assert "context 'solver' already holds feedback from it" in capsys.readouterr().err


@pytest.mark.parametrize("extra, message", [
    (["--inputs", "1", "--holdout", "1"], "both calibrated on and held out"),
    (["--holdout", "5", "--no-holdout"], "--holdout and --no-holdout contradict"),
])
def test_bad_holdout_options_exit_2(home, capsys, extra, message):
    assert main(["calibrate", *SOLVER, *extra]) == 2
    assert message in capsys.readouterr().err


def test_no_holdout_says_there_is_no_held_out_evidence(home, capsys):
    assert main(["calibrate", *SOLVER, "--inputs", "1", "--tol", "1", "--no-holdout", "--context", "s"]) == 0
    assert "no held-out input was measured" in capsys.readouterr().out


def test_the_python_api_takes_holdout_inputs(home):
    d = load_design(resolve("architecture", "hls-fpga"), resolve("workload", "iterative-solver"),
                    resolve("mapping", "iterative-solver-opt"), variant="weak")
    est, prof = plugins.get("estimators", "analytical"), plugins.get("profilers", "hlsim")
    rep = plugins.get("calibrators", "scale").calibrate(
        d, [inputs_for(d, "1")], est, prof, context="api", max_iters=1, tol=1,
        holdout=[inputs_for(d, "7"), inputs_for(d, "8")])
    assert rep.iterations[-1].in_sample and rep.final_ape < 1e-6
    assert rep.held_out["profiler_runs"] == 2 and len(rep.held_out["inputs"]) == 2
    truth = [prof.profile(d, inputs_for(d, s)).metrics["cycles"] for s in ("7", "8")]
    static = est.estimate([d])[0].metrics["cycles"]
    want = sum(abs(static - t) / t * 100 for t in truth) / 2
    assert rep.held_out["static_ape"]["cycles"] == pytest.approx(want, rel=1e-9)
