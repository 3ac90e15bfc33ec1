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
  loops. Anything else is a UserError. (``.layer``)
* array: ``compute.pe_array`` rows -> ArrayHeight, cols -> ArrayWidth (swapped
  when the mapping binds the loops transposed, see ``DATAFLOWS``).
* dataflow: from the mapping's spatial bindings, in SCALE-Sim's im2col view
  (M = output pixels / GEMM rows, N = filters / GEMM cols, K = window / reduction).
* SRAM: the largest ``sram`` level (capacity x instances) split in three equal
  parts for the ifmap, filter and ofmap buffers (whole kB, at least 1).
* ``InterfaceBandwidth: CALC``: SCALE-Sim sizes DRAM bandwidth so that nothing
  stalls; the reported cycles are compute cycles of the systolic schedule.
  (array, dataflow, SRAM and the reports: ``.config``)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from llmulator import scratch
from llmulator.design import Design
from llmulator.errors import UserError
from llmulator.results import Profile

from .config import DF_NAMES, RUN_NAME, RunConfig, parse_reports, run_config
from .layer import Layer, describe_layer

VERSION = "0.1"
SCALESIM_VERSION = "3.0.0"  # the version scripts/install_scalesim.sh installs and this adapter was checked with
ENV_PYTHON = "LLMULATOR_SCALESIM_PYTHON"
ENV_TIMEOUT = "LLMULATOR_SCALESIM_TIMEOUT"
DEFAULT_TIMEOUT_S = 600.0
INSTALL_HINT = "scripts/install_scalesim.sh"
REPO_ROOT = Path(__file__).resolve().parents[2]

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
        with scratch.folder("scalesim") as folder:
            layer, cfg = self.prepare(design, folder)
            out = folder / "out"
            cmd = [str(self.python()), "-c", DRIVER, str(folder / "scalesim.cfg"), str(folder / "topology.csv"),
                   str(folder / "layout.csv"), str(out), layer.kind]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=self.time_limit_s, cwd=folder)
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
