"""Spec records (attrs) and loading: YAML -> schema validation -> typed records.

``load_architecture``, ``load_workload`` and ``load_mapping`` each read one file, validate it against its JSON
Schema, fill technology defaults and return a frozen record that remembers its source map, so that later
cross-file checks (``llmulator.checks``) can point at the right line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import numpy as np

from . import tech
from .errors import SpecError
from .expr import ExprError, evaluate
from .schema import validate
from .yamlsrc import SourceMap, load_yaml


@attrs.frozen
class PEArray:
    """A grid of processing elements (``architecture.compute.pe_array``): where spatial loops go."""

    rows: int
    cols: int
    interconnect: str = "broadcast"
    pipeline_depth_cycles: int = 1

    @property
    def size(self) -> int:
        """Number of PEs (rows x cols)."""
        return self.rows * self.cols


@attrs.frozen
class OperatorClass:
    """One class of functional units (``mac``, ``add``, ...) with its figures, defaults filled in."""

    name: str  # the operator class (``mac``, ``add``, ``mul``, ``div``, ``cmp``, ``exp``, ...)
    count: int
    latency_cycles: int
    bits: int
    numeric: str
    energy_pj: float
    area_um2: float
    leakage_mw: float
    defaulted: tuple[str, ...] = ()  # the figures the file left out, taken from the technology table


@attrs.frozen
class MemoryLevel:
    """One level of the memory hierarchy (DRAM, a global buffer, register files), defaults filled in."""

    name: str
    kind: str
    width_bits: int
    capacity_kib: float | None
    banks: int
    ports: int
    instances: int
    bandwidth_bytes_per_cycle: float
    latency_cycles: int
    read_energy_pj: float
    write_energy_pj: float
    leakage_mw: float
    area_um2: float
    double_buffered: bool
    defaulted: tuple[str, ...] = ()  # the figures the file left out, taken from the technology table

    @property
    def capacity_bits(self) -> float:
        """Capacity in bits (infinite for a DRAM without ``capacity_kib``)."""
        return float("inf") if self.capacity_kib is None else self.capacity_kib * 8192

    def tile_copies(self, changes):  # analytical 0.58; before, one: 2 x 32 B fit 64 B (a probe)
        """Copies of a tile held: two double-buffered where the next tile differs, else one (same tile, or sb)."""
        return np.where(self.double_buffered & np.asarray(changes, dtype=bool), 2.0, 1.0)


@attrs.frozen
class Architecture:
    """An accelerator: clock, technology, functional units, memory hierarchy and PE array."""

    name: str
    clock_mhz: float
    technology: str
    operators: dict[str, OperatorClass]  # ``design.arch.operators["mac"]``; in YAML under ``compute``
    memory: tuple[MemoryLevel, ...]
    pe_array: PEArray | None = None  # in YAML under ``compute``; None when the architecture has none
    description: str = ""
    source_map: SourceMap | None = attrs.field(default=None, eq=False, repr=False)  # for diagnostics
    raw: dict[str, Any] = attrs.field(factory=dict, eq=False, repr=False)  # the YAML as read (after validation)

    def level(self, name: str) -> MemoryLevel | None:
        """The memory level of that name, None if there is none."""
        return next((m for m in self.memory if m.name == name), None)

    def level_index(self, name: str) -> int:
        """Position of a memory level in ``memory`` (0: the outermost)."""
        return [m.name for m in self.memory].index(name)


@attrs.frozen
class ArraySpec:
    """One array of a workload: shape (expressions over parameters), element type and role."""

    name: str  # the array's name in the kernel
    shape: tuple[int | str, ...]
    dtype: str  # element type (``fp32``, ``int8``, ...; ``bits`` gives its width)
    role: str

    @property
    def bits(self) -> int:
        """Bits per element of ``dtype``."""
        return tech.DTYPE_BITS[self.dtype]


@attrs.frozen
class Workload:
    """A kernel in C with its parameters, arrays, presets, hints, inputs and NumPy reference."""

    name: str
    parameters: dict[str, int]
    arrays: dict[str, ArraySpec]  # the kernel's arrays by name
    kernel: str
    presets: dict[str, dict[str, int]] = attrs.field(factory=dict)
    scalars: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    einsum: str | None = None
    hints: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    inputs: dict[str, Any] = attrs.field(factory=dict)
    reference: str | None = None
    description: str = ""
    source_map: SourceMap | None = attrs.field(default=None, eq=False, repr=False)  # for diagnostics
    raw: dict[str, Any] = attrs.field(factory=dict, eq=False, repr=False)  # the YAML as read (after validation)
    tags: tuple[str, ...] = ()

    def sizes(self, preset: str | None = None) -> dict[str, int]:
        """Parameter values for a preset (None: the defaults)."""
        out = dict(self.parameters)
        if preset:
            if preset not in self.presets:
                known = ", ".join(sorted(self.presets)) or "none"
                raise SpecError(self._diag(("workload", "presets"), f"unknown size preset '{preset}'",
                                           f"one of: {known}"))
            out.update(self.presets[preset])
        return out

    def shape(self, array: str, sizes: dict[str, int]) -> tuple[int, ...]:
        """An array's shape at these parameter values."""
        spec = self.arrays[array]
        dims = []
        for i, d in enumerate(spec.shape):
            try:
                dims.append(int(evaluate(d, sizes)))
            except ExprError as e:
                raise SpecError(self._diag(("workload", "arrays", array, "shape", i), str(e))) from None
        return tuple(dims)

    def _diag(self, path, msg, expected="", hint=""):
        smap = self.source_map or SourceMap("<workload>")
        return smap.diag(path, msg, expected, hint)


