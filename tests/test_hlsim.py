"""hlsim: hand-computable timing cases, data-dependent trip counts, safety limits, functional checks."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import attrs
import numpy as np
import pytest
from llmulator.cli import main
from llmulator.design import load_design
from llmulator.errors import UserError
from llmulator.inputs import Inputs, csr_row_lengths, generate_inputs, inputs_for
from llmulator_plugins.hlsim.profiler import HlsimProfiler

ROOT = Path(__file__).resolve().parent.parent

ARCH = """
architecture:
  version: 1
  name: tiny
  clock_mhz: 100
  compute:
    operators:
      add: {count: ADDS, bits: 32, numeric: float, latency_cycles: 4}
      mul: {count: 1, bits: 32, numeric: float, latency_cycles: 3}
      cmp: {count: 1, bits: 32, latency_cycles: 1}
  memory:
    - {name: DRAM, kind: dram, width_bits: 64, bandwidth_bytes_per_cycle: 100000, latency_cycles: 0}
    - {name: BUF, kind: sram, capacity_kib: 1024, width_bits: 32, banks: 16, ports: 2, latency_cycles: 1,
       bandwidth_bytes_per_cycle: 100000}
"""


def arch(write, adds=1):
    return write("arch.yaml", ARCH.replace("ADDS", str(adds)))


def workload(write, name, params, arrays, kernel, reference, extra=""):
    text = f"""
workload:
  version: 1
  name: {name}
  parameters: {params}
  arrays:
{arrays}
  kernel: |
{kernel}
  reference: |
{reference}
{extra}"""
    return write(f"{name}.yaml", text)


def mapping(write, name, loops, placement, extra=""):
    return write(f"map-{name}.yaml", f"""
