"""hlsim prices what it measured: the tile transfers, energy and bounds of a run follow the trips that run
took, not the analytical model's estimate from draws of the declared inputs (Design.trip_profile), which
hlsim 0.9 picked up from 2026-12-04 on (analytical 0.13) for loops whose control reads the inputs: two runs
with rows of 1 and of 15 elements moved the same DRAM words, and 1,187 of the first 21,568 synth-v3 labels
moved when relabelled (energy up to 1.7x)."""

from __future__ import annotations

import attrs
import numpy as np
from llmulator.design import load_design
from llmulator.inputs import inputs_for
from llmulator.library import resolve
from llmulator_plugins.hlsim.profiler import HlsimProfiler

WORKLOAD = """
workload:
  version: 1
  name: rows
  description: a data-bounded row loop
  parameters: {{N0: 16, N1: 16}}
  arrays:
    c0: {{shape: [N0], dtype: int32, role: in}}
    a1: {{shape: [N0, N1], dtype: fp32, role: in}}
    a2: {{shape: [N1], dtype: fp32, role: in}}
    o3: {{shape: [N0], dtype: fp32, role: out}}
  kernel: |
    L_1: for (int i = 0; i < N0; i++) {{
      float s1 = 0.0f;
      L_2: for (int j = 0; j < c0[i]; j++) {{
        s1 += a1[i][j] * a2[j];
      }}
      o3[i] = s1;
    }}
  inputs:
    seed: 0
    arrays:
      c0: {{distribution: randint, range: [{lo}, {hi}]}}
      a1: {{distribution: normal, mean: 0.0, std: 0.5}}
      a2: {{distribution: normal, mean: 0.0, std: 0.5}}
  hints:
    L_2: {{expected_trips: N1 / 2}}
"""
MAPPING = """
mapping:
  version: 1
  name: rows-m
  workload: rows
  loops:
    L_2: {pipeline_ii: 1}
  placement: {c0: BRAM, a1: BRAM, a2: BRAM, o3: BRAM}
"""


def _run(write, lo: int, hi: int, rows: int | None):
    d = load_design(resolve("architecture", "hls-fpga"), write(f"w{lo}-{hi}.yaml", WORKLOAD.format(lo=lo, hi=hi)),
                    write("m.yaml", MAPPING))
    inp = inputs_for(d, "1")
    if rows is not None:
        inp = attrs.evolve(inp, arrays={**inp.arrays, "c0": np.full(16, rows, dtype=np.int32)})
    return HlsimProfiler().profile(d, inp)


def test_transfers_follow_the_measured_trips(write):
    short, full = _run(write, 0, 16, 1), _run(write, 0, 16, 15)
    assert (short.counters["trips.L_2"], full.counters["trips.L_2"]) == (1.0, 15.0)
    assert full.breakdown["energy_pj.DRAM"] > 3 * short.breakdown["energy_pj.DRAM"]
    # the run with rows of 15 is priced as a workload whose declared inputs can only give rows of 15
    only = _run(write, 15, 15, None)
    assert only.counters["trips.L_2"] == 15.0
    for k in ("energy_pj.DRAM", "transfer_cycles.L_1"):
        assert full.breakdown[k] == only.breakdown[k]
    assert full.metrics["cycles"] == only.metrics["cycles"]
