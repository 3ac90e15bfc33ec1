"""Calibration: the scale baseline converges on real profiler feedback, LoRA updates (dpo) are saved, checked,
rolled back and applied through `estimate --context`, and a killed calibration keeps its feedback."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from llmulator import plugins
from llmulator.cli import main
from llmulator.design import load_design
from llmulator.inputs import inputs_for
from llmulator.library import resolve

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2)


def design(workload: str, mapping: str, arch: str = "hls-fpga"):
    return load_design(resolve("architecture", arch), resolve("workload", workload), resolve("mapping", mapping))


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMULATOR_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def context_dir(home: Path, name: str) -> Path:
    return home / "contexts" / name


def test_scale_converges_on_a_profiled_input_dependent_design(home):
    d = design("topk", "topk-opt")
    inputs = [inputs_for(d, str(s), "ascending") for s in (1, 2, 3)]
    est, prof = plugins.get("estimators", "analytical"), plugins.get("profilers", "hlsim")
    report = plugins.get("calibrators", "scale").calibrate(d, inputs, est, prof, context="topk", max_iters=5,
                                                           budget=5, tol=2.0)
    assert report.static_ape > 20  # a static estimate cannot know the ascending order makes every value enter
    assert report.stopped == "converged" and report.final_ape < 2.0
    assert [it.profiler_runs for it in report.iterations] == list(range(1, len(report.iterations) + 1))
    meta = json.loads((context_dir(home, "topk") / "context.json").read_text())
    truth = prof.profile(d, inputs[0]).metrics["cycles"]
    assert meta["scale"]["cycles"] == pytest.approx(truth / est.estimate([d])[0].metrics["cycles"], rel=1e-6)
    # the saved context corrects later estimates
    calibrated = plugins.get("calibrators", "scale").apply(est, "topk").estimate([d])[0]
    assert calibrated.estimator == "analytical@topk"
    assert abs(calibrated.metrics["cycles"] - truth) / truth < 0.02


def test_a_worse_scale_update_is_rolled_back(home, monkeypatch):
    from llmulator_plugins.calibrate.scale import ScaleState
    d = design("iterative-solver", "iterative-solver-opt")  # the sweep count differs from input to input
    est, prof = plugins.get("estimators", "analytical"), plugins.get("profilers", "hlsim")
    cal = plugins.get("calibrators", "scale")
    cal.calibrate(d, [inputs_for(d, "1", "weak")], est, prof, context="rb", max_iters=1, tol=0.001)
    before = json.loads((context_dir(home, "rb") / "context.json").read_text())["scale"]

    def worse(self, entries):
        self.factors = {m: f * 100 for m, f in self.factors.items()}
        return {}

    monkeypatch.setattr(ScaleState, "update", worse)
    report = cal.calibrate(d, [inputs_for(d, "3", "weak")], est, prof, context="rb", max_iters=1, tol=0.001)
    assert report.static_ape > 0.001
    assert report.iterations[1].update == "rolled back" and report.rollbacks == 1
    meta = json.loads((context_dir(home, "rb") / "context.json").read_text())
    assert meta["scale"] == before and meta["rollbacks"] == 1
    assert report.iterations[1].ape == report.iterations[0].ape  # the previous factors are still in use


KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from llmulator import plugins
    from llmulator.design import load_design
    from llmulator.inputs import inputs_for
    from llmulator.library import resolve
    from llmulator_plugins.calibrate.scale import ScaleState
    calls = []
    real = ScaleState.update
    def update(self, entries):
        calls.append(1)
        if len(calls) == 2:  # the second feedback sample is in the buffer: die without any cleanup
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, entries)
    ScaleState.update = update
    d = load_design(resolve("architecture", "hls-fpga"), resolve("workload", "iterative-solver"),
                    resolve("mapping", "iterative-solver-opt"))
    inputs = [inputs_for(d, str(s), "weak") for s in (1, 2, 3)]
    plugins.get("calibrators", "scale").calibrate(d, inputs, plugins.get("estimators", "analytical"),
                                                  plugins.get("profilers", "hlsim"), context="killed",
                                                  max_iters=5, tol=0.01)
""")


