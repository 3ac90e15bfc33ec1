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
    merged_key_marks: dict[PathKey, tuple[int, int]] = attrs.field(factory=dict)  # keys from `<<: *anchor`

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
            if path in self.merged_key_marks:
                return self.merged_key_marks[path]
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


#: bounds on what one spec file may hold: aliases are expanded as they are walked, so a few hundred
#: bytes of nested aliases (a "billion laughs") would otherwise take minutes and gigabytes
MAX_FILE_BYTES = 64 << 20
MAX_VALUES = 2_000_000
MAX_DEPTH = 64


class _TooBig(Exception):
    def __init__(self, node: yaml.Node, why: str):
        self.node, self.why = node, why


def _walk(node: yaml.Node, path: PathKey, smap: SourceMap, errors: list[Diagnostic],
          budget: list[int] | None = None) -> Any:
    budget = budget if budget is not None else [MAX_VALUES]
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig(node, f"the document expands to more than {MAX_VALUES:,} values (nested YAML aliases?)")
    if len(path) > MAX_DEPTH:
        raise _TooBig(node, f"values are nested more than {MAX_DEPTH} levels deep")
    smap.value_marks[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base` (or a list of them): the keys
                merged = [value_node] if isinstance(value_node, yaml.MappingNode) else list(value_node.value) \
                    if isinstance(value_node, yaml.SequenceNode) else []   # written here win
                if not merged or not all(isinstance(m, yaml.MappingNode) for m in merged):
                    errors.append(Diagnostic(smap.file, key_node.start_mark.line + 1, key_node.start_mark.column + 1,
                                             format_path(path), "a merge key (<<) takes a mapping or a list of "
                                             "mappings", "<<: *anchor"))
                    continue
                for m in merged:
                    marks = SourceMap(smap.file)  # where the merged values stand: kept for the keys not
                    for k, v in _walk(m, path, marks, errors, budget).items():  # written here
                        if k not in out:
                            out[k] = v
                            for table, own in ((marks.value_marks, smap.value_marks),
                                               (marks.key_marks, smap.merged_key_marks)):
                                own.update({p: mk for p, mk in table.items() if p[:len(path) + 1] == path + (k,)})
                continue
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
            if key in out and kpath in smap.key_marks:
                first = smap.key_marks.get(kpath, (None, None))
                errors.append(Diagnostic(
                    smap.file, key_node.start_mark.line + 1, key_node.start_mark.column + 1,
                    format_path(kpath), f"duplicate key '{key}'",
                    "each key once per mapping", f"first defined at line {first[0]}; remove one"))
            smap.key_marks[kpath] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            out[key] = _walk(value_node, kpath, smap, errors, budget)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_walk(n, path + (i,), smap, errors, budget) for i, n in enumerate(node.value)]
    value = _scalar(node)
    why = _unusable(value)
    if why is not None:
        errors.append(Diagnostic(smap.file, node.start_mark.line + 1, node.start_mark.column + 1,
                                 format_path(path), why[0], why[1], why[2]))
    return value


def _expanded_size(root: yaml.Node) -> int:
    """How many values the document holds once its aliases are expanded, counted on the node graph
    (a shared node once, times its uses) without expanding anything; a cycle counts as too many."""
    memo: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    on_path: set[int] = set()
    while stack:
        node, done = stack.pop()
        k = id(node)
        if isinstance(node, yaml.MappingNode):
            kids = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            kids = list(node.value)
        else:
            memo[k] = 1
            continue
        if done:
            on_path.discard(k)
            memo[k] = min(1 + sum(memo[id(c)] for c in kids), MAX_VALUES + 1)
            continue
        if k in memo:
            continue
        if k in on_path:
            return MAX_VALUES + 1  # an alias to an enclosing value: infinite
        on_path.add(k)
        stack.append((node, True))
        stack.extend((c, False) for c in kids if id(c) not in memo)
    return memo[id(root)]


def _unusable(value: Any) -> tuple[str, str, str] | None:
    """A YAML value no spec field can mean: (message, expected, hint), or None."""
    import datetime
    import math
    if isinstance(value, (datetime.date, datetime.datetime)):
        return (f"YAML reads {value!s} as a date, which no spec field takes", "a number or a string",
                "quote it to keep it as text")
    if isinstance(value, bytes):
        return ("a !!binary value, which no spec field takes", "a number or a string", "")
    if isinstance(value, float) and not math.isfinite(value):
        return (f"{value} is not a finite number", "a finite number", "")
    if isinstance(value, float) and abs(value) > 1e30:
        return (f"{value:g} is beyond any quantity a spec holds", "a number of at most 1e30 in magnitude", "")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**63 - 1:
        return (f"the integer {value} is too large (more than 64 bits)", "an integer below 2**63", "")
    return None


_CONSTRUCTOR = yaml.SafeLoader("")
#: libyaml's parser where PyYAML was built with it (six times faster on large files), else PyYAML's own
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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
            # a device (/dev/zero) or a FIFO reports no size: only a regular file is read, and never past the limit
            if Path(path).exists() and not Path(path).is_file():
                raise SpecError(Diagnostic(fname, None, None, "", "not a regular file", "a YAML spec file"))
            with open(path, "rb") as f:
                raw = f.read(MAX_FILE_BYTES + 1)
            if len(raw) > MAX_FILE_BYTES:
                raise SpecError(Diagnostic(fname, None, None, "", f"the file is more than {MAX_FILE_BYTES >> 20} "
                                           f"MiB; a spec file holds at most {MAX_FILE_BYTES >> 20} MiB"))
            text = raw.decode("utf-8")
        except FileNotFoundError:
            raise SpecError(Diagnostic(fname, None, None, "", "file not found",
                                       hint="check the path")) from None
        except (IsADirectoryError, PermissionError, UnicodeDecodeError) as e:
            raise SpecError(Diagnostic(fname, None, None, "", f"cannot read file: {e}")) from None
    smap = SourceMap(fname)
    try:
        loader = _LOADER(text)
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
    except RecursionError:
        raise SpecError(Diagnostic(fname, None, None, "", "YAML values are nested too deeply",
                                   f"at most {MAX_DEPTH} levels")) from None
    if node is None:
        raise SpecError(Diagnostic(fname, 1, 1, "", "the file is empty",
                                   "one top-level key: architecture, workload or mapping"))
    errors: list[Diagnostic] = []
    if _expanded_size(node) > MAX_VALUES:
        raise SpecError(Diagnostic(fname, 1, 1, "", f"the document expands to more than {MAX_VALUES:,} values "
                                   "(nested YAML aliases?)", "a spec of ordinary size",
                                   "write the values out instead of nesting aliases"))
    try:
        data = _walk(node, (), smap, errors)
    except yaml.YAMLError as e:
        raise SpecError(Diagnostic(fname, None, None, "", f"YAML error: {e}")) from None
    except _TooBig as e:
        raise SpecError(Diagnostic(fname, e.node.start_mark.line + 1, e.node.start_mark.column + 1, "",
                                   e.why, "a spec of ordinary size",
                                   "write the values out instead of nesting aliases")) from None
    if errors:
        raise SpecError(errors)
    return data, smap
