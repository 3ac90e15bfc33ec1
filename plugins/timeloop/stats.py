"""Reading Timeloop's ``timeloop-model.stats.txt`` / ``timeloop-mapper.stats.txt`` (the reference figures)."""

from __future__ import annotations

import re
from pathlib import Path


def parse_stats(path: str | Path) -> dict:
    """{cycles, utilization, computes, energy_pj (total), levels: {name: {spaces: {ds: {reads, fills,
    updates, instances, energy_pj}}, leak_pj}}, mac_energy_pj}."""
    text = Path(path).read_text()
    out: dict = {"levels": {}}
    summary = text.split("Summary Stats", 1)
    body = summary[0]
    sections = re.split(r"^=== (.+?) ===\s*$", body, flags=re.M)
    first_mac = None
    for i in range(1, len(sections) - 1, 2):
        name, sec = sections[i].strip(), sections[i + 1]
        if "Computes (total)" in sec:
            first_mac = name
            out["mac"] = name
            out["computes"] = float(re.search(r"Computes \(total\)\s*:\s*([\d.e+]+)", sec).group(1))
            m = re.search(r"Energy \(total\)\s*:\s*([\d.e+]+) pJ", sec)
            out["mac_energy_pj"] = float(m.group(1)) if m else 0.0
            continue
        if "STATS" not in sec:
            continue
        lv = {"spaces": {}}
        m = re.search(r"Leakage energy \(total\)\s*:\s*([\d.e+-]+) pJ", sec)
        lv["leak_pj"] = float(m.group(1)) if m else 0.0
        stats = sec.split("STATS", 1)[1]
        for ds_m in re.finditer(r"^    (\w+):\n((?:        .*\n?)+)", stats, flags=re.M):
            ds, block = ds_m.group(1), ds_m.group(2)

            def num(label: str, block=block) -> float:
                mm = re.search(r"^\s*" + re.escape(label) + r"\s*:\s*([\d.e+-]+)", block, flags=re.M)
                return float(mm.group(1)) if mm else 0.0
            inst = num("Utilized instances (max)") or num("Utilized instances")
            reads = num("Scalar reads (per-instance)") or num("Actual scalar reads (per-instance)")
            fills = num("Scalar fills (per-instance)") or num("Actual scalar fills (per-instance)")
            updates = num("Scalar updates (per-instance)") or num("Actual scalar updates (per-instance)")
            lv["spaces"][ds] = {"reads": reads * inst, "fills": fills * inst, "updates": updates * inst,
                                "instances": inst, "energy_pj": num("Energy (total)"),
                                "per_instance": {"reads": reads, "fills": fills, "updates": updates}}
        out["levels"][name] = lv
    del first_mac
    tail = summary[1] if len(summary) > 1 else ""
    m = re.search(r"^Utilization:\s*([\d.]+)%", tail, flags=re.M)
    out["utilization"] = float(m.group(1)) / 100 if m else None
    m = re.search(r"^Cycles:\s*(\d+)", tail, flags=re.M)
    out["cycles"] = float(m.group(1)) if m else None
    m = re.search(r"^Computes = (\d+)", tail, flags=re.M)
    computes = float(m.group(1)) if m else out.get("computes", 0.0)
    fj = dict(re.findall(r"^    (\S+)\s*= ([\d.]+)\s*$", tail.split("fJ/Compute", 1)[-1], flags=re.M))
    out["fj_per_compute"] = {k: float(v) for k, v in fj.items()}
    out["energy_pj"] = out["fj_per_compute"].get("Total", 0.0) * computes / 1000.0
    return out
