"""Cross-check of cycles: rtl (generated Verilog, simulated) vs hlsim vs analytical vs SCALE-Sim.

Run:  nice -n 10 .venv/bin/python benchmarks/rtl_crosscheck.py [--sizes 4,8] [--out docs/rtl-crosscheck.md]

GEMM (the library's mini preset, 16^3) and conv2d (mini: K=4, C=3, P=Q=8, R=S=3) on NxN versions of
the library's systolic-16x16 architecture (its 128-bit, 4-bank, 2-port, 2-cycle GLB unchanged), in
weight-, input- and output-stationary mappings (conv: the im2col mappings of tests/data/scalesim,
fused window/pixel loops). rtl cycles are counted by the generated hardware with the operands
preloaded in the GLB; hlsim's total includes DRAM tile transfers, so its compute_cycles (the PE-array
nest alone) is listed too. SCALE-Sim runs where .venv-scalesim exists.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
import sys
import tempfile
import time
import warnings
from pathlib import Path

from llmulator.design import load_design
from llmulator.library import resolve
from llmulator_plugins.analytical.estimator import AnalyticalEstimator
from llmulator_plugins.hlsim.profiler import HlsimProfiler
from llmulator_plugins.rtl.plan import make_plan
from llmulator_plugins.rtl.profiler import RtlProfiler

ROOT = Path(__file__).resolve().parent.parent
# the array's OpenSTA-propagated energy (rtl profiler >= 0.2; its energy_pj.rtl.pe_array has the PEs replayed)
FLOW_KEY = "energy_pj.rtl.pe_array.opensta"

ARCH = """architecture:
  version: 1
  name: systolic-{n}x{n}
  description: systolic-16x16 with a {n}x{n} array (same GLB)
  clock_mhz: 1000
  technology: 45nm
  compute:
    pe_array: {{rows: {n}, cols: {n}, interconnect: systolic}}
    operators:
      mac: {{count: {nn}, bits: 8, latency_cycles: 1}}
  memory:
    - {{name: DRAM, kind: dram, width_bits: 128, bandwidth_bytes_per_cycle: 16, latency_cycles: 100}}
    - {{name: GLB, kind: sram, capacity_kib: 256, width_bits: 128, banks: 4, ports: 2, latency_cycles: 2}}
    - {{name: PE_REG, kind: regfile, capacity_kib: 0.0078125, width_bits: 32, instances: {nn}, latency_cycles: 0}}
