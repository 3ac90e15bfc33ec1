"""Reading Timeloop v0.4 specs (and the older ``subtree``/``local`` tree) into one plain record.

Files come in any order and are recognised by their top-level keys: ``architecture``, ``problem``,
``mapping``, ``ERT`` (Accelergy's energy reference table), and a reference-output folder's
``parsed-processed-input.yaml`` (all three at once). Unknown YAML tags, unsupported constructs
(sparse optimisations, compute-in-memory, a compound component with no ERT entry) and inconsistent
inputs are ``SpecError``s naming file and line; nothing is approximated silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from llmulator.errors import Diagnostic, SpecError

KNOWN_TAGS = {"!Container", "!Component", "!Parallel", "!Hierarchical", "!Nothing", "!nomerge"}
IGNORED_KEYS = {"mapper", "mapspace", "mapspace_constraints", "constraints", "architecture_constraints",
                "compound_components", "globals", "sparse_optimizations", "variables", "ART",
                "dumped_by_timeloop_front_end", "model", "components", "ERT_summary", "ART_summary",
                "environment_variables", "version"}
COMPUTE_CLASSES = ("mac", "intmac", "fpmac", "compute", "multiplier", "adder")
UNSUPPORTED_CLASSES = ("cim", "adc", "dac", "crossbar", "memristor", "reram")


# -- YAML with tags and line numbers -------------------------------------------------------------------
class LDict(dict):
    """A mapping that remembers its file, its line and each key's line."""

    file: str = ""
    line: int | None = None
    key_lines: dict

    def at(self, key: str | None = None) -> int | None:
        return self.key_lines.get(key, self.line) if key is not None else self.line


class LList(list):
    file: str = ""
    line: int | None = None


class _Loader(yaml.SafeLoader):
    pass


def _merge_deep(d: dict, src: Any) -> None:
    """Timeloop's hierarchical merge (``<<<``): keys of ``d`` win; where both hold mappings they merge
    the same way, where both hold lists the merged items follow ``d``'s own; a value tagged ``!nomerge``
    is taken as written."""
    for k, v in src.items():
        if k == "_tag":
            continue
        if k not in d:
            d[k] = v
            continue
        mine = d[k]
        if getattr(mine, "nomerge", False):
            continue
        if isinstance(mine, dict) and isinstance(v, dict):
            merged = LDict(mine)
            merged.file, merged.line = getattr(mine, "file", ""), getattr(mine, "line", None)
            merged.key_lines = dict(getattr(mine, "key_lines", {}))
            _merge_deep(merged, v)
            d[k] = merged
        elif isinstance(mine, list) and isinstance(v, list):
            merged_l = LList(list(mine) + list(v))
            merged_l.file, merged_l.line = getattr(mine, "file", ""), getattr(mine, "line", None)
            d[k] = merged_l


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, tag: str | None = None) -> LDict:
    """A mapping with lines; YAML merge keys: ``<<`` (keys of the mapping win, then the merged mappings
    in order) and Timeloop's hierarchical ``<<<`` (``_merge_deep``)."""
    d = LDict()
    d.file, d.line, d.key_lines = loader.name, node.start_mark.line + 1, {}
    merges: list[tuple[str, Any, int]] = []
    for k_node, v_node in node.value:
        if k_node.tag == "tag:yaml.org,2002:merge" or (isinstance(k_node, yaml.ScalarNode)
                                                        and k_node.value in ("<<", "<<<")):
            kind = "<<<" if k_node.value == "<<<" else "<<"
            value = loader.construct_object(v_node, deep=True)
            parts = value if isinstance(value, list) else [value]
            for part in parts:
                if not isinstance(part, dict):
                    raise SpecError(Diagnostic(loader.name, k_node.start_mark.line + 1, None, kind,
                                               f"merge key {kind} needs a mapping (an alias such as *name)"))
                merges.append((kind, part, k_node.start_mark.line + 1))
            continue
        key = loader.construct_object(k_node, deep=True)
        value = loader.construct_object(v_node, deep=True)
        d[key] = value
        d.key_lines[key] = k_node.start_mark.line + 1
    for kind, part, line in merges:
        keys = [k for k in part if k not in d and k != "_tag"]
        if kind == "<<":
            for k in keys:
                d[k] = part[k]
        else:
            _merge_deep(d, part)
        for k in keys:
            d.key_lines.setdefault(k, line)
    if tag:
        d["_tag"] = tag
    return d


