"""Rendering: HLS C (compiles; mapping visible; tiling preserves semantics), digit isolation, the prompt."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml
from llmulator import render
from llmulator.design import load_design
from llmulator.errors import SpecError
from llmulator.inputs import generate_inputs, run_reference
from llmulator.kernel import C_TYPES

ROOT = Path(__file__).resolve().parent.parent
ARCHS = sorted((ROOT / "arch_specs").glob("*.yaml"))
GEMM = ROOT / "workloads" / "gemm.yaml"
SYSTOLIC = ROOT / "arch_specs" / "systolic-16x16.yaml"
GEMM_WS = ROOT / "mappings" / "gemm-ws-16x16.yaml"

GCC = shutil.which("gcc")
needs_gcc = pytest.mark.skipif(GCC is None, reason="gcc is not installed")


# ---------------------------------------------------------------------------- helpers


def gcc_syntax(code: str, tmp_path: Path, name: str = "k.c") -> None:
    src = tmp_path / name
    src.write_text(code)
    r = subprocess.run([GCC, "-std=c11", "-fsyntax-only", str(src)], capture_output=True, text=True)
    assert r.returncode == 0, f"gcc -fsyntax-only failed:\n{r.stderr}\n--- source ---\n{code}"


def _c_literal(dtype: str, v) -> str:
    if dtype.startswith("fp"):
        return repr(float(v))
    return str(int(v))


def harness(design, arrays: dict[str, np.ndarray]) -> str:
    """main(): the input arrays as initialised statics, one call of the kernel, every output element printed."""
    w = design.workload
    lines = ["#include <stdio.h>", "int main(void) {"]
    args = []
    for name, spec in w.arrays.items():
        if spec.role == "temp":
            continue
        arr = np.asarray(arrays[name])
        dims = "".join(f"[{n}]" for n in arr.shape)
        vals = ", ".join(_c_literal(spec.dtype, v) for v in arr.ravel())
        lines.append(f"  static {C_TYPES[spec.dtype]} {name}{dims} = {{{vals}}};")
        args.append(name)
    lines.append(f"  {re.sub(r'[^A-Za-z0-9_]', '_', w.name)}_kernel({', '.join(args)});")
    for name, spec in w.arrays.items():
        if spec.role not in ("out", "inout"):
            continue
        ctype = C_TYPES[spec.dtype]
        size = int(np.asarray(arrays[name]).size)
        lines.append(f'  printf("#{name}\\n");')
        fmt, cast = ('"%.17g\\n"', "(double)") if spec.dtype.startswith("fp") else ('"%lld\\n"', "(long long)")
        lines.append(f"  for (long i = 0; i < {size}; i++) printf({fmt}, {cast}((const {ctype} *){name})[i]);")
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


def run_kernel(design, arrays: dict[str, np.ndarray], tmp_path: Path, tag: str) -> dict[str, np.ndarray]:
    """Compile the rendered HLS C with the harness, run it, return its out/inout arrays."""
    src = tmp_path / f"{tag}.c"
    exe = tmp_path / tag
    src.write_text(render.hls_c(design) + "\n" + harness(design, arrays))
    r = subprocess.run([GCC, "-std=c11", "-O1", "-o", str(exe), str(src), "-lm"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True, timeout=60).stdout
    result: dict[str, list[float]] = {}
    cur = None
    for line in out.split():
        if line.startswith("#"):
            cur = line[1:]
            result[cur] = []
        else:
            result[cur].append(float(line))
    w = design.workload
    return {n: np.array(v).reshape(w.shape(n, design.sizes)) for n, v in result.items()}


def assert_same(got: dict[str, np.ndarray], want: dict[str, np.ndarray], workload) -> None:
    assert set(got) == set(want)
    for name in want:
        if workload.arrays[name].dtype.startswith("fp"):
            np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def library_designs():
    """(mapping path, design) for every mapping in mappings/ with its workload and the first architecture
    under arch_specs/ that passes the cross-file checks."""
    out = []
    for mp in sorted((ROOT / "mappings").glob("*.yaml")):
        wname = yaml.safe_load(mp.read_text())["mapping"].get("workload")
        wp = ROOT / "workloads" / f"{wname}.yaml"
        if not wp.is_file():
            continue
        for ap in ARCHS:
            try:
                load_design(ap, wp, mp)
            except SpecError:
                continue
            out.append(pytest.param(mp, ap, wp, id=mp.stem))
            break
    return out


LIBRARY = library_designs()


def lines_of(code: str) -> list[str]:
    return [ln.strip() for ln in code.splitlines() if ln.strip()]


def after(lines: list[str], prefix: str) -> str:
    """The line right after the first one starting with prefix."""
    i = next(i for i, ln in enumerate(lines) if ln.startswith(prefix))
    return lines[i + 1]


GEMM_TILED = """
mapping:
  version: 1
  name: gemm-tile5
  workload: gemm
  preset: mini
  loops:
    L_k: {{tile: 5, spatial: rows}}
    L_n: {{tile: 5, spatial: cols}}
    L_m: {lm}
  order: {order}
  placement: {{A: GLB, B: GLB, C: GLB}}
