"""Edge clamps and indirect indices against hand counts (hlsim 0.85 / analytical 0.99, 2026-12-08).

A third outside probe (47 image and signal kernels of its own) found two ways hlsim still moved far more than a
tile names:

* an indirect dimension (`x[idx[i]]`, a bit-reversed `x[r]`, a histogram's `hist[px[i]]`) spans its whole extent
  in every tile, and every loop moved it ("no reuse assumed"): a gather in 8 tiles loaded x 8 times (512 words
  for 64) and a scatter wrote the whole array back 8 times; the tile is the same whole array in every tile, so
  it now stays resident;
* an edge clamp (`i < N - 1 ? i + 1 : i`, `min(i + 1, N - 1)`) had no affine form: the whole array with every
  tile (256 words where the tiles name 39); it is now priced as the accesses it chooses between.
"""

from __future__ import annotations

import pytest
from conftest import kernel_design, profiled_and_estimated
from llmulator.library import resolve

ARCH = resolve("architecture", "hls-fpga").read_text()


def _design(write, body: str, ref: str, arrays: str, tile: int = 8, n: int = 64, inputs: str = ""):
    return kernel_design(write, ARCH, f"    L_i: for (int i = 0; i < N; i++) {{\n{body}\n    }}", arrays,
                         ref, f"{{L_i: {{tile: {tile}}}}}", "{x: BRAM, y: BRAM, idx: BRAM}"
                         if "idx" in arrays else "{x: BRAM, y: BRAM}", params=f"{{N: {n}}}", inputs=inputs)


XY = "    x: {shape: [N], dtype: fp32, role: in}\n    y: {shape: [N], dtype: fp32, role: out}"
IDX = "\n    idx: {shape: [N], dtype: int32, role: in}"
PERM = "    arrays:\n      idx: {distribution: randint, range: [0, 63]}\n"


def test_a_gathered_array_is_loaded_once_for_all_tiles(write):
    p, e = profiled_and_estimated(_design(write, "      y[i] = x[idx[i]];", "    y[:] = x[idx]", XY + IDX,
                                          inputs=PERM))
    # x whole once (64) and idx's 8 a tile (64): 0.84 loaded x with each of 8 tiles, 512 + 64
    assert p.counters["reads.DRAM"] == 128
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-6)


def test_a_scattered_array_goes_back_once(write):
    p, _ = profiled_and_estimated(_design(write, "      y[(3 * i) % N] = x[i];",
                                          "    y[(3 * np.arange(N)) % N] = x", XY))
    assert p.counters["writes.DRAM"] == 64  # 0.84: 512, the whole of y after each of 8 tiles


@pytest.mark.parametrize("body,ref,most", [
    ("      int i1 = (i < N - 1) ? i + 1 : i;\n      y[i] = x[i] + x[i1];",
     "    y[:] = x + x[np.minimum(np.arange(N) + 1, N - 1)]", 40),
    # the choice of the constant N - 1 is priced as an access in every tile: 5 + 1 a tile, 47 (0.85 added the
    # boxes of x[i] and x[i + 1] apart, 4 + 4 + 1: 67)
    ("      y[i] = x[i] + x[min(i + 1, N - 1)];", "    y[:] = x + x[np.minimum(np.arange(N) + 1, N - 1)]", 48),
])
def test_an_edge_clamp_moves_what_its_choices_name(write, body, ref, most):
    # tiles of 4 over 32: each names x[4t .. 4t + 4], the last x[28 .. 31]: 7 x 5 + 4 = 39 by hand (0.84: 256)
    p, e = profiled_and_estimated(_design(write, body, ref, XY, tile=4, n=32))
    assert p.counters["distinct_read"] == 32
    assert 39 <= p.counters["reads.DRAM"] <= most
    assert e.metrics["energy_pj"] == pytest.approx(p.metrics["energy_pj"], rel=1e-6)
