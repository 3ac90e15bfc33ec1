"""The PEs' energy measured gate-level on the simulation's own stimulus, for a sample of PEs.

OpenSTA, given the RTL simulation's activity on the nets the synthesised netlist keeps RTL names for,
propagates it through the rest of the PE's logic with its default assumptions (docs/rtl-crosscheck.md).
The replay is the characterize method: the PE's gate netlist (the technology table's own synthesis of
that PE shape) driven cycle by cycle with the input values each sampled PE saw in the RTL run (read
from its VCD), priced from the gate-level VCD cell by cell (characterize's vcdpower). Replaying every
PE of a 16x16 array would cost minutes, so an array larger than 4x4 has 16 PEs on a stratified grid
replayed, and their difference from the OpenSTA figure of the same PEs is scaled to the whole array
(within 5 % of replaying every PE on every row of docs/rtl-crosscheck.md, tests/test_rtl_crosscheck_rows.py).
"""

from __future__ import annotations

from pathlib import Path

SCOPE = ["tb", "dut", "u_array"]   # where the testbench instantiates the PE array
REPLAY = "3"   # bump when the replay or the sampling changes what a cached synthesis result holds (2: vcdpower;
#               3: the engines and the output queue replayed too, module_replay)
GRID = 4   # a larger array is sampled on a GRID x GRID stratified grid of PEs


def pe_name(a: int, b: int) -> str:
    return f"u_pe_{a}_{b}"


def pe_sample(plan) -> list[str]:
    """The PEs replayed: every PE of an array of at most GRID x GRID, else one PE at the centre of each
    cell of a GRID x GRID grid over the array (rows and columns both covered evenly: in a systolic array
    a PE's activity depends on how far the operand and partial-sum waves have to travel to reach it)."""
    if plan.A * plan.B <= GRID * GRID:
        return [pe_name(a, b) for a in range(plan.A) for b in range(plan.B)]
    rows = sorted({(2 * i + 1) * plan.A // (2 * GRID) for i in range(GRID)})
    cols = sorted({(2 * j + 1) * plan.B // (2 * GRID) for j in range(GRID)})
    return [pe_name(a, b) for a in rows for b in cols]


def structure_of(plan):
    """The technology table's PE structure for this plan's shape and operand widths."""
    from llmulator_plugins.characterize import structures as st_mod
    kind = "pe_psum" if plan.shape == "psum" else "pe_os"
    return st_mod.structure(kind, plan.operands["X"].bits, plan.operands["O"].bits)


def replay_pes(plan, vcd: Path, window: int, tools, clock_mhz: float, work: Path,
               pes: list[str]) -> dict[str, dict[str, float]]:
    """Energy per cycle (pJ: ``total``, ``sequential``, ``combinational``) of each PE in ``pes``, its
    recorded inputs replayed on its gate netlist."""
    from llmulator_plugins.characterize import replay
    from llmulator_plugins.characterize import structures as st_mod
    st = structure_of(plan)
    work.mkdir(parents=True, exist_ok=True)
    # synthesis of the PE (and its table characterisation), cached in ``work`` by content
    st_mod.characterize_structure(st, clock_mhz, 1000, tools, work)
    folder = work / f"{st.kind}-{st.fmt}"
    rows = replay.sample_inputs(vcd, SCOPE, pes, dict(st.inputs), window=window)
    period_ns = 1000.0 / clock_mhz
    return {p: replay.replay_energy(st, rows[p], tools, folder, period_ns=period_ns) for p in pes if rows.get(p)}


def corrected_array_pj(flow_array_pj: float, flow_sample: dict[str, float], replay: dict[str, float],
                       n_pes: int) -> float | None:
    """The PE array's energy per cycle with its PEs measured gate-level: OpenSTA's figure for the array,
    plus the replayed-minus-propagated difference of the sampled PEs scaled to all ``n_pes`` PEs (exact
    when every PE is sampled). None when no sampled PE has both figures."""
    both = [p for p in replay if p in flow_sample]
    if not both:
        return None
    diff = sum(replay[p] - flow_sample[p] for p in both)
    return flow_array_pj + diff * n_pes / len(both)
