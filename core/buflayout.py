"""Where each operand lives in its buffer: word bases, banks, bank depth.

An array placed on a memory level is stored row-major, ``width_bits / element bits`` elements per
word (elements never straddle words), words interleaved over the level's banks (word ``w`` is at
row ``w // banks`` of bank ``Level.bank_of(w)``: ``w % banks`` with its higher address bits XORed in,
the usual bank hash that keeps strided vectors off a single bank). Arrays follow each other
word-aligned in the order of the plan's roles. The bank depth is the level's capacity, as the spec
states it; the plan is refused when the operands do not fit.
"""

from __future__ import annotations

import math

import attrs

from .design import Design
from .errors import SpecUnsupported
from .pearray import Plan
from .yamlsrc import SourceMap

ROLE_ORDER = ("S", "X", "Y", "O")


@attrs.frozen
class Level:
    name: str
    width: int          # bits per word
    banks: int
    ports: int
    latency: int        # read latency in cycles (at least 1: a registered memory)
    depth: int          # words per bank (the spec's capacity)
    used_words: int
    read_pj: float      # spec energy per word access (technology-table defaults where the file has none)
    write_pj: float
    capacity_bits: float
    area_um2: float     # the spec's (or table's) area of the whole level

    def bank_of(self, w: int) -> int:
        """Bank of word ``w``: with a power-of-two number of banks, the XOR of its address bits in groups
        of log2(banks) (so words a power-of-two stride apart, a row of an array or a plane of a tensor,
        fall in different banks instead of one); otherwise ``w % banks``."""
        nb = self.banks
        if nb == 1 or nb & (nb - 1):
            return w % nb
        b, lb = 0, nb.bit_length() - 1
        while w:
            b ^= w & (nb - 1)
            w >>= lb
        return b

    def word_at(self, bank: int, row: int) -> int:
        """The word at ``row`` of ``bank`` (every bank holds one word of each group of ``banks``
        consecutive words: row ``w // banks``)."""
        nb = self.banks
        if nb == 1 or nb & (nb - 1):
            return row * nb + bank
        return row * nb + (bank ^ self.bank_of(row * nb))


@attrs.frozen
class Placed:
    role: str
    level: str
    base_word: int
    epw: int            # elements per word
    words: int


@attrs.frozen
class Layout:
    levels: dict[str, Level]
    placed: dict[str, Placed]   # by role


def _width_error(d: Design, level: str, what: str, expected: str) -> SpecUnsupported:
    """A buffer word the generated PE-array datapath cannot split into elements, at the level's width_bits."""
    a = d.arch
    i = a.level_index(level)
    smap = a.source_map or SourceMap("<architecture>")
    return SpecUnsupported(smap.diag(("architecture", "memory", i, "width_bits"),
                                     f"PE-array designs (rtl profiler, bank model): {what}", expected,
                                     "the generated datapath reads whole elements out of each buffer word "
                                     "(docs/rtl.md, 'What it supports')"))


def layout(d: Design, plan: Plan, fit: bool = True) -> Layout:
    """Each operand's place in its level; with ``fit`` a UserError when they do not fit the level (the rtl
    profiler preloads whole arrays; the bank model, llmulator.banks, needs only the word addresses)."""
    placed: dict[str, Placed] = {}
    cursor: dict[str, int] = {}
    levels: dict[str, Level] = {}
    for role in ROLE_ORDER:
        op = plan.operands.get(role)
        if op is None:
            continue
        lv = d.arch.level(op.level)
        if lv.width_bits % op.bits:
            raise _width_error(d, lv.name, f"level {lv.name} is {lv.width_bits} bits wide, not a multiple of "
                                           f"{op.array}'s {op.bits}-bit elements", f"a multiple of {op.bits}")
        epw = lv.width_bits // op.bits
        if epw & (epw - 1):
            raise _width_error(d, lv.name, f"level {lv.name} holds {epw} elements of {op.array} per word; the "
                                           "generated address logic needs a power of two",
                               f"{op.bits} bits x a power of two")
        words = math.ceil(op.elems / epw)
        base = cursor.get(lv.name, 0)
        placed[role] = Placed(role, lv.name, base, epw, words)
        cursor[lv.name] = base + words
    for name, used in cursor.items():
        lv = d.arch.level(name)
        cap_bits = lv.capacity_bits * max(lv.instances, 1)
        total_words = int(cap_bits // lv.width_bits) if math.isfinite(cap_bits) else used
        if fit and used > total_words:  # at the level's capacity_kib since an outside probe found no line
            smap = d.arch.source_map or SourceMap("<architecture>")
            raise SpecUnsupported(smap.diag(
                ("architecture", "memory", d.arch.level_index(name), "capacity_kib"),
                f"rtl: the operands on {name} need {used} words of {lv.width_bits} bits; the level holds "
                f"{total_words} (capacity_kib {lv.capacity_kib} x {lv.instances} instance(s)): the rtl profiler "
                "preloads whole arrays (hlsim moves tiles, so it prices this design)",
                f"at least {used * lv.width_bits / 8192:g} KiB", "raise capacity_kib or profile with hlsim"))
        depth = max(1, math.ceil(total_words / lv.banks))
        levels[name] = Level(name, lv.width_bits, lv.banks, lv.ports, max(1, lv.latency_cycles), depth, used,
                             lv.read_energy_pj, lv.write_energy_pj, cap_bits, lv.area_um2 * max(lv.instances, 1))
    return Layout(levels, placed)
