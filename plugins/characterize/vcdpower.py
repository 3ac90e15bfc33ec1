"""Power straight from a gate-level VCD and the liberty's tables: an independent check of OpenSTA's figure.

OpenSTA 2.0.17's ``report_power`` takes the pin activities we annotate from the VCD, but it propagates its
own activities through the cells for their output transitions, seeded with the vectorless default
(``set_power_activity -input``). Where a design's registers hold through feedback multiplexers the two
disagree: a vector queue with every input held and every annotated pin at zero activity still reads 57 %
of its power as combinational internal power, and a registered int8 MAC on random operands reads 64.8 pJ
per cycle with the default at 0.5 and 21.7 pJ with it at 0 (docs/technology.md, "Checking OpenSTA").

This module prices what the simulation did, cell by cell, as a time-based power tool does in zero-delay
mode: every toggle of a cell's output costs the liberty's internal energy for that output (the mean of its
``rise_power``/``fall_power`` tables over the related input pins, at the net's load and a nominal input
slew) plus the switching of the net's load (C V^2 / 2); every toggle of an input pin that has its own
(``passive``) internal power costs that (a flip-flop's clock pin, twice a cycle); leakage is the cells'
``cell_leakage_power``. It needs no propagation, so nothing is seeded: an idle design costs its clock.
"""

from __future__ import annotations

import bisect
import functools
import re
from pathlib import Path
from typing import Any

import attrs

from .liberty import is_register, parse_liberty_pins
from .scripts import _unescape
from .vcd import VcdActivity

SLEW_NS = 0.1       # nominal input transition for the table lookups (the liberty's tables start at 0.005-0.06)


@attrs.frozen
class Table:
    """A liberty lookup table: values over one or two indices (``vars`` names what each index is)."""

    vars: tuple[str, ...]
    index: tuple[tuple[float, ...], ...]
    values: tuple[tuple[float, ...], ...]

    def at(self, **point: float) -> float:
        def locate(ax, x):
            if len(ax) == 1:
                return 0, 0, 0.0
            j = min(max(bisect.bisect_right(ax, x) - 1, 0), len(ax) - 2)
            t = (x - ax[j]) / (ax[j + 1] - ax[j])
            return j, j + 1, min(max(t, 0.0), 1.0)    # no extrapolation beyond the table
        xs = [point.get(v, 0.0) for v in self.vars]
        if len(self.index) == 1:
            i0, i1, t = locate(self.index[0], xs[0])
            row = self.values[0]
            return row[i0] * (1 - t) + row[i1] * t
        i0, i1, t = locate(self.index[0], xs[0])
        j0, j1, u = locate(self.index[1], xs[1])
        v = self.values
        return ((v[i0][j0] * (1 - u) + v[i0][j1] * u) * (1 - t) + (v[i1][j0] * (1 - u) + v[i1][j1] * u) * t)


@attrs.frozen
class CellPower:
    leakage_nw: float
    # output pin -> [(rise table, fall table) per related input pin]
    arcs: dict[str, list[tuple[Table | None, Table | None]]]
    # input pin -> (rise table, fall table) of its own internal energy
    passive: dict[str, tuple[Table | None, Table | None]]


