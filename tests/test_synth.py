"""The data synthesizer: valid labelled samples, resumable after a kill, identical locally and on Dask."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from llmulator.cli import main
from llmulator.dataset import SPLITS, read_records, split_of
from llmulator_plugins.synth import driver
from llmulator_plugins.synth.card import write_card

ROOT = Path(__file__).resolve().parent.parent


def _rows(out):
    return sorted(read_records(out), key=lambda r: r["sample_id"])


def test_three_stages_give_labelled_samples_with_reasoning_facts(tmp_path):
    driver.run([1, 2, 3], 9, tmp_path / "d", seed=3, shard_size=2, progress=False)
    rows = _rows(tmp_path / "d")
    assert len(rows) == 9 and len({r["sample_id"] for r in rows}) == 9
    assert {r["stage"] for r in rows} == {1, 2, 3}
    for r in rows:
        assert r["cycles"] > 0 and r["energy_pj"] > 0 and r["area_um2"] > 0 and r["power_mw"] > 0
        facts = json.loads(r["facts_json"])
        assert any(k.startswith("trips.") for k in facts) and any(k.startswith("reads.") for k in facts)
        assert "### hardware" in r["prompt"] and r["workload_yaml"].startswith("workload:")
        assert split_of(r) in SPLITS
    # stage 3 samples record the mutations they went through
    assert all(r["mutations"] for r in rows if r["stage"] == 3)
    # readable with Hugging Face datasets
    import datasets
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "d" / "data" / "*.parquet"), split="train")
    assert ds.num_rows == 9 and "cycles" in ds.column_names


def test_same_seed_same_dataset_other_seed_other_dataset(tmp_path):
    driver.run([2], 4, tmp_path / "a", seed=1, shard_size=2, progress=False)
    driver.run([2], 4, tmp_path / "b", seed=1, shard_size=4, progress=False)
    driver.run([2], 4, tmp_path / "c", seed=2, shard_size=2, progress=False)
    a, b, c = _rows(tmp_path / "a"), _rows(tmp_path / "b"), _rows(tmp_path / "c")
    assert a == b  # shard size does not change the samples
    assert [r["mapping_yaml"] for r in a] != [r["mapping_yaml"] for r in c]


def test_a_killed_run_resumes_to_exactly_n_unique_samples(tmp_path):
    out = tmp_path / "k"
    cmd = [sys.executable, "-m", "llmulator.cli", "synth", "--stages", "2", "--n", "12", "--out", str(out),
           "--seed", "5", "--shard-size", "2", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and len(list((out / "data").glob("*.parquet"))) < 2:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = len(list((out / "data").glob("*.parquet")))
    assert 2 <= partial < 6, "the run should have been killed midway"
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = _rows(out)
    assert len(rows) == 12 and len({x["sample_id"] for x in rows}) == 12
    assert not list((out / "data").glob(".*.tmp"))
    # identical to a run that was never interrupted
    driver.run([2], 12, tmp_path / "whole", seed=5, shard_size=2, progress=False)
    assert rows == _rows(tmp_path / "whole")


def test_local_workers_and_a_dask_cluster_give_identical_datasets(tmp_path):
    from dask.distributed import Client, LocalCluster
    driver.run([1, 2], 6, tmp_path / "local", seed=7, shard_size=2, workers=2, progress=False)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        driver.run([1, 2], 6, tmp_path / "dask", seed=7, shard_size=2, scheduler=client, progress=False)
    assert _rows(tmp_path / "local") == _rows(tmp_path / "dask")


def test_resuming_with_other_settings_is_refused(tmp_path, capsys):
    driver.run([2], 2, tmp_path / "d", seed=0, shard_size=2, progress=False)
    rc = main(["synth", "--stages", "2", "--n", "2", "--seed", "1", "--shard-size", "2",
               "--out", str(tmp_path / "d"), "--no-progress"])
    assert rc == 2 and "use another --out folder" in capsys.readouterr().err
    driver.run([2], 4, tmp_path / "d", seed=0, shard_size=2, progress=False)  # grown
    rc = main(["synth", "--stages", "2", "--n", "2", "--seed", "0", "--shard-size", "2",
               "--out", str(tmp_path / "d"), "--no-progress"])
    assert rc == 2 and "a larger --n grows" in capsys.readouterr().err  # shrinking is refused
    assert main(["synth", "--stages", "4", "--n", "4", "--out", str(tmp_path / "x")]) == 2
    assert "--stages" in capsys.readouterr().err


def test_a_larger_n_grows_the_dataset_to_what_one_run_of_that_n_writes(tmp_path):
    # 5 samples over two stages in shards of 2: stage 1's last shard holds 1 sample and is redone whole
    driver.run([1, 2], 5, tmp_path / "g", seed=4, shard_size=2, progress=False)
    first = _rows(tmp_path / "g")
    m = driver.run([1, 2], 8, tmp_path / "g", seed=4, shard_size=2, progress=False)
    grown = _rows(tmp_path / "g")
    assert len(grown) == 8 and m["new_samples_this_run"] == 8 - 4  # the two full shards were kept
    assert all(r in grown for r in first)
    driver.run([1, 2], 8, tmp_path / "whole", seed=4, shard_size=2, progress=False)
    assert grown == _rows(tmp_path / "whole")


def test_dataset_card_reports_sizes_splits_and_distributions(tmp_path):
    driver.run([1, 2], 4, tmp_path / "d", seed=0, shard_size=2, progress=False)
    text = write_card(tmp_path / "d", tmp_path / "card.md", library=False)
    assert "| 1 | ast | 2 |" in text and "| 2 | templates | 2 |" in text
    for word in ("loop depth", "operation mix", "designs with pipeline", "indirect accesses",
                 "cycles min / median / max", "| train |", "| test_app |"):
        assert word in text
    assert (tmp_path / "card.md").read_text() == text


def test_mappings_regroup_reductions_and_overlap_nests_where_legal(monkeypatch):
    """``sample_mapping`` draws ``reduction: tree`` only on an unrolled loop that accumulates with a legal
    regrouping, and ``dataflow: true`` only on kernels of two or more top-level nests; from a generator seeded
    by the mapping's name, so the caller's generator is left as before (its later draws, and so the rest of a
    dataset of a seed, do not move) and the other fields are the ones drawn without them."""
    import numpy as np
    import yaml
    from llmulator.kernel import analyze
    from llmulator.library import resolve
    from llmulator.reduction_legality import illegal_tree
    from llmulator.specs import load_workload
    from llmulator_plugins.synth import primitives

    text = """
