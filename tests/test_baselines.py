"""The learned baselines (gnn, tlp, tensetmlp): featurisation, a tiny training run, the estimator and the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from llmulator import plugins
from llmulator.cli import main
from llmulator.design import load_design
from llmulator_plugins.baselines import graph, sequence, statements
from llmulator_plugins.baselines.estimator import ESTIMATORS, GNNEstimator, TensetMLPEstimator
from llmulator_plugins.baselines.features import ARCH_DIM

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("gnn", "tlp", "tensetmlp")


def _gemm(mapping: str = "gemm-ws-16x16"):
    return load_design(ROOT / "arch_specs/systolic-16x16.yaml", ROOT / "workloads/gemm.yaml",
                       ROOT / f"mappings/{mapping}.yaml")


def test_gemm_graph_has_the_mapped_loops_and_the_statement_dataflow():
    d = _gemm()
    f = graph.featurise(d)
    # L_k and L_n are tiled by 16 < 64: two tile loops + the three kernel loops; C[m][n] += A[m][k] * B[k][n]
    assert graph.node_kinds(d) == ["loop"] * 5 + ["load", "load", "mul", "load", "add", "store"]
    assert f.x.shape == (11, graph.NODE_DIM) and f.g.shape == (ARCH_DIM,)
    edges = {tuple(e) for e in f.edges.tolist()}
    load_a, load_b, mul, load_c, add, store = range(5, 11)
    assert {(load_a, mul, graph.DATA), (load_b, mul, graph.DATA), (mul, add, graph.DATA),
            (load_c, add, graph.DATA), (add, store, graph.DATA)} <= edges
    assert {(4, i, graph.NEST) for i in range(5, 11)} <= edges  # innermost loop holds every operation
    assert {(i, i + 1, graph.NEST) for i in range(4)} <= edges  # loops nest in a chain
    # trip counts: tile loops 64/16 = 4, point loops 16, the pipelined L_m 64
    trips = [2 ** v - 1 for v in f.x[:5, len(graph.NODE_TYPES) + 3]]
    assert sorted(round(t) for t in trips) == [4, 4, 16, 16, 64]


def test_sequence_lists_the_mapping_primitives_in_order():
    kinds = [k for k, _ in sequence.steps(_gemm())]
    assert kinds == ["placement"] * 3 + ["loop", "pipeline", "loop", "tile", "spatial", "loop", "tile", "spatial",
                                         "compute", "order", "order", "order"]
    x = sequence.featurise(_gemm()).x
    assert x.shape == (len(kinds), sequence.STEP_DIM)
    assert (x[:, :len(sequence.STEP_TYPES)].sum(1) == 1).all()  # one primitive type per step


def test_statement_features_see_one_statement_with_its_four_accesses():
    x = statements.featurise(_gemm()).x
    assert x.shape == (1, statements.STMT_DIM)
    base = 2 * len(statements.OPS) + statements.CONTEXT_DIM
    present = [x[0, base + i * statements.BUFFER_DIM] for i in range(statements.MAX_BUFFERS)]
    assert present == [1, 1, 1, 1, 0]  # A, B, C read, C write
    mac = statements.OPS.index("mac")
    assert x[0, mac] == pytest.approx(1.0)  # one mac per execution (the array has mac units)
    assert x[0, len(statements.OPS) + mac] == pytest.approx(math.log2(1 + 64 ** 3))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from llmulator_plugins.synth import driver
    out = tmp_path_factory.mktemp("synth")
    driver.run([2], 16, out, seed=11, shard_size=8, progress=False)
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_a_tiny_training_run_lowers_the_loss_and_the_checkpoint_predicts(kind, dataset, tmp_path):
    pytest.importorskip("torch")
    from llmulator_plugins.baselines.train import train
    out = tmp_path / kind
    s = train(kind, dataset, out, epochs=12, batch=4, lr=3e-3, progress=False)
    losses = [h["train_loss"] for h in s["history"]]
    assert len(losses) == 12 and losses[-1] < losses[0]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["kind"] == kind and (out / "model.safetensors").is_file()
    est = next(c for c in ESTIMATORS if c.name == kind)(out)
    assert est.available() is None
    d = _gemm()
    e1, e2 = est.estimate([d, d])
    assert e1.metrics == pytest.approx(e2.metrics, rel=1e-5)  # batched: the same design, the same prediction
    for m in ("cycles", "energy_pj", "power_mw", "area_um2", "latency_us"):
        assert math.isfinite(e1.metrics[m]) and e1.metrics[m] > 0
    assert e1.metrics["latency_us"] == pytest.approx(e1.metrics["cycles"] / d.arch.clock_mhz)
    # resuming continues the same run
    s2 = train(kind, dataset, out, epochs=14, batch=4, lr=3e-3, progress=False, resume=True)
    assert s2["epoch"] == 14 and [h["train_loss"] for h in s2["history"][:12]] == losses


def test_training_is_deterministic_for_a_seed(dataset, tmp_path):
    from llmulator_plugins.baselines.train import train
    a = train("tensetmlp", dataset, tmp_path / "a", epochs=3, batch=4, seed=5, progress=False)
    b = train("tensetmlp", dataset, tmp_path / "b", epochs=3, batch=4, seed=5, progress=False)
    assert a["history"] == b["history"]


def test_a_missing_checkpoint_is_reported_not_raised(tmp_path, monkeypatch, capsys):
    est = GNNEstimator(tmp_path / "none")
    assert "no model" in est.available() and "llmulator train gnn" in est.available()
    monkeypatch.setenv("LLMULATOR_TENSETMLP_MODEL", str(tmp_path / "elsewhere"))
    assert TensetMLPEstimator().path == tmp_path / "elsewhere"
    plugins.reset()  # the registry caches built estimators: build it again under the new environment
    try:
        assert main(["estimate", "systolic-16x16", "gemm", "gemm-ws-16x16", "--estimator", "tensetmlp"]) == 2
        assert "not available" in capsys.readouterr().err
    finally:
        plugins.reset()


def test_the_train_verb_reports_bad_data_as_a_user_error(tmp_path, capsys):
    assert main(["train", "gnn", "--data", str(tmp_path / "nothing"), "--out", str(tmp_path / "m")]) == 2
    assert "no dataset" in capsys.readouterr().err


def test_estimate_shows_the_shipped_baselines(capsys):
    for cls in ESTIMATORS:
        assert cls().available() is None, f"no shipped checkpoint for {cls.name}"
    assert main(["estimate", "systolic-16x16", "gemm", "gemm-ws-16x16", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = {e["estimator"]: e["metrics"] for e in out["estimates"]}
    for k in KINDS:
        assert k in got and all(np.isfinite(v) and v > 0 for v in got[k].values())
    assert main(["estimate", "systolic-16x16", "gemm", "gemm-ws-16x16"]) == 0
    header = capsys.readouterr().out
    assert all(k in header for k in KINDS)


def test_the_train_verb_trains_a_baseline(dataset, tmp_path, capsys):
    out = tmp_path / "t"
    assert main(["train", "tensetmlp", "--data", str(dataset), "--out", str(out), "--epochs", "2",
                 "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["epochs"] == 2 and set(report["held_out"]) <= {"val", "test_app", "test_hw", "test_input"}
    assert TensetMLPEstimator(out).available() is None


def test_an_interrupted_run_resumes_to_the_same_result(dataset, tmp_path, monkeypatch):
    from llmulator_plugins.baselines import train as tr
    whole = tr.train("tensetmlp", dataset, tmp_path / "whole", epochs=6, batch=4, progress=False)
    real, calls = tr.evaluate, []

    def interrupted(*a, **k):
        calls.append(1)
        if len(calls) == 4:  # Ctrl-C during epoch 4: epochs 1-3 are saved
            raise KeyboardInterrupt
        return real(*a, **k)
    monkeypatch.setattr(tr, "evaluate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        tr.train("tensetmlp", dataset, tmp_path / "cut", epochs=6, batch=4, progress=False)
    assert json.loads((tmp_path / "cut/state/train_state.json").read_text())["epoch"] == 3
    monkeypatch.setattr(tr, "evaluate", real)
    resumed = tr.train("tensetmlp", dataset, tmp_path / "cut", epochs=6, batch=4, progress=False, resume=True)
    assert resumed["history"] == whole["history"] and resumed["final"] == whole["final"]


def test_featurising_every_kind_in_workers_matches_one_kind_at_a_time(dataset):
    """One design rebuild serves the three featurisers, in worker processes: same arrays as the plain path."""
    from llmulator_plugins.baselines.data import featurise_all, featurise_rows, load_rows
    rows = load_rows(dataset)
    together = featurise_all(list(KINDS), rows, workers=2, progress=False, chunk=5)
    for kind in KINDS:
        alone = featurise_rows(kind, rows, progress=False)
        for k in ("x", "x_off", "e", "e_off", "g", "y", "row", "ids"):
            assert np.array_equal(together[kind][k], alone[k]), (kind, k)


def test_training_runs_share_the_dataset_feature_cache(dataset, tmp_path):
    pytest.importorskip("torch")
    from llmulator_plugins.baselines.data import shared_cache
    from llmulator_plugins.baselines.train import train
    train("tensetmlp", dataset, tmp_path / "a", epochs=1, progress=False, workers=2)
    assert all(shared_cache(dataset, k).is_file() for k in KINDS)  # one pass filled every kind's cache
    stamp = shared_cache(dataset, "gnn").stat().st_mtime_ns
    train("gnn", dataset, tmp_path / "b", epochs=1, progress=False)
    assert shared_cache(dataset, "gnn").stat().st_mtime_ns == stamp  # reused, not redone


def test_a_fused_loop_is_featurised_over_its_members_trips(write):
    """conv2d's L_p with L_q fused into it runs 8 x 8 = 64 trips in tiles of 8: a tile loop of 8 trips and a
    point loop of 8 (the head alone, 8 trips, would not be strip-mined: the learned baselines crashed on it)."""
    from llmulator.library import resolve
    m = write("map.yaml", """
        mapping:
          version: 1
          name: conv-os-fused
          workload: conv2d
          loops:
            L_p: {fuse: [L_q], tile: 8, spatial: rows}
            L_k: {tile: 4, spatial: cols}
          order: [L_k, L_p, L_c, L_r, L_s]
          placement: {I: GLB, W: GLB, O: GLB}
        """)
    d = load_design(resolve("architecture", "systolic-16x16"), resolve("workload", "conv2d"), m, "mini")
    from llmulator_plugins.baselines.features import mapped_trips
    assert mapped_trips(d, "L_p") == (8.0, 8.0)
    f = graph.featurise(d)
    trips = sorted(round(2 ** v - 1) for v, kind in zip(f.x[:, len(graph.NODE_TYPES) + 3], graph.node_kinds(d),
                                                       strict=True) if kind == "loop")
    assert 8 in trips and 64 not in trips
    assert sequence.featurise(d).x.size and statements.featurise(d).x.size


def test_a_loop_with_no_expected_trips_is_flagged_not_read_silently(write):
    """A `while` on data with no hint and no declared input distribution: nothing gives its trips, the features
    read it as 1 trip, and the baselines say so with a low confidence (before: a confident-looking number)."""
    from llmulator.library import resolve
    w = write("w.yaml", """
        workload:
          version: 1
          name: halve
          parameters: {N: 32}
          arrays:
            x: {shape: [N], dtype: int32, role: in}
            c: {shape: [N], dtype: int32, role: out}
          kernel: |
            L_i: for (int i = 0; i < N; i++) {
              int v = x[i];
              int n = 0;
              L_h: while (v > 1) {
                v = v >> 1;
                n++;
              }
              c[i] = n;
            }
        """)
    m = write("m.yaml", "mapping: {version: 1, name: m, placement: {x: BRAM, c: BRAM}}")
    d = load_design(resolve("architecture", "hls-fpga"), w, m)
    from llmulator_plugins.baselines.features import unknown_trips
    assert unknown_trips(d) == ["L_h"]
    for cls in ESTIMATORS:
        (e,) = cls().estimate([d])
        assert e.confidence and max(e.confidence.values()) <= 0.2, cls.name
        assert any("no expected trip count for loop(s) L_h" in n for n in e.notes), cls.name
