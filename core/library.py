"""The bundled library of architectures, workloads and mappings, found by name.

A spec argument on the command line is a path, or a bare name looked up in
the library folders (``arch_specs/``, ``workloads/``, ``mappings/``) of the
source tree and of every folder in ``LLMULATOR_LIBRARY`` (os.pathsep-separated).
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from .errors import UserError

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: the library is read often
FOLDERS = {"architecture": "arch_specs", "workload": "workloads", "mapping": "mappings"}


def roots() -> list[Path]:
    out = [Path(p) for p in os.environ.get("LLMULATOR_LIBRARY", "").split(os.pathsep) if p]
    out.append(Path(__file__).resolve().parent.parent)
    return out


def resolve(kind: str, name_or_path: str) -> Path:
    """A path if it exists, else the library file of that name."""
    p = Path(name_or_path)
    if p.exists() or p.suffix in (".yaml", ".yml") or os.sep in name_or_path:
        return p
    for root in roots():
        for ext in (".yaml", ".yml"):
            cand = root / FOLDERS[kind] / f"{name_or_path}{ext}"
            if cand.is_file():
                return cand
    known = ", ".join(sorted(e["name"] for e in entries(kind))) or "none"
    raise UserError(f"no {kind} file or library entry named '{name_or_path}' (library {kind}s: {known})")


def entries(kind: str) -> list[dict[str, str]]:
    """Name, description and path of every library file of one kind."""
    out = []
    seen = set()
    for root in roots():
        folder = root / FOLDERS[kind]
        if not folder.is_dir():
            continue
        for f in sorted(folder.glob("*.y*ml")):
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
