"""Shared test helpers: repository paths and small spec files written on the fly."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    """Workload code runs in the sandbox (llmulator.sandbox). Where it cannot (no bubblewrap or
    seccomp, e.g. a machine .ci/run did not set up), the suite's own workload files are trusted
    explicitly, as a user would with --trust-workload, and the confinement tests skip."""
    import os

    from llmulator import sandbox

    why = sandbox.available()
    if why is not None:
        os.environ[sandbox.TRUST_ENV] = "1"
        print(f"\nnote: the sandbox is unavailable ({why}); the tests trust their own workload files")


@pytest.fixture
def write(tmp_path):
    """write(name, yaml_text) -> path of a dedented file in tmp_path."""

    def _write(name: str, text: str) -> Path:
        p = tmp_path / name
        p.write_text(textwrap.dedent(text).lstrip())
        return p

    return _write


def kernel_design(write, arch: str, kernel: str, arrays: str, reference: str, loops: str, placement: str,
                  params: str = "{N: 64}", extra: str = "", hints: str = "{}", inputs: str = ""):
    """A design from an architecture text and a one-kernel workload and mapping written inline (the
    hand-counted timing tests build many small ones); ``inputs``: the workload's ``inputs:`` block, indented
    under it."""
    from llmulator.design import load_design

    a = write("arch.yaml", arch)
    w = write("w.yaml", f"""
workload:
  version: 1
  name: w
  parameters: {params}
  arrays:
{arrays}
  kernel: |
{kernel}
  hints: {hints}
{"  inputs:" + chr(10) + inputs if inputs else ""}
  reference: |
{reference}
""")
    m = write("m.yaml", f"""
mapping:
  version: 1
  name: m
  loops: {loops}
  placement: {placement}
{extra}""")
    return load_design(a, w, m)


def profiled_and_estimated(d):
    """(hlsim's profile, the analytical estimate) of a design whose functional check must pass: the pair the
    hand-count tests compare (the estimate's warnings, e.g. a missing hint, are not what they test)."""
    import warnings

    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    p = HlsimProfiler().profile(d)
    assert p.functional_check == "pass", p.functional_check
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = AnalyticalEstimator().estimate([d])[0]
    return p, e