def test_a_killed_calibration_loses_no_buffered_feedback(home, tmp_path):
    script = tmp_path / "kill.py"
    script.write_text(KILL_SCRIPT)
    env = {**os.environ, "LLMULATOR_HOME": str(home)}
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    buf = json.loads((context_dir(home, "killed") / "buffer.json").read_text())
    assert [e["id"] for e in buf["entries"]] == [0, 1]
    d = design("iterative-solver", "iterative-solver-opt")
    prof = plugins.get("profilers", "hlsim")
    for entry, seed in zip(buf["entries"], (1, 2), strict=True):
        assert entry["truth"]["cycles"] == prof.profile(d, inputs_for(d, str(seed), "weak")).metrics["cycles"]
    assert not [p for p in context_dir(home, "killed").iterdir() if p.name.endswith(".tmp")]
    # calibrating again into the same context keeps the earlier feedback and adds to it
    inputs = [inputs_for(d, "3", "weak")]
    plugins.get("calibrators", "scale").calibrate(d, inputs, plugins.get("estimators", "analytical"), prof,
                                                  context="killed", max_iters=1, tol=0.01)
    buf = json.loads((context_dir(home, "killed") / "buffer.json").read_text())
    assert [e["id"] for e in buf["entries"]] == [0, 1, 2]


def test_the_replay_buffer_is_bounded_and_keeps_recent_feedback(tmp_path):
    from llmulator_plugins.calibrate.store import ReplayBuffer
    buf = ReplayBuffer(tmp_path / "b.json", capacity=8)
    for i in range(30):
        buf.add({"truth": {"cycles": i}})
    again = ReplayBuffer(tmp_path / "b.json", capacity=8)
    ids = [e["id"] for e in again.entries]
    assert len(ids) == 8 and ids[-4:] == [26, 27, 28, 29] and ids == sorted(ids)
    train, check = again.split()
    assert check and all(e["id"] % 4 == 3 for e in check) and not set(map(id, train)) & set(map(id, check))
    sample = again.sample(train, newest=1, older=3)
    assert sample[-1] is train[-1] and len(sample) == 4
    buf.add({"truth": {"cycles": 30}})
    buf.add({"truth": {"cycles": 31}})  # id 31 would be held back, but the newest feedback always trains
    train, check = buf.split()
    assert train[-1]["id"] == 31 and 31 not in [e["id"] for e in check]


# -- LoRA calibrators on a tiny random language model -----------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    pytest.importorskip("trl")
    import torch
    from llmulator_plugins.llm.text import PROMPT_FORMAT, build_tokenizer, model_prompt
    from llmulator_plugins.llm.train import new_model
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("tiny-llm")
    tok = build_tokenizer([model_prompt(design("topk", "topk-opt"))])
    model = new_model(tok, TINY)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    (out / "llmulator.json").write_text(json.dumps({"format": PROMPT_FORMAT, "hints": "none", "head": "digits"}))
    return out


def _llm(path):
    from llmulator_plugins.llm.estimator import LLMEstimator
    return LLMEstimator(path)


def _sha(folder: Path) -> str:
    return hashlib.sha256((folder / "adapter_model.safetensors").read_bytes()).hexdigest()


