"""Read the workload and architecture library as plain dicts (the raw material of stages 2 and 3)."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path

import yaml
from llmulator.library import entries

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def _load(kind: str) -> dict[str, dict]:
    out = {}
    for e in entries(kind):
        data = yaml.load(Path(e["path"]).read_text(), Loader=_LOADER)  # noqa: S506 - a safe loader
        out[e["name"]] = data[kind]
    return out


def workload_names() -> list[str]:
    return sorted(_load("workload"))


def workload(name: str) -> dict:
    return copy.deepcopy(_load("workload")[name])


def workloads() -> dict[str, dict]:
    return {k: copy.deepcopy(v) for k, v in _load("workload").items()}


def architecture(name: str) -> dict:
    return copy.deepcopy(_load("architecture")[name])


def architecture_names() -> list[str]:
    return sorted(_load("architecture"))


def architectures() -> dict[str, dict]:
    return {k: copy.deepcopy(v) for k, v in _load("architecture").items()}


def mappings_for(workload: str) -> list[dict]:
    return [copy.deepcopy(m) for m in _load("mapping").values() if m.get("workload") == workload]