"""

GEMM_PLAIN = """
mapping:
  version: 1
  name: gemm-plain
  workload: gemm
  preset: mini
"""


# ---------------------------------------------------------------------------- HLS C


@needs_gcc
def test_gemm_hls_compiles_and_shows_the_mapping(tmp_path):
    d = load_design(SYSTOLIC, GEMM, GEMM_WS)
    code = render.hls_c(d)
    gcc_syntax(code, tmp_path)
    # plain compilation to an object file, too
    (tmp_path / "g.c").write_text(code)
    r = subprocess.run([GCC, "-c", str(tmp_path / "g.c"), "-o", str(tmp_path / "g.o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "#include <stdint.h>" in code and "#include <math.h>" in code
    for p in ("M", "N", "K"):
        assert f"#define {p} 64" in code
    assert "void gemm_kernel(const int8_t A[M][K], const int8_t B[K][N], int32_t C[M][N])" in code
    for key in ("architecture: systolic-16x16", "workload:     gemm", "mapping:      gemm-ws-16x16", "preset:"):
        assert key in code
    assert "#pragma HLS BIND_STORAGE variable=A type=ram_2p impl=bram" in code
    assert "/* A -> GLB (sram) */" in code
    lines = lines_of(code)
    # tile loops, then point loops, both in the mapping's order (llmulator.nest)
    heads = [ln.split(":")[0] for ln in lines if re.match(r"^\w+: for \(", ln)]
    assert heads == ["L_n_tile", "L_k_tile", "L_n", "L_k", "L_m"]
    assert "L_n_tile: for (int n_t = 0; n_t < N; n_t += 16) {" in lines
    # 16 divides 64: no min() bound
    assert "L_n: for (int n = n_t; n < n_t + 16; n++) {" in lines
    assert "L_k: for (int k = k_t; k < k_t + 16; k++) {" in lines
    # pragmas are the first statements of their loops
    assert after(lines, "L_m: for") == "#pragma HLS PIPELINE II=1"
    assert after(lines, "L_n: for") == "#pragma HLS UNROLL"
    assert after(lines, "L_k: for") == "#pragma HLS UNROLL"
    assert "/* spatial: PE rows */" in lines and "/* spatial: PE cols */" in lines
    assert "PIPELINE" not in after(lines, "L_n_tile: for")
    assert code.count("#pragma HLS PIPELINE") == 1 and code.count("#pragma HLS UNROLL") == 2
    assert "#pragma HLS DATAFLOW" not in code


@needs_gcc
@pytest.mark.parametrize("order,lm,heads", [
    ("[L_n, L_k, L_m]", "{tile: 16, pipeline_ii: 1}", "L_n_tile L_k_tile L_n L_k L_m"),
    ("[L_m, L_k, L_n]", "{tile: 3, pipeline_ii: 1}", "L_m_tile L_k_tile L_n_tile L_m L_k L_n"),
    ("[L_k, L_n]", "{tile: 7, pipeline_ii: 1}", "L_k_tile L_n_tile L_m_tile L_k L_n L_m"),
    ("[L_k, L_m, L_n]", "{pipeline_ii: 1}", "L_k_tile L_n_tile L_k L_m L_n"),
    ("[]", "{tile: 6, pipeline_ii: 1}", "L_m_tile L_n_tile L_k_tile L_m L_n L_k"),
])
def test_strip_mining_preserves_semantics(tmp_path, write, order, lm, heads):
    """Tiles that do not divide the bounds (5 on 16; 3, 6, 7 on 16): tile loops, then point loops, each
    in `order` and then kernel order (an untiled loop is a point loop); output equal to numpy and to the
    untiled kernel."""
    mp = write("tiled.yaml", GEMM_TILED.format(order=order, lm=lm))
    d = load_design(SYSTOLIC, GEMM, mp)
    code = render.hls_c(d)
    gcc_syntax(code, tmp_path)
    lines = lines_of(code)
    assert "#define M 16" in lines
    assert "L_k_tile: for (int k_t = 0; k_t < K; k_t += 5) {" in lines
    assert "L_k: for (int k = k_t; k < min(k_t + 5, K); k++) {" in lines
    assert [ln.split(":")[0] for ln in lines if re.match(r"^\w+: for \(", ln)] == heads.split()
    assert after(lines, "L_m: for") == "#pragma HLS PIPELINE II=1"
    rng = np.random.default_rng(7)
    arrays = {"A": rng.integers(-128, 128, (16, 16)).astype(np.int8),
              "B": rng.integers(-128, 128, (16, 16)).astype(np.int8),
              "C": np.zeros((16, 16), np.int32)}
    tiled = run_kernel(d, arrays, tmp_path, "tiled")
    plain = run_kernel(load_design(SYSTOLIC, GEMM, write("plain.yaml", GEMM_PLAIN)), arrays, tmp_path, "plain")
    want = arrays["A"].astype(np.int64) @ arrays["B"].astype(np.int64)
    np.testing.assert_array_equal(tiled["C"], want)
    np.testing.assert_array_equal(plain["C"], want)


STRIDED_WL = """
workload:
  version: 1
  name: strided
  parameters: {N: 23}
  arrays:
    A: {shape: [N, N], dtype: int32, role: in}
    S: {shape: [N], dtype: int32, role: out}
    T: {shape: [N], dtype: int32, role: out}
  kernel: |
    L_i: for (int i = N - 1; i >= 0; i--) {
      for (int j = 1; j <= N - 1; j += 2) {
        S[i] += A[i][j] * (j + 1);
      }
    }
    L_x: for (int x = N; x > 2; x -= 3) {
      T[x - 1] = A[0][x - 1] - x;
    }
  inputs:
    arrays:
      A: {distribution: randint, range: [-50, 50]}
  reference: |
    for i in range(N):
        for j in range(1, N, 2):
            S[i] += A[i][j] * (j + 1)
    for x in range(N, 2, -3):
        T[x - 1] = A[0][x - 1] - x