def _as_tuple(names) -> tuple[str, ...]:
    """``tuple`` as an attrs converter. Not ``converter=tuple`` itself: attrs reads a converter's signature,
    and for a builtin that means parsing its text signature with ``tokenize``, whose regular expressions
    took ~5 ms to compile in every process that loads a design (issue 17)."""
    return tuple(names)


@attrs.frozen
class LoopMapping:
    """The primitives a mapping applies to one loop (all None: the loop as written)."""

    tile: int | None = None
    spatial: str | None = None
    unroll: int | None = None
    pipeline_ii: int | None = None
    fuse: tuple[str, ...] = attrs.field(default=(), converter=_as_tuple)  # loops flattened into this one
    reduction: str | None = None  # 'tree': unrolled copies accumulate separately and combine on exit


@attrs.frozen
class Partition:
    """How one array is split into banks."""

    type: str  # ``complete``, ``block`` or ``cyclic``
    factor: int = 1
    dim: int = 1


@attrs.frozen
class Mapping:
    """How a workload runs on an architecture: loop primitives, order, placement, partitioning."""

    name: str  # the mapping's name
    loops: dict[str, LoopMapping] = attrs.field(factory=dict)
    order: tuple[str, ...] = ()
    placement: dict[str, str] = attrs.field(factory=dict)
    partition: dict[str, Partition] = attrs.field(factory=dict)
    dataflow: bool = False
    workload: str | None = None
    preset: str | None = None
    description: str = ""  # free text
    source_map: SourceMap | None = attrs.field(default=None, eq=False, repr=False)  # for diagnostics
    architecture: str | None = None
    levels: tuple[dict[str, Any], ...] = ()  # multi-level tiling (``mapping.levels``), outermost first

    def loop(self, label: str) -> LoopMapping:
        """The primitives of one loop (an empty ``LoopMapping`` for a loop the mapping leaves alone)."""
        return self.loops.get(label, LoopMapping())


def _read(kind: str, path: str | Path, text: str | None = None) -> tuple[dict[str, Any], SourceMap]:
    data, smap = load_yaml(path, text)
    validate(kind, data, smap)
    return data[kind], smap


