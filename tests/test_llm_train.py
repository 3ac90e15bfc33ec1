"""The LLM estimator end to end on a tiny model: train a few steps, resume, decode with confidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from llmulator import library  # noqa: E402
from llmulator.design import load_design  # noqa: E402
from llmulator_plugins.llm import codec  # noqa: E402
from llmulator_plugins.llm.estimator import LLMEstimator  # noqa: E402
from llmulator_plugins.llm.train import train  # noqa: E402
from llmulator_plugins.synth import driver  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth")
    driver.run([2], 16, out, seed=11, shard_size=8, progress=False)
    return out


def test_training_writes_a_safetensors_checkpoint_and_resumes(dataset, tmp_path):
    out = tmp_path / "m"
    s1 = train(dataset, out, pretrain_steps=2, steps=2, batch=4, save_every=2, arch=TINY, progress=False,
               eval_limit=4, threads=1)
    assert s1["step"] == 4 and (out / "model.safetensors").is_file() and (out / "tokenizer.json").is_file()
    assert [h["phase"] for h in s1["history"]] == ["pretrain", "pretrain", "sft", "sft"]
    assert s1["evals"] and all(k.startswith("mape.") for k in next(v for k, v in s1["evals"][-1].items()
                                                                   if k != "step"))
    s2 = train(dataset, out, pretrain_steps=2, steps=4, batch=4, save_every=2, arch=TINY, progress=False,
               resume=True, eval_limit=4, threads=1)
    assert s2["step"] == 6 and len(s2["history"]) == 6
    assert json.loads((out / "train_state.json").read_text())["step"] == 6


def test_a_time_limit_ends_fine_tuning_early_and_still_evaluates_and_saves(dataset, tmp_path):
    """--time-limit: far fewer steps than asked, the learning rate cooled to zero by the time fraction,
    and the last step evaluated and written like a run that used all its steps."""
    out = tmp_path / "m"
    s = train(dataset, out, pretrain_steps=1, steps=100000, batch=2, save_every=100000, arch=TINY,
              progress=False, eval_limit=2, threads=1, eval_each_epoch=False, time_limit=1.0)
    assert 2 <= s["step"] < 100001
    assert s["evals"] and s["evals"][-1]["step"] == s["step"]
    saved = json.loads((out / "train_state.json").read_text())
    assert saved["step"] == s["step"] and saved["seconds_trained"] >= 1.0


def test_the_estimator_writes_every_metric_with_confidence_and_interval(dataset, tmp_path):
    out = tmp_path / "m"
    train(dataset, out, pretrain_steps=1, steps=3, batch=4, save_every=10, arch=TINY, progress=False,
          eval_limit=2, threads=1)
    est = LLMEstimator(out)
    assert est.available() is None
    # control that depends on the input: the model's own digits (an input-independent design gets the
    # analytical prior itself, residual.copies_prior; tests/test_llm_residual.py)
    d = load_design(library.resolve("architecture", "hls-fpga"), library.resolve("workload", "bfs"),
                    library.resolve("mapping", "bfs-plain"))
    (e1, e2) = est.estimate([d, d])
    assert e1.metrics == e2.metrics  # deterministic, batched
    for m in ("cycles", "energy_pj", "power_mw", "area_um2"):
        v = e1.metrics[m]
        if m == "power_mw":  # derived: energy over the run time
            assert v == pytest.approx(e1.metrics["energy_pj"] * d.arch.clock_mhz / e1.metrics["cycles"] * 1e-3
                                      if e1.metrics["cycles"] > 0 else 0.0, rel=1e-12)
        else:
            assert v == 0 or codec.decode(codec.encode(v)) == pytest.approx(v, rel=1e-9)  # a valid 3-digit number
        # a few steps of training: far from the analytical prior, so the confidence may be capped down to 0
        assert 0 <= e1.confidence[m] <= 1
        if m in e1.interval:  # power's is dropped when the cycles interval reaches down to 0
            lo, hi = e1.interval[m]
            assert lo <= hi and (m != "power_mw" or lo <= v <= hi)


def test_a_missing_model_is_reported_not_raised(tmp_path):
    assert "no model" in LLMEstimator(tmp_path / "none").available()


def _naive_greedy(model, tok, prompt):
    """Constrained greedy decoding without a KV cache: the reference for decode_batch."""
    import torch
    from llmulator_plugins.llm.decode import allowed_ids
    from llmulator_plugins.llm.text import MARKERS
    ids = tok(prompt, add_special_tokens=False)["input_ids"]
    allowed = allowed_ids(tok)
    values = []
    with torch.inference_mode():
        for marker in MARKERS:
            ids = ids + [tok.convert_tokens_to_ids(marker)]
            chosen = []
            for allow in allowed:
                logits = model(input_ids=torch.tensor([ids])).logits[0, -1]
                best = allow[int(logits[allow].argmax())]
                ids = ids + [best]
                chosen.append(tok.convert_ids_to_tokens(best))
            values.append(codec.decode(chosen))
    return values


def test_batched_cached_decoding_matches_naive_greedy_decoding(dataset, tmp_path):
    from llmulator_plugins.llm.decode import decode_batch
    from llmulator_plugins.llm.text import METRICS, load_tokenizer, model_prompt
    from transformers import AutoModelForCausalLM
    out = tmp_path / "m"
    train(dataset, out, pretrain_steps=1, steps=6, batch=4, save_every=10, arch=TINY, progress=False,
          eval_limit=2, threads=1, hints="static")
    model, tok = AutoModelForCausalLM.from_pretrained(out).eval(), load_tokenizer(out)
    d1 = load_design(ROOT / "arch_specs/systolic-16x16.yaml", ROOT / "workloads/gemm.yaml",
                     ROOT / "mappings/gemm-ws-16x16.yaml")
    d2 = load_design(ROOT / "arch_specs/hls-fpga.yaml", ROOT / "workloads/spmv-csr.yaml",
                     ROOT / "mappings/spmv-csr-hls-fpga.yaml")
    prompts = [model_prompt(d, hints="static") for d in (d1, d2)]  # different lengths: left padding in a batch
    batched = decode_batch(model, tok, prompts)
    for p, got in zip(prompts, batched, strict=True):
        assert [got["metrics"][m] for m in METRICS] == pytest.approx(_naive_greedy(model, tok, p), rel=1e-9)


@pytest.mark.parametrize("head", ["mse", "logmse", "binned"])
def test_ablation_heads_train_from_the_same_pretrained_trunk(dataset, tmp_path, head):
    from llmulator_plugins.llm.estimator import ABLATIONS
    base = tmp_path / "base"
    train(dataset, base, pretrain_steps=2, steps=1, batch=4, save_every=10, arch=TINY, progress=False,
          eval_limit=2, threads=1, hints="none")
    assert (base / "pretrained" / "model.safetensors").is_file()
    out = tmp_path / head
    s = train(dataset, out, steps=3, batch=4, save_every=10, progress=False, eval_limit=2, threads=1, hints="none",
              head=head, init=base / "pretrained")
    assert [h["phase"] for h in s["history"]] == ["sft"] * 3  # no second pretraining
    meta = json.loads((out / "llmulator.json").read_text())
    assert meta["head"] == head and meta["hints"] == "none" and "stats" in meta
    cls = next(c for c in ABLATIONS if c.head == head)
    est = cls(out)
    assert est.available() is None
    assert "head" in LLMEstimator(out).available()  # the digits estimator refuses another head's checkpoint
    d = load_design(ROOT / "arch_specs/systolic-16x16.yaml", ROOT / "workloads/gemm.yaml",
                    ROOT / "mappings/gemm-ws-16x16.yaml")
    e = est.estimate([d])[0]
    assert all(e.metrics[m] >= 0 and e.metrics[m] == e.metrics[m] for m in ("cycles", "energy_pj", "power_mw",
                                                                             "area_um2"))
    if head == "binned":
        assert e.confidence is not None
    else:  # a regression head has no confidence of its own: only a metric far from the analytical prior gets one
        far = {n.split()[0] for n in e.notes if "analytical prior" in n}
        assert set(e.confidence or {}) <= far | {"power_mw"} and all(c <= 0.2 for c in (e.confidence or {}).values())
    assert "no model" in cls().available()  # ablations ship no model


def test_a_checkpoint_of_another_prompt_format_is_unavailable_with_the_reason(dataset, tmp_path):
    out = tmp_path / "m"
    train(dataset, out, pretrain_steps=1, steps=1, batch=4, save_every=10, arch=TINY, progress=False,
          eval_limit=1, threads=1, hints="none")
    assert LLMEstimator(out).available() is None
    (out / "llmulator.json").unlink()  # a checkpoint from before the compact prompt
    assert "retrain" in LLMEstimator(out).available()


def test_the_shipped_model_gives_the_estimate_table_an_llm_column_with_confidences(capsys):
    from llmulator.cli import main
    from llmulator_plugins.llm.estimator import DEFAULT_MODEL
    assert (DEFAULT_MODEL / "model.safetensors").is_file() and LLMEstimator(DEFAULT_MODEL).available() is None
    args = ["estimate", "systolic-16x16", "gemm", "gemm-ws-16x16"]
    assert main(args + ["--estimator", "llm", "--json"]) == 0
    (e,) = json.loads(capsys.readouterr().out)["estimates"]
    assert e["estimator"] == "llm" and set(e["confidence"]) == {"cycles", "energy_pj", "power_mw", "area_um2"}
    for m, (lo, hi) in e["interval"].items():
        assert lo <= e["metrics"][m] <= hi
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "llm" in table and "%)" in table  # the confidence is printed next to each llm value


def test_cached_prompts_written_by_another_analytical_model_are_rebuilt(dataset, tmp_path):
    """The prompt cache holds the analytical model's numbers; a cache written by another version of it
    is stale and must not reach training (it once did: the LLM learned from a superseded prior)."""
    from llmulator_plugins.analytical.estimator import VERSION
    from llmulator_plugins.llm.train import load_rows, prompts_for

    rows = load_rows(dataset)[:2]
    cache = tmp_path / "prompts-analytical.jsonl"
    cache.write_text("".join(json.dumps({"id": r["sample_id"], "hints": "analytical", "format": "prompt-v1",
                                         "static": "0.0-old", "prompt": "STALE"}) + "\n" for r in rows))
    fresh = prompts_for(rows, "analytical", cache)
    assert all(p != "STALE" and "static cycles" in p for p in fresh.values())
    assert all(json.loads(line)["static"] == VERSION for line in cache.read_text().splitlines())
