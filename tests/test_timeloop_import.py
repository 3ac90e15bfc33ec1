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
EXACT = ["00-model-conv1d-1level", "02-model-conv1d+oc-2level-tiling", "03-model-conv1d+oc-3level-bypass",
         "04-model-conv1d+oc-3levelspatial-kp", "05-mapper-conv1d+oc-3level-freebypass",
         "example-simple_weight_stationary"]


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


def test_round_trip(tmp_path):
    files = import_timeloop(_inputs(DATA / "04-model-conv1d+oc-3levelspatial-kp"), tmp_path / "a")
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
    assert "capacity_kib of Buffer" in str(e)  # the tiles (37 words) exceed the 16-word buffer
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
