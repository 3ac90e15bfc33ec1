"""Adapter to the real SCALE-Sim v3 (PyPI ``scalesim``): an external cycle cross-check.

SCALE-Sim needs numpy < 2.4, which conflicts with the main environment, so it
lives in its own virtual environment (``scripts/install_scalesim.sh`` makes
``.venv-scalesim``) and runs there as a subprocess. This module only writes
SCALE-Sim's input files (config INI, topology CSV, an empty layout CSV),
starts the other interpreter and parses ``COMPUTE_REPORT.csv`` (plus the
access and bandwidth reports into counters). It imports nothing heavy.

How a Design becomes a SCALE-Sim run (docs/scalesim.md has the full story):

* workload: a GEMM (einsum ``C[m,n] += A[m,k] * B[k,n]``, any operand order or
  storage transpose) -> ``-i gemm`` row ``name, M, N, K,``; a 2-D convolution
  (einsum like ``O[k,p,q] += W[k,c,r,s] * I[c,p+r,q+s]``, optional stride
  coefficient on p and q) -> conv row ``name, IfmapH, IfmapW, FilterH, FilterW,
  Channels, NumFilter, Stride,``. Sizes are the trip counts of the design's
  loops. Anything else is a UserError.
* array: ``compute.pe_array`` rows -> ArrayHeight, cols -> ArrayWidth (swapped
  when the mapping binds the loops transposed, see ``DATAFLOWS``).
* dataflow: from the mapping's spatial bindings, in SCALE-Sim's im2col view
  (M = output pixels / GEMM rows, N = filters / GEMM cols, K = window / reduction).
* SRAM: the largest ``sram`` level (capacity x instances) split in three equal
  parts for the ifmap, filter and ofmap buffers (whole kB, at least 1).
* ``InterfaceBandwidth: CALC``: SCALE-Sim sizes DRAM bandwidth so that nothing
  stalls; the reported cycles are compute cycles of the systolic schedule.
"""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
from llmulator.design import Design
from llmulator.errors import UserError
from llmulator.expr import ExprError, evaluate
from llmulator.results import Profile

VERSION = "0.1"
SCALESIM_VERSION = "3.0.0"  # the version scripts/install_scalesim.sh installs and this adapter was checked with
ENV_PYTHON = "LLMULATOR_SCALESIM_PYTHON"
ENV_TIMEOUT = "LLMULATOR_SCALESIM_TIMEOUT"
DEFAULT_TIMEOUT_S = 600.0
INSTALL_HINT = "scripts/install_scalesim.sh"
REPO_ROOT = Path(__file__).resolve().parents[2]

# (role on PE rows, role on PE cols) -> (SCALE-Sim dataflow, array transposed)
# Roles in SCALE-Sim's im2col view of a layer: M = output pixels (GEMM rows of A and C),
# N = filters (GEMM columns of B and C), K = convolution window (GEMM reduction).
DATAFLOWS: dict[tuple[str, str], tuple[str, bool]] = {
    ("K", "N"): ("ws", False),
    ("M", "N"): ("os", False),
    ("K", "M"): ("is", False),
    ("N", "K"): ("ws", True),
    ("N", "M"): ("os", True),
    ("M", "K"): ("is", True),
}
DF_NAMES = {"ws": "weight stationary", "os": "output stationary", "is": "input stationary"}
DATAFLOW_HELP = ("SCALE-Sim dataflows by spatial binding (rows x cols; M = output rows/pixels, "
                 "N = output columns/filters, K = reduction/window): K x N -> ws (weight stationary), "
                 "M x N -> os (output stationary), K x M -> is (input stationary); the transposed "
                 "bindings (N x K, N x M, M x K) run the same dataflow on the transposed array")

# The driver run by the SCALE-Sim interpreter. It uses the Python API rather than
# `python -m scalesim.scale`, because the CLI ignores `-s N` and always writes per-cycle
# traces (tens of MB per layer); save_disk_space=True skips them.
DRIVER = """\
import sys
from scalesim.scale_sim import scalesim
cfg, topo, layout, out, kind = sys.argv[1:6]
sim = scalesim(save_disk_space=True, verbose=False, config=cfg, topology=topo, layout=layout,
               input_type_gemm=(kind == "gemm"))
sim.run_scale(top_path=out)
"""

