"""JSON-Schema validation of spec documents, turned into positioned diagnostics.

The schemas (draft 2020-12) ship in ``llmulator/schemas``. Each jsonschema
error is mapped back to the file position of the offending field, and common
mistakes get a hint: a misspelt key gets "did you mean", a key with the wrong
unit suffix gets the right one.

A document that passed is remembered by content: an empty file under
``$LLMULATOR_CACHE/valid`` (default ``~/.cache/llmulator``) named by the
SHA-256 of the document (its values with their types), the schema, this
module's source, the installed jsonschema and llmulator's version. The same
document passes again without jsonschema being imported: importing it was
~70 ms of CPU of every cold ``llmulator estimate`` on this project's 2-core
machine, validating three files 6 ms. A document with errors is never
remembered (its diagnostics are computed every time); a cache folder that
cannot be written only means no memo.
"""

from __future__ import annotations

import difflib
import json
import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import Diagnostic, SpecError
from .tech import package_file
from .yamlsrc import SourceMap

if TYPE_CHECKING:
    import jsonschema

KINDS = ("architecture", "workload", "mapping")

_UNIT_SUFFIXES = ("_bits", "_bytes", "_kib", "_mib", "_kb", "_mb", "_pj", "_nj", "_um2", "_mm2",
                  "_mhz", "_ghz", "_cycles", "_mw", "_w", "_bytes_per_cycle")


@cache
def schema(kind: str) -> dict[str, Any]:
    text = package_file("schemas", f"{kind}.schema.json").read_text()
    return json.loads(text)


@cache
def _validator(kind: str) -> jsonschema.Draft202012Validator:
    import jsonschema
    return jsonschema.Draft202012Validator(schema(kind))


def _canon(x: Any) -> str:
    """A text that differs whenever the value (or the type of any part) differs; key order does not count."""
    if isinstance(x, dict):
        return "{" + ",".join(sorted(f"{_canon(k)}:{_canon(v)}" for k, v in x.items())) + "}"
    if isinstance(x, (list, tuple)):
        return "[" + ",".join(_canon(v) for v in x) + "]"
    return f"{type(x).__name__}:{x!r}"


@cache
def _code_stamp() -> str:
    """What else decides whether a document passes: this module's source, the installed jsonschema (its
    files' size and time; no import), llmulator's version."""
    from importlib.util import find_spec

    from . import __version__
    spec = find_spec("jsonschema")
    js = os.stat(spec.origin) if spec and spec.origin else None
    return f"{__version__}\0{Path(__file__).read_text()}\0{(js.st_size, js.st_mtime_ns) if js else None}"


@cache
def _schema_stamp(kind: str) -> str:
    import hashlib
    return hashlib.sha256(f"{_code_stamp()}\0{kind}\0{json.dumps(schema(kind), sort_keys=True)}".encode()).hexdigest()


def _memo(kind: str, data: Any) -> Path | None:
    """The file that says ``data`` passed the ``kind`` schema (None where it cannot be named)."""
    import hashlib
    try:
        h = hashlib.sha256(_schema_stamp(kind).encode())
        h.update(_canon(data).encode())
    except (OSError, ValueError, TypeError, RecursionError):
        return None
    from .fileio import cache_root
    return cache_root() / "valid" / f"{kind}-{h.hexdigest()}"


def _remember(memo: Path | None) -> None:
    if memo is None:
        return
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        memo.touch()
    except OSError:  # a read-only or full cache: no memo, nothing else changes
        pass


def _strip_unit(key: str) -> str:
    for suf in sorted(_UNIT_SUFFIXES, key=len, reverse=True):
        if key.endswith(suf):
            return key[: -len(suf)]
    return key


def _key_hint(bad: str, allowed: list[str]) -> str:
    base = _strip_unit(bad)
    same_base = [a for a in allowed if _strip_unit(a) == base and a != bad]
    if same_base:
        return f"units are part of the key name: write '{same_base[0]}' (check the unit of the value)"
    close = difflib.get_close_matches(bad, allowed, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    return "allowed keys: " + ", ".join(sorted(allowed))


# JSON-Schema words in the YAML terms users write specs in.
_TYPE_WORDS = {"object": "mapping", "array": "list", "null": "empty value"}
_PATTERN_WORDS = {
    "^[A-Za-z_][A-Za-z0-9_]*$": "a name of letters, digits and _ that does not start with a digit",
    "^[A-Za-z_][A-Za-z0-9_.-]*$": "a name of letters, digits, _ . and - that does not start with a digit",
    "^[A-Za-z0-9_+\\-*/%() .]+$": "an expression of names and numbers with + - * / % and parentheses",
}


def _type_word(t: str) -> str:
    return _TYPE_WORDS.get(t, t)


def _describe(subschema: dict[str, Any]) -> str:
    if not isinstance(subschema, dict):
        return ""
    if "enum" in subschema:
        return "one of " + ", ".join(repr(v) for v in subschema["enum"])
    if "const" in subschema:
        return repr(subschema["const"])
    t = subschema.get("type")
    parts = []
    if t:
        parts.append(_type_word(t) if isinstance(t, str) else " or ".join(map(_type_word, t)))
    if "pattern" in subschema:
        words = _PATTERN_WORDS.get(subschema["pattern"])
        if words and t == "string":
            parts = [words]
        else:
            parts.append(words or f"matching {subschema['pattern']}")
    for k, word in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
                    ("exclusiveMaximum", "<")):
        if k in subschema:
            parts.append(f"{word} {subschema[k]}")
    if "description" in subschema:
        parts.append(f"({subschema['description']})")
    return " ".join(parts)


