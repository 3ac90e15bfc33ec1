"""Finding and running the EDA tools (Yosys, Icarus, OpenSTA) and the liberty they read.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import attrs
from llmulator.errors import UserError

from .settings import CELLS_NAME, INSTALL_HINT, LIB_NAME, ROOT

# --------------------------------------------------------------------------------------------
# tools

@attrs.frozen
class Tools:
    yosys: str
    iverilog: str
    vvp: str
    sta: str
    liberty: Path
    cells_v: Path
    versions: dict[str, str] = attrs.field(factory=dict, eq=False)


def liberty_dir() -> Path | None:
    cands = [os.environ.get("LLMULATOR_OSU018_DIR"), ROOT / ".eda" / "osu018", Path.cwd() / ".eda" / "osu018",
             Path("/usr/share/qflow/tech/osu018")]
    for c in cands:
        if c and (Path(c) / LIB_NAME).is_file() and (Path(c) / CELLS_NAME).is_file():
            return Path(c)
    return None


def _first_line(cmd: list[str]) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return ((r.stdout or r.stderr).strip().splitlines() or ["unknown"])[0].strip()


def find_tools(which: Callable[[str], str | None] | None = None) -> Tools:
    """The EDA tools and the OSU018 library, or a UserError (exit 2) naming the install script."""
    which = which or shutil.which
    found = {t: which(t) for t in ("yosys", "iverilog", "vvp", "sta")}
    missing = [t for t, p in found.items() if not p]
    libdir = liberty_dir()
    if missing or libdir is None:
        what = ([f"tool(s) not on PATH: {', '.join(missing)}"] if missing else []) + (
            [f"OSU018 liberty ({LIB_NAME}, {CELLS_NAME}) not found in $LLMULATOR_OSU018_DIR, "
             f"{ROOT / '.eda' / 'osu018'} or /usr/share/qflow/tech/osu018"] if libdir is None else [])
        raise UserError("characterize needs Yosys, Icarus Verilog and OpenSTA and the OSU018 library: "
                        + "; ".join(what) + f"; {INSTALL_HINT}")
    pkg = libdir / "PACKAGE"
    lib_ver = " ".join(pkg.read_text().split()[1::2]) if pkg.is_file() else str(libdir)
    versions = {"yosys": _first_line([found["yosys"], "-V"]),
                "iverilog": _first_line([found["iverilog"], "-V"]),
                "opensta": "OpenSTA " + _first_line([found["sta"], "-version"]),
                "liberty": f"{LIB_NAME} ({lib_ver})"}
    return Tools(found["yosys"], found["iverilog"], found["vvp"], found["sta"], libdir / LIB_NAME,
                 libdir / CELLS_NAME, versions)


def _run(cmd: list[str], cwd: Path, log: str, timeout: float) -> str:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        (cwd / log).write_text((e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""))
        raise FlowError(f"{Path(cmd[0]).name} timed out after {timeout:g} s (log: {cwd / log})") from None
    (cwd / log).write_text(r.stdout + ("\n--- stderr ---\n" + r.stderr if r.stderr else ""))
    if r.returncode != 0:
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-5:])
        raise FlowError(f"{Path(cmd[0]).name} failed with status {r.returncode} (log: {cwd / log}):\n{tail}")
    return r.stdout


class FlowError(Exception):
    """One design's tool run failed; the message names the log."""