mapping:
  version: 1
  name: {name}
  loops: {loops}
  placement: {placement}
{extra}""")


def profile(d, **kw):
    return HlsimProfiler().profile(d, **kw)


VECADD = dict(
    params="{N: 100}",
    arrays="    a: {shape: [N], dtype: fp32, role: in}\n    b: {shape: [N], dtype: fp32, role: in}\n"
           "    y: {shape: [N], dtype: fp32, role: out}",
    kernel="    L_i: for (int i = 0; i < N; i++) {\n      y[i] = a[i] + b[i];\n    }",
    reference="    y[:] = a + b")


def test_pipelined_loop_of_n_iterations_costs_depth_plus_n_minus_one(write):
    w = workload(write, "vecadd", **VECADD)
    m = mapping(write, "p", "{L_i: {pipeline_ii: 1}}", "{a: BUF, b: BUF, y: BUF}")
    p = profile(load_design(arch(write), w, m))
    depth = 1 + 4 + 1  # load (latency 1), fp add (4), store (1)
    assert p.breakdown["ii.L_i"] == 1 and p.breakdown["depth.L_i"] == depth
    # and the cycle a and b take to arrive before the loop, y's to leave after it (the rest of the transfers hide
    # behind the loop: hlsim 0.45; before, none)
    assert p.metrics["cycles"] == depth + 100 - 1 + 1 + 1
    assert p.functional_check == "pass"
    assert p.counters["trips.L_i"] == 100


REDUCE = dict(
    params="{N: 64}",
    arrays="    a: {shape: [N], dtype: fp32, role: in}\n    y: {shape: [1], dtype: fp32, role: out}",
    kernel="    float s = 0;\n    L_i: for (int i = 0; i < N; i++) {\n      s += a[i];\n    }\n    y[0] = s;",
    reference="    y[0] = a.sum(dtype=np.float32)")


def test_accumulation_with_a_4_cycle_adder_has_ii_4(write):
    w = workload(write, "reduce", **REDUCE)
    m = mapping(write, "p", "{L_i: {pipeline_ii: 1}}", "{a: BUF, y: BUF}")
    p = profile(load_design(arch(write), w, m))
    assert p.breakdown["rec_mii.L_i"] == 4 and p.breakdown["ii.L_i"] == 4
    depth = p.breakdown["depth.L_i"]
    assert depth == 1 + 4  # load, add
    # a's cycle to arrive, the loop, the store of y[0], then its word's cycle to DRAM (hlsim 0.46: a top-level
    # statement's own transfer does not overlap its work)
    assert p.metrics["cycles"] == 1 + (depth + 63 * 4) + 1 + 1
    assert p.functional_check == "pass"


FOUR = dict(
    params="{N: 32}",
    arrays='    a: {shape: ["4 * N"], dtype: fp32, role: in}\n    y: {shape: [N], dtype: fp32, role: out}',
    kernel="    L_i: for (int i = 0; i < N; i++) {\n"
           "      y[i] = a[4 * i] + a[4 * i + 1] + a[4 * i + 2] + a[4 * i + 3];\n    }",
    reference="    y[:] = a.reshape(N, 4).sum(axis=1)")


def test_four_loads_from_a_two_port_array_give_ii_2_and_cyclic_partition_2_gives_ii_1(write):
    a = arch(write, adds=4)
    w = workload(write, "four", **FOUR)
    plain = mapping(write, "plain", "{L_i: {pipeline_ii: 1}}", "{a: BUF, y: BUF}")
    part = mapping(write, "part", "{L_i: {pipeline_ii: 1}}", "{a: BUF, y: BUF}",
                   "  partition: {a: {type: cyclic, factor: 2, dim: 1}}")
    p1, p2 = profile(load_design(a, w, plain)), profile(load_design(a, w, part))
    assert p1.breakdown["mem_mii.L_i"] == 2 and p1.breakdown["ii.L_i"] == 2
    assert p2.breakdown["mem_mii.L_i"] == 1 and p2.breakdown["ii.L_i"] == 1
    assert p1.metrics["cycles"] - p2.metrics["cycles"] == 31  # (n - 1) x (2 - 1); same depth
    assert p1.functional_check == p2.functional_check == "pass"


def test_unroll_by_u_divides_iterations_and_multiplies_units(write):
    a = arch(write, adds=4)
    w = workload(write, "vecadd", **VECADD)
    base = profile(load_design(a, w, mapping(write, "p", "{L_i: {pipeline_ii: 1}}", "{a: BUF, b: BUF, y: BUF}")))
    parts = "  partition: {a: {type: cyclic, factor: 4, dim: 1}, b: {type: cyclic, factor: 4, dim: 1}, " \
            "y: {type: cyclic, factor: 4, dim: 1}}"
    u4 = profile(load_design(a, w, mapping(write, "u", "{L_i: {pipeline_ii: 1, unroll: 4}}",
                                           "{a: BUF, b: BUF, y: BUF}", parts)))
    assert base.counters["units.add"] == 1 and u4.counters["units.add"] == 4
    assert u4.breakdown["ii.L_i"] == 1
    # 100 iterations in groups of 4, after a and b arrive (a cycle) and before y leaves (one)
    assert u4.metrics["cycles"] == u4.breakdown["depth.L_i"] + 25 - 1 + 2
    assert u4.counters["ops.add"] == base.counters["ops.add"] == 100  # same work, 4 units in parallel
    assert u4.metrics["area_um2"] > base.metrics["area_um2"]
    assert u4.functional_check == "pass"


SPMV_ARCH = """
architecture:
  version: 1
  name: tiny-spmv
  clock_mhz: 100
  compute:
    operators:
      add: {count: 1, bits: 32, numeric: float, latency_cycles: 4}
      mul: {count: 1, bits: 32, numeric: float, latency_cycles: 3}
      cmp: {count: 1, bits: 32, latency_cycles: 1}
  memory:
    - {name: DRAM, kind: dram, width_bits: 64, bandwidth_bytes_per_cycle: 100000, latency_cycles: 0}
    - {name: BUF, kind: sram, capacity_kib: 64, width_bits: 32, banks: 8, ports: 2, latency_cycles: 1,
       bandwidth_bytes_per_cycle: 100000}