"""

MAPS = {
    ("gemm", "ws"): ("L_k: {{tile: {n}, spatial: rows}}\n    L_n: {{tile: {n}, spatial: cols}}", "[L_n, L_k, L_m]",
                     "{A: GLB, B: GLB, C: GLB}"),
    ("gemm", "is"): ("L_k: {{tile: {n}, spatial: rows}}\n    L_m: {{tile: {n}, spatial: cols}}", "[L_m, L_k, L_n]",
                     "{A: GLB, B: GLB, C: GLB}"),
    ("gemm", "os"): ("L_m: {{tile: {n}, spatial: rows}}\n    L_n: {{tile: {n}, spatial: cols}}", "[L_m, L_n, L_k]",
                     "{A: GLB, B: GLB, C: GLB}"),
    ("conv2d", "ws"): ("L_c: {{fuse: [L_r, L_s], tile: {n}, spatial: rows}}\n    L_k: {{tile: {k}, spatial: cols}}",
                       "[L_k, L_c, L_p, L_q]", "{I: GLB, W: GLB, O: GLB}"),
    ("conv2d", "is"): ("L_c: {{fuse: [L_r, L_s], tile: {n}, spatial: rows}}\n"
                       "    L_p: {{fuse: [L_q], tile: {n}, spatial: cols}}", "[L_p, L_c, L_k]",
                       "{I: GLB, W: GLB, O: GLB}"),
    ("conv2d", "os"): ("L_p: {{fuse: [L_q], tile: {n}, spatial: rows}}\n    L_k: {{tile: {k}, spatial: cols}}",
                       "[L_k, L_p, L_c, L_r, L_s]", "{I: GLB, W: GLB, O: GLB}"),
}


def design(folder: Path, n: int, work: str, df: str, tech: str = "45nm", preset: str = "mini", glb: str = "4x2"):
    banks, ports = glb.split("x")
    a = folder / f"arch-{n}-{tech}-{glb}.yaml"
    a.write_text(ARCH.format(n=n, nn=n * n).replace("technology: 45nm", f"technology: {tech}")
                 .replace("banks: 4, ports: 2", f"banks: {banks}, ports: {ports}"))
    loops, order, place = MAPS[(work, df)]
    m = folder / f"map-{work}-{df}-{n}.yaml"
    m.write_text(f"mapping:\n  version: 1\n  name: {work}-{df}-{n}\n  workload: {work}\n  loops:\n    "
                 f"{loops.format(n=n, k=min(n, 4))}\n  order: {order}\n  placement: {place}\n")
    return load_design(a, resolve("workload", work), m, preset)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4,8")
    ap.add_argument("--presets", default="mini,small", help="workload presets of the cycle rows, comma-separated")
    ap.add_argument("--synth", default="2,4", help="array sizes synthesised (gemm); '' for none")
    ap.add_argument("--glb", default="4x2", help="the GLB's banks x ports for the cycle rows (default the library's)")
    ap.add_argument("--synth-df", default="ws", help="dataflows of the synthesised gemm, comma-separated (ws, is, os)")
    ap.add_argument("--synth-work", default="gemm", help="workloads synthesised, comma-separated (gemm, conv2d; "
                                                         "the mini preset)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "rtl-crosscheck.md"))
    ap.add_argument("--rows", help="also save the measured rows as JSON here")
    ap.add_argument("--from-rows", help="only rewrite the document from rows saved by --rows (several files, "
                                        "comma-separated: their rows one after the other)")
    ap.add_argument("--refresh-replay", action="store_true",
                    help="with --from-rows: replay the synthesised rows' PEs, engines and output queues again on "
                         "their cached rtl VCDs with today's power method and save them back (every PE of every "
                         "array: an hour on 2 cores)")
    ap.add_argument("--refresh-queue", action="store_true",
                    help="with --from-rows: replay only the synthesised rows' output queues, engines and buffer "
                         "modules (queue_replay, engines_replay, buffer_replay)")
    ap.add_argument("--refresh-buffer", action="store_true",
                    help="with --from-rows: replay only the synthesised rows' buffer modules (buffer_replay)")
    ap.add_argument("--refresh-models", action="store_true",
                    help="with --from-rows: recompute the hlsim and analytical columns of the saved cycle rows "
                         "with today's models (rtl and SCALE-Sim stay as measured) and save them back")
    args = ap.parse_args(argv)
    if args.from_rows:
        runs = [json.loads(Path(f).read_text()) for f in args.from_rows.split(",")]
        if args.refresh_replay or args.refresh_queue or args.refresh_buffer:
            redo = refresh_replay if args.refresh_replay else refresh_queue if args.refresh_queue else refresh_buffer
            for f, run in zip(args.from_rows.split(","), runs, strict=True):
                run["srows"] = [redo(row) for row in run["srows"]]
                Path(f).write_text(json.dumps(run))
        if args.refresh_models:
            for f, run in zip(args.from_rows.split(","), runs, strict=True):
                run["rows"] = [refresh(row) for row in run["rows"]]
                run["srows"] = [refresh_synth(row) for row in run["srows"]]
                run["refreshed"] = (f"hlsim {HlsimProfiler.version} and analytical {AnalyticalEstimator.version} "
                                    f"columns recomputed on {time.strftime('%Y-%m-%d')} (`--refresh-models`)")
                Path(f).write_text(json.dumps(run))
        sizes = sorted({n for r in runs for n in r["sizes"]})
        presets = list(dict.fromkeys(p for r in runs for p in r.get("presets", ["mini"])))
        command = "` and `".join(f"nice -n 10 .venv/bin/python benchmarks/rtl_crosscheck.py {r.get('command', '')}"
                                 for r in runs)
        refreshed = "; ".join(dict.fromkeys(r["refreshed"] for r in runs if r.get("refreshed")))
        write(Path(args.out), [row for r in runs for row in r["rows"]], sizes, all(r["have_ss"] for r in runs),
              [row for r in runs for row in r["srows"]], presets, command + (f"`; model columns: {refreshed}; "
                                                                             "rtl and SCALE-Sim as measured`"
                                                                             if refreshed else ""))
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    presets = [p for p in args.presets.split(",") if p]
    given = list(sys.argv[1:] if argv is None else argv)
    command = shlex.join(a for i, a in enumerate(given)
                         if a not in ("--rows", "--out") and (i == 0 or given[i - 1] not in ("--rows", "--out")))
    synth_sizes = [int(s) for s in args.synth.split(",") if s]
    rtl, an = RtlProfiler(synthesize=False), AnalyticalEstimator()
    ss = None
    if (ROOT / ".venv-scalesim" / "bin" / "python").exists():
        from llmulator_plugins.scalesim.adapter import ScaleSimProfiler
        ss = ScaleSimProfiler()
        if ss.available() is not None:
            ss = None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for preset, n, work, df in itertools.product(presets, sizes, ("gemm", "conv2d"), ("ws", "is", "os")):
            d = design(Path(tmp), n, work, df, preset=preset, glb=args.glb)
            t0 = time.perf_counter()
            r = rtl.profile(d)
            t_rtl = time.perf_counter() - t0
            adv = advances(make_plan(d))   # the plan alone: no Verilog to generate
            s = ss.profile(d).metrics["cycles"] if ss else None
            name = f"{work}@{preset} {df} {n}x{n}" + ("" if args.glb == "4x2" else f" (GLB {args.glb})")
            row = {"design": name, "rtl": r.metrics["cycles"], "check": r.functional_check,
                   "folds": r.counters["folds"], "adv": adv, **model_columns(d), "scalesim": s,
                   "reads": r.counters["reads.GLB"], "writes": r.counters["writes.GLB"], "seconds": t_rtl}
            rows.append(row)
            print(row, flush=True)
        srows = []
        for df in args.synth_df.split(","):
            for n in synth_sizes:
                for work in args.synth_work.split(","):
                    srows.append(synth_row(Path(tmp), n, an, df, work))
                print(srows[-1], flush=True)
    if args.rows:
        Path(args.rows).write_text(json.dumps({"rows": rows, "sizes": sizes, "have_ss": ss is not None,
                                               "srows": srows, "presets": presets, "command": command}))
    write(Path(args.out), rows, sizes, ss is not None, srows, presets,
          f"nice -n 10 .venv/bin/python benchmarks/rtl_crosscheck.py {command}")
    return 0


def model_columns(d) -> dict:
    """hlsim's and the analytical model's cycle columns of a cycle row."""
    h = HlsimProfiler().profile(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = AnalyticalEstimator().estimate([d])[0]
    comp = sum(v for k, v in h.breakdown.items() if k.startswith("compute_cycles."))
    glb = d.arch.level("GLB")
    onchip = max(comp, sum(v for k, v in h.breakdown.items() if k.startswith("datapath_bits.")
                           and k.endswith(".GLB")) / 8 / glb.bandwidth_bytes_per_cycle)
    waits = sum(v for k, v in h.breakdown.items() if k.startswith("bank_wait_cycles."))
    return {"hlsim_onchip": onchip, "hlsim": h.metrics["cycles"], "hlsim_compute": comp, "hlsim_waits": waits,
            "analytical": e.metrics["cycles"]}


def refresh(row: dict) -> dict:
    """A saved cycle row with its model columns recomputed (its design rebuilt from its name)."""
    import re
    m = re.fullmatch(r"(\w+)@(\w+) (\w+) (\d+)x\d+(?: \(GLB (\d+x\d+)\))?", row["design"])
    work, preset, df, n, glb = m.groups()
    with tempfile.TemporaryDirectory() as tmp:
        d = design(Path(tmp), int(n), work, df, preset=preset, glb=glb or "4x2")
        return {**row, **model_columns(d)}


def advances(plan) -> int:
    """The controller's array advances with no wait for the buffer (top.py): psum folds A (preload) +
    T + A + B - 1 (drain through the de-skew), os folds T + (A + B - 2) + A (wait, shift out)."""
    A, B = plan.A, plan.B
    per = (lambda t: A + t + A + B - 1) if plan.shape == "psum" else (lambda t: t + max(A + B - 2, 0) + A)
    return sum(per(plan.stream_steps(f)) for f in plan.folds())


def synth_row(folder: Path, n: int, an, df: str = "ws", work: str = "gemm") -> dict:
    """A design (gemm or conv2d, mini preset) on an n x n array synthesised (rtl) vs the analytical model
    with the osu018 technology table (the same 0.18 um library, measured by `llmulator characterize`),
    plus the PEs' energy re-measured gate-level on the RTL's own stimulus (pe_replay)."""
    d = design(folder, n, work, df)
    t0 = time.perf_counter()
    r = RtlProfiler(synthesize=True, time_limit_s=3600.0).profile(d)   # 16x16: Yosys alone 448 CPU-s
    secs = time.perf_counter() - t0
    b = r.breakdown
    macs = r.counters["ops.mac"]
    cycles = r.metrics["cycles"]
    pe_rtl = b["area_um2.pe"] + b.get("area_um2.rtl.pe_array", 0.0)
    e_pe_rtl = b.get("energy_pj.rtl.pe_array", 0.0)
    replay = pe_replay(d, n, cycles)
    other = {k[len("area_um2.rtl."):]: v for k, v in b.items()
             if k.startswith("area_um2.rtl.") and k != "area_um2.rtl.pe_array"}
    e_other = {k[len("energy_pj.rtl."):]: v for k, v in b.items()      # the profiler's figure per module
               if k.startswith("energy_pj.rtl.") and k != "energy_pj.rtl.pe_array" and not k.endswith(".opensta")}
    return {"n": n, "df": df, "work": work, "cycles": cycles, "check": r.functional_check, "seconds": secs,
            "cached": r.counters["cached_simulation"], "yosys_s": r.counters["yosys_seconds"],
            "sta_s": r.counters["sta_seconds"], "logic_area": b["area_um2.logic"], "pe_rtl": pe_rtl,
            "pe_each": b["area_um2.pe_each"], "other_area": sum(other.values()),
            "other_parts": other, "crit": b["critical_path_ns"], "fmax": b["fmax_mhz"],
            "e_cycle": b["logic_energy_per_cycle_pj"], "e_pe_rtl_mac": e_pe_rtl / macs,
            "e_pe_flow_mac": b.get(FLOW_KEY, e_pe_rtl) / macs,
            "e_other_mac": sum(e_other.values()) / macs, "replay": replay, "macs": macs,
            "e_parts": {k: v / macs for k, v in e_other.items()},
            **synth_model_columns(design(folder, n, work, df, tech="osu018"), an, macs, cycles)}


def synth_model_columns(dm, an, macs: float, cycles: float) -> dict:
    """The analytical model's PE-array area and energy (osu018) of a synthesised row: at its own cycles and
    at the rtl's (llmulator.pecost's energy rule with the rtl's cycle and advance counts)."""
    from llmulator.pecost import pe_cost
    from llmulator.periphery import periphery_cost
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = an.estimate([dm])[0]
    eb = e.breakdown
    if "area_um2.pe_array" in eb:   # the measured PE entry (llmulator.pecost)
        pe_model, e_pe_model = eb["area_um2.pe_array"], eb["energy_pj.pe_array"]
    else:
        pe_model = eb.get("area_um2.op.mac", 0.0) + eb.get("area_um2.PE_REG", 0.0)
        e_pe_model = eb.get("energy_pj.op.mac", 0.0) + eb.get("energy_pj.PE_REG", 0.0)
    pc = pe_cost(dm)
    # at the rtl's cycles and with its controller's advances (the skew registers shift on each; hlsim 0.36)
    steps = advances(make_plan(dm))
    e_model_at_rtl = float(pc.energy_pj(macs, cycles, steps)) if pc is not None else None
    pp = periphery_cost(dm)     # the memory system's registers around the buffer (llmulator.periphery)
    periphery = ({"bits": pp.bits, "area": pp.area_um2(), "e_at_rtl_mac": float(pp.energy_pj(cycles)) / macs,
                  "e_idle_at_rtl_mac": pp.storage_bits * cycles * float(pp.entry["idle_energy_pj"]) / macs,
                  "e_queue_at_rtl_mac": pp.part_energy_pj("out_queue", cycles) / macs,
                  "e_parts_at_rtl_mac": {k: pp.part_energy_pj(k, cycles) / macs for k in pp.bits},
                  "crosspoints": pp.crosspoints, "xbar_area": pp.crossbar_area_um2()}
                 if pp is not None else None)
    return {"pe_model": pe_model, "e_pe_model_mac": e_pe_model / macs, "periphery_model": periphery,
            "e_model_at_rtl_mac": e_model_at_rtl / macs if e_model_at_rtl is not None else None,
            "model_cycles": e.metrics["cycles"],
            "model_pe_entry": (pc.pe["area_um2"], pc.pe["energy_pj"], pc.pe["idle_energy_pj"], pc.skew_bits)
            if pc is not None else None,
            "model_mac_area": eb.get("area_um2.op.mac", 0.0), "model_reg_area": eb.get("area_um2.PE_REG", 0.0)}


def refresh_synth(row: dict) -> dict:
    """A saved synthesised row with its model columns recomputed (the rtl's as measured)."""
    with tempfile.TemporaryDirectory() as tmp:
        dm = design(Path(tmp), row["n"], row.get("work", "gemm"), row.get("df", "ws"), tech="osu018")
        flops = rtl_flops(design(Path(tmp), row["n"], row.get("work", "gemm"), row.get("df", "ws")))
        return {**row, **synth_model_columns(dm, AnalyticalEstimator(), row["macs"], row["cycles"]),
                **({"rtl_flops": flops} if flops else {})}


def rtl_flops(d) -> dict[str, int] | None:
    """Flip-flops per module of the design's synthesis (Yosys ``stat`` in the rtl profiler's cache, found by
    the synthesised text), or None when the cache does not hold it."""
    import re

    from llmulator_plugins.rtl import profiler as rp
    _plan, _lay, rtl = RtlProfiler(synthesize=True).build(d)
    text = rtl.text(synth=True)
    for f in rp.cache_root().glob("syn-*"):
        if (f / "stat.txt").is_file() and (f / "design_syn.v").is_file() and (f / "design_syn.v").read_text() == text:
            out: dict[str, int] = {}
            cur = None
            for ln in (f / "stat.txt").read_text().splitlines():
                m = re.match(r"=== (.+?) ===", ln)
                if m:
                    cur = m.group(1) if " " not in m.group(1) else None    # not "design hierarchy"
                    if cur:
                        out[cur] = 0
                    continue
                m = re.match(r"\s+(DFF\w*|LATCH\w*)\s+(\d+)", ln)
                if m and cur:
                    out[cur] += int(m.group(2))
            return out
    return None