MAX_UNKNOWN_KEYS = 5


def _error_to_diag(err: jsonschema.ValidationError, smap: SourceMap) -> list[Diagnostic]:
    path = tuple(err.absolute_path)
    v = err.validator
    if v == "additionalProperties" and isinstance(err.instance, dict):
        allowed = list(err.schema.get("properties", {}))
        out = []
        unknown = [k for k in err.instance if k not in allowed] if not err.schema.get("patternProperties") else []
        for key in unknown[:MAX_UNKNOWN_KEYS]:
            name = repr(key) if not str(key).isprintable() else f"'{key}'"  # (a newline in it would fake a line)
            out.append(smap.diag(path + (key,), f"unknown key {name}",
                                 "one of: " + ", ".join(sorted(allowed)) if allowed else "",
                                 _key_hint(key, allowed), prefer_key=True))
        if len(unknown) > MAX_UNKNOWN_KEYS:  # the first few say what is wrong; the rest is noise
            out.append(smap.diag(path, f"... and {len(unknown) - MAX_UNKNOWN_KEYS:,} more unknown keys here",
                                 "one of: " + ", ".join(sorted(allowed)) if allowed else ""))
        if out:
            return out
    if v == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        sub = err.schema.get("properties", {}).get(missing, {})
        return [smap.diag(path, f"missing required key '{missing}'", _describe(sub),
                          f"add '{missing}:' here", prefer_key=True)]
    if v == "propertyNames" or "propertyNames" in err.relative_schema_path:
        # jsonschema reports a bad key through the failing keyword of the propertyNames
        # schema, with the key itself as the instance: point at that key.
        name = err.instance
        at = path + (name,) if isinstance(name, str) else path
        return [smap.diag(at, f"invalid name {name!r}", _describe(err.schema) or "a valid name",
                          YAML_BOOL_HINT if isinstance(name, bool) else "rename the key", prefer_key=True)]
    if v in ("anyOf", "oneOf") and err.context:
        best = max(err.context, key=lambda e: len(e.absolute_path))
        if len(best.absolute_path) > len(path):
            # a mapping or list that matched one alternative up to a field inside: report that field
            return _error_to_diag(best, smap)
        return [_alternatives_diag(err, smap)]
    got = err.instance
    got_text = json.dumps(got) if not isinstance(got, (dict, list)) else \
        ("a mapping" if isinstance(got, dict) else "a list")
    msg = {
        "type": f"wrong type: got {got_text}",
        "enum": f"invalid value {got_text}",
        "const": f"invalid value {got_text}",
        "minimum": f"value {got_text} is too small",
        "exclusiveMinimum": f"value {got_text} is too small",
        "maximum": f"value {got_text} is too large",
        "pattern": f"invalid text {got_text}",
        "minItems": "too few items",
        "maxItems": "too many items",
        "minProperties": "must not be empty",
        "uniqueItems": "items must be unique",
        "minLength": "must not be empty",
    }.get(v, err.message)
    hint = ""
    if v == "type" and isinstance(got, str) and err.validator_value in ("number", "integer"):
        hint = "write a plain number"
        if got.strip()[:1].isdigit():
            hint += "; the unit is part of the key name"
    if v == "type" and got is None:
        hint = "the value is empty: give one, or remove the key"
    if v in ("type", "enum") and isinstance(got, bool) and err.validator_value not in ("boolean", ["boolean"]):
        hint = YAML_BOOL_HINT
    if v == "enum" and isinstance(got, str):
        close = difflib.get_close_matches(got, [str(x) for x in err.validator_value], n=1, cutoff=0.6)
        if close:
            hint = f"did you mean '{close[0]}'?"
    if path and path[-1] == "version":
        hint = "this llmulator reads spec version 1"
    return [smap.diag(path, msg, _describe(err.schema), hint)]


