"""Print the measured entries of a technology table (default: osu018) as the Markdown tables of
docs/technology.md, so the page is rewritten from the table rather than by hand.

    .venv/bin/python scripts/tech_table_md.py            # operators, then structures
"""

from __future__ import annotations

import re
import sys

from llmulator import tech


def _num(note: str, pattern: str) -> float | None:
    m = re.search(pattern, note)
    return float(m.group(1)) if m else None


def _g(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.{digits}g}"


def operators(name: str = "osu018") -> str:
    t, base = tech.table(name), tech.table("45nm")
    L = ["| class | width | energy pJ | logic pJ | 45nm x16 pJ | logic / (45nm x16) | area µm² | logic µm² | "
         "delay ns | cycles @100 MHz |", "|" + "---|" * 10]
    for cls, fmts in t["operators"].items():
        for fmt, e in fmts.items():
            if e.get("source") != "measured":
                continue
            note = e.get("note", "")
            logic_pj = _num(note, r"logic alone ([\d.]+) pJ")
            logic_um2 = _num(note, r"logic alone [\d.]+ pJ, (\d+) um2")
            delay = _num(note, r"critical path ([\d.]+) ns")
            b = (base["operators"].get(cls) or {}).get(fmt)
            scaled = b["energy_pj"] * 16 if b else None
            ratio = f"{logic_pj / scaled:.2g}" if scaled and logic_pj else "–"
            src = f" ({b.get('source')})" if b and b.get("source") == "assumed" else ""
            L.append(f"| {cls} | {fmt} | {_g(e['energy_pj'])} | {_g(logic_pj)} | "
                     f"{(_g(scaled) + src) if scaled else '–'} | {ratio} | {e['area_um2']:,.0f} | "
                     f"{_g(logic_um2)} | {delay:.2f} | {e['latency_cycles']} |")
    return "\n".join(L)


def structures(name: str = "osu018") -> str:
    t = tech.table(name)
    L = ["| structure | format | area µm² | energy_pj | idle_energy_pj |", "|---|---|---|---|---|"]
    for kind, fmts in (t.get("structures") or {}).items():
        for fmt, e in fmts.items():
            L.append(f"| `{kind}` | {fmt} | {_g(e['area_um2'])} | {_g(e['energy_pj'])} | {_g(e['idle_energy_pj'])} |")
    return "\n".join(L)


if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else "osu018"
    print(operators(name))
    print()
    print(structures(name))
