"""Mapping legality against what the mapped program computes (llmulator.order_legality, 2026-12-07).

An outside probe (57) wrote 135 bands with tiles and orders and ran each mapped order against its NumPy reference.
Of the checker it found: refusals of legal mappings (a skewed sum, a max written with `if`, a loop stepping by 2
whose even and odd elements never meet) and misses that `validate` passed and `profile` then failed (a subscript
with a distance beyond 4 steps, a read in a condition, a loop inside the band's body, a conditional last writer,
two statements on one element). Each case below is one of the probe's; the accepted ones run in hlsim and match
the reference, the refused ones name the mapping field.
"""

from __future__ import annotations

import textwrap

import pytest
from conftest import kernel_design
from llmulator import plugins
from llmulator.errors import SpecError
from llmulator.library import resolve

ARCH = resolve("architecture", "hls-fpga").read_text()
TX = "    x: {shape: [3, 5], dtype: int32, role: in}\n"
S1 = "    s: {shape: [1], dtype: int32, role: inout}"
Y = "\n    y: {shape: [3, 5], dtype: int32, role: out}"


def _band(body: str, p: str = "int p = 0; p < 5; p++") -> str:
    return f"    L_t: for (int t = 0; t < 3; t++) {{\n      L_p: for ({p}) {{ {body} }}\n    }}"


def _local(body: str) -> str:
    """The band between `int acc = s[0];` and `s[0] = acc;`: a local the kernel reads after it."""
    return f"    int acc = s[0];\n{_band(body)}\n    s[0] = acc;"


def _ref(body: str, p: str = "range(5)") -> str:
    return f"    for t in range(3):\n        for p in {p}:\n{textwrap.indent(body, ' ' * 12)}"


ACCEPTED = {  # legal: every dependence kept, or runs that commute
    "skewed sum": (_band("a[p + t] += x[t][p];"), "    a: {shape: [7], dtype: int32, role: inout}\n" + TX,
                   _ref("a[p + t] += x[t][p]"), "{L_p: {tile: 2}}", ""),
    "max through an if": (_band("if (x[t][p] > s[0]) { s[0] = x[t][p]; }"), TX + S1,
                          _ref("if x[t][p] > s[0]: s[0] = x[t][p]"), "{}", "order: [L_p, L_t]"),
    "a local written on both sides": (_local("if (x[t][p] > 0) { acc = x[t][p]; } else { acc = 0 - x[t][p]; } "
                                             "y[t][p] = acc;"), TX + S1 + Y,
                                      "    acc = int(s[0])\n" + _ref("acc = abs(int(x[t][p]))\ny[t][p] = acc")
                                      + "\n    s[0] = acc", "{L_p: {tile: 2}}", ""),
    "step 2": (_band("a[p] = a[p - 1] - a[p + 1] + t;", "int p = 2; p < 10; p += 2"),
               "    a: {shape: [12], dtype: int32, role: inout}",
               _ref("a[p] = a[p - 1] - a[p + 1] + t", "range(2, 10, 2)"),
               "{L_p: {tile: 2}}", ""),
}
REFUSED = {  # each failed hlsim's functional check in the probe, `validate` having passed it
    "far distance": (_band("a[p + 8 * t] = a[p + 8 * t - 1] * 2 + x[t][0];", "int p = 1; p < 10; p++"),
                     "    a: {shape: [28], dtype: int32, role: inout}\n" + TX, "{L_p: {tile: 3}}", "(L_t +1, L_p -7)"),
    "read in a condition": (_band("if (a[p - 1] > a[p + 1]) { a[p] = x[t][p]; }", "int p = 1; p < 4; p++"),
                            "    a: {shape: [5], dtype: int32, role: inout}\n" + TX, "{L_p: {tile: 2}}", "`a[p - 1]`"),
    "conditional last writer": (_band("if (x[t][p] > 0) { s[0] = x[t][p]; }"), TX + S1, "{L_p: {tile: 2}}", "s[0]"),
    "two statements": (_band("y[t][p] = s[0]; s[0] = x[t][p];"), TX + S1 + Y, "{L_p: {tile: 2}}", "s[0]"),
    # (2026-12-08) a local written under an `if`: the read after it, or the kernel's after the band, may see an
    # earlier iteration's value; `acc++` inside an expression; subscripts of different shapes
    "local written under an if": (_local("if (x[t][p] > 0) { acc = x[t][p]; } y[t][p] = acc;"), TX + S1 + Y,
                                  "{L_p: {tile: 2}}", "`acc = x[t][p]`"),
    "conditional last value": (_local("if (x[t][p] > 0) { acc = x[t][p]; }"), TX + S1, "{L_p: {tile: 2}}",
                               "`acc = x[t][p]`"),
    "increment in an expression": (_local("y[t][p] = acc++;"), TX + S1 + Y, "{L_p: {tile: 2}}",
                                   "updates `acc` inside an expression"),
    "transposed": (_band("a[t][p] = a[p][t] * 2 + 1;"), "    a: {shape: [5, 5], dtype: int32, role: inout}\n" + TX,
                   "{L_p: {tile: 2}}", "`a[p][t]`"),
    "loop in the body": ("    L_t: for (int t = 0; t < 3; t++) {\n      L_p: for (int p = 0; p < 4; p++) {\n"
                         "        z[p] = t;\n        L_k: for (int k = 0; k < 3; k++) {\n"
                         "          a[p + k] = a[p + k] * 2 + x[t][k];\n        }\n      }\n    }",
                         "    a: {shape: [8], dtype: int32, role: inout}\n" + TX
                         + "    z: {shape: [4], dtype: int32, role: out}", "{L_p: {tile: 2}}", "a[p + k]"),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_legal_mappings_are_accepted_and_run_as_the_reference(write, case):
    kernel, arrays, ref, loops, extra = ACCEPTED[case]
    placement = "{" + ", ".join(f"{a.split(':')[0].strip()}: BRAM" for a in arrays.splitlines()) + "}"
    d = kernel_design(write, ARCH, kernel, arrays.rstrip("\n"), ref, loops,
                      placement + (f"\n  {extra}" if extra else ""), params="{}")
    assert plugins.get("profilers", "hlsim").profile(d).functional_check == "pass"


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_mappings_that_reorder_a_dependence_are_refused(write, case):
    kernel, arrays, loops, named = REFUSED[case]
    placement = "{" + ", ".join(f"{a.split(':')[0].strip()}: BRAM" for a in arrays.splitlines()) + "}"
    with pytest.raises(SpecError) as e:
        kernel_design(write, ARCH, kernel, arrays.rstrip("\n"), "    pass", loops, placement, params="{}")
    dg = e.value.diagnostics[0]
    assert dg.path == "mapping.loops.L_p.tile" and "reverses a dependence" in dg.message and named in dg.message
