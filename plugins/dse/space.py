"""A design space: named dimensions of values over a base design, and points as integers.

The space file (schema ``llmulator/schemas/space.schema.json``) lists values
for mapping primitives (per-loop tile, spatial binding, unroll, pipeline II;
loop order; array partition factors) and hardware parameters (PE array dims,
memory capacity / bandwidth / width / banks, clock). Every dimension is a
list of choices; a point is one choice per dimension, numbered in mixed radix
so that a search can work on plain integers. ``materialise`` turns a point
into a checked ``Design``. Errors in the space file are ``SpecError`` at the
file position of the offending field (exit status 2).
"""

from __future__ import annotations

import copy
import itertools
import math
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import yaml
from llmulator import library
from llmulator.design import Design, check_design
from llmulator.errors import SpecError, UserError
from llmulator.schema import validate
from llmulator.specs import architecture_from_dict, mapping_from_dict
from llmulator.yamlsrc import SourceMap, load_yaml

# dimensions the analytical estimator's vectorised path varies within one Design
INNER_FIELDS = ("tile", "spatial", "order")
MAX_RANGE_VALUES = 4096


@attrs.frozen
class Dim:
    """One axis of the space: ``key`` names it (``L_m.tile``, ``hw.GLB.capacity_kib``, ``order``)."""

    key: str
    values: tuple[Any, ...]
    inner: bool  # varied inside one Design by the vectorised estimator path
    src: tuple[Any, ...]  # field path in the space file (for diagnostics)


@attrs.define(eq=False)
class Space:
    name: str
    file: str
    dims: list[Dim]
    arch_doc: dict[str, Any]  # the base architecture body
    mapping_doc: dict[str, Any]  # the base mapping body
    workload: Any  # llmulator.specs.Workload
    preset: str | None
    objective: str
    smap: SourceMap
    base_mapping_file: str = ""
    description: str = ""

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(d.values) for d in self.dims)

    @property
    def size(self) -> int:
        return math.prod(self.shape) if self.dims else 1

    def decode(self, idx: np.ndarray) -> np.ndarray:
        """Point numbers (B,) -> choice indices (B, D)."""
        idx = np.asarray(idx, dtype=np.int64)
        if not self.dims:
            return np.zeros((idx.shape[0], 0), dtype=np.int64)
        return np.stack(np.unravel_index(idx, self.shape), axis=1).astype(np.int64)

    def encode(self, choice: np.ndarray) -> np.ndarray:
        choice = np.asarray(choice, dtype=np.int64)
        if not self.dims:
            return np.zeros(choice.shape[0], dtype=np.int64)
        return np.ravel_multi_index(tuple(choice.T), self.shape).astype(np.int64)

    def values_of(self, point: int) -> dict[str, Any]:
        ch = self.decode(np.array([point]))[0]
        return {d.key: d.values[c] for d, c in zip(self.dims, ch, strict=True)}

    # -- building designs ---------------------------------------------------------------------
    def arch_body(self, values: dict[str, Any]) -> dict[str, Any]:
        """The base architecture with the point's hardware values applied."""
        a = copy.deepcopy(self.arch_doc)
        pe = a.get("compute", {}).get("pe_array")
        rows = values.get("hw.pe_array.square", values.get("hw.pe_array.rows"))
        cols = values.get("hw.pe_array.square", values.get("hw.pe_array.cols"))
        if pe is not None and (rows is not None or cols is not None):
            old = pe["rows"] * pe["cols"]
            pe["rows"] = int(rows if rows is not None else pe["rows"])
            pe["cols"] = int(cols if cols is not None else pe["cols"])
            new = pe["rows"] * pe["cols"]
            # per-PE resources follow the array: units and memory instances that equalled the PE count
            for op in a["compute"]["operators"].values():
                if op.get("count") == old:
                    op["count"] = new
            for m in a["memory"]:
                if m.get("instances") == old:
                    m["instances"] = new
        for m in a["memory"]:
            for f in ("capacity_kib", "bandwidth_bytes_per_cycle", "width_bits", "banks"):
                k = f"hw.{m['name']}.{f}"
                if k in values:
                    m[f] = values[k] if f in ("capacity_kib", "bandwidth_bytes_per_cycle") else int(values[k])
        if "hw.clock_mhz" in values:
            a["clock_mhz"] = values["hw.clock_mhz"]
        return a

    def mapping_body(self, values: dict[str, Any]) -> dict[str, Any]:
        """The base mapping with the point's mapping values applied."""
        m = copy.deepcopy(self.mapping_doc)
        loops = m.setdefault("loops", {})
        for key, v in values.items():
            parts = key.split(".")
            if parts[0] == "loop":
                lm = loops.setdefault(parts[1], {})
                if parts[2] == "spatial":
                    if v == "none":
                        lm.pop("spatial", None)
                    else:
                        lm["spatial"] = v
                else:
                    lm[parts[2]] = int(v)
            elif parts[0] == "partition":
                p = m.setdefault("partition", {}).setdefault(parts[1], {"type": "cyclic"})
                if parts[2] == "type":
                    p["type"] = v
                    if v == "complete":
                        p.pop("factor", None)
                else:
                    p[parts[2]] = int(v)
        for arr, p in m.get("partition", {}).items():
            if p.get("type") == "complete":
                p.pop("factor", None)
            elif "factor" not in p:
                m["partition"][arr]["factor"] = 1
        if "order" in values:
            m["order"] = list(values["order"])
        loops = {k: v for k, v in loops.items() if v}
        m["loops"] = loops
        m["name"] = f"{self.mapping_doc.get('name', 'mapping')}-dse"
        m["architecture"] = self.arch_doc["name"]  # informational; the base may be written for another
        return m

    def materialise(self, point: int, check: bool = True) -> Design:
        """The point as a Design; with ``check`` the cross-file checks run (SpecError when it breaks one)."""
        values = self.values_of(point)
        return self.design_from(values, check=check)

    def design_from(self, values: dict[str, Any], check: bool = True) -> Design:
        a_body = self.arch_body(values)
        m_body = self.mapping_body(values)
        a_smap, m_smap = SourceMap(f"<dse architecture {self.name}>"), SourceMap(f"<dse mapping {self.name}>")
        validate("architecture", {"architecture": a_body}, a_smap)
        validate("mapping", {"mapping": m_body}, m_smap)
        d = Design(architecture_from_dict(a_body, a_smap), self.workload, mapping_from_dict(m_body, m_smap),
                   self.preset)
        if check:
            check_design(d)
        return d

    def spec_docs(self, point: int) -> dict[str, Any]:
        """Plain-data form of a point's design (architecture/mapping bodies), for worker processes."""
        values = self.values_of(point)
        return {"architecture": self.arch_body(values), "mapping": self.mapping_body(values),
                "workload_file": self.workload.source_map.file if self.workload.source_map else "",
                "preset": self.preset}