def _groups(text: str):
    """A liberty file as nested groups: (kind, name, attributes, children)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S).replace("\\\n", " ")
    tok = re.compile(r'\s*(?:(\w+)\s*\(([^)]*)\)\s*\{|(\w+)\s*:\s*("[^"]*"|[^;]*?)\s*;|(\w+)\s*\(([^)]*)\)\s*;|(\}))')
    root: tuple[str, str, dict[str, Any], list] = ("", "", {}, [])
    stack = [root]
    pos = 0
    while True:
        m = tok.match(text, pos)
        if not m:
            break
        pos = m.end()
        if m.group(1):
            g = (m.group(1), m.group(2).strip().strip('"'), {}, [])
            stack[-1][3].append(g)
            stack.append(g)
        elif m.group(3):
            stack[-1][2][m.group(3)] = m.group(4).strip('"')
        elif m.group(5):
            args = m.group(6)
            stack[-1][2][m.group(5)] = re.findall(r'"([^"]*)"', args) if '"' in args else \
                [a.strip() for a in args.split(",")]
        elif m.group(7) and len(stack) > 1:
            stack.pop()
    return root


def _floats(s: str) -> tuple[float, ...]:
    return tuple(float(x) for x in re.split(r"[,\s]+", s.strip()) if x)


def _table(group, templates: dict[str, tuple[str, ...]]) -> Table:
    _kind, name, attrs_, _ = group
    variables = templates.get(name, ("input_transition_time",))
    idx = tuple(_floats(attrs_[f"index_{i + 1}"][0]) for i in range(len(variables)) if f"index_{i + 1}" in attrs_)
    vals = tuple(_floats(v) for v in attrs_["values"])
    return Table(variables[:len(idx)], idx, vals)


def parse_liberty_power(text: str) -> dict[str, CellPower]:
    """Every cell's internal-energy tables and leakage (energies in the library's units: pJ for pF and V)."""
    root = _groups(text)
    lib = next(g for g in root[3] if g[0] == "library")
    templates = {g[1]: tuple(g[2][k] for k in ("variable_1", "variable_2") if k in g[2])
                 for g in lib[3] if g[0] in ("power_lut_template", "lu_table_template")}
    cells: dict[str, CellPower] = {}
    for c in (g for g in lib[3] if g[0] == "cell"):
        arcs: dict[str, list] = {}
        passive: dict[str, tuple] = {}
        for p in (g for g in c[3] if g[0] == "pin"):
            for ip in (g for g in p[3] if g[0] == "internal_power"):
                tabs = {g[0]: _table(g, templates) for g in ip[3] if g[0] in ("rise_power", "fall_power")}
                pair = (tabs.get("rise_power"), tabs.get("fall_power"))
                if p[2].get("direction") == "output":
                    arcs.setdefault(p[1], []).append(pair)
                else:
                    passive[p[1]] = pair
        cells[c[1]] = CellPower(float(c[2].get("cell_leakage_power", 0.0)), arcs, passive)
    return cells


def cell_outputs(text: str, pins: dict[str, dict[str, dict[str, Any]]]) -> list[tuple[str, str, str, str]]:
    """(instance, cell, output pin, net) of every cell output in a flat netlist."""
    inst_re = re.compile(r"^\s*([A-Za-z_]\w*)\s+(\\\S+|[A-Za-z_][\w$]*)\s*\((.*?)\)\s*;", re.S | re.M)
    conn_re = re.compile(r"\.(\w+)\s*\(\s*((?:\\\S+\s)|[^()]*?)\s*\)")
    out = []
    for m in inst_re.finditer(text):
        ctype = m.group(1)
        if ctype not in pins:
            continue
        for pin, expr in conn_re.findall(m.group(3)):
            net = _unescape(expr)
            if net and pins[ctype].get(pin, {}).get("direction") == "output":
                out.append((_unescape(m.group(2)), ctype, pin, net))
    return out


def vcd_energy_per_cycle(vcd: VcdActivity, netlist, outputs, pins, power: dict[str, CellPower], vdd: float,
                         clock: str = "clk", slew_ns: float = SLEW_NS) -> dict[str, Any]:
    """Energy per clock cycle (pJ) of a gate netlist from its VCD, in report_power's shape: per group
    (``sequential``, ``combinational``) and ``total``, each {internal, switching, leakage, total}: internal
    (cell outputs and passive input pins), switching (load capacitance) and leakage over the dump's span."""
    cycles = vcd.cycles(clock)
    if cycles <= 0:
        raise ValueError(f"the VCD has no toggles of the clock '{clock}'")

    def toggles(net: str) -> float:
        rec = vcd.nets.get(net)
        return float(rec.toggles) if rec is not None else 0.0

    # per group (OpenSTA's split: flip-flops and latches "sequential", every other cell "combinational")
    e = {g: {"internal": 0.0, "switching": 0.0, "leakage": 0.0} for g in ("sequential", "combinational")}

    def group(ctype: str) -> dict[str, float]:
        return e["sequential" if is_register(ctype) else "combinational"]
    for _inst, ctype, pin, net in outputs:
        t = toggles(net)
        if not t:
            continue
        load = sum(pins[netlist.cells[i]].get(p, {}).get("capacitance", 0.0) for i, p in netlist.loads.get(net, ()))
        group(ctype)["switching"] += t * 0.5 * load * vdd * vdd
        arcs = power[ctype].arcs.get(pin, [])
        if arcs:
            pt = {"total_output_net_capacitance": load, "input_transition_time": slew_ns}
            rise = sum(r.at(**pt) for r, _f in arcs if r) / len(arcs)
            fall = sum(f.at(**pt) for _r, f in arcs if f) / len(arcs)
            group(ctype)["internal"] += t / 2 * (rise + fall)
    pt = {"input_transition_time": slew_ns}
    for net, loads in netlist.loads.items():
        t = toggles(net)
        if not t:
            continue
        for inst, pin in loads:
            rise, fall = power[netlist.cells[inst]].passive.get(pin, (None, None))
            if rise or fall:
                group(netlist.cells[inst])["internal"] += t / 2 * ((rise.at(**pt) if rise else 0.0)
                                                                    + (fall.at(**pt) if fall else 0.0))
    span_s = (vcd.t_end - vcd.t_start) * vcd.timescale_s
    for c in netlist.cells.values():
        group(c)["leakage"] += power[c].leakage_nw * 1e-9 * span_s * 1e12     # nW x s -> pJ
    out: dict[str, Any] = {g: {k: v / cycles for k, v in d.items()} for g, d in e.items()}
    for g in e:
        out[g]["total"] = sum(out[g].values())
    out["total"] = {k: out["sequential"][k] + out["combinational"][k] for k in out["sequential"]}
    return out


@functools.lru_cache(maxsize=4)
def _library(path: str, mtime: float) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, CellPower]]:
    text = Path(path).read_text()
    return parse_liberty_pins(text), parse_liberty_power(text)


def library_power(tools) -> dict[str, CellPower]:
    """The internal-energy tables of the flow's liberty (parsed once per process and file version)."""
    return _library(str(tools.liberty), Path(tools.liberty).stat().st_mtime)[1]


def library_pins(tools) -> dict[str, dict[str, dict[str, Any]]]:
    """The flow's liberty pins (``liberty.parse_liberty_pins``), parsed once per process and file version:
    every structure state and every replayed PE or module asks for them."""
    return _library(str(tools.liberty), Path(tools.liberty).stat().st_mtime)[0]