"""

STRIDED_MAP = """
mapping:
  version: 1
  name: strided-tiles
  workload: strided
  loops:
    L_i: {tile: 4}
    _L1: {tile: 3, pipeline_ii: 2}
    L_x: {tile: 2, unroll: 2}
"""


@needs_gcc
def test_strip_mining_descending_strided_and_unlabelled_loops(tmp_path, write):
    wl = write("strided.yaml", STRIDED_WL)
    d = load_design(ROOT / "arch_specs" / "hls-fpga.yaml", wl, write("m.yaml", STRIDED_MAP))
    code = render.hls_c(d)
    lines = lines_of(code)
    assert "L_i_tile: for (int i_t = N - 1; i_t >= 0; i_t -= 4) {" in lines
    assert "L_i: for (int i = i_t; i > max(i_t - 4, -1); i--) {" in lines
    assert "_L1_tile: for (int j_t = 1; j_t <= N - 1; j_t += 6) {" in lines
    assert "_L1: for (int j = j_t; j < min(j_t + 6, N - 1 + 1); j += 2) {" in lines
    assert after(lines, "_L1: for") == "#pragma HLS PIPELINE II=2"
    assert after(lines, "L_x: for") == "#pragma HLS UNROLL factor=2"
    arrays = generate_inputs(d.workload, d.sizes)
    got = run_kernel(d, arrays, tmp_path, "strided")
    assert_same(got, run_reference(d.workload, arrays, d.sizes), d.workload)


@needs_gcc
def test_data_dependent_loop_is_strip_mined_with_runtime_bound(tmp_path, write):
    """A tile on a data-dependent loop (rejected by the checks, renderable without them) keeps semantics."""
    mp = write("spmv.yaml", """
        mapping:
          version: 1
          name: spmv-tiled
          workload: spmv-csr
          preset: mini
          loops:
            L_j: {tile: 3, pipeline_ii: 1}
        """)
    wl = ROOT / "workloads" / "spmv-csr.yaml"
    if not wl.is_file():
        pytest.skip("workloads/spmv-csr.yaml is not in the library")
    d = load_design(ROOT / "arch_specs" / "hls-fpga.yaml", wl, mp, check=False)
    code = render.hls_c(d)
    assert "L_j: for (int j = j_t; j < min(j_t + 3, row_ptr[i + 1]); j++) {" in lines_of(code)
    for variant in (None, "skewed"):
        arrays = generate_inputs(d.workload, d.sizes, variant)
        got = run_kernel(d, arrays, tmp_path, f"spmv{variant}")
        assert_same(got, run_reference(d.workload, arrays, d.sizes), d.workload)


@needs_gcc
def test_interface_partition_and_dataflow_pragmas(tmp_path, write):
    wl = ROOT / "workloads" / "atax.yaml"
    if not wl.is_file():
        pytest.skip("workloads/atax.yaml is not in the library")
    mp = write("atax.yaml", """
        mapping:
          version: 1
          name: atax-df
          workload: atax
          dataflow: true
          loops:
            L_j1: {pipeline_ii: 1}
          partition:
            A: {type: cyclic, factor: 4, dim: 2}
            x: {type: complete}
            tmp: {type: block, factor: 2}
          placement: {A: DRAM, x: BRAM, tmp: BRAM}
        """)
    d = load_design(ROOT / "arch_specs" / "hls-fpga.yaml", wl, mp)
    code = render.hls_c(d)
    gcc_syntax(code, tmp_path)
    lines = lines_of(code)
    assert "void atax_kernel(const float A[M][N], const float x[N], float y[N]) {" in lines
    assert "#pragma HLS INTERFACE m_axi port=A" in lines
    assert "/* A -> DRAM (dram) */" in lines
    assert "#pragma HLS ARRAY_PARTITION variable=A type=cyclic factor=4 dim=2" in lines
    assert "#pragma HLS ARRAY_PARTITION variable=x type=complete dim=1" in lines
    assert "#pragma HLS BIND_STORAGE variable=x type=ram_2p impl=bram" in lines
    # y is not placed: the outermost level
    assert "#pragma HLS INTERFACE m_axi port=y" in lines
    # the temp array is a zeroed local buffer, with its storage after its declaration
    i = lines.index("float tmp[M] = {0};")
    assert lines[i + 1] == "#pragma HLS BIND_STORAGE variable=tmp type=ram_2p impl=bram"
    assert lines[i + 2] == "#pragma HLS ARRAY_PARTITION variable=tmp type=block factor=2 dim=1"
    assert "#pragma HLS DATAFLOW" in lines
    arrays = generate_inputs(d.workload, d.sizes)
    assert_same(run_kernel(d, arrays, tmp_path, "atax"), run_reference(d.workload, arrays, d.sizes), d.workload)


def test_reordering_a_triangular_band_is_refused(write):
    wl = write("tri.yaml", """
        workload:
          version: 1
          name: tri
          parameters: {N: 8}
          arrays:
            A: {shape: [N, N], dtype: int32, role: out}
          kernel: |
            L_i: for (int i = 0; i < N; i++) {
              L_j: for (int j = 0; j < i; j++) {
                A[i][j] = i + j;
              }
            }
        """)
    mp = write("m.yaml", """
        mapping:
          version: 1
          name: tri-swap
          loops:
            L_i: {tile: 2}
          order: [L_j, L_i]
        """)
    with pytest.raises(SpecError, match="depend on i"):  # validation refuses it, before anything renders
        load_design(ROOT / "arch_specs" / "hls-fpga.yaml", wl, mp)
    # the kernel's own order is fine: L_j's tile loop stays inside L_i
    ok = write("ok.yaml", """
        mapping:
          version: 1
          name: tri-keep
          loops:
            L_j: {tile: 3}
          order: [L_i, L_j]
        """)
    code = render.hls_c(load_design(ROOT / "arch_specs" / "hls-fpga.yaml", wl, ok))
    heads = [ln.split(":")[0] for ln in lines_of(code) if re.match(r"^\w+: for \(", ln)]
    assert heads == ["L_i", "L_j_tile", "L_j"]
    assert "L_j: for (int j = j_t; j < min(j_t + 3, i); j++) {" in lines_of(code)


@needs_gcc
@pytest.mark.parametrize("mp,ap,wp", LIBRARY)
def test_library_designs_render_to_valid_c(tmp_path, mp, ap, wp):
    d = load_design(ap, wp, mp)
    code = render.hls_c(d)
    gcc_syntax(code, tmp_path)
    assert f"mapping:      {d.mapping.name}" in code
    for label, lm in d.mapping.loops.items():
        assert re.search(rf"^\s*{re.escape(label)}: (for|while|do)", code, re.M), label
        if lm.pipeline_ii:
            assert f"#pragma HLS PIPELINE II={lm.pipeline_ii}" in code


@needs_gcc
@pytest.mark.parametrize("mp,ap,wp", LIBRARY)
def test_library_designs_compute_the_reference(tmp_path, mp, ap, wp):
    """The rendered C of each library design, run on generated inputs, matches the workload's NumPy reference."""
    d = load_design(ap, wp, mp)
    if not d.workload.reference:
        pytest.skip("workload has no reference")
    arrays = generate_inputs(d.workload, d.sizes)
    got = run_kernel(d, arrays, tmp_path, "lib")
    assert_same(got, run_reference(d.workload, arrays, d.sizes), d.workload)


