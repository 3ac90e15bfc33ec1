"""`llmulator dse`: space validation, search correctness and budget, hlsim verification, Pareto front, CLI."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from llmulator import plugins
from llmulator.cli import main
from llmulator.scoring import kendall_tau
from llmulator_plugins.dse import pareto, search
from llmulator_plugins.dse import verify as verify_mod
from llmulator_plugins.dse.evaluate import Evaluator
from llmulator_plugins.dse.run import explore
from llmulator_plugins.dse.space import load_space

ROOT = Path(__file__).resolve().parent.parent
ARCH = ROOT / "arch_specs" / "systolic-16x16.yaml"
GEMM = ROOT / "workloads" / "gemm.yaml"

SMALL = """\
space:
  version: 1
  name: tiny
  workload: gemm
  architecture: systolic-16x16
  base_mapping: gemm-ws-16x16
  preset: small
  mapping:
    loops:
      L_k: {tile: [4, 8, 16]}
      L_n: {tile: {min: 4, max: 16}}
      L_m: {tile: [16, 64]}
    order: all
  hardware:
    pe_array: {square: [8, 16]}
"""


def write(tmp_path: Path, text: str, name: str = "space.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.fixture(scope="module")
def est():
    return plugins.get("estimators", "analytical")


@pytest.fixture
def small(tmp_path):
    return load_space(write(tmp_path, SMALL), ARCH, GEMM)


# -- validation ---------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, line, words", [
    (SMALL.replace("L_k: {tile: [4, 8, 16]}", "L_kk: {tile: [4, 8, 16]}"), 10, ["unknown loop label 'L_kk'", "L_k"]),
    (SMALL.replace("tile: [16, 64]", "tile: [16, big]"), 12, ["mapping.loops.L_m.tile"]),
    (SMALL.replace("square: [8, 16]", "sqare: [8, 16]"), 15, ["unknown key 'sqare'", "square"]),
    (SMALL.replace("order: all", "order: [[L_m, L_n]]"), 13, ["not a permutation"]),
    (SMALL + "    memory: {SRAM: {capacity_kib: [64]}}\n", 16, ["unknown memory level 'SRAM'", "GLB"]),
])
def test_space_errors_exit_2_with_file_and_line(tmp_path, capsys, bad, line, words):
    p = write(tmp_path, bad)
    rc = main(["dse", str(ARCH), str(GEMM), "--space", str(p), "--no-progress", "--verify", "0"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"{p}:{line}" in err, err
    for w in words:
        assert w in err, err
    assert "Traceback" not in err


def test_expected_is_named_for_a_bad_value(tmp_path, capsys):
    p = write(tmp_path, SMALL.replace("square: [8, 16]", "square: [8, 0]"))
    assert main(["dse", str(ARCH), str(GEMM), "--space", str(p), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{p}:15" in err and "expected:" in err


def test_space_size_and_values(small):
    assert small.size == 3 * 3 * 2 * 6 * 2
    assert [d.key for d in small.dims][:3] == ["loop.L_k.tile", "loop.L_n.tile", "loop.L_m.tile"]
    assert small.dims[1].values == (4, 8, 16)  # {min 4, max 16} doubles
    pts = np.arange(small.size)
    assert (small.encode(small.decode(pts)) == pts).all()


# -- evaluation and search ----------------------------------------------------------------------
def test_vectorised_path_matches_the_estimator_one_design_at_a_time(small, est):
    fast = Evaluator(small, est)
    slow = Evaluator(small, est, force_materialise=True)
    assert fast.fast and not slow.fast
    pts = np.arange(small.size)
    a, b = fast.evaluate(pts), slow.evaluate(pts)
    assert fast.n_fast == small.size and slow.n_materialised > 0
    assert (a["valid"] == b["valid"]).all()
    v = a["valid"]
    assert v.sum() > 10 and (~v).sum() > 0  # the 8x8 array cannot take a 16 tile: skipped, not a crash
    np.testing.assert_allclose(a["area_um2"][v], b["area_um2"][v], rtol=1e-9)
    # PE-array rows (exact False): the bank replay's waits and whole words only add to estimate's figures
    for m in ("cycles", "energy_pj"):
        exact = a["exact"][v]
        np.testing.assert_allclose(a[m][v][exact], b[m][v][exact], rtol=1e-9)
        assert (a[m][v] <= b[m][v] * (1 + 1e-9)).all() and (a[m][v] >= 0.5 * b[m][v]).all()
    assert set(a["reason"][~v]) == {"PE array overflow"}


def test_exhaustive_search_finds_the_brute_force_optimum(small, est):
    res, used = search.run(Evaluator(small, est), budget=10_000)
    assert used == "exhaustive" and res["point"].size == small.size
    best = int(res["point"][np.argmin(res["objective"])])
    # brute force: every point as a checked design, priced by estimate()
    brute = []
    for p in range(small.size):
        try:
            d = small.materialise(p)
        except Exception:  # noqa: BLE001 - an invalid point
            continue
        brute.append((est.estimate([d])[0].metrics["cycles"], p))
    want = min(c for c, _ in brute)
    assert res["cycles"][res["point"] == best][0] == pytest.approx(want)
    assert best in {p for c, p in brute if c == want}


@pytest.mark.parametrize("strategy", ["random", "evolve"])
def test_sampled_search_respects_the_budget(tmp_path, est, strategy):
    space = load_space(ROOT / "spaces" / "gemm-large-systolic.yaml", ARCH, GEMM)
    assert space.size > 10_000
    calls = []
    ev = Evaluator(space, est)
    res, used = search.run(ev, budget=700, strategy=strategy, seed=3, on_chunk=calls.append)
    assert used == strategy
    assert res["point"].size == 700 == sum(calls)
    assert np.unique(res["point"]).size == 700
    assert res["valid"].any()


def test_evolve_beats_its_own_first_generation(est):
    space = load_space(ROOT / "spaces" / "gemm-large-systolic.yaml", ARCH, GEMM)
    res, _ = search.run(Evaluator(space, est), budget=2000, strategy="evolve", seed=1)
    first = res["objective"][:400]
    assert res["objective"].min() < first.min()


# -- verification -------------------------------------------------------------------------------
def test_verification_profiles_exactly_k_designs_with_hlsim(tmp_path, small, monkeypatch):
    seen = []
    real = verify_mod.profile_task

    def counting(task):
        seen.append(task["profiler"])
        return real(task)

    monkeypatch.setattr(verify_mod, "profile_task", counting)
    s = explore(small, budget=10_000, verify=3, out=tmp_path / "o", progress=False)
    assert seen == ["hlsim"] * 3
    top = [v for v in s["verified"] if v["why"] == "top"]
    assert len(top) == 3
    assert [v["predicted_rank"] for v in top] == [1, 2, 3]
    assert sorted(v["measured_rank"] for v in top) == [1, 2, 3]
    for v in top:
        assert v["measured"]["cycles"] > 0 and not v["error"]
    assert s["kendall_tau_top"] is None or -1 <= s["kendall_tau_top"] <= 1
    # a second run reuses the profiles kept in the output folder
    seen.clear()
    s2 = explore(small, budget=10_000, verify=3, out=tmp_path / "o", progress=False)
    assert seen == [] and all(v["cached"] for v in s2["verified"])
    assert [v["measured"] for v in s2["verified"]] == [v["measured"] for v in top]


def test_kendall_tau():
    assert kendall_tau(np.array([1, 2, 3, 4]), np.array([10, 20, 30, 40])) == pytest.approx(1.0)
    assert kendall_tau(np.array([1, 2, 3, 4]), np.array([4, 3, 2, 1])) == pytest.approx(-1.0)
    assert kendall_tau(np.array([1, 2, 3]), np.array([1, 3, 2])) == pytest.approx(1 / 3)


# -- Pareto -------------------------------------------------------------------------------------
def test_pareto_front_on_known_points():
    pts = np.array([
        [1, 5, 5],   # 0 front (fastest)
        [2, 2, 2],   # 1 front
        [3, 3, 3],   # 2 dominated by 1
        [5, 1, 9],   # 3 front (least energy)
        [9, 9, 1],   # 4 front (smallest)
        [2, 2, 2],   # 5 duplicate of 1: not listed twice
        [np.nan, 0, 0],  # 6 invalid
        [1, 5, 6],   # 7 dominated by 0
    ], dtype=float)
    assert pareto.front(pts).tolist() == [0, 1, 3, 4]
    rng = np.random.default_rng(0)
    r = rng.random((300, 3))
    f = set(pareto.front(r).tolist())
    for i in range(300):  # brute force
        dominated = any((r[j] <= r[i]).all() and (r[j] < r[i]).any() for j in range(300))
        assert (i in f) == (not dominated)


# -- CLI end to end -----------------------------------------------------------------------------
def test_cli_end_to_end(tmp_path, capsys):
    p = write(tmp_path, SMALL)
    out = tmp_path / "out"
    rc = main(["dse", "systolic-16x16", "gemm", "--space", str(p), "--verify", "2", "--out", str(out),
               "--no-progress", "--objective", "edp"])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "Pareto front" in text and "verified with hlsim" in text
    rows = list(csv.DictReader((out / "points.csv").open()))
    assert len(rows) == 216
    s = json.loads((out / "summary.json").read_text())
    assert s["objective"] == "edp" and s["strategy"] == "exhaustive" and s["evaluated"] == 216
    assert s["valid"] + s["invalid"] == 216 and s["invalid_reasons"]["PE array overflow"] == s["invalid"]
    valid = [r for r in rows if r["valid"] == "1"]
    edp = min(float(r["cycles"]) * float(r["energy_pj"]) for r in valid)
    assert s["best"]["cycles"] * s["best"]["energy_pj"] == pytest.approx(edp)
    assert sum(r["pareto"] == "1" for r in rows) == len(s["pareto"]) >= 1
    assert (out / "pareto.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len([v for v in s["verified"] if v["measured"]]) == 2


class _WithConfidence:
    """The analytical estimator's answers, plus a confidence that is low when L_m is tiled by 16.

    Stands in for an estimator that reports confidence (the llm one needs a trained checkpoint).
    """

    name = "analytical-with-confidence"
    version = "test"

    def __init__(self):
        self.inner = plugins.get("estimators", "analytical")

    def available(self):
        return None

    def estimate(self, designs):
        return self.inner.estimate(designs)


def test_low_confidence_designs_are_profiled_too(small):
    import attrs

    class Est(_WithConfidence):
        def estimate(self, designs):
            return [attrs.evolve(e, confidence={"cycles": 0.2 if d.mapping.loop("L_m").tile == 16 else 0.9})
                    for d, e in zip(designs, self.inner.estimate(designs), strict=True)]

    s = explore(small, Est(), budget=10_000, verify=2, low_confidence=0.5, progress=False)
    assert s["vectorised_points"] == 0 and s["materialised_points"] == s["valid"]  # one design at a time
    top = [v for v in s["verified"] if v["why"] == "top"]
    low = [v for v in s["verified"] if v["why"] == "low-confidence"]
    assert len(top) == 2 and 1 <= len(low) <= 2
    assert all(v["confidence"] == pytest.approx(0.2) and "L_m.tile=16" in v["params"] for v in low)
    assert all(v["measured"]["cycles"] > 0 for v in low)


def test_verification_on_local_worker_processes(small):
    s = explore(small, budget=10_000, verify=2, workers=2, progress=False)
    assert [v["predicted_rank"] for v in s["verified"]] == [1, 2]
    assert all(v["measured"] and v["measured"]["cycles"] > 0 for v in s["verified"])


@pytest.mark.parametrize("path", sorted((ROOT / "spaces").glob("*.yaml")), ids=lambda p: p.stem)
def test_library_spaces_load_and_price(path, est):
    import yaml
    from llmulator.library import resolve

    body = yaml.safe_load(path.read_text())["space"]
    space = load_space(path, resolve("architecture", body["architecture"]), resolve("workload", body["workload"]))
    assert space.size > 1000
    res = Evaluator(space, est).evaluate(np.arange(0, space.size, max(1, space.size // 300)))
    assert res["valid"].any() and np.isfinite(res["cycles"][res["valid"]]).all()


def test_verifying_the_conv_space_agrees_with_the_analytical_model(tmp_path):
    """`llmulator dse systolic-16x16 conv2d --space conv2d-medium-systolic --verify 3`: the best designs
    are priced by the analytical model and measured by hlsim with one loop-nest semantics; they agree
    to 0.5 % (docs/dse.md), and hlsim never reports fewer cycles than the bound PEs can deliver."""
    space = load_space(ROOT / "spaces" / "conv2d-medium-systolic.yaml", ARCH, ROOT / "workloads" / "conv2d.yaml")
    s = explore(space, budget=20_000, verify=3, out=tmp_path / "o", progress=False)
    top = [v for v in s["verified"] if v["why"] == "top"]
    assert len(top) == 3
    for v in top:
        assert not v["error"]
        assert v["measured"]["cycles"] == pytest.approx(v["predicted"]["cycles"], rel=0.005)
        d = space.materialise(v["point"])
        lanes = 1
        for lm in d.mapping.loops.values():
            if lm.spatial:
                lanes *= lm.tile
        assert v["measured"]["cycles"] >= 64 * 64 * 28 * 28 * 9 / lanes


def test_a_space_naming_a_host_file_as_its_base_mapping_shows_none_of_it(tmp_path, capsys):
    """A shared space file named a host file as `base_mapping` (an outside probe): the YAML error quoted its
    values (`password: 2024-01-01` read as a date, an integer too large). A file without a top-level `mapping:`
    key is refused before it is parsed, naming the path and the field, and nothing of its content is shown."""
    secret = tmp_path / "secret.yml"
    secret.write_text("password: 2024-01-01\napi_key: 99999999999999999999999\n")
    space = tmp_path / "space.yaml"
    space.write_text(f"space:\n  version: 1\n  name: probe\n  workload: horner\n  architecture: hls-fpga\n"
                     f"  base_mapping: {secret}\n  mapping:\n    loops:\n      L_i: {{pipeline_ii: [1, 2]}}\n")
    rc = main(["dse", "hls-fpga", str(ROOT / "tests/outside/horner.yaml"), "--space", str(space), "--verify", "0",
               "--no-progress", "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert rc == 2
    assert "space.base_mapping" in err and "is not a mapping file" in err
    assert "2024" not in out + err and "9999" not in out + err and "password" not in out + err