# -- loading ------------------------------------------------------------------------------------

def resolve_space(name_or_path: str) -> Path:
    """A path, or a name in the library's ``spaces/`` folders."""
    p = Path(name_or_path)
    if p.exists() or p.suffix in (".yaml", ".yml") or "/" in name_or_path:
        if not p.is_file():
            raise UserError(f"space file not found: {name_or_path}")
        return p
    for root in library.roots():
        for cand in library.files(root, "space"):
            if cand.stem == name_or_path:
                return cand
    raise UserError(f"no space file or library space named '{name_or_path}' (library spaces live in spaces/)")


def expand(v: Any, integer: bool) -> list[Any]:
    """A values field (list or {min, max, step|times}) as a list."""
    if isinstance(v, list):
        return list(v)
    lo, hi = v["min"], v["max"]
    out: list[Any] = []
    if "step" in v:
        x = lo
        while x <= hi + 1e-9 and len(out) <= MAX_RANGE_VALUES:
            out.append(x)
            x = x + v["step"]
    else:
        times = v.get("times", 2)
        x = lo
        while x <= hi + 1e-9 and len(out) <= MAX_RANGE_VALUES:
            out.append(x)
            x = x * times
    if integer:
        out = [int(round(x)) for x in out]
    return out


def load_space(path: str | Path, arch_path: str | Path, workload_path: str | Path,
               mapping: str | None = None, preset: str | None = None) -> Space:
    """Read, validate and cross-check a space file against its base design."""
    from llmulator.specs import load_workload

    data, smap = load_yaml(path)
    validate("space", data, smap)
    s = data["space"]
    a_data, a_smap = load_yaml(arch_path)
    validate("architecture", a_data, a_smap)
    arch_doc = a_data["architecture"]
    architecture_from_dict(arch_doc, a_smap)  # reports a bad base architecture at its own lines
    wl = load_workload(workload_path)
    diags = []
    if s.get("workload") and s["workload"] != wl.name:
        diags.append(smap.diag(("space", "workload"), f"space is written for workload '{s['workload']}', "
                               f"but the workload is '{wl.name}'", f"workload: {wl.name}"))
    if s.get("architecture") and s["architecture"] != arch_doc["name"]:
        diags.append(smap.diag(("space", "architecture"), f"space is written for architecture "
                               f"'{s['architecture']}', but the architecture is '{arch_doc['name']}'",
                               f"architecture: {arch_doc['name']}"))
    if diags:
        raise SpecError(diags)
    # base mapping: CLI, then the space file, then the library pairing
    mname = mapping or s.get("base_mapping")
    if mname:
        cand = Path(mname)
        if not cand.is_absolute() and not cand.exists() and (Path(path).parent / cand).is_file():
            cand = Path(path).parent / cand
        m_path = cand if cand.is_file() else library.resolve("mapping", mname)
    else:
        pairs = [e for e in library.entries("mapping")
                 if e.get("workload") == wl.name and e.get("architecture") == arch_doc["name"]]
        if not pairs:
            raise SpecError(smap.diag(("space",), "no base mapping: the space names none and the library has no "
                                      f"mapping for workload '{wl.name}' on architecture '{arch_doc['name']}'",
                                      "base_mapping: a mapping name or file", "add base_mapping: under space:",
                                      prefer_key=True))
        m_path = Path(pairs[0]["path"])
    if library.top_key(m_path) != "mapping":  # (a space file is shared: it may name any file of this machine)
        raise SpecError(smap.diag(("space", "base_mapping") if not mapping and s.get("base_mapping") else ("space",),
                                  f"base mapping {m_path} is not a mapping file (no top-level `mapping:` key); its "
                                  "content is not shown", "a mapping spec's file", prefer_key=True))
    m_data, m_smap = load_yaml(m_path)
    validate("mapping", m_data, m_smap)
    mapping_doc = m_data["mapping"]
    preset = preset or s.get("preset") or mapping_doc.get("preset")
    if preset is not None and preset not in wl.presets:
        raise SpecError(smap.diag(("space", "preset"), f"unknown size preset '{preset}' of workload '{wl.name}'",
                                  "one of: " + (", ".join(sorted(wl.presets)) or "(none)")))
    base = Design(architecture_from_dict(arch_doc, a_smap), wl, mapping_from_dict(mapping_doc, m_smap), preset)
    dims = _dims(s, smap, base, arch_doc)
    return Space(name=s["name"], file=str(path), dims=dims, arch_doc=arch_doc, mapping_doc=mapping_doc,
                 workload=wl, preset=preset, objective=s.get("objective", "cycles"), smap=smap,
                 base_mapping_file=str(m_path), description=s.get("description", ""))


