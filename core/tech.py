"""Technology tables: default energy, area and latency per operator class and memory kind.

Tables are YAML files in ``llmulator/tech`` (45 nm from Horowitz ISSCC 2014 by
default). Every figure an architecture omits is filled from here, and the
filled spec records which figures were defaulted so reports can say so.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import Any

import yaml

DTYPE_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16,
              "uint32": 32, "fp16": 16, "fp32": 32, "fp64": 64}


def package_file(*parts: str) -> Any:
    """A file of the llmulator package (``package_file("tech", "45nm.yaml")``): a ``Path`` where the package
    is a folder, as installed or checked out; ``importlib.resources``'s where it is not (a zipped install).
    Importing and setting up ``importlib.resources`` for the two files every command reads was ~5 ms of a
    cold ``llmulator estimate`` (issue 17)."""
    here = Path(__file__).parent
    if here.is_dir():
        return here.joinpath(*parts)
    from importlib import resources
    return resources.files("llmulator").joinpath(*parts)


def available() -> list[str]:
    root = package_file("tech")
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".yaml"))


@cache
def table(name: str) -> dict[str, Any]:
    path = package_file("tech", f"{name}.yaml")
    if not path.is_file():
        raise KeyError(name)
    # libyaml's parser where PyYAML has it (the same data; the Python parser took ~25 ms of every estimate)
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def operator_defaults(tech: str, op_class: str, bits: int, numeric: str = "int") -> dict[str, Any] | None:
    """Figures for one operator class; the nearest available width of the same format."""
    ops = table(tech)["operators"].get(op_class)
    if not ops:
        return None
    prefix = "fp" if numeric == "float" else "int"
    key = f"{prefix}{bits}"
    if key in ops:
        return ops[key]
    same = [k for k in ops if k.startswith(prefix)]
    pool = same or list(ops)
    best = min(pool, key=lambda k: abs(int("".join(c for c in k if c.isdigit())) - bits))
    return ops[best]


def memory_defaults(tech: str, kind: str, capacity_kib: float | None, width_bits: int, banks: int = 1
                    ) -> dict[str, float]:
    """Read/write energy per access of ``width_bits``, area and leakage for one memory instance. An SRAM
    access activates one bank, so its energy is that of an array of ``capacity_kib / banks`` (the table's
    figures are per array, after Horowitz; before hlsim 0.35 the level's whole capacity: a 1,404 KiB level
    of 312 banks paid 53.6 pJ per 32-bit access, 18x one 4.5 KiB bank's 3.7, probe 14 #8)."""
    t = table(tech)["memories"]
    scale = width_bits / 64.0
    if kind == "dram":
        e = t["dram_pj_per_bit"] * width_bits
        return {"read_energy_pj": e, "write_energy_pj": e, "area_um2": 0.0, "leakage_mw": 0.0}
    bits = (capacity_kib or 0.0) * 1024 * 8
    if kind == "regfile":
        e = t["regfile_read_pj_64b"] * scale
        return {"read_energy_pj": e, "write_energy_pj": e,
                "area_um2": bits * t["regfile_area_um2_per_bit"], "leakage_mw": 0.0}
    pts = sorted((float(k), float(v)) for k, v in t["sram_read_pj_64b"].items())
    cap = max((capacity_kib or pts[0][0]) / max(banks, 1), 1e-3)
    e64 = _loginterp(pts, cap)
    e = e64 * scale
    return {"read_energy_pj": e, "write_energy_pj": e * t["sram_write_scale"],
            "area_um2": bits * t["sram_area_um2_per_bit"],
            "leakage_mw": (capacity_kib or 0.0) * t["sram_leakage_mw_per_kib"]}


def _loginterp(points: list[tuple[float, float]], x: float) -> float:
    """Linear in log(x) between the two neighbouring points, extrapolated above the last; below the first
    point a power law through the first two (Horowitz's 8 KiB 10 pJ and 32 KiB 20 pJ: energy ~ sqrt(capacity),
    the word and bit lines' length), which never reaches zero. Linear in log(x) went to its 0.05 floor at 2 KiB:
    once the default priced one bank (hlsim 0.35), a 16 KiB level of 8 banks cost 0.5 pJ per 64 bits, half a
    register file's, and more banks made an SRAM nearly free (an outside probe, hlsim 0.37)."""
    (x0, y0), (x1, y1) = points[0], points[1]
    if x < x0 and y0 > 0 and y1 > 0:
        return y0 * (x / x0) ** (math.log(y1 / y0) / math.log(x1 / x0))
    i = 0
    while i < len(points) - 2 and x > points[i + 1][0]:
        i += 1
    (x0, y0), (x1, y1) = points[i], points[i + 1]
    f = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
    return max(y0 + f * (y1 - y0), 0.05 * y0)
