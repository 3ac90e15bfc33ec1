"""The rtl profiler: the plan of a design (always), generated Verilog (always), and tiny arrays simulated
with Icarus (skipped with the reason when iverilog is missing) with exact cycle counts derived by hand.

Hand counts: the memory here is wide (8 banks x 4 ports of 32 bits, 1 cycle latency), so no step
waits for the buffer. Cycle 1 is the first cycle after ``start``. Every engine issues its first
vector in cycle 1; a read granted in cycle c returns in cycle c+1 and its vector is at the head of
the engine's ring in cycle c+2, so the array's first advance is in cycle 3.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from llmulator.buflayout import layout
from llmulator.design import load_design
from llmulator.errors import UserError
from llmulator_plugins.rtl.plan import make_plan
from llmulator_plugins.rtl.top import generate

ARCH = """
architecture:
  version: 1
  name: sys-{n}x{n}
  clock_mhz: 100
  compute:
    pe_array: {{rows: {n}, cols: {n}, interconnect: systolic}}
    operators:
      mac: {{count: {nn}, bits: 8, latency_cycles: 1}}
  memory:
    - {{name: DRAM, kind: dram, width_bits: 64, bandwidth_bytes_per_cycle: 8, latency_cycles: 10}}
    - {{name: GLB, kind: sram, capacity_kib: 4, width_bits: 32, banks: 8, ports: 4, latency_cycles: 1}}
"""

GEMM = """
workload:
  version: 1
  name: gemm
  parameters: {{M: {m}, N: {nn}, K: {k}}}
  arrays:
    A: {{shape: [M, K], dtype: int8, role: in}}
    B: {{shape: [K, N], dtype: int8, role: in}}
    C: {{shape: [M, N], dtype: int32, role: out}}
  einsum: "C[m,n] += A[m,k] * B[k,n]"
  kernel: |
    L_m: for (int m = 0; m < M; m++) {{
      L_n: for (int n = 0; n < N; n++) {{
        L_k: for (int k = 0; k < K; k++) {{
          C[m][n] += A[m][k] * B[k][n];
        }}
      }}
    }}
  inputs:
    seed: 1
    arrays:
      A: {{distribution: randint, range: [-128, 127]}}
      B: {{distribution: randint, range: [-128, 127]}}
  reference: |
    C = A.astype(np.int32) @ B.astype(np.int32)
"""

MAPS = {
    "ws": ("L_k: {{tile: {n}, spatial: rows}}", "L_n: {{tile: {n}, spatial: cols}}", "[L_n, L_k, L_m]"),
    "os": ("L_m: {{tile: {n}, spatial: rows}}", "L_n: {{tile: {n}, spatial: cols}}", "[L_m, L_n, L_k]"),
    "is": ("L_k: {{tile: {n}, spatial: rows}}", "L_m: {{tile: {n}, spatial: cols}}", "[L_m, L_k, L_n]"),
}


def design(write, n: int, df: str, m: int, nn: int, k: int):
    a = write("arch.yaml", ARCH.format(n=n, nn=n * n))
    w = write("gemm.yaml", GEMM.format(m=m, nn=nn, k=k))
    rows, cols, order = MAPS[df]
    mp = write("map.yaml", f"""
        mapping:
          version: 1
          name: {df}
          workload: gemm
          loops:
            {rows.format(n=n)}
            {cols.format(n=n)}
          order: {order}
          placement: {{A: GLB, B: GLB, C: GLB}}
        """)
    return load_design(a, w, mp)


def with_mapping(write, d, name: str, loops: str, order: str):
    """``d``'s architecture and workload with a mapping of the given loops (inline YAML) and order."""
    m = write(name, f"""
        mapping:
          version: 1
          name: {name.split(".")[0]}
          workload: gemm
          loops: {loops}
          order: {order}
          placement: {{A: GLB, B: GLB, C: GLB}}
        """)
    return load_design(d.arch.source_map.file, d.workload.source_map.file, m)


@pytest.mark.parametrize("df, shape, stationary", [("ws", "psum", "B"), ("is", "psum", "A"), ("os", "os", "C")])
def test_plan_dataflows(write, df, shape, stationary):
    plan = make_plan(design(write, 2, df, 4, 2, 2))
    assert (plan.shape, plan.dataflow, plan.A, plan.B) == (shape, df, 2, 2)
    role = "O" if df == "os" else "S"
    assert plan.operands[role].array == stationary
    # C[m][n] row-major: address m*N + n
    assert plan.operands["O"].coefs == {"m": 2, "n": 1}


