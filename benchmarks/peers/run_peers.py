"""Peers side by side: our analytical estimator and hlsim next to SCALE-Sim v3 and ZigZag 3.9 on the same designs.

Run (from the repository root):

    scripts/install_scalesim.sh && scripts/install_zigzag.sh
    .venv/bin/python benchmarks/peers/run_peers.py            # rewrites docs/peers.md
    .venv/bin/python benchmarks/peers/run_peers.py --stdout   # only prints the table

Each peer runs in its own virtual environment as a subprocess: SCALE-Sim through
the ``scalesim`` profiler plugin (.venv-scalesim, plugins/scalesim/adapter.py),
ZigZag through ``benchmarks/peers/zigzag_runner.py`` (.venv-zigzag) on the inputs
``zigzag_inputs.py`` derives from the same design. Our numbers come from the
``analytical`` estimator and the ``hlsim`` profiler in this process. A peer that
is not installed leaves its columns empty with the reason in the notes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "benchmarks"))

from llmulator import plugins  # noqa: E402
from llmulator.design import load_design  # noqa: E402
from llmulator.fileio import atomic_write_text  # noqa: E402
from peers_scalesim import full_array_conv_mapping  # noqa: E402
from zigzag_inputs import zigzag_inputs  # noqa: E402

DOC = ROOT / "docs" / "peers.md"
DATA = ROOT / "tests" / "data" / "scalesim"
ZIGZAG_PYTHON = Path(os.environ.get("LLMULATOR_ZIGZAG_PYTHON", ROOT / ".venv-zigzag" / "bin" / "python"))
ZIGZAG_TIMEOUT_S = 600


def cases(tmp: Path) -> list[tuple[str, Path, Path, Path, str | None]]:
    gemm, conv = ROOT / "workloads" / "gemm.yaml", ROOT / "workloads" / "conv2d.yaml"
    out = []
    for n in (16, 32):
        for df in ("ws", "os"):
            out.append((f"GEMM 256^3, {df.upper()}", DATA / f"systolic-{n}.yaml", gemm, DATA / f"{df}-{n}.yaml", None))
    out.append(("GEMM 256^3, WS, DRAM 16 B/cycle", ROOT / "arch_specs" / "systolic-16x16.yaml", gemm,
                ROOT / "mappings" / "gemm-ws-16x16.yaml", "large"))
    for n, cols in ((16, 14), (32, 28)):
        out.append(("conv2d medium, IS (C on rows, Q on cols)", DATA / f"systolic-{n}.yaml", conv,
                    full_array_conv_mapping(n, cols, tmp), "medium"))
    return out


def run_zigzag(d, folder: Path, fixed_order: bool) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    for kind, doc in zigzag_inputs(d, fixed_order=fixed_order).items():
        (folder / f"{kind}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    t0 = time.perf_counter()
    r = subprocess.run([str(ZIGZAG_PYTHON), str(HERE / "zigzag_runner.py"), str(folder), "latency"],
                       capture_output=True, text=True, timeout=ZIGZAG_TIMEOUT_S, check=False)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        return {"error": " | ".join(tail)[:300], "wall": wall}
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["wall"] = wall
    return out


def zigzag_available() -> str | None:
    if not ZIGZAG_PYTHON.exists():
        return f"no ZigZag interpreter at {ZIGZAG_PYTHON} (run scripts/install_zigzag.sh)"
    r = subprocess.run([str(ZIGZAG_PYTHON), "-c", "import zigzag.api"], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        return "'import zigzag.api' fails: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    return None


def nj(v):
    return None if v is None else v / 1e3


def fmt(x, digits: int = 0) -> str:
    if x is None:
        return "-"
    return f"{x:,.{digits}f}"


def measure() -> tuple[list[dict], dict[str, str | None]]:
    ana = plugins.get("estimators", "analytical")
    hl = plugins.get("profilers", "hlsim")
    ss = plugins.get("profilers", "scalesim")
    why = {"scalesim": ss.available(), "zigzag": zigzag_available()}
    rows = []
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        tmp = Path(tmp)
        for k, (label, arch, wl, mp, preset) in enumerate(cases(tmp)):
            d = load_design(arch, wl, mp, preset)
            row = {"case": label, "arch": d.arch.name, "array": f"{d.arch.pe_array.rows}x{d.arch.pe_array.cols}",
                   "mapping": d.mapping.name}
            t0 = time.perf_counter()
            e = ana.estimate([d])[0]
            row["ana_s"] = time.perf_counter() - t0
            row["ana_cycles"], row["ana_energy"] = e.metrics["cycles"], e.metrics["energy_pj"]
            t0 = time.perf_counter()
            p = hl.profile(d)
            row["hl_s"] = time.perf_counter() - t0
            row["hl_cycles"], row["hl_energy"] = p.metrics["cycles"], p.metrics["energy_pj"]
            row["ideal"] = e.terms.get("ideal_cycles")
            if why["scalesim"] is None:
                t0 = time.perf_counter()
                sp = ss.profile(d)
                row["ss_s"] = time.perf_counter() - t0
                row["ss_cycles"] = sp.metrics["cycles"]
            if why["zigzag"] is None:
                for tag, fixed in (("zz", True), ("zzl", False)):
                    z = run_zigzag(d, tmp / f"zz{k}-{tag}", fixed)
                    row[f"{tag}_err"] = z.get("error")
                    row[f"{tag}_cycles"] = z.get("latency_cycles")
                    row[f"{tag}_energy"] = z.get("energy_pj")
                    row[f"{tag}_api_s"] = z.get("api_seconds")
                    row[f"{tag}_wall"] = z.get("wall")
                    row[f"{tag}_terms"] = {t: z.get(t) for t in ("ideal_temporal_cycle", "stall_slack_comb",
                                                                  "data_onloading_cycle", "data_offloading_cycle",
                                                                  "systolic_drain_cycle")}
            rows.append(row)
            print(json.dumps({k2: v for k2, v in row.items() if not k2.endswith("_terms")}, default=str),
                  file=sys.stderr)
    return rows, why


def tables(rows: list[dict], why: dict) -> str:
    h1 = ("| case | architecture | array | mapping | ideal | analytical | hlsim | SCALE-Sim | ZigZag (our order) "
          "| ZigZag (LOMA) | ZigZag terms (our order): ideal + stall + on/off-load + drain |\n"
          "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|\n")
    body1 = ""
    for r in rows:
        t = r.get("zz_terms") or {}
        terms = (f"{fmt(t.get('ideal_temporal_cycle'))} + {fmt(t.get('stall_slack_comb'))} + "
                 f"{fmt(t.get('data_onloading_cycle'))}/{fmt(t.get('data_offloading_cycle'))} + "
                 f"{fmt(t.get('systolic_drain_cycle'))}") if t else "-"
        body1 += (f"| {r['case']} | {r['arch']} | {r['array']} | {r['mapping']} | {fmt(r['ideal'])} | "
                  f"{fmt(r['ana_cycles'])} | {fmt(r['hl_cycles'])} | {fmt(r.get('ss_cycles'))} | "
                  f"{fmt(r.get('zz_cycles'))} | {fmt(r.get('zzl_cycles'))} | {terms} |\n")
    h2 = ("| case | array | analytical energy (nJ) | hlsim energy (nJ) | ZigZag energy, our order (nJ) | "
          "ZigZag energy, LOMA (nJ) | SCALE-Sim energy |\n|---|---|---:|---:|---:|---:|---|\n")
    body2 = ""
    for r in rows:
        body2 += (f"| {r['case']} | {r['array']} ({r['arch']}) | {fmt(nj(r['ana_energy']), 1)} | "
                  f"{fmt(nj(r['hl_energy']), 1)} | {fmt(nj(r.get('zz_energy')), 1)} | "
                  f"{fmt(nj(r.get('zzl_energy')), 1)} | not modelled |\n")
    h3 = ("| case | array | analytical (ms) | hlsim (ms) | SCALE-Sim subprocess (s) | ZigZag API, our order (s) | "
          "ZigZag API, LOMA (s) | ZigZag subprocess incl. import, LOMA (s) |\n"
          "|---|---|---:|---:|---:|---:|---:|---:|\n")
    body3 = ""
    for r in rows:
        body3 += (f"| {r['case']} | {r['array']} ({r['arch']}) | {fmt(r['ana_s'] * 1e3, 1)} | "
                  f"{fmt(r['hl_s'] * 1e3, 0)} | {fmt(r.get('ss_s'), 1)} | {fmt(r.get('zz_api_s'), 2)} | "
                  f"{fmt(r.get('zzl_api_s'), 2)} | {fmt(r.get('zzl_wall'), 1)} |\n")
    errs = [f"* ZigZag error on {r['case']} ({r['array']}): {r.get('zz_err') or r.get('zzl_err')}" for r in rows
            if r.get("zz_err") or r.get("zzl_err")]
    notes = [f"* {k} not run: {v}" for k, v in why.items() if v] + errs
    return ("### Cycles\n\n" + h1 + body1 + "\n### Energy\n\n" + h2 + body2 + "\n### Wall time per design\n\n"
            + h3 + body3 + ("\n" + "\n".join(notes) + "\n" if notes else ""))


NETWORK_SECTION = "<!-- peers_network: section -->"  # from here to the end: benchmarks/peers_network.py's
TEMPLATE = HERE / "peers_template.md"  # the page around the tables: {env} and {tables} are filled in


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stdout", action="store_true", help="print only; leave docs/peers.md alone")
    args = ap.parse_args(argv)
    rows, why = measure()
    ver = {}
    for tool, py, pkg in (("SCALE-Sim", ROOT / ".venv-scalesim" / "bin" / "python", "scalesim"),
                          ("ZigZag", ZIGZAG_PYTHON, "zigzag-dse")):
        r = subprocess.run([str(py), "-c", f"from importlib.metadata import version; print(version('{pkg}'))"],
                           capture_output=True, text=True, check=False) if Path(py).exists() else None
        ver[tool] = r.stdout.strip() if r is not None and r.returncode == 0 else "not installed"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    env = (f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, {os.cpu_count()} cores, Python "
           f"{platform.python_version()}, SCALE-Sim {ver['SCALE-Sim']}, ZigZag (zigzag-dse) {ver['ZigZag']}; load "
           f"average {load:.2f} at the end (other processes share the cores, so wall times can be off by ~30 %).")
    text = TEMPLATE.read_text().replace("{env}", env).replace("{tables}", tables(rows, why))
    print(text)
    if not args.stdout:
        # the whole-network section (benchmarks/peers_network.py, issue 23) is generated apart: keep it
        old = DOC.read_text() if DOC.exists() else ""
        if NETWORK_SECTION in old:
            text = text.rstrip("\n") + "\n\n" + old[old.index(NETWORK_SECTION):]
        atomic_write_text(DOC, text)
        print(f"wrote {DOC.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
