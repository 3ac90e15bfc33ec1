#!/usr/bin/env python3
"""Generate docs/spec-reference.md from the JSON Schemas of the three spec kinds.

The schemas in core/schemas/ are the single source of truth for the spec
formats; this script renders them as a reference page: for every field its
path, type and allowed values or range, default, whether it is required and
its description, one section per file kind, each with a short complete example
taken verbatim from the bundled library; then the worked sections written by
hand in docs/spec-guide/*.md (one construct per file, appended in file-name
order; tests load and run their examples).

    python scripts/gen_spec_docs.py            # (re)write docs/spec-reference.md
    python scripts/gen_spec_docs.py --check    # exit 1 if the file is out of date
    python scripts/gen_spec_docs.py -o FILE    # write elsewhere ('-': stdout)

The output is written atomically (a temporary file in the same folder, then
os.replace), so an interrupted run never leaves a half-written page. The test
suite regenerates the page in memory and compares, so the docs cannot drift
from the schemas.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "core" / "schemas"
OUTPUT = ROOT / "docs" / "spec-reference.md"
# Worked sections written by hand: one '## Title' section per file, appended in file-name order.
GUIDES = ROOT / "docs" / "spec-guide"

# (kind, library folder, example file) in the order of the page.
KINDS = [
    ("architecture", "arch_specs", "arch_specs/systolic-16x16.yaml"),
    ("workload", "workloads", "workloads/gemm.yaml"),
    ("mapping", "mappings", "mappings/gemm-ws-16x16.yaml"),
]

# Placeholder shown in a path for the user-chosen key of a mapping with free-form keys.
PLACEHOLDERS = {
    "architecture.compute.operators": "<class>",
    "workload.parameters": "<param>",
    "workload.presets": "<preset>",
    "workload.presets.<preset>": "<param>",
    "workload.scalars": "<scalar>",
    "workload.arrays": "<array>",
    "workload.hints": "<label>",
    "workload.inputs.arrays": "<array>",
    "workload.inputs.variants": "<variant>",
    "mapping.loops": "<label>",
    "mapping.placement": "<array>",
    "mapping.partition": "<array>",
}
_PLACEHOLDER_BY_LAST = {"arrays": "<array>", "hints": "<label>", "presets": "<param>"}

# JSON-Schema type names in the YAML terms a spec is written in.
TYPE_WORDS = {"object": "mapping", "array": "list", "string": "string", "integer": "integer",
              "number": "number", "boolean": "boolean", "null": "empty"}


def load_schema(kind: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / f"{kind}.schema.json").read_text(encoding="utf-8"))


def _resolve(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow a local $ref; keys next to the $ref (description, default) win."""
    seen = 0
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise ValueError(f"only local $refs are supported, got {ref!r}")
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        seen += 1
        if seen > 20:
            raise ValueError(f"$ref cycle at {ref!r}")
    return node