PROBE = """\
from importlib.metadata import version
import scalesim.scale_sim  # noqa: F401
print(version("scalesim"))
"""

RUN_NAME = "llmulator"


# -- the layer: what SCALE-Sim is asked to simulate ------------------------------------------------
@attrs.frozen
class Layer:
    """One SCALE-Sim layer, plus the role (M, N or K) of each loop label of the design."""

    kind: str  # "gemm" or "conv"
    dims: dict[str, int]  # gemm: M N K; conv: IfmapH IfmapW FilterH FilterW Channels NumFilter Stride
    roles: dict[str, str]  # loop label -> "M" | "N" | "K"
    name: str = "layer"

    GEMM_COLS = ("M", "N", "K")
    CONV_COLS = ("IfmapH", "IfmapW", "FilterH", "FilterW", "Channels", "NumFilter", "Stride")

    @property
    def macs(self) -> int:
        d = self.dims
        if self.kind == "gemm":
            return d["M"] * d["N"] * d["K"]
        oh = (d["IfmapH"] - d["FilterH"]) // d["Stride"] + 1
        ow = (d["IfmapW"] - d["FilterW"]) // d["Stride"] + 1
        return oh * ow * d["FilterH"] * d["FilterW"] * d["Channels"] * d["NumFilter"]

    def topology_csv(self) -> str:
        """SCALE-Sim's topology CSV; every row ends with the trailing comma SCALE-Sim requires."""
        cols = self.GEMM_COLS if self.kind == "gemm" else self.CONV_COLS
        name = re.sub(r"[^A-Za-z0-9_]", "_", self.name) or "layer"
        head = "Layer, " + ", ".join(cols) + ",\n"
        return head + name + ", " + ", ".join(str(self.dims[c]) for c in cols) + ",\n"


_ACCESS = re.compile(r"^\s*(\w+)\s*\[([^\]]*)\]\s*$")
_EINSUM = re.compile(r"^\s*(\w+\s*\[[^\]]*\])\s*\+=\s*(\w+\s*\[[^\]]*\])\s*\*\s*(\w+\s*\[[^\]]*\])\s*$")


def _parse_access(text: str) -> tuple[str, list[str]] | None:
    m = _ACCESS.match(text)
    if not m:
        return None
    return m.group(1), [re.sub(r"\s+", "", i) for i in m.group(2).split(",")]


def _is_var(index: str) -> bool:
    return re.fullmatch(r"[A-Za-z_]\w*", index) is not None


def _strided(index: str, names: dict[str, int]) -> list[tuple[str, int]] | None:
    """``p+r``, ``2*p+r``, ``p*STRIDE+r`` -> [(var, coefficient), ...]; None if not of that form."""
    out = []
    for term in index.split("+"):
        factors = term.split("*")
        if not 1 <= len(factors) <= 2 or not all(factors):
            return None
        var = [f for f in factors if _is_var(f) and f not in names]
        if len(var) != 1:
            return None
        coef = 1
        for f in factors:
            if f != var[0]:
                try:
                    coef = int(evaluate(f, names))
                except (ExprError, TypeError, ValueError):
                    return None
        out.append((var[0], coef))
    return out


class _Sizes:
    """Trip count of each einsum index variable, from the design's loops (or its parameters)."""

    def __init__(self, d: Design):
        self.d = d
        self.by_var: dict[str, list[str]] = {}
        for label, loop in d.tree.loops.items():
            if loop.var:
                self.by_var.setdefault(loop.var, []).append(label)

    def labels(self, var: str) -> list[str]:
        return self.by_var.get(var, [])

    def trips(self, var: str) -> int:
        labels = self.labels(var)
        if len(labels) == 1:
            return int(round(self.d.trips(labels[0])))
        for cand in (var.upper(), var):
            if cand in self.d.sizes:
                return int(self.d.sizes[cand])
        raise UserError(f"scalesim: cannot tell the size of einsum index '{var}' of workload "
                        f"'{self.d.workload.name}': {len(labels)} loops iterate over it and there is no "
                        f"parameter {var.upper()}")


