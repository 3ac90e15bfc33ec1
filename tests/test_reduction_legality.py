"""`reduction: tree` is accepted only where regrouping keeps the result (llmulator.reduction_legality), and an
`order` on a triangular band is refused by validation, not first by the profiler.

Found by an outside user: `s = s * C + x[i]` (Horner) with `unroll: 8, reduction: tree` validated, and hlsim and
the analytical model split the chain into independent copies: 256 steps of a multiply (3) and an add (4) in
704 cycles, where the chain needs at least 256 x 7 = 1,792. The functional check passed, as it runs the
sequential C."""
from __future__ import annotations

import pytest
from conftest import kernel_design
from llmulator.errors import SpecError
from llmulator.library import resolve
from llmulator.reduction_legality import _combines

ARCH = resolve("architecture", "hls-fpga").read_text()
ARRAYS = "    x: {shape: [N], dtype: fp32, role: in}\n    o: {shape: [1], dtype: fp32, role: out}"


@pytest.mark.parametrize("text", ["s += x[i]", "s -= x[i] * 2", "s = s + x[i]", "s = x[i] + s", "s = s - x[i]",
                                  "s = (s + x[i]) + 1", "s = a - (b - s)", "s *= x[i]", "s = x[i] * s",
                                  "s ^= x[i]", "s = fmaxf(s, x[i])", "s = max(x[i], s)", "s++",
                                  "s = (x[i] > s) ? x[i] : s", "s = (x[i] > 0) ? (s + x[i]) : s",
                                  "s = (x[i] > 0) ? s : (s * x[i])"])
def test_associative_updates_may_be_regrouped(text):
    assert _combines(text, "s")


@pytest.mark.parametrize("text", ["s = (s * C) + x[i]", "s = x[i] - s", "s = (s + x[i]) * 2", "s = s / x[i]",
                                  "s = x[i]", "s += s", "s = fmaxf(s, s * x[i])", "s = (x[i] > 0) ? x[i] : s",
                                  "s = (x[i] > 0) ? (s * 2 + x[i]) : s", "s = (s > 0) ? (s + x[i]) : s",
                                  "t += x[i]"])
def test_other_updates_chain(text):
    assert not _combines(text, "s")


def _design(write, body: str, loops: str = "{L_i: {unroll: 8, reduction: tree}}"):
    kernel = f"    float s = 0;\n    L_i: for (int i = 0; i < N; i++) {{\n{body}\n    }}\n    o[0] = s;"
    return kernel_design(write, ARCH, kernel, ARRAYS, "    pass", loops, "{x: BRAM, o: BRAM}", params="{N: 256}",
                         extra="", hints="{}")


def test_a_tree_over_a_horner_chain_is_refused_at_the_loops_reduction(write):
    with pytest.raises(SpecError) as e:
        _design(write, "      s = s * 0.5f + x[i];")
    dg = e.value.diagnostics[0]
    assert dg.path == "mapping.loops.L_i.reduction"
    assert "not an associative update of `s`" in dg.message and "(s * 0.5f) + x[i]" in dg.message


def test_a_tree_whose_body_reads_the_running_value_is_refused(write):
    with pytest.raises(SpecError) as e:
        _design(write, "      s += x[i];\n      L_b: if (s > 100) {\n        s = 0;\n      }")
    assert e.value.diagnostics[0].path == "mapping.loops.L_i.reduction"


@pytest.mark.parametrize("body, why", [
    # the recurrence runs through a temporary: t = s * c reads the running value (a multiply-add chain: 32 steps of
    # 3 + 2 cycles, which hlsim 0.37 ran in 40 cycles with unroll 4; an outside probe)
    ("      float t = s * 0.5f;\n      s = t + x[i];", "reads the running value of `s`"),
    # two associative updates of different operations: the chain alternates + and *, no regrouping keeps it
    ("      s = s + x[i];\n      s = s * 0.5f;", "2 different operations (*, +)"),
    ("      L_b: if (x[i] > 1) {\n        s = s + x[i];\n      } else {\n        s = s * 0.5f;\n      }",
     "2 different operations (*, +)"),
])
def test_a_tree_over_a_chain_of_two_statements_is_refused(write, body, why):
    with pytest.raises(SpecError) as e:
        _design(write, body)
    assert e.value.diagnostics[0].path == "mapping.loops.L_i.reduction" and why in e.value.diagnostics[0].message


@pytest.mark.parametrize("body", ["      s += x[i];\n      s += 2 * x[i];",
                                  "      float t = x[i] * 2;\n      s = s + t;",
                                  "      s = fmaxf(s, x[i]);\n      s = (x[i] * 2 > s) ? x[i] * 2 : s;"])
def test_a_tree_over_several_updates_of_one_operation_is_accepted(write, body):
    _design(write, body)


def test_a_tree_over_a_sum_is_accepted_and_runs_faster_than_the_chain(write):
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    tree = _design(write, "      s += x[i];")
    chain = _design(write, "      s += x[i];", "{L_i: {unroll: 8}}")
    assert (HlsimProfiler(check_outputs=False).profile(tree).metrics["cycles"]
            < HlsimProfiler(check_outputs=False).profile(chain).metrics["cycles"])


def test_an_order_on_a_triangular_band_is_refused_by_validation(write):
    kernel = ("    L_i: for (int i = 0; i < N; i++) {\n      L_j: for (int j = 0; j <= i; j++) {\n"
              "        A[i][j] = A[i][j] + 1;\n      }\n    }")
    with pytest.raises(SpecError) as e:
        kernel_design(write, ARCH, kernel, "    A: {shape: [N, N], dtype: int32, role: inout}", "    pass", "{}",
                      "{A: BRAM}\n  order: [L_j, L_i]", params="{N: 8}")
    dg = e.value.diagnostics[0]
    assert dg.path == "mapping.order" and "the bounds of loop L_j depend on i" in dg.message
