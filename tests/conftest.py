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

    # tables are laid out for the width COLUMNS names; pytest-xdist's workers inherit COLUMNS=80 where a plain
    # run sees a pipe (160 columns), so the same assertion on a wrapped table passed in one and failed in the
    # other: every test starts from a pipe without COLUMNS, and the tests about widths set it themselves
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)
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


def same_profile(p, q) -> None:
    """Two hlsim profiles of spellings a compiler makes alike (a stored value and a local, the copies of a loop and
    its statements written out): the same cycles, energy, BRAM reads and writes, adds and multiplies."""
    assert p.metrics["cycles"] == q.metrics["cycles"]
    assert p.metrics["energy_pj"] == q.metrics["energy_pj"]
    for k in ("reads.BRAM", "writes.BRAM", "ops.add", "ops.mul"):
        assert p.counters.get(k) == q.counters.get(k), k


def agrees_on_static(p, e) -> None:
    """On a design the data do not steer, the analytical estimate ``e`` has hlsim's cycles and BRAM reads/writes."""
    assert e.metrics["cycles"] == p.metrics["cycles"]
    assert (e.breakdown["reads.BRAM"], e.breakdown["writes.BRAM"]) == (p.counters["reads.BRAM"],
                                                                       p.counters["writes.BRAM"])


# hand-count architectures shared by several test files
# distinctive latencies: add 3, mul 5, div 7, cmp 2, logic 1; BRAM load 2, two ports a bank
PROBE_ARCH = """
architecture:
  version: 1
  name: probe-arch
  clock_mhz: 250
  technology: 45nm
  compute:
    operators:
      add: {count: 4, bits: 32, numeric: int, latency_cycles: 3}
      mul: {count: 2, bits: 32, numeric: int, latency_cycles: 5}
      div: {count: 1, bits: 32, numeric: int, latency_cycles: 7}
      cmp: {count: 4, bits: 32, numeric: int, latency_cycles: 2}
      select: {count: 16, bits: 32, numeric: int, latency_cycles: 0}
      logic: {count: 4, bits: 32, numeric: int, latency_cycles: 1}
  memory:
    - {name: DRAM, kind: dram, width_bits: 512, bandwidth_bytes_per_cycle: 64, latency_cycles: 60}
    - {name: BRAM, kind: sram, capacity_kib: 1024, width_bits: 32, banks: 64, ports: 2, latency_cycles: 2,
       double_buffered: true}
"""
# round figures for hand counts; "RF" at the end: where a test puts a register file (or nothing)
ROUND = """
architecture:
  version: 1
  name: round
  clock_mhz: 100
  technology: 45nm
  compute:
    operators:
      add: {count: 8, bits: 32, latency_cycles: 1, energy_pj: 1.0, area_um2: 100, leakage_mw: 0.01}
      mul: {count: 8, bits: 32, latency_cycles: 2, energy_pj: 10.0, area_um2: 1000, leakage_mw: 0.1}
      cmp: {count: 4, bits: 32, latency_cycles: 1, energy_pj: 2.0, area_um2: 50, leakage_mw: 0.01}
  memory:
    - {name: DRAM, kind: dram, width_bits: 32, bandwidth_bytes_per_cycle: 4, latency_cycles: 10,
       read_energy_pj: 100, write_energy_pj: 200, leakage_mw: 0}
    - {name: SRAM, kind: sram, capacity_kib: 16, width_bits: 32, banks: 8, ports: 1, latency_cycles: 1,
       read_energy_pj: 10, write_energy_pj: 20, leakage_mw: 1.0, area_um2: 10000, double_buffered: false}
RF"""