def _construct_seq(loader: _Loader, node: yaml.SequenceNode) -> LList:
    lst = LList(loader.construct_object(n, deep=True) for n in node.value)
    lst.file, lst.line = loader.name, node.start_mark.line + 1
    return lst


def _construct_tagged(loader: _Loader, tag_suffix: str, node: yaml.Node) -> Any:
    tag = "!" + tag_suffix
    if tag == "!nomerge":  # a value a hierarchical merge (<<<) must not merge into
        if isinstance(node, yaml.MappingNode):
            v = _construct_mapping(loader, node)
        elif isinstance(node, yaml.SequenceNode):
            v = _construct_seq(loader, node)
        else:
            return loader.construct_scalar(node)
        v.nomerge = True
        return v
    if tag not in KNOWN_TAGS:
        raise SpecError(Diagnostic(loader.name, node.start_mark.line + 1, node.start_mark.column + 1, "",
                                   f"unknown YAML tag {tag}", "one of " + ", ".join(sorted(KNOWN_TAGS)),
                                   "Timeloop v0.4 architectures use !Container, !Component and !Parallel"))
    if isinstance(node, yaml.MappingNode):
        return _construct_mapping(loader, node, tag)
    if isinstance(node, yaml.SequenceNode):
        d = LDict(nodes=_construct_seq(loader, node), _tag=tag)
        d.file, d.line, d.key_lines = loader.name, node.start_mark.line + 1, {}
        return d
    d = LDict(_tag=tag)
    d.file, d.line, d.key_lines = loader.name, node.start_mark.line + 1, {}
    return d


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_seq)
_Loader.add_multi_constructor("!", _construct_tagged)


def _include_text(text: str, base: Path, depth: int = 0) -> str:
    """Timeloop's front-end ``{{include_text('file')}}``: the named file's text in place."""
    def sub(m: re.Match) -> str:
        p = (base / m.group(2)).resolve()
        if depth > 8 or not p.is_file():
            raise SpecError(Diagnostic(str(base), None, None, "", f"include_text: cannot read {m.group(2)}"))
        return _include_text(p.read_text(), p.parent, depth + 1)
    return re.sub(r"\{\{\s*include_text\((['\"])(.+?)\1\)\s*\}\}", sub, text)


def load_yaml(path: Path) -> Any:
    return _parse(_include_text(path.read_text(), path.parent), path)


def load_yaml_lines(path: Path) -> tuple[Any, list[int]]:
    """``load_yaml``, and for each line of the text parsed (includes expanded) the line of ``path`` it comes
    from: an included file's lines map to the line that includes it. The records' lines are the parsed
    text's; a YAML error's line is ``path``'s."""
    origin: list[int] = []
    parts = []
    for i, line in enumerate(path.read_text().split("\n"), 1):
        try:
            parts.append(_include_text(line, path.parent))
        except SpecError as e:
            raise SpecError(Diagnostic(str(path), i, None, "", e.diagnostics[0].message,
                                       hint=f"the path is relative to {path.parent}")) from None
        origin.extend([i] * (parts[-1].count("\n") + 1))
    return _parse("\n".join(parts), path, origin), origin


def _parse(text: str, path: Path, origin: list[int] | None = None) -> Any:
    loader = _Loader(text)
    loader.name = str(path)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark else None
        if line is not None and origin:
            line = origin[min(line, len(origin)) - 1]
        raise SpecError(Diagnostic(str(path), line, None, "", f"not valid YAML: {getattr(e, 'problem', e)}")) from None
    finally:
        loader.dispose()


def err(obj: Any, msg: str, key: str | None = None, expected: str = "", hint: str = "",
        file: str | None = None) -> SpecError:
    f = getattr(obj, "file", None) or file or "<timeloop>"
    line = obj.at(key) if isinstance(obj, LDict) else getattr(obj, "line", None)
    return SpecError(Diagnostic(f, line, None, key or "", msg, expected, hint))


def _where(obj: Any, key: str | None = None) -> str:
    line = obj.at(key) if isinstance(obj, LDict) else getattr(obj, "line", None)
    return f"{getattr(obj, 'file', '') or '<timeloop>'}:{line}" if line else (getattr(obj, "file", "") or "<timeloop>")


MAPPER_KEYS = {"mapper": "mapper settings", "mapspace": "mapspace template",
               "mapspace_constraints": "mapspace constraints", "constraints": "mapper constraints"}