def _code(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return f"`{text}`"


def _num(v: Any) -> str:
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def _range(node: dict[str, Any]) -> str:
    lo = ("≥", node["minimum"]) if "minimum" in node else (">", node["exclusiveMinimum"]) \
        if "exclusiveMinimum" in node else None
    hi = ("≤", node["maximum"]) if "maximum" in node else ("<", node["exclusiveMaximum"]) \
        if "exclusiveMaximum" in node else None
    if lo and hi:
        if lo[0] == "≥" and hi[0] == "≤":
            return f"from {_num(lo[1])} to {_num(hi[1])}"
        return f"{lo[0]} {_num(lo[1])} and {hi[0]} {_num(hi[1])}"
    if lo or hi:
        sign, v = lo or hi
        return f"{sign} {_num(v)}"
    return ""


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def type_text(root: dict[str, Any], node: dict[str, Any], key: str = "<name>") -> str:
    """Type, allowed values and range of one field, in a few words.

    ``key`` is the placeholder for a user-chosen key when the field is a mapping whose
    entries are all of one simple type (``mapping of <array> to string``).
    """
    node = _resolve(root, node)
    if "const" in node:
        return f"exactly {_code(node['const'])}"
    if "enum" in node:
        return "one of " + ", ".join(_code(v) for v in node["enum"])
    alts = node.get("anyOf") or node.get("oneOf")
    if alts:
        return " or ".join(type_text(root, a) for a in alts)
    t = node.get("type")
    base = " or ".join(TYPE_WORDS.get(x, x) for x in t) if isinstance(t, list) else TYPE_WORDS.get(t, t or "any")
    rng = _range(node)
    if rng:
        base += " " + rng
    extra: list[str] = []
    if "pattern" in node:
        base += f" matching {_code(node['pattern'])}"
    if node.get("minLength"):
        extra.append("non-empty")
    if t == "array":
        items = node.get("items")
        if isinstance(items, dict) and not _has_fields(_resolve(root, items)):
            inner = type_text(root, items)
            base = f"list of ({inner})" if " or " in inner else f"list of {inner}"
        n_lo, n_hi = node.get("minItems"), node.get("maxItems")
        if n_lo is not None and n_hi is not None:
            extra.append(_plural(n_lo, "item") if n_lo == n_hi else f"{n_lo} to {n_hi} items")
        elif n_lo is not None:
            extra.append("at least " + _plural(n_lo, "item"))
        elif n_hi is not None:
            extra.append("at most " + _plural(n_hi, "item"))
        if node.get("uniqueItems"):
            extra.append("no repeats")
    if t == "object":
        if "minProperties" in node:
            extra.append("at least " + _plural(node["minProperties"], "entry").replace("entrys", "entries"))
        names = node.get("propertyNames")
        if isinstance(names, dict) and "pattern" in _resolve(root, names):
            extra.append(f"keys matching {_code(_resolve(root, names)['pattern'])}")
        values = node.get("additionalProperties")
        if isinstance(values, dict) and not _has_fields(_resolve(root, values)):
            base = f"mapping of {key} to {type_text(root, values)}"
    return ", ".join([base] + extra)


def _is_object(node: dict[str, Any]) -> bool:
    return node.get("type") == "object"


def _has_fields(node: dict[str, Any]) -> bool:
    """Whether a node gets its own rows below it (named properties or free-form entries)."""
    if not _is_object(node):
        return False
    extra = node.get("additionalProperties")
    return bool(node.get("properties")) or isinstance(extra, dict)


def _placeholder(path: str) -> str:
    if path in PLACEHOLDERS:
        return PLACEHOLDERS[path]
    return _PLACEHOLDER_BY_LAST.get(path.rsplit(".", 1)[-1], "<name>")


def _cell(text: str) -> str:
    """Text for a table cell: one line, '|' escaped, and outside `code` no '<...>' taken for HTML."""
    parts = text.replace("\n", " ").split("`")
    for i in range(0, len(parts), 2):  # even parts lie outside code spans
        parts[i] = parts[i].replace("<", "&lt;")
    return "`".join(parts).replace("|", "\\|").strip()


def field_rows(root: dict[str, Any], node: dict[str, Any], path: str, required: bool,
               rows: list[dict[str, str]], fallback: str = "") -> None:
    """Append one row for ``node`` at ``path``, then rows for everything below it."""
    node = _resolve(root, node)
    rows.append({
        "path": path,
        "type": type_text(root, node, _placeholder(path)),
        "default": _code(node["default"]) if "default" in node else "",
        "required": "yes" if required else "",
        "description": node.get("description", "") or fallback,
    })
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        items = _resolve(root, node["items"])
        if _has_fields(items):
            field_rows(root, items, f"{path}[]", False, rows, "One item of the list.")
        return
    if not _is_object(node):
        return
    req = set(node.get("required", []))
    for name, sub in node.get("properties", {}).items():
        field_rows(root, sub, f"{path}.{name}", name in req, rows)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and _has_fields(_resolve(root, extra)):
        key = _placeholder(path)
        field_rows(root, extra, f"{path}.{key}", False, rows, f"One entry, by {key[1:-1]} name.")


def kind_section(kind: str, folder: str, example: str) -> str:
    schema = load_schema(kind)
    body = schema["properties"][kind]
    rows: list[dict[str, str]] = []
    field_rows(schema, body, kind, True, rows)
    out = [f"## {kind.capitalize()}", ""]
    out.append(f"Files in `{folder}/`, with the single top-level key `{kind}:`. "
               f"Schema: `core/schemas/{kind}.schema.json`.")
    out += ["", schema.get("description", "").strip(), ""]
    text = (ROOT / example).read_text(encoding="utf-8").rstrip("\n")
    out += [f"Example (`{example}`):", "", "```yaml", text, "```", ""]
    out += [f"### {kind.capitalize()} fields", ""]
    out += ["| Field | Type and allowed values | Default | Required | Description |",
            "|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {_cell('`' + r['path'] + '`')} | {_cell(r['type'])} | {_cell(r['default'])} | "
                   f"{r['required']} | {_cell(r['description'])} |")
    out.append("")
    return "\n".join(out)


def guide_sections() -> list[tuple[str, str]]:
    """(title, text) of each hand-written worked section, in file-name order."""
    out = []
    for path in sorted(GUIDES.glob("*.md")) if GUIDES.is_dir() else []:
        text = path.read_text(encoding="utf-8").strip("\n") + "\n"
        first = text.splitlines()[0]
        if not first.startswith("## "):
            raise ValueError(f"{path}: a worked section starts with a '## Title' line")
        out.append((first[3:].strip(), text))
    return out


def _anchor(title: str) -> str:
    return "".join(c for c in title.lower().replace(" ", "-") if c.isalnum() or c in "-_")


def render() -> str:
    """The whole reference page, as text (deterministic: same schemas and guides, same page)."""
    guides = guide_sections()
    head = [
        "# Spec reference",
        "",
        "<!-- Generated by scripts/gen_spec_docs.py from core/schemas/*.schema.json. "
        "Do not edit by hand: edit the schemas and rerun the script. -->",
        "",
        "A design is three YAML files: an **architecture** (the hardware), a **workload** (the kernel "
        "and its sizes) and a **mapping** (how the kernel runs on the hardware). Each file has one "
        "top-level key naming its kind. Check files with "
        "`llmulator validate ARCH.yaml WORKLOAD.yaml MAPPING.yaml` (one file: schema checks; all "
        "three: cross-file checks too); every problem is reported as "
        "`file:line:col: error: field.path: message` with what was expected and a hint.",
        "",
        "Conventions:",
        "",
        "- Units are part of key names (`clock_mhz`, `capacity_kib`, `energy_pj`, `area_um2`, "
        "`leakage_mw`, `latency_cycles`, `width_bits`); values are plain numbers.",
        "- `Field` paths use `.` between keys, `[]` for the items of a list, and `<...>` for a key "
        "the user chooses (an operator class, an array, a loop label, ...).",
        "- Required: the key must be present when its parent is. Default: the value used when the "
        "key is omitted (figures an architecture omits otherwise come from its technology table).",
        "",
        "Contents: " + ", ".join(f"[{k.capitalize()}](#{k})" for k, _, _ in KINDS) + "."
        + (" Worked examples: " + ", ".join(f"[{t}](#{_anchor(t)})" for t, _ in guides) + "." if guides else ""),
        "",
    ]
    page = "\n".join(head) + "\n" + "\n".join(kind_section(*k) for k in KINDS)
    return page + "".join("\n" + text for _, text in guides)


def write_atomic(path: Path, text: str) -> None:
    from llmulator.fileio import atomic_write_text
    atomic_write_text(path, text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", default=str(OUTPUT), help="output file ('-': stdout)")
    ap.add_argument("--check", action="store_true", help="exit 1 if the output file is out of date")
    args = ap.parse_args(argv)
    text = render()
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    if args.check:
        current = out.read_text(encoding="utf-8") if out.is_file() else None
        if current != text:
            print(f"{out} is out of date; run: python scripts/gen_spec_docs.py", file=sys.stderr)
            return 1
        print(f"{out} is up to date")
        return 0
    write_atomic(out, text)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
