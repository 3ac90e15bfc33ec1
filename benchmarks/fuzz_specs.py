#!/usr/bin/env python3
"""Fuzz the spec loaders: mutate library files and check that every outcome is an answer (exit 0)
or a diagnostic (exit 2) — never an internal error (exit 1) or a traceback.

Each case takes one library design (architecture, workload, mapping), mutates one of its three files
(a value replaced by another type or an extreme value, a key removed, renamed or duplicated, a line
deleted or doubled, characters inserted), writes the three files to a temporary folder and runs
``llmulator validate`` and, when that passes, ``llmulator estimate --estimator analytical`` in this
process. The test suite runs a few hundred cases with a fixed seed (tests/test_yaml_bounds.py);
a longer run is this command:

    python benchmarks/fuzz_specs.py --cases 5000 --seed 1

It prints each failing case (the mutation and the output) and exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import signal
import sys
import tempfile
from pathlib import Path

import yaml

EXTREMES = [None, True, -1, 0, 10**30, -(10**30), 1e308, float("nan"), float("inf"), "", "x" * 300, [],
            {}, [[[[[[1]]]]]], {"a": {"b": {"c": 1}}}, "2024-01-01", "N * N * N * N", "1/0", "N +", "!!",
            "'", "{", 3.5, "-5", [1, "a", None], "\x00", "é", "__import__('os')"]


def _paths(node, prefix=()):
    """Every (path, value) of a nested document."""
    yield prefix, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _set(doc, path, value):
    cur = doc
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value


def mutate(text: str, rng: random.Random) -> tuple[str, str]:
    """One mutation of a YAML text: (new text, what was done)."""
    kind = rng.choice(["value", "value", "value", "drop-key", "rename-key", "line", "chars"])
    if kind in ("value", "drop-key", "rename-key"):
        doc = yaml.safe_load(text)
        paths = [p for p, _ in _paths(doc) if p]
        if not paths:
            return text, "nothing to mutate"
        path = rng.choice(paths)
        if kind == "value":
            v = rng.choice(EXTREMES)
            _set(doc, path, v)
            what = f"{'.'.join(map(str, path))} = {v!r}"
        else:
            parent = doc
            for p in path[:-1]:
                parent = parent[p]
            if isinstance(parent, dict):
                v = parent.pop(path[-1])
                if kind == "rename-key":
                    parent[str(path[-1]) + rng.choice(["s", "_", "X", " "])] = v
                what = f"{kind} {'.'.join(map(str, path))}"
            else:
                parent.pop(path[-1])
                what = f"drop item {'.'.join(map(str, path))}"
        return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), what
    lines = text.splitlines(keepends=True)
    i = rng.randrange(len(lines))
    if kind == "line":
        if rng.random() < 0.5:
            return "".join(lines[:i] + lines[i + 1:]), f"delete line {i + 1}"
        return "".join(lines[:i + 1] + lines[i:]), f"double line {i + 1}"
    pos = rng.randrange(len(text) + 1)
    junk = rng.choice([":", "-", "[", "]", "{", "}", "&a", "*a", "\t", "'", '"', "#", "|", ">", "!!str ", "\n  "])
    return text[:pos] + junk + text[pos:], f"insert {junk!r} at {pos}"


def designs() -> list[tuple[Path, Path, Path]]:
    from llmulator.library import resolve
    root = Path(__file__).resolve().parent.parent
    out = []
    for m in sorted((root / "mappings").glob("*.yaml")):
        spec = yaml.safe_load(m.read_text())["mapping"]
        try:
            out.append((resolve("architecture", spec["architecture"]), resolve("workload", spec["workload"]), m))
        except Exception:  # noqa: BLE001 - a mapping without both names is skipped
            continue
    return out


def describe(case: int, seed: int) -> str:
    """What case ``case`` mutates (to reproduce one)."""
    rng = random.Random(seed * 1_000_003 + case)
    files = list(rng.choice(designs()))
    k = rng.randrange(3)
    _text, what = mutate(files[k].read_text(), rng)
    return f"{files[k].name}: {what}"


def run_case(case: int, seed: int) -> str | None:
    """None when the case ends in exit 0 or 2 without a traceback; else a report."""
    from llmulator.cli import main
    rng = random.Random(seed * 1_000_003 + case)
    files = list(rng.choice(designs()))
    k = rng.randrange(3)
    text, what = mutate(files[k].read_text(), rng)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for j, f in enumerate(files):
            p = Path(tmp) / f.name
            p.write_text(text if j == k else f.read_text())
            paths.append(str(p))
        for argv in (["validate", *paths], ["estimate", *paths, "--estimator", "analytical", "--json"]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                rc = main(argv)
            out = err.getvalue()
            if rc not in (0, 2) or "Traceback" in out or "internal error" in out:
                return f"case {case} ({files[k].name}: {what}), {argv[0]}: exit {rc}\n{out[-1500:]}"
            if rc != 0:
                break
    return None


class _TooLong(Exception):
    pass


def _too_long(*_):
    raise _TooLong


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--case-limit", type=float, default=60.0, help="seconds before a case counts as a hang")
    args = ap.parse_args(argv)
    import time
    bad, slow = [], []
    for c in range(args.cases):
        t0 = time.perf_counter()
        signal.signal(signal.SIGALRM, _too_long)
        signal.alarm(int(args.case_limit))
        try:
            r = run_case(c, args.seed)
        except _TooLong:
            r = f"case {c} ({describe(c, args.seed)}): still running after {args.case_limit:g} s"
        finally:
            signal.alarm(0)
        dt = time.perf_counter() - t0
        if r is not None:
            bad.append(r)
        if dt > 5.0:
            slow.append(f"case {c}: {dt:.1f} s")
            print(f"slow: case {c}: {dt:.1f} s", flush=True)
    for r in bad:
        print(r, "\n")
    if slow:
        print(f"{len(slow)} cases took over 5 s: " + ", ".join(slow))
    print(f"{args.cases} cases, {len(bad)} ended in an internal error or ran past --case-limit")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
