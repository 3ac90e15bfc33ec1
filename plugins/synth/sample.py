"""One synthetic sample labelled by a profiler: a :class:`~llmulator.dataset.SampleSpec` -> one dataset row.

A generator turns a random-number generator into a ``SampleSpec``
(architecture, workload and mapping as plain dicts, the size preset, the input
variant and seed, and the group keys used for held-out splits). ``label``
validates it like a user's files (schemas and cross-file checks), profiles it
on its concrete inputs, and returns one flat record (``llmulator.dataset.record``):
the specs as YAML text, the prompt, the four metrics and the intermediate facts
(trip counts, II, depth, traffic per level, units) as reasoning targets.

The dataset format (``SampleSpec``, ``Rejected``, ``build_design``, ``design_of_row``)
lives in :mod:`llmulator.dataset`; the names are importable from here too, for
code written against this module.
"""

from __future__ import annotations

import json
import re
from typing import Any

from llmulator.dataset import (  # noqa: F401 - re-exported: the dataset format's home is llmulator.dataset
    METRICS,
    Rejected,
    SampleSpec,
    build_design,
    design_of_row,
    record,
    spec_of_row,
)
from llmulator.design import Design
from llmulator.errors import SpecError, UserError
from llmulator.inputs import inputs_for
from llmulator.kernel import Branch
from llmulator.render import prompt

_LOCAL_ARRAY = re.compile(r"\b(?:float|double|int|char|short|long|u?int(?:8|16|32|64)_t)\s+\w+\s*\[")
_NAME = re.compile(r"[A-Za-z_]\w*")  # the names in a subscript's constant (a scalar: `x[i + k]`)


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
    return record(spec, p, prompt(d, spec.variant), structure_stats(d))


def structure_stats(d: Design) -> dict[str, Any]:
    """Per-sample statistics for the dataset card (loop depth, op mix, pragmas, access patterns)."""
    tree = d.tree

    def depth(loop):
        return 1 + max((depth(c) for c in loop.loops()), default=0)
    ops: dict[str, float] = {}
    affine = indirect = divided = shifted = 0
    scalars = set(d.workload.scalars)
    for st, _ in d.statements_with_loops():
        for k, v in st.ops.items():
            ops[k] = ops.get(k, 0) + v
        for a in st.accesses:
            if a.indirect:
                indirect += 1
            else:
                affine += 1
            divided += any(c is not None for c in a.coarse)  # `x[i / 2]` (kernel_affine.coarse)
            shifted += any(f is not None and scalars & set(_NAME.findall(f.const)) for f in a.affine)
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
        "branches": sum(1 for n in tree.walk() if isinstance(n, Branch)),
        "op_mix_json": json.dumps(ops, sort_keys=True),
        "affine_accesses": affine, "indirect_accesses": indirect,
        "divided_subscripts": divided, "scalar_subscripts": shifted,
        "pragma_pipeline": sum(1 for lm in m.loops.values() if lm.pipeline_ii),
        "pragma_unroll": sum(1 for lm in m.loops.values() if lm.unroll and lm.unroll > 1),
        "pragma_tile": sum(1 for lm in m.loops.values() if lm.tile),
        "pragma_spatial": sum(1 for lm in m.loops.values() if lm.spatial),
        "pragma_partition": len(m.partition),
    }