def describe_layer(d: Design) -> Layer:
    """The SCALE-Sim layer equivalent to the design's workload, or a UserError saying why not."""
    w = d.workload
    names = {**d.sizes, **{k: v["value"] for k, v in w.scalars.items()}}
    if w.einsum:
        m = _EINSUM.match(w.einsum)
        parts = [_parse_access(g) for g in m.groups()] if m else [None]
        if all(p is not None for p in parts):
            out, a, b = parts
            layer = _gemm_layer(d, out, a, b) or _conv_layer(d, out, a, b, names)
            if layer is not None:
                return layer
    elif w.name in ("gemm", "conv2d"):
        return _layer_by_name(d)
    raise UserError(
        f"scalesim: workload '{w.name}' is neither a GEMM nor a 2-D convolution, the only layers SCALE-Sim "
        f"simulates (einsum: {w.einsum or 'none'}); supported forms: "
        "'C[m,n] += A[m,k] * B[k,n]' and 'O[k,p,q] += W[k,c,r,s] * I[c,p+r,q+s]' (optionally strided, "
        "e.g. I[c,2*p+r,2*q+s])")


def _gemm_layer(d: Design, out, a, b) -> Layer | None:
    (_, oi), (_, ai), (_, bi) = out, a, b
    if not (len(oi) == len(ai) == len(bi) == 2 and all(map(_is_var, oi + ai + bi))):
        return None
    i, j = oi
    red = (set(ai) | set(bi)) - {i, j}
    if i == j or len(red) != 1 or len(set(ai)) != 2 or len(set(bi)) != 2:
        return None
    (k,) = red
    if {i, k} == set(ai) and {j, k} == set(bi):
        pass
    elif {i, k} == set(bi) and {j, k} == set(ai):
        pass
    else:
        return None
    sz = _Sizes(d)
    roles = {lb: r for var, r in ((i, "M"), (j, "N"), (k, "K")) for lb in sz.labels(var)}
    return Layer("gemm", {"M": sz.trips(i), "N": sz.trips(j), "K": sz.trips(k)}, roles, d.workload.name)


def _conv_layer(d: Design, out, a, b, names) -> Layer | None:
    (_, oi) = out
    if len(oi) != 3 or not all(map(_is_var, oi)):
        return None
    # the input operand is the one indexed by sums (p + r); the weight is indexed by plain variables
    pair = next(((w, i) for w, i in ((a, b), (b, a))
                 if len(w[1]) == 4 and all(map(_is_var, w[1])) and len(i[1]) == 3), None)
    if pair is None:
        return None
    (_, wi), (iname, ii) = pair
    plain = [x for x in ii if _is_var(x)]
    sums = [_strided(x, names) for x in ii if not _is_var(x)]
    if len(plain) != 1 or len(sums) != 2 or any(s is None or len(s) != 2 for s in sums):
        return None
    c = plain[0]
    filt = [x for x in oi if x in wi and x not in ii]
    if len(filt) != 1 or c not in wi or c in oi:
        return None
    kf = filt[0]
    spatial = []  # (output var, stride, filter var) for H then W, in the input's dimension order
    for s in sums:
        (v0, c0), (v1, c1) = s
        if v0 in oi and v1 in wi and v1 not in oi and c1 == 1:
            spatial.append((v0, c0, v1))
        elif v1 in oi and v0 in wi and v0 not in oi and c0 == 1:
            spatial.append((v1, c1, v0))
        else:
            return None
    (ph, sh, rh), (pw, sw, rw) = spatial
    if {ph, pw, kf} != set(oi) or {kf, c, rh, rw} != set(wi):
        return None
    if sh != sw or sh < 1:
        raise UserError(f"scalesim: convolution '{d.workload.name}' has strides {sh} and {sw}; SCALE-Sim "
                        "supports only one stride for both directions")
    sz = _Sizes(d)
    dim_h = ii.index(next(x for x in ii if not _is_var(x)))
    dim_w = [n for n, x in enumerate(ii) if not _is_var(x)][1]
    shape = d.workload.shape(iname, d.sizes)
    oh, ow, r, s = sz.trips(ph), sz.trips(pw), sz.trips(rh), sz.trips(rw)
    ih, iw = shape[dim_h], shape[dim_w]
    if (ih - r) // sh + 1 != oh or (iw - s) // sh + 1 != ow:
        raise UserError(f"scalesim: convolution '{d.workload.name}': input {iname} is {ih}x{iw} but a "
                        f"{r}x{s} filter with stride {sh} gives {oh}x{ow} outputs only without padding; "
                        "SCALE-Sim does not model padding")
    roles = {lb: role for var, role in ((ph, "M"), (pw, "M"), (kf, "N"), (c, "K"), (rh, "K"), (rw, "K"))
             for lb in sz.labels(var)}
    dims = {"IfmapH": ih, "IfmapW": iw, "FilterH": r, "FilterW": s, "Channels": sz.trips(c),
            "NumFilter": sz.trips(kf), "Stride": sh}
    return Layer("conv", dims, roles, d.workload.name)


