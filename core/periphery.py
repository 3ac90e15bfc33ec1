"""The buffer periphery of a systolic PE array: the register storage of the memory system around the
banked buffer, priced with the measured vector-queue bit (technology tables with ``structures.queue_bit``).

The rtl profiler's PE-array designs (plugins/rtl) feed the array through a memory system that a
memory level's per-access energy and macro area do not describe: an operand engine per stream (a
return ring of ``latency + RING_EXTRA`` vector slots, a one-word line and its tag per lane, a delay line
carrying each issued vector's context through the bank latency), a writer (a word per lane being
combined), the output queue (``FIFO_DEPTH`` vectors) and the arbiter's return path. Synthesised, it is
most of the logic (docs/rtl-crosscheck.md: 3-10x the PE array's area at 2x2-8x8), and almost all of it
is flip-flops and their multiplexers: the storage bits below, the same registers the generator declares
(``tests/test_periphery.py`` counts them in its Verilog).

* area: storage bits x the queue bit's area (a stored bit with its write enable, its share of the read
  multiplexer and the pointers);
* energy: storage bits x cycles x the queue bit's ``idle_energy_pj`` (the clock of every flip-flop,
  every cycle: no clock gating) + the bits that pass through a ring or the output queue (each operand
  element the array consumes, each output vector it produces) x its ``energy_pj``.

The crossbar between the requests and the bank ports (combinational AND-OR selection) is priced by its
area alone: its crosspoints x the measured crosspoint of each side (``xbar_in``, ``xbar_out``); its energy
follows which port each lane last took and how often that port reads, which no per-crosspoint figure
captured (docs/rtl-crosscheck.md, "The buffer module"), so it has no energy term.

Not counted: the loop-nest walkers' counters in each engine, the lane address arithmetic, the arbiter's
grant logic and the crossbar's energy; a line register's load is charged its clock only.
docs/technology.md ("Buffer periphery") shows the model against the synthesised modules.

The term applies where llmulator.pecost's measured PE applies and llmulator.pearray can plan the design
(the designs the rtl profiler generates); elsewhere it is absent and nothing changes.
"""

from __future__ import annotations

import weakref
from typing import Any

import attrs
import numpy as np

from . import tech
from .banks import FIFO_DEPTH, RING_EXTRA
from .errors import UserError


def _clog2(n: int) -> int:
    return max(1, (max(n, 1) - 1).bit_length())


@attrs.frozen
class Periphery:
    """Storage bits by part (engine or queue) and the bits that pass through a ring or the output queue; the
    buffers' crossbar crosspoints by side (``xin``: bank-port selects, ``xout``: read-data selects) and the
    table's crosspoint entries (empty where the table has none)."""

    bits: dict[str, int]
    moved: dict[str, float]        # part -> bits that pass through it over the run
    entry: dict[str, Any]
    crosspoints: dict[str, int] = attrs.field(factory=dict)
    xbar: dict[str, dict[str, Any]] = attrs.field(factory=dict)   # side -> the table's crosspoint entry

    def crossbar_area_um2(self) -> float | None:
        """The crossbar's logic: crosspoints x the measured area per crosspoint of that side; None where the
        table has no crossbar entries."""
        if not self.xbar or any(side not in self.xbar for side in self.crosspoints):
            return None
        return sum(n * float(self.xbar[side]["area_um2"]) for side, n in self.crosspoints.items())

    @property
    def storage_bits(self) -> int:
        return sum(self.bits.values())

    @property
    def moved_bits(self) -> float:
        return sum(self.moved.values())

    def part_energy_pj(self, part: str, cycles: float) -> float:
        """One part's share of ``energy_pj`` (its stored bits' clock and the bits that pass through it)."""
        return (self.bits[part] * float(cycles) * float(self.entry.get("idle_energy_pj", 0.0))
                + self.moved.get(part, 0.0) * float(self.entry["energy_pj"]))

    def area_um2(self) -> float:
        return self.storage_bits * float(self.entry["area_um2"])

    def energy_pj(self, cycles: np.ndarray) -> np.ndarray:
        cycles = np.asarray(cycles, dtype=float)
        return (self.storage_bits * cycles * float(self.entry.get("idle_energy_pj", 0.0))
                + self.moved_bits * float(self.entry["energy_pj"]))