def cached_vcd(text: str) -> Path | None:
    """The activity VCD of the rtl profiler's cached simulation of the design ``text`` (its folders are keyed by
    content; found here by the design text they hold), the newest where several hold it; None if none does."""
    from llmulator_plugins.rtl import profiler as rp
    sims = [f for f in rp.cache_root().glob("sim-*") if (f / "act.vcd").is_file() and (f / "design.v").is_file()
            and (f / "design.v").read_text() == text]
    return max(sims, key=lambda f: (f / "act.vcd").stat().st_mtime) / "act.vcd" if sims else None


def module_replay(d, module: str, inst: str) -> dict | None:
    """One module of the rtl design measured gate-level on the rtl run's own stimulus: the module's Verilog
    synthesised alone (cached by content), its inputs sampled from the rtl VCD each cycle and replayed on its
    netlist, priced from the gate-level VCD (vcdpower). The reference for the periphery model, which the rtl
    flow's OpenSTA figure is not (docs/technology.md, "Checking OpenSTA")."""
    import hashlib

    from llmulator_plugins.characterize import flow as cz
    from llmulator_plugins.characterize import structures as st_mod
    from llmulator_plugins.characterize.measure import synthesize
    from llmulator_plugins.rtl import profiler as rp
    _plan, _lay, rtl = RtlProfiler(synthesize=True).build(d)
    text = rtl.text()
    vcd = cached_vcd(text)
    if vcd is None or module not in rtl.synth_modules:
        return None
    from llmulator_plugins.rtl.module_replay import replay_module, rtl_ports
    verilog = rtl.synth_modules[module]
    ins, outs = rtl_ports(verilog, module)
    st = st_mod.Structure("queue_bit", 1, 0, module, verilog, tuple(ins), tuple(outs), 0, f"the rtl {module}")
    tools = cz.find_tools()
    # the module synthesised alone (the profiler replays its piece of the design's hierarchical netlist)
    folder = ROOT / ".eda" / "work" / "crosscheck-modules" / hashlib.sha256(verilog.encode()).hexdigest()[:12]
    if not (folder / "net.v").is_file():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "op.v").write_text(verilog)
        synthesize(st, tools, folder, 3600.0, lambda _s: None)
    pj = replay_module(module, verilog, (folder / "net.v").read_text(), vcd, rp.VCD_CYCLES, tools, folder, inst)
    return {"pj_per_cycle": pj} if pj is not None else None


def queue_replay(d, cycles: float) -> dict | None:
    """The output queue (``out_fifo``, instance ``u_wq``) replayed gate-level: module_replay."""
    return module_replay(d, "out_fifo", "u_wq")


def engines_replay(d) -> dict[str, dict]:
    """Every operand engine and the writer replayed gate-level (module_replay), by module."""
    _plan, _lay, rtl = RtlProfiler(synthesize=True).build(d)
    out = {}
    for e in rtl.engines:
        r = module_replay(d, e, f"u_{e}")
        if r:
            out[e] = r
    return out


def buffer_replay(d) -> dict | None:
    """The GLB's buffer module replayed gate-level in parts (plugins/rtl/module_replay.replay_buffer: the
    arbiter's own cells, every crossbar instance on its recorded inputs), from the rtl profiler's cached
    hierarchical netlist and VCD; pJ per cycle by part, or None where either is not cached."""
    from llmulator_plugins.characterize import flow as cz
    from llmulator_plugins.rtl import profiler as rp
    from llmulator_plugins.rtl import synth
    from llmulator_plugins.rtl.module_replay import replay_buffer
    _plan, _lay, rtl = RtlProfiler(synthesize=True).build(d)
    text, stext = rtl.text(), rtl.text(synth=True)
    syns = [f for f in rp.cache_root().glob("syn-*") if (f / "net_hier.v").is_file()
            and (f / "design_syn.v").is_file() and (f / "design_syn.v").read_text() == stext]
    vcd = cached_vcd(text)
    if vcd is None or not syns:
        return None
    nets = synth.split_modules((syns[0] / "net_hier.v").read_text())
    return replay_buffer("GLB", rtl.synth_modules, nets, vcd, rp.VCD_CYCLES, cz.find_tools(),
                         ROOT / ".eda" / "work" / "crosscheck-buffer")


def refresh_buffer(row: dict) -> dict:
    """A saved synthesised row with its buffer module replayed gate-level (buffer_replay)."""
    with tempfile.TemporaryDirectory() as tmp:
        got = buffer_replay(design(Path(tmp), row["n"], row.get("work", "gemm"), row.get("df", "ws")))
    if got is None:
        print(f"no cached rtl VCD or netlist for {row.get('work')} {row.get('df')} {row['n']}x{row['n']}")
        return row
    return {**row, "buffer_replay": got}


def refresh_replay(row: dict) -> dict:
    """A saved synthesised row with its PEs replayed again on the cached rtl VCD by today's method (the rtl
    flow's per-PE figures kept as measured), then its engines and output queue (refresh_queue)."""
    with tempfile.TemporaryDirectory() as tmp:
        new = pe_replay(design(Path(tmp), row["n"], row.get("work", "gemm"), row.get("df", "ws")), row["n"],
                        row["cycles"], flow=False)
    if new is None:
        print(f"no cached rtl VCD for {row.get('work')} {row.get('df')} {row['n']}x{row['n']}: replay kept")
        return row
    old = row.get("replay") or {}
    return refresh_queue({**row, "replay": {**new, "flow_pj_per_cycle": old.get("flow_pj_per_cycle")}})


def refresh_queue(row: dict) -> dict:
    """A saved synthesised row with its output queue and its engines replayed gate-level on the cached rtl VCD
    (module_replay)."""
    with tempfile.TemporaryDirectory() as tmp:
        d = design(Path(tmp), row["n"], row.get("work", "gemm"), row.get("df", "ws"))
        q = queue_replay(d, row["cycles"])
        eng = engines_replay(d)
    return refresh_buffer({**row, **({"queue_replay": q} if q else {}), **({"engines_replay": eng} if eng else {})})


def pe_replay(d, n: int, cycles: float, flow: bool = True) -> dict | None:
    """The PEs' energy measured the characterize way on the RTL run's own stimulus: every PE's inputs
    sampled from the rtl simulation's VCD each cycle, replayed on the PE's gate netlist (the osu018 table's
    entry's synthesis for the plan's shape), priced from the gate-level VCD (characterize's vcdpower). With
    ``flow`` also the rtl flow's own per-PE figure (OpenSTA propagating from the RTL-named nets), same PEs."""
    from llmulator_plugins.characterize import flow as cz
    from llmulator_plugins.characterize import structures as st_mod
    from llmulator_plugins.rtl import profiler as rp
    from llmulator_plugins.rtl.pe_replay import replay_pes, structure_of
    prof = RtlProfiler(synthesize=True, time_limit_s=3600.0)
    plan, _lay, rtl = prof.build(d)
    text = rtl.text()
    # the rtl run's cached simulation and synthesis folders (profiler.py keys them by content; found here by
    # the design text they hold)
    vcd = cached_vcd(text)
    if vcd is None:
        return None
    tools = cz.find_tools()
    work = ROOT / ".eda" / "work" / "crosscheck-replay"
    pes = [f"u_pe_{a}_{b}" for a in range(plan.A) for b in range(plan.B)]
    # every PE (the profiler samples 16 of a larger array), on the table's 100 MHz synthesis of the PE shape
    per_pe = replay_pes(plan, vcd, rp.VCD_CYCLES, tools, 100.0, work, pes)
    res = st_mod.characterize_structure(structure_of(plan), 100.0, 1000, tools, work)   # the entry (cached)
    # the rtl flow's own figure per PE: the same OpenSTA run as synth.py for u_array, reported per instance
    from llmulator_plugins.rtl import synth
    syn_text = rtl.text(synth=True)
    syns = [f for f in rp.cache_root().glob("syn-*") if (f / "result.json").is_file()
            and (f / "design_syn.v").read_text() == syn_text]
    syn = max(syns, key=lambda f: (f / "result.json").stat().st_mtime) if syns else Path("/nonexistent")
    flow_pe = None
    if flow and (syn / "net_hier.v").is_file():
        import subprocess
        hier = synth.tie_constants((syn / "net_hier.v").read_text())   # what synth.py's power runs read
        (syn / "net_power.v").write_text(hier)
        mods, paths = synth.split_modules(hier), synth.instance_paths(hier)
        with open(vcd) as f:
            act = cz.parse_vcd(f, scope="tb.dut", hierarchical=True)
        text, _ = synth.activity_tcl(act, mods, paths, "u_array", cz.parse_liberty_pins(tools.liberty.read_text()),
                                     float(min(cycles, rp.VCD_CYCLES)))
        (syn / "act_pe.tcl").write_text(text)
        period = 1000.0 / d.arch.clock_mhz
        scr = synth.power_script(tools.liberty, "pe_array", period, "act_pe.tcl", [])
        scr = scr.replace("exit\n", "".join(f'puts "@@{p}"\nreport_power -digits 6 -instances [get_cells {{{p}/*}}]\n'
                                            for p in pes) + "exit\n")
        (syn / "power_pe.tcl").write_text(scr)
        out = subprocess.run([tools.sta, "-no_splash", "-no_init", "-exit", "power_pe.tcl"], cwd=syn,
                             capture_output=True, text=True, timeout=600).stdout
        f_hz = d.arch.clock_mhz * 1e6
        flow_pe = {p: synth.parse_instance_power(out.split(f"@@{p}")[1].split("@@")[0]) / f_hz * 1e12 for p in pes}
        (syn / "act_pe.tcl").unlink(missing_ok=True)
    return {"replay_pj_per_cycle": {p: v["total"] for p, v in per_pe.items()},
            "replay_seq_pj_per_cycle": {p: v["sequential"] for p, v in per_pe.items()},
            "flow_pj_per_cycle": flow_pe, "entry": {k: res[k] for k in ("energy_pj", "idle_energy_pj")}}


