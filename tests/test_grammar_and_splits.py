"""The stage-1 program grammar and the split rules.

Generated programs must be real kernels (they validate, the static analysis prices them, hlsim runs them)
covering the constructs the issue names; the splits must mean their names: a held-out application,
hardware family or input variant never reaches training, and leave-one-family-out removes a whole family.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from llmulator import plugins
from llmulator.dataset import (
    FAMILIES,
    LIBRARY_FAMILIES,
    family_of,
    hw_family,
    hw_family_held_out,
    read_records,
    split_of,
)
from llmulator_plugins.synth import driver
from llmulator_plugins.synth.grammar import TEMPLATE_FAMILY, TEMPLATES, generate_program
from llmulator_plugins.synth.sample import label
from llmulator_plugins.synth.stage1 import AstGenerator, hw_families


def test_every_library_workload_has_a_family():
    from llmulator_plugins.synth import library_source as lib
    assert set(lib.workload_names()) <= set(LIBRARY_FAMILIES)
    assert set(LIBRARY_FAMILIES.values()) == set(FAMILIES) == set(TEMPLATE_FAMILY.values())


def test_the_same_draw_gives_the_same_program_and_another_draw_another():
    a = generate_program(np.random.default_rng([1, 2]))
    b = generate_program(np.random.default_rng([1, 2]))
    c = generate_program(np.random.default_rng([1, 3]))
    assert a == b and a["workload"]["kernel"] != c["workload"]["kernel"]


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_each_template_gives_programs_hlsim_runs_with_their_family(template):
    from llmulator.kernel import analyze
    from llmulator.specs import workload_from_dict
    from llmulator.yamlsrc import SourceMap
    for seed in range(3):
        prog = generate_program(np.random.default_rng([7, seed]), template)
        assert prog["family"] == TEMPLATE_FAMILY[template] and prog["templates"][0] == template
        analyze(workload_from_dict(prog["workload"], SourceMap("<t>")))  # the static analysis accepts it
    gen, prof = AstGenerator(), plugins.get("profilers", "hlsim")
    # one labelled sample through the whole path (validation, mapping, perturbed hardware, hlsim)
    for g in range(40):
        rng = np.random.default_rng([5, g])
        spec = gen.sample(rng, np.random.default_rng([5, g, 1]))
        if spec.family == TEMPLATE_FAMILY[template]:
            rec = label(spec, prof)
            assert rec["cycles"] > 0 and rec["family"] == spec.family
            return
    pytest.fail(f"no {template} program in 40 draws")


def test_the_grammar_covers_the_constructs_it_promises():
    seen: Counter = Counter()
    for s in range(300):
        k = generate_program(np.random.default_rng([11, s]))["workload"]["kernel"]
        seen["while"] += "while (" in k
        seen["geometric"] += "<<= 1" in k
        seen["expression stride"] += "+= 2 * s" in k
        seen["constant stride"] += "i += 2)" in k or "i += 4)" in k
        seen["triangular"] += "j < i;" in k
        seen["indirect"] += "[i]]" in k or "[j]]" in k
        seen["data-dependent bound"] += "j < c" in k or "[i + 1]; j++" in k
        seen["local array"] += "float buf" in k
        seen["bitwise"] += " ^ " in k or " & " in k
        seen["recurrence"] += "[i - 1];" in k or "* o" in k and "[i - 1]" in k
        seen["branch"] += "if (" in k
        seen["divided subscript"] += "/ 2]" in k or ">> 1]" in k or ">> 2) +" in k
        seen["scalar-shifted subscript"] += "[i + k" in k
    assert all(v >= 3 for v in seen.values()), seen


def test_generated_programs_never_use_a_held_out_hardware_family():
    names = [a["name"] for a in hw_families()]
    assert len(names) >= 10 and not any(hw_family_held_out(n) for n in names)


def _rec(app, hw, dist, index=0, stage=2, family=""):
    return {"app": app, "hw": hw, "input_dist": dist, "index": index, "stage": stage, "family": family,
            "sample_id": f"s{stage}-{index:07d}"}


def test_split_rules_on_hand_made_records():
    held_hw = next(f for f in ("tpu-like", "datacenter-large", "eyeriss-like") if hw_family_held_out(f))
    kept_hw = next(f for f in ("hls-fpga", "gemmini-like", "simba-like") if not hw_family_held_out(f))
    train_app = next(a for a in sorted(LIBRARY_FAMILIES) if split_of(_rec(a, kept_hw, f"{a}:base")) == "train")
    assert split_of(_rec(train_app, f"{held_hw}.v1234abcd", f"{train_app}:base")) == "test_hw"
    assert hw_family(f"{held_hw}.v1234abcd.mag") == held_hw
    # the default input distribution is never held out; some variant is
    assert split_of(_rec(train_app, kept_hw, f"{train_app}:base")) == "train"
    assert any(split_of(_rec(train_app, kept_hw, f"{train_app}:v{k}")) == "test_input" for k in range(20))
    # mutations belong to their application; leave-one-family-out comes first
    fam = LIBRARY_FAMILIES[train_app]
    assert split_of(_rec(train_app + ".mut3", kept_hw, f"{train_app}:base"), holdout_family=fam) == "test_family"
    assert family_of(_rec(train_app + ".mut3", kept_hw, "x:base")) == fam
    # val holds whole applications: every sample of one, on any hardware and input, and none of another
    val_app = next(f"g{k}" for k in range(1000) if split_of(_rec(f"g{k}", kept_hw, "x:base")) == "val")
    assert {split_of(_rec(val_app + m, hw, d, index=i)) for m in ("", ".mut2") for hw in (kept_hw, held_hw + ".v1")
            for d in ("x:base", "x:v3", "x:v7") for i in range(8)} == {"val"}
    assert {split_of(_rec(train_app, kept_hw, f"{train_app}:base", index=i)) for i in range(40)} == {"train"}


def test_on_a_generated_dataset_no_test_split_leaks_into_training(tmp_path):
    driver.run([1, 2, 3], 96, tmp_path / "d", seed=4, shard_size=8, progress=False)
    rows = read_records(tmp_path / "d")
    by = {}
    for r in rows:
        by.setdefault(split_of(r), []).append(r)
    train = by["train"]
    assert train and by.get("test_app") and by.get("test_hw")
    assert not {r["app"].split(".mut")[0] for r in by["test_app"]} & {r["app"].split(".mut")[0] for r in train}
    assert not {hw_family(r["hw"]) for r in by["test_hw"]} & {hw_family(r["hw"]) for r in train}
    assert all(r["stage"] != 1 for r in by["test_hw"])  # generated programs never meet held-out hardware
    assert not {r["input_dist"] for r in by.get("test_input", [])} & {r["input_dist"] for r in train}
    # val's applications are neither trained on nor tested on (its intervals describe unseen code)
    apps = {s: {r["app"].split(".mut")[0] for r in by.get(s, [])} for s in by}
    assert not apps.get("val", set()) & (apps["train"] | apps.get("test_app", set()))
    fam = family_of(train[0])
    train_wo = [r for r in rows if split_of(r, holdout_family=fam) == "train"]
    assert train_wo and all(family_of(r) != fam for r in train_wo)
    assert {family_of(r) for r in rows if r["stage"] == 1} <= set(FAMILIES)