def test_plan_refuses_what_is_not_a_systolic_pe_array():
    from llmulator.library import resolve
    rs = load_design(resolve("architecture", "systolic-16x16"), resolve("workload", "conv2d"),
                     resolve("mapping", "conv2d-rs-eyeriss"), "mini")
    with pytest.raises(UserError, match="not a PE-array design the rtl profiler supports"):
        make_plan(rs)
    fpga = load_design(resolve("architecture", "hls-fpga"), resolve("workload", "atax"),
                       resolve("mapping", "atax-hls-fpga"))
    with pytest.raises(UserError, match="no compute.pe_array"):
        make_plan(fpga)


def test_a_refusal_names_the_spec_field_and_its_line(write):
    """Two loops on the PE rows: the refusal is at the mapping's loop, with file and line (an outside probe found
    the plan's refusals naming the loop but no position)."""
    from llmulator.errors import SpecUnsupported
    d = with_mapping(write, design(write, 2, "ws", 4, 2, 4), "map2.yaml",
                     "{L_k: {tile: 2, spatial: rows}, L_n: {tile: 1, spatial: rows}}", "[L_n, L_k, L_m]")
    with pytest.raises(SpecUnsupported) as err:
        make_plan(d)
    (diag,) = err.value.diagnostics
    assert diag.path.startswith("mapping.loops.L_") and diag.line is not None and diag.file.endswith("map2.yaml")


def _refusal(err) -> object:
    (diag,) = err.value.diagnostics
    return diag


def test_refusals_of_the_kernel_the_binding_the_capacity_and_pipeline_ii_name_their_line(write):
    """An outside probe found four rtl refusals with no file, line or field (a kernel with an add, a non-affine
    subscript, only PE rows bound, a GLB that holds the tiles but not the whole arrays the rtl preloads) and
    `pipeline_ii: 2` silently generated as II 1 (rtl 86 cycles where hlsim says 125)."""
    from llmulator.errors import SpecUnsupported
    from llmulator_plugins.rtl.profiler import RtlProfiler
    base = design(write, 2, "ws", 4, 2, 4)
    arch, work, mp = base.arch.source_map.file, base.workload.source_map.file, base.mapping.source_map.file
    text = Path(work).read_text()
    line = next(i for i, x in enumerate(text.splitlines(), 1) if "C[m][n] +=" in x)  # the statement's line
    add = write("add.yaml", text.replace("C[m][n] += A[m][k] * B[k][n];", "C[m][n] += A[m][k] + B[k][n];"))
    arch_ops = write("ops.yaml", Path(arch).read_text().replace(
        "mac: {count: 4, bits: 8, latency_cycles: 1}", "mac: {count: 4, bits: 8, latency_cycles: 1}\n"
        "      add: {count: 4, bits: 32, latency_cycles: 1}"))
    with pytest.raises(SpecUnsupported) as err:
        make_plan(load_design(arch_ops, add, mp))
    diag = _refusal(err)
    assert diag.path == "workload.kernel" and diag.line == line and "operations are add x" in diag.message
    nonaff = write("na.yaml", text.replace("A[m][k] * B[k][n]", "A[m][(k * k) % K] * B[k][n]"))
    with pytest.raises(SpecUnsupported) as err:
        make_plan(load_design(arch, nonaff, mp))
    assert _refusal(err).line == line and "not affine" in _refusal(err).message
    rows_only = write("rows.yaml", Path(mp).read_text().replace("L_n: {tile: 2, spatial: cols}", "L_n: {tile: 1}"))
    with pytest.raises(SpecUnsupported) as err:
        make_plan(load_design(arch, work, rows_only))
    assert _refusal(err).path.startswith("mapping.loops.") and "no loop is bound to PE cols" in _refusal(err).message
    # single-buffered 48 bytes: the tiles (A 8, B 4, C 32 bytes) fit, the whole arrays (14 words of 4) do not
    small = write("small.yaml", Path(arch).read_text().replace(
        "capacity_kib: 4,", "capacity_kib: 0.046875, double_buffered: false,"))
    with pytest.raises(SpecUnsupported) as err:
        RtlProfiler(synthesize=False).build(load_design(small, work, mp))
    assert _refusal(err).path == "architecture.memory[1].capacity_kib" and _refusal(err).line is not None
    ii2 = write("ii2.yaml", Path(mp).read_text().replace("L_n: {tile: 2, spatial: cols}",
                                                           "L_n: {tile: 2, spatial: cols}\n    L_m: {pipeline_ii: 2}"))
    with pytest.raises(SpecUnsupported) as err:
        RtlProfiler(synthesize=False).build(load_design(arch, work, ii2))
    assert _refusal(err).path == "mapping.loops.L_m.pipeline_ii" and "not generated" in _refusal(err).message
    # and a buffer stated at 0 cycles' latency, generated with a registered read, says so (it was silent)
    from llmulator_plugins.rtl.notes import latency_note
    lat0 = write("lat0.yaml", Path(arch).read_text().replace("latency_cycles: 1}", "latency_cycles: 0}"))
    d0 = load_design(lat0, work, mp)
    assert "latency_cycles 0 is generated as 1" in latency_note(d0, layout(d0, make_plan(d0)))[0]
    assert latency_note(base, layout(base, make_plan(base))) == []


