#!/usr/bin/env python3
"""Generate docs/api.md: the Python records a plugin receives and returns.

A plugin's estimator gets ``Design`` records and returns ``Estimate`` records; a
profiler returns ``Profile`` records. This page lists, for each of those records
and the ones they hold (``Architecture``, ``Workload``, ``Mapping`` and their
parts, the kernel's ``LoopTree``), every attrs field with its type, default and
description, the YAML key it comes from (the Python names differ from the YAML
in places: YAML ``compute.operators`` is ``arch.operators``), and the public
methods and properties with the first paragraph of their docstrings.

Everything is read from the code: field names, types and defaults from
``attrs.fields``; a field's description from the comment on its line (or the
``#:`` comment lines just above it), else from the JSON Schema description of
its YAML key; method and property descriptions from their docstrings. The YAML
keys are checked against the JSON Schemas. A field or public member with no
description, or a YAML key the schema does not have, stops the script.

    python scripts/gen_api_docs.py            # (re)write docs/api.md
    python scripts/gen_api_docs.py --check    # exit 1 if the file is out of date
    python scripts/gen_api_docs.py -o FILE    # write elsewhere ('-': stdout)

The test suite regenerates the page in memory and compares (tests/test_api_docs.py).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import io
import sys
import tokenize
from functools import cached_property
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "api.md"
KINDS = ("architecture", "workload", "mapping")


@attrs.frozen
class Record:
    module: str
    name: str
    yaml: str | None = None  # YAML path of one such record ('architecture.memory[]', '...operators.<class>')
    # field -> the YAML path it comes from when that is not ``yaml + '.' + field`` (a path starting with a
    # kind is checked against the schema), or a note in words for a field that is not a YAML key
    where: dict[str, str] = attrs.field(factory=dict)


RECORDS = [
    ("What a component receives", [
        Record("llmulator.design", "Design", where={
            "arch": "the architecture file (`architecture:`)",
            "workload": "the workload file (`workload:`)",
            "mapping": "the mapping file (`mapping:`)",
            "preset": "`--preset`, else `mapping.preset`",
            "variant": "`--variant` (a key of `workload.inputs.variants`)",
            "measured_trips": "a profiler, from the run it measured (hlsim); empty otherwise",
            "measured_entries": "a profiler, from the run it measured (hlsim: each band's entries); empty otherwise",
        }),
        Record("llmulator.specs", "Architecture", yaml="architecture", where={
            "operators": "architecture.compute.operators",
            "pe_array": "architecture.compute.pe_array",
            "technology": "architecture.technology",
            "source_map": "(where each key was read: file, line, column)",
            "raw": "(the whole `architecture:` mapping as read)",
        }),
        Record("llmulator.specs", "PEArray", yaml="architecture.compute.pe_array"),
        Record("llmulator.specs", "OperatorClass", yaml="architecture.compute.operators.<class>", where={
            "name": "(the key under `compute.operators`)",
            "defaulted": "(filled in from the technology table)",
        }),
        Record("llmulator.specs", "MemoryLevel", yaml="architecture.memory[]", where={
            "defaulted": "(filled in from the technology table)",
        }),
        Record("llmulator.specs", "Workload", yaml="workload", where={
            "source_map": "(where each key was read: file, line, column)",
            "raw": "(the whole `workload:` mapping as read)",
        }),
        Record("llmulator.specs", "ArraySpec", yaml="workload.arrays.<array>", where={
            "name": "(the key under `workload.arrays`)",
        }),
        Record("llmulator.specs", "Mapping", yaml="mapping", where={
            "source_map": "(where each key was read: file, line, column)",
        }),
        Record("llmulator.specs", "LoopMapping", yaml="mapping.loops.<label>"),
        Record("llmulator.specs", "Partition", yaml="mapping.partition.<array>"),
    ]),
    ("The kernel's loop tree (`design.tree`)", [
        Record("llmulator.kernel", "LoopTree", where={
            "roots": "(the top level of `workload.kernel`)", "loops": "(the kernel's loop labels)",
            "locals": "(declarations in `workload.kernel`)", "source": "workload.kernel",
            "body": "(`workload.kernel` parsed by pycparser)"}),
        Record("llmulator.kernel", "Loop", where={"*": "a labelled loop of `workload.kernel`"}),
        Record("llmulator.kernel", "Statement", where={"*": "a statement of `workload.kernel`"}),
        Record("llmulator.kernel", "Branch", where={"*": "an `if` of `workload.kernel`"}),
        Record("llmulator.kernel", "Access", where={"*": "an array subscript in `workload.kernel`"}),
    ]),
    ("What a component returns", [
        Record("llmulator.results", "Estimate", where={"*": "the estimator; `llmulator estimate --json` prints "
                                                            "them under `estimates`"}),
        Record("llmulator.results", "Profile", where={"*": "the profiler; `llmulator profile --json` prints it "
                                                           "under `profile`"}),
    ]),
]

# members a reader of the records does not need (serialisation helpers are listed, private ones are not)
SKIP_MEMBERS = {"from_dict"}


class DocError(Exception):
    """The code lacks something the page needs (a description, a YAML key the schema has)."""


def _spec_docs():
    spec = importlib.util.spec_from_file_location("gen_spec_docs", ROOT / "scripts" / "gen_spec_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def schema_node(path: str) -> dict[str, Any] | None:
    """The schema node of a YAML path (``architecture.memory[].name``, ``mapping.loops.<label>.tile``);
    None when the schema has no such key."""
    gen = _spec_docs()
    kind, *rest = path.split(".")
    if kind not in KINDS:
        return None
    root = gen.load_schema(kind)
    node = gen._resolve(root, root["properties"][kind])
    for part in rest:
        items = part.endswith("[]")
        part = part[:-2] if items else part
        if part.startswith("<"):
            node = node.get("additionalProperties")
        else:
            node = (node.get("properties") or {}).get(part)
        if not isinstance(node, dict):
            return None
        node = gen._resolve(root, node)
        if items:
            node = node.get("items")
            if not isinstance(node, dict):
                return None
            node = gen._resolve(root, node)
    return node


def field_comments(cls: type) -> dict[str, str]:
    """Field name -> its comment: the ``# ...`` on the field's line, or ``#:`` lines just above it."""
    src = inspect.getsource(cls)
    out: dict[str, str] = {}
    pending: list[str] = []
    line_start = True
    field: str | None = None
    prev: tokenize.TokenInfo | None = None
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            text = tok.string.lstrip("#")
            if tok.string.startswith("#:") and line_start:
                pending.append(text[1:].strip())
            elif field is not None:
                out[field] = (out.get(field, "") + " " + text.strip()).strip()
            continue
        if tok.type in (tokenize.NEWLINE, tokenize.NL):
            if tok.type == tokenize.NEWLINE:
                field = None
            line_start = True
            continue
        if tok.type in (tokenize.INDENT, tokenize.DEDENT):
            continue
        if line_start and tok.type == tokenize.NAME and tok.start[1] == 4:
            field = tok.string
            if pending:
                out[field] = " ".join(pending)
            pending = []
        elif line_start:
            pending = []
        if prev is not None and prev.type == tokenize.NAME and tok.string != ":" and prev.string == field \
                and prev.start[1] == 4 and tok.start[0] == prev.start[0]:
            field = None  # `name(...)`, `name = ...`: not an annotated field
        line_start = False
        prev = tok
    return out


