"""The library as a whole: every mapping runs on its architecture and passes the functional check;
every input-dependent kernel's cost moves with its input description at fixed sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from llmulator.design import load_design
from llmulator.inputs import inputs_for, variants
from llmulator.library import entries
from llmulator_plugins.analytical.estimator import AnalyticalEstimator
from llmulator_plugins.hlsim.profiler import HlsimProfiler

ROOT = Path(__file__).resolve().parent.parent
MAPPINGS = sorted((ROOT / "mappings").glob("*.yaml"))
# a few representative designs run in the fast suite; the whole matrix is marked slow
FAST = {"gemm-ws-16x16", "conv2d-rs-eyeriss", "spmv-csr-hls-fpga", "atax-hls-fpga", "softmax-hls-fpga",
        "jacobi-2d-hls-fpga"}


def _design(mapping_file: Path):
    m = yaml.safe_load(mapping_file.read_text())["mapping"]
    arch = m.get("architecture")
    assert arch, f"{mapping_file.name}: mappings in the library name their architecture"
    return load_design(ROOT / "arch_specs" / f"{arch}.yaml", ROOT / "workloads" / f"{m['workload']}.yaml",
                       mapping_file)


def _params(files):
    return [pytest.param(f, id=f.stem, marks=() if f.stem in FAST else pytest.mark.slow) for f in files]


@pytest.mark.parametrize("mapping_file", _params(MAPPINGS))
def test_mapping_profiles_and_passes_the_functional_check(mapping_file):
    d = _design(mapping_file)
    p = HlsimProfiler().profile(d)
    assert p.functional_check == "pass", p.functional_check
    assert p.metrics["cycles"] > 0 and p.metrics["energy_pj"] > 0
    e = AnalyticalEstimator().estimate([d])[0]
    assert e.metrics["cycles"] > 0


def test_every_workload_has_at_least_one_mapping_and_a_reference():
    by_workload = {}
    for f in MAPPINGS:
        by_workload.setdefault(yaml.safe_load(f.read_text())["mapping"]["workload"], []).append(f.stem)
    for w in entries("workload"):
        assert w["name"] in by_workload, f"workload {w['name']} has no mapping"
        spec = yaml.safe_load(Path(w["path"]).read_text())["workload"]
        assert spec.get("reference"), f"workload {w['name']} has no reference"


def _input_dependent():
    out = []
    for w in entries("workload"):
        spec = yaml.safe_load(Path(w["path"]).read_text())["workload"]
        if "input-dependent" in spec.get("tags", []):
            maps = [f for f in MAPPINGS if yaml.safe_load(f.read_text())["mapping"]["workload"] == w["name"]]
            if maps:
                out.append(pytest.param(maps[0], id=w["name"],
                                        marks=() if maps[0].stem in FAST else pytest.mark.slow))
    return out


@pytest.mark.parametrize("mapping_file", _input_dependent())
def test_input_dependent_kernel_cost_moves_with_the_input_at_fixed_sizes(mapping_file):
    d = _design(mapping_file)
    vs = variants(d.workload)
    assert vs, f"{d.workload.name} is tagged input-dependent but has no input variants"
    prof = HlsimProfiler()
    base = prof.profile(d, inputs_for(d))
    assert base.functional_check == "pass"
    cycles = {}
    for v in vs:
        p = prof.profile(d, inputs_for(d, None, v))
        assert p.functional_check == "pass", (v, p.functional_check)
        cycles[v] = p.metrics["cycles"]
    assert any(c != base.metrics["cycles"] for c in cycles.values()), (base.metrics["cycles"], cycles)
