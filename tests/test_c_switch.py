"""`switch` is the if / else-if chain it means (llmulator.c_switch): hlsim runs it on real inputs against the
NumPy reference and measures what the hand-written chain measures; the analytical model prices it the same;
the forms that do not lower say where and how to rewrite them."""
from __future__ import annotations

import pytest
from conftest import kernel_design
from llmulator import plugins
from llmulator.errors import SpecError
from llmulator.library import resolve

ARCH = resolve("architecture", "hls-fpga").read_text()
ARRAYS = ("    op: {shape: [N], dtype: int32, role: in}\n    x: {shape: [N], dtype: int32, role: in}\n"
          "    y: {shape: [N], dtype: int32, role: out}")
REF = ("    y[:] = np.where(op == 0, x + 1, np.where((op == 1) | (op == 2), x * 3, np.where(op == 4, 0, -x)))")
INPUTS = "    arrays:\n      op: {distribution: randint, range: [0, 4]}"


def _design(write, body: str, hints: str = "{}", loops: str = "{}"):
    kernel = "    L_i: for (int i = 0; i < N; i++) {\n" + body + "    }"
    return kernel_design(write, ARCH, kernel, ARRAYS, REF, loops, "{op: BRAM, x: BRAM, y: BRAM}", params="{N: 64}",
                         hints=hints, inputs=INPUTS)


SWITCH = """      L_s: switch (op[i]) {
        case 0: y[i] = x[i] + 1; break;
        default: y[i] = -x[i]; break;
        case 1:
        case 2: y[i] = x[i] * 3; break;
        case 4: y[i] = 0; break;
      }
"""
CHAIN = """      int v = op[i];
      L_s: if (v == 0) { y[i] = x[i] + 1; }
      else if (v == 1 || v == 2) { y[i] = x[i] * 3; }
      else if (v == 4) { y[i] = 0; }
      else { y[i] = -x[i]; }
"""


@pytest.mark.parametrize("loops", ["{}", "{L_i: {pipeline_ii: 1}}"], ids=["plain", "pipelined"])
def test_a_switch_measures_what_its_if_chain_measures(write, loops):
    """Grouped cases, a default written in the middle: the outputs match the reference, and hlsim's cycles
    and energy and the analytical cycles equal those of the chain written by hand."""
    hlsim, analytical = plugins.get("profilers", "hlsim"), plugins.get("estimators", "analytical")
    sw, ch = _design(write, SWITCH, loops=loops), _design(write, CHAIN, loops=loops)
    ps, pc = hlsim.profile(sw), hlsim.profile(ch)
    assert ps.functional_check.startswith("pass"), ps.functional_check
    assert ps.metrics["cycles"] == pc.metrics["cycles"]
    assert ps.metrics["energy_pj"] == pytest.approx(pc.metrics["energy_pj"], rel=1e-9)
    assert analytical.estimate([sw])[0].metrics["cycles"] == analytical.estimate([ch])[0].metrics["cycles"]


def test_a_labelled_switch_takes_its_hint_on_the_first_case(write):
    d = _design(write, SWITCH, hints="{L_s: {taken_probability: 0.9}}")
    first = next(n for n in d.tree.walk() if getattr(n, "kind", "") == "branch")
    assert first.label == "L_s" and first.cond_text.endswith("== 0")


@pytest.mark.parametrize("body, line, what", [
    ("      switch (op[i]) {\n        case 0: y[i] = 1;\n        case 1: y[i] = 2; break;\n      }\n", 12,
     "falls through"),
    ("      switch (op[i]) {\n        case 0: if (x[i] > 0) break; y[i] = 2; break;\n      }\n", 12,
     "a break that leaves a switch"),
])
def test_forms_that_do_not_lower_are_refused_at_their_line(write, body, line, what):
    with pytest.raises(SpecError) as e:
        _design(write, body)
    dg = e.value.diagnostics[0]
    assert what in dg.message and dg.line == line and dg.hint, dg
