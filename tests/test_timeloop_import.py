"""Timeloop v0.4 import/export and the multi-level nest analysis against Timeloop's reference outputs
(tests/data/timeloop, vendored from Accelergy-Project/timeloop-accelergy-exercises, MIT)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from llmulator.design import load_design
from llmulator.errors import SpecError
from llmulator_plugins.analytical import tiling
from llmulator_plugins.timeloop.cli import export_timeloop, import_timeloop
from llmulator_plugins.timeloop.stats import parse_stats

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "timeloop"
# one design per rule: fan-out stages and whole-delta multicast (eyeriss_like), the translation reset on a
# stationary step (simple_output_stationary), cluster_size (simba_like), leakage of a level keeping nothing (null),
# link transfers between neighbouring MACs (dse2024-interface)
EXACT = ["00-model-conv1d-1level", "02-model-conv1d+oc-2level-tiling", "03-model-conv1d+oc-3level-bypass",
         "04-model-conv1d+oc-3levelspatial-kp", "05-mapper-conv1d+oc-3level-freebypass",
         "05-mapper-conv1d+oc-3level-null", "example-simple_weight_stationary", "example-eyeriss_like",
         "example-simple_output_stationary", "example-simba_like", "dse2024-interface"]


def _inputs(folder: Path) -> list[str]:
    return [str(p) for p in sorted(folder.iterdir()) if p.name == "parsed-processed-input.yaml"
            or p.name.endswith(".ERT.yaml") or p.name.endswith(".map.yaml")]


@pytest.mark.parametrize("case", EXACT)
def test_reference_accesses_cycles_energy(case, tmp_path):
    folder = DATA / case
    d = load_design(*import_timeloop(_inputs(folder), tmp_path))
    r = tiling.estimate(d)
    ref = parse_stats(next(folder.glob("*stats.txt")))
    for lv, info in ref["levels"].items():
        for ds, v in info["spaces"].items():
            ours = r.accesses.get(lv, {}).get(ds)
            for k in ("reads", "fills", "updates"):
                assert (ours[k] if ours else 0) == v[k], (lv, ds, k)
    assert r.cycles == ref["cycles"]
    assert r.total_energy_pj == pytest.approx(ref["energy_pj"], rel=2e-4)
    for lv, info in ref["levels"].items():  # per component (Timeloop prints them rounded to 0.01 pJ)
        theirs = sum(v["energy_pj"] for v in info["spaces"].values()) + info["leak_pj"]
        assert r.energy_pj[lv] == pytest.approx(theirs, rel=2e-3, abs=0.02), lv


def test_delta_resets_after_a_stationary_step():
    """Timeloop before #297: the first step after a reset records its translation, a zero one included, so
    a tile that stood still re-sends itself whole on its next move; equal moves keep the overlap; any other
    step (standing still after a move included) re-sends the whole tile and resets."""
    st = tiling._Delta([4, 3])
    assert [st.step(lo) for lo in [(0, 0), (0, 0), (1, 0), (2, 0), (3, 0)]] == [12, 0, 12, 3, 3]
    st = tiling._Delta([4])
    assert [st.step(lo) for lo in [(0,), (1,), (1,), (2,), (3,)]] == [4, 1, 4, 1, 1]


def test_fanout_stages_multicast_per_stage(tmp_path):
    """Eyeriss-like: Q over 14 columns, then C and S within a column. Inputs at h = 2q + s overlap between
    columns but no two whole deltas are equal, so shared_glb serves every PE its own fills; merging the
    stages into one fan-out would let PEs of different columns share reads."""
    d = load_design(*import_timeloop(_inputs(DATA / "example-eyeriss_like"), tmp_path))
    glb = next(e for e in d.mapping.levels if e["level"] == "shared_glb")
    assert glb["spatial"] == {"L_Q": 14} and glb["split"] == 1
    assert glb["fanout"] == [{"name": "inter_PE_spatial", "spatial": {"L_S": 3, "L_C": 3}, "split": 0,
                              "instances": 14}]
    r = tiling.estimate(d)
    assert r.accesses["shared_glb"]["Inputs"]["reads"] == r.accesses["ifmap_spad"]["Inputs"]["fills"] == 1354752
    dims, spaces, levels, mac_pj, n_mac = tiling.levels_of(d)
    merged = [L for L in levels if not L.virtual]
    g = next(L for L in merged if L.name == "shared_glb")
    g.spatial = g.spatial + [x for L in levels if L.virtual for x in L.spatial]
    assert tiling.analyze(dims, spaces, merged).accesses["shared_glb"]["Inputs"]["reads"] < 1354752


def test_raw_v04_files_in_any_order(tmp_path):
    raw = DATA / "00-raw-input"
    files = sorted(str(p) for p in raw.iterdir() if p.suffix == ".yaml")[::-1]
    d = load_design(*import_timeloop(files, tmp_path))
    r = tiling.estimate(d)
    assert r.accesses["Buffer"]["Outputs"] == {**r.accesses["Buffer"]["Outputs"], "reads": 32, "updates": 48}
    assert r.cycles == 48 and r.total_energy_pj == pytest.approx(115.5, rel=1e-3)


def test_terms_exposed_by_estimator(tmp_path):
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator

    d = load_design(*import_timeloop(_inputs(DATA / "04-model-conv1d+oc-3levelspatial-kp"), tmp_path))
    e = AnalyticalEstimator().estimate([d])[0]
    assert e.terms["accesses.GlobalBuffer.Inputs.reads"] == 1152 * 16
    assert e.terms["accesses.RegisterFile.Outputs.fills"] == 992 * 16
    assert e.terms["energy_pj.MAC"] == pytest.approx(41533.44)
    assert e.metrics["cycles"] == 3072


@pytest.mark.parametrize("case", ["04-model-conv1d+oc-3levelspatial-kp", "example-eyeriss_like", "example-simba_like",
                                  "dse2024-interface"])
def test_round_trip(case, tmp_path):
    files = import_timeloop(_inputs(DATA / case), tmp_path / "a")
    d1 = load_design(*files)
    tl = export_timeloop(*map(str, files), tmp_path / "tl")
    d2 = load_design(*import_timeloop([str(p) for p in tl], tmp_path / "b"))
    r1, r2 = tiling.estimate(d1), tiling.estimate(d2)
    assert r1.accesses == r2.accesses
    assert r1.total_energy_pj == pytest.approx(r2.total_energy_pj)
    assert d1.mapping.levels == d2.mapping.levels


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


ARCH = """architecture:
  version: 0.4
  nodes:
  - !Container
    name: top
    attributes: {technology: 40nm, global_cycle_seconds: 1e-9}
  - !Component
    name: Buffer
    class: regfile
    attributes: {depth: 64, width: 8, datawidth: 8}
  - !Component
    name: MACC
    class: intmac
    attributes: {width: 8}