def engine_bits(plan, lay, kind: str) -> int:
    """Register bits of one operand engine of the rtl profiler (plugins/rtl/control.py and writer.py):
    ``kind`` rd_S, rd_X, rd_Y, old (readers) or wr (the writer), walker counters left out."""
    role = {"rd_S": "S", "rd_X": "X", "rd_Y": "Y", "old": "O", "wr": "O"}[kind]
    op = plan.operands[role]
    pl = lay.placed[role]
    lv = lay.levels[pl.level]
    NL = plan.A if role == "X" else plan.B
    EB, W, Lt = op.bits, lv.width, lv.latency
    log = _clog2(pl.epw) if pl.epw > 1 else 0
    OW, IW = max(log, 1), _clog2(NL)
    AW = max(_clog2(lv.used_words * pl.epw + 1) + 2, 8)
    if kind == "wr":
        # active, fph, vm; the vector being merged; per lane: the word's tag, valid, data, mask and fold
        return 2 + 32 + NL * EB + 1 + NL * (AW + 1 + W + W // 8 + 32)
    S = Lt + RING_EXTRA
    SW = _clog2(S)
    ring = S * NL * EB + S + (SW + 1) + 2 * SW                 # slots, ready flags, count, head, issue pointer
    lines = NL * (AW + 1 + W)                                  # per lane: the line's word address, valid, data
    ctx = Lt * (2 + SW + NL + NL * IW + NL * OW + NL)        # the issued vector's context through the latency
    return 1 + NL + ring + lines + ctx                         # active, the lanes' grant flags


def level_requests(plan, level: str) -> tuple[int, int]:
    """(requesting lanes, of which the writer's) at one buffer level of the rtl profiler's memory system
    (plugins/rtl/datapath.level_requests): a lane per stream element, the output's lanes twice (the writer and
    the old-output reader)."""
    lanes = {"S": plan.B, "X": plan.A, "Y": plan.B, "O": plan.B}
    on = [r for r, o in plan.operands.items() if o.level == level]
    return sum(lanes[r] * (2 if r == "O" else 1) for r in on), (lanes["O"] if "O" in on else 0)


def xin_crosspoints(requests: int, writers: int, addr_bits: int, width: int) -> int:
    """Select inputs x bits of one bank port's ``xin`` (datapath.xbar_modules): every request's address, and
    every writer lane's data and byte mask."""
    return requests * addr_bits + writers * (width + width // 8)


def xout_crosspoints(bank_ports: int, width: int) -> int:
    """Select inputs x bits of one reading lane's ``xout``: a word of every bank port."""
    return bank_ports * width


def periphery_bits(plan, lay) -> dict[str, int]:
    """Storage bits of the memory system the rtl profiler generates for ``plan`` placed by ``lay``."""
    engines = ["wr", "old"] + [e for e, r in (("rd_S", "S"), ("rd_X", "X"), ("rd_Y", "Y")) if r in plan.operands]
    out = {e: engine_bits(plan, lay, e) for e in engines}
    aw = _clog2(FIFO_DEPTH)
    out["out_queue"] = FIFO_DEPTH * plan.B * plan.operands["O"].bits + 2 * aw + aw + 1
    for name, lv in lay.levels.items():
        # the arbiter's return path: per requesting lane, which bank and port served it, through the latency
        n = level_requests(plan, name)[0]
        out[f"buf_{name}"] = n * lv.latency * (1 + _clog2(lv.banks) + _clog2(lv.ports + 1) + 1) + 64
    return out


def crossbar_crosspoints(plan, lay) -> dict[str, int]:
    """Crosspoints (a select input x a bit) of the buffers' crossbar the rtl profiler generates
    (plugins/rtl/datapath.buffer_module): per bank port an ``xin`` over every request's row address and the
    writer lanes' data and byte mask; per reading lane an ``xout`` over every bank port's word."""
    out = {"xin": 0, "xout": 0}
    for name, lv in lay.levels.items():
        nreq, nwr = level_requests(plan, name)
        ports = lv.banks * lv.ports
        out["xin"] += ports * xin_crosspoints(nreq, nwr, _clog2(lv.depth), lv.width)
        out["xout"] += (nreq - nwr) * xout_crosspoints(ports, lv.width)
    return out


def moved_bits(plan) -> dict[str, float]:
    """Bits that pass through each return ring and the output queue over the run: every operand element
    the array consumes (the stationary operand once per fold and PE; a stream element per step and lane)
    and every output twice (the old value read back by ``old``, the sum queued for the writer)."""
    o = plan.operands
    steps = plan.total_stream_steps()
    folds = plan.fold_count()
    out = {"rd_X": float(steps * plan.A * o["X"].bits)}
    if plan.shape == "psum":
        out["rd_S"] = float(folds * plan.A * plan.B * o["S"].bits)
        outs = steps * plan.B
    else:
        out["rd_Y"] = float(steps * plan.B * o["Y"].bits)
        outs = folds * plan.A * plan.B
    out["old"] = out["out_queue"] = float(outs * o["O"].bits)
    return out


_MEMO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # design -> Periphery | None (area and energy ask)


def periphery_cost(design) -> Periphery | None:
    """The buffer periphery of a design whose PE array the measured structures price, or None."""
    try:
        return _MEMO[design]
    except (KeyError, TypeError):
        pass
    out = _periphery_cost(design)
    try:
        _MEMO[design] = out
    except TypeError:
        pass
    return out


def _periphery_cost(design) -> Periphery | None:
    from .pecost import pe_cost
    structures = tech.table(design.arch.technology).get("structures") or {}
    entry = (structures.get("queue_bit") or {}).get("bit")
    if entry is None or pe_cost(design) is None:
        return None
    from .buflayout import layout
    from .pearray import make_plan
    try:
        plan = make_plan(design)
        lay = layout(design, plan, fit=False)
    except (UserError, ValueError, KeyError):
        return None       # not a design the profiler generates: no periphery to price
    xbar = {side: e for side, e in (("xin", (structures.get("xbar_in") or {}).get("crosspoint")),
                                     ("xout", (structures.get("xbar_out") or {}).get("crosspoint"))) if e}
    return Periphery(periphery_bits(plan, lay), moved_bits(plan), entry, crossbar_crosspoints(plan, lay), xbar)