workload:
  version: 1
  name: w
  parameters: {N: 16}
  arrays:
    a: {shape: [N], dtype: int32, role: in}
    b: {shape: [N], dtype: int32, role: out}
  kernel: |
    int s = 0;
    L_i: for (int i = 0; i < N; i++) {
      s += a[i];
    }
    L_j: for (int j = 0; j < N; j++) {
      b[j] = a[j] * s;
    }
  reference: |
    b[:] = a * a.sum()
"""
    spec = yaml.safe_load(text)["workload"]
    tree = analyze(load_workload("w.yaml", text))
    arch = yaml.safe_load(resolve("architecture", "hls-fpga").read_text())["architecture"]
    args = (spec, tree, {"N": 16}, arch, {"L_i": 16, "L_j": 16}, {"a": (16,), "b": (16,)})
    drawn = []
    for k in range(400):
        rng = np.random.default_rng(k)
        drawn.append((primitives.sample_mapping(rng, f"w-m{k}", *args), rng.bit_generator.state))
    monkeypatch.setattr(primitives, "_overlap_and_regroup", lambda *a: None)
    trees = overlaps = 0
    for k, (m, state) in enumerate(drawn):
        rng = np.random.default_rng(k)
        plain = primitives.sample_mapping(rng, f"w-m{k}", *args)
        assert rng.bit_generator.state == state
        for label, entry in m["loops"].items():
            if entry.pop("reduction", None) == "tree":
                trees += 1
                assert entry.get("unroll", 1) >= 2 and label == "L_i"
                assert illegal_tree(SimpleNamespace(tree=tree), label) is None
        overlaps += bool(m.pop("dataflow", False))
        assert m == plain
    assert trees > 0 and 50 < overlaps < 150


def test_mappings_tile_innermost_and_non_perfect_loops_from_a_generator_of_their_own(monkeypatch):
    """Before 2026-12-07 ``sample_mapping`` tiled only loops with a perfect child, so no design of the data tiled
    an innermost loop or one like `for i { s = 0; for j ...; y[i] = s; }` (0 of 640 sampled rows). Now a fifth of
    the static, rectangular such loops of 4 or more trips get a tile that divides them, never a triangular
    (`j < i`) or data-bounded loop, never one already unrolled; the caller's generator and every other field are
    as drawn without them."""
    import numpy as np
    import yaml
    from llmulator.kernel import analyze
    from llmulator.library import resolve
    from llmulator.specs import load_workload
    from llmulator_plugins.synth import primitives

    text = """
