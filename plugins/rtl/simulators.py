"""The simulators behind the rtl profiler: Verilator where it is installed, Icarus otherwise.

``choose()`` picks one: the profiler's ``simulator`` option, else ``$LLMULATOR_RTL_SIM``, =
``verilator``, ``icarus`` or ``auto`` (the default: Verilator when ``verilator``, a C++ compiler and
``make`` are on PATH, except for designs so small that Icarus finishes before Verilator would have
compiled them, below ``AUTO_ICARUS_BELOW``; Icarus otherwise). Both run the same testbench (sim.py)
on the same Verilog and give the same cycles, access counts and memory images
(tests/test_rtl_simulators.py).

Verilator compiles the design to C++ and then to a program: seconds to a minute per new design, then
tens of thousands of cycles per second where Icarus runs hundreds (docs/benchmarks-rtl.md). The
program depends only on the Verilog and the testbench (the inputs are memory images it reads at
run time), so it is cached by their content under ``<cache>/vlt-<key>/``: built in a private
temporary folder, moved into place with one rename, under an advisory lock so that two processes
that need the same program build it once (the second waits and reuses it). The model is compiled
at ``-O0`` (a profile runs thousands to a few hundred thousand cycles: compile time dominates), and
with ``ccache`` when it is on PATH (the Verilator runtime then compiles once per machine).

Verilator 5.006 ignores ``$dumpoff``, so the activity window is a second run of the same program
with ``+vcd +vcd_only``: it dumps the window and stops; its VCD's ``TOP`` scope is removed so that
its scopes read like Icarus's (``tb.dut...``).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import attrs
from llmulator.errors import UserError

ENV = "LLMULATOR_RTL_SIM"
CHOICES = ("auto", "verilator", "icarus")
#: Verilator's flags; part of the build key (change them and every program is rebuilt)
#: auto picks Icarus below this much work = Verilog lines x array steps (MACs / PEs): Icarus spends
#: 3-10 CPU-us per line and step here (2x2 to 16x16), Verilator 13-20 CPU-s (2x2) to 35-40 CPU-s (16x16)
#: to compile a design it has not seen (docs/benchmarks-rtl.md): they break even at about 5e6
AUTO_ICARUS_BELOW = 5e6
#: Verilator's build is bounded by the design's size, not by what it simulates: it gets at least this
#: long whatever the profile's time limit (the CLI's --time-limit defaults to 60 s; a 16x16 array's
#: C++ takes 35 CPU-s, minutes of wall on a loaded machine)
BUILD_TIMEOUT_S = 1800.0
VERILATOR_FLAGS = ("--binary", "-Wno-fatal", "-Wno-lint", "-Wno-style", "--top-module", "tb",
                   "-MAKEFLAGS", "OPT_FAST=-O0")


@attrs.frozen
class Ran:
    """What one simulation printed, and what it cost."""
    simulator: str        # "verilator" or "icarus"
    version: str          # the simulator's version line
    stdout: str
    build_s: float        # compiling (Icarus: iverilog; Verilator: verilate + C++, 0 when the program was cached)
    run_s: float          # running (both Verilator runs when the activity window was dumped)
    build_cached: bool
    log: str              # the run's log file name (in the simulation folder)


def missing(name: str) -> str | None:
    """Why simulator ``name`` cannot run here (None: it can)."""
    need = {"verilator": ("verilator", "make", "g++"), "icarus": ("iverilog", "vvp")}[name]
    gone = [t for t in need if shutil.which(t) is None]
    if gone:
        return f"{', '.join(gone)} not on PATH (`bash scripts/install_eda.sh` installs {name})"
    return None


def choose(requested: str | None = None, work: float | None = None) -> str:
    """The simulator to use: ``requested`` (the profiler option), else ``$LLMULATOR_RTL_SIM``, else auto
    (``work``: the design's Verilog lines x array steps; None: large)."""
    want = (requested or os.environ.get(ENV) or "auto").strip().lower()
    if want not in CHOICES:
        raise UserError(f"rtl: unknown simulator '{want}' ({ENV} or the profiler's simulator option: "
                        f"{', '.join(CHOICES)})")
    if want == "auto":
        small = work is not None and work < AUTO_ICARUS_BELOW and missing("icarus") is None
        return "verilator" if missing("verilator") is None and not small else "icarus"
    why = missing(want)
    if why is not None:
        raise UserError(f"rtl: the simulator '{want}' was asked for ({ENV}) but {why}")
    return want


@functools.cache
def version(name: str) -> str:
    exe, flag = {"verilator": ("verilator", "--version"), "icarus": ("iverilog", "-V")}[name]
    try:
        r = subprocess.run([exe, flag], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return f"{name} (version unknown)"
    lines = (r.stdout or r.stderr).strip().splitlines()
    return lines[0].strip() if lines else f"{name} (version unknown)"


def run(name: str, folder: Path, design_v: Path, timeout: float, vcd: bool, cache: Path) -> Ran:
    """Compile ``folder/tb.v`` with ``design_v`` and run it in ``folder`` (where the memory images are)."""
    if name == "icarus":
        t0 = time.perf_counter()
        tool(["iverilog", "-g2005", "-o", "sim.vvp", "tb.v", str(design_v)], folder, timeout, "iverilog")
        t1 = time.perf_counter()
        out = tool(["vvp", "-n", "sim.vvp", *(["+vcd"] if vcd else [])], folder, timeout, "vvp")
        (folder / "sim.vvp").unlink(missing_ok=True)
        return Ran(name, version(name), out, t1 - t0, time.perf_counter() - t1, False, "vvp.log")
    exe, build_s, hit = verilator_program(folder / "tb.v", design_v, cache, timeout, trace=vcd)
    t0 = time.perf_counter()
    out = tool([str(exe)], folder, timeout, "verilator_run")
    if vcd:
        win = tool([str(exe), "+vcd", "+vcd_only"], folder, timeout, "verilator_vcd")
        out += "".join(line + "\n" for line in win.splitlines() if line.startswith("VCD_CYCLES"))
        if not (folder / "act.vcd").is_file():
            raise UserError(f"rtl: Verilator's activity run wrote no act.vcd (log {folder / 'verilator_vcd.log'})")
        drop_top_scope(folder / "act.vcd")
    return Ran(name, version(name), out, build_s, time.perf_counter() - t0, hit, "verilator_run.log")


def verilator_program(tb: Path, design_v: Path, cache: Path, timeout: float, trace: bool = False
                      ) -> tuple[Path, float, bool]:
    """(the simulation program, build seconds, found cached) for this testbench and design; ``trace``:
    with VCD support (``--trace``, for the activity window)."""
    flags = [*VERILATOR_FLAGS, *(["--trace"] if trace else [])]
    h = hashlib.sha256()
    for part in (version("verilator"), " ".join(flags), tb.read_text(), design_v.read_text()):
        h.update(part.encode())
        h.update(b"\0")
    key = h.hexdigest()[:24]
    final = cache / f"vlt-{key}"
    exe = final / "Vtb"
    if exe.is_file():
        return exe, 0.0, True
    locks = cache / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"vlt-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)          # a second process building the same program waits here
        try:
            if exe.is_file():
                return exe, 0.0, True
            t0 = time.perf_counter()
            tmp = Path(tempfile.mkdtemp(prefix="vlt-tmp-", dir=cache))
            try:
                shutil.copy(tb, tmp / "tb.v")
                shutil.copy(design_v, tmp / "design.v")
                jobs = str(max(1, min(4, os.cpu_count() or 1)))
                cmd = ["verilator", *flags, "-j", jobs, "-Mdir", "obj", "-o", "Vtb"]
                if shutil.which("ccache"):
                    cmd += ["-MAKEFLAGS", "OBJCACHE=ccache"]
                tool([*cmd, "tb.v", "design.v"], tmp, max(timeout, BUILD_TIMEOUT_S), "verilator_build")
                shutil.move(str(tmp / "obj" / "Vtb"), str(tmp / "Vtb"))
                shutil.rmtree(tmp / "obj", ignore_errors=True)
                tmp.rename(final)                  # atomic: the folder appears whole or not at all
            except UserError:
                raise                              # the failed build stays in tmp: its log is named
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            return exe, time.perf_counter() - t0, False
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def drop_top_scope(vcd: Path) -> None:
    """Rewrite a Verilator VCD's header so that its scopes start at ``tb`` (as Icarus's do): the
    ``TOP`` scope line, its own variables and its closing ``$upscope`` go; the values are copied as
    they are."""
    tmp = vcd.with_suffix(".tmp")
    with open(vcd) as src, open(tmp, "w") as dst:
        depth, top = 0, False
        for line in src:
            tok = line.split()
            if tok[:3] == ["$scope", "module", "TOP"] and depth == 0:
                top, depth = True, 1
                continue
            if tok[:1] == ["$scope"]:
                depth += 1
            elif tok[:1] == ["$upscope"]:
                depth -= 1
                if top and depth == 0:
                    continue
            elif tok[:1] == ["$var"] and top and depth == 1:
                continue
            dst.write(line)
            if tok[:1] == ["$enddefinitions"]:
                shutil.copyfileobj(src, dst, 1 << 20)
                break
    os.replace(tmp, vcd)


class ToolTimeout(UserError):
    """A simulator or synthesis tool ran past the profile's time limit (its half-done folder is removed)."""


def tool(cmd: list[str], cwd: Path, timeout: float, log: str) -> str:
    """Run one tool in ``cwd``; its output goes to ``<log>.log``; a UserError names the log on failure."""
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolTimeout(f"rtl: {Path(cmd[0]).name} timed out after {timeout:g} s; a larger design needs a longer "
                          "limit: `llmulator profile ... --time-limit SECONDS`") from None
    (cwd / f"{log}.log").write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-8:])
        raise UserError(f"rtl: {Path(cmd[0]).name} failed (status {r.returncode}, log {cwd / (log + '.log')}):\n{tail}")
    return r.stdout
