"""The Python API reference (docs/api.md) and the plugin example (docs/examples/my_estimator.py).

The reference is generated from the code; these tests fail when it is out of date, when a record
gains a field without a description, or when a YAML key it names is not in the schemas. The plugin
example in docs/plugins.md is the tested file, verbatim, and it counts loop iterations the way
hlsim does when it runs the kernel.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import attrs
import pytest
from llmulator import plugins
from llmulator.cli import main
from llmulator.design import load_design
from llmulator.library import resolve

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "examples" / "my_estimator.py"


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # attrs classes defined in it resolve their module
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def gen():
    return _load(ROOT / "scripts" / "gen_api_docs.py", "gen_api_docs")


@pytest.fixture(scope="module")
def example():
    return _load(EXAMPLE, "my_estimator")


def test_api_reference_is_up_to_date(gen):
    current = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    assert gen.render() == current, "docs/api.md is stale: run python scripts/gen_api_docs.py"


def test_api_reference_lists_every_field_of_the_records(gen):
    text = gen.render()
    for _title, recs in gen.RECORDS:
        for rec in recs:
            cls = getattr(importlib.import_module(rec.module), rec.name)
            section = text.split(f"### `{rec.name}`", 1)[1].split("\n### ", 1)[0]
            for f in attrs.fields(cls):
                assert f"| `{f.name}` | `" in section, f"{rec.name}.{f.name} is missing from docs/api.md"
    for name in ("Design", "Architecture", "Workload", "Mapping", "Estimate", "Profile"):
        assert f"### `{name}`" in text
    # the renames a plugin writer trips over are spelled out
    assert "| `architecture.compute.operators` | `design.arch.operators` |" in text


def test_a_field_without_a_description_or_with_a_wrong_yaml_key_stops_the_generator(gen, tmp_path):
    mod = tmp_path / "undocumented_records.py"
    mod.write_text('import attrs\n\n\n@attrs.define\nclass Thing:\n    """A thing."""\n\n'
                   '    documented: int  # says what it is\n    bare: int\n'
                   '    #: said above\n    above: int = 0\n')
    sys.path.insert(0, str(tmp_path))
    try:
        problems: list[str] = []
        gen.record_section(gen.Record("undocumented_records", "Thing", where={"*": "nowhere"}), problems)
        assert problems == ["undocumented_records.Thing.bare: no description (a comment on its line, "
                            "or '#:' lines above it)"]
        problems = []
        gen.record_section(gen.Record("llmulator.specs", "PEArray", yaml="architecture.compute.pe_array",
                                      where={"rows": "architecture.compute.pe_rows"}), problems)
        assert any("the schema has no YAML key architecture.compute.pe_rows" in p for p in problems)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("undocumented_records", None)


def test_api_docs_check_flag(gen, tmp_path):
    out = tmp_path / "api.md"
    assert gen.main(["-o", str(out)]) == 0
    assert gen.main(["-o", str(out), "--check"]) == 0
    out.write_text("stale\n", encoding="utf-8")
    assert gen.main(["-o", str(out), "--check"]) == 1


def test_the_plugin_example_in_the_docs_is_the_tested_file():
    doc = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- begin:example examples/my_estimator.py -->\n```python\n(.*?)```\n<!-- end:example -->",
                  doc, re.S)
    assert m, "docs/plugins.md lost its example block"
    assert m.group(1) == EXAMPLE.read_text(encoding="utf-8"), \
        "the example in docs/plugins.md differs from docs/examples/my_estimator.py: copy the file in"


def test_the_example_counts_k2mm_iterations_as_hlsim_measures_them(example):
    """Trips multiply down a nest and sibling nests add: 16x18x22 + 16x24x18 = 13,248 innermost
    iterations on k2mm (multiplying all six trip counts gave 43.8 M), and every loop's total equals
    the iterations hlsim counts when it runs the kernel."""
    d = load_design(resolve("architecture", "hls-fpga"), resolve("workload", "k2mm"),
                    resolve("mapping", "k2mm-plain"))
    counted = plugins.get("profilers", "hlsim").profile(d).counters
    mine = example.loop_iterations(d)
    assert set(mine) == set(d.tree.loops) == {k.split(".", 1)[1] for k in counted if k.startswith("iterations.")}
    for label, n in mine.items():
        assert n == counted[f"iterations.{label}"], label
    (est,) = example.MyEstimator().estimate([d])
    assert est.metrics == {"cycles": 13248.0}
    assert est.metrics["cycles"] == counted["iterations.L_k1"] + counted["iterations.L_k2"]


def test_the_example_runs_as_a_plugin_beside_the_others(example, capsys):
    plugins.reset()
    plugins.register_plugin(example, name="my_estimator")
    try:
        assert main(["estimate", "hls-fpga", "k2mm", "k2mm-plain", "--estimator", "analytical",
                     "--estimator", "my-estimator", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        est = {e["estimator"]: e for e in out["estimates"]}
        assert est["my-estimator"]["metrics"]["cycles"] == 13248
        assert set(est["analytical"]["metrics"]) >= {"cycles", "energy_pj"}
    finally:
        plugins.reset()