"""


def test_spmv_cycles_follow_the_row_lengths_of_the_actual_input(write):
    """Same matrix size and non-zero count, different row-length skew: different cycles, each as by hand."""
    a = write("arch.yaml", SPMV_ARCH)
    wl = load_design(ROOT / "arch_specs/hls-fpga.yaml", ROOT / "workloads/spmv-csr.yaml",
                     ROOT / "mappings/spmv-csr-hls-fpga.yaml").workload
    w = write("spmv.yaml", (ROOT / "workloads/spmv-csr.yaml").read_text().replace(
        "parameters: {M: 128, N: 128, NNZ: 2048}", "parameters: {M: 8, N: 16, NNZ: 24}"))
    m = write("m.yaml", (ROOT / "mappings/spmv-csr-hls-fpga.yaml").read_text().replace("BRAM", "BUF"))
    d = load_design(a, w, m)
    assert wl.name == "spmv-csr"
    depth = 2 * 1 + 3 + 4  # col_idx -> x loads, then mul and add (vals loads in parallel)
    ii = 4  # the fp adder's recurrence on sum
    results = {}
    for variant in (None, "skewed"):
        inp = inputs_for(d, None, variant)
        lengths = np.diff(inp.arrays["row_ptr"])
        assert lengths.sum() == 24
        p = profile(d, inputs=inp)
        assert p.functional_check == "pass"
        assert p.breakdown["depth.L_j"] == depth and p.breakdown["ii.L_j"] == ii
        # per row: loop control (1) + the head's load of row_ptr[i] (1 cycle on BUF; hlsim 0.27) + the pipelined
        # inner loop if it runs, else its test that finds no trip (load row_ptr[i + 1] 1 + cmp 1: hlsim 0.38;
        # after n trips it starts at n x II and ends before the last iteration does) + the store of y[i] (1)
        test = 1 + 1
        assert ii + test < depth
        by_hand = sum(1 + 1 + (depth + (n - 1) * ii if n else test) + 1 for n in lengths)
        assert p.breakdown["compute_cycles.L_i"] == by_hand
        results[variant] = (p.metrics["cycles"], tuple(lengths))
    assert results[None][1] != results["skewed"][1]
    assert results[None][0] != results["skewed"][0]
    assert csr_row_lengths(8, 16, 24, 0.0).tolist() == [3] * 8


def test_timing_constants_are_read_at_run_time_one_binary_serves_many_variants(write):
    w = workload(write, "reduce", **REDUCE)
    m = mapping(write, "p", "{L_i: {pipeline_ii: 1}}", "{a: BUF, y: BUF}")
    prof = HlsimProfiler()
    p4 = prof.profile(load_design(write("a4.yaml", ARCH.replace("ADDS", "1")), w, m))
    slow = ARCH.replace("ADDS", "1").replace("latency_cycles: 4", "latency_cycles: 9")
    p9 = prof.profile(load_design(write("a9.yaml", slow), w, m))
    assert p9.counters["compiled"] == 0  # same structure: the cached binary, other constants
    assert p9.breakdown["ii.L_i"] == 9 and p9.metrics["cycles"] > p4.metrics["cycles"]


def test_a_wrong_output_is_reported_and_the_cli_exits_4(write, capsys):
    bad = dict(VECADD, reference="    y[:] = a + b + 1")
    w = workload(write, "vecadd", **bad)
    m = mapping(write, "p", "{L_i: {pipeline_ii: 1}}", "{a: BUF, b: BUF, y: BUF}")
    a = arch(write)
    p = profile(load_design(a, w, m))
    assert p.functional_check.startswith("fail: y[")
    assert main(["profile", str(a), str(w), str(m)]) == 4
    assert "do not match" in capsys.readouterr().err


def _safety_case(write, kernel, arrays, params="{N: 16}", extra=""):
    w = workload(write, "bad", params, arrays, kernel, "    pass", extra)
    m = mapping(write, "m", "{}", "{}")
    return arch(write), w, m


@pytest.mark.parametrize("case", ["infinite", "segfault", "oom"])
def test_runaway_kernels_end_with_exit_2_and_a_clear_message_within_the_limit(write, case):
    if case == "infinite":
        files = _safety_case(write, "    int k = 0;\n    L_w: while (k < 1) {\n      y[0] = y[0] + 1;\n    }",
                             "    y: {shape: [N], dtype: int32, role: out}")
        want = "did not finish within 2 s"
    elif case == "segfault":
        # (an out-of-bounds subscript is caught before it can crash: tests/test_hlsim_bounds.py)
        files = _safety_case(write, "    int t[100000000];\n    L_i: for (int i = 0; i < N; i++) {\n"
                             "      t[i * 1000000] = i;\n      y[i] = t[(N - 1 - i) * 1000000];\n    }",
                             "    y: {shape: [N], dtype: int32, role: out}")
        want = "SIGSEGV"
    else:
        files = _safety_case(write, "    L_i: for (int i = 0; i < 4; i++) {\n      y[i] = 1;\n    }",
                             "    y: {shape: [N], dtype: int32, role: out}", params="{N: 1000000000}")
        want = "out of memory"
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "llmulator.cli", "profile", *map(str, files), "--time-limit", "2",
                        "--mem-limit", "512"], capture_output=True, text=True, timeout=60)
    assert time.perf_counter() - t0 < 30
    assert r.returncode == 2, r.stderr
    assert want in r.stderr and "Traceback" not in r.stderr


def test_inputs_from_a_folder_of_npy_files(write, tmp_path):
    w = workload(write, "vecadd", **VECADD)
    m = mapping(write, "p", "{L_i: {pipeline_ii: 1}}", "{a: BUF, b: BUF, y: BUF}")
    d = load_design(arch(write), w, m)
    folder = tmp_path / "in"
    folder.mkdir()
    np.save(folder / "a.npy", np.arange(100, dtype=np.float32))
    np.save(folder / "b.npy", np.ones(100, dtype=np.float32))
    p = profile(d, inputs=inputs_for(d, str(folder)))
    assert p.functional_check == "pass" and p.inputs == f"directory {folder}"
    with pytest.raises(UserError, match="input 'a'"):
        profile(d, inputs=Inputs({"a": np.zeros(3, np.float32), "b": np.zeros(100, np.float32)}, "x"))


def test_profile_is_deterministic_for_a_seed():
    d = load_design(ROOT / "arch_specs/hls-fpga.yaml", ROOT / "workloads/spmv-csr.yaml",
                    ROOT / "mappings/spmv-csr-hls-fpga.yaml")
    prof = HlsimProfiler()
    skew = dict(variant="skewed")
    a = prof.profile(d, inputs_for(d, "1", **skew))
    b = prof.profile(d, inputs_for(d, "1", **skew))
    # `compiled` says whether this call compiled the binary (the first one may, on a cold cache)
    same = {k: v for k, v in a.counters.items() if k != "compiled"}
    assert a.metrics == b.metrics and same == {k: v for k, v in b.counters.items() if k != "compiled"}
    assert a.inputs == "generated: seed=1, variant=skewed"
    # the skew fixes the multiset of row lengths; the seed places them and moves the columns
    i1, i2 = inputs_for(d, "1", **skew).arrays, inputs_for(d, "2", **skew).arrays
    assert not np.array_equal(i1["col_idx"], i2["col_idx"])
    assert sorted(np.diff(i1["row_ptr"])) == sorted(np.diff(i2["row_ptr"]))
    c = prof.profile(d, inputs_for(d, "2", **skew))
    assert c.metrics["cycles"] == a.metrics["cycles"]  # same multiset of trip counts, same cycles
    assert generate_inputs(d.workload, d.sizes, seed=1)["x"].tolist() == \
        generate_inputs(d.workload, d.sizes, seed=1)["x"].tolist()
    assert attrs.asdict(a)["profiler"] == "hlsim"


def test_parameter_names_do_not_clash_with_the_harness(write):
    """Sizes named like harness variables (T, s, k, n) compile and run."""
    w = workload(write, "clash", "{T: 8, s: 3, n: 2}",
                 "    a: {shape: [T], dtype: fp32, role: in}\n    y: {shape: [T], dtype: fp32, role: out}",
                 "    L_i: for (int i = 0; i < T; i++) {\n      y[i] = a[i] * s + n;\n    }",
                 "    y[:] = a * s + n")
    m = mapping(write, "p", "{L_i: {pipeline_ii: 1}}", "{a: BUF, y: BUF}")
    p = profile(load_design(arch(write), w, m))
    assert p.functional_check == "pass" and p.counters["trips.L_i"] == 8


def test_unrolled_copies_of_one_array_are_not_serialised_when_their_elements_differ(write):
    """a[i] = a[i] * 2 unrolled by 4: the copies touch a[4g], a[4g+1], ...: provably distinct elements."""
    w = workload(write, "scale", "{N: 64}", "    a: {shape: [N], dtype: fp32, role: inout}",
                 "    L_i: for (int i = 0; i < N; i++) {\n      a[i] = a[i] * 2.0f;\n    }", "    a[:] = a * 2")
    part = "  partition: {a: {type: cyclic, factor: 4, dim: 1}}"
    a = write("arch4.yaml", ARCH.replace("ADDS", "1").replace("mul: {count: 1", "mul: {count: 4"))
    p = profile(load_design(a, w, mapping(write, "u", "{L_i: {pipeline_ii: 1, unroll: 4}}", "{a: BUF}", part)))
    assert p.breakdown["depth.L_i"] == 1 + 3 + 1  # one copy's load, multiply, store: the four run side by side
    assert p.breakdown["ii.L_i"] == 1 and p.functional_check == "pass"
