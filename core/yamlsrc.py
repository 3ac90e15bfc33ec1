"""YAML loading that remembers where every value came from.

PyYAML's composed node tree carries start marks; we walk it once to build the
plain Python data and a map from field path (a tuple of keys and indices) to
(line, column), 1-based. Validation errors are then reported at the exact
position of the offending key or value. Duplicate keys, which PyYAML accepts
silently, are reported as errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import yaml

from .errors import Diagnostic, SpecError

PathKey = tuple[Any, ...]


@attrs.define
class SourceMap:
    """Where each field of a loaded document stands in its file."""

    file: str
    value_marks: dict[PathKey, tuple[int, int]] = attrs.field(factory=dict)
    key_marks: dict[PathKey, tuple[int, int]] = attrs.field(factory=dict)

    def locate(self, path: PathKey, prefer_key: bool = False) -> tuple[int | None, int | None]:
        """Position of a path; falls back to the nearest enclosing field that exists."""
        path = tuple(path)
        while True:
            if prefer_key and path in self.key_marks:
                return self.key_marks[path]
            if path in self.value_marks:
                return self.value_marks[path]
            if path in self.key_marks:
                return self.key_marks[path]
            if not path:
                return (None, None)
            path = path[:-1]

    def diag(self, path: PathKey, message: str, expected: str = "", hint: str = "",
             prefer_key: bool = False) -> Diagnostic:
        line, col = self.locate(path, prefer_key=prefer_key)
        return Diagnostic(self.file, line, col, format_path(path), message, expected, hint)


def format_path(path: PathKey) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out


def _walk(node: yaml.Node, path: PathKey, smap: SourceMap, errors: list[Diagnostic]) -> Any:
    smap.value_marks[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = yaml.SafeLoader(" ").construct_object(key_node) if not isinstance(
                key_node, yaml.ScalarNode) else _scalar(key_node)
            if isinstance(key, (list, dict)):
                errors.append(Diagnostic(smap.file, key_node.start_mark.line + 1,
                                         key_node.start_mark.column + 1, format_path(path),
                                         "a mapping key must be a plain name", "a string key"))
                continue
            if not isinstance(key, str):
                key = str(key)
            kpath = path + (key,)
            if key in out:
                first = smap.key_marks.get(kpath, (None, None))
                errors.append(Diagnostic(
                    smap.file, key_node.start_mark.line + 1, key_node.start_mark.column + 1,
                    format_path(kpath), f"duplicate key '{key}'",
                    "each key once per mapping", f"first defined at line {first[0]}; remove one"))
            smap.key_marks[kpath] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            out[key] = _walk(value_node, kpath, smap, errors)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_walk(n, path + (i,), smap, errors) for i, n in enumerate(node.value)]
    return _scalar(node)


_CONSTRUCTOR = yaml.SafeLoader("")


def _scalar(node: yaml.ScalarNode) -> Any:
    return _CONSTRUCTOR.construct_object(node, deep=True)


def _indent(text: str, line: int) -> int:
    """Indentation of a 0-based line; a line past the end (end of stream) counts as 0."""
    lines = text.splitlines()
    if line >= len(lines):
        return 0
    return len(lines[line]) - len(lines[line].lstrip(" "))


def load_yaml(path: str | Path, text: str | None = None) -> tuple[Any, SourceMap]:
    """Load one YAML document; raise SpecError with file:line:col on syntax errors."""
    fname = str(path)
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise SpecError(Diagnostic(fname, None, None, "", "file not found",
                                       hint="check the path")) from None
        except (IsADirectoryError, PermissionError, UnicodeDecodeError) as e:
            raise SpecError(Diagnostic(fname, None, None, "", f"cannot read file: {e}")) from None
    smap = SourceMap(fname)
    try:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        col = mark.column + 1 if mark else None
        msg = f"YAML syntax error: {e.problem or e.context}"
        hint = "check indentation, colons and quotes near this position"
        if "\t" in text:
            hint = "YAML does not allow tab characters for indentation; use spaces"
        # An unclosed quote or bracket is noticed far from where it was opened (often at the
        # end of the file): point at the opening, and say where the parser gave up.
        ctx, cm, pm = e.context or "", e.context_mark, e.problem_mark
        problem = e.problem or ""
        unclosed_quote = ctx.startswith("while scanning a quoted scalar") and (
            "end of stream" in problem or "document separator" in problem)
        unclosed_flow = ctx.startswith("while parsing a flow") and pm is not None and cm is not None \
            and pm.line != cm.line and _indent(text, pm.line) <= _indent(text, cm.line)
        if cm is not None and (unclosed_quote or unclosed_flow):
            what = "quoted string" if unclosed_quote else ("'{'" if "mapping" in ctx else "'['")
            at = f"line {pm.line + 1}" if pm is not None else "the end of the file"
            line, col = cm.line + 1, cm.column + 1
            msg = f"YAML syntax error: the {what} opened here is not closed ({problem} at {at})"
            hint = ("add the closing quote" if unclosed_quote
                    else "close the bracket, or separate its items with commas")
        elif ctx.startswith("while parsing a flow") and "\t" not in text:
            hint = "separate the items inside the brackets with commas; quote a value that contains ': '"
        elif problem.startswith("mapping values are not allowed") and "\t" not in text:
            hint = ("indent this key like its siblings, or quote a value that contains ': '")
        elif ctx.startswith("expected a single document") and problem:
            msg = f"YAML syntax error: {ctx}, {problem}"
            hint = "a spec file holds one YAML document; remove the '---' separator"
        raise SpecError(Diagnostic(fname, line, col, "", msg, "valid YAML", hint)) from None
    except yaml.YAMLError as e:
        raise SpecError(Diagnostic(fname, None, None, "", f"YAML error: {e}")) from None
    if node is None:
        raise SpecError(Diagnostic(fname, 1, 1, "", "the file is empty",
                                   "one top-level key: architecture, workload or mapping"))
    errors: list[Diagnostic] = []
    try:
        data = _walk(node, (), smap, errors)
    except yaml.YAMLError as e:
        raise SpecError(Diagnostic(fname, None, None, "", f"YAML error: {e}")) from None
    if errors:
        raise SpecError(errors)
    return data, smap