def test_library_covers_the_seed_files():
    assert any(p.id == "gemm-ws-16x16" for p in LIBRARY)


# ---------------------------------------------------------------------------- digit isolation


@pytest.mark.parametrize("text,want", [
    ("-128", "- 1 2 8"),
    ("3.75", "3 . 7 5"),
    ("1e-5", "1 e - 5"),
    ("2.5E+10", "2 . 5 E + 1 0"),
    ("0.2f", "0 . 2 f"),
    ("0x1F", "0 x 1 F"),
    ("16x16", "1 6 x 1 6"),
    (".5", ". 5"),
    ("[-128, 127]", "[- 1 2 8, 1 2 7]"),
    ("x = -3;", "x = - 3;"),
    ("n_t += 16", "n_t += 1 6"),
    ("j-10", "j-1 0"),
    ("A[i + 12]", "A[i + 1 2]"),
    ("L_k2: int32_t x2 = 7;", "L_k2: int32_t x2 = 7;"),
    ("int8_t A[M][K]", "int8_t A[M][K]"),
    ("systolic-16x16", "systolic-1 6 x 1 6"),
    ("no numbers here", "no numbers here"),
    ("", ""),
])
def test_isolate_digits(text, want):
    assert render.isolate_digits(text) == want


def test_isolate_digits_is_idempotent():
    text = "C[m][n] += A[m][k] * 127; y = -0.25e-3f; L_j2: x += 1024; [-1, 1]"
    once = render.isolate_digits(text)
    assert render.isolate_digits(once) == once
    assert not re.search(r"\d\d", re.sub(r"[A-Za-z_]\w*", " ", once))
    assert "L_j2" in once