def test_generated_verilog_is_hierarchical(write):
    d = design(write, 3, "ws", 4, 3, 3)
    plan = make_plan(d)
    rtl = generate(plan, layout(d, plan))
    text = rtl.text()
    assert text.count("module pe (") == 1
    assert text.count("  pe u_pe_") == 9                    # one PE module instantiated per PE
    assert text.count("module bank_GLB (") == 1 and text.count("bank_GLB u_bank_") == 8  # the spec's 8 banks
    assert "reg [31:0] mem [0:127];" in text                # 4 KiB = 1024 words of 32 bits over 8 banks


needs_iverilog = pytest.mark.skipif(shutil.which("iverilog") is None or shutil.which("vvp") is None,
                                    reason="iverilog/vvp not installed (scripts/install_eda.sh)")


@needs_iverilog
@pytest.mark.parametrize("n, df, dims, cycles", [
    # ws 2x2, C[4x2] = A[4x2] B[2x2], one fold: preload 2 advances (cycles 3-4), stream M=4 (5-8),
    # drain A+B-1 = 3 (9-11; the last output vector enters the writer queue at the advance of cycle 11);
    # the writer takes it in cycle 12, adds it to the word its lanes combine (C[2..3][0..1], one
    # 128-bit word) in cycle 13, writes the word back at the end of the fold in 14, done seen in 15.
    (2, "ws", (4, 2, 2), 15),
    # os 2x2, two folds over M (m = 0..1, 2..3): per fold stream K=2, wait A+B-2 = 2, drain A = 2
    # advances: 12 advances in cycles 3-14, writer takes 15, combines 16, writes back 17, done 18.
    (2, "os", (4, 2, 2), 18),
    # ws 3x3, C[4x3], one fold: preload 3 (3-5), stream 4 (6-9), drain 5 (10-14), writer 15-17, done 18.
    (3, "ws", (4, 3, 3), 18),
])
def test_tiny_arrays_exact_cycles_and_outputs(write, tmp_path, monkeypatch, n, df, dims, cycles):
    from llmulator_plugins.rtl.profiler import RtlProfiler
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    d = design(write, n, df, *dims)
    prof = RtlProfiler(synthesize=False).profile(d)
    assert prof.functional_check == "pass"
    assert prof.metrics["cycles"] == cycles
    m, nn, k = dims
    assert prof.counters["ops.mac"] == m * nn * k
    assert prof.counters["writes.GLB"] > 0
    # a second profile of the same design and inputs comes from the cache
    again = RtlProfiler(synthesize=False).profile(d)
    assert again.counters["cached_simulation"] == 1.0 and again.metrics["cycles"] == cycles


