"""Every broken spec gets a positioned, actionable message and exit status 2, never a traceback.

The corpus lives in tests/broken/<case>/ (see tests/broken/README.md): one
defect per case, and a case.yaml naming the files to validate, the file and
line the diagnostic must point at, and strings it must contain. Every case runs
in-process; a few representative ones also run as a real subprocess, to prove
that what a user sees on the terminal carries no traceback.

The spec reference (docs/spec-reference.md) is generated from the schemas;
a test here regenerates it in memory so that the docs cannot drift.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from llmulator.cli import main

ROOT = Path(__file__).resolve().parent.parent
BROKEN = ROOT / "tests" / "broken"
CASES = sorted(p.name for p in BROKEN.iterdir() if (p / "case.yaml").is_file())
VALID_TRIO = ["arch_specs/systolic-16x16.yaml", "workloads/gemm.yaml", "mappings/gemm-ws-16x16.yaml"]
CATEGORIES = ("yaml_", "schema_", "arch_", "wl_", "x_")

# One case per kind of failure, also run as a subprocess.
SUBPROCESS_CASES = ["yaml_unclosed_quote", "schema_unit_capacity_kb", "wl_kernel_syntax_error",
                    "x_buffer_capacity_exceeded", "x_missing_exp"]


def _load_case(name: str) -> dict:
    return yaml.safe_load((BROKEN / name / "case.yaml").read_text(encoding="utf-8"))


def _arg(case: str, f: str) -> str:
    """A bare file name is in the case folder; a path is relative to the repository root."""
    return f if "/" in f else f"tests/broken/{case}/{f}"


def _argv(case: str, c: dict) -> list[str]:
    return ["validate"] + [_arg(case, f) for f in c["files"]]


def _diagnostics(stderr: str) -> list[str]:
    """Split stderr into diagnostics: a header line, then indented expected:/hint: lines."""
    out: list[str] = []
    for line in stderr.splitlines():
        if line.startswith((" ", "\t")) and out:
            out[-1] += "\n" + line
        elif line.strip():
            out.append(line)
    return out


def _check(case: str, c: dict, rc: int, stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "internal error" not in stderr, stderr
    # exit 2 with an error, or (a design the files allow but a static estimator cannot price) exit 0
    # with a warning at the same place
    severity = "error" if c["exit"] == 2 else "warning"
    assert c["exit"] in (0, 2) and rc == c["exit"], f"exit status {rc}, expected {c['exit']}\n{stderr}"
    assert severity in stderr
    where = f"{_arg(case, c['file'])}:{c['line']}"
    at = [d for d in _diagnostics(stderr) if d.startswith(where + ":")]
    assert at, f"no diagnostic at {where}; got:\n{stderr}"
    good = [d for d in at if all(s in d for s in c["contains"])]
    assert good, f"no diagnostic at {where} contains all of {c['contains']}; got:\n{stderr}"
    d = good[0]
    assert f": {severity}: " in d.splitlines()[0], d
    if c.get("hint"):
        assert "\n    hint: " in d, f"no hint in:\n{d}"
    # every diagnostic says what was expected or how to fix it
    assert "\n    expected: " in d or "\n    hint: " in d, f"neither expected nor hint in:\n{d}"


def test_corpus_size_and_coverage():
    assert len(CASES) >= 25, CASES
    for prefix in CATEGORIES:
        assert any(c.startswith(prefix) for c in CASES), f"no case in category {prefix}"
    assert all(c.startswith(CATEGORIES) for c in CASES), "case names start with their category"


@pytest.mark.parametrize("case", CASES)
def test_case_is_well_formed(case):
    c = _load_case(case)
    assert set(c) <= {"description", "files", "exit", "file", "line", "contains", "hint"}, c
    assert c["description"] and c["files"] and c["contains"]
    assert isinstance(c["line"], int) and c["line"] >= 1
    for f in c["files"] + [c["file"]]:
        assert (ROOT / _arg(case, f)).is_file(), f"{case}: no file {f}"
    assert c["file"] in c["files"], f"{case}: the blamed file is not one of the validated files"
    # each case folder holds only what its case uses
    used = {f for f in c["files"] if "/" not in f} | {"case.yaml"}
    assert {p.name for p in (BROKEN / case).iterdir()} == used, case
    if len(c["files"]) == 3:
        kinds = [yaml.safe_load((ROOT / _arg(case, f)).read_text(encoding="utf-8")) for f in c["files"]]
        assert [next(iter(k)) for k in kinds] == ["architecture", "workload", "mapping"], case


@pytest.mark.parametrize("case", CASES)
def test_broken_case_in_process(case, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    c = _load_case(case)
    rc = main(_argv(case, c))
    _check(case, c, rc, capsys.readouterr().err)


@pytest.mark.parametrize("case", SUBPROCESS_CASES)
def test_broken_case_subprocess(case):
    c = _load_case(case)
    r = subprocess.run([sys.executable, "-m", "llmulator.cli", *_argv(case, c)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    _check(case, c, r.returncode, r.stderr)
    assert r.stdout == "", "diagnostics go to stderr only"


def test_valid_trio_validates(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["validate", *VALID_TRIO]) == 0
    cap = capsys.readouterr()
    assert cap.err == ""
    assert "ok  cross-file checks" in cap.out


def test_valid_trio_subprocess():
    r = subprocess.run([sys.executable, "-m", "llmulator.cli", "validate", *VALID_TRIO], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("case", [c for c in CASES if not c.startswith("yaml_")])
def test_case_is_one_edit_of_a_library_file(case):
    """Every non-syntax case still parses as YAML (its one defect is elsewhere)."""
    c = _load_case(case)
    for f in c["files"]:
        if "/" not in f:
            yaml.safe_load((BROKEN / case / f).read_text(encoding="utf-8"))


# --- generated spec reference -------------------------------------------------------------

def _gen_spec_docs():
    spec = importlib.util.spec_from_file_location("gen_spec_docs", ROOT / "scripts" / "gen_spec_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_spec_reference_is_up_to_date():
    gen = _gen_spec_docs()
    current = (ROOT / "docs" / "spec-reference.md").read_text(encoding="utf-8")
    assert gen.render() == current, "docs/spec-reference.md is stale: run python scripts/gen_spec_docs.py"


def test_spec_reference_covers_every_schema_field():
    """Every property named in a schema appears as a documented field path."""
    gen = _gen_spec_docs()
    text = gen.render()
    for kind, _folder, example in gen.KINDS:
        assert f"## {kind.capitalize()}" in text
        assert (ROOT / example).read_text(encoding="utf-8").strip() in text
        schema = gen.load_schema(kind)
        names: set[str] = set()

        def collect(node):
            if isinstance(node, dict):
                names.update(node.get("properties", {}) if isinstance(node.get("properties"), dict) else {})
                for v in node.values():
                    collect(v)
            elif isinstance(node, list):
                for v in node:
                    collect(v)
        collect(schema)
        for n in names:
            assert f".{n}` |" in text or f"`{n}` |" in text, f"{kind}: field {n} is not documented"


def test_spec_docs_write_is_atomic(tmp_path):
    gen = _gen_spec_docs()
    out = tmp_path / "docs" / "ref.md"
    assert gen.main(["-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == gen.render()
    assert [p.name for p in out.parent.iterdir()] == ["ref.md"], "no temporary file left behind"
    assert gen.main(["-o", str(out), "--check"]) == 0
    out.write_text("stale\n", encoding="utf-8")
    assert gen.main(["-o", str(out), "--check"]) == 1