# ---------------------------------------------------------------------------- prompt

SECTIONS = ["### hardware", "### mapping", "### sizes", "### code", "### inputs"]


def numeric_part(text: str) -> str:
    """The text without identifiers (whose digits, as in int32_t, are left alone)."""
    return re.sub(r"[A-Za-z_][A-Za-z0-9_]*", " ", text)


def test_gemm_prompt():
    d = load_design(SYSTOLIC, GEMM, GEMM_WS)
    p = render.prompt(d)
    pos = [p.find(s) for s in SECTIONS]
    assert all(i >= 0 for i in pos) and pos == sorted(pos), pos
    assert len(p) < 1500, len(p)
    assert not re.search(r"\d\d", numeric_part(p))
    assert "  " not in p and "\n\n" not in p and not re.search(r"^\s", p, re.M)
    assert "#include" not in p and "#define" not in p
    section = {s: p[p.find(s):] for s in SECTIONS}
    hw = section["### hardware"].split("### mapping")[0]
    assert "clock 1 0 0 0 MHz" in hw
    assert "PE array 1 6 x 1 6, systolic" in hw
    assert "op mac: count 2 5 6, latency 1, 8 bit int" in hw
    assert "mem GLB: sram, 2 5 6 KiB, width 1 2 8 bits, banks 4, ports 2, bandwidth 1 2 8 B/cycle, latency 2" in hw
    assert "mem DRAM: dram, width" in hw
    mapping = section["### mapping"].split("### sizes")[0]
    assert "L_k: tile 1 6, spatial rows" in mapping and "L_m: pipeline II 1" in mapping
    assert "order L_n L_k L_m" in mapping and "placement A GLB, B GLB, C GLB" in mapping
    assert "dataflow no" in mapping
    sizes = section["### sizes"].split("### code")[0]
    assert "M = 6 4\nN = 6 4\nK = 6 4" in sizes
    code = section["### code"].split("### inputs")[0]
    assert "void gemm_kernel(const int8_t A[M][K]" in code
    assert "L_n_tile: for (int n_t = 0; n_t < N; n_t += 1 6) {" in code
    assert "#pragma HLS PIPELINE II=1" in code
    assert "A: randint [- 1 2 8, 1 2 7]" in section["### inputs"]
    # deterministic, also across a fresh load
    assert render.prompt(d) == p
    assert render.prompt(load_design(SYSTOLIC, GEMM, GEMM_WS)) == p


