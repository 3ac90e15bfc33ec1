"""The int16 PE measured on 8-bit data, per operand role, against the switching rule of llmulator.pecost.

The rule (analytical 0.28) prices a MAC on a PE wider than its data by the bits its streaming operands
toggle: an unsigned narrow operand its magnitude bits, a signed one the whole PE (sign extension), two
streams that differ between the narrow and the wide entry by the multiplier's partial products. It was
read from the rtl cross-check's conv2d rows. This checks it on the characterize harness instead: the
same PE structure, the same active stimulus, but each operand drawn from a declared range (conv2d's: the
inputs 0..255, the weights -128..127), priced from the gate-level VCD like the table's entries.

    .venv/bin/python benchmarks/pe_data_ranges.py      # ~30 s; prints a Markdown table
"""

from __future__ import annotations

import sys
from pathlib import Path

from llmulator import tech
from llmulator_plugins.characterize import flow as cz
from llmulator_plugins.characterize import structures as st_mod

ROOT = Path(__file__).resolve().parents[1]
U8, S8 = (0, 255), (-128, 127)
# (shape, what streams, ranges of the streaming operands and of the stationary one)
CASES = [
    ("pe_psum", "ws-like: the unsigned input streams, the signed weight is stationary", {"x": U8, "s": S8}),
    ("pe_psum", "is-like: the signed weight streams, the unsigned input is stationary", {"x": S8, "s": U8}),
    ("pe_os", "os: the unsigned input streams west-east, the signed weight north-south", {"x": U8, "y": S8}),
    ("pe_os", "os, both unsigned (a check of the narrow end)", {"x": U8, "y": U8}),
    ("pe_psum", "both signed (a check of the wide end)", {"x": S8, "s": S8}),
]


def draw(lo: int, hi: int) -> str:
    return f"({lo} + ($unsigned($random(seed)) % {hi - lo + 1}))"


def ranged(text: str, shape: str, rg: dict[str, tuple[int, int]]) -> str:
    """The structure's active testbench with each operand drawn from its range (products from above too)."""
    rnd = "$random(seed)"
    if shape == "pe_psum":
        text = text.replace(f"x_in = {rnd};", f"x_in = {draw(*rg['x'])};")
        text = text.replace(f"u = {rnd}; v = {rnd};", f"u = {draw(*rg['s'])}; v = {draw(*rg['x'])};")
        text = text.replace(f"s_in = {rnd};", f"s_in = {draw(*rg['s'])};")
    else:
        text = text.replace(f"x_in = {rnd}; y_in = {rnd};", f"x_in = {draw(*rg['x'])}; y_in = {draw(*rg['y'])};")
        text = text.replace(f"u = {rnd}; v = {rnd};", f"u = {draw(*rg['x'])}; v = {draw(*rg['y'])};")
    if f"= {rnd};" in text.split("task draw", 1)[1].split("endtask", 1)[0]:
        raise RuntimeError("an operand of the testbench was left uniformly random")
    return text


def predicted(shape: str, rg: dict[str, tuple[int, int]]) -> float:
    """The MAC's energy on the int16 PE by the rule: switching (entry's active less its idle) + the int16 clock."""
    st = tech.table("osu018")["structures"][shape]
    n8, n16 = st["int8"], st["int16"]
    streams = [rg["x"]] * 2 if shape == "pe_psum" else [rg["x"], rg["y"]]
    widths = [16 if lo < 0 else max(hi.bit_length(), 8) for lo, hi in streams]
    f = (widths[0] * widths[1] - 64) / (256 - 64)
    act = n8["energy_pj"] + f * (n16["energy_pj"] - n8["energy_pj"])
    idle = n8["idle_energy_pj"] + f * (n16["idle_energy_pj"] - n8["idle_energy_pj"])
    return act - idle + n16["idle_energy_pj"]


def main() -> int:
    tools = cz.find_tools()
    base = st_mod.testbench
    rows = ["| PE | case | measured pJ per MAC | rule (pecost) | rule / measured | int8 entry's rule (0.25) | "
            "int16 entry |", "|---|---|---|---|---|---|---|"]
    st_tab = tech.table("osu018")["structures"]
    for shape, what, rg in CASES:
        st = st_mod.structure(shape, 16, 32)
        st_mod.testbench = lambda *a, _rg=rg, _shape=shape, **k: (
            ranged(base(*a, **k), _shape, _rg) if (a[4] if len(a) > 4 else k.get("mode")) == "active"
            else base(*a, **k))
        tag = "_".join(f"{k}{lo}_{hi}" for k, (lo, hi) in sorted(rg.items())).replace("-", "m")
        try:
            r = st_mod.characterize_structure(st, 100.0, 1000, tools, ROOT / ".eda" / "work" / "pe-ranges" / tag)
        finally:
            st_mod.testbench = base
        meas, rule = r["active_cycle_pj"], predicted(shape, rg)
        n8, n16 = st_tab[shape]["int8"], st_tab[shape]["int16"]
        old = n8["energy_pj"] - n8["idle_energy_pj"] + n16["idle_energy_pj"]
        rows.append(f"| {shape} int16 | {what} | {meas:.1f} | {rule:.1f} | {rule / meas:.2f} | {old:.1f} "
                    f"({old / meas:.2f}) | {n16['energy_pj']:.1f} ({n16['energy_pj'] / meas:.2f}) |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
