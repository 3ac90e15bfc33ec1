"""The PE array's advance enable is a tree (plugins/rtl/array.py): no gate of the generated RTL drives the
whole array, and the tree changes neither the outputs nor the cycle counts."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from types import SimpleNamespace

import pytest
from llmulator_plugins.rtl import array
from test_rtl_profiler import design


def _plan(shape: str, n: int) -> SimpleNamespace:
    op = SimpleNamespace(bits=8, signed=True)
    ops = {"O": SimpleNamespace(bits=32, signed=True), "X": op, ("S" if shape == "psum" else "Y"): op}
    return SimpleNamespace(shape=shape, A=n, B=n, operands=ops)


def _loads(text: str) -> tuple[Counter, dict[str, str], Counter]:
    """(buffer or PE enable inputs per driving net, the driver of each buffer's output, register bits per
    enable net) of a pe_array module's text."""
    loads: Counter = Counter()
    parent: dict[str, str] = {}
    for src, dst in re.findall(r"adv_buf u_\w+ \(\.i\(([\w\[\]]+)\), \.o\((\w+)\)\);", text):
        loads[src] += 1
        parent[dst] = src
    for net in re.findall(r"\.(?:adv|drain|load)\((\w+)\)", text):
        loads[net] += 1
    width = {}
    for bits, names in re.findall(r"reg \[(\d+):0\] ([\w, ]+);", text):
        for name in names.split(", "):
            width[name.strip()] = int(bits) + 1
    regs: Counter = Counter()
    for en, moves in re.findall(r"else if \((\w+)\) begin (.*?) end", text):
        for name in re.findall(r"(\w+) <=", moves):
            regs[en] += width[name]
    for en in re.findall(r"else if \((\w+)\) vchain <=", text):
        regs[en] += width["vchain"]
    return loads, parent, regs


@pytest.mark.parametrize("shape", ["psum", "os"])
@pytest.mark.parametrize("n", [2, 8, 16])
def test_no_net_drives_more_than_the_fanout(shape, n):
    text = array.array_module(_plan(shape, n))
    loads, parent, regs = _loads(text)
    assert max(loads.values()) <= array.FANOUT
    assert max(regs.values()) <= array.CHUNK_BITS
    assert len(re.findall(r"\.adv\(en_pe_\d+_\d+\)", text)) == n * n  # every PE enabled by a leaf
    assert "adv" not in regs and " adv)" not in text.replace(".i(adv)", "")  # only buffers read the port
    ports = {"adv", "drain"} | {f"load_row[{a}]" for a in range(n)}
    for net in list(loads) + list(regs):  # every control is its port through a tree
        while net not in ports:
            net = parent[net]
    if n >= 8:  # 64-256 PEs and their skew chunks: buffers of buffers
        assert "adv_t0_0" in loads and (shape == "psum" or "drain_t0_0" in loads)


def test_the_synthesised_buffer_is_a_liberty_cell_and_the_simulated_one_a_wire(write):
    from llmulator.buflayout import layout
    from llmulator_plugins.rtl.plan import make_plan
    from llmulator_plugins.rtl.top import generate
    d = design(write, 2, "os", 4, 2, 2)
    plan = make_plan(d)
    rtl = generate(plan, layout(d, plan))
    assert "assign o = i;" in rtl.modules["adv_buf"]
    assert f"{array.BUFFER_CELL} u_b (.A(i), .Y(o));" in rtl.synth_modules["adv_buf"]
    assert rtl.synth_modules["pe_array"] == rtl.modules["pe_array"]


needs_iverilog = pytest.mark.skipif(shutil.which("iverilog") is None or shutil.which("vvp") is None,
                                    reason="iverilog/vvp not installed (scripts/install_eda.sh)")


@needs_iverilog
@pytest.mark.parametrize("n, df, dims, cycles", [(3, "ws", (4, 3, 3), 18), (2, "os", (4, 2, 2), 18)])
def test_a_deep_tree_changes_no_output_and_no_cycle(write, tmp_path, monkeypatch, n, df, dims, cycles):
    """With two loads per buffer and one skew bit per leaf the tiny arrays get trees three levels deep; the
    simulation still passes its functional check with the hand-counted cycles of test_rtl_profiler."""
    from llmulator_plugins.rtl.profiler import RtlProfiler
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(array, "FANOUT", 2)
    monkeypatch.setattr(array, "CHUNK_BITS", 1)
    d = design(write, n, df, *dims)
    prof = RtlProfiler(synthesize=False, simulator="icarus").profile(d)
    assert prof.functional_check == "pass"
    assert prof.metrics["cycles"] == cycles
