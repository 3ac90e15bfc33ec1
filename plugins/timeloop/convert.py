"""A Timeloop design (``reader.TLSpec``) as llmulator's three specs, and back.

Architecture: every storage level becomes a memory level (capacity from depth x width, its ERT
energies per action as given, its instance count and X mesh); a container's spatial fan-out (Timeloop's
``dummy_storage`` level) is the instance ratio between the levels around it, and its spatial loops
join the level above it. Problem: a C loop nest over the dimensions (loop ``L_<dim>``, bound
parameter ``<dim>``) whose one statement reads every data space through its projection. Mapping:
``levels`` with the temporal factors and order, the spatial factors and keep/bypass of every level.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml
from llmulator.errors import SpecError

from .reader import TLLevel, TLSpec, err, parse_factors, parse_permutation

DTYPES = {8: "int8", 16: "int16", 32: "int32", 64: "int64"}


def ident(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_.-]", "_", str(name))
    return s if re.match(r"^[A-Za-z_]", s) else "_" + s


def _kind(lv: TLLevel, outermost: bool) -> str:
    c = lv.cls.lower()
    if "dram" in c or (outermost and lv.depth is None):
        return "dram"
    if "regfile" in c or c.endswith("rf") or "register" in c or c == "storage":
        return "regfile"
    return "sram"


def _ert(spec: TLSpec, lv: TLLevel, actions: tuple[str, ...]) -> dict[str, float] | None:
    e = spec.ert.get(lv.name)
    if e is None and spec.ert:
        raise err(lv.src, f"component {lv.name} (class {lv.cls}) has no entry in the ERT {spec.ert_src}",
                  "name", hint="a compound component needs its energies: pass the ERT Accelergy wrote for it")
    return e


def build_levels(spec: TLSpec) -> list[dict[str, Any]]:
    """The storage levels (outermost first) with the mapping applied: temporal factors (outer to inner),
    spatial factors (a container's fan-out joins the level above), keep set; checked against the
    problem (factors multiply to every dimension's bound)."""
    dims = spec.dims
    names = [lv.name for lv in spec.levels]
    per: dict[str, dict[str, Any]] = {n: {"temporal": None, "perm": [], "spatial": None, "sperm": [],
                                          "split": None, "keep": None, "bypass": None} for n in names}
    for i, m in enumerate(spec.mapping):
        if not isinstance(m, dict):
            raise err(spec.mapping_src, f"mapping entry {i} is not a mapping")
        t = str(m.get("target", ""))
        kind = str(m.get("type", "temporal"))
        if t not in per:
            raise err(m, f"mapping target '{t}' is not a level of the architecture", "target",
                      "one of " + ", ".join(names))
        if kind in ("temporal", "spatial"):
            f = parse_factors(m.get("factors"), m)
            for d in f:
                if d not in dims:
                    raise err(m, f"factor for '{d}', which is not a problem dimension", "factors",
                              "one of " + ", ".join(dims))
            perm = parse_permutation(m.get("permutation"), dims)
            if kind == "temporal":
                per[t]["temporal"], per[t]["perm"] = f, perm
            else:
                per[t]["spatial"], per[t]["sperm"], per[t]["split"] = f, perm, m.get("split")
        elif kind in ("bypass", "dataspace", "datatype"):
            if "keep" in m:
                per[t]["keep"] = [str(x) for x in m.get("keep") or []]
            if "bypass" in m:
                per[t]["bypass"] = [str(x) for x in m.get("bypass") or []]
        else:
            raise err(m, f"unknown mapping directive type '{kind}'", "type",
                      "temporal, spatial, bypass or dataspace")
    space_names = [s["name"] for s in spec.spaces]
    out: list[dict[str, Any]] = []
    for lv in spec.levels:
        p = per[lv.name]
        temporal = p["temporal"] or {}
        order_inner_first = [d for d in p["perm"] if d in dims] + [d for d in dims if d not in p["perm"]]
        order = list(reversed(order_inner_first))  # outer to inner
        tloops = [(d, temporal.get(d, 1)) for d in order]
        sp = p["spatial"] or {}
        # spatial loops in Timeloop's permutation order (innermost first; the first `split` run along X)
        sperm = [d for d in p["sperm"] if d in dims] + [d for d in dims if d not in p["sperm"]]
        sloops = [(d, sp.get(d, 1)) for d in sperm if sp.get(d, 1) > 1]
        split = None
        if p["split"] is not None:
            split = sum(1 for d in sperm[:int(p["split"])] if sp.get(d, 1) > 1)
            if split == len(sloops) and int(p["split"]) >= len(sperm):
                split = None  # all along X: Timeloop's default
        if lv.spatial_only:
            if any(n > 1 for _, n in tloops):
                raise err(p.get("src") or lv.src, f"temporal loops on the spatial container {lv.name} are not "
                          "supported", hint="put them on the storage level above")
            if not out:
                raise err(lv.src, f"spatial container {lv.name} above every storage level")
            if not sloops:
                continue  # a fan-out of 1: passes its parent's data through
            if out[-1]["spatial"] or out[-1]["fanout"]:
                # a further fan-out stage: multicast within the stage only, as Timeloop does
                out[-1]["fanout"].append({"name": lv.name, "spatial": sloops, "split": split,
                                          "instances": lv.instances, "mesh_x": lv.mesh_x})
            else:
                out[-1]["spatial"], out[-1]["split"] = sloops, split
            continue
        keep = p["keep"]
        bypass = p["bypass"] if p["bypass"] is not None else (lv.bypass or [])
        if keep is None:
            keep = lv.keep if lv.keep is not None else [s for s in space_names if s not in bypass]
        for nm in list(keep) + list(bypass):
            if nm not in space_names:
                raise err(lv.src, f"level {lv.name} keeps or bypasses '{nm}', not a data space", None,
                          "one of " + ", ".join(space_names))
        out.append({"name": lv.name, "lv": lv, "temporal": [x for x in tloops if x[1] > 1] or [],
                    "order": order, "spatial": sloops, "split": split if sloops else None, "fanout": [],
                    "keep": [s for s in space_names if s in keep]})
    # every dimension's factors multiply to its bound
    for d in dims:
        prod = math.prod(n for lvd in out for dd, n in lvd["temporal"] + lvd["spatial"]
                         + [x for st in lvd["fanout"] for x in st["spatial"]] if dd == d)
        if prod != spec.instance[d]:
            raise err(spec.mapping_src, f"the factors of {d} multiply to {prod}, but the problem instance "
                      f"has {d} = {spec.instance[d]}", None, f"factors whose product is {spec.instance[d]}")
    return out


def to_specs(spec: TLSpec, name: str | None = None) -> tuple[dict, dict, dict]:
    """(architecture, workload, mapping) dicts in llmulator's formats."""
    levels = build_levels(spec)
    base = ident(name or spec.problem_name)
    clock = round(1e-6 / spec.cycle_seconds, 6) if spec.cycle_seconds else 1000.0  # MHz
    comp = spec.compute
    word_bits = levels[-1]["lv"].word_bits
    mem = []
    for i, L in enumerate(levels):
        lv: TLLevel = L["lv"]
        kind = _kind(lv, i == 0)
        e = _ert(spec, lv, ("read", "write", "update", "leak")) or {}
        # Timeloop prices no latency: 0 keeps an imported design's cycles Timeloop's (the default is 1)
        m: dict[str, Any] = {"name": ident(lv.name), "kind": kind,
                             "width_bits": lv.word_bits * lv.block * lv.cluster, "latency_cycles": 0}
        if lv.cluster > 1:
            m["cluster_size"] = lv.cluster
        if lv.depth is not None and kind != "dram":
            m["capacity_kib"] = lv.depth * lv.word_bits / 8 / 1024
        elif kind != "dram":
            raise err(lv.src, f"storage level {lv.name} has no depth", "attributes", "attributes.depth")
        if lv.instances > 1:
            m["instances"] = lv.instances
        if lv.mesh_x and lv.mesh_x != lv.instances:
            m["mesh_x"] = lv.mesh_x
        if lv.attrs.get("n_banks"):
            m["banks"] = int(lv.attrs["n_banks"])
        m["word_bits"] = lv.word_bits
        if e:
            m["read_energy_pj"] = float(e.get("read", 0.0))
            m["write_energy_pj"] = float(e.get("write", e.get("read", 0.0)))
            m["update_energy_pj"] = float(e.get("update", e.get("write", 0.0)))
            m["leakage_mw"] = float(e.get("leak", 0.0)) * clock / 1000.0
        for k in ("read_bandwidth", "write_bandwidth", "shared_bandwidth"):
            if lv.attrs.get(k) is not None:
                m[k.replace("bandwidth", "bandwidth_words")] = float(lv.attrs[k])
        mem.append(m)
    macs = comp.instances
    ce = spec.ert.get(comp.name) if spec.ert else None
    if spec.ert and ce is None:
        raise err(comp.src, f"compute component {comp.name} has no entry in the ERT {spec.ert_src}", "name")
    op: dict[str, Any] = {"count": macs, "bits": word_bits if word_bits in (8, 16, 32, 64) else 32,
                          "latency_cycles": 1}
    if ce:
        op["energy_pj"] = float(ce.get("compute", ce.get("mac_random", 0.0)))
    if comp.mesh_x and comp.mesh_x != macs:
        op["mesh_x"] = comp.mesh_x
    arch = {"architecture": {
        "version": 1, "name": base + "-arch",
        "description": "Imported from Timeloop: " + ", ".join(Path(f).name for f in spec.sources),
        "clock_mhz": clock, "technology": "45nm",
        "compute": {"operators": {"mac": op}}, "memory": mem}}
    # workload: the loop nest
    dtype = DTYPES.get(word_bits, "int16")
    params = dict(spec.instance)
    arrays = {}
    index: dict[str, str] = {}
    for s in spec.spaces:
        shape, idx = [], []
        for part in s["projection"]:
            if len(part) == 1 and part[0][0] == 1:
                shape.append(part[0][1])
            else:
                shape.append(" + ".join(f"{c} * ({d} - 1)" if c != 1 else f"({d} - 1)" for c, d in part) + " + 1")
            idx.append(" + ".join(f"{c} * i_{d}" if c != 1 else f"i_{d}" for c, d in part))
        arrays[ident(s["name"])] = {"shape": shape or [1], "dtype": dtype, "role": "out" if s["rw"] else "in"}
        index[s["name"]] = "".join(f"[{x}]" for x in idx) or "[0]"
    out_s = next(s for s in spec.spaces if s["rw"])
    ins = [s for s in spec.spaces if not s["rw"]]
    rhs = " * ".join(f"{ident(s['name'])}{index[s['name']]}" for s in ins) or "1"
    body = f"{ident(out_s['name'])}{index[out_s['name']]} += {rhs};"
    lines, ind = [], ""
    for d in spec.dims:
        lines.append(f"{ind}L_{d}: for (int i_{d} = 0; i_{d} < {d}; i_{d}++) {{")
        ind += "  "
    lines.append(ind + body)
    for _ in spec.dims:
        ind = ind[:-2]
        lines.append(ind + "}")
    wl = {"workload": {"version": 1, "name": base, "description": f"Timeloop problem {spec.problem_name}",
                       "parameters": params, "arrays": arrays, "kernel": "\n".join(lines) + "\n"}}
    # mapping
    mlevels = []
    for L in levels:
        e: dict[str, Any] = {"level": ident(L["name"])}
        if L["temporal"]:
            e["temporal"] = {f"L_{d}": n for d, n in L["temporal"]}
            e["order"] = [f"L_{d}" for d in L["order"] if any(d == dd for dd, _ in L["temporal"])]
        if L["spatial"]:
            e["spatial"] = {f"L_{d}": n for d, n in L["spatial"]}
            if L["split"] is not None:
                e["split"] = L["split"]
        if L["fanout"]:
            e["fanout"] = []
            for st in L["fanout"]:
                s: dict[str, Any] = {"name": ident(st["name"]), "spatial": {f"L_{d}": n for d, n in st["spatial"]}}
                if st["split"] is not None:
                    s["split"] = st["split"]
                if st["instances"] > 1:
                    s["instances"] = st["instances"]
                if st["mesh_x"] and st["mesh_x"] != st["instances"]:
                    s["mesh_x"] = st["mesh_x"]
                e["fanout"].append(s)
        e["keep"] = [ident(k) for k in L["keep"]]
        mlevels.append(e)
    mp = {"mapping": {"version": 1, "name": base + "-map", "workload": base, "architecture": base + "-arch",
                      "levels": mlevels}}
    return arch, wl, mp


def check_names(spec: TLSpec) -> None:
    seen = set()
    for lv in spec.levels:
        if lv.name in seen:
            raise SpecError([err(lv.src, f"duplicate level name {lv.name}").diagnostics[0]])
        seen.add(lv.name)


def from_design(d) -> tuple[dict, dict, dict, dict]:
    """A Design whose mapping has ``levels`` as Timeloop v0.4 specs: (arch, problem, mapping, ERT) dicts.

    Between a level and the next inner one (or the MACs) sit containers whose spatial meshes are the
    instance ratios: one for the level's own fan-out (``spatial``), then one per ``fanout`` stage, named
    after it; each container is the target of that fan-out's spatial directive (permutation and split).
    The ERT carries every level's energies per action as the architecture gives them."""
    from llmulator_plugins.analytical import tiling

    dims, spaces, levels, mac_pj, n_mac = tiling.levels_of(d)

    def dim(label: str) -> str:  # loop L_X is Timeloop's dimension X (as import names them)
        return label[2:] if label.startswith("L_") and label[2:] else label

    dims = {dim(k): v for k, v in dims.items()}
    spaces = [tiling.Space(s.name, [[(c, dim(x)) for c, x in part] for part in s.projection], s.rw) for s in spaces]
    for L in levels:
        L.temporal = [(dim(x), n) for x, n in L.temporal]
        L.spatial = [(dim(x), n) for x, n in L.spatial]
    groups: list[tuple[Any, tiling.Level, list[tiling.Level]]] = []  # (memory level, its Level, its stages)
    mem = iter(d.arch.memory)
    for L in levels:
        if L.virtual:
            groups[-1][2].append(L)
        else:
            groups.append((next(mem), L, []))
    raw = {m["name"]: m for m in d.arch.raw.get("memory", [])}
    clock_s = 1e-6 / d.arch.clock_mhz
    nodes: list[dict] = [{"_tag": "!Container", "name": "system",
                          "attributes": {"technology": d.arch.technology, "global_cycle_seconds": clock_s}}]
    ert_tables = []
    spatial_dirs: list[dict] = []

    def directive(target: str, loops: list[tuple[str, int]], split: int | None) -> dict:
        sp = dict(loops)
        m = {"target": target, "type": "spatial", "factors": " ".join(f"{lb}={sp.get(lb, 1)}" for lb in dims),
             "permutation": [lb for lb, _ in loops] + [lb for lb in dims if lb not in sp]}
        if split is not None:
            m["split"] = split
        return m

    def mesh(ratio: int, loops: list[tuple[str, int]], split: int | None, phys: tuple[int, int] | None) -> dict:
        x, y = ratio, 1
        if phys and phys[0] * phys[1] == ratio:  # the architecture's meshes
            x, y = phys
        elif split is not None:
            lx, ly = math.prod(n for _, n in loops[:split]), math.prod(n for _, n in loops[split:])
            x, y = (lx, ly) if lx * ly == ratio else (1, ratio) if lx == 1 else (ratio, 1)
        return {"meshX": x, "meshY": y} if y > 1 else {"meshX": x}

    for i, (lv, L, stages) in enumerate(groups):
        wb = lv.width_bits // max(L.block * L.cluster, 1)
        attrs: dict[str, Any] = {"width": lv.width_bits, "datawidth": wb}
        if lv.capacity_kib is not None:
            attrs["depth"] = int(round(lv.capacity_bits / (lv.width_bits / L.cluster)))
        if L.cluster > 1:
            attrs["cluster_size"] = L.cluster
        if lv.banks > 1:
            attrs["n_banks"] = lv.banks
        for k in ("read", "write", "shared"):
            if raw.get(lv.name, {}).get(f"{k}_bandwidth_words") is not None:
                attrs[f"{k}_bandwidth"] = raw[lv.name][f"{k}_bandwidth_words"]
        cls = {"dram": "DRAM", "sram": "SRAM", "regfile": "regfile"}[lv.kind]
        nodes.append({"_tag": "!Component", "name": lv.name, "class": cls, "attributes": attrs})
        ert_tables.append({"name": f"system_top_level.{lv.name}[1..{lv.instances}]", "actions": [
            {"name": "read", "energy": L.read_pj}, {"name": "write", "energy": L.fill_pj},
            {"name": "update", "energy": L.update_pj}, {"name": "leak", "energy": L.leak_pj}]})
        # the fan-out hops down to the next level (or the MACs): the level's own, then its stages
        below = groups[i + 1][0].instances if i + 1 < len(groups) else n_mac
        hops = [(f"{groups[i + 1][0].name if i + 1 < len(groups) else 'mac'}_array", L.spatial, L.split, L.phys)]
        hops += [(st.name, st.spatial, st.split, st.phys) for st in stages]
        points = [lv.instances]
        for _name, loops, _split, _phys in hops[:-1]:
            nxt = [st.instances for st in stages][len(points) - 1]
            points.append(nxt if nxt > 1 else points[-1] * math.prod(n for _, n in loops))
        points.append(below)
        for k, (name, loops, split, phys) in enumerate(hops):
            a, b = points[k], points[k + 1]
            if b % a:
                raise SpecError(tiling._mdiag(d, ("levels",), f"level {lv.name}: {b} instances below it is not a "
                                              f"multiple of the {a} above").diagnostics)
            if b == a and not loops:
                continue
            nodes.append({"_tag": "!Container", "name": name, "spatial": mesh(b // a, loops, split, phys)})
            if loops:
                spatial_dirs.append(directive(name, loops, split))
    mac = d.arch.operators.get("mac")
    nodes.append({"_tag": "!Component", "name": "MAC", "class": "intmac",
                  "attributes": {"width": mac.bits if mac else 16}})
    ert_tables.append({"name": f"system_top_level.MAC[1..{n_mac}]", "actions": [{"name": "compute",
                                                                                  "energy": mac_pj}]})
    problem = {"problem": {"version": 0.4, "shape": {
        "name": d.workload.name, "dimensions": list(dims),
        "data_spaces": [{"name": s.name, "projection": [[[dim] if c == 1 else [dim, c] for c, dim in part]
                                                         for part in s.projection],
                         **({"read_write": True} if s.rw else {})} for s in spaces]},
        "instance": dict(dims)}}
    mapping = []
    for lv, L, _stages in groups:
        t = dict(L.temporal)
        order = [lb for lb, _ in L.temporal] + [lb for lb in dims if lb not in t]
        mapping.append({"target": lv.name, "type": "temporal",
                        "factors": " ".join(f"{lb}={t.get(lb, 1)}" for lb in dims),
                        "permutation": list(reversed(order))})
        mapping.append({"target": lv.name, "type": "dataspace", "keep": sorted(L.keep),
                        "bypass": sorted(s.name for s in spaces if s.name not in L.keep)})
    mapping += spatial_dirs
    arch = {"architecture": {"version": 0.4, "nodes": nodes}}
    return arch, problem, {"mapping": mapping}, {"ERT": {"version": "0.4", "tables": ert_tables}}


def dump_tagged(data: Any) -> str:
    """YAML with ``_tag`` keys written as Timeloop's node tags (!Container, !Component)."""
    class Dumper(yaml.SafeDumper):
        pass

    class Tagged(dict):
        pass

    def rep(dumper, obj):
        tag = obj.get("_tag")
        body = {k: v for k, v in obj.items() if k != "_tag"}
        return dumper.represent_mapping(tag, body)

    Dumper.add_representer(Tagged, rep)

    def wrap(x):
        if isinstance(x, dict):
            y = {k: wrap(v) for k, v in x.items()}
            return Tagged(y) if "_tag" in x else y
        if isinstance(x, list):
            return [wrap(v) for v in x]
        return x

    return yaml.dump(wrap(data), Dumper=Dumper, sort_keys=False, width=100)
