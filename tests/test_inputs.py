"""Input generation, the NumPy references and the seed spec library."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from llmulator.errors import UserError
from llmulator.inputs import (
    csr_row_lengths,
    generate_inputs,
    load_inputs,
    run_reference,
    save_inputs,
    variants,
)
from llmulator.specs import load_architecture, load_mapping, load_workload

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = sorted((ROOT / "workloads").glob("*.yaml"))
ARCHS = sorted((ROOT / "arch_specs").glob("*.yaml"))
MAPPINGS = sorted((ROOT / "mappings").glob("*.yaml"))


def wl(text: str):
    """A workload from inline YAML."""
    return load_workload("<test>", text)


DIST = """
workload:
  version: 1
  name: dist
  parameters: {N: 4000}
  arrays:
    u: {shape: [N], dtype: fp32, role: in}
    ri: {shape: [N], dtype: int8, role: in}
    ui: {shape: [N], dtype: int16, role: in}
    nrm: {shape: [N], dtype: fp64, role: in}
    nri: {shape: [N], dtype: int32, role: in}
    c: {shape: [10, 3], dtype: fp16, role: in}
    z: {shape: [N], dtype: fp32, role: inout}
    ar: {shape: [20, 5], dtype: int32, role: in}
    pm: {shape: [N], dtype: int32, role: in}
    sp: {shape: [N], dtype: fp32, role: in}
    df: {shape: [N], dtype: fp32, role: in}
    di: {shape: [N], dtype: int8, role: in}
    du: {shape: [N], dtype: uint8, role: in}
    o: {shape: [N, 2], dtype: int32, role: out}
    t: {shape: [7], dtype: fp32, role: temp}
  kernel: "L_i: for (int i = 0; i < N; i++) { o[i][0] = ri[i]; }"
  inputs:
    seed: 5
    arrays:
      u: {distribution: uniform, range: [2, 3]}
      ri: {distribution: randint, range: [-3, 4]}
      ui: {distribution: uniform, range: [10, 12]}
      nrm: {distribution: normal, mean: 5, std: 2}
      nri: {distribution: normal, mean: 100, std: 10}
      c: {distribution: constant, value: 1.5}
      z: {distribution: zeros}
      ar: {distribution: arange}
      pm: {distribution: permutation}
      sp: {distribution: uniform, range: [1, 2], density: 0.25}
    variants:
      wide:
        arrays:
          u: {distribution: uniform, range: [-50, 50]}
  reference: |
    o[:, 0] = ri
    o[:, 1] = ar.reshape(-1)[:N % 100 + 1].sum()
"""

CSR = """
workload:
  version: 1
  name: csr
  parameters: {M: 100, N: 40, NNZ: 1000}
  arrays:
    rp: {shape: ["M + 1"], dtype: int32, role: in}
    ci: {shape: [NNZ], dtype: int32, role: in}
    v: {shape: [NNZ], dtype: fp32, role: in}
    y: {shape: [M], dtype: fp32, role: out}
  kernel: "L_i: for (int i = 0; i < M; i++) { y[i] = 0; }"
  inputs:
    structures:
      - {kind: csr, row_ptr: rp, col_idx: ci, rows: M, cols: N, nnz: NNZ, row_skew: 0}
    arrays:
      v: {distribution: uniform, range: [-1, 1]}
    variants:
      skewed:
        structures:
          - {kind: csr, row_ptr: rp, col_idx: ci, rows: M, cols: N, nnz: NNZ, row_skew: 1.5}
      dense-values:
        arrays:
          v: {distribution: constant, value: 2}
  reference: |
    y[:] = np.add.reduceat(np.append(v, 0), rp[:-1]) * (np.diff(rp) > 0)