def _default(f: attrs.Attribute) -> str:
    d = f.default
    if d is attrs.NOTHING:
        return "required"
    if isinstance(d, attrs.Factory):  # type: ignore[arg-type]
        made = d.factory() if not d.takes_self else None
        return f"`{made!r}`" if made is not None else "computed"
    return f"`{d!r}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    return " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())


def _yaml_cell(rec: Record, fname: str) -> tuple[str, str]:
    """(the YAML column's text, the schema's description of that key or '')."""
    where = rec.where.get(fname, rec.where.get("*"))
    path = where if where is not None and where.split(".")[0] in KINDS else None
    if where is not None and path is None:
        return where, ""
    if path is None:
        if rec.yaml is None:
            raise DocError(f"{rec.name}.{fname}: say where it comes from (Record.where)")
        path = f"{rec.yaml}.{fname}"
    node = schema_node(path)
    if node is None:
        raise DocError(f"{rec.name}.{fname}: the schema has no YAML key {path}; fix Record.where in "
                       "scripts/gen_api_docs.py")
    return f"`{path}`", str(node.get("description", ""))


def _members(cls: type, problems: list[str]) -> list[str]:
    rows = []
    field_names = {f.name for f in attrs.fields(cls)}
    for name, obj in cls.__dict__.items():
        if name.startswith("_") or name in field_names or name in SKIP_MEMBERS:
            continue
        if isinstance(obj, (property, cached_property)):
            fn = obj.fget if isinstance(obj, property) else obj.func
            ret = inspect.signature(fn).return_annotation
            sig = f"`{name}`" + (f" → `{ret}`" if ret is not inspect.Signature.empty else "")
            kind = "property"
        elif inspect.isfunction(obj) or isinstance(obj, (classmethod, staticmethod)):
            fn = obj.__func__ if isinstance(obj, (classmethod, staticmethod)) else obj
            params = [p for p in inspect.signature(fn).parameters.values() if p.name not in ("self", "cls")]
            ret = inspect.signature(fn).return_annotation
            args = ", ".join(str(p).replace("'", "") for p in params)
            sig = f"`{name}({args})`" + (f" → `{ret}`" if ret is not inspect.Signature.empty else "")
            kind = "method"
        else:
            continue
        doc = _first_paragraph(fn.__doc__)
        if not doc:
            problems.append(f"{cls.__module__}.{cls.__name__}.{name}: public {kind} without a docstring")
        rows.append(f"| {_cell(sig)} | {kind} | {_cell(doc)} |")
    if not rows:
        return []
    return ["", "| method or property | kind | description |", "|---|---|---|", *rows]


