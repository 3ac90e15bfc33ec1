"""Stage 2: dataflow-specific templates — library kernels x mapping primitives x hardware variants."""

from __future__ import annotations

import copy
from functools import cache

import numpy as np
from llmulator.dataset import SampleSpec
from llmulator.inputs import variants
from llmulator.kernel import analyze
from llmulator.specs import workload_from_dict
from llmulator.yamlsrc import SourceMap

from . import library_source as lib
from .primitives import choice, perturb_architecture, sample_mapping


@cache
def _parsed(name: str, preset: str | None):
    w = lib.workload(name)
    wl = workload_from_dict(w, SourceMap(f"<library {name}>"))
    tree = analyze(wl)
    sizes = wl.sizes(preset)
    trips = {}
    for lb in tree.loops:
        try:
            trips[lb] = tree.static_trips(lb, sizes)
        except Exception:  # noqa: BLE001 - data-dependent bounds have no static count
            trips[lb] = 0.0
    shapes = {a: wl.shape(a, sizes) for a in wl.arrays}
    return wl, tree, sizes, trips, shapes


@cache
def compatible_archs(wl_name: str) -> list[str]:
    """Library architectures that provide every operator class the kernel needs."""
    _, tree, *_ = _parsed(wl_name, None)
    need = set()
    for n in tree.walk():
        st = getattr(n, "cond", None) if getattr(n, "kind", "") == "branch" else n
        if getattr(st, "kind", "") == "stmt":
            need |= {k for k in st.ops if k not in ("select",)}
    out = []
    for name in lib.architecture_names():
        have = set(lib._load("architecture")[name]["compute"]["operators"])
        ok = all(k in have or (k == "mac" and {"mul", "add"} <= have) for k in need)
        if ok:
            out.append(name)
    return sorted(out)


class TemplateGenerator:
    """Library kernels crossed with sampled mappings and hardware variants around library architectures."""

    name = "templates"
    stage = 2

    def sample(self, group_rng: np.random.Generator, rng: np.random.Generator) -> SampleSpec:
        wname = choice(group_rng, lib.workload_names())
        w = lib.workload(wname)
        presets = [None] + [p for p in ("mini",) if p in w.get("presets", {})]
        preset = choice(group_rng, presets)
        wl, tree, sizes, trips, shapes = _parsed(wname, preset)
        archs = compatible_archs(wname) or lib.architecture_names()
        base = lib.architecture(choice(group_rng, archs))
        expert = [m for m in lib.mappings_for(wname) if m.get("architecture") == base["name"]]
        if expert and group_rng.random() < 0.3:
            mapping = copy.deepcopy(choice(group_rng, expert))
            mapping["name"] = f"{mapping['name']}-x"
        else:
            mapping = sample_mapping(group_rng, f"{wname}-m{int(group_rng.integers(1 << 30))}", w, tree, sizes,
                                     base, trips, shapes)
        arch = perturb_architecture(rng, base)
        vs = variants(wl)
        variant = choice(rng, [None] + vs) if vs else None
        return SampleSpec(stage=2, generator=self.name, arch=arch, workload=w, mapping=mapping, preset=preset,
                          variant=variant, input_seed=int(rng.integers(1 << 20)), app=wname, hw=arch["name"],
                          input_dist=f"{wname}:{variant or 'base'}")
