"""Stage 1: new programs from the grammar (:mod:`.grammar`) on generated HLS-style hardware families.

Each group (program and mapping structure) draws one program from the grammar,
one hardware *family* — a generated HLS architecture (``hlsgen-<k>``: operator
counts and latencies, memory banks, ports, bandwidth and clock drawn far from
the library's ``hls-fpga``) or ``hls-fpga`` itself — and a mapping; each sample
then perturbs the hardware around its family and draws an input variant of the
program (when it declares any) and a seed. Families held out for ``test_hw``
(:func:`.splits.hw_family_held_out`) are never drawn, so the program of every
stage-1 sample is one the split rules can place cleanly.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from llmulator.dataset import Rejected, SampleSpec, hw_family_held_out

from . import library_source as lib
from .grammar import generate_program
from .primitives import choice, perturb_architecture, sample_mapping

N_HW_FAMILIES = 24


@cache
def hw_families() -> tuple[dict, ...]:
    """``hls-fpga`` and the generated families that are not held out (a fixed, seed-independent set)."""
    out = [lib.architecture("hls-fpga")]
    out += [hw_family_arch(k) for k in range(N_HW_FAMILIES) if not hw_family_held_out(f"hlsgen-{k}")]
    return tuple(out)


def hw_family_arch(k: int) -> dict:
    """Generated HLS architecture family ``hlsgen-<k>`` (a pure function of k; held-out ones serve benchmarks)."""
    a = perturb_architecture(np.random.default_rng([k, 1871]), lib.architecture("hls-fpga"), strength=2.0)
    a["name"] = f"hlsgen-{k}"
    a["description"] = f"generated HLS-style architecture family {k} (stage-1 synthetic hardware)"
    return a


class AstGenerator:
    """Grammar-generated programs on generated HLS-style hardware families."""

    name = "ast"
    stage = 1

    def sample(self, group_rng: np.random.Generator, rng: np.random.Generator) -> SampleSpec:
        import copy

        from llmulator.kernel import analyze
        from llmulator.specs import workload_from_dict
        from llmulator.yamlsrc import SourceMap

        prog = generate_program(group_rng)
        w = prog["workload"]
        wl = workload_from_dict(w, SourceMap("<stage1>"))
        tree = analyze(wl)
        sizes = wl.sizes()
        trips = {}
        for lb, lp in tree.loops.items():
            try:
                trips[lb] = 0.0 if not lp.static else tree.static_trips(lb, sizes, wl.hints)
            except Exception:  # noqa: BLE001 - a bound the static analysis cannot count: not tiled/unrolled
                trips[lb] = 0.0
        shapes = {a: wl.shape(a, sizes) for a in wl.arrays}
        base = copy.deepcopy(choice(group_rng, hw_families()))
        if not set(_ops_needed(tree)) <= set(base["compute"]["operators"]):
            raise Rejected("the hardware family lacks an operator class the program needs")
        mapping = sample_mapping(group_rng, f"{w['name']}-m", w, tree, sizes, base, trips, shapes)
        arch = perturb_architecture(rng, base, strength=0.5)
        vs = sorted(w.get("inputs", {}).get("variants", {}))
        variant = choice(rng, [None, *vs]) if vs else None
        return SampleSpec(stage=1, generator=self.name, arch=arch, workload=w, mapping=mapping,
                          variant=variant, input_seed=int(rng.integers(1 << 20)), app=w["name"], hw=arch["name"],
                          input_dist=f"{w['name']}:{variant or 'base'}", family=prog["family"])


def _ops_needed(tree) -> set[str]:
    need: set[str] = set()
    for n in tree.walk():
        st = getattr(n, "cond", None) if getattr(n, "kind", "") == "branch" else n
        if getattr(st, "kind", "") == "stmt":
            need |= {k for k in st.ops if k != "mac"}
    return need