def _dims(s: dict[str, Any], smap: SourceMap, base: Design, arch_doc: dict[str, Any]) -> list[Dim]:
    from llmulator.design_checks import _close

    dims: list[Dim] = []
    diags = []
    tree = base.tree
    labels = [lb for lb in tree.loops if not lb.startswith("_")]
    mp = s.get("mapping", {})
    for label, fields in mp.get("loops", {}).items():
        at = ("space", "mapping", "loops", label)
        if label not in tree.loops:
            diags.append(smap.diag(at, f"unknown loop label '{label}'", "one of: " + ", ".join(labels),
                                   _close(label, labels), prefer_key=True))
            continue
        for f in ("tile", "spatial", "unroll", "pipeline_ii"):
            if f not in fields:
                continue
            vals = fields[f] if f == "spatial" else expand(fields[f], integer=True)
            if f == "tile":
                bound = base.trips(label)
                too_big = [v for v in vals if v > bound]
                if too_big and len(too_big) == len(vals):
                    diags.append(smap.diag(at + (f,), f"every tile of loop {label} is larger than its bound "
                                           f"({bound:g} iterations at this size)", f"tiles from 1 to {bound:g}"))
            if f == "spatial" and any(v != "none" for v in vals) and base.arch.pe_array is None:
                diags.append(smap.diag(at + (f,), f"architecture '{base.arch.name}' has no PE array to bind "
                                       "loops to", "spatial: [none]"))
            dims.append(Dim(f"loop.{label}.{f}", tuple(vals), f in INNER_FIELDS, at + (f,)))
    if "order" in mp:
        at = ("space", "mapping", "order")
        band = _band(base)
        if mp["order"] == "all":
            if not band:
                diags.append(smap.diag(at, "order: all needs a perfect loop nest (one band of loops)",
                                       "a list of orders"))
                orders = []
            else:
                orders = [list(p) for p in itertools.permutations(band)]
        else:
            orders = mp["order"]
            for i, o in enumerate(orders):
                bad = [lb for lb in o if lb not in tree.loops]
                if bad:
                    diags.append(smap.diag(at + (i,), f"unknown loop label '{bad[0]}' in order",
                                           "labels of one perfect loop band: " + ", ".join(band or labels),
                                           _close(bad[0], labels)))
                elif band and sorted(o) != sorted(band):
                    diags.append(smap.diag(at + (i,), f"order {o} is not a permutation of the band "
                                           f"{' > '.join(band)}", "every loop of the band once"))
        if orders:
            dims.append(Dim("order", tuple(tuple(o) for o in orders), True, at))
    arrays = list(base.workload.arrays)
    for arr, fields in mp.get("partition", {}).items():
        at = ("space", "mapping", "partition", arr)
        if arr not in arrays:
            diags.append(smap.diag(at, f"unknown array '{arr}'", "one of: " + ", ".join(arrays),
                                   _close(arr, arrays), prefer_key=True))
            continue
        if "type" in fields:
            dims.append(Dim(f"partition.{arr}.type", tuple(fields["type"]), False, at + ("type",)))
        if "factor" in fields:
            dims.append(Dim(f"partition.{arr}.factor", tuple(expand(fields["factor"], True)), False,
                            at + ("factor",)))
        if "dim" in fields:
            dims.append(Dim(f"partition.{arr}.dim", (fields["dim"],), False, at + ("dim",)))
    dims += hardware_dims(s.get("hardware") or {}, base.arch, arch_doc, smap, diags)
    for d in dims:
        if len(d.values) > MAX_RANGE_VALUES:
            diags.append(smap.diag(d.src, f"{d.key} expands to more than {MAX_RANGE_VALUES} values",
                                   "a coarser step or a list"))
    if diags:
        raise SpecError(diags)
    return dims


