"""A double-buffered level holds two copies of every tile that is not its whole array: the spec says half the
capacity holds a tile. Before 2026-12-06 (analytical 0.58) the capacity check counted one copy, so two 32-byte
tiles (A and C, 8 int32 each) on a 64-byte double-buffered SRAM were accepted and given the overlap credit that
needs 128 bytes (an outside probe, `buf_exact_db`)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ROUND, kernel_design
from llmulator.errors import SpecError

KERNEL = "    L_i: for (int i = 0; i < N; i++) { C[i] = A[i] + 1; }"
ARRAYS = "    A: {shape: [N], dtype: int32, role: in}\n    C: {shape: [N], dtype: int32, role: out}"


def _design(write, kib: float, double: bool, tile: int, n: int = 32):
    arch = ROUND.replace("capacity_kib: 16", f"capacity_kib: {kib}").replace(
        "double_buffered: false", f"double_buffered: {str(double).lower()}").replace("RF", "")
    return kernel_design(write, arch, KERNEL, ARRAYS, "    C[:] = A + 1", f"{{L_i: {{tile: {tile}}}}}",
                         "{A: SRAM, C: SRAM}", params=f"{{N: {n}}}")


def test_two_tiles_that_fit_once_but_not_twice_are_refused_on_a_double_buffered_level(write):
    with pytest.raises(SpecError, match=r"(?s)capacity exceeded at level SRAM: tiles need 128 B.*"
                                        r"A 64 B \(two copies: double-buffered\).*holds 64 B"):
        _design(write, 0.0625, True, 8)
    _design(write, 0.0625, False, 8)  # single-buffered: one copy each, 64 bytes, fits
    _design(write, 0.125, True, 8)    # twice the room: two copies each fit


def test_a_tile_that_never_changes_needs_one_copy(write):
    # N = 8 in tiles of 8: each array is one tile, loaded once, so there is no next tile to fetch
    d = _design(write, 0.0625, True, 8, n=8)
    assert d.footprint_elems("A") == 8
    # an untiled loop over A[i + 1] (A one longer than the loop) and a fixed B[0]: the tile is the same on every
    # trip although it is not the whole array (a probe of the first rule, "not the whole array": refused at 64 B)
    arch = ROUND.replace("capacity_kib: 16", "capacity_kib: 0.0703125").replace(
        "double_buffered: false", "double_buffered: true").replace("RF", "")
    kernel_design(write, arch, "    L_i: for (int i = 0; i < N; i++) { C[i] = A[i + 1] + B[0]; }",
                  "    A: {shape: [N + 1], dtype: int32, role: in}\n    B: {shape: [4], dtype: int32, role: in}\n"
                  "    C: {shape: [N], dtype: int32, role: out}", "    C[:] = A[1:] + B[0]", "{}",
                  "{A: SRAM, B: SRAM, C: SRAM}", params="{N: 8}")  # 32 + 4 + 32 = 68 of 72 bytes: one copy each


def test_the_analytical_batch_path_counts_the_same_copies(write):
    """The dse batch path marks a point valid from the nest's ``need_bits``: it must count the copies the
    validation counts, or dse reports a best design that validation refuses."""
    from llmulator.traffic import mappings_from_design, nest_of, view
    from llmulator.transfers import transfers

    d = _design(write, 0.125, True, 8)
    nest = nest_of(d, d.tree.loops["L_i"])
    out = transfers(d, nest, view(d, nest, mappings_from_design(d, nest)))
    assert np.allclose(out["need_bits.SRAM"], 2 * 2 * 8 * 32)  # two arrays, two copies, 8 x int32
    single = _design(write, 0.125, False, 8)
    nest = nest_of(single, single.tree.loops["L_i"])
    out = transfers(single, nest, view(single, nest, mappings_from_design(single, nest)))
    assert np.allclose(out["need_bits.SRAM"], 2 * 8 * 32)
