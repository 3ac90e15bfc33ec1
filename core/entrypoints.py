"""The entry points of one group, read from the distributions on ``sys.path`` without ``importlib.metadata``.

Why this exists: every ``llmulator`` command loads its plugins from the ``llmulator`` entry-point group, and
``importlib.metadata`` (email, zipfile, csv and pathlib behind it) took ~25 ms to import and ~15 ms more to list
the entry points and read each plugin's distribution name and version: a tenth of a cold ``llmulator estimate
--estimator analytical`` (issue 17). What the plugin manager needs is small (each entry point's name and value,
its distribution's name and version, and ``load()``), so this module reads just that: one ``os.listdir`` per
``sys.path`` folder, and the ``entry_points.txt`` of each ``*.dist-info`` / ``*.egg-info`` folder (~2 ms).

It finds what ``importlib.metadata.entry_points(group=...)`` finds, in the same order: ``sys.path`` in order, each
folder's metadata folders in ``os.listdir`` order, the first distribution of a normalised name winning (so the
plugins load, and register their components, in the same order). Nothing is cached between processes, so a
plugin installed or removed is seen by the next command. Where the cheap reading would not see what
``importlib.metadata`` sees (a ``sys.path`` entry that is a zip file or an ``.egg``, a finder on ``sys.meta_path``
other than the standard one that provides distributions, a metadata folder without a name or version), it does
not guess: :func:`entry_points` asks ``importlib.metadata``.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from importlib import import_module
from typing import Any

_PATTERN = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")  # importlib's
_INFO = (".dist-info", ".egg-info")


class _Unusual(Exception):
    """The environment holds something only ``importlib.metadata`` reads the way it should."""


class Distribution:
    """The name and version of an installed distribution (its ``METADATA``, else ``PKG-INFO``), as
    ``importlib.metadata.Distribution.name`` and ``.version`` give them."""

    def __init__(self, path: str):
        self.path = path
        headers = _headers(path)
        if "name" not in headers or "version" not in headers:
            raise _Unusual(path)
        self.name: str = headers["name"]
        self.version: str = headers["version"]


class EntryPoint:
    """One entry point: what ``importlib.metadata.EntryPoint`` offers the plugin manager."""

    def __init__(self, name: str, value: str, group: str, dist: Distribution):
        self.name, self.value, self.group, self.dist = name, value, group, dist

    def load(self) -> Any:
        """The object the entry point names (``module`` or ``module:attr.attr``), imported."""
        match = _PATTERN.match(self.value)
        module = import_module(match.group("module"))
        return functools.reduce(getattr, filter(None, (match.group("attr") or "").split(".")), module)

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"


def entry_points(group: str) -> list[Any]:
    """The entry points of ``group`` of every installed distribution, as ``importlib.metadata.entry_points``
    lists them (read by ``importlib.metadata`` itself where the environment is unusual, see the module)."""
    try:
        return scan(group)
    except _Unusual:
        from importlib.metadata import entry_points as from_metadata
        return list(from_metadata(group=group))


def scan(group: str) -> list[EntryPoint]:
    """:func:`entry_points` read from the metadata folders on ``sys.path``; raises ``_Unusual`` where that would
    not find what ``importlib.metadata`` finds."""
    if any(getattr(f, "find_distributions", None) is not None and not _standard(f) for f in sys.meta_path):
        raise _Unusual("a finder on sys.meta_path provides distributions")
    out: list[EntryPoint] = []
    for folder in _distributions():
        text = _read(os.path.join(folder, "entry_points.txt"))
        pairs = _section(text, group) if text else []
        if pairs:
            dist = Distribution(folder)
            out += [EntryPoint(name, value, group, dist) for name, value in pairs]
    return out


def _standard(finder: Any) -> bool:
    """The standard library's PathFinder, or the ``importlib_metadata`` backport's finder, which reads the same
    folders on ``sys.path`` (dask and datasets import the backport, which installs it: every scan after them
    fell back to ``importlib.metadata``, and a test of the scanner failed when it ran after theirs)."""
    cls = finder if isinstance(finder, type) else type(finder)
    return (cls.__name__ == "PathFinder" and cls.__module__ in (
        "_frozen_importlib_external", "importlib._bootstrap_external", "importlib.machinery")) or (
        cls.__name__ == "MetadataPathFinder" and cls.__module__.split(".")[0] == "importlib_metadata")


def _normalize(name: str) -> str:
    """PEP 503 normalisation with underscores (``importlib.metadata.Prepared.normalize``)."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _distributions() -> list[str]:
    """The metadata folders of the distributions on ``sys.path``, the first of each normalised name only."""
    seen: set[str] = set()
    found = []
    for entry in sys.path:
        root = os.fspath(entry) if isinstance(entry, (str, os.PathLike)) else None
        if root is None:
            raise _Unusual(f"sys.path entry {entry!r}")
        if os.path.basename(root).lower().endswith(".egg"):
            raise _Unusual(root)
        try:
            children = os.listdir(root or ".")
        except OSError:
            if os.path.isfile(root):  # a zip file on sys.path
                raise _Unusual(root) from None
            continue
        for child in children:
            low = child.lower()
            if low.endswith(_INFO):
                name = _normalize(low.rpartition(".")[0].partition("-")[0])
                if name not in seen:
                    seen.add(name)
                    found.append(os.path.join(root, child))
    return found


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def _section(text: str, group: str) -> list[tuple[str, str]]:
    """``name = value`` pairs of one ``[group]`` of an ``entry_points.txt`` (``importlib.metadata.Sectioned``:
    lines stripped, blank lines and ``#`` comments skipped)."""
    pairs, current = [], None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line.strip("[]")
        elif current == group:
            name, sep, value = line.partition("=")
            if not sep:
                raise _Unusual(f"entry point line {line!r}")
            pairs.append((name.strip(), value.strip()))
    return pairs


def _headers(folder: str) -> dict[str, str]:
    """The first ``Name`` and ``Version`` headers of a distribution's metadata, as ``email`` reads them."""
    text = _read(os.path.join(folder, "METADATA")) or _read(os.path.join(folder, "PKG-INFO"))
    out: dict[str, str] = {}
    last = None
    for line in (text or "").splitlines():
        if not line.strip():
            break
        if line[0] in " \t":  # a folded header's continuation
            if last in ("name", "version"):
                raise _Unusual(folder)
            continue
        key, sep, value = line.partition(":")
        last = key.lower() if sep and key == key.strip() else None
        if last is None:
            raise _Unusual(folder)
        if last in ("name", "version") and last not in out:
            out[last] = value.lstrip(" \t")
    return out
