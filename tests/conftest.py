"""Shared test helpers: repository paths and small spec files written on the fly."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def write(tmp_path):
    """write(name, yaml_text) -> path of a dedented file in tmp_path."""

    def _write(name: str, text: str) -> Path:
        p = tmp_path / name
        p.write_text(textwrap.dedent(text).lstrip())
        return p

    return _write