@needs_iverilog
@pytest.mark.parametrize("df, dims, longer", [("ws", (1, 2, 2), (2, 2, 2)), ("os", (2, 2, 1), (2, 2, 2))])
def test_a_single_step_stream_costs_what_the_hardware_takes(write, tmp_path, monkeypatch, df, dims, longer):
    """A fold whose stream is one step (a batch-1 GEMM, a matrix-vector product): nothing varies along the
    stream, but the hardware still runs its plan: ws preloads the weights and lets the partial sums flow (no
    output drain), os streams both inputs (no preload). hlsim before 0.23 read every operand as stationary and
    charged both, 4-5 cycles per fold over rtl at 4x4 (an outside probe's matrix-vector product: 202 against
    154). Now the single step is priced as rtl runs it, and a one-step stream is no slower than a two-step one."""
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    from llmulator_plugins.rtl.profiler import RtlProfiler
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))

    def both(shape):
        d = design(write, 2, df, *shape)
        rtl = RtlProfiler(synthesize=False, simulator="icarus").profile(d)
        assert rtl.functional_check == "pass"
        hl = HlsimProfiler().profile(d)
        (compute,) = [v for k, v in hl.breakdown.items() if k.startswith("compute_cycles.")]
        return rtl.metrics["cycles"], compute

    rtl1, hl1 = both(dims)
    rtl2, hl2 = both(longer)
    assert rtl1 - hl1 == rtl2 - hl2  # the single step is priced as the hardware runs it, like any stream
    # equal in both: one fold each, and the os fold's drain has no next fold to hide behind (before hlsim 0.47
    # the shadow accumulator this architecture allows hid it anyway: rtl 2 cycles more, the drain of R = 2 rows)
    assert rtl1 == hl1
    assert hl1 <= hl2


@needs_iverilog
@pytest.mark.parametrize("dims, folds", [((2, 2, 3), 1), ((4, 2, 3), 2), ((6, 4, 2), 6)])
def test_an_output_stationary_nest_pays_its_last_folds_drain(write, tmp_path, monkeypatch, dims, folds):
    """With room for a shadow accumulator (no PE registers declared) hlsim and the analytical model overlap each
    os fold's drain with the next fold, but the last fold's results still shift out of the array, R = 2 cycles
    after its last MAC: rtl (one accumulator, every drain exposed) is R x (folds - 1) above hlsim. Before hlsim
    0.47 no drain was paid at all (an outside probe: a one-fold 3x3 GEMM in 15 cycles where the rtl takes 18)."""
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    from llmulator_plugins.rtl.profiler import RtlProfiler
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    d = design(write, 2, "os", *dims)
    rtl = RtlProfiler(synthesize=False, simulator="icarus").profile(d)
    assert rtl.functional_check == "pass" and rtl.counters["folds"] == folds
    hl = HlsimProfiler().profile(d)
    (compute,) = [v for k, v in hl.breakdown.items() if k.startswith("compute_cycles.")]
    assert rtl.metrics["cycles"] - compute == 2 * (folds - 1)
    an = AnalyticalEstimator().estimate([d])[0]
    assert an.metrics["cycles"] == hl.metrics["cycles"]


@needs_iverilog
@pytest.mark.parametrize("n, df, dims", [(2, "ws", (8, 4, 4)), (4, "ws", (8, 8, 8)), (4, "os", (8, 8, 8)),
                                         (4, "is", (8, 8, 8))])
def test_hlsim_charges_the_buffer_the_words_the_hardware_moves(write, tmp_path, monkeypatch, n, df, dims):
    """A word-organised buffer moves whole words (llmulator.words): hlsim's datapath traffic at the GLB,
    in 32-bit words, is what the generated hardware's arbiter counted, word for word. (Counted in
    element bits, as before hlsim 0.5, a 2x2 ws int8 vector of 16 bits was half a word: 2x fewer.)"""
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    from llmulator_plugins.rtl.profiler import RtlProfiler
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    d = design(write, n, df, *dims)
    rtl = RtlProfiler(synthesize=False, simulator="icarus").profile(d)
    hl = HlsimProfiler().profile(d)
    (bits,) = [v for k, v in hl.breakdown.items() if k.startswith("datapath_bits.") and k.endswith(".GLB")]
    assert bits / 32 == rtl.counters["reads.GLB"] + rtl.counters["writes.GLB"]


