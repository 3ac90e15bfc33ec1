"""`order` is checked against the band's dependences (llmulator.order_legality): a wavefront interchanged
is an error at the mapping's `order` line; an interchange every dependence survives is accepted, and hlsim's
run of it matches the reference."""
from __future__ import annotations

import pytest
from conftest import kernel_design
from llmulator import plugins
from llmulator.errors import SpecError
from llmulator.library import resolve

ARCH = resolve("architecture", "hls-fpga").read_text()
ARRAYS = "    A: {shape: [N, N], dtype: int32, role: inout}"


def _design(write, stmt: str, ref: str):
    kernel = ("    L_i: for (int i = 1; i < N; i++) {\n      L_j: for (int j = 0; j < N - 1; j++) {\n"
              f"        {stmt}\n      }}\n    }}")
    return kernel_design(write, ARCH, kernel, ARRAYS, ref, "{}", "{A: BRAM}\n  order: [L_j, L_i]", params="{N: 8}")


def test_an_interchange_that_runs_a_read_before_its_write_is_refused_at_order(write):
    """A[i][j] needs A[i - 1][j + 1]: distance (L_i +1, L_j -1), which L_j outside L_i turns negative."""
    with pytest.raises(SpecError) as e:
        _design(write, "A[i][j] = A[i - 1][j + 1] + 1;", "    pass")
    dg = e.value.diagnostics[0]
    assert dg.path == "mapping.order" and "reverses a dependence" in dg.message
    assert "(L_i +1, L_j -1)" in dg.message and "L_j > L_i" in dg.message


def test_an_interchange_every_dependence_survives_is_accepted_and_runs_right(write):
    """A[i][j] needs A[i - 1][j]: distance (L_i +1, L_j 0), (0, +1) interchanged: still positive."""
    ref = "    for i in range(1, N):\n        A[i, :N - 1] = A[i - 1, :N - 1] + 1"
    d = _design(write, "A[i][j] = A[i - 1][j] + 1;", ref)
    p = plugins.get("profilers", "hlsim").profile(d)
    assert p.functional_check.startswith("pass"), p.functional_check
