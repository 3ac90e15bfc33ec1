"""The rtl profiler's simulators (plugins/rtl/simulators.py): Verilator and Icarus give the same cycles,
access counts and outputs on the same generated design; the choice ($LLMULATOR_RTL_SIM) and the
Verilator VCD's scope rewrite. The Verilator test compiles one 2x2 design (-O0, the runtime from
ccache: ~5-15 s on 2 cores) and is skipped, with the reason, where Verilator or Icarus is missing.
"""

from __future__ import annotations

import numpy as np
import pytest
from llmulator.buflayout import layout
from llmulator.errors import UserError
from llmulator.inputs import inputs_for
from llmulator_plugins.rtl import sim, simulators
from llmulator_plugins.rtl.plan import make_plan
from llmulator_plugins.rtl.top import generate
from test_rtl_profiler import design


def test_choose_follows_the_option_then_the_environment(monkeypatch):
    monkeypatch.delenv(simulators.ENV, raising=False)
    auto = simulators.choose()
    assert auto == ("verilator" if simulators.missing("verilator") is None else "icarus")
    if simulators.missing("icarus") is None:      # a tiny design: Icarus is done before Verilator compiles
        assert simulators.choose(work=simulators.AUTO_ICARUS_BELOW / 2) == "icarus"
    monkeypatch.setenv(simulators.ENV, "spice")
    with pytest.raises(UserError, match="unknown simulator 'spice'"):
        simulators.choose()
    for name in ("verilator", "icarus"):
        monkeypatch.setenv(simulators.ENV, name)
        if simulators.missing(name) is None:
            assert simulators.choose() == name
            assert simulators.choose("auto") == auto      # the profiler's option wins over the variable
        else:
            with pytest.raises(UserError, match="was asked for"):
                simulators.choose()


def test_verilator_vcd_reads_like_icarus_after_the_top_scope_goes(tmp_path):
    from llmulator_plugins.characterize.vcd import parse_vcd
    vcd = tmp_path / "act.vcd"
    vcd.write_text("$timescale 1ps $end\n$scope module TOP $end\n$var wire 1 # clk $end\n$scope module tb $end\n"
                   "$var wire 1 # clk $end\n$scope module dut $end\n$var wire 2 $ q [1:0] $end\n"
                   "$scope module u $end\n$var wire 2 $ d [1:0] $end\n$upscope $end\n$upscope $end\n"
                   "$upscope $end\n$upscope $end\n$enddefinitions $end\n#0\n0#\nb00 $\n#5\n1#\nb1 $\n#10\n0#\n")
    simulators.drop_top_scope(vcd)
    text = vcd.read_text()
    assert "TOP" not in text and text.count("$scope") == text.count("$upscope") == 3
    act = parse_vcd(text.splitlines(), scope="tb.dut", hierarchical=True)
    # q and the port d on it share one code (Verilator's aliases): each gets the value, not half of it
    for net in ("q", "u.d"):
        assert act.nets[f"{net}[1]"].toggles == 0 and act.nets[f"{net}[0]"].toggles == 1


_MISSING = simulators.missing("verilator") or simulators.missing("icarus")


@pytest.mark.skipif(_MISSING is not None, reason=f"verilator or icarus missing: {_MISSING}")
def test_verilator_and_icarus_give_the_same_cycles_and_outputs(write, tmp_path):
    d = design(write, 2, "ws", 4, 2, 4)          # two folds over k: old outputs read back and accumulated
    plan = make_plan(d)
    lay = layout(d, plan)
    (tmp_path / "design.v").write_text(generate(plan, lay).text())
    inputs = inputs_for(d)
    arrays = {plan.operands[r].array: inputs.arrays[plan.operands[r].array] for r in ("S", "X", "Y")
              if r in plan.operands}
    got = {}
    for name in ("icarus", "verilator"):
        folder = tmp_path / name
        folder.mkdir()
        res, ran = sim.run(name, tmp_path / "design.v", lay, plan, arrays, (4, 2), np.int32, folder, 10_000, 300.0,
                           cache=tmp_path / "cache")
        assert ran.simulator == name and name.lower()[:4] in ran.version.lower()
        got[name] = res
    a, b = got["icarus"], got["verilator"]
    assert (a.cycles, a.reads, a.writes) == (b.cycles, b.reads, b.writes)
    assert np.array_equal(a.outputs["C"], b.outputs["C"])
    assert np.array_equal(a.outputs["C"], inputs.arrays["A"].astype(np.int32) @ inputs.arrays["B"].astype(np.int32))
    # the Verilator program is cached by content: a second run of the same design does not build
    res, ran = sim.run("verilator", tmp_path / "design.v", lay, plan, arrays, (4, 2), np.int32, tmp_path / "verilator",
                       10_000, 300.0, cache=tmp_path / "cache")
    assert ran.build_cached and ran.build_s == 0.0 and res.cycles == a.cycles
    assert len(list((tmp_path / "cache").glob("vlt-*/Vtb"))) == 1


def test_two_processes_needing_the_same_verilator_program_build_it_once(tmp_path, monkeypatch):
    # the build is faked (no Verilator needed): two threads ask for the same program at once; the lock
    # makes the second wait and reuse the first one's folder, which appears whole (one rename)
    import threading
    import time
    builds = []

    def fake_tool(cmd, cwd, timeout, log):
        builds.append(cwd)
        time.sleep(0.3)
        (cwd / "obj").mkdir()
        (cwd / "obj" / "Vtb").write_text("program")
        return ""

    monkeypatch.setattr(simulators, "tool", fake_tool)
    (tmp_path / "tb.v").write_text("module tb; endmodule\n")
    (tmp_path / "design.v").write_text("module accel; endmodule\n")
    got = []

    def need():
        got.append(simulators.verilator_program(tmp_path / "tb.v", tmp_path / "design.v", tmp_path / "cache", 60.0))

    threads = [threading.Thread(target=need) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1
    assert got[0][0] == got[1][0] and sorted(hit for _exe, _s, hit in got) == [False, True]
    assert [p.name for p in (tmp_path / "cache").iterdir() if p.name.startswith("vlt-")] == [got[0][0].parent.name]
    # another testbench (e.g. with the activity window) is another program
    (tmp_path / "tb.v").write_text("module tb; initial $dumpvars; endmodule\n")
    need()
    assert len(builds) == 2 and got[2][0] != got[0][0]