def _note_mapper_inputs(spec: TLSpec, doc: Any) -> None:
    """Mapper inputs are read but not imported: a note each (llmulator has no mapper constraints; the
    mapping is taken as given). Keep/bypass targets of architecture constraints are the exception: they
    are the levels' default keep sets."""
    if not isinstance(doc, LDict):
        return
    for k, what in MAPPER_KEYS.items():
        if k in doc:
            spec.notes.append(f"{_where(doc, k)}: {what} (`{k}`) ignored: llmulator imports the mapping given "
                              "and has no mapper search to constrain")
    ac = doc.get("architecture_constraints")
    if isinstance(ac, dict):
        other = [t for t in ac.get("targets") or [] if isinstance(t, dict)
                 and t.get("type") not in ("bypass", "dataspace", "datatype")]
        if other:
            kinds = sorted({str(t.get("type")) for t in other})
            spec.notes.append(f"{_where(doc, 'architecture_constraints')}: {len(other)} architecture constraint(s) "
                              f"of type {', '.join(kinds)} ignored (mapper search limits); keep/bypass targets "
                              "are used as the levels' default keep sets")


# -- records ----------------------------------------------------------------------------------------
@dataclass
class TLLevel:
    name: str
    cls: str
    instances: int
    attrs: dict
    spatial_only: bool = False  # a container's fan-out (Timeloop's dummy storage): keeps nothing
    mesh_x: int | None = None
    src: Any = None
    keep: list[str] | None = None  # architecture constraints
    bypass: list[str] | None = None

    @property
    def word_bits(self) -> int:
        a = self.attrs
        return int(a.get("datawidth", a.get("word-bits", a.get("word_bits", a.get("width", 16)))) or 16)

    @property
    def block(self) -> int:
        a = self.attrs
        b = a.get("block_size", a.get("block-size"))
        if b is None:
            w = a.get("width", a.get("memory_width"))
            return max(int(w) // self.word_bits // self.cluster, 1) if w else 1
        return int(b)

    @property
    def cluster(self) -> int:
        """Instances sharing one physical access (Timeloop's cluster_size; derived from width when a
        block size is given too)."""
        a = self.attrs
        c = a.get("cluster_size", a.get("cluster-size"))
        if c is not None:
            return max(int(c), 1)
        b, w = a.get("block_size", a.get("block-size")), a.get("width", a.get("memory_width"))
        if b is not None and w:
            return max(int(w) // (self.word_bits * int(b)), 1)
        return 1

    @property
    def depth(self) -> int | None:
        a = self.attrs
        d = a.get("depth", a.get("entries", a.get("memory_depth")))
        if d is None:
            return None
        d = int(d)
        return d * self.block if "entries" not in a else d


@dataclass
class TLSpec:
    levels: list[TLLevel] = field(default_factory=list)  # outermost first (spatial containers included)
    compute: TLLevel | None = None
    arch_src: Any = None
    dims: list[str] = field(default_factory=list)
    instance: dict[str, int] = field(default_factory=dict)
    spaces: list[dict] = field(default_factory=list)  # name, projection [[(coef, dim)]], rw
    problem_name: str = "timeloop_problem"
    problem_src: Any = None
    mapping: list[dict] = field(default_factory=list)
    mapping_src: Any = None
    ert: dict[str, dict[str, float]] = field(default_factory=dict)  # component -> action -> pJ
    ert_src: str | None = None
    sources: list[str] = field(default_factory=list)
    technology: str | None = None
    cycle_seconds: float | None = None
    notes: list[str] = field(default_factory=list)  # what was read but not imported ("file:line: ...")


_RANGE = re.compile(r"^(.*?)\[(\d+)\.\.(\d+)\]$")


def _split_name(name: str) -> tuple[str, int]:
    m = _RANGE.match(str(name))
    if not m:
        return str(name), 1
    return m.group(1), int(m.group(3)) - int(m.group(2)) + 1


def _check_unsupported(node: Any, where: Any) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("sparse_optimizations", "action_optimization", "representation_format", "metadata_storage_width"):
                raise err(node if isinstance(node, LDict) else where, f"'{k}': sparse optimisations (SAFs, "
                          "compressed formats) are not supported by llmulator's dense model", k,
                          hint="import the dense design (remove the sparse optimisation entries)")
            _check_unsupported(v, node if isinstance(node, LDict) else where)
    elif isinstance(node, list):
        for v in node:
            _check_unsupported(v, node if isinstance(node, LList) else where)


def _is_compute(cls: str) -> bool:
    c = cls.lower()
    return any(c == k or c.endswith(k) for k in COMPUTE_CLASSES)


def _component(spec: TLSpec, node: LDict, instances: int, attrs: dict, keyname: str = "name",
               mesh_x: int | None = None) -> None:
    name, n = _split_name(node.get(keyname, "?"))
    cls = str(node.get("class", ""))
    if any(u in cls.lower() for u in UNSUPPORTED_CLASSES):
        raise err(node, f"component {name}: class '{cls}' (compute-in-memory) is not supported", "class")
    a = {**attrs, **(node.get("attributes") or {})}
    lv = TLLevel(name=name, cls=cls, instances=instances * n, attrs=a, src=node)
    if a.get("meshX") is not None:
        lv.mesh_x = int(a["meshX"])
    elif mesh_x is not None:
        lv.mesh_x = mesh_x
    cons = node.get("constraints") or {}
    ds = cons.get("dataspace") if isinstance(cons, dict) else None
    other = [k for k in cons if k != "dataspace"] if isinstance(cons, dict) else []
    if other:
        spec.notes.append(f"{_where(node, 'constraints')}: mapper constraints of {name} ({', '.join(map(str, other))}) "
                          "ignored: they bound a mapper's search, and llmulator imports the mapping given")
    if ds:
        lv.keep = list(ds.get("keep") or []) if "keep" in ds else None
        lv.bypass = list(ds.get("bypass") or [])
    if cls == "dummy_storage":
        lv.spatial_only = True
        spec.levels.append(lv)
    elif _is_compute(cls) or (not cls and "depth" not in a):
        if spec.compute is not None:
            raise err(node, f"a second compute component ({name}; the first is {spec.compute.name})", "name",
                      hint="llmulator's dense model has one MAC array")
        spec.compute = lv
    else:
        spec.levels.append(lv)


def _walk_nodes(spec: TLSpec, nodes: list, mult: int, attrs: dict, mesh: list[int] | None = None) -> int:
    """v0.4 nodes in order; ``mult`` instances so far, laid on ``mesh`` = [X, Y] (a container's spatial
    meshX/meshY multiply it; the container itself is the level those instances fan out from)."""
    mesh = mesh if mesh is not None else [1, 1]
    for node in nodes:
        if not isinstance(node, LDict):
            raise err(nodes, "architecture node is not a mapping")
        tag = node.get("_tag")
        if tag == "!Container":
            a = {**attrs, **(node.get("attributes") or {})}
            sp = node.get("spatial") or {}
            mx, my = int(sp.get("meshX", 1)), int(sp.get("meshY", 1))
            if mx * my > 1:
                lv = TLLevel(name=str(node.get("name")), cls="dummy_storage", instances=mult, attrs=a,
                             spatial_only=True, mesh_x=mesh[0], src=node)
                spec.levels.append(lv)
                mult *= mx * my
                mesh[0] *= mx
                mesh[1] *= my
            attrs = a
            if a.get("technology") and not spec.technology:
                spec.technology = str(a["technology"])
            if a.get("global_cycle_seconds") and not spec.cycle_seconds:
                spec.cycle_seconds = float(a["global_cycle_seconds"])
        elif tag in ("!Component", None):
            _component(spec, node, mult, attrs, mesh_x=mesh[0])
        elif tag == "!Parallel":
            # parallel buffers (one per data space): a chain of levels each keeping its own data space
            _walk_nodes(spec, node.get("nodes") or [], mult, attrs, list(mesh))
        elif tag == "!Hierarchical":
            mult = _walk_nodes(spec, node.get("nodes") or [], mult, attrs, mesh)
        elif tag == "!Nothing":
            continue
    return mult


def _walk_subtree(spec: TLSpec, tree: list, mult: int, attrs: dict) -> None:
    for sub in tree:
        name, n = _split_name(sub.get("name", ""))
        a = {**attrs, **(sub.get("attributes") or {})}
        if a.get("technology") and not spec.technology:
            spec.technology = str(a["technology"])
        if a.get("global_cycle_seconds") and not spec.cycle_seconds:
            spec.cycle_seconds = float(a["global_cycle_seconds"])
        for comp in sub.get("local") or []:
            _component(spec, comp, mult * n, {k: v for k, v in a.items() if k in ("technology",)})
        if sub.get("subtree"):
            _walk_subtree(spec, sub["subtree"], mult * n, a)


def read_architecture(spec: TLSpec, arch: LDict) -> None:
    _check_unsupported(arch, arch)
    spec.arch_src = arch
    if "nodes" in arch:
        _walk_nodes(spec, arch["nodes"], 1, {})
    elif "subtree" in arch:
        _walk_subtree(spec, arch["subtree"], 1, {})
    else:
        raise err(arch, "architecture has neither `nodes` (v0.4) nor `subtree` (v0.3)", None,
                  "architecture.nodes or architecture.subtree")
    if spec.compute is None:
        raise err(arch, "architecture has no compute component (a MAC)", None, "a !Component of class intmac")
    if not [lv for lv in spec.levels if not lv.spatial_only]:
        raise err(arch, "architecture has no storage level", None)


def _coef(v: Any, inst: dict, where: Any) -> int:
    if isinstance(v, int | float):
        return int(v)
    if str(v) in inst:
        return int(inst[str(v)])
    raise err(where, f"projection coefficient '{v}' has no value", None, "a number or a coefficient name")


def read_problem(spec: TLSpec, prob: LDict) -> None:
    _check_unsupported(prob, prob)
    spec.problem_src = prob
    shape = prob.get("shape")
    if not isinstance(shape, dict):
        raise err(prob, "problem has no `shape`", "shape")
    spec.problem_name = str(shape.get("name") or "timeloop_problem")
    dims = [str(d) for d in shape.get("dimensions") or []]
    if not dims:
        raise err(shape, "problem shape has no `dimensions`", "dimensions")
    inst = prob.get("instance") or {}
    coefs = {str(c["name"]): c.get("default", 1) for c in shape.get("coefficients") or []}
    values = {**coefs, **{str(k): v for k, v in inst.items()}}
    for d in dims:
        if d not in inst:
            raise err(inst if isinstance(inst, LDict) else prob, f"dimension {d} is missing from the problem "
                      "instance", None, f"instance.{d}: <bound>")
        if int(inst[d]) < 1:
            raise err(inst, f"dimension {d} has bound {inst[d]}", d, "a positive integer")
    for k in ("densities",):
        if inst.get(k):
            raise err(inst, "densities (sparse workloads) are not supported", k)
    spec.dims = dims
    spec.instance = {d: int(inst[d]) for d in dims}
    spec.spaces = []
    for ds in shape.get("data_spaces") or []:
        proj = []
        raw = ds.get("projection")
        if isinstance(raw, str):
            raw = [[[t.strip() for t in term.split("*")][::-1] for term in part.split("+")]
                   for part in raw.strip("[] ").split(",")]
        for part in raw or []:
            terms = []
            for term in part:
                term = list(term) if isinstance(term, list) else [term]
                dim = str(term[0])
                c = _coef(term[1], values, ds) if len(term) > 1 else 1
                if dim not in dims:
                    raise err(ds, f"data space {ds.get('name')}: projection names {dim}, not a dimension",
                              "projection", "one of " + ", ".join(dims))
                terms.append((c, dim))
            proj.append(terms)
        spec.spaces.append({"name": str(ds.get("name")), "projection": proj,
                            "rw": bool(ds.get("read_write", False)), "src": ds})
    if not spec.spaces:
        raise err(shape, "problem has no data spaces", "data_spaces")
    if sum(1 for s in spec.spaces if s["rw"]) != 1:
        raise err(shape, "the dense model needs exactly one read_write data space (the output)", "data_spaces")


_FACTOR = re.compile(r"([A-Za-z_][A-Za-z0-9_]*?)\s*=?\s*(\d+)$")


def parse_factors(raw: Any, where: Any) -> dict[str, int]:
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return {str(k): int(v) for k, v in raw.items()}
    items = raw if isinstance(raw, list) else re.split(r"[\s,]+", str(raw).strip())
    out = {}
    for it in items:
        it = str(it).strip()
        if not it:
            continue
        m = _FACTOR.match(it)
        if not m:
            raise err(where, f"cannot read factor '{it}'", "factors", "DIM=N (e.g. R=3 P=16)")
        out[m.group(1)] = int(m.group(2))
    return out


def parse_permutation(raw: Any, dims: list[str]) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, list):
        return [str(x) for x in raw]
    s = str(raw).strip()
    if re.search(r"[\s,]", s):
        return [t for t in re.split(r"[\s,]+", s) if t]
    # a string of one-letter dimension names (Timeloop's usual form); longer names greedily
    out, i = [], 0
    names = sorted(dims, key=len, reverse=True)
    while i < len(s):
        d = next((n for n in names if s.startswith(n, i)), s[i])
        out.append(d)
        i += len(d)
    return out


def read_mapping(spec: TLSpec, mapping: list) -> None:
    spec.mapping_src = mapping
    spec.mapping = [m for m in mapping]


def read_ert(spec: TLSpec, ert: LDict, path: str) -> None:
    spec.ert_src = path
    for t in ert.get("tables") or []:
        name = str(t.get("name", ""))
        comp = _split_name(name)[0].split(".")[-1]
        acts: dict[str, float] = {}
        for a in t.get("actions") or []:
            an = str(a.get("name"))
            e = a.get("energy")
            if e is None and a.get("arguments") is not None and isinstance(a.get("arguments"), list):
                e = max(float(x.get("energy", 0.0)) for x in a["arguments"])
            acts[an] = max(acts.get(an, 0.0), float(e or 0.0))
        spec.ert[comp] = acts


def classify(doc: Any) -> list[str]:
    if isinstance(doc, dict):
        return [k for k in ("architecture", "problem", "mapping", "ERT") if k in doc]
    return []


def load(paths: list[str | Path]) -> TLSpec:
    """Read Timeloop files and folders (recursively: *.yaml / *.yml) into one TLSpec."""
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files.extend(sorted(q for q in p.rglob("*") if q.suffix in (".yaml", ".yml") and q.is_file()))
        elif p.is_file():
            files.append(p)
        else:
            raise SpecError(Diagnostic(str(p), None, None, "", "no such file or folder"))
    spec = TLSpec()
    cands: dict[str, list[tuple[Path, Any, bool]]] = {}
    for f in files:
        doc = load_yaml(f)
        _note_mapper_inputs(spec, doc)
        processed = isinstance(doc, dict) and "dumped_by_timeloop_front_end" in doc
        for k in classify(doc):
            cands.setdefault(k, []).append((f, doc, processed))
    found: dict[str, tuple[Path, Any, bool]] = {}
    for k, lst in cands.items():
        proc = [c for c in lst if c[2]]
        raw = [c for c in lst if not c[2]]
        # a reference folder: the processed input's architecture and problem; a mapper's *.map.yaml (the
        # mapping it reported) over the processed input's mapping
        pick = (raw or proc) if k in ("mapping", "ERT") else (proc or raw)
        if len(pick) > 1:
            f, doc, _ = pick[1]
            raise SpecError(Diagnostic(str(f), doc.at(k) if isinstance(doc, LDict) else None, None, k,
                                       f"a second `{k}` (the first is in {pick[0][0]})",
                                       hint="pass one file of each kind"))
        found[k] = pick[0]
    for k in ("architecture", "problem", "mapping"):
        if k not in found:
            raise SpecError(Diagnostic(str(paths[0]) if paths else "", None, None, k,
                                       f"no `{k}` among the files given", f"a YAML file with top-level `{k}:`"))
    for k, (f, doc, _) in found.items():
        spec.sources.append(str(f))
        if k == "architecture":
            read_architecture(spec, doc["architecture"])
        elif k == "problem":
            read_problem(spec, doc["problem"])
        elif k == "mapping":
            m = doc["mapping"]
            if isinstance(m, dict) and "nodes" in m:
                m = m["nodes"]
            if not isinstance(m, list):
                raise err(doc, "mapping is not a list of directives", "mapping")
            read_mapping(spec, m)
        elif k == "ERT":
            read_ert(spec, doc["ERT"], str(f))
    # architecture constraints of a processed input: keep/bypass per target
    for k, (_f, doc, _processed) in found.items():
        if k == "architecture" and isinstance(doc.get("architecture_constraints"), dict):
            for t in doc["architecture_constraints"].get("targets") or []:
                if t.get("type") in ("bypass", "dataspace", "datatype"):
                    lv = next((x for x in spec.levels if x.name == t.get("target")), None)
                    if lv is not None:
                        lv.keep = list(t.get("keep") or []) if "keep" in t else lv.keep
                        lv.bypass = list(t.get("bypass") or [])
    spec.sources = sorted(set(spec.sources))
    return spec