"""
PROB = """problem:
  version: 0.4
  shape:
    name: Conv1D
    dimensions: [R, P]
    data_spaces:
    - {name: Weights, projection: [[[R]]]}
    - {name: Inputs, projection: [[[R], [P]]]}
    - {name: Outputs, projection: [[[P]]], read_write: true}
  instance: {R: 3, P: 16}
"""
MAP = """mapping:
  - target: Buffer
    type: temporal
    factors: R=3 P=16
    permutation: RP
"""


def _bad(tmp_path, arch=ARCH, prob=PROB, mp=MAP) -> SpecError:
    files = [_write(tmp_path, "a.yaml", arch), _write(tmp_path, "p.yaml", prob), _write(tmp_path, "m.yaml", mp)]
    with pytest.raises(SpecError) as ei:
        load_design(*import_timeloop(files, tmp_path / "out"))
        tiling.estimate(load_design(*[tmp_path / "out" / n for n in ("arch.yaml", "workload.yaml", "mapping.yaml")]))
    return ei.value


def test_bad_inputs_named_with_file_and_line(tmp_path):
    e = _bad(tmp_path, arch=ARCH.replace("!Component\n    name: Buffer", "!Storage\n    name: Buffer"))
    assert "unknown YAML tag !Storage" in str(e) and "a.yaml:7" in str(e)
    e = _bad(tmp_path, prob=PROB.replace("{R: 3, P: 16}", "{R: 3}"))
    assert "dimension P is missing from the problem instance" in str(e) and "p.yaml:" in str(e)
    e = _bad(tmp_path, mp=MAP.replace("P=16", "P=8"))
    assert "factors of P multiply to 8" in str(e)
    e = _bad(tmp_path, mp=MAP.replace("target: Buffer", "target: Nowhere"))
    assert "mapping target 'Nowhere' is not a level" in str(e) and "m.yaml:2" in str(e)
    e = _bad(tmp_path, arch=ARCH.replace("depth: 64", "depth: 16"))
    # the tiling's own check: level, data spaces with their tile sizes, capacity
    assert ("the tiles kept at Buffer need 37 words per instance (Inputs 18, Outputs 16, Weights 3), more than "
            "its capacity of 16 words") in str(e)
    e = _bad(tmp_path, arch=ARCH.replace("class: regfile", "class: regfile\n    sparse_optimizations: {}"))
    assert "sparse optimisations" in str(e)


def test_cli_exit_status_2(tmp_path):
    a = _write(tmp_path, "a.yaml", ARCH.replace("!Container", "!Bogus", 1))
    p = _write(tmp_path, "p.yaml", PROB)
    m = _write(tmp_path, "m.yaml", MAP)
    exe = str(Path(sys.executable).parent / "llmulator")
    r = subprocess.run([exe, "import", "timeloop", a, p, m, "--out",
                        str(tmp_path / "o")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2, r.stderr
    assert "unknown YAML tag !Bogus" in r.stderr


def test_validate_reports_unknown_level_with_file_and_field(tmp_path, capsys):
    from llmulator.cli import main

    files = import_timeloop(_inputs(DATA / "04-model-conv1d+oc-3levelspatial-kp"), tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text(files[2].read_text().replace("level: RegisterFile", "level: RegFile"))
    assert main(["validate", str(files[0]), str(files[1]), str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml:" in err and "mapping.levels[2].level: unknown memory level 'RegFile'" in err
    assert "did you mean 'RegisterFile'?" in err
    assert main(["validate", *map(str, files)]) == 0


BASE = """problem_base_ignore: &problem_base
  version: 0.4
  instance: {R: 3, P: 1}
  shape:
    name: Conv1D
    dimensions: [R, P]
    data_spaces:
    - {name: Weights, projection: [[[R]]]}
    - {name: Inputs, projection: [[[R], [P]]]}
    - {name: Outputs, projection: [[[P]]], read_write: true}