@pytest.mark.parametrize("mp,ap,wp", LIBRARY)
def test_library_prompts(mp, ap, wp):
    d = load_design(ap, wp, mp)
    p = render.prompt(d)
    pos = [p.find(s) for s in SECTIONS]
    assert all(i >= 0 for i in pos) and pos == sorted(pos)
    assert not re.search(r"\d\d", numeric_part(p))
    assert "  " not in p and "\n\n" not in p
    assert render.prompt(d) == p
    # the LLM estimator reads at most 1536 tokens (one per digit, identifier or symbol)
    assert len(re.findall(r"\d|[A-Za-z_][A-Za-z0-9_]*|\S", p)) < 1500
    for variant in sorted((d.workload.inputs or {}).get("variants", {})):
        pv = render.prompt(d, variant=variant)
        assert f"variant {render.isolate_digits(variant)}" in pv
        assert pv.split("### inputs")[0] == p.split("### inputs")[0]


def test_prompt_describes_structures_and_variants():
    wl = ROOT / "workloads" / "spmv-csr.yaml"
    if not wl.is_file():
        pytest.skip("workloads/spmv-csr.yaml is not in the library")
    d = load_design(ROOT / "arch_specs" / "hls-fpga.yaml", wl, ROOT / "mappings" / "spmv-csr-hls-fpga.yaml")
    base = render.prompt(d).split("### inputs")[1]
    skew = render.prompt(d, variant="skewed").split("### inputs")[1]
    assert "csr row_ptr col_idx: rows 1 2 8, cols 1 2 8, nnz 2 0 4 8, row_skew 0" in base
    assert "row_skew 1 . 5" in skew and "variant skewed" in skew
    assert "vals: uniform [- 1, 1]" in base
    assert "row_ptr:" not in base  # filled by the structure


def test_prompt_has_no_pe_array_line_for_hls():
    wl = ROOT / "workloads" / "atax.yaml"
    if not wl.is_file():
        pytest.skip("workloads/atax.yaml is not in the library")
    d = load_design(ROOT / "arch_specs" / "hls-fpga.yaml", wl, ROOT / "mappings" / "atax-hls-fpga.yaml")
    p = render.prompt(d)
    assert "no PE array" in p
    assert "partition A cyclic 2 dim 2" in p
    assert "L_j1: unroll 2, pipeline II 1" in p