def _layer_by_name(d: Design) -> Layer:
    """Fallback for a workload named gemm/conv2d without an einsum: the library parameter names."""
    s, w = d.sizes, d.workload
    need = ("M", "N", "K") if w.name == "gemm" else ("K", "C", "P", "Q", "R", "S")
    missing = [p for p in need if p not in s]
    if missing:
        raise UserError(f"scalesim: workload '{w.name}' has no einsum and lacks parameters "
                        f"{', '.join(missing)}; add an einsum such as 'C[m,n] += A[m,k] * B[k,n]'")
    by_var = {lp.var: lb for lb, lp in d.tree.loops.items() if lp.var}
    if w.name == "gemm":
        roles = {by_var[v]: r for v, r in (("m", "M"), ("n", "N"), ("k", "K")) if v in by_var}
        return Layer("gemm", {"M": s["M"], "N": s["N"], "K": s["K"]}, roles, w.name)
    roles = {by_var[v]: r for v, r in (("p", "M"), ("q", "M"), ("k", "N"), ("c", "K"), ("r", "K"), ("s", "K"))
             if v in by_var}
    dims = {"IfmapH": s["P"] + s["R"] - 1, "IfmapW": s["Q"] + s["S"] - 1, "FilterH": s["R"], "FilterW": s["S"],
            "Channels": s["C"], "NumFilter": s["K"], "Stride": 1}
    return Layer("conv", dims, roles, w.name)


# -- architecture and mapping -> config ------------------------------------------------------------
@attrs.frozen
class RunConfig:
    rows: int  # SCALE-Sim ArrayHeight
    cols: int  # SCALE-Sim ArrayWidth
    dataflow: str
    transposed: bool
    ifmap_kb: int
    filter_kb: int
    ofmap_kb: int
    sram_level: str

    def ini(self) -> str:
        """SCALE-Sim 3.0.0's config file: every key its parser reads, CALC bandwidth, no sparsity."""
        return f"""\
[general]
run_name = {RUN_NAME}

[architecture_presets]
ArrayHeight = {self.rows}
ArrayWidth = {self.cols}
IfmapSramSzkB = {self.ifmap_kb}
FilterSramSzkB = {self.filter_kb}
OfmapSramSzkB = {self.ofmap_kb}
IfmapOffset = 0
FilterOffset = 10000000
OfmapOffset = 20000000
Dataflow = {self.dataflow}
Bandwidth = 10
ReadRequestBuffer = 32
WriteRequestBuffer = 32

[layout]
IfmapCustomLayout = False
IfmapSRAMBankBandwidth = 10
IfmapSRAMBankNum = 10
IfmapSRAMBankPort = 2
FilterCustomLayout = False
FilterSRAMBankBandwidth = 10
FilterSRAMBankNum = 10
FilterSRAMBankPort = 2

[sparsity]
SparsitySupport = false
SparseRep = ellpack_block
OptimizedMapping = false
BlockSize = 8
RandomNumberGeneratorSeed = 40

[run_presets]
InterfaceBandwidth = CALC
UseRamulatorTrace = False
"""


