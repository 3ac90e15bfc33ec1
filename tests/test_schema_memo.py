"""A spec document that passed its schema is remembered by content (llmulator.schema): the same document
passes again without jsonschema; any change, an invalid document or an unwritable cache changes nothing else."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from llmulator import library, schema
from llmulator.errors import SpecError
from llmulator.yamlsrc import load_yaml


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "valid"


def _arch():
    return load_yaml(library.resolve("architecture", "systolic-16x16"))


def test_a_valid_document_is_remembered_and_any_change_is_another_document(cache):
    data, smap = _arch()
    schema.validate("architecture", data, smap)
    memo = schema._memo("architecture", data)
    assert memo.is_file() and memo.parent == cache
    changed = {"architecture": dict(data["architecture"], clock_mhz=float(data["architecture"]["clock_mhz"]))}
    assert schema._memo("architecture", changed) != memo  # 1000 and 1000.0 are different documents
    assert schema._memo("architecture", {"architecture": dict(reversed(data["architecture"].items()))}) == memo


def test_an_invalid_document_is_never_remembered(cache):
    data, smap = _arch()
    bad = {"architecture": dict(data["architecture"], clock_mhz="fast")}
    for _ in range(2):
        with pytest.raises(SpecError):
            schema.validate("architecture", bad, smap)
    assert schema._memo("architecture", bad) is not None and not schema._memo("architecture", bad).exists()


def test_an_unwritable_cache_only_means_no_memo(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("LLMULATOR_CACHE", str(blocker))  # a file: no folder can be made under it
    data, smap = _arch()
    schema.validate("architecture", data, smap)
    schema.validate("architecture", data, smap)


def test_a_remembered_design_loads_without_jsonschema(tmp_path):
    code = ("import sys\n"
            "from llmulator import library\n"
            "from llmulator.design import load_design\n"
            "load_design(library.resolve('architecture', 'systolic-16x16'), library.resolve('workload', 'gemm'), "
            "library.resolve('mapping', 'gemm-ws-16x16'))\n"
            "print('jsonschema' in sys.modules)\n")
    env = dict(os.environ, LLMULATOR_CACHE=str(tmp_path / "cache"))
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    assert first.stdout.split()[-1] == "True" and again.stdout.split()[-1] == "False"
    assert len(list((tmp_path / "cache" / "valid").iterdir())) == 3