"""


# --- reproducibility -------------------------------------------------------------------------

def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a)


def test_same_seed_gives_identical_arrays():
    w = wl(DIST)
    s = w.sizes()
    assert _same(generate_inputs(w, s, seed=11), generate_inputs(w, s, seed=11))
    c = wl(CSR)
    assert _same(generate_inputs(c, c.sizes(), "skewed", seed=3),
                 generate_inputs(c, c.sizes(), "skewed", seed=3))


def test_different_seed_gives_different_arrays():
    w = wl(DIST)
    a, b = generate_inputs(w, w.sizes(), seed=1), generate_inputs(w, w.sizes(), seed=2)
    for name in ("u", "ri", "nrm", "pm", "sp"):
        assert not np.array_equal(a[name], b[name]), name
    # constant, zeros and arange do not depend on the seed
    for name in ("c", "z", "ar"):
        assert np.array_equal(a[name], b[name]), name


def test_arrays_with_the_same_description_differ():
    w = load_workload(ROOT / "workloads" / "gemm.yaml")
    a = generate_inputs(w, w.sizes())
    assert not np.array_equal(a["A"], a["B"])


def test_default_seed_is_the_spec_seed():
    w = wl(DIST)
    assert _same(generate_inputs(w, w.sizes()), generate_inputs(w, w.sizes(), seed=5))
    assert not _same(generate_inputs(w, w.sizes()), generate_inputs(w, w.sizes(), seed=0))
    c = wl(CSR)  # no seed in the spec: 0
    assert _same(generate_inputs(c, c.sizes()), generate_inputs(c, c.sizes(), seed=0))


def test_arrays_do_not_depend_on_other_arrays_descriptions():
    w = wl(DIST)
    base, wide = generate_inputs(w, w.sizes()), generate_inputs(w, w.sizes(), "wide")
    assert not np.array_equal(base["u"], wide["u"])
    for name in w.arrays:
        if name != "u":
            assert np.array_equal(base[name], wide[name]), name


# --- arrays, dtypes and distributions --------------------------------------------------------

def test_every_array_gets_declared_shape_and_dtype():
    w = wl(DIST)
    s = {"N": 300}
    a = generate_inputs(w, s)
    assert set(a) == set(w.arrays)
    expected = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "uint8": np.uint8,
                "fp16": np.float16, "fp32": np.float32, "fp64": np.float64}
    for name, spec in w.arrays.items():
        assert a[name].shape == w.shape(name, s), name
        assert a[name].dtype == np.dtype(expected[spec.dtype]), name
    assert not a["o"].any() and not a["t"].any()


def test_distributions_are_respected():
    w = wl(DIST)
    a = generate_inputs(w, w.sizes())
    n = w.sizes()["N"]
    assert a["u"].min() >= 2 and a["u"].max() < 3 and a["u"].std() > 0.2
    assert set(np.unique(a["ri"]).tolist()) == set(range(-3, 5))  # high end inclusive
    assert set(np.unique(a["ui"]).tolist()) == {10, 11, 12}  # uniform on an int dtype: integers
    assert abs(a["nrm"].mean() - 5) < 0.2 and abs(a["nrm"].std() - 2) < 0.2
    assert abs(a["nri"].mean() - 100) < 1.5 and np.all(a["nri"] == np.rint(a["nri"]))
    assert np.all(a["c"] == np.float16(1.5))
    assert not a["z"].any()
    assert np.array_equal(a["ar"], np.arange(100).reshape(20, 5))
    assert np.array_equal(np.sort(a["pm"]), np.arange(n)) and not np.array_equal(a["pm"], np.arange(n))


def test_density_zeroes_exactly_the_complement():
    w = wl(DIST)
    a = generate_inputs(w, w.sizes())
    sp = a["sp"]
    assert np.count_nonzero(sp) == round(0.25 * sp.size)
    nz = sp[sp != 0]
    assert nz.min() >= 1 and nz.max() < 2


def test_undescribed_arrays_get_default_ranges():
    w = wl(DIST)
    a = generate_inputs(w, w.sizes())
    assert a["df"].min() >= -1 and a["df"].max() < 1 and a["df"].std() > 0.3
    assert a["di"].min() == -128 and a["di"].max() == 127
    assert a["du"].min() == 0 and a["du"].max() == 255


def test_sizes_change_shapes_and_missing_sizes_take_defaults():
    c = wl(CSR)
    a = generate_inputs(c, {"M": 10, "NNZ": 30})
    assert a["rp"].shape == (11,) and a["ci"].shape == (30,) and a["ci"].max() < 40


@pytest.mark.parametrize("desc, msg", [
    ("{distribution: randint, range: [-200, 100]}", "does not fit"),
    ("{distribution: constant, value: 1000}", "does not fit"),
    ("{distribution: arange}", "does not fit"),
])
def test_values_that_do_not_fit_the_dtype_are_rejected(desc, msg):
    w = wl(f"""