def architecture_from_dict(a: dict[str, Any], smap: SourceMap) -> Architecture:
    techname = a.get("technology", "45nm")
    if techname not in tech.available():
        raise SpecError(smap.diag(("architecture", "technology"), f"unknown technology '{techname}'",
                                  "one of: " + ", ".join(tech.available()),
                                  "add a table under llmulator/tech or use a listed one"))
    ops = {}
    for name, o in a["compute"]["operators"].items():
        bits, numeric = o.get("bits", 32), o.get("numeric", "int")
        d = tech.operator_defaults(techname, name, bits, numeric)
        missing = [k for k in ("latency_cycles", "energy_pj", "area_um2") if k not in o]
        if missing and d is None:
            raise SpecError(smap.diag(
                ("architecture", "compute", "operators", name),
                f"unknown operator class '{name}': technology '{techname}' has no defaults for it",
                "a known class (" + ", ".join(sorted(tech.table(techname)["operators"])) + ") or "
                "explicit " + ", ".join(missing), "give latency_cycles, energy_pj and area_um2 "
                "explicitly, or use a known class name", prefer_key=True))
        d = d or {}
        ops[name] = OperatorClass(
            name=name, count=o["count"], latency_cycles=o.get("latency_cycles", d.get("latency_cycles", 1)),
            bits=bits, numeric=numeric, energy_pj=o.get("energy_pj", d.get("energy_pj", 0.0)),
            area_um2=o.get("area_um2", d.get("area_um2", 0.0)), leakage_mw=o.get("leakage_mw", 0.0),
            defaulted=tuple(missing))
    levels = []
    for i, m in enumerate(a["memory"]):
        if m["kind"] != "dram" and "capacity_kib" not in m:
            raise SpecError(smap.diag(("architecture", "memory", i), f"memory level '{m['name']}' "
                                      "has no capacity_kib", "capacity_kib: a number of KiB",
                                      "only DRAM may omit its capacity", prefer_key=True))
        banks, ports, inst = m.get("banks", 1), m.get("ports", 1), m.get("instances", 1)
        d = tech.memory_defaults(techname, m["kind"], m.get("capacity_kib"), m["width_bits"], banks)
        bw = m.get("bandwidth_bytes_per_cycle", m["width_bits"] / 8 * banks * ports * inst)
        missing = tuple(k for k in d if k not in m)
        levels.append(MemoryLevel(
            name=m["name"], kind=m["kind"], width_bits=m["width_bits"], capacity_kib=m.get("capacity_kib"),
            banks=banks, ports=ports, instances=inst, bandwidth_bytes_per_cycle=bw,
            latency_cycles=m.get("latency_cycles", 1),
            read_energy_pj=m.get("read_energy_pj", d["read_energy_pj"]),
            write_energy_pj=m.get("write_energy_pj", m.get("read_energy_pj", d["write_energy_pj"])),  # (hlsim 0.52)
            leakage_mw=m.get("leakage_mw", d["leakage_mw"]), area_um2=m.get("area_um2", d["area_um2"]),
            double_buffered=m.get("double_buffered", True), defaulted=missing))
    names = [m.name for m in levels]
    for i, n in enumerate(names):
        if names.index(n) != i:
            raise SpecError(smap.diag(("architecture", "memory", i, "name"),
                                      f"duplicate memory level name '{n}'", "unique level names"))
    if levels[0].kind != "dram" and any(m.kind == "dram" for m in levels[1:]):
        j = next(i for i, m in enumerate(levels) if m.kind == "dram")
        raise SpecError(smap.diag(("architecture", "memory", j, "kind"),
                                  "DRAM must be the first (outermost) memory level",
                                  "levels ordered from DRAM inwards"))
    pe = a["compute"].get("pe_array")
    pe_array = PEArray(**pe) if pe else None
    return Architecture(name=a["name"], clock_mhz=float(a["clock_mhz"]), technology=techname,
                        operators=ops, memory=tuple(levels), pe_array=pe_array,
                        description=a.get("description", ""), source_map=smap, raw=a)


def load_architecture(path: str | Path, text: str | None = None) -> Architecture:
    a, smap = _read("architecture", path, text)
    return architecture_from_dict(a, smap)


def workload_from_dict(w: dict[str, Any], smap: SourceMap) -> Workload:
    arrays = {n: ArraySpec(n, tuple(s["shape"]), s["dtype"], s["role"]) for n, s in w["arrays"].items()}
    wl = Workload(name=w["name"], parameters=dict(w["parameters"]), arrays=arrays, kernel=w["kernel"],
                  presets=w.get("presets", {}), scalars=w.get("scalars", {}), einsum=w.get("einsum"),
                  hints=w.get("hints", {}), inputs=w.get("inputs", {}), reference=w.get("reference"),
                  description=w.get("description", ""), source_map=smap, raw=w, tags=tuple(w.get("tags", ())))
    names = {**wl.parameters, **{k: v["value"] for k, v in wl.scalars.items()}}
    clash = (set(wl.parameters) & set(wl.arrays)) | (set(wl.scalars) & set(wl.arrays))
    for c in sorted(clash):
        raise SpecError(smap.diag(("workload", "arrays", c), f"'{c}' is both a parameter and an array",
                                  "distinct names", prefer_key=True))
    for pname, preset in wl.presets.items():
        for k in preset:
            if k not in wl.parameters:
                raise SpecError(smap.diag(("workload", "presets", pname, k),
                                          f"preset '{pname}' sets unknown parameter '{k}'",
                                          "one of: " + ", ".join(sorted(wl.parameters)), prefer_key=True))
    for a in arrays.values():
        for i, d in enumerate(a.shape):
            try:
                v = evaluate(d, wl.parameters)
            except ExprError as e:
                raise SpecError(smap.diag(("workload", "arrays", a.name, "shape", i), str(e),
                                          "an integer or an expression over parameters")) from None
            if v < 1:
                raise SpecError(smap.diag(("workload", "arrays", a.name, "shape", i),
                                          f"dimension evaluates to {v}", "a positive size"))
    for label, h in wl.hints.items():
        if "expected_trips" in h:
            try:
                evaluate(h["expected_trips"], names)
            except ExprError as e:
                raise SpecError(smap.diag(("workload", "hints", label, "expected_trips"), str(e),
                                          "a number or an expression over parameters and scalars")) from None
    _check_inputs(wl, smap)
    return wl


