"""The accesses each bank of a partitioned array serves when a very large unrolled region runs a statement per copy.

Why: a region too large to schedule node by node (``timing.Timing._bound``) is priced by its busiest resource, and
until hlsim 0.58 that counted an array's accesses against all its banks together, as if they spread evenly. An
outside probe found the two ways that breaks a physical bound: `y[k] = x[8 * k]` unrolled 1,400 times over a
cyclic-8 partition puts every read on bank 0 (1,400 reads on one port: at least 1,400 cycles, where 242 were
reported, and 1,055 at 1,000 copies, below the size limit), and a dynamic index (`x[idx[k]]`) takes a port of every
bank (II K, where K / 8 was reported). Here each copy's bank is found as the node-by-node schedule finds it
(``schedule.GraphBuilder``): for a cyclic or complete partition the bank of copy k is ``(b0 + k * delta) mod F``,
counted exactly from the first two copies; a block partition's copy by copy; a dynamic index adds to every bank.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from . import schedule as sch


def _banks(design, array: str) -> int | None:
    """Banks of a cyclic or complete partition (None for a block partition or none at all)."""
    p = design.mapping.partition.get(array)
    if p is None or p.type == "block":
        return None
    return p.factor if p.type == "cyclic" else int(design.workload.shape(array, design.sizes)[p.dim - 1])


def bank_uses(design, st, var: str, step: int, copies: int) -> Counter:
    """Port issues per bank (``mem:ARRAY#BANK``) of ``copies`` copies of statement ``st``, copy k run with the
    region's variable ``var`` at ``k * step``."""
    graphs = []
    for k in (0, 1):
        g = sch.GraphBuilder(design)
        g.env[var] = k * (step or 1)
        g.add_statement(st)
        graphs.append(g.nodes)
    out: Counter = Counter()
    if len(graphs[0]) != len(graphs[1]):
        return out
    star: Counter = Counter()
    for n0, n1 in zip(*graphs, strict=True):
        r0, r1 = n0.resource or "", n1.resource or ""
        if not r0.startswith("mem:") or r0.startswith("mem:@") or "#" not in r0:
            continue
        array, _, b0 = r0[4:].partition("#")
        banks = _banks(design, array)
        if banks is None:
            continue
        if b0 == "*" or not r1.endswith(tuple("0123456789")):
            star[array] += copies * n0.slots  # a dynamic index: a port of every bank, each copy
            continue
        b1 = int(r1.rpartition("#")[2])
        hits = np.bincount((int(b0) + np.arange(copies) * (b1 - int(b0))) % banks, minlength=banks)
        for b in np.flatnonzero(hits):
            out[f"mem:{array}#{b}"] += int(hits[b]) * n0.slots
    _block_uses(design, st, var, step, copies, graphs[0], out, star)
    for array, n in star.items():
        for b in range(_banks(design, array) or _block_banks(design, array)):
            out[f"mem:{array}#{b}"] += n
    return out


def _block_banks(design, array: str) -> int:
    p = design.mapping.partition.get(array)
    return p.factor if p is not None and p.type == "block" else 0


def _block_uses(design, st, var: str, step: int, copies: int, first: list, out: Counter, star: Counter) -> None:
    """A block partition's banks, copy by copy (up to 1,024 copies, an even stride beyond, each standing for the
    stride): a block's bank is not linear in the copy. Before hlsim 0.59 a block partition's banks were counted
    together only: `y[k] = x[k]` unrolled 1,400 times, x in 8 blocks of 1,400, every read in block 0, ran in 242
    cycles where its 1,400 reads of one port need 1,400 (an outside probe)."""
    nodes = [i for i, nd in enumerate(first) if (nd.resource or "").startswith("mem:") and "#" in nd.resource
             and _block_banks(design, nd.resource[4:].partition("#")[0])]
    if not nodes:
        return
    stride = max(1, -(-copies // 1024))
    for k in range(0, copies, stride):
        g = sch.GraphBuilder(design)
        g.env[var] = k * (step or 1)
        g.add_statement(st)
        if len(g.nodes) != len(first):
            return
        for i in nodes:
            array, _, bank = g.nodes[i].resource[4:].partition("#")
            if bank == "*" or not bank.isdigit():
                star[array] += stride * g.nodes[i].slots
            else:
                out[f"mem:{array}#{bank}"] += stride * g.nodes[i].slots


def closed_form_uses(design, body: list, copies: int, loop, trips) -> tuple[Counter, float]:
    """Issues per resource of ``copies`` copies of a region's mapped body (``instrument`` model entries; inner
    loops unrolled ``trips(label, is_tile)`` times): operator classes, a DRAM channel, each array's banks together
    (``mem:ARRAY#all``) and, for a cyclic or complete partition, each bank on its own (``bank_uses``, moving with
    the innermost unrolled loop around each statement; its outer copies take the same banks, as the symbolic part
    of a subscript is taken as bank-aligned everywhere); and the issues, each counted once."""
    uses: Counter = Counter()
    per_bank: Counter = Counter()

    def count(model, mult: float, moving, n: int):
        for e in model:
            if e[0] in ("stmt", "branch") and e[1] is not None:
                g = sch.GraphBuilder(design)
                g.add_statement(e[1])
                for nd in g.nodes:
                    if nd.resource is not None:
                        r = nd.resource
                        r = r if r.startswith(("op:", "mem:@")) else r.split("#", 1)[0] + "#all"
                        uses[r] += mult * nd.slots
                if moving is not None and moving.var is not None and moving.step_op == "+" and n >= 1:
                    for r, u in bank_uses(design, e[1], moving.var, moving.step, n).items():
                        per_bank[r] += u * mult / n
            if e[0] == "branch":
                count(e[2] + e[3], mult, moving, n)
            elif e[0] == "loop":
                k = math.ceil(trips(e[1], e[2]))
                inner = design.tree.loops.get(e[1]) if not e[2] else None
                count(e[3], mult * k, inner if inner is not None else moving, int(k) if inner is not None else n)

    count(body, float(copies), loop, int(copies))
    issues = sum(uses.values())
    uses.update(per_bank)
    return uses, issues