def record_section(rec: Record, problems: list[str]) -> str:
    cls = getattr(importlib.import_module(rec.module), rec.name)
    comments = field_comments(cls)
    doc = _first_paragraph(cls.__doc__)
    if not doc:
        problems.append(f"{rec.module}.{rec.name} has no docstring")
    common = rec.where.get("*")  # every field comes from the same place: said once, no YAML column
    lines = [f"### `{rec.name}`", "", f"`{rec.module}.{rec.name}`: {doc}", ""]
    if common is not None:
        lines += [f"From: {common}.", "", "| field | type | default | description |", "|---|---|---|---|"]
    else:
        lines += ["| field | type | default | YAML | description |", "|---|---|---|---|---|"]
    for f in attrs.fields(cls):
        yaml_text, schema_doc = "", ""
        if common is None:
            try:
                yaml_text, schema_doc = _yaml_cell(rec, f.name)
            except DocError as e:
                problems.append(str(e))
        comment = comments.get(f.name, "")
        # the schema says what the YAML key means; a comment in the code adds what the Python value is
        desc = f"{schema_doc} *Python:* {comment}" if schema_doc and comment else schema_doc or comment
        if not desc:
            problems.append(f"{rec.module}.{rec.name}.{f.name}: no description (a comment on its line, "
                            "or '#:' lines above it)")
        cells = [f"`{f.name}`", f"`{_cell(str(f.type))}`", _cell(_default(f))]
        if common is None:
            cells.append(_cell(yaml_text))
        lines.append("| " + " | ".join([*cells, _cell(desc)]) + " |")
    lines += _members(cls, problems)
    return "\n".join(lines) + "\n"


def renames() -> list[str]:
    """Rows of the table of fields whose Python name or place differs from their YAML key."""
    rows = []
    for _title, recs in RECORDS:
        for rec in recs:
            if rec.yaml is None:
                continue
            cls = getattr(importlib.import_module(rec.module), rec.name)
            for f in attrs.fields(cls):
                where = rec.where.get(f.name)
                if where is None or where.split(".")[0] not in KINDS:
                    continue
                if where != f"{rec.yaml}.{f.name}":
                    owner = {"Architecture": "design.arch", "Workload": "design.workload",
                             "Mapping": "design.mapping"}.get(rec.name, rec.name)
                    rows.append(f"| `{where}` | `{owner}.{f.name}` |")
    return rows


HEADER = """# Python API: the records a plugin works with

<!-- generated by scripts/gen_api_docs.py from the code (attrs fields, comments, docstrings) and the
JSON Schemas; do not edit by hand: run `python scripts/gen_api_docs.py` (tests/test_api_docs.py
fails when this page is out of date) -->

An estimator's `estimate(designs)` receives a list of `Design` records and returns one
`Estimate` per design; a profiler's `profile(design, inputs)` returns a `Profile`
([writing a plugin](plugins.md), whose example is
[examples/my_estimator.py](examples/my_estimator.py)). All records are attrs classes;
the spec records (`Architecture`, `Workload`, `Mapping` and their parts) are frozen.
A `Design`'s views (`sizes`, `tree`, `hints`) are computed once and cached.

## Where the Python names differ from the YAML

Most fields carry their YAML key's name (`mapping.loops.<label>.tile` is
`design.mapping.loops[label].tile`). These do not:

| YAML key | Python |
|---|---|
| the architecture file (`architecture:`) | `design.arch` |
| `--preset`, else `mapping.preset` | `design.preset` (the values: `design.sizes`) |
| `workload.hints`, with `--variant`'s applied | `design.hints` (a loop's trips: `design.trips(label)`) |
"""

FOOTER = """
Keys of a YAML mapping become `dict` keys (`workload.arrays.A` is `design.workload.arrays["A"]`,
an `ArraySpec` whose `name` is `"A"`); YAML lists become tuples (`architecture.memory[0]` is
`design.arch.memory[0]`, outermost level first). A loop's expected trips per entry are
`design.trips(label)` (the hints of the design's input variant applied); a loop's total
iterations multiply the trips of the loops around it (see the plugin example).
"""


def render() -> str:
    """The page; DocError listing every field or member the code leaves undescribed."""
    problems: list[str] = []
    parts = [HEADER + "\n".join(renames()) + "\n" + FOOTER]
    for title, recs in RECORDS:
        parts.append(f"\n## {title}\n")
        for rec in recs:
            parts.append("\n" + record_section(rec, problems))
    if problems:
        raise DocError("\n".join(problems))
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", default=str(OUTPUT), help="output file ('-': stdout; default docs/api.md)")
    ap.add_argument("--check", action="store_true", help="exit 1 if the output file is out of date")
    args = ap.parse_args(argv)
    try:
        text = render()
    except DocError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    if args.check:
        current = out.read_text(encoding="utf-8") if out.exists() else ""
        if current != text:
            print(f"{out} is out of date: run python scripts/gen_api_docs.py", file=sys.stderr)
            return 1
        return 0
    from llmulator.fileio import atomic_write_text
    atomic_write_text(out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