def _f(x) -> str:
    return "—" if x is None else f"{x:,.0f}"


def flow_array_mac(r) -> float:
    """OpenSTA's propagated figure for the whole ``pe_array`` per MAC. Since rtl profiler 0.2
    ``energy_pj.rtl.pe_array`` is the array with its PEs' share replaced by their gate-level replay, and the
    propagated figure is ``energy_pj.rtl.pe_array.opensta`` (rows saved before 2026-12-05 hold it only in
    ``e_parts``); under profiler 0.1 the two were the same number."""
    if "e_pe_flow_mac" in r:
        return r["e_pe_flow_mac"]
    return r["e_parts"].get("pe_array.opensta", r["e_pe_rtl_mac"])


def other_logic_mac(r) -> dict[str, float]:
    """Energy per MAC of the logic outside the PE array, by module (never a propagated ``.opensta`` figure
    beside a replayed one)."""
    return {k: v for k, v in r["e_parts"].items() if not k.endswith(".opensta")}


def gate_level_mac(r) -> float | None:
    """The rtl run's PE-array energy per MAC with the PEs measured gate-level on their recorded inputs
    (pe_replay) and the rest of ``pe_array`` (skew registers, control trees) as the rtl flow reports it:
    the propagated array minus the propagated PEs. Until 2026-12-05 the rest was taken from the profiler
    0.2 figure, which already holds the replayed PEs, so the replay-minus-flow difference was counted
    twice (GEMM ws 2x2 read 73.2 pJ/MAC where this gives 49.7)."""
    rp = r.get("replay") or {}
    rep, flo = rp.get("replay_pj_per_cycle"), rp.get("flow_pj_per_cycle")
    if not rep or not flo:
        return None
    rest = flow_array_mac(r) - sum(flo.values()) * r["cycles"] / r["macs"]
    return sum(rep.values()) * r["cycles"] / r["macs"] + rest


PERIPHERY_MODULES = {"wr": "wr", "old": "old", "rd_S": "rd_S", "rd_X": "rd_X", "rd_Y": "rd_Y",
                     "out_queue": "out_fifo", "buf_GLB": "buf_GLB"}    # model part -> the rtl's module


def queue_col(r) -> str:
    """The output queue's replayed energy per MAC against the periphery model's queue part (and the rtl flow)."""
    q, pm = r.get("queue_replay"), r["periphery_model"]
    if not q or "e_queue_at_rtl_mac" not in pm:
        return "—"
    rep = q["pj_per_cycle"] * r["cycles"] / r["macs"]
    return (f"{rep:.1f} / {pm['e_queue_at_rtl_mac']:.1f} ({pm['e_queue_at_rtl_mac'] / rep:.2f}x) "
            f"({r['e_parts'].get('out_fifo', 0.0):.1f})")


def replayed_periphery(r) -> tuple[float, float, float] | None:
    """(gate-level replay, model, rtl flow) pJ per MAC of the engines and the output queue together."""
    q, eng, pm = r.get("queue_replay"), r.get("engines_replay"), r["periphery_model"]
    parts = pm.get("e_parts_at_rtl_mac")
    if not q or not eng or not parts:
        return None
    per_mac = r["cycles"] / r["macs"]
    rep = (q["pj_per_cycle"] + sum(v["pj_per_cycle"] for v in eng.values())) * per_mac
    model = parts["out_queue"] + sum(parts[e] for e in eng)
    flow = r["e_parts"].get("out_fifo", 0.0) + sum(r["e_parts"].get(e, 0.0) for e in eng)
    return rep, model, flow


def replayed_col(r) -> str:
    got = replayed_periphery(r)
    if got is None:
        return "—"
    rep, model, flow = got
    return f"{rep:.0f} / {model:.0f} ({model / rep:.2f}x) ({flow:.0f}, {flow / rep:.1f}x)"


def periphery_table(srows) -> str:
    """The buffer periphery (llmulator.periphery) against the synthesised modules it stands for."""
    rows = [r for r in srows if r.get("periphery_model")]
    if not rows:
        return "No row carries the periphery model's columns (rerun `--from-rows ... --refresh-models`)."
    L = ["| design | flip-flops: rtl (Yosys) / model bits | area um2: rtl modules / model | "
         "area: all other logic (+ crossbar, top) / model (+ crossbar) | energy pJ/MAC: rtl flow / model at rtl "
         "cycles | "
         "model's idle share | output queue pJ/MAC: gate-level replay / model (rtl flow) | "
         "engines + queue pJ/MAC: gate-level replay / model (rtl flow, its ratio to the replay) | "
         "per module, flip-flops rtl / model |", "|" + "---|" * 9]
    for r in rows:
        pm = r["periphery_model"]
        mods = {k: v for k, v in PERIPHERY_MODULES.items() if k in pm["bits"]}
        area = sum(r["other_parts"].get(v, 0.0) for v in mods.values())
        e_rtl = sum(r["e_parts"].get(v, 0.0) for v in mods.values())
        fl = r.get("rtl_flops") or {}
        ff = sum(fl.get(v, 0) for v in mods.values())
        bits = sum(pm["bits"].values())
        per = ", ".join(f"{v} {fl.get(v, 0):,}/{pm['bits'][k]:,}" for k, v in mods.items()) if fl else "—"
        name = f"{r.get('work', 'gemm')} {r.get('df', 'ws')} {r['n']}x{r['n']}"
        L.append(f"| {name} | {ff:,} / {bits:,} ({bits / ff:.2f}x) | " if ff else f"| {name} | — / {bits:,} | ")
        L[-1] += (f"{area:,.0f} / {pm['area']:,.0f} ({pm['area'] / area:.2f}x) | {r['other_area']:,.0f} / "
                  f"{pm['area'] + (pm.get('xbar_area') or 0):,.0f} "
                  f"({(pm['area'] + (pm.get('xbar_area') or 0)) / r['other_area']:.2f}x) | {e_rtl:.0f} / "
                  f"{pm['e_at_rtl_mac']:.0f} "
                  f"({pm['e_at_rtl_mac'] / e_rtl:.2f}x) | {pm['e_idle_at_rtl_mac'] / pm['e_at_rtl_mac']:.2f} | "
                  f"{queue_col(r)} | {replayed_col(r)} | {per} |")
    return "\n".join(L)


def logic_totals(r) -> tuple[float, float] | None:
    """(gate-level reference, model at the rtl's cycles) pJ per MAC of all the logic the model prices or the
    replays measure: the PE array (replayed PEs + the rest of pe_array by the rtl flow) and, outside it, the
    engines, writer, output queue and buffer module replayed gate-level; None where a replay is missing."""
    gl, pm, buf = gate_level_mac(r), r.get("periphery_model"), r.get("buffer_replay")
    per = replayed_periphery(r)
    if gl is None or not pm or not buf or per is None or r.get("e_model_at_rtl_mac") is None:
        return None
    ref = gl + per[0] + sum(buf.values()) * r["cycles"] / r["macs"]
    return ref, r["e_model_at_rtl_mac"] + pm["e_at_rtl_mac"]


def buffer_table(srows) -> str:
    """The buffer module (arbiter + crossbar) replayed gate-level in parts, against the rtl flow's figure; its
    share of the logic outside the PE array; and all the logic, model against the gate-level reference."""
    rows = [r for r in srows if r.get("buffer_replay")]
    if not rows:
        return "No row carries the buffer module's replay (rerun `--from-rows ... --refresh-buffer`)."
    L = ["| design | crossbar area um2: rtl (xin + xout) / model (its ratio) | arbiter area um2 | share of other "
         "logic area | buffer pJ/MAC replayed: "
         "arbiter, xin, xout = total | rtl flow (OpenSTA) | share of the replayed logic outside the PE array | "
         "all logic pJ/MAC: gate-level reference / model at rtl cycles |", "|" + "---|" * 8]
    for r in rows:
        op, b = r["other_parts"], r["buffer_replay"]
        per_mac = r["cycles"] / r["macs"]
        xbar = op.get("xin_GLB", 0.0) + op.get("xout_GLB", 0.0)
        parts = {k: v * per_mac for k, v in b.items()}
        total = sum(parts.values())
        eng = replayed_periphery(r)
        share = f"{total / (total + eng[0]):.2f}" if eng else "—"
        tot = logic_totals(r)
        tcol = f"{tot[0]:.0f} / {tot[1]:.0f} ({tot[1] / tot[0]:.2f}x)" if tot else "—"
        name = f"{r.get('work', 'gemm')} {r.get('df', 'ws')} {r['n']}x{r['n']}"
        mx = (r.get("periphery_model") or {}).get("xbar_area")
        mcol = f"{mx:,.0f} ({mx / xbar:.2f}x)" if mx and xbar else "—"
        L.append(f"| {name} | {xbar:,.0f} / {mcol} | {op.get('buf_GLB', 0.0):,.0f} | "
                 f"{(xbar + op.get('buf_GLB', 0.0)) / r['other_area']:.2f} | {parts.get('arbiter', 0):.1f}, "
                 f"{parts.get('xin', 0):.1f}, {parts.get('xout', 0):.1f} = {total:.1f} | "
                 f"{r['e_parts'].get('buf_GLB', 0.0):.1f} ({r['e_parts'].get('buf_GLB', 0.0) / total:.2f}x) | "
                 f"{share} | {tcol} |")
    return "\n".join(L)