workload:
  version: 1
  name: bad
  parameters: {{N: 300}}
  arrays: {{a: {{shape: [N], dtype: int8, role: in}}}}
  kernel: "L_i: for (int i = 0; i < N; i++) {{ a[i] = 0; }}"
  inputs: {{arrays: {{a: {desc}}}}}
""")
    with pytest.raises(UserError, match=msg):
        generate_inputs(w, w.sizes())


def test_unknown_variant_is_a_user_error():
    w = wl(CSR)
    with pytest.raises(UserError, match="no input variant 'nope'.*skewed"):
        generate_inputs(w, w.sizes(), "nope")


# --- CSR structures --------------------------------------------------------------------------

def _check_csr(rp, ci, rows, cols, nnz):
    assert rp.shape == (rows + 1,) and ci.shape == (nnz,)
    assert rp[0] == 0 and rp[-1] == nnz
    lengths = np.diff(rp)
    assert np.all(lengths >= 0) and np.all(lengths <= cols)
    assert ci.min() >= 0 and ci.max() < cols
    for i in range(rows):
        seg = ci[rp[i]:rp[i + 1]]
        assert np.all(np.diff(seg) > 0), f"row {i}: column indices not sorted unique"
    return lengths


def test_csr_invariants_and_equal_rows():
    c = wl(CSR)
    a = generate_inputs(c, c.sizes())
    lengths = _check_csr(a["rp"], a["ci"], 100, 40, 1000)
    assert np.all(lengths == 10)
    a = generate_inputs(c, {"M": 7, "N": 9, "NNZ": 40})
    lengths = _check_csr(a["rp"], a["ci"], 7, 9, 40)
    assert lengths.max() - lengths.min() <= 1 and lengths.sum() == 40


def test_csr_skew_changes_spread_but_not_nnz():
    c = wl(CSR)
    base, skew = generate_inputs(c, c.sizes()), generate_inputs(c, c.sizes(), "skewed")
    lb = _check_csr(base["rp"], base["ci"], 100, 40, 1000)
    ls = _check_csr(skew["rp"], skew["ci"], 100, 40, 1000)
    assert lb.sum() == ls.sum() == 1000
    assert ls.std() > 3 * max(lb.std(), 1.0)
    assert ls.max() == 40  # the heaviest rows are capped at the number of columns
    # the variant replaced the structure only: the values are the same
    assert np.array_equal(base["v"], skew["v"])


@pytest.mark.parametrize("rows, cols, nnz", [(1, 1, 1), (5, 3, 15), (10, 10, 0), (64, 64, 512),
                                             (100, 8, 799), (3, 1000, 7), (50, 50, 2500)])
@pytest.mark.parametrize("skew", [0.0, 0.5, 1.5, 4.0])
def test_csr_row_lengths_sum_and_cap(rows, cols, nnz, skew):
    lengths = csr_row_lengths(rows, cols, nnz, skew, np.random.default_rng(1))
    assert lengths.shape == (rows,)
    assert lengths.sum() == nnz and lengths.min() >= 0 and lengths.max() <= cols


def test_csr_row_lengths_reject_impossible_nnz():
    with pytest.raises(ValueError):
        csr_row_lengths(4, 4, 17)


def test_csr_with_too_many_nonzeros_is_a_user_error():
    c = wl(CSR)
    with pytest.raises(UserError, match="nnz"):
        generate_inputs(c, {"M": 5, "N": 5, "NNZ": 26})


def test_variant_overrides_arrays():
    c = wl(CSR)
    base, dv = generate_inputs(c, c.sizes()), generate_inputs(c, c.sizes(), "dense-values")
    assert np.all(dv["v"] == 2) and not np.all(base["v"] == 2)
    assert np.array_equal(base["rp"], dv["rp"]) and np.array_equal(base["ci"], dv["ci"])
    assert variants(c) == ["dense-values", "skewed"]


# --- references ------------------------------------------------------------------------------

def test_gemm_reference_equals_numpy_matmul():
    w = load_workload(ROOT / "workloads" / "gemm.yaml")
    for preset in (None, "mini"):
        s = w.sizes(preset)
        a = generate_inputs(w, s)
        out = run_reference(w, a, s)
        expected = a["A"].astype(np.int64) @ a["B"].astype(np.int64)
        assert out["C"].dtype == np.int32 and out["C"].shape == (s["M"], s["N"])
        assert np.array_equal(out["C"], expected)
        assert np.abs(out["C"]).max() > 0


def test_reference_does_not_modify_its_inputs():
    w = load_workload(ROOT / "workloads" / "jacobi-2d.yaml")
    s = w.sizes()
    a = generate_inputs(w, s)
    before = {k: v.copy() for k, v in a.items()}
    out = run_reference(w, a, s)
    assert _same(a, before)
    assert not np.array_equal(out["A"], a["A"]) and np.array_equal(out["A"][0], a["A"][0])


def test_spmv_reference_matches_dense_product():
    w = load_workload(ROOT / "workloads" / "spmv-csr.yaml")
    s = w.sizes("mini")
    for variant in (None, "skewed"):
        a = generate_inputs(w, s, variant)
        dense = np.zeros((s["M"], s["N"]))
        for i in range(s["M"]):
            lo, hi = a["row_ptr"][i], a["row_ptr"][i + 1]
            dense[i, a["col_idx"][lo:hi]] = a["vals"][lo:hi]
        y = run_reference(w, a, s)["y"]
        np.testing.assert_allclose(y, dense @ a["x"], rtol=1e-4, atol=1e-5)


def test_softmax_rows_sum_to_one():
    w = load_workload(ROOT / "workloads" / "softmax.yaml")
    s = w.sizes()
    y = run_reference(w, generate_inputs(w, s), s)["Y"]
    np.testing.assert_allclose(y.sum(axis=1), 1.0, rtol=1e-5)
    assert y.min() > 0


def _with_reference(code: str):
    text = (ROOT / "workloads" / "gemm.yaml").read_text()
    head = text.split("  reference: |")[0]
    body = "".join(f"    {line}\n" for line in code.splitlines())
    return load_workload("<test>", head + "  reference: |\n" + body)


@pytest.mark.parametrize("code, msg", [
    ("C = A @ B.T @ np.ones((3, 3))", "failed at line 1: ValueError"),
    ("x = 1\nC = undefined_name", "failed at line 2: NameError"),
    ("C = A[:, :2]", "shape"),
    ("C = 'text'", "numeric array"),
    ("C = (", "syntax error"),
])
def test_bad_reference_is_a_user_error(code, msg):
    w = _with_reference(code)
    s = w.sizes("mini")
    with pytest.raises(UserError, match=re.escape(msg) if "(" in msg else msg):
        run_reference(w, generate_inputs(w, s), s)


# --- save / load -----------------------------------------------------------------------------

def test_save_load_roundtrip(tmp_path):
    c = wl(CSR)
    a = generate_inputs(c, c.sizes(), "skewed")
    save_inputs(tmp_path / "in", a)
    b = load_inputs(tmp_path / "in", c, c.sizes())
    assert _same(a, b)


def test_load_rejects_shape_and_dtype_mismatch(tmp_path):
    w = load_workload(ROOT / "workloads" / "gemm.yaml")
    a = generate_inputs(w, w.sizes("mini"))
    save_inputs(tmp_path, a)
    with pytest.raises(UserError, match=r"shape \(16, 16\).*expects \(64, 64\)"):
        load_inputs(tmp_path, w, w.sizes())
    np.save(tmp_path / "A.npy", a["A"].astype(np.float32))
    with pytest.raises(UserError, match="dtype float32.*int8"):
        load_inputs(tmp_path, w, w.sizes("mini"))
    (tmp_path / "A.npy").unlink()
    with pytest.raises(UserError, match="missing input file"):
        load_inputs(tmp_path, w, w.sizes("mini"))


# --- the spec library ------------------------------------------------------------------------

@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.stem)
def test_workload_validates_and_reference_runs(path):
    w = load_workload(path)
    assert w.name == path.stem and w.reference and w.description
    for preset in [None] + sorted(w.presets):
        for variant in [None] + variants(w):
            if preset == "large" or preset == "medium":
                continue  # keep the suite fast
            s = w.sizes(preset)
            a = generate_inputs(w, s, variant)
            out = run_reference(w, a, s)
            expected = {n for n, spec in w.arrays.items() if spec.role in ("out", "inout")}
            assert set(out) == expected
            for name, arr in out.items():
                assert arr.shape == w.shape(name, s), name
                assert np.all(np.isfinite(arr)), name
                assert np.any(arr != 0), f"{name} is all zeros"


def test_library_is_complete():
    names = {p.stem for p in WORKLOADS}
    assert {"gemm", "conv2d", "atax", "jacobi-2d", "spmv-csr", "softmax"} <= names
    assert {"systolic-16x16", "eyeriss-like", "hls-fpga"} <= {p.stem for p in ARCHS}
    mapped = {load_mapping(p).workload for p in MAPPINGS}
    assert names <= mapped, f"workloads without a mapping: {names - mapped}"


@pytest.mark.parametrize("path", ARCHS, ids=lambda p: p.stem)
def test_architecture_validates(path):
    a = load_architecture(path)
    assert a.name == path.stem and a.memory[0].kind == "dram"
    assert a.raw.get("source")


def test_eyeriss_and_fpga_figures():
    e = load_architecture(ROOT / "arch_specs" / "eyeriss-like.yaml")
    assert (e.pe_array.rows, e.pe_array.cols, e.pe_array.interconnect) == (12, 14, "broadcast")
    assert e.level("GLB").capacity_kib == 108
    rf = next(m for m in e.memory if m.kind == "regfile")
    assert rf.instances == 168 and 0.4 <= rf.capacity_kib <= 0.6
    f = load_architecture(ROOT / "arch_specs" / "hls-fpga.yaml")
    assert f.pe_array is None
    assert f.operators["add"].numeric == "float" and f.operators["div"].latency_cycles == 12
    assert f.memory[0].bandwidth_bytes_per_cycle * f.clock_mhz * 1e6 == pytest.approx(12.8e9)
    assert any(m.kind == "sram" and m.banks > 1 and m.ports == 2 for m in f.memory)


@pytest.mark.parametrize("path", MAPPINGS, ids=lambda p: p.stem)
def test_mapping_fits_its_workload_and_architecture(path):
    """Library mappings name their workload and architecture and pass every cross-file check."""
    from llmulator.design import load_design
    m = load_mapping(path)
    assert m.workload and path.stem.startswith(m.workload + "-")
    assert m.architecture, f"{path.name} names no architecture"
    d = load_design(ROOT / "arch_specs" / f"{m.architecture}.yaml", ROOT / "workloads" / f"{m.workload}.yaml", path)
    for label in m.loops:
        assert label in d.tree.loops