def detect_dataflow(d: Design, layer: Layer) -> tuple[str, bool]:
    """(SCALE-Sim dataflow, transposed) from the mapping's spatial bindings, or a UserError."""
    bound: dict[str, list[str]] = {"rows": [], "cols": []}
    for label, lm in d.mapping.loops.items():
        if lm.spatial in bound:
            bound[lm.spatial].extend((label,) + tuple(lm.fuse))  # a fused loop binds all its members
    where = f"mapping '{d.mapping.name}'"
    if not bound["rows"] or not bound["cols"]:
        have = "; ".join(f"{k}: {', '.join(v)}" for k, v in bound.items() if v) or "no spatial loops"
        raise UserError(f"scalesim: {where} must bind loops to both PE rows and PE cols ({have}). "
                        + DATAFLOW_HELP)
    roles = {}
    for dim, labels in bound.items():
        unknown = [lb for lb in labels if lb not in layer.roles]
        if unknown:
            raise UserError(f"scalesim: {where} binds loop(s) {', '.join(unknown)} to PE {dim}, but they are "
                            f"not loops of the {layer.kind} einsum")
        rs = sorted({layer.roles[lb] for lb in labels})
        if len(rs) != 1:
            raise UserError(f"scalesim: {where} mixes roles {'+'.join(rs)} on PE {dim} "
                            f"({', '.join(labels)}). " + DATAFLOW_HELP)
        roles[dim] = rs[0]
    key = (roles["rows"], roles["cols"])
    if key not in DATAFLOWS:
        raise UserError(f"scalesim: {where} binds {key[0]} to PE rows and {key[1]} to PE cols, which is no "
                        "SCALE-Sim dataflow. " + DATAFLOW_HELP)
    return DATAFLOWS[key]