#: YAML 1.1 (PyYAML) reads yes/no, on/off and true/false (lower, Capitalised or UPPER case) as booleans: a name
#: like NO or On becomes false / true
YAML_BOOL_HINT = ("YAML reads yes/no, on/off and true/false (lower, Capitalised or UPPER case) as booleans: quote "
                  "the value ('NO') where it is a name or text")

_JSON_TYPES = {"number": (int, float), "integer": (int,), "string": (str,), "object": (dict,), "array": (list,),
               "boolean": (bool,)}


def _alternatives_diag(err: jsonschema.ValidationError, smap: SourceMap) -> Diagnostic:
    """A value that fits none of the alternatives of an anyOf/oneOf: say what each alternative
    accepts (``a number >= 0, or an expression ...``), not only the first one's type."""
    path = tuple(err.absolute_path)
    got = err.instance
    alts = err.validator_value if isinstance(err.validator_value, list) else []
    expected = ", or ".join(filter(None, (_describe({k: x for k, x in a.items() if k != "description"})
                                          for a in alts if isinstance(a, dict))))
    if isinstance(err.schema, dict) and err.schema.get("description"):
        expected += f" ({err.schema['description']})"

    def has_type(a: dict[str, Any]) -> bool:
        t = a.get("type")
        kinds = _JSON_TYPES.get(t, ()) if isinstance(t, str) else ()
        return isinstance(got, kinds) and not (isinstance(got, bool) and t != "boolean")

    same_type = [e for e in err.context if isinstance(e.schema, dict) and has_type(e.schema)]
    got_text = json.dumps(got) if not isinstance(got, (dict, list)) else \
        ("a mapping" if isinstance(got, dict) else "a list")
    if same_type:
        # the value has the right type for an alternative but breaks one of its limits
        e = same_type[0]
        msg = {"minimum": f"value {got_text} is too small", "exclusiveMinimum": f"value {got_text} is too small",
               "maximum": f"value {got_text} is too large", "exclusiveMaximum": f"value {got_text} is too large",
               "pattern": f"invalid text {got_text}"}.get(e.validator, f"invalid value {got_text}")
    else:
        msg = f"wrong type: got {got_text}"
    hint = ("the value is empty: give one, or remove the key" if got is None else
            YAML_BOOL_HINT if isinstance(got, bool) else "")
    return smap.diag(path, msg, expected, hint)


def _found_keys(data: dict) -> str:
    """The top-level keys a file has, named only where they are (close to) a spec kind: a file named where a spec
    was expected (a space's ``base_mapping: /etc/shadow``) is not echoed (an outside probe read a host file's lines,
    each ending in ``:``, and a JSON file's keys, a token among them, through a space file)."""
    keys = [str(k) for k in data]
    shown = [k for k in keys if len(k) <= 40 and difflib.get_close_matches(k, KINDS, n=1, cutoff=0.6)]
    rest = len(keys) - len(shown)
    return ", ".join(shown) + (f"{' and ' if shown else ''}{rest} other key(s), not shown" if rest else "")


def validate(kind: str, data: Any, smap: SourceMap) -> None:
    """Validate ``data`` against the schema of ``kind``; raise SpecError listing every problem."""
    if not isinstance(data, dict) or len(data) != 1 or kind not in data:
        found = _found_keys(data) if isinstance(data, dict) else type(data).__name__
        raise SpecError(smap.diag((), f"expected one top-level key '{kind}', found: {found}",
                                  f"a mapping with the single key '{kind}'",
                                  _guess_kind_hint(data, kind)))
    memo = _memo(kind, data)
    if memo is not None and memo.is_file():  # this very document passed before (module docstring)
        return
    errors = sorted(_validator(kind).iter_errors(data),
                    key=lambda e: (smap.locate(tuple(e.absolute_path))[0] or 0, e.validator))
    diags: list[Diagnostic] = []
    seen = set()
    for e in errors:
        for d in _error_to_diag(e, smap):
            k = (d.line, d.col, d.message)
            if k not in seen:
                seen.add(k)
                diags.append(d)
    if diags:
        raise SpecError(diags)
    _remember(memo)


def _guess_kind_hint(data: Any, kind: str) -> str:
    if isinstance(data, dict):
        for k in data:
            close = difflib.get_close_matches(str(k), KINDS, n=1, cutoff=0.6)
            if close and close[0] != kind:
                return f"this looks like a {close[0]} file; pass it in the {close[0]} position"
            if close and close[0] == kind and k != kind:
                return f"did you mean '{kind}'?"
    return f"start the file with '{kind}:'"


def detect_kind(data: Any) -> str | None:
    if isinstance(data, dict) and len(data) == 1:
        (k,) = data
        if k in KINDS:
            return k
    return None