def synth_table(srows) -> str:
    if not srows:
        return "No design was synthesised in this run (`--synth ''`)."
    head = ("| design | rtl cycles (model) | Yosys s | OpenSTA s | logic area um2 | PE array area: rtl / model | "
            "other logic area (buffer crossbar, engines, queue, control) | critical path ns (fmax MHz) | "
            "PE-array energy pJ/MAC: rtl, PEs gate-level / model at rtl cycles | rtl flow (OpenSTA propagated) | "
            "model at its own cycles | other logic pJ/MAC | check |")
    L = [head, "|" + "---|" * 13]
    for r in srows:
        at = r.get("e_model_at_rtl_mac")
        gl = gate_level_mac(r)
        e_col = (f"{gl:.1f} / {at:.1f} ({at / gl:.2f}x)" if gl and at else "—")
        name = f"{r.get('work', 'gemm')} {r.get('df', 'ws')} {r['n']}x{r['n']}"
        L.append(f"| {name} | {r['cycles']:,.0f} ({r.get('model_cycles', 0):,.0f}) | "
                 f"{r['yosys_s']:.0f} | "
                 f"{r['sta_s']:.0f} | {r['logic_area']:,.0f} | {r['pe_rtl']:,.0f} / {r['pe_model']:,.0f} "
                 f"({r['pe_model'] / r['pe_rtl']:.2f}x) | "
                 f"{r['other_area']:,.0f} | {r['crit']:.1f} ({r['fmax']:.1f}) | {e_col} | {flow_array_mac(r):.1f} | "
                 f"{r['e_pe_model_mac']:.1f} | {sum(other_logic_mac(r).values()):.1f} | {r['check']} |")
    L.append("")
    for r in srows:
        parts = ", ".join(f"{k} {v:,.0f}" for k, v in sorted(r["other_parts"].items(), key=lambda kv: -kv[1]))
        eparts = ", ".join(f"{k} {v:.1f}" for k, v in sorted(other_logic_mac(r).items(), key=lambda kv: -kv[1]))
        ent = r.get("model_pe_entry")
        model = (f"PE entry {ent[0]:,.0f} um2, {ent[1]:.1f} pJ/MAC, idle {ent[2]:.1f} pJ/cycle; {ent[3]} skew bits"
                 if ent else "no PE entry")
        rp = r.get("replay") or {}
        per = ", ".join(f"{p[5:]} {v:.1f}/{(rp.get('flow_pj_per_cycle') or {}).get(p, 0):.1f}"
                        for p, v in (rp.get("replay_pj_per_cycle") or {}).items())
        name = f"{r.get('work', 'gemm')} {r.get('df', 'ws')} {r['n']}x{r['n']}"
        L.append(f"- {name}: one PE {r['pe_each']:,.0f} um2 (model: {model}); "
                 f"per PE pJ/cycle, replay/rtl flow: {per or '—'}; other logic area by module: {parts}; "
                 f"other logic energy by module (pJ/MAC): {eparts}.")
    return "\n".join(L)


def write(out: Path, rows, sizes, have_ss: bool, srows=(), presets=("mini",), command: str = "") -> None:
    from llmulator.fileio import atomic_write_text
    head = ("| design | folds | rtl cycles | rtl advances | rtl waits | hlsim compute (bank waits) | hlsim on-chip | "
            "hlsim total | "
            "analytical | scalesim | hlsim on-chip / rtl | rtl GLB reads / writes | check | rtl s |")
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        onchip = r.get("hlsim_onchip", r["hlsim_compute"])
        ratio = onchip / r["rtl"] if r["rtl"] else 0.0
        lines.append(f"| {r['design']} | {r['folds']:.0f} | {_f(r['rtl'])} | {_f(r['adv'])} | "
                     f"{_f(r['rtl'] - r['adv'])} | {_f(r['hlsim_compute'])} ({_f(r.get('hlsim_waits'))}) | "
                     f"{_f(onchip)} | "
                     f"{_f(r['hlsim'])} | {_f(r['analytical'])} | {_f(r['scalesim'])} | {ratio:.2f} | "
                     f"{r['reads']:,.0f} / {r['writes']:,.0f} | {r['check']} | {r['seconds']:.0f} |")
    text = TEMPLATE.format(sizes=", ".join(f"{n}x{n}" for n in sizes), presets=", ".join(presets),
                           command=command or "nice -n 10 .venv/bin/python benchmarks/rtl_crosscheck.py",
                           table="\n".join(lines), synth_table=synth_table(srows),
                           periphery_table=periphery_table(srows), buffer_table=buffer_table(srows),
                           scalesim="SCALE-Sim ran from .venv-scalesim." if have_ss else
                           "SCALE-Sim was not installed in this checkout (.venv-scalesim), so its column is empty.")
    atomic_write_text(out, text)
    print(f"wrote {out}")