def test_buffer_crossbar_is_two_small_modules_instantiated_many_times(write):
    # the 3x3 ws design: 8 banks x 4 ports, requests wr 3 + rd_S 3 + rd_X 3 + old 3 lanes
    d = design(write, 3, "ws", 4, 3, 3)
    plan = make_plan(d)
    text = generate(plan, layout(d, plan)).text(synth=True)
    assert text.count("module xin_GLB (") == 1 and text.count("xin_GLB u_xi_") == 8 * 4   # one per bank port
    assert text.count("module xout_GLB (") == 1 and text.count("xout_GLB u_xo_") == 9     # one per reading lane
    assert "input [11:0] sel" in text     # a bank port selects among all 12 requests
    assert "input [95:0] wdata" in text   # write data only from the writer's 3 lanes


def test_instance_paths_from_a_hierarchical_netlist():
    from llmulator_plugins.rtl.synth import instance_paths
    net = """module leaf(a, y);
  input a; output y;
  INVX1 _1_ (.A(a), .Y(y));
endmodule
module mid(a, y);
  input a; output y; wire t;
  leaf u_l0 (.a(a), .y(t));
  leaf \\u_l1 (.a(t), .y(y));
endmodule
module accel(clk, a, y);
  input clk; input a; output y; wire t;
  mid u_m0 (.a(a), .y(t));
  mid u_m1 (.a(t), .y(y));
endmodule
"""
    paths = instance_paths(net)
    assert paths["accel"] == [""]
    assert paths["mid"] == ["u_m0", "u_m1"]
    assert paths["leaf"] == ["u_m0/u_l0", "u_m0/u_l1", "u_m1/u_l0", "u_m1/u_l1"]


@pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys not installed (scripts/install_eda.sh)")
def test_one_crossbar_module_synthesises_against_the_liberty(write, tmp_path):
    # synthesis of a whole design takes minutes (docs/rtl.md); CI maps one small generated module
    import subprocess

    from llmulator_plugins.characterize import flow as cz
    from llmulator_plugins.rtl.synth import module_areas
    lib = cz.liberty_dir()
    if lib is None:
        pytest.skip("the OSU018 liberty is not installed (scripts/install_eda.sh)")
    liberty = lib / "osu018_stdcells.lib"
    d = design(write, 2, "ws", 4, 2, 2)
    plan = make_plan(d)
    rtl = generate(plan, layout(d, plan))
    (tmp_path / "x.v").write_text(rtl.synth_modules["xout_GLB"])
    (tmp_path / "x.ys").write_text(f"read_verilog x.v\nsynth -top xout_GLB\nabc -liberty {liberty}\n"
                                   f"tee -q -o stat.txt stat -liberty {liberty}\n")
    subprocess.run(["yosys", "-q", "-s", "x.ys"], cwd=tmp_path, check=True, capture_output=True, timeout=120)
    areas = module_areas((tmp_path / "stat.txt").read_text())
    # a 32:1 multiplexer of 32-bit words (8 banks x 4 ports): hundreds of cells, no flip-flop
    assert 5_000 < areas["xout_GLB"] < 500_000


@needs_iverilog
def test_folds_accumulating_into_the_same_outputs_read_them_after_they_are_written(write, tmp_path, monkeypatch):
    # ws 2x2 with K = 6: three folds over k add into the same C[4x2]; the reader of old outputs runs
    # ahead of the writer per vector, never past an output the previous fold has not written yet
    from llmulator_plugins.rtl.profiler import RtlProfiler
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    prof = RtlProfiler(synthesize=False).profile(design(write, 2, "ws", 4, 2, 6))
    assert prof.counters["folds"] == 3
    assert prof.functional_check == "pass"


