"""Building the LLM's training prompts: in worker processes, resumable, with the prior kept for focus sampling."""

from __future__ import annotations

import json
import math
import random
from collections import Counter

import pytest


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    from llmulator.dataset import read_records
    from llmulator_plugins.synth import driver
    out = tmp_path_factory.mktemp("prompts-data")
    driver.run([1, 2], 8, out, seed=21, shard_size=4, progress=False)
    return read_records(out)


def test_two_workers_build_the_same_prompts_as_one_and_keep_each_prior(rows, tmp_path):
    from llmulator.dataset import design_of_row
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    from llmulator_plugins.llm.train import prompt_records
    one = prompt_records(rows, "analytical", tmp_path / "a.jsonl", workers=1, chunk=3)
    two = prompt_records(rows, "analytical", tmp_path / "b.jsonl", workers=2, chunk=3)
    assert one == two and len(one) == len(rows)
    r = rows[0]
    want = AnalyticalEstimator().estimate([design_of_row(r)])[0].metrics["cycles"]
    assert one[r["sample_id"]]["prior"]["cycles"] == pytest.approx(want)


def test_a_torn_cache_line_is_dropped_and_the_rest_reused(rows, tmp_path, monkeypatch):
    from llmulator_plugins.llm import train as T
    cache = tmp_path / "p.jsonl"
    first = T.prompt_records(rows, "analytical", cache)
    lines = cache.read_text().splitlines()
    cache.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])  # killed mid-write
    made = []
    real = T._prompt_chunk
    monkeypatch.setattr(T, "_prompt_chunk", lambda job: made.extend(job[0]) or real(job))
    again = T.prompt_records(rows, "analytical", cache)
    assert again == first and len(made) == 1  # only the torn row was rebuilt
    assert all(json.loads(line)["id"] for line in cache.read_text().splitlines())


def test_hint_error_and_focus_sampling():
    from llmulator_plugins.llm.train import _batches, hint_error
    assert hint_error({"cycles": 200.0}, {"cycles": 100.0}) == pytest.approx(math.log(2))
    assert hint_error({"cycles": 200.0}, None) == math.inf
    items = list(range(10))
    weights = [5.0] + [1.0] * 9
    gen = _batches(items, 10, random.Random(0), weights)
    counts = Counter(x for _ in range(200) for x in next(gen))
    share = counts[0] / sum(counts.values())
    assert 0.28 < share < 0.42  # 5 / 14 = 0.357 expected; uniform would give 0.1
    plain = _batches(items, 5, random.Random(0))
    assert sorted(next(plain) + next(plain)) == items  # without weights: an epoch draws every item once
