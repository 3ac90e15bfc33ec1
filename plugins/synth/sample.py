"""One synthetic sample: a design as three spec documents, labelled by a profiler.

A generator turns a random-number generator into a :class:`SampleSpec`
(architecture, workload and mapping as plain dicts, the size preset, the input
variant and seed, and the group keys used for held-out splits). ``label``
validates it like a user's files (schemas and cross-file checks), profiles it
on its concrete inputs, and returns one flat record: the specs as YAML text,
the prompt, the four metrics and the intermediate facts (trip counts, II,
depth, traffic per level, units) as reasoning targets.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs
import yaml
from llmulator.design import Design, check_design
from llmulator.errors import SpecError, UserError
from llmulator.inputs import inputs_for
from llmulator.render import prompt
from llmulator.schema import validate
from llmulator.specs import architecture_from_dict, mapping_from_dict, workload_from_dict
from llmulator.yamlsrc import SourceMap

from .splits import family_of

_LOCAL_ARRAY = re.compile(r"\b(?:float|double|int|char|short|long|u?int(?:8|16|32|64)_t)\s+\w+\s*\[")
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
METRICS = ("cycles", "energy_pj", "power_mw", "area_um2")


class Rejected(Exception):
    """The generated design is not valid or cannot be labelled; the driver draws another."""


@attrs.define
class SampleSpec:
    stage: int
    generator: str
    arch: dict[str, Any]
    workload: dict[str, Any]
    mapping: dict[str, Any]
    preset: str | None = None
    variant: str | None = None
    input_seed: int = 0
    app: str = ""  # application (held-out-application split)
    hw: str = ""  # hardware configuration id (held-out-hardware split)
    input_dist: str = "base"  # input distribution id (held-out-input split)
    family: str = ""  # application family (leave-one-family-out); library kernels: splits.LIBRARY_FAMILIES
    mutations: list[str] = attrs.field(factory=list)


def _yaml(kind: str, body: dict[str, Any]) -> str:
    return yaml.dump({kind: body}, Dumper=_DUMPER, sort_keys=False, width=100)


def build_design(spec: SampleSpec) -> Design:
    """Schema-validate and cross-check the three documents; Rejected with the reason otherwise."""
    docs = {}
    for kind, body in (("architecture", spec.arch), ("workload", spec.workload), ("mapping", spec.mapping)):
        data = {kind: body}
        smap = SourceMap(f"<synth {kind}>")
        try:
            validate(kind, data, smap)
        except SpecError as e:
            raise Rejected(f"{kind}: {e.diagnostics[0].format()}") from None
        docs[kind] = (body, smap)
    try:
        a = architecture_from_dict(*docs["architecture"])
        w = workload_from_dict(*docs["workload"])
        m = mapping_from_dict(*docs["mapping"])
        d = Design(a, w, m, spec.preset, spec.variant)
        check_design(d)
    except SpecError as e:
        raise Rejected(e.diagnostics[0].format()) from None
    return d


def label(spec: SampleSpec, profiler) -> dict[str, Any]:
    """Validate, profile and flatten one sample; Rejected if it cannot be labelled."""
    d = build_design(spec)
    try:
        inp = inputs_for(d, str(spec.input_seed), spec.variant)
        p = profiler.profile(d, inp)
    except (UserError, SpecError) as e:
        raise Rejected(str(e).splitlines()[0]) from None
    if p.functional_check.startswith("fail"):
        raise Rejected(p.functional_check)
    if not all(p.metrics.get(k, 0) > 0 for k in ("cycles", "energy_pj", "area_um2")):
        raise Rejected("a zero metric")
    facts = {k: v for k, v in p.counters.items() if k.startswith(("trips.", "reads.", "writes.", "units."))}
    facts.update({k: v for k, v in p.breakdown.items() if k.startswith(("ii.", "depth.", "cycles."))})
    rec: dict[str, Any] = {
        "stage": spec.stage, "generator": spec.generator, "app": spec.app, "hw": spec.hw,
        "input_dist": spec.input_dist, "family": spec.family or family_of({"app": spec.app}),
        "variant": spec.variant or "", "input_seed": spec.input_seed,
        "preset": spec.preset or "", "mutations": ",".join(spec.mutations),
        "architecture_yaml": _yaml("architecture", spec.arch), "workload_yaml": _yaml("workload", spec.workload),
        "mapping_yaml": _yaml("mapping", spec.mapping), "prompt": prompt(d, spec.variant),
        "facts_json": json.dumps(facts, sort_keys=True), "functional_check": p.functional_check,
        "profiler": f"{p.profiler} {p.version}",
    }
    for k in METRICS:
        rec[k] = float(p.metrics[k])
    rec.update(structure_stats(d))
    return rec


def structure_stats(d: Design) -> dict[str, Any]:
    """Per-sample statistics for the dataset card (loop depth, op mix, pragmas, access patterns)."""
    tree = d.tree

    def depth(loop):
        return 1 + max((depth(c) for c in loop.loops()), default=0)
    ops: dict[str, float] = {}
    affine = indirect = 0
    for st, _ in d.statements_with_loops():
        for k, v in st.ops.items():
            ops[k] = ops.get(k, 0) + v
        for a in st.accesses:
            if a.indirect:
                indirect += 1
            else:
                affine += 1
    m = d.mapping
    loops = list(tree.loops.values())
    return {
        "while_loops": sum(1 for lp in loops if lp.is_while),
        "geometric_loops": sum(1 for lp in loops if lp.step_op != "+"),
        "strided_loops": sum(1 for lp in loops if lp.step_op == "+" and (lp.step_text or abs(lp.step) > 1)),
        "triangular_loops": sum(1 for lp in loops if lp.depends_on_outer),
        "local_arrays": len(_LOCAL_ARRAY.findall(d.workload.kernel)),
        "loop_depth": max((depth(lp) for lp in tree.top_loops()), default=0),
        "n_loops": len(tree.loops),
        "data_dependent_loops": sum(1 for lp in tree.loops.values() if lp.data_dependent or lp.is_while),
        "branches": sum(1 for n in tree.walk() if getattr(n, "kind", "") == "branch"),
        "op_mix_json": json.dumps(ops, sort_keys=True),
        "affine_accesses": affine, "indirect_accesses": indirect,
        "pragma_pipeline": sum(1 for lm in m.loops.values() if lm.pipeline_ii),
        "pragma_unroll": sum(1 for lm in m.loops.values() if lm.unroll and lm.unroll > 1),
        "pragma_tile": sum(1 for lm in m.loops.values() if lm.tile),
        "pragma_spatial": sum(1 for lm in m.loops.values() if lm.spatial),
        "pragma_partition": len(m.partition),
    }


def spec_of_row(row: dict[str, Any]) -> SampleSpec:
    """The spec a dataset row was made from (rows store the three specs as YAML)."""
    return SampleSpec(stage=int(row["stage"]), generator=row["generator"],
                      arch=yaml.safe_load(row["architecture_yaml"])["architecture"],
                      workload=yaml.safe_load(row["workload_yaml"])["workload"],
                      mapping=yaml.safe_load(row["mapping_yaml"])["mapping"], preset=row["preset"] or None,
                      variant=row["variant"] or None)


def design_of_row(row: dict[str, Any]) -> Design:
    """Rebuild the Design of a dataset row (raises ``Rejected`` if it no longer builds)."""
    return build_design(spec_of_row(row))