"""


def test_hierarchical_merge_include_text_and_mapper_notes(tmp_path):
    """Timeloop's front end: {{include_text(...)}} pastes a file (its anchors too); `<<<` merges
    hierarchically (the problem keeps the base's R, sets P); `<<` merges shallowly with the mapping's own
    keys winning (depth 64, not the merged 16); mapper constraints are read and reported as not imported."""
    (tmp_path / "base.yaml").write_text(BASE)
    prob = _write(tmp_path, "p.yaml", "{{include_text('base.yaml')}}\nproblem:\n  <<<: *problem_base\n"
                  "  instance: {P: 16}\n")
    arch = ARCH.replace("attributes: {depth: 64, width: 8, datawidth: 8}",
                        "attributes: {<<: {depth: 16, width: 8}, depth: 64, datawidth: 8}\n"
                        "    constraints: {temporal: {factors: [R=3]}}")
    files = [_write(tmp_path, "a.yaml", arch), prob, _write(tmp_path, "m.yaml", MAP),
             _write(tmp_path, "c.yaml", "mapspace_constraints: {targets: []}\n")]
    notes: list[str] = []
    d = load_design(*import_timeloop(files, tmp_path / "out", notes=notes))
    assert d.workload.parameters == {"R": 3, "P": 16}
    assert d.arch.memory[0].capacity_kib == pytest.approx(64 / 1024)
    assert any("a.yaml:" in n and "mapper constraints of Buffer (temporal) ignored" in n for n in notes)
    assert any("c.yaml:1" in n and "mapspace constraints (`mapspace_constraints`) ignored" in n for n in notes)
    assert "# note: " in (tmp_path / "out" / "mapping.yaml").read_text()
    assert tiling.estimate(d).accesses["Buffer"]["Outputs"]["updates"] == 48


def test_render_and_hlsim_use_the_outermost_on_chip_level(tmp_path):
    from llmulator.render import hls_c

    d = load_design(*import_timeloop(_inputs(DATA / "04-model-conv1d+oc-3levelspatial-kp"), tmp_path))
    assert {a: d.placement(a) for a in d.workload.arrays} == dict.fromkeys(("Weights", "Inputs", "Outputs"),
                                                                          "GlobalBuffer")
    c = hls_c(d)
    assert "Inputs -> GlobalBuffer (sram)" in c
    assert "note:         multi-level tiling (mapping.levels)" in c and "not rendered or simulated" in c
    from llmulator_plugins.hlsim.profiler import HlsimProfiler

    prof = HlsimProfiler()
    if prof.available() is not None:
        pytest.skip(prof.available())
    p = prof.profile(d)
    assert any(n.startswith("multi-level tiling (mapping.levels)") for n in p.notes)