def _check_inputs(wl: Workload, smap: SourceMap) -> None:
    inp = wl.inputs or {}
    sets = [((), inp)] + [(("variants", k), v) for k, v in inp.get("variants", {}).items()]
    for prefix, s in sets:
        base = ("workload", "inputs") + prefix
        for name, spec in s.get("arrays", {}).items():
            if name not in wl.arrays:
                raise SpecError(smap.diag(base + ("arrays", name), f"input for unknown array '{name}'",
                                          "one of: " + ", ".join(sorted(wl.arrays)), prefer_key=True))
            if wl.arrays[name].role in ("out", "temp"):
                raise SpecError(smap.diag(base + ("arrays", name),
                                          f"array '{name}' has role '{wl.arrays[name].role}' and takes no input data",
                                          "an array with role in or inout", prefer_key=True))
            r = spec.get("range")
            if r and r[0] > r[1]:
                raise SpecError(smap.diag(base + ("arrays", name, "range"), f"empty range {r}",
                                          "[low, high] with low <= high"))
            need = {"uniform": "range", "randint": "range", "constant": "value"}.get(spec["distribution"])
            if need and need not in spec:
                raise SpecError(smap.diag(base + ("arrays", name),
                                          f"distribution '{spec['distribution']}' needs '{need}'",
                                          f"{need}: ...", prefer_key=True))
        for i, st in enumerate(s.get("structures", [])):
            for key in ("row_ptr", "col_idx"):
                if st.get(key) and st[key] not in wl.arrays:
                    raise SpecError(smap.diag(base + ("structures", i, key),
                                              f"unknown array '{st[key]}'",
                                              "one of: " + ", ".join(sorted(wl.arrays))))
            for key in ("rows", "cols", "nnz"):
                if key in st:
                    try:
                        evaluate(st[key], wl.parameters)
                    except ExprError as e:
                        raise SpecError(smap.diag(base + ("structures", i, key), str(e))) from None


def load_workload(path: str | Path, text: str | None = None) -> Workload:
    w, smap = _read("workload", path, text)
    return workload_from_dict(w, smap)


def mapping_from_dict(m: dict[str, Any], smap: SourceMap) -> Mapping:
    loops = {k: LoopMapping(**v) for k, v in m.get("loops", {}).items()}
    for label, lm in loops.items():
        if lm.spatial and lm.tile is None:
            raise SpecError(smap.diag(("mapping", "loops", label), f"loop '{label}' is spatial but has no tile",
                                      "tile: the number of PEs along that dimension it uses",
                                      prefer_key=True))
    parts = {}
    for k, v in m.get("partition", {}).items():
        if v["type"] != "complete" and "factor" not in v:
            raise SpecError(smap.diag(("mapping", "partition", k), f"{v['type']} partition of '{k}' needs a factor",
                                      "factor: number of banks", prefer_key=True))
        parts[k] = Partition(v["type"], v.get("factor", 1), v.get("dim", 1))
    return Mapping(name=m["name"], loops=loops, order=tuple(m.get("order", ())),
                   placement=dict(m.get("placement", {})), partition=parts,
                   dataflow=m.get("dataflow", False), workload=m.get("workload"), preset=m.get("preset"),
                   architecture=m.get("architecture"), levels=tuple(m.get("levels", ())),
                   description=m.get("description", ""), source_map=smap)


def load_mapping(path: str | Path, text: str | None = None) -> Mapping:
    m, smap = _read("mapping", path, text)
    return mapping_from_dict(m, smap)


#: the builder of each spec kind from its validated body (what ``from_dict`` and ``llmulator validate`` use)
BUILDERS = {"architecture": architecture_from_dict, "workload": workload_from_dict, "mapping": mapping_from_dict}


def from_dict(kind: str, body: dict[str, Any], source: str = "<dict>"):
    """One spec document given as a plain dict (the body under ``kind:``): schema-validated, then built
    like a file; ``source`` names it in diagnostics (SpecError). The one way to turn spec dicts
    (generated samples, design-space points, dataset rows) into spec objects."""
    smap = SourceMap(source)
    validate(kind, {kind: body}, smap)
    return BUILDERS[kind](body, smap)
