"""The bundled library of architectures, workloads and mappings, found by name.

A spec argument on the command line is a path, or a bare name looked up in the library folders of
every folder in ``LLMULATOR_LIBRARY`` (os.pathsep-separated; first match wins) and then of the bundled
library (the ``llmulator_library`` package: package data, so a wheel carries it). A library folder
holds ``arch_specs/``, ``workloads/``, ``mappings/`` (and ``spaces/``) sub-folders, or is *flat*: YAML
files side by side, each recognised by its top-level key (``architecture:``, ``workload:``,
``mapping:``, ``space:``).
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from .errors import UserError

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: the library is read often
FOLDERS = {"architecture": "arch_specs", "workload": "workloads", "mapping": "mappings", "space": "spaces"}


def roots() -> list[Path]:
    """The library folders in lookup order: ``LLMULATOR_LIBRARY``'s, then the bundled one."""
    out = [Path(p) for p in os.environ.get("LLMULATOR_LIBRARY", "").split(os.pathsep) if p]
    out.append(bundled())
    return out


def bundled() -> Path:
    """The folder of the bundled library (the installed ``llmulator_library`` package)."""
    import importlib.util
    spec = importlib.util.find_spec("llmulator_library")
    if spec is not None and spec.origin:
        return Path(spec.origin).resolve().parent
    return Path(__file__).resolve().parent.parent / "library"  # a source tree that was never installed


def is_bundled(path: str | Path) -> bool:
    """Whether a spec file is one the package ships, which an upgrade overwrites (edit a copy instead)."""
    try:
        return Path(path).resolve().is_relative_to(bundled())
    except (OSError, ValueError):
        return False


def files(root: Path, kind: str) -> list[Path]:
    """The YAML files of one kind under a library folder (its sub-folder, or a flat folder's own files)."""
    folder = root / FOLDERS[kind]
    if folder.is_dir():
        return sorted(folder.glob("*.y*ml"))
    if not root.is_dir() or any((root / f).is_dir() for f in FOLDERS.values()):
        return []
    return [f for f in sorted(root.glob("*.y*ml")) if top_key(f) == kind]


def _named(folder: Path, stem: str) -> list[Path]:
    """The files of :func:`files` in a sub-folder whose stem is ``stem``, in the same order: the names are
    matched as strings, without making and sorting a path of every file in the folder (~3 ms of every
    command that names a library design, issue 17)."""
    from fnmatch import fnmatchcase
    try:
        names = os.listdir(folder)
    except OSError:  # as glob does: an unreadable folder lists nothing
        return []
    return sorted(folder / n for n in names if n.startswith(stem) and fnmatchcase(n, "*.y*ml") and Path(n).stem == stem)


def top_key(path: Path) -> str | None:
    """The first top-level key of a YAML file, read from its text (no parse: flat folders are scanned often; and a
    file someone else named, e.g. a space's base mapping, is not parsed before it is known to be a spec: YAML
    errors quote what they fail on)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.strip() and not line.startswith(("#", " ", "\t", "---", "%")):
                    return line.split(":", 1)[0].strip()
    except OSError:
        return None
    return None


def resolve(kind: str, name_or_path: str) -> Path:
    """A path if it exists, else the library file of that name."""
    p = Path(name_or_path)
    if p.exists() or p.suffix in (".yaml", ".yml") or os.sep in name_or_path:
        return p
    for root in roots():
        folder = root / FOLDERS[kind]
        cands = _named(folder, name_or_path) if folder.is_dir() else files(root, kind)
        for cand in cands:
            if cand.stem == name_or_path:
                return cand
    known = ", ".join(sorted(e["name"] for e in entries(kind))) or "none"
    raise UserError(f"no {kind} file or library entry named '{name_or_path}' (library {kind}s: {known})")


def entries(kind: str) -> list[dict[str, str]]:
    """Name, description and path of every library file of one kind."""
    out = []
    seen = set()
    for root in roots():
        for f in files(root, kind):
            if f.stem in seen:
                continue
            seen.add(f.stem)
            desc = ""
            try:
                data = yaml.load(f.read_text(), Loader=_LOADER) or {}  # noqa: S506 - a safe loader
                body = data.get(kind, {}) if isinstance(data, dict) else {}
                desc = body.get("description", "") if isinstance(body, dict) else ""
                extra = {k: body[k] for k in ("workload", "architecture")
                         if kind == "mapping" and isinstance(body, dict) and body.get(k)}
            except yaml.YAMLError:
                extra = {}
            out.append({"name": f.stem, "description": desc.strip(), "path": str(f), **extra})
    return out