def hardware_dims(hw: dict[str, Any], arch, arch_doc: dict[str, Any], smap: SourceMap,
                  diags: list) -> list[Dim]:
    """The dimensions of a space's ``hardware:`` section (PE array, memory fields, clock) on ``arch``;
    diagnostics for bad fields are appended to ``diags``. Shared by a design's space (``_dims``) and
    the whole-network hardware search (``llmulator_plugins.network.archsearch``)."""
    from llmulator.design_checks import _close

    dims: list[Dim] = []
    pe = hw.get("pe_array", {})
    if pe:
        at = ("space", "hardware", "pe_array")
        if arch.pe_array is None:
            diags.append(smap.diag(at, f"architecture '{arch.name}' has no PE array", "no pe_array here",
                                   prefer_key=True))
        elif "square" in pe and ("rows" in pe or "cols" in pe):
            diags.append(smap.diag(at + ("square",), "square cannot be combined with rows or cols",
                                   "either square, or rows and/or cols", prefer_key=True))
        for f in ("square", "rows", "cols"):
            if f in pe:
                dims.append(Dim(f"hw.pe_array.{f}", tuple(expand(pe[f], True)), False, at + (f,)))
    levels = [m["name"] for m in arch_doc["memory"]]
    for lvl, fields in (hw.get("memory") or {}).items():
        at = ("space", "hardware", "memory", lvl)
        if lvl not in levels:
            diags.append(smap.diag(at, f"unknown memory level '{lvl}'", "one of: " + ", ".join(levels),
                                   _close(lvl, levels), prefer_key=True))
            continue
        kind = next(m["kind"] for m in arch_doc["memory"] if m["name"] == lvl)
        for f in ("capacity_kib", "bandwidth_bytes_per_cycle", "width_bits", "banks"):
            if f not in fields:
                continue
            if f == "capacity_kib" and kind == "dram":
                diags.append(smap.diag(at + (f,), f"level '{lvl}' is DRAM, which has no capacity here",
                                       "capacity of an on-chip level", prefer_key=True))
                continue
            integer = f in ("width_bits", "banks")
            dims.append(Dim(f"hw.{lvl}.{f}", tuple(expand(fields[f], integer)), False, at + (f,)))
    if "clock_mhz" in hw:
        dims.append(Dim("hw.clock_mhz", tuple(expand(hw["clock_mhz"], False)), False,
                        ("space", "hardware", "clock_mhz")))
    return dims


def _band(d: Design) -> list[str]:
    tops = d.tree.top_loops()
    if len(tops) != 1:
        return []
    band = tops[0].band()
    return [lp.label for lp in band]


def yaml_text(kind: str, body: dict[str, Any]) -> str:
    return yaml.safe_dump({kind: body}, sort_keys=False, width=100)