@pytest.mark.parametrize("banks", [1, 3, 4, 8])
def test_bank_hash_is_a_bijection_and_spreads_strided_words(banks):
    """layout.Level.bank_of / word_at: every (bank, row) holds exactly one word, row = w // banks, and with
    a power-of-two number of banks the words of a vector strided by banks (or banks^2) words from an
    aligned start, a column of a row-major array, fall in different banks (plain w % banks would put
    them all in one)."""
    from llmulator.buflayout import Level

    lv = Level("GLB", 128, banks, 2, 2, 64, 64, 0.0, 0.0, 0.0, 0.0)
    seen = {}
    for w in range(banks * 64):
        b = lv.bank_of(w)
        assert 0 <= b < banks and lv.word_at(b, w // banks) == w
        seen[(b, w // banks)] = w
    assert len(seen) == banks * 64
    if banks in (4, 8):
        for stride in (banks, banks * banks):
            assert len({lv.bank_of(3 + stride * j) for j in range(banks)}) == banks
            assert len({(3 + stride * j) % banks for j in range(banks)}) == 1


@needs_iverilog
def test_a_reduction_on_the_columns_preloads_along_the_columns(write, tmp_path, monkeypatch):
    """GEMM 1x1x4 on a 1x4 array with L_k (the reduction) on the columns: the output varies along neither PE
    dimension the partial sums travel, so the rtl runs its plan transposed and preloads the 4 weights along the
    columns. Hand count: preload A = 4, stream T = 1, skew A + B - 1 = 4 + 1 - 1, plus 7 once per run = 16.
    hlsim and the analytical model took the preload from the rows (1): 13 (an outside user's probe)."""
    from llmulator.design import load_design
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    from llmulator_plugins.rtl.profiler import RtlProfiler
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    arch = write("a.yaml", """architecture:
  version: 1
  name: a1x4
  clock_mhz: 1000
  technology: 45nm
  compute:
    pe_array: {rows: 1, cols: 4, interconnect: systolic}
    operators:
      mac: {count: 4, bits: 8, latency_cycles: 1}
  memory:
    - {name: DRAM, kind: dram, width_bits: 128, bandwidth_bytes_per_cycle: 16, latency_cycles: 100}
    - {name: GLB, kind: sram, capacity_kib: 64, width_bits: 128, banks: 4, ports: 2, latency_cycles: 2}
    - {name: PE_REG, kind: regfile, capacity_kib: 0.0078125, width_bits: 32, instances: 4, latency_cycles: 0}
""")
    work = write("w.yaml", """workload:
  version: 1
  name: gemm
  parameters: {M: 1, N: 1, K: 4}
  arrays:
    A: {shape: [M, K], dtype: int8, role: in}
    B: {shape: [K, N], dtype: int8, role: in}
    C: {shape: [M, N], dtype: int32, role: out}
  einsum: "C[m,n] += A[m,k] * B[k,n]"
  kernel: |
    L_m: for (int m = 0; m < M; m++) {
      L_n: for (int n = 0; n < N; n++) {
        L_k: for (int k = 0; k < K; k++) {
          C[m][n] += A[m][k] * B[k][n];
        }
      }
    }
  inputs:
    seed: 1
    arrays:
      A: {distribution: randint, range: [-128, 127]}
      B: {distribution: randint, range: [-128, 127]}
  reference: |
    C = A.astype(np.int32) @ B.astype(np.int32)
""")
    mapping = write("m.yaml", """mapping:
  version: 1
  name: ws-kcols
  loops:
    L_n: {tile: 1, spatial: rows}
    L_k: {tile: 4, spatial: cols}
  order: [L_n, L_k, L_m]
  placement: {A: GLB, B: GLB, C: GLB}
""")
    d = load_design(arch, work, mapping)
    rtl = RtlProfiler(synthesize=False, simulator="icarus").profile(d)
    assert rtl.functional_check == "pass" and rtl.metrics["cycles"] == 16
    hl = HlsimProfiler().profile(d)
    est = AnalyticalEstimator().estimate([d])[0]
    for breakdown in (hl.breakdown, est.breakdown):
        (compute,) = [v for k, v in breakdown.items() if k.startswith("compute_cycles.")]
        assert compute == 16


@needs_iverilog
@pytest.mark.parametrize("df", ["ws", "os"])
def test_an_inout_output_starts_from_its_given_values(write, tmp_path, monkeypatch, df):
    """`C += A @ B` with C given (role inout, values 100 + i): the writer adds the array's sums to what the
    buffer holds, so the buffer must start with C's values. Before profiler 0.5 it started from zeros and every
    output was 100 + i short (an outside user's `C += A @ B` failed its functional check, exit 4)."""
    from llmulator_plugins.rtl.profiler import RtlProfiler
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    d = design(write, 2, df, 3, 2, 4)
    inout = GEMM.format(m=3, nn=2, k=4).replace("role: out", "role: inout").replace(
        "      B: {distribution: randint, range: [-128, 127]}",
        "      B: {distribution: randint, range: [-128, 127]}\n      C: {distribution: arange, start: 100, step: 1}"
    ).replace("    C = A.astype(np.int32) @ B.astype(np.int32)", "    C += A.astype(np.int32) @ B.astype(np.int32)")
    d = load_design(d.arch.source_map.file, write("inout.yaml", inout), d.mapping.source_map.file)
    p = RtlProfiler(synthesize=False, simulator="icarus").profile(d)
    assert p.functional_check == "pass", p.functional_check


def test_a_multi_cycle_mac_is_named_in_the_rtl_notes(write):
    """The generated PE's MAC takes one cycle; where the spec's takes more, the profile says so (an outside
    user's 4-cycle MAC: hlsim 19 cycles, rtl 16, and nothing said why)."""
    from llmulator_plugins.rtl.notes import mac_latency_note
    assert mac_latency_note(design(write, 2, "ws", 2, 2, 2)) == []
    slow = ARCH.replace("latency_cycles: 1}}", "latency_cycles: 4}}")
    d = load_design(write("slow.yaml", slow.format(n=2, nn=4)), write("g.yaml", GEMM.format(m=2, nn=2, k=2)),
                    design(write, 2, "ws", 2, 2, 2).mapping.source_map.file)
    (note,) = mac_latency_note(d)
    assert "takes 1 cycle, not the spec's 4" in note


@needs_iverilog
def test_short_folds_wait_for_the_last_folds_write_backs_in_rtl_and_hlsim(write, tmp_path, monkeypatch):
    """2x2 ws, M = 1 (one stream step per fold), K = 16 over a buffer of latency 4: each of the 16 folds adds
    into the outputs the fold before wrote, and reads them only once they are written (a read-after-write
    round trip through the buffer of about latency + 4 cycles, longer than the fold's 6 advances). By hand
    from the RTL's fold: 8 cycles x 16 folds + 7 = 135. hlsim's replay measured that wait but counted it only
    where a port had refused a request (hlsim 0.33: 105, 22 % below the hardware; an outside probe)."""
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    from llmulator_plugins.rtl.profiler import RtlProfiler
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    d = design(write, 2, "ws", 1, 4, 16)
    glb = "ports: 4, latency_cycles: {}}}"
    arch = write("arch.yaml", ARCH.format(n=2, nn=4).replace(glb.format(1), glb.format(4)))
    d = load_design(arch, tmp_path / "gemm.yaml", tmp_path / "map.yaml")
    rtl = RtlProfiler(synthesize=False, simulator="icarus").profile(d)
    hl = HlsimProfiler().profile(d)
    assert rtl.functional_check == "pass" and rtl.metrics["cycles"] == 16 * 8 + 7
    assert sum(v for k, v in hl.breakdown.items() if k.startswith("compute_cycles.")) == rtl.metrics["cycles"]


@needs_iverilog
@pytest.mark.parametrize("n, df, dims", [(2, "ws", (8, 4, 4)), (4, "os", (8, 8, 8))])
def test_hlsim_prices_the_buffer_words_the_hardware_moves(write, tmp_path, monkeypatch, n, df, dims):
    """Each GLB access moves a whole 32-bit word, as an SRAM does and the generated hardware's arbiter counts: on
    an architecture whose GLB is the backing store (no tile moves), hlsim's GLB energy is those words at the
    level's figure. Before hlsim 0.34 an int8 lane's access cost 8 of the word's 32 bits: an outside probe
    measured 0.27-0.89x of the RTL's buffer energy on the same words."""
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    from llmulator_plugins.rtl.profiler import RtlProfiler
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    design(write, n, df, *dims)
    glb_only = "\n".join(line for line in ARCH.format(n=n, nn=n * n).splitlines() if "kind: dram" not in line)
    arch = write("arch.yaml", glb_only.replace("ports: 4, latency_cycles: 1}", "ports: 4, latency_cycles: 1, "
                                               "read_energy_pj: 10, write_energy_pj: 10, leakage_mw: 0}"))
    d = load_design(arch, tmp_path / "gemm.yaml", tmp_path / "map.yaml")
    rtl = RtlProfiler(synthesize=False, simulator="icarus").profile(d)
    hl = HlsimProfiler().profile(d)
    assert rtl.functional_check == "pass"
    assert hl.breakdown["energy_pj.GLB"] == pytest.approx(10 * (rtl.counters["reads.GLB"] + rtl.counters["writes.GLB"]))


@needs_iverilog
def test_the_skew_registers_shift_on_every_step_the_array_advances(write, tmp_path, monkeypatch):
    """A 1x4 ws array (osu018): nearly all its skew bits are the de-skew of the partial sums (6 x 32 of 196),
    and they shift on every step the controller advances the array: per fold, the preload (A = 1), the M = 4
    streamed steps and the drain through the de-skew (A + B - 1 = 4), 9 advances x 8 folds = 72 (top.py), in
    the 78 cycles the simulated hardware takes. hlsim's skew energy, at those 78 cycles: each bit's idle energy
    every cycle plus the active-idle difference per advance, within 5 % (its steps are the nest's compute, 78,
    which counts the 6 cycles of start and finish too). Before hlsim 0.36 it counted one step per MAC a PE does
    (32): 0.71x of this count, where an outside probe measured the rtl's de-skew at 1.5x the model's."""
    from llmulator.pecost import pe_cost
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    from llmulator_plugins.rtl.profiler import RtlProfiler
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    design(write, 2, "ws", 4, 4, 8)
    arch = (ARCH.format(n=2, nn=4).replace("rows: 2, cols: 2", "rows: 1, cols: 4")
            .replace("clock_mhz: 100", "clock_mhz: 100\n  technology: osu018"))
    arch += ("    - {name: PE_REG, kind: regfile, capacity_kib: 0.0078125, width_bits: 32, instances: 4, "
             "latency_cycles: 0}\n")
    mp = (tmp_path / "map.yaml").read_text().replace("L_k: {tile: 2, spatial: rows}", "L_k: {tile: 1, spatial: rows}")
    d = load_design(write("arch.yaml", arch), tmp_path / "gemm.yaml",
                    write("map.yaml", mp.replace("L_n: {tile: 2, spatial: cols}", "L_n: {tile: 4, spatial: cols}")))
    rtl = RtlProfiler(synthesize=False, simulator="icarus").profile(d)
    hl = HlsimProfiler().profile(d)
    assert rtl.functional_check == "pass" and rtl.counters["folds"] == 8 and rtl.metrics["cycles"] == 78
    pc = pe_cost(d)
    assert pc.skew_bits == 6 * 32 + 4
    cycles, macs = hl.metrics["cycles"], 4 * 4 * 8   # (the PEs idle while the first tiles arrive: hlsim 0.45)
    assert sum(v for k, v in hl.breakdown.items() if k.startswith("compute_cycles.")) == 78
    pe_only = macs * pc.pe["energy_pj"] + (4 * cycles - macs) * pc.pe["idle_energy_pj"]
    on, off = pc.skew["energy_pj"], pc.skew["idle_energy_pj"]
    want = pc.skew_bits * (cycles * off + 8 * 9 * (on - off))
    assert hl.breakdown["energy_pj.pe_array"] - pe_only == pytest.approx(want, rel=0.05)


@needs_iverilog
def test_a_pe_dimension_no_loop_is_bound_to_runs_one_lane_in_rtl_and_hlsim(write, tmp_path, monkeypatch):
    """Only the rows bound (L_m), L_k at the tile level: the plan puts a one-lane stand-in on the columns. rtl ran
    it (114 cycles, outputs right) while hlsim's bank model and the analytical model crashed on the stand-in's
    missing loop variable (exit 3; an outside probe). Now both price it, hlsim's on-chip cycles the rtl's."""
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    from llmulator_plugins.hlsim.profiler import HlsimProfiler
    from llmulator_plugins.rtl.profiler import RtlProfiler
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    d = with_mapping(write, design(write, 2, "os", 5, 7, 3), "rows_only.yaml",
                     "{L_m: {tile: 2, spatial: rows}, L_k: {tile: 1}}", "[L_m, L_n, L_k]")
    rtl = RtlProfiler(synthesize=False, simulator="icarus").profile(d)
    assert rtl.functional_check == "pass"
    hl = HlsimProfiler().profile(d)
    (compute,) = [v for k, v in hl.breakdown.items() if k.startswith("compute_cycles.")]
    assert compute == rtl.metrics["cycles"]
    assert AnalyticalEstimator().estimate([d])[0].metrics["cycles"] == hl.metrics["cycles"]
