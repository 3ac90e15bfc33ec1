"""The rtl cross-check page's energy columns, recomputed from its saved rows (benchmarks/rows/).

Up to 4x4 both the profiler and the benchmark replay every PE gate-level on the same recorded inputs,
so the benchmark's "PEs gate-level" figure must equal the profiler's own ``energy_pj.rtl.pe_array``
(``pe_replay.corrected_array_pj`` on the row's replayed and propagated PEs). Until 2026-12-05 it did not
(GEMM ws 2x2: 73.2 against 49.7 pJ per MAC): the benchmark took the rest of the array from the profiler's
figure, which already held the replayed PEs, and counted their replay-minus-propagated difference twice.
(The rows' ``e_pe_rtl_mac`` is the profiler 0.2 run's figure, its replay priced by OpenSTA; the rows'
replays are priced from their VCDs since the page's refresh of 2026-12-05, so the profiler's rule is
applied to them here.)"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from llmulator_plugins.rtl.pe_replay import corrected_array_pj, pe_sample

ROOT = Path(__file__).resolve().parent.parent
ROWS = sorted((ROOT / "benchmarks" / "rows").glob("rtl-crosscheck-synth-*.json"))


def _bench():
    spec = importlib.util.spec_from_file_location("rtl_crosscheck", ROOT / "benchmarks" / "rtl_crosscheck.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rows(small: bool):
    for path in ROWS:
        for r in json.loads(path.read_text())["srows"]:
            if (r["n"] <= 4) == small and (r.get("replay") or {}).get("flow_pj_per_cycle"):
                yield r


def test_saved_rows_exist():
    assert len(list(_rows(True))) >= 6


def _profiler_mac(b, row) -> float:
    """The profiler's PE-array figure per MAC from the row's data: its propagated array corrected by the
    replayed-minus-propagated difference of the PEs it samples (every PE up to 4x4, 16 above)."""
    class Plan:
        A = B = row["n"]
    rp = row["replay"]
    sample = pe_sample(Plan)
    flow_array = b.flow_array_mac(row) * row["macs"] / row["cycles"]      # pJ per cycle
    fixed = corrected_array_pj(flow_array, {p: rp["flow_pj_per_cycle"][p] for p in sample},
                               {p: rp["replay_pj_per_cycle"][p] for p in sample}, row["n"] ** 2)
    return fixed * row["cycles"] / row["macs"]


@pytest.mark.parametrize("row", list(_rows(True)), ids=lambda r: f"{r['work']}-{r['df']}-{r['n']}")
def test_gate_level_equals_profiler_where_every_pe_is_replayed(row):
    b = _bench()
    assert b.gate_level_mac(row) == pytest.approx(_profiler_mac(b, row), rel=1e-9)
    # the array's propagated figure is never counted as logic outside the array
    assert "pe_array.opensta" not in b.other_logic_mac(row)


@pytest.mark.parametrize("row", list(_rows(False)), ids=lambda r: f"{r['work']}-{r['df']}-{r['n']}")
def test_sampled_replay_close_to_full_replay(row):
    """Above 4x4 the profiler replays 16 PEs and scales; the benchmark replays all of them."""
    b = _bench()
    assert b.gate_level_mac(row) == pytest.approx(_profiler_mac(b, row), rel=0.05)


def test_rtl_ports_reads_the_generated_module_headers(tmp_path):
    """module_replay drives each engine from its header: every input with its width, clk left out."""
    from llmulator.buflayout import layout
    from llmulator.pearray import make_plan
    from llmulator_plugins.rtl.top import generate
    from test_pecost import _design
    d = _design(tmp_path, "ws")
    plan = make_plan(d)
    rtl = generate(plan, layout(d, plan, fit=False))
    from llmulator_plugins.rtl.module_replay import rtl_ports
    ins, outs = rtl_ports(rtl.modules["rd_X"], "rd_X")
    names = dict(ins)
    assert "clk" not in names and names["rst"] == 1 and names["pop"] == 1
    assert names["rdata"] == plan.A * 128 and names["gnt"] == plan.A          # a 128-bit word per lane
    assert dict(outs)["head"] == plan.A * 8
    ins, outs = rtl_ports(rtl.modules["out_fifo"], "out_fifo")
    assert dict(ins) == {"rst": 1, "push": 1, "din": plan.B * 32, "pop": 1}
    assert dict(outs) == {"dout": plan.B * 32, "empty": 1, "full": 1}