TEMPLATE = """# RTL cross-check: generated PE arrays vs hlsim, analytical, SCALE-Sim and the technology table

Written by `{command}` (several runs: their `--rows` files, benchmarks/rows/rtl-crosscheck-*.json,
merged by `--from-rows A,B`)
(the `rtl` profiler, [docs/rtl.md](rtl.md)). Arrays: {sizes}; workload presets {presets} (GEMM mini
16x16x16, small 64x64x64; conv2d mini K=4, C=3, P=Q=8, small K=C=16, P=Q=14, R=S=3; the synthesised
rows use mini); architecture: the library's systolic-16x16 with the array
resized and everything else (128-bit GLB, 4 banks, 2 ports, 2-cycle latency) unchanged. {scalesim}

## Cycles

{table}

- **rtl s**: wall seconds of the rtl profile in the run that wrote the row (0: the cache already held
  the simulation; uncached times per simulator are in docs/benchmarks-rtl.md).
- **rtl cycles**: counted by the generated hardware from `start` to the last output write, simulated
  on the workload's inputs by the profiler's default simulator (Verilator where installed, else
  Icarus: the same cycles, tests/test_rtl_profiler.py); every output matched the NumPy reference
  (`check`). Operands start in the GLB: DRAM is not simulated.
- **rtl advances**: the array steps the controller makes when nothing waits (computed from the plan:
  ws/is folds A (preload) + T + A + B - 1, os folds T + (A + B - 2) + A, T the fold's stream steps);
  **rtl waits** = rtl cycles - advances: 7 once per run for start-up and the final write-back, plus
  the cycles in which the array waited for the buffer.
- **scalesim**: SCALE-Sim on the same layer and dataflow folds it onto the whole array; the conv2d
  mappings bind K to at most 4 columns (`tile: 4`), so on 8x8 at the small preset (K = 16) SCALE-Sim
  runs half our folds (conv2d@small ws/os 8x8: 7,847 / 7,899 against 15,768 / 16,600 advances).
- **hlsim compute**: hlsim's `compute_cycles` of the PE-array nest (its model of the same array
  without DRAM), in brackets the part of it that is waiting for the banks (`bank_wait_cycles`,
  `llmulator.banks`, hlsim 0.9); **hlsim total** adds DRAM tile transfers (the library's 16 B/cycle DRAM), which the
  rtl run does not simulate; **hlsim on-chip** is hlsim's own cycles for what the rtl run simulates:
  the larger of its compute and the GLB's bandwidth time for the datapath's words
  (`datapath_bits.<nest>.GLB`, whole words, `llmulator.words`). The ratio column compares it with rtl.

### Where the cycles differ, gap by gap

Read from the table; the model's constants come from the RTL's structure (below), the arbiter's one
tuned constant is named.

1. **Per-fold structure: hlsim compute = rtl advances + 7 in every row.** hlsim's (and the
   analytical model's) per-fold rule is the RTL's (`llmulator.nest.systolic_fill`,
   docs/timing-model.md): the systolic skew A + B - 2 (SCALE-Sim's), plus for ws/is the preload
   of A and one cycle in which the fold's last partial sum leaves the edge PE's output register
   before the next preload (SCALE-Sim counts the cycle of the last MAC), plus for os a drain of A
   in which the accumulators shift out one row per advance, because the spec's 64-bit `PE_REG`
   holds one int32 accumulator and the two int8 operands (48 bits) but not a second accumulator
   (80): the drain cannot overlap the next fold as SCALE-Sim assumes. So hlsim = SCALE-Sim + 8 +
   folds (ws/is) or + 8 + A x folds (os): item 2's 7, and SCALE-Sim counts from cycle 0.
2. **Once per run, 7 cycles, in both.** From the RTL's VCD (gemm@mini ws 4x4): 3 cycles from
   `start` to the first array step (the engine's registered request, then the bank's 2-cycle
   latency) and 4 from the last step to `done` (the output queue, the writer's accumulation with
   the stored value, its registered write, the flag). hlsim's body schedule has 3 of them (SRAM
   load 2 + MAC 1 + store 1 - II); the other 4 are the array's I/O registers, which hlsim and the
   analytical model now pay once per systolic nest (`llmulator.nest.array_io_cycles`, hlsim 0.5;
   before, the mini GEMMs on 8x8 and 16x16 were 2.5-6 % short).
3. **Waits for the buffer.** Since hlsim 0.9 hlsim replays the memory system's schedule word by
   word (`llmulator.banks`, docs/timing-model.md section 2b): which words each engine fetches
   for each vector (a line per lane, neighbouring lanes on one word fetching it once), the
   combining writer, the old outputs read only after the previous fold wrote them, and the
   fixed-priority arbiter's grants per bank and port, the same rules as the RTL below; the waits
   are that schedule's cycles minus the same schedule with unlimited ports. Before (0.8) it
   charged the GLB's average bandwidth over the nest only. The generated memory system keeps
   the waits small, and each of these was measured on the table's rows (plugins/rtl/control.py,
   writer.py, llmulator.buflayout, datapath.py):
   - each reader lane keeps the last word it fetched and the writer combines a lane's elements of
     one word into one write, so a stream along a word's elements reads and writes it once (before:
     gemm is 8x8 mini 377 rtl cycles, after 191; conv2d ws 4x4 mini 1,200, after 622);
   - words are hashed over the banks (the XOR of the word address's bit groups), so the lanes of a
     strided vector (a column of a row-major array, 4 or 16 words apart) no longer sit in one
     bank (gemm ws 4x4 mini 494 -> 439, conv2d ws 4x4 mini 622 -> 547);
   - readers prefetch up to 29 vectors ahead and the output queue holds 16, so the remaining
     conflicts are absorbed (conv2d@small ws 8x8 17,703 with 3 and 4, 15,828 then);
   - **the arbiter**: gemm@small ws 16x16 moves, per stream step, the old and new partial sums of 16
     int32 outputs (4 + 4 words) and 16 int8 inputs (1 word): 9 words, where 4 banks x 2 ports give
     8; over the whole fold (preload, stream and skew) it averages 5.3, within the GLB's bandwidth as
     hlsim counts it. With the old-output reader second in the fixed priority (after the writer) it
     took both free ports of every bank while prefetching and starved the one-word input stream: 262
     waits, 0.87 of hlsim. Now the old reader asks last and is served first only when fewer than the
     bank latency + 3 of its vectors are on their way and outputs are coming (`control.URGENT_LEAD`;
     the stream readers hold their requests meanwhile): 1,783 cycles, no wait beyond the 7. Fixed
     last without the urgency, conv2d ws starved the old reader instead (4x4 small 31,827); the 3
     was the best of 2, 3, 4, 6, 12 on gemm@small ws 16x16 and conv2d@small ws 4x4/8x8/16x16.
   What is left (conv2d ws 0.4-1.4 % of the cycles at the small preset, a few cycles in `is`/`os`)
   is the input window's words colliding in a bank now and then: hlsim 0.9 counts these waits
   (conv2d@small ws 4x4: 426 rtl waits beyond the 7; hlsim's replay of every fold gives the same
   426, its sample of folds within 0.5 %), 0.8 did not (0.986-0.991).
4. **A cold stream on one 16x16 fold.** gemm@mini is 16x16 and os 16x16 are one fold of 16 steps:
   their first vectors need a word per lane (16 words, a column of a row-major array) before the
   lanes' one-word lines serve the next 15 steps, and the first fetch waits 5 and 2 cycles for the
   banks. hlsim 0.8, counting the same words over the nest, was 0.93 and 0.97 of rtl there; the
   replayed schedule has the same 5 and 2 waits.

Result (the library's GLB, 4 banks x 2 ports, the first 36 rows): hlsim within 2 % of rtl in all 36
rows, exact in 34 (0.8: 34 within 2 %, 21 exact); the others are within 0.1 %, where the replay
samples the folds of a long nest (`llmulator.banks.MAX_ADVANCES`, 20,000 advances; the rows'
replays of every fold are exact). The analytical model replays a smaller sample (3,000 advances),
so its waits are within a few % of hlsim's; its totals add DRAM, as hlsim's do.

### A narrow buffer: the same designs on a GLB of 2 banks x 1 port (rows marked `GLB 2x1`)

Two 128-bit words per cycle instead of eight, so that the buffer, not the PEs, sets the pace
(`--glb 2x1`). What the rows show:

5. **Whole words (fixed, hlsim 0.6-0.8).** The buffer moves words, and a 4x4 array's int8 vector
   is a quarter of one: gemm@small ws 4x4 moves 50,176 words (the rtl's reads + writes), 2.4x the
   element bits hlsim counted before; counted in element bits, hlsim's bound was 21,248 cycles with
   DRAM (0.67 of rtl's 31,662), below what the buffer can feed. hlsim now charges whole words
   (`llmulator.words`: packed along the contiguous dimension, a one-word line per lane along it):
   its datapath words equal the rtl's counted words on every GEMM design measured
   (tests/test_rtl_profiler.py asserts 2x2 and 4x4 ws/os/is; gemm@small ws 4x4 here: hlsim on-chip
   25,088 = 50,176 / 2), and are 0.89-1.17x the rtl's on the conv2d rows checked (conv2d@small os
   8x8 1.51x: the fused output window's lanes, approximated from its innermost loop).
6. **Bank conflicts (modelled since hlsim 0.9): 24 of these 24 rows within 2 % since hlsim 0.10.** With
   two banks and one port each, the words a step needs collide in a bank often, and prefetching
   absorbs only part of it: an engine fetches its vectors in order, so a word waiting for a busy
   bank holds up the next vector's words for the idle one. hlsim 0.8 charged only the average
   bandwidth and was 0.63-0.72 of rtl on the conv2d ws rows (conv2d@small ws 4x4: the rtl's 68,832
   words need 34,416 cycles at two a cycle, it takes 53,520, 0.8 said 35,664), 0.76-0.93 on os,
   0.79-1.0 on GEMM: 6 of 24 within 2 %. The replayed schedule gives each row's waits (the column
   in brackets: conv2d@small ws 4x4 24,023 sampled, 23,705 replaying every fold against the rtl's
   23,705) and the larger of compute + waits and the word bound was within 1 % in 23 rows. The
   one outside was conv2d@small is 8x8 (1.04), where compute + waits is the rtl's 24,334 exactly but
   the word bound of item 5 (25,284) was larger: the fused window's words were over-counted there.
   Since hlsim 0.10 the buffer carries the words the replayed schedule moves (the RTL's own count), and
   that row is 24,334 = rtl. The same rule checked on the library's `edge-tiny` (64-bit SRAM, 2 banks x 1 port, 8x8)
   and on shapes outside this table (odd GEMM and conv sizes with partial folds, 8x4 and 4x8
   arrays, other loop orders, R = S = 1 and 5): docs/rtl-shapes.md.

## Area, critical path and energy (synthesised)

{synth_table}

- **rtl**: the generated design synthesised by Yosys 0.23 against the OSU 0.18 um liberty (each unique
  module once; since synth FLOW 6 ABC buffers and sizes inside each module against the clock period;
  since FLOW 8 the array's controls `adv`, `drain` and `load` reach their registers through buffer
  trees the RTL instantiates, plugins/rtl/array.py), critical path by OpenSTA on the flattened
  netlist at the architecture's 1 GHz (below, **Critical path**); the GLB's banks excluded
  (no SRAM macros: their stand-ins are subtracted, the architecture's memory
  figures count instead). Energy two ways:
  - **rtl flow (OpenSTA propagated)**: what the profiler reports (`energy_pj.rtl.pe_array`):
    OpenSTA `report_power` of the `pe_array` child with the RTL simulation's activity on the nets
    whose RTL names survive synthesis (load pins, and since synth FLOW 4 also the child's input
    ports and the flip-flop outputs), the rest propagated by OpenSTA;
  - **rtl, PEs gate-level**: every PE's inputs recorded from the same RTL simulation (each cycle,
    `characterize.replay.sample_inputs`) and replayed on the PE's gate netlist, priced from the replay's
    gate-level VCD cell by cell (`replay.replay_energy` with characterize's `vcdpower`, the method
    of the table's entries since flow version 4, 2026-12-05; before, both were OpenSTA's `report_power`
    on the annotated netlist, docs/technology.md, "Checking OpenSTA"), plus the skew registers as the
    rtl flow reports them (pe_array minus its PEs).
- **model**: the analytical estimator on the same design with `technology: osu018`. Since the table
  has measured PE-array structures (docs/technology.md, "PE-array structures"), a PE-array design's
  PE = the `pe_psum` int8 entry for ws (`pe_os` for os; the profiler's own PE modules, measured)
  and the skew registers = the measured `skew_reg` bit x the array's skew bits (ws 2x2: 43, 4x4:
  247; os 2x2: 16); ws energy = MACs x 39.1 pJ + (PEs x cycles - MACs) x 5.83 pJ + the skew bits
  per cycle (os: 46.6 and 5.83 pJ). "At rtl cycles" evaluates that with the
  rtl run's cycle count (the energy model alone); "at its own cycles" is the estimate as it stands
  (its cycle count is the timing model's, the section above).

Nineteen rows, all on the cycle table's RTL with its control trees, all synthesised by FLOW 8 (seven runs,
2026-12-04 and -05, the commands above): GEMM ws/os from 2x2 to 16x16, GEMM is 4x4 and 16x16, conv2d ws/os/is
at 4x4, 8x8 and 16x16. The PE array's **area** is 0.99-1.01x of the RTL's in all nineteen (the PE entry is the
synthesised PE, the skew bits counted as `pe_array` builds them; ABC maps the same PE Verilog a little
differently inside the whole design). conv2d is int16, so its PEs are the int16 PE: the model picks the entry by
the operands' width where it is wider than the architecture's 8-bit MAC (`llmulator.pecost`; before 2026-12-04
it took the MAC's 8 bits and said 0.35x).

**Energy, since 2026-12-05 priced from the gate-level VCDs on both sides** (the table's entries and the replay
of the PEs' recorded inputs; docs/technology.md, "Checking OpenSTA": OpenSTA 2.0.17's `report_power` on an
annotated netlist depends on its vectorless default and charges a held flip-flop's clock-to-Q energy every
cycle). The PE-array energy per MAC at the rtl's cycles against the replayed PEs plus the rest of `pe_array` by
the rtl flow: GEMM ws 0.99x (2x2), 0.95x (4x4), 0.92x (8x8), 0.89x (16x16); os 0.92x, 0.92x, 0.95x, 1.06x; is
0.96x (4x4), 0.89x (16x16): all eleven GEMM rows within 11 %, the model a little low. conv2d ws 0.95x, os
1.08x, is 1.21x (4x4); 0.80x, 1.02x, 1.02x (8x8); 0.78x, 0.94x, 0.95x (16x16): six of the nine within 15 %.
conv2d's values are 8-bit (the inputs 0..255, the weights -128..127 with 30 % zeros) in 16-bit PEs, and a MAC's
switching follows the bits its streaming operands toggle (analytical 0.28, `llmulator.pecost`): the unsigned
inputs toggle their 8 low bits, the signed weights every bit of the PE (a sign-extended 8-bit value flips the
upper eight bits whenever its sign changes); weight stationary streams the inputs (the int8 entry's switching),
input stationary the weights (the int16 PE's own), output stationary both (between the two by the multiplier's
partial products, (8x16 - 8x8) / (16x16 - 8x8) = 1/3 of the way); every cycle's clock is the int16 PE's. The
int8 entry alone (analytical 0.25's rule: the declared ranges need 9 bits, so the int8 entry for every role)
read 0.62-0.95x here, the int16 entry alone 0.95-2.35x. The rule was written after these rows showed the
int8 entry low where the weights stream (os, is) and not where they are stationary (ws); it has no fitted
constant, and the rows it was read from are the ones it is checked on, so it is a consistent explanation, not an
independent confirmation. On the characterize harness (the int16 PE on conv2d's declared ranges,
`benchmarks/pe_data_ranges.py`, docs/technology.md) it holds for output stationary (1.00x) and not for the
partial-sum PE (0.66x ws-like, 1.50x is-like): the adder's sign-extended bits follow the signed operand
whichever operand streams. ws at 8x8 and 16x16 stays low (0.80x, 0.78x): K = 4 uses 4 of the 8 or 16 columns, and
the idle columns' PEs still pass the inputs west to east (replayed at 8.2-8.7 pJ per cycle against the idle
entry's 7.78), while the busy ones replay 13-48 pJ per cycle. On OpenSTA's pricing the conv2d rows read
1.05-1.30x (six rows, 2026-12-05 morning, the int8 entry's switching for every role).

The decomposition of the earlier GEMM rows, and the paragraphs below, were measured with OpenSTA's pricing on
both sides and on the previous RTL revision (more buffer waits: ws 2x2 1,715 and 4x4 510 cycles, now 1,351 and
439); their numbers are kept as measured then. Before commit 66840bd's table the model said 118,380 / 473,520 um2
(0.85x / 0.84x) and 98.2 pJ/MAC, and the rtl flow said 41.8 / 51.8 pJ/MAC (then 0.43-0.53x of the model). What
moved, measured, not tuned:

- **PE area (was 0.85x): the wrong structure, not a double count.** The old model's PE was the
  int8 MAC entry (24,475 um2) + `PE_REG` (64 bits x 80 um2/bit scaled from 45 nm = 5,120). The
  MAC entry already holds 48 flip-flops (two 8-bit inputs, the 32-bit accumulator) and the RTL PE
  has 48 too (8-bit stationary, 8-bit west-east, 32-bit partial sum), so the scaled register file
  did count the PE's registers a second time; but the measured MAC is still 8,332 um2 smaller than
  the PE: the PE puts the array's advance enable and the synchronous reset in front of every
  flip-flop and a load enable on the stationary register (4,608 um2 of flip-flops in both; logic
  28,199 vs 19,867 um2). The array's edge skew and de-skew registers (43 and 247 bits, 168 um2 per
  bit with its enable) had no model term. Now: PE entry + skew bits, and `PE_REG`'s area is not
  charged (its registers are the entry's).
- **PE energy (model was 1.7-2.3x the rtl flow): three causes, each measured.**
  1. *The rtl flow underestimates the PEs by 42 %.* On the same stimulus (the PEs' recorded inputs)
     the gate-level replay gives 52.3 / 54.7 pJ per MAC for the PEs where the rtl flow gives 30.6 /
     31.8 (per PE 0.58x in both arrays; per-PE figures in the notes above). The flow annotates only
     the nets with RTL names and lets this OpenSTA (2.0.17) propagate the rest from the ports and
     register outputs with its independence model; in the hierarchical link it also ignores the
     flip-flop-output annotations (measured: adding them leaves pe_array's power unchanged, adding
     the input ports' real activity lowers it from 100.1 to 86.5 pJ/cycle on 2x2). The replay is
     the method the table is measured with, so that is the RTL figure compared here.
  2. *The old model double-counted the registers and priced them at the wrong activity.* 98.2 =
     66.2 (MAC entry, flip-flops included) + 32 (four `PE_REG` accesses per MAC at the 45 nm
     register-file figure x16), and the MAC entry's flip-flop outputs were charged at OpenSTA's
     default activity 0.5 whatever the data did (characterize annotates them since flow version 3;
     the MAC entry 66.2 -> 64.8 pJ).
  3. *Idle PE cycles.* The RTL clocks every PE every cycle (no clock gating): 60 % / 52 % of the
     PE-cycles do a MAC (2x2 1,700 cycles, 4x4 494, 4,096 MACs); a stalled PE costs 10.8 pJ per
     cycle (98 % its 48 flip-flops' clock pins), 7.2 / 10.1 pJ per MAC here. The model now charges
     it. With the psum PE entry (46.7 pJ per MAC on random operands, the stationary operand reloaded
     every 16 cycles, the partial sum from above the sum of three products) and this idle charge,
     the model's PEs (53.8 / 56.7 pJ per MAC at the rtl's cycles) are within 3-4 % of what the
     replay measures for the array's PEs on gemm's uniformly random int8 data.
- **Remaining differences (4-6 %)**: ws: the skew registers, model 6.4 / 10.1 pJ per
  MAC against the rtl flow's 5.3 / 8.2 (not replayed gate-level; the flow underestimates the PEs,
  so probably these too); the PEs, 3-4 %: the entry's stimulus is a PE in row 3 with a reload every
  16 cycles, the arrays' rows 0 receive no partial sum (their PEs measure 21.6-29.6 against
  28.4-34.6 pJ per cycle below). os: the PEs, model 32.0 against 30.7 pJ per MAC replayed (4 %;
  the skew registers agree, 2.0 / 2.1). The first os entry spread its drain cycle (1 in 16) over
  the MACs (31.1 pJ per MAC) while the model also charges the array's drain steps as cycles
  without a MAC: the drain was counted twice and the os row was 1.10x; the entries are now per
  advancing cycle (29.2 pJ).
- **Other logic**: the buffer crossbar (`xin`/`xout`), the arbiter, the operand engines, the output queue
  and the controller: 0.94 / 1.85 mm2 at 2x2 / 4x4 (6.8x / 3.3x the PE array). Since analytical 0.28 the model
  has a term for its registers (the section below, "The buffer periphery").
- **Critical path**: every row is synth FLOW 8, on the RTL whose array controls are buffer trees
  (plugins/rtl/array.py: at most 16 loads per `BUFX4`, a leaf per PE or per 64 skew-register bits). Before
  the trees `adv` was one gate of the top driving every register of the array across the hierarchy, which
  ABC, buffering inside a module only, could not buffer: GEMM ws 2x2 16.8, 4x4 47.2, 8x8 187.9, 16x16 389.2
  ns (one INVX2, 21,987 loads); os 17.0, 28.6, 164.8, 4,041.1 ns (one OAI21X1 on `drain` and `adv`); is 4x4
  47.0, 16x16 388.9; conv2d 4x4 ws 57.3, os 35.9, is 31.0 ns. With the trees: 11.7-11.8 ns at 2x2, 17.1-17.7
  at 4x4 (conv2d too), 29.1-29.6 at 8x8, 52.2-54.0 at 16x16 (85-19 MHz), every path logic between
  registers (at 8x8 and 16x16 the writer's lane-combining compare into the buffer's arbiter), for -0.3 to
  +0.3 % logic area. fmax is that of an unplaced netlist with the liberty's wire-load defaults; the
  architecture's 1 GHz is out of reach of 0.18 um cells in any case.

## The buffer periphery: the model's registers around the buffer against the synthesised modules

{periphery_table}

- **model**: `llmulator.periphery` (analytical 0.28, hlsim 0.19): the registers the generator declares
  around the buffer (each operand engine's return ring of latency + 29 vector slots, its lanes' one-word
  lines and tags and the issued vectors' context; the writer's per-lane word; the output queue of 16
  vectors; the arbiter's return path), walker counters left out, priced with the measured `queue_bit`
  entry (the profiler's own output queue, synthesised and simulated like the PE entries). Area = bits x
  its area per stored bit; energy = bits x cycles x its idle energy + the bits that pass through a ring or
  the queue x its energy per bit moved.
- **flip-flops**: Yosys `stat` of the rows' synthesis (the rtl profiler's cache). Where the model counts
  more, the RTL is specialised to the one mapping it runs: conv2d's K = 4 on 8 columns leaves half the
  lanes of the B-side engines, the old-output reader and the writer constant, and at 16x16 a lane whose
  word offset never changes keeps only its element's bits of its line; synthesis removes those
  registers. The architecture's memory system has them (an accelerator is not rebuilt per layer), so the
  model keeps them.
- **area**: the engines carry more logic per flip-flop than the queue the entry measures (the lanes'
  address arithmetic, the coalescing of lanes onto words, the ring's per-lane write selects): the rtl's
  modules spend 230-310 um2 per flip-flop where the queue spends 198. With the crossbar's term (the next
  section) the model's whole buffer periphery is 0.85-0.97x of all the logic outside the PE array where the
  mapping uses every lane (before it: 0.59-0.82x), 0.79x for gemm is 16x16, 1.09x for gemm ws 16x16 and
  1.19-1.36x where synthesis removed lanes; the arbiter's grant logic and the top have no term.
- **energy**: the rtl flow's per-module figure is OpenSTA propagating from the RTL-named nets (default
  activity 0.1), and it is no reference. The reference is each module replayed gate-level on the rtl run's
  own stimulus (`module_replay`: the design's `out_fifo`, `wr`, `old` and stream readers each synthesised
  alone, their inputs sampled from the rtl VCD every cycle, priced from the replay's VCD like the table's
  entries; `--refresh-queue`). Engines and queue together, model / replay: GEMM 1.05-1.36x (ten rows, six at
  or within 1.15x); conv2d 1.12-1.25x at 4x4, 1.14x for `is` at 8x8 and 16x16, 1.64-2.27x for ws and os at 8x8
  and 16x16, the rows where synthesis removed the lanes the one mapping never drives (K = 4 on 8 or 16
  columns: half or three quarters of the B-side engines' lanes, the flip-flop column above) and the model
  kept their clock. The rtl flow reads 2.5-6.8x the replay on the same modules. Most of the model's figure is
  the clock of the stored bits (idle share 0.79-0.96); the output queue alone is 1.05-1.60x (a bit passing
  through is priced at the entry's random-data switching, and the rtl run's outputs, partial sums and zeros
  during skew and drain, switch fewer bits). Against the rtl flow the model's whole periphery is 0.18-0.47x,
  which says more about the flow than about the model.

## The buffer module: arbiter and crossbar, replayed gate-level

{buffer_table}

- **replay** (`plugins/rtl/module_replay.replay_buffer`, also the rtl profiler's own figure since profiler
  0.4; `--refresh-buffer`): the GLB's `buf_GLB` piece of the design's hierarchical netlist driven with the
  requests it saw in the rtl run, its own cells priced (the arbiter: grant counting per bank, the return
  path of which bank and port served each read, the access counters); its banks (synthesis stand-ins) and
  crossbar simulated with it but not priced. Then every crossbar instance, `xin` (one per bank port: the
  granted request's address and write data) and `xout` (one per reading lane: the served word), replayed
  on its own recorded inputs, which carry the real banks' read data. The banks themselves are the
  architecture's memory figures on both sides.
- **crossbar area** (model since analytical 0.29 / hlsim 0.20, `area_um2.buffer_crossbar`): AND-OR
  selection, linear in its crosspoints (a select input x a bit): per bank port an `xin` over every
  request's row address and the writer lanes' data and byte mask, per reading lane an `xout` over every
  bank port's word (`llmulator.periphery.crossbar_crosspoints`, `tests/test_periphery.py` counts them in
  the generated Verilog). Each side is priced with its measured crosspoint (`xbar_in`, `xbar_out`: the
  profiler's own modules at a 32-bit reference geometry, synthesised in a registered wrapper, the
  wrapper's flip-flops left out; docs/technology.md): 29.5 and 44.2 um2. The rows' synthesised crossbar
  spends 27.6-31.1 (`xin`) and 40.0 (`xout`, 8 bank ports x 128 bits per lane) per crosspoint: the model
  is 1.06-1.10x. Every row has the same GLB geometry (4 banks x 2 ports of 128 bits), so the per-crosspoint
  figure is checked across request counts (8 to 64) and word widths (32 against 128 bits), not across bank
  counts.
- **energy**: the model has no term for the arbiter or the crossbar: the "all logic" column's model is the
  PE array and the periphery's registers (above). The crossbar's energy follows which port each reading lane
  last took and how often that port reads (an `xout` passes a port's new word whenever that port reads for
  any lane): replayed energy per estimated output toggle (words read x lanes per port x half a word)
  ranged 0.18-0.98 pJ over the GEMM rows, so no per-word figure describes it; the measured crosspoint's
  energy (every input random every cycle) is an upper figure the model does not use. The buffer module is
  4-16 % of the replayed logic outside the PE array (arbiter 1.8-8.6 pJ/MAC, `xin` 0.3-2.3, `xout`
  1.8-36.7). OpenSTA's propagated figure for this combinational module is 0.99-1.90x the replay at 2x2 and
  4x4 and 1.47-5.18x at 8x8 and 16x16.
- **all logic**: the model (PE array + periphery at the rtl's cycles) against every replayed piece (PEs,
  the rest of `pe_array` by the rtl flow, engines, writer, output queue, buffer): GEMM 0.96-1.15x (nine of
  ten within 10 %), conv2d 1.03-1.10x at 4x4 and for `is`, 1.26-1.39x for ws and os at 8x8 and 16x16 (the
  lanes synthesis removed, the periphery table above). The parts do not all agree: the periphery's
  registers read 1.05-1.36x on GEMM while the buffer module (no model term) is 4-16 % of what it stands
  beside, so within 15 % overall is partly two errors of opposite sign.

## What is not here yet

- Shapes these rows do not have, checked by an outside probe (61 designs of its own, 2026-12-05: 1x4, 2x3, 2x4,
  3x5 arrays, shapes that do not divide them, strided convolutions, 0-20-cycle buffers): hlsim's compute equals
  the rtl's on 56 of 59 that simulate, within 2 % on 57. Fixed then: a reduction on the PE columns (the rtl's
  transposed plan preloads along the columns; hlsim took the rows, 13 cycles against 16 on 1x4) and an
  `inout` output (the rtl started it from zeros). Still apart: operands on two buffers of different latency
  (the rtl's start-up follows the preloaded operand's buffer, hlsim's the GLB's: 1-2 cycles on tiny layers),
  a PE without a shadow accumulator (documented above), and a MAC slower than one cycle (the generated PE's
  takes one; the profile says so in a note).
- conv2d's PE energy: 0.88-1.27x of the replay (above), one row outside 15 % (is 4x4); 0.78-1.21x and three
  outside before hlsim 0.36 counted a skew-register shift on every step the array advances; the switching rule for
  data narrower than the PE was read from these rows. Entries measured on the declared operand ranges per
  role would make it a measurement.
- The buffer module (arbiter and crossbar) is replayed gate-level (above) but has no energy term in the model;
  the engines' address logic has no term in area or energy.
- The GEMM PE rows read 0.93-1.11x (0.89-1.06x before hlsim 0.36: the skew registers then shifted once per
  MAC a PE does, not on every advance): the entries' stimulus (every port random every cycle, a row-3 PE's
  partial sum) is not the array's (rows 0 get no partial sum, skew and drain steps move zeros).
- The rest of `pe_array` (skew registers, control trees) is still the rtl flow's OpenSTA figure in the
  reference column; the model prices it with the VCD-priced skew-register entry.
- OpenSTA 2.0.17's crash in `report_power` above 4x4 is worked around (constants tied to named wires,
  docs/rtl.md). The saved rows' "other logic" column is the profiles' OpenSTA figure (rtl profiler 0.2); since
  profiler 0.3 a profile replays its engines, writer and output queue itself, and since 0.4 its buffer module
  (docs/rtl.md), as this page's periphery and buffer tables do.
  The rows files behind this page are in benchmarks/rows/ (`--from-rows` rewrites the page from them;
  `--refresh-replay`, `--refresh-queue` and `--refresh-buffer` replay the PEs, the engines and queue, and the
  buffer module again on the cached rtl VCDs and netlists).
  The top's own glue is not in the energy figure.
- Since hlsim 0.10 / analytical 0.20 the PE-array nest's buffer carries the bank schedule's words (item 5's
  word bound over-counted fused windows: 1.04x on one narrow-buffer row, 1.47x on a stride-2 convolution,
  tests/test_rtl_words.py); the batch path keeps the bound, which since analytical 0.24 follows flattened
  strides and the words lanes keep (no longer above the schedule's words there). The analytical model's
  vectorised batch path (`evaluate_batch`, dse's mapping sweeps) has no bank waits: only the one-design path
  replays the schedule; the batch marks its PE-array rows as lower bounds and dse re-prices the points it
  reports one by one (docs/dse.md).
"""

if __name__ == "__main__":
    sys.exit(main())
