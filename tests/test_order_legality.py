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


# -- tiling reorders too (an outside probe, 2026-12-07): a band's tile loops run outside its point loops --------
STENCIL = ("    L_t: for (int t = 0; t < 2; t++) {\n      L_p: for (int p = 1; p < 7; p++) {\n"
           "        a[p] = a[p - 1] - a[p + 1];\n      }\n    }")
STENCIL_REF = "    for t in range(2):\n        for p in range(1, 7):\n            a[p] = a[p - 1] - a[p + 1]"


SKEWED = ("    L_t: for (int t = 0; t < 3; t++) {\n      L_p: for (int p = 1; p < 6; p++) {\n"
          "        a[p + t] = a[p + t - 1] - a[p + t + 1];\n      }\n    }")
SKEWED_REF = "    for t in range(3):\n        for p in range(1, 6):\n            a[p + t] = a[p + t - 1] - a[p + t + 1]"
STENCILS = {"in place": (STENCIL, STENCIL_REF, 8), "skewed": (SKEWED, SKEWED_REF, 9)}


def _stencil(write, loops: str, kernel: str = STENCIL, ref: str = STENCIL_REF, size: int = 8):
    """An in-place update of one array `a` of ``size`` elements under a time loop, mapped by ``loops``."""
    return kernel_design(write, ARCH, kernel, f"    a: {{shape: [{size}], dtype: int32, role: inout}}", ref, loops,
                         "{a: BRAM}", params="{}")


@pytest.mark.parametrize(("kind", "tile", "named"), [("in place", 3, "(L_t +1, L_p -1)"),
                                                     ("skewed", 2, "(L_t +1, L_p -2) iterations later, `a[p + t]`")])
def test_tiling_an_inner_loop_across_a_carried_dependence_is_refused_at_its_tile(write, kind, tile, named):
    """An in-place stencil under a time loop: p's tiles run outside t, so of two iterations (L_t +1, L_p -1) apart
    (t = 0 reads a[p] at p + 1, t = 1 writes it at p) the later runs first when p + 1 starts the next tile:
    `validate` passed it and `profile` failed its functional check (an outside probe). `a[p + t]` names one
    element from many (t, p): any pair whose distances sum to the constants' difference; before 2026-12-07 a
    subscript of two band loops was not judged (a second probe)."""
    with pytest.raises(SpecError) as e:
        _stencil(write, f"{{L_p: {{tile: {tile}}}}}", *STENCILS[kind])
    dg = e.value.diagnostics[0]
    assert dg.path == "mapping.loops.L_p.tile" and "tiling reverses a dependence" in dg.message
    assert named in dg.message and "L_p's tiles > L_t > L_p" in dg.message


@pytest.mark.parametrize("kind", sorted(STENCILS))
@pytest.mark.parametrize("loops", ["{}", "{L_t: {tile: 1}}", "{L_p: {tile: 6}}"])
def test_tiles_that_keep_every_dependence_are_accepted_and_run_right(write, loops, kind):
    """No tile, the outer loop's tile (its tile loop stays outermost), a tile holding all of p's trips."""
    d = _stencil(write, loops.replace("6", "5") if kind == "skewed" else loops, *STENCILS[kind])
    p = plugins.get("profilers", "hlsim").profile(d)
    assert p.functional_check == "pass"


@pytest.mark.parametrize(("update", "refused"), [("s[0] = s[0] * 3 + x[p];", True), ("s[0] += x[p];", False),
                                                 ("s[0] = s[0] * x[p];", False)])
def test_tiling_under_a_time_loop_keeps_an_update_that_is_not_a_reduction_in_order(write, update, refused):
    """p's tiles run outside t: `s[0] = s[0] * 3 + x[p]` (a Horner step: the order of its runs is the result) is
    refused at p's tile (an outside probe: `validate` passed it and `profile` failed its functional check); a sum
    or a product of the x[p], which any order gives, is accepted."""
    kernel = ("    L_t: for (int t = 0; t < 2; t++) {\n      L_p: for (int p = 0; p < 6; p++) {\n"
              f"        {update}\n      }}\n    }}")
    arrays = "    x: {shape: [6], dtype: int32, role: in}\n    s: {shape: [1], dtype: int32, role: inout}"
    if refused:
        with pytest.raises(SpecError) as e:
            kernel_design(write, ARCH, kernel, arrays, "    pass", "{L_p: {tile: 3}}", "{x: BRAM, s: BRAM}",
                          params="{}")
        assert e.value.diagnostics[0].path == "mapping.loops.L_p.tile"
    else:
        kernel_design(write, ARCH, kernel, arrays, "    pass", "{L_p: {tile: 3}}", "{x: BRAM, s: BRAM}", params="{}")


# -- a local carried through the band, and subscripts of two band loops (an outside probe, 2026-12-07) ----------
LOCAL = ("    int acc = s[0];\n    L_t: for (int t = 0; t < 2; t++) {\n      L_p: for (int p = 0; p < 6; p++) {\n"
         "        {update}\n      }\n    }\n    s[0] = acc;")
LOCAL_ARRAYS = "    x: {shape: [6], dtype: int32, role: in}\n    s: {shape: [1], dtype: int32, role: inout}"


def test_tiling_a_band_a_local_chains_through_is_refused_at_its_tile(write):
    """`acc = acc * 3 + x[p]` runs in the band's order and nothing else gives its result: p's tiles outside t
    reorder it (the probe's `validate` passed, and `profile` failed its functional check); the message names the
    local's update and two runs the mapping swaps."""
    with pytest.raises(SpecError) as e:
        kernel_design(write, ARCH, LOCAL.replace("{update}", "acc = acc * 3 + x[p];"), LOCAL_ARRAYS, "    pass",
                      "{L_p: {tile: 3}}", "{x: BRAM, s: BRAM}", params="{}")
    dg = e.value.diagnostics[0]
    assert dg.path == "mapping.loops.L_p.tile" and "is not an associative update of `acc`" in dg.message
    assert "(L_t +1, L_p -1)" in dg.message


@pytest.mark.parametrize("loops", ["{L_p: {tile: 3}}", "{L_t: {tile: 1}}"])
def test_a_local_sum_through_the_band_may_be_tiled_and_runs_right(write, loops):
    """A sum of the x[p] is the same in any order: accepted, and hlsim's run matches the NumPy reference."""
    d = kernel_design(write, ARCH, LOCAL.replace("{update}", "acc += x[p];"), LOCAL_ARRAYS,
                      "    s[0] = s[0] + 2 * x.sum()", loops, "{x: BRAM, s: BRAM}", params="{}")
    assert plugins.get("profilers", "hlsim").profile(d).functional_check == "pass"


def test_a_local_chain_under_the_outer_loops_tile_keeps_its_order_and_runs_right(write):
    ref = "    for t in range(2):\n        for p in range(6):\n            s[0] = s[0] * 3 + x[p]"
    d = kernel_design(write, ARCH, LOCAL.replace("{update}", "acc = acc * 3 + x[p];"), LOCAL_ARRAYS, ref,
                      "{L_t: {tile: 1}}", "{x: BRAM, s: BRAM}", params="{}")
    assert plugins.get("profilers", "hlsim").profile(d).functional_check == "pass"