def sram_split(d: Design) -> tuple[str, int, int, int]:
    """(level name, ifmap kB, filter kB, ofmap kB): the largest SRAM level in three equal parts."""
    srams = [lv for lv in d.arch.memory if lv.kind == "sram"]
    if not srams:
        raise UserError(f"scalesim: architecture '{d.arch.name}' has no memory level of kind sram; SCALE-Sim "
                        "needs on-chip SRAM buffers for the ifmap, filter and ofmap")
    lv = max(srams, key=lambda m: m.capacity_kib * m.instances)
    third = max(1, int(lv.capacity_kib * lv.instances // 3))
    return lv.name, third, third, third


def run_config(d: Design, layer: Layer) -> RunConfig:
    pe = d.arch.pe_array
    if pe is None:
        raise UserError(f"scalesim: architecture '{d.arch.name}' has no compute.pe_array; SCALE-Sim simulates "
                        "a systolic PE array (rows -> ArrayHeight, cols -> ArrayWidth)")
    df, transposed = detect_dataflow(d, layer)
    level, ik, fk, ok = sram_split(d)
    rows, cols = (pe.cols, pe.rows) if transposed else (pe.rows, pe.cols)
    return RunConfig(rows, cols, df, transposed, ik, fk, ok, level)


# -- reports ---------------------------------------------------------------------------------------
def _read_report(path: Path) -> dict[str, str]:
    """First data row of a SCALE-Sim report, keyed by its (stripped) header names."""
    rows = [[c.strip() for c in r] for r in csv.reader(io.StringIO(path.read_text())) if any(c.strip() for c in r)]
    if len(rows) < 2:
        raise UserError(f"scalesim: {path.name} has no data row")
    return {h: v for h, v in zip(rows[0], rows[1], strict=False) if h}


def parse_reports(folder: Path) -> tuple[float, dict[str, float]]:
    """(total cycles without prefetch, counters) from SCALE-Sim's report folder."""
    comp = _read_report(folder / "COMPUTE_REPORT.csv")
    try:
        cycles = float(comp["Total Cycles"])
        counters = {
            "cycles_incl_prefetch": float(comp["Total Cycles (incl. prefetch)"]),
            "stall_cycles": float(comp["Stall Cycles"]),
            "overall_util_pct": float(comp["Overall Util %"]),
            "mapping_efficiency_pct": float(comp["Mapping Efficiency %"]),
            "compute_util_pct": float(comp["Compute Util %"]),
        }
    except (KeyError, ValueError) as e:
        raise UserError(f"scalesim: unexpected COMPUTE_REPORT.csv (columns {', '.join(comp)}): {e}") from None
    keys = {"SRAM IFMAP Reads": "sram_ifmap_reads", "SRAM Filter Reads": "sram_filter_reads",
            "SRAM OFMAP Writes": "sram_ofmap_writes", "DRAM IFMAP Reads": "dram_ifmap_reads",
            "DRAM Filter Reads": "dram_filter_reads", "DRAM OFMAP Writes": "dram_ofmap_writes",
            "Avg IFMAP DRAM BW": "avg_dram_bw_ifmap_words", "Avg FILTER DRAM BW": "avg_dram_bw_filter_words",
            "Avg OFMAP DRAM BW": "avg_dram_bw_ofmap_words"}
    for name in ("DETAILED_ACCESS_REPORT.csv", "BANDWIDTH_REPORT.csv"):
        if (folder / name).is_file():
            for h, v in _read_report(folder / name).items():
                if h in keys:
                    try:
                        counters[keys[h]] = float(v)
                    except ValueError:
                        pass
    return cycles, counters


# -- the profiler ----------------------------------------------------------------------------------
def _origin(inputs: Any) -> str:
    """What the caller's inputs were (llmulator.inputs.Inputs has .origin); SCALE-Sim does not use them."""
    if inputs is None:
        return ""
    origin = getattr(inputs, "origin", None)
    return str(origin) if origin is not None else str(inputs)[:200]


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


class ScaleSimProfiler:
    """Runs SCALE-Sim v3 on a GEMM or conv2d design and reports its cycle count."""

    name = "scalesim"
    version = VERSION  # becomes VERSION+scalesim-X.Y.Z once the interpreter was probed
    # the Profiler contract's memory limit (llmulator.hookspecs): accepted, not enforced; a SCALE-Sim run is
    # limited in wall time only (time_limit_s)
    mem_limit_mb: int | None = None

    def __init__(self, python: str | os.PathLike | None = None, time_limit_s: float | None = None):
        self._python = Path(python) if python else None
        # wall-time limit of one SCALE-Sim run (`llmulator profile --time-limit` sets it)
        self.time_limit_s = float(time_limit_s if time_limit_s is not None
                                  else os.environ.get(ENV_TIMEOUT, DEFAULT_TIMEOUT_S))
        self._probed: tuple[str | None, str | None] | None = None  # (reason, scalesim version)

    # interpreter discovery -----------------------------------------------------------------
    def python(self) -> Path:
        """The interpreter that has SCALE-Sim (not checked here; see available())."""
        if self._python is not None:
            return self._python
        env = os.environ.get(ENV_PYTHON)
        if env:
            return Path(env)
        cands = [REPO_ROOT / ".venv-scalesim" / "bin" / "python", Path.cwd() / ".venv-scalesim" / "bin" / "python"]
        return next((c for c in cands if c.exists()), cands[0])

    def available(self) -> str | None:
        if self._probed is None:
            self._probed = self._probe()
            if self._probed[1]:
                self.version = f"{VERSION}+scalesim-{self._probed[1]}"
        return self._probed[0]

    def _probe(self) -> tuple[str | None, str | None]:
        py = self.python()
        how = f"run {INSTALL_HINT} or set {ENV_PYTHON}"
        if not py.exists():
            return f"no SCALE-Sim interpreter at {py} ({how})", None
        try:
            r = subprocess.run([str(py), "-c", PROBE], capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"cannot run {py}: {e} ({how})", None
        if r.returncode != 0:
            last = _tail(r.stderr, 1) or f"exit status {r.returncode}"
            return f"'import scalesim' fails in {py}: {last} ({how})", None
        return None, r.stdout.strip() or None

    # running --------------------------------------------------------------------------------
    def prepare(self, design: Design, folder: Path) -> tuple[Layer, RunConfig]:
        """Write scalesim.cfg, topology.csv and layout.csv for the design into ``folder``."""
        layer = describe_layer(design)
        cfg = run_config(design, layer)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "scalesim.cfg").write_text(cfg.ini())
        (folder / "topology.csv").write_text(layer.topology_csv())
        # SCALE-Sim always opens a layout file; with IfmapCustomLayout/FilterCustomLayout False only
        # its header is read
        (folder / "layout.csv").write_text("Layer,\n")
        return layer, cfg

    def profile(self, design: Design, inputs: Any = None) -> Profile:
        t0 = time.perf_counter()
        why = self.available()
        if why is not None:
            raise UserError(f"profiler 'scalesim' is not available: {why}")
        with tempfile.TemporaryDirectory(prefix="llmulator-scalesim-") as tmp:
            folder = Path(tmp)
            layer, cfg = self.prepare(design, folder)
            out = folder / "out"
            cmd = [str(self.python()), "-c", DRIVER, str(folder / "scalesim.cfg"), str(folder / "topology.csv"),
                   str(folder / "layout.csv"), str(out), layer.kind]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=self.time_limit_s, cwd=tmp)
            except subprocess.TimeoutExpired:
                raise UserError(f"scalesim: SCALE-Sim did not finish within {self.time_limit_s:g} s on "
                                f"{design.name} (set {ENV_TIMEOUT} to allow longer)") from None
            report = out / RUN_NAME / "COMPUTE_REPORT.csv"
            if r.returncode != 0 or not report.is_file():
                tail = _tail(r.stderr) or _tail(r.stdout) or "(no output)"
                raise UserError(f"scalesim: SCALE-Sim failed on {design.name} (exit status {r.returncode}):\n"
                                f"{tail}")
            cycles, counters = parse_reports(out / RUN_NAME)
        counters.update({"array_rows": float(cfg.rows), "array_cols": float(cfg.cols),
                         "macs": float(layer.macs)})
        notes = [
            "SCALE-Sim models cycles only: energy, power and area are not modelled",
            f"SCALE-Sim dataflow {cfg.dataflow!r} ({DF_NAMES[cfg.dataflow]}) on a {cfg.rows}x{cfg.cols} array"
            + (" (the mapping's array, transposed)" if cfg.transposed else "")
            + f"; {layer.kind} layer " + ", ".join(f"{k}={v}" for k, v in layer.dims.items()),
            "InterfaceBandwidth CALC: DRAM bandwidth is sized so that nothing stalls; cycles exclude the "
            "initial prefetch (counter cycles_incl_prefetch includes it)",
            f"SRAM level {cfg.sram_level} split into ifmap/filter/ofmap buffers of {cfg.ifmap_kb}/{cfg.filter_kb}/"
            f"{cfg.ofmap_kb} kB (1-byte words); mapping tiles, loop order and placement are not used",
            "SCALE-Sim is data-independent (dense): input values are not used, no functional check",
        ]
        return Profile(profiler=self.name, version=self.version,
                       metrics={"cycles": cycles, "latency_us": cycles / design.arch.clock_mhz},
                       counters=counters, functional_check="not-run", inputs=_origin(inputs),
                       seconds=time.perf_counter() - t0, design=design.name, notes=notes)


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - a debugging aid
    """``python -m llmulator_plugins.scalesim.adapter ARCH WORKLOAD MAPPING [PRESET]``: print the profile."""
    import json

    from llmulator.design import load_design
    from llmulator.library import resolve

    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (3, 4):
        print(main.__doc__, file=sys.stderr)
        return 2
    d = load_design(resolve("architecture", args[0]), resolve("workload", args[1]), resolve("mapping", args[2]),
                    args[3] if len(args) == 4 else None)
    print(json.dumps(ScaleSimProfiler().profile(d).to_dict(), indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