def test_dpo_writes_an_adapter_and_buffer_and_estimate_uses_the_context(home, tiny_model, monkeypatch, capsys):
    d = design("topk", "topk-opt")
    inputs = [inputs_for(d, "1", "ascending")]
    report = plugins.get("calibrators", "dpo").calibrate(
        d, inputs, _llm(tiny_model), plugins.get("profilers", "hlsim"), context="tiny", max_iters=2, tol=0.01,
        steps=3, lr=5e-2, threads=1, guard_margin=float("inf"))  # accept every update: this test is about files
    assert [it.update for it in report.iterations] == ["", "accepted", "accepted"]
    assert report.iterations[1].train["pairs"] == 1 and report.iterations[2].train["pairs"] >= 1
    assert report.profiler_runs == 1  # one input: profiled once, reused
    ctx = context_dir(home, "tiny")
    meta = json.loads((ctx / "context.json").read_text())
    assert meta["calibrator"] == "dpo" and meta["adapter"] == "adapter-0002" and meta["updates"] == 2
    assert (ctx / "adapter-0002" / "adapter_model.safetensors").is_file() and not (ctx / "adapter-0001").exists()
    entries = json.loads((ctx / "buffer.json").read_text())["entries"]
    assert len(entries) == 2 and entries[0]["prompt"].endswith("### predict\n")
    assert entries[0]["truth"]["cycles"] == plugins.get("profilers", "hlsim").profile(d, inputs[0]).metrics["cycles"]
    # the estimator loads the adapter the way training saw it
    calibrated = plugins.get("calibrators", "dpo").apply(_llm(tiny_model), "tiny")
    assert calibrated.name == "llm@tiny"
    lora = calibrated.estimate([d])[0]
    assert lora.metrics["cycles"] == _lora_cycles(home, tiny_model, d)
    assert lora.metrics != _llm(tiny_model).estimate([d])[0].metrics  # and the adapter is what it predicts with
    # `estimate --context` also runs the calibrated estimator: a column next to the ones asked for
    monkeypatch.setenv("LLMULATOR_LLM_MODEL", str(tiny_model))
    plugins.reset()
    assert main(["estimate", "hls-fpga", "topk", "topk-opt", "--estimator", "analytical", "--estimator", "llm",
                 "--context", "tiny", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    names = [e["estimator"] for e in out["estimates"]]
    assert names == ["analytical", "llm", "llm@tiny"]
    assert out["estimates"][2]["metrics"]["cycles"] == lora.metrics["cycles"]
    assert main(["contexts", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["tiny"]["buffer_entries"] == 2 and listed["tiny"]["calibrator"] == "dpo"
    assert main(["contexts", "--remove", "tiny"]) == 0 and not ctx.exists()
    plugins.reset()


def _lora_cycles(home, model_path, d) -> float:
    """The cycles the context's adapter predicts, loaded the way training loads it (peft, not the estimator)."""
    from llmulator_plugins.calibrate.lora import LoraState
    meta = json.loads((context_dir(home, "tiny") / "context.json").read_text())
    state = LoraState(_llm(model_path), context_dir(home, "tiny"), meta, ["sft"])
    return state.estimate(d)["cycles"]


def test_a_rolled_back_lora_update_leaves_the_previous_adapter_in_use(home, tiny_model, monkeypatch):
    import torch
    from llmulator_plugins.calibrate.lora import LoraState
    d = design("topk", "topk-opt")
    inputs = [inputs_for(d, "1", "ascending")]
    args = (d, inputs, _llm(tiny_model), plugins.get("profilers", "hlsim"))
    cal = plugins.get("calibrators", "sft")
    cal.calibrate(*args, context="rb", max_iters=1, tol=0.01, steps=2, lr=1e-2, threads=1,
                  guard_margin=float("inf"))
    ctx = context_dir(home, "rb")
    first = json.loads((ctx / "context.json").read_text())["adapter"]
    sha = _sha(ctx / first)
    kept = cal.apply(_llm(tiny_model), "rb").estimate([d])[0].metrics

    def wrecked(self, entries):  # a "training step" that makes the cycles exponent huge: worse on every check
        with torch.no_grad():
            g = torch.Generator().manual_seed(0)
            for n, p in self.model.named_parameters():
                if "lora_" in n and ".default" in n:
                    p.add_(torch.randn(p.shape, generator=g) * 5)
        return {"pairs": len(entries)}

    monkeypatch.setattr(LoraState, "update", wrecked)
    report = cal.calibrate(*args, context="rb", max_iters=1, tol=0.01, threads=1)
    it = report.iterations[1]
    assert it.update == "rolled back" and it.check_after > it.check_before
    assert it.ape == report.iterations[0].ape  # the restored adapter predicts exactly what it did before
    meta = json.loads((ctx / "context.json").read_text())
    assert meta["adapter"] == first and meta["rollbacks"] == 1 and _sha(ctx / first) == sha
    assert cal.apply(_llm(tiny_model), "rb").estimate([d])[0].metrics == kept


# -- bad input ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["calibrate", "hls-fpga", "topk", "topk-opt", "--calibrator", "scale", "--tol", "-5"], "--tol"),
    (["calibrate", "hls-fpga", "topk", "topk-opt", "--calibrator", "scale", "--tol", "0"], "--tol"),
    (["calibrate", "hls-fpga", "topk", "topk-opt", "--calibrator", "scale", "--budget", "0"], "--budget"),
    (["calibrate", "hls-fpga", "topk", "topk-opt", "--calibrator", "nope"], "unknown calibrator 'nope'"),
    (["calibrate", "hls-fpga", "topk", "topk-opt", "--calibrator", "scale", "--estimator", "analytical",
      "--variant", "zigzag"], "no input variant 'zigzag'"),
    (["calibrate", "hls-fpga", "topk", "topk-opt", "--calibrator", "scale", "--estimator", "analytical",
      "--context", "../x"], "bad context name"),
    (["calibrate", "hls-fpga", "topk", "topk-opt", "--calibrator", "dpo", "--estimator", "analytical"],
     "needs the llm estimator"),
    (["estimate", "hls-fpga", "topk", "topk-opt", "--context", "nope"], "unknown calibration context 'nope'"),
    (["contexts", "--remove", "nope"], "no calibration context 'nope'"),
])
def test_bad_input_exits_2_with_a_message(home, capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