workload:
  version: 1
  name: w
  parameters: {N: 8}
  arrays:
    A: {shape: [N, N], dtype: int32, role: in}
    n: {shape: [1], dtype: int32, role: in}
    y: {shape: [N], dtype: int32, role: out}
  kernel: |
    L_i: for (int i = 0; i < N; i++) {
      int s = 0;
      L_j: for (int j = 0; j < N; j++) { s += A[i][j]; }
      L_k: for (int k = 0; k < i; k++) { s += A[k][i]; }
      L_d: for (int d = 0; d < n[0]; d++) { s += 1; }
      y[i] = s;
    }
  reference: |
    y[:] = 0
"""
    spec = yaml.safe_load(text)["workload"]
    tree = analyze(load_workload("w.yaml", text))
    arch = yaml.safe_load(resolve("architecture", "hls-fpga").read_text())["architecture"]
    trips = {"L_i": 8, "L_j": 8, "L_k": 3.5, "L_d": 0}
    args = (spec, tree, {"N": 8}, arch, trips, {"A": (8, 8), "n": (1,), "y": (8,)})
    drawn = []
    for k in range(300):
        rng = np.random.default_rng(k)
        drawn.append((primitives.sample_mapping(rng, f"w-m{k}", *args), rng.bit_generator.state))
    monkeypatch.setattr(primitives, "_inner_tiles", lambda *a: None)
    tiled = {"L_i": 0, "L_j": 0}
    for k, (m, state) in enumerate(drawn):
        rng = np.random.default_rng(k)
        plain = primitives.sample_mapping(rng, f"w-m{k}", *args)
        assert rng.bit_generator.state == state
        for label, entry in m["loops"].items():
            if "tile" in entry and "tile" not in plain["loops"].get(label, {}):
                assert label in tiled and entry["tile"] in (2, 4) and "unroll" not in entry
                tiled[label] += 1
                del entry["tile"]
        m["loops"] = {lb: e for lb, e in m["loops"].items() if e}
        assert m == plain
    assert all(20 < n < 100 for n in tiled.values()), tiled


def test_the_grammar_never_names_a_local_like_an_array():
    """A control-dynamic program named its counter `c2` beside a count array `c2` (C's local hid the array); the
    relabel to hlsim 0.49 redrew the 4 such samples, which `validate` now refuses. Names stay apart both ways."""
    import numpy as np
    from llmulator_plugins.synth.grammar import Builder
    b = Builder(np.random.default_rng(0))
    b.array(["N"], "in", prefix="c")
    b.array(["N"], "in", prefix="c")  # c1
    b.n_locals = 0
    assert b.local("c") != "c1" and b.local("c") not in b.arrays
    b.n_locals = 1
    taken = b.local("o")  # o2, the next array's name
    assert taken == "o2" and b.array(["N"], "out") != taken
