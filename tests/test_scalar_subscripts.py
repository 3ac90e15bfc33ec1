"""An integer scalar in a subscript shifts it as a constant does (hlsim 0.78 / analytical 0.92, 2026-12-08).

An outside probe of hlsim 0.77: `s[0] += A[i + k][i + k]` (k a declared int32 scalar, A placed in BRAM) read
the whole of A from DRAM, 20,736 words, where the loop reads the 142 diagonal elements it names; the same
kernel with the literal `A[i + 2][i + 2]` moved 142. A scalar has no affine form there, so the subscript was
priced as indirect. A kernel cannot assign a workload scalar (refused below), so its value, the variant's,
is fixed for the run. The references are hand counts and the run's own count of distinct elements.
"""

from __future__ import annotations

import pytest
from conftest import profiled_and_estimated
from llmulator.design import load_design
from llmulator.library import resolve

ARCH = resolve("architecture", "hls-fpga").read_text()


def _design(write, body: str, hi: str, reference: str, variant: str | None = None):
    return load_design(*_files(write, body, hi, reference), variant=variant)


def _files(write, body: str, hi: str, reference: str):
    """`L_i: for i in [0, hi): <body>` over A (N x N) with an int32 scalar k = 2 (a variant `far` sets k = 6)."""
    a = write("arch.yaml", ARCH)
    w = write("w.yaml", f"""
workload:
  version: 1
  name: w
  parameters: {{N: 24}}
  scalars:
    k: {{dtype: int32, value: 2}}
  arrays:
    A: {{shape: [N, N], dtype: fp32, role: in}}
    s: {{shape: [1], dtype: fp32, role: out}}
  kernel: |
    L_i: for (int i = 0; i < {hi}; i++) {{
      {body}
    }}
  inputs:
    seed: 0
    arrays:
      A: {{distribution: normal, mean: 0, std: 1}}
    variants:
      far:
        scalars: {{k: 6}}
  reference: |
    {reference}
""")
    m = write("m.yaml", """
mapping:
  version: 1
  name: m
  loops: {}
  placement: {A: BRAM, s: BRAM}
""")
    return a, w, m


def test_a_scalar_offset_moves_the_words_the_literal_moves(write):
    ref = "s[0] = sum(A[i + k, i + k] for i in range(N - 8))"
    p, e = profiled_and_estimated(_design(write, "s[0] += A[i + k][i + k];", "N - 8", ref))
    lit, lit_e = profiled_and_estimated(_design(write, "s[0] += A[i + 2][i + 2];", "N - 8", ref))
    assert p.counters["distinct_read"] == 16  # the 16 diagonal elements A[2][2] .. A[17][17], by hand
    assert p.counters["reads.DRAM"] == 16  # 0.77: 576, the whole array
    assert p.metrics["cycles"] == lit.metrics["cycles"]
    assert e.metrics["cycles"] == pytest.approx(lit_e.metrics["cycles"])


@pytest.mark.parametrize("variant,words", [(None, 18), ("far", 22)])
def test_the_variant_s_scalar_sets_how_far_two_reads_overlap(write, variant, words):
    # a[i] and a[i + k] over i < 16 name 0..15 and k..15+k: 16 + k distinct elements of row 0, by hand
    ref = "s[0] = sum(A[0, i] * A[0, i + k] for i in range(N - 8))"
    p, e = profiled_and_estimated(_design(write, "s[0] += A[0][i] * A[0][i + k];", "N - 8", ref, variant))
    assert p.counters["distinct_read"] == words
    assert p.counters["reads.DRAM"] == words
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-6)


@pytest.mark.parametrize("stmt", ["k++;", "k += 1;", "--k;", "k = i;"])
def test_a_kernel_cannot_assign_a_workload_scalar(write, stmt, capsys):
    from llmulator.cli import main

    files = _files(write, stmt + " s[0] += A[i][i];", "N", "s[0] = sum(A[i, i] for i in range(N))")
    assert main(["validate", *map(str, files)]) == 2
    err = capsys.readouterr().err
    assert "cannot assign to 'k', a scalar of the workload" in err and "Traceback" not in err


def test_a_for_loop_increment_cannot_assign_a_workload_scalar(write, capsys):
    # an outside probe: `for (...; ...; i++, k++)` passed validate (the increment is no statement the checks
    # visited), was priced with k fixed, and failed to compile in hlsim ("increment of read-only variable")
    from llmulator.cli import main

    a, w, m = _files(write, "s[0] += A[i][i];", "N", "s[0] = sum(A[i, i] for i in range(N))")
    w.write_text(w.read_text().replace("i++) {", "i++, k++) {"))
    assert main(["validate", str(a), str(w), str(m)]) == 2
    err = capsys.readouterr().err
    assert "the for loop's increment sets 'k', a scalar of the workload" in err and "Traceback" not in err
