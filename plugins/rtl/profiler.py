"""The rtl profiler: generate, simulate, check, synthesise; report in hlsim's metric vocabulary.

profile(design, inputs) = plan (plan.py: a UserError when the design is no supported PE-array
design) -> layout -> Verilog (top.py) -> simulation on the real inputs (Verilator where it is
installed, Icarus otherwise, simulators.py; $LLMULATOR_RTL_SIM chooses) (cycles and buffer
accesses counted by the hardware) -> functional check against the NumPy reference -> Yosys/OpenSTA
(area, critical path, logic energy per cycle from the simulation's activity). Simulation and
synthesis results are cached by content under ``$LLMULATOR_CACHE/rtl`` (default
``~/.cache/llmulator/rtl``): the same design text and inputs never run twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from llmulator.design import Design
from llmulator.errors import UserError
from llmulator.inputs import Inputs, inputs_for, np_dtype, run_reference
from llmulator.results import Profile

from .notes import drain_note, latency_note, mac_latency_note

# 0.2: the PEs' energy from a gate-level replay of sampled PEs
# 0.3: the replay priced from its gate-level VCD cell by cell (characterize's vcdpower), not OpenSTA; the
#      engines, the writer and the output queue replayed whole the same way (module_replay)
# 0.4: the buffer module (arbiter, crossbar) replayed gate-level
# 0.5: an `inout` output starts from its given values (it started from zeros); a note where the spec's MAC
#      takes more than one cycle (the generated PE's takes one)
VERSION = "0.5"
SIM_VERSION = "0.2"        # the simulation's key: what it simulates has not changed since 0.2
VCD_CYCLES = 2000          # the activity window: the first cycles after start (fills, streams, drains)
SIM_LIMIT = 50_000_000     # cycles before the testbench gives up (a stalled controller)


def cache_root() -> Path:
    root = Path(os.environ.get("LLMULATOR_CACHE", Path.home() / ".cache" / "llmulator")) / "rtl"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"rtl: cannot create the cache {root} ({e.strerror}); set LLMULATOR_CACHE") from None
    return root


def synth_note(syn: dict, vcd_cycles: int, pes: float) -> str:
    """What the area and energy of a synthesised profile rest on."""
    return (f"area/energy: logic synthesised with Yosys against the OSU 0.18 um liberty (critical path "
            f"{syn['critical_path_ns']:.2f} ns, fmax {syn['fmax_mhz']:.0f} MHz; energy from OpenSTA with "
            f"the simulation's activity over its first {vcd_cycles} cycles, per child of the top, the "
            f"PEs' share from {pes:g} PEs replayed gate-level on their recorded "
            "inputs and scaled to the array: "
            "the top's own controller glue is in the area, not in the energy); buffers: no SRAM "
            "macros in this liberty, so their area and access energy are the architecture's memory "
            "figures x the counted accesses")


def pe_corrected(syn: dict, plan, breakdown: dict[str, float], counters: dict[str, float], cycles: float) -> float:
    """Logic energy per cycle with the PE array's PEs measured gate-level on a sample (pe_replay) and the
    engines, writer, output queue and buffers replayed whole (module_replay); OpenSTA's propagated figure where
    nothing was replayed. Both figures of each go into ``breakdown`` (``.opensta`` the propagated one)."""
    from .pe_replay import corrected_array_pj
    total = syn["logic_energy_per_cycle_pj"]
    flow = syn.get("energy_per_cycle_pj_by_module", {}).get("pe_array")
    replay = syn.get("pe_replay_pj_per_cycle") or {}
    fixed = (corrected_array_pj(flow, syn.get("pe_energy_per_cycle_pj") or {}, replay, plan.A * plan.B)
             if flow is not None else None)
    counters["pes_replayed"] = float(len(replay))
    for pe, v in replay.items():
        breakdown[f"pe_replay_pj_per_cycle.{pe}"] = v
    for pe, v in (syn.get("pe_energy_per_cycle_pj") or {}).items():
        breakdown[f"pe_opensta_pj_per_cycle.{pe}"] = v
    by_module = syn.get("energy_per_cycle_pj_by_module", {})
    for m, v in (syn.get("module_replay_pj_per_cycle") or {}).items():   # engines, writer, output queue, buffers
        if "/" in m:     # a buffer's part (arbiter, xin, xout): its share of the buffer's figure
            breakdown[f"energy_pj.rtl.{m.replace('/', '.')}"] = v * cycles
        elif m in by_module:
            breakdown[f"energy_pj.rtl.{m}"] = v * cycles
            breakdown[f"energy_pj.rtl.{m}.opensta"] = by_module[m] * cycles
            total += v - by_module[m]
    counters["modules_replayed"] = float(sum("/" not in m for m in syn.get("module_replay_pj_per_cycle") or {}))
    if fixed is None:
        return total
    breakdown["energy_pj.rtl.pe_array"] = fixed * cycles
    breakdown["energy_pj.rtl.pe_array.opensta"] = flow * cycles
    return total - flow + fixed


@contextlib.contextmanager
def _removed_on_timeout(folder: Path):
    """A run folder left half-done by a tool that timed out is removed (nothing in it can be reused); one
    left by a tool that failed is kept, since the error names its log."""
    from .simulators import ToolTimeout
    try:
        yield
    except ToolTimeout:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _key(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


class RtlProfiler:
    name = "rtl"
    version = VERSION

    def __init__(self, time_limit_s: float = 600.0, mem_limit_mb: int = 4096, synthesize: bool | None = None,
                 check_outputs: bool = True, simulator: str | None = None):
        self.time_limit_s = time_limit_s
        self.mem_limit_mb = mem_limit_mb
        #: run Yosys/OpenSTA (area, fmax, energy); False: cycles and the functional check only. Off unless
        #: LLMULATOR_RTL_SYNTH=1: synthesis takes minutes (2x2 and 4x4: 2-3 min on a loaded 2-core
        #: machine, docs/rtl.md), simulation seconds
        self.synthesize = synthesize if synthesize is not None else os.environ.get("LLMULATOR_RTL_SYNTH") == "1"
        self.check_outputs = check_outputs
        #: "verilator", "icarus" or "auto"; None: $LLMULATOR_RTL_SIM, else auto (simulators.choose)
        self.simulator = simulator

    def available(self) -> str | None:
        from . import simulators
        missing = [t for t in ("yosys",) if shutil.which(t) is None]
        if all(simulators.missing(s) for s in ("verilator", "icarus")):
            missing.append("iverilog/vvp (or verilator)")
        if missing:
            return (f"{', '.join(missing)} not on PATH; run `bash scripts/install_eda.sh` (apt: iverilog, verilator, "
                    "yosys, opensta and the OSU018 liberty)")
        return None

    # ------------------------------------------------------------------------------------------
    def build(self, design: Design):
        """(plan, layout, rtl) of a design; a UserError when it is not a supported PE-array design."""
        from llmulator.buflayout import layout

        from .plan import make_plan
        from .top import generate
        plan = make_plan(design)
        lay = layout(design, plan)
        return plan, lay, generate(plan, lay)

    def profile(self, design: Design, inputs: Inputs | dict[str, np.ndarray] | None = None) -> Profile:
        from . import sim, simulators
        t0 = time.perf_counter()
        why = self.available()
        if why is not None:
            raise UserError(f"profiler 'rtl' is not available: {why}")
        d = design
        if inputs is None:
            inputs = inputs_for(d)
        elif isinstance(inputs, dict):
            inputs = Inputs(inputs, "given arrays")
        t_gen = time.perf_counter()
        plan, lay, rtl = self.build(d)
        text = rtl.text()
        t_gen = time.perf_counter() - t_gen
        w = d.workload
        out_name = plan.operands["O"].array
        out_shape = w.shape(out_name, d.sizes)
        out_dtype = np_dtype(w.arrays[out_name].dtype)
        arrays = {}
        # an `inout` output starts from its given values: the writer adds the array's sums to what the buffer
        # holds, so they go into the buffer's image (before profiler 0.5 it started from zeros: `C += A @ B`
        # failed its functional check, found by an outside user)
        starts = ("O",) if w.arrays[out_name].role == "inout" else ()
        for role in ("S", "X", "Y") + starts:
            if role in plan.operands:
                n = plan.operands[role].array
                if n not in inputs.arrays:
                    raise UserError(f"rtl: no input data for array '{n}'")
                a = np.asarray(inputs.arrays[n])
                want = np_dtype(w.arrays[n].dtype), w.shape(n, d.sizes)
                if a.dtype != want[0] or a.shape != want[1]:
                    raise UserError(f"rtl: input '{n}' is {a.dtype}{list(a.shape)}, the workload declares "
                                    f"{want[0]}{list(want[1])}")
                arrays[n] = a
        window = (0, VCD_CYCLES) if self.synthesize else None
        steps = math.prod(lp.trips for lp in plan.loops) / (plan.A * plan.B)
        simulator = simulators.choose(self.simulator, work=steps * text.count("\n"))
        skey = _key(SIM_VERSION, text, str(window), simulator, *(arrays[n].tobytes() + str(arrays[n].dtype).encode()
                                                             for n in sorted(arrays)))
        folder = cache_root() / f"sim-{skey}"
        cached = folder / "result.json"
        hit = cached.is_file()
        if hit:
            r = json.loads(cached.read_text())
            res = sim.SimResult(r["cycles"], r["reads"], r["writes"],
                                {out_name: np.array(r["out"], dtype=np.int64).astype(out_dtype).reshape(out_shape)},
                                folder / "act.vcd" if (folder / "act.vcd").is_file() else None, r["vcd_cycles"])
            ran = r.get("ran", {})
        else:
            tmp = Path(tempfile.mkdtemp(prefix="sim-", dir=cache_root()))
            (tmp / "design.v").write_text(text)
            with _removed_on_timeout(tmp):
                res, r = sim.run(simulator, tmp / "design.v", lay, plan, arrays, out_shape, out_dtype, tmp,
                                 SIM_LIMIT, self.time_limit_s, window, cache_root())
            ran = {"simulator": r.simulator, "version": r.version, "build_s": r.build_s, "run_s": r.run_s,
                   "build_cached": r.build_cached}
            from llmulator.fileio import atomic_write_json
            atomic_write_json(tmp / "result.json", {
                "cycles": res.cycles, "reads": res.reads, "writes": res.writes, "vcd_cycles": res.vcd_cycles,
                "out": res.outputs[out_name].astype(np.int64).reshape(-1).tolist(), "ran": ran})
            try:
                tmp.rename(folder)
            except OSError:  # another process cached the same design first
                shutil.rmtree(tmp, ignore_errors=True)
            res = sim.SimResult(res.cycles, res.reads, res.writes, res.outputs,
                                folder / "act.vcd" if (folder / "act.vcd").is_file() else None, res.vcd_cycles)
        check = self._check(d, inputs, res.outputs) if self.check_outputs else "not-run"
        prof = self._metrics(d, plan, lay, rtl, res, skey)
        prof.functional_check = check
        prof.inputs = inputs.origin
        prof.design = d.name
        prof.seconds = time.perf_counter() - t0
        prof.counters["cached_simulation"] = float(hit)
        prof.counters["simulator.verilator"] = float(simulator == "verilator")
        prof.counters["generate_seconds"] = t_gen
        # this profile's own seconds: 0 where the simulation (or Verilator's program) came from the cache
        prof.counters["sim_build_seconds"] = 0.0 if hit else float(ran.get("build_s", 0.0))
        prof.counters["sim_run_seconds"] = 0.0 if hit else float(ran.get("run_s", 0.0))
        prof.notes.insert(1, f"simulator: {simulator} ({ran.get('version', '?')}){', cached result' if hit else ''}; "
                             f"{simulators.ENV}=verilator|icarus|auto chooses")
        return prof

    def _check(self, d: Design, inputs: Inputs, outs: dict[str, np.ndarray]) -> str:
        if not d.workload.reference:
            return "not-run: the workload has no reference"
        ref = run_reference(d.workload, inputs.arrays, d.sizes)
        bad = []
        for name, got in outs.items():
            want = ref[name]
            if not np.array_equal(got, want):
                diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
                idx = np.unravel_index(int(np.argmax(diff)), diff.shape)
                where = "".join(f"[{int(i)}]" for i in idx)
                bad.append(f"{name}{where}: got {got[idx].item()}, reference {want[idx].item()} "
                           f"({int((diff > 0).sum())} of {diff.size} differ)")
        return "pass" if not bad else "fail: " + "; ".join(bad)

    def _metrics(self, d: Design, plan, lay, rtl, res, skey: str) -> Profile:
        arch = d.arch
        cycles = float(res.cycles)
        macs = math.prod(lp.trips for lp in plan.loops)
        counters = {"ops.mac": float(macs), "units.mac": float(plan.A * plan.B), "folds": float(len(plan.folds())),
                    "pe_rows": float(plan.A if not plan.transposed else plan.B),
                    "pe_cols": float(plan.B if not plan.transposed else plan.A)}
        breakdown: dict[str, float] = {}
        mem_energy = 0.0
        mem_area = 0.0
        for name, lv in lay.levels.items():
            r, w_ = res.reads.get(name, 0), res.writes.get(name, 0)
            counters[f"reads.{name}"] = float(r)
            counters[f"writes.{name}"] = float(w_)
            spec = arch.level(name)
            leak = spec.leakage_mw * max(spec.instances, 1) * cycles / arch.clock_mhz * 1e3  # mW x us = nJ -> pJ
            e = r * lv.read_pj + w_ * lv.write_pj + leak
            breakdown[f"energy_pj.{name}"] = e
            breakdown[f"area_um2.{name}"] = lv.area_um2
            mem_energy += e
            mem_area += lv.area_um2
        o = plan.operands
        flow = (f"{plan.dataflow} ({plan.shape})" if plan.dataflow != "psum" else
                f"psum: {o['S'].array} stationary, partial sums flowing (which input is the layer's weight, ws or "
                f"is, is not named: {_unnamed_layer(d)})")
        notes = [f"{flow} on a {counters['pe_rows']:g}x{counters['pe_cols']:g} systolic array; "
                 f"{counters['folds']:g} folds; operands on {', '.join(lay.levels)} (banked as specified), "
                 "preloaded: DRAM transfers are not simulated",
                 "cycles: counted by the generated hardware from start to the last output write"]
        notes += drain_note(d, plan) + mac_latency_note(d) + latency_note(d, lay)
        metrics = {"cycles": cycles, "latency_us": cycles / arch.clock_mhz}
        if self.synthesize:
            syn = self._synth(d, plan, lay, rtl, res, skey)
            logic_pc = pe_corrected(syn, plan, breakdown, counters, cycles)
            logic_e = logic_pc * cycles
            breakdown["energy_pj.logic"] = logic_e
            breakdown["area_um2.logic"] = syn["logic_area_um2"]
            breakdown["area_um2.pe"] = syn["area_um2"].get("pe", 0.0)
            breakdown["area_um2.pe_each"] = syn["area_um2"].get("pe", 0.0) / (plan.A * plan.B)
            for m, v in syn["area_um2"].items():
                if not m.startswith("bank_") and m not in ("pe",):
                    breakdown[f"area_um2.rtl.{m}"] = v
            breakdown["critical_path_ns"] = syn["critical_path_ns"]
            breakdown["fmax_mhz"] = syn["fmax_mhz"]
            breakdown["logic_energy_per_cycle_pj"] = logic_pc
            for m, e in syn.get("energy_per_cycle_pj_by_module", {}).items():
                breakdown.setdefault(f"energy_pj.rtl.{m}", e * cycles)
            counters["annotated_pins"] = float(syn["annotated_pins"])
            counters["yosys_seconds"] = float(syn.get("yosys_s", 0.0))
            counters["sta_seconds"] = float(syn.get("sta_s", 0.0))
            energy = logic_e + mem_energy
            metrics.update({"energy_pj": energy, "area_um2": syn["logic_area_um2"] + mem_area,
                            "power_mw": energy * arch.clock_mhz / cycles * 1e-3 if cycles else 0.0})
            notes.append(synth_note(syn, res.vcd_cycles, counters["pes_replayed"]))
            if syn["fmax_mhz"] < arch.clock_mhz:
                notes.append(f"the logic does not close timing at the architecture's {arch.clock_mhz:g} MHz in this "
                             f"0.18 um library (fmax {syn['fmax_mhz']:.0f} MHz)")
        return Profile(profiler=self.name, version=self.version, metrics=metrics, counters=counters,
                       breakdown=breakdown, notes=notes)

    def _replay(self, d: Design, plan, res, tools) -> dict[str, float]:
        """The sampled PEs' energy per cycle, replayed gate-level on their recorded inputs (pe_replay)."""
        from .pe_replay import pe_sample, replay_pes
        if res.vcd is None or not Path(res.vcd).is_file():
            return {}
        got = replay_pes(plan, Path(res.vcd), res.vcd_cycles, tools, d.arch.clock_mhz, cache_root() / "pe-replay",
                         pe_sample(plan))
        return {pe: v["total"] for pe, v in got.items()}

    def _replay_modules(self, rtl, res, tools, folder: Path) -> dict[str, float]:
        """The engines', the writer's, the output queue's and each buffer's energy per cycle, each module's
        piece of the hierarchical netlist replayed gate-level on its recorded inputs (module_replay); a
        buffer's parts (arbiter, crossbar in and out) also as ``buf_<level>/<part>``."""
        from . import synth
        from .module_replay import replay_buffer, replay_module
        hier = folder / "net_hier.v"
        if res.vcd is None or not Path(res.vcd).is_file() or not hier.is_file():
            return {}
        netlists = synth.split_modules(hier.read_text())
        out = {}
        work = cache_root() / "module-replay"
        for m in [*rtl.engines, "out_fifo"]:
            if m in netlists and m in rtl.synth_modules:
                v = replay_module(m, rtl.synth_modules[m], netlists[m], Path(res.vcd), res.vcd_cycles, tools, work)
                if v is not None:
                    out[m] = v
        for lv in rtl.levels:
            parts = replay_buffer(lv, rtl.synth_modules, netlists, Path(res.vcd), res.vcd_cycles, tools, work)
            if parts:
                out[f"buf_{lv}"] = sum(parts.values())
                out.update({f"buf_{lv}/{k}": v for k, v in parts.items()})
        return out

    def _synth(self, d: Design, plan, lay, rtl, res, skey: str) -> dict:
        from llmulator_plugins.characterize import flow as cz

        from . import synth
        tools = cz.find_tools()
        lib_sha = hashlib.sha256(tools.liberty.read_bytes()).hexdigest()[:16]
        from .pe_replay import REPLAY, pe_sample
        key = _key(VERSION, synth.FLOW, REPLAY, ",".join(pe_sample(plan)), rtl.text(synth=True), lib_sha,
                   f"{d.arch.clock_mhz:g}", skey,
                   json.dumps({k: v for k, v in tools.versions.items() if k != "liberty"}, sort_keys=True))
        folder = cache_root() / f"syn-{key}"
        cached = folder / "result.json"
        if cached.is_file():
            return json.loads(cached.read_text())
        tmp = Path(tempfile.mkdtemp(prefix="syn-", dir=cache_root()))
        with _removed_on_timeout(tmp):
            out = synth.run_synthesis(rtl, plan, lay, tools, tmp, d.arch.clock_mhz, res.vcd, res.vcd_cycles,
                                      self.time_limit_s, pes=pe_sample(plan))
        out["pe_replay_pj_per_cycle"] = self._replay(d, plan, res, tools)
        out["module_replay_pj_per_cycle"] = self._replay_modules(rtl, res, tools, tmp)
        from llmulator.fileio import atomic_write_json
        atomic_write_json(tmp / "result.json", out)
        (tmp / "activity.tcl").unlink(missing_ok=True)
        try:
            tmp.rename(folder)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
        return out


def _unnamed_layer(d) -> str:
    """Why SCALE-Sim's layer reader, which names a layer's weight, does not read this workload."""
    from llmulator.errors import UserError
    from llmulator_plugins.scalesim.adapter import describe_layer
    if not d.workload.einsum:
        return "the workload declares no einsum"
    try:
        describe_layer(d)
    except UserError as e:
        return f"its einsum is not a GEMM or 2-D convolution SCALE-Sim reads ({str(e).splitlines()[0]})"
    return "its einsum gives the stationary input no weight or input role"
