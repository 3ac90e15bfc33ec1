"""What a run's datapath accesses moved at each memory level: the counts and element bits hlsim reports, the
whole words behind them (bandwidth and energy), and the bits that pass the PE register file.

Split from the profiler so that the rule for one access (PE-array multicast and reuse, whole SRAM words for a
scalar access, a value the statement before loaded) sits in one place."""

from __future__ import annotations

from collections import Counter

import attrs
from llmulator.words import access_bits


@attrs.define
class AccessTally:
    arch: object
    # level -> [reads, read bits, writes, write bits] (elements; the tile transfers join them later)
    acc_bits: dict[str, list[float]]
    # level -> the bits its datapath accesses price directly: elements, and the whole-word rest of scalar ones
    elem: Counter = attrs.field(factory=Counter)
    # level -> [read, write] bits of the whole SRAM words scalar accesses take beyond their elements
    pad: dict[str, list[float]] = attrs.field(factory=dict)
    touched: set[tuple[str, bool]] = attrs.field(factory=set)   # (array, written) the run accessed
    loads: float = 0.0    # bits the operations loaded and stored (they pass the PE register file)
    stores: float = 0.0

    @classmethod
    def new(cls, arch) -> AccessTally:
        return cls(arch, {lv.name: [0.0, 0.0, 0.0, 0.0] for lv in arch.memory},
                   pad={lv.name: [0.0, 0.0] for lv in arch.memory})

    def access(self, d, folds: dict, site, st, k: int, a, c: float, level_bits: Counter,
               share: tuple[float, float] = (1.0, 1.0)) -> None:
        """Count access ``k`` of statement ``st`` run ``c`` times at ``site``; add the bits its level's
        bandwidth carries to ``level_bits`` (the nest's). ``share``: the fractions of its reads and writes that
        move memory where the copies of an unrolled body share the element (``Timing.copy_shares``)."""
        self.touched.add((a.array, a.is_write))
        # (not a value the run's statement before loaded or stored; of the rest, the share an earlier copy did not)
        read = (a.is_read and k not in st.reused) * share[0]
        # (not a store the run's next store, or the next copy's, overwrites unread)
        write = (a.is_write and k not in st.dead_stores) * share[1]
        lv, bits = d.placement(a.array), d.workload.arrays[a.array].bits
        n, words = c, 1.0
        if site.region_id is not None and site.region_id in folds:
            # PE-array operands: multicast along spatial loops the index does not use, register reuse over
            # the innermost temporal loops that do not use it; the buffer moves the words that hold them
            # (llmulator.words; the rest of those words: the profiler's pad_bits)
            mcast, reuse = folds[site.region_id]["reuse"].get(a.array, (1.0, 1.0))
            n = c / (mcast * reuse)
            words = folds[site.region_id]["words"].get(a.array, 1.0)
        else:
            # a scalar access takes its SRAM port for whole words (llmulator.words.access_bits, hlsim 0.35)
            rest = n * (access_bits(self.arch.level(lv), bits) - bits)
            self.pad[lv][0] += rest * read
            self.pad[lv][1] += rest * write
            self.elem[lv] += rest * (read + write)
            level_bits[lv] += rest * (read + write)
        self.elem[lv] += n * bits * (read + write)
        if read:
            self.acc_bits[lv][0] += n * read
            self.acc_bits[lv][1] += n * bits * read
            level_bits[lv] += n * bits * words * read
            self.loads += c * bits * read
        if write:
            self.acc_bits[lv][2] += n * write
            self.acc_bits[lv][3] += n * bits * write
            level_bits[lv] += n * bits * words * write
            self.stores += c * bits * write


def count_ops(total: Counter, nest: Counter, ops: dict[str, float], times: float) -> None:
    """Add ``ops`` (operator class -> executions) run ``times`` times to the run's and its nest's totals."""
    for k, v in ops.items():
        total[k] += v * times
        nest[k] += v * times
