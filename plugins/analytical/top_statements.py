"""What a top-level statement (outside every loop, run once) costs the analytical model: its operations,
its accesses and its elements' trips to and from the backing store, as hlsim charges the statements a run
executed (plugins/hlsim/profiler.py).

A top-level ``if`` runs one side: each side's statements count with the branch's taken probability
(``Design.branch_probability``), and its condition always. The tile transfers are not linear in the
statements (an element read on both sides moves once), so they are priced per *scenario*: one set of
statements per combination of sides, with its probability. A loop under such an ``if`` (a table built once:
``if (have_table == 0) { L_tab: for (...) ... }``) is a nest of its own, counted with the probability of
reaching it: its operations, accesses and tile transfers (``loops``). Before analytical 0.45 the statements
and loops under a top-level ``if`` counted their cycles only: no operation, no access and no word from DRAM.
"""

from __future__ import annotations

from itertools import product

from llmulator import dataflow_tasks, traffic, transfers
from llmulator.design import Design
from llmulator.errors import UserError
from llmulator.words import access_bits, moved_bits

from . import model

MAX_SCENARIOS = 1024  # beyond this many combinations of sides, each side's transfers count on their own


def _probability(d: Design, site) -> float:
    br = next((n for n in d.tree.walk() if getattr(n, "kind", "") == "branch" and site.stmts
               and n.cond is site.stmts[0]), None)
    return d.branch_probability(br)[0] if br is not None else 0.5


def weighted(d: Design, sites, weight: float = 1.0) -> list[tuple[object, float]]:
    """(statement, probability that it runs) for every statement of the sites, branch conditions included."""
    out = []
    for s in sites:
        if s.kind == "block":
            out.extend((st, weight) for st in s.stmts)
        elif s.kind == "cond":
            out.extend((st, weight) for st in s.stmts)
            p = _probability(d, s)
            out += weighted(d, s.children, weight * p) + weighted(d, s.orelse, weight * (1 - p))
    return out


def scenarios(d: Design, sites) -> list[tuple[float, list]] | None:
    """(probability, statements run) for each combination of branch sides; None past MAX_SCENARIOS."""
    out: list[tuple[float, list]] = [(1.0, [])]
    for s in sites:
        if s.kind == "block":
            alts = [(1.0, list(s.stmts))]
        elif s.kind == "cond":
            p = _probability(d, s)
            then, orelse = scenarios(d, s.children), scenarios(d, s.orelse)
            if then is None or orelse is None:
                return None
            alts = [(p * q, list(s.stmts) + st) for q, st in then] + \
                   [((1 - p) * q, list(s.stmts) + st) for q, st in orelse]
        else:
            continue
        out = [(p1 * p2, a + b) for (p1, a), (p2, b) in product(out, alts) if p1 * p2 > 0]
        if len(out) > MAX_SCENARIOS:
            return None
    return out


def count(d: Design, sites, ops: dict[str, float], traffic_total: dict[str, float]) -> tuple[float, float]:
    """Add the expected operations and array accesses of a top-level statement to ``ops`` and
    ``traffic_total``; returns the bits it loads and stores. Each access costs the level its array is placed
    in, as hlsim charges it (``o1[0] = a0[0]`` before a loop: one read of a0's level, one write of o1's);
    arrays declared in the kernel are registers here."""
    loads = stores = 0.0
    for st, w in weighted(d, sites):
        for key, v in d.stmt_ops(st).items():
            ops[key] = ops.get(key, 0.0) + v * w
        for acc in st.accesses:
            spec = d.workload.arrays.get(acc.array)
            if spec is None:
                continue
            lv = d.placement(acc.array)
            rest = access_bits(d.arch.level(lv), spec.bits) - spec.bits   # whole SRAM words (hlsim's rule)
            for kind, hit in (("read", acc.is_read), ("write", acc.is_write)):
                if hit:
                    for key, v in ((f"{kind}s", 1.0), (f"{kind}_bits", spec.bits), (f"pad_{kind}_bits", rest)):
                        traffic_total[f"{key}.{lv}"] = traffic_total.get(f"{key}.{lv}", 0.0) + v * w
            loads += spec.bits * acc.is_read * w
            stores += spec.bits * acc.is_write * w
    return loads, stores


def moved(d: Design, sites) -> tuple[float, dict[str, list[float]]]:
    """Expected transfer cycles and (reads, read bits, writes, write bits) per level of a top-level
    statement's elements (``llmulator.transfers.statement_transfers`` over its scenarios)."""
    cases = scenarios(d, sites)
    if cases is None:  # too many combinations: each statement's elements on their own, weighted
        cases = [(w, [st]) for st, w in weighted(d, sites)]
    cycles = 0.0
    out: dict[str, list[float]] = {}
    for p, stmts in cases:
        c, mv = transfers.statement_transfers(d, stmts)
        cycles += p * c
        for lv, vals in mv.items():
            acc = out.setdefault(lv, [0.0, 0.0, 0.0, 0.0])
            for i, v in enumerate(vals):
                acc[i] += p * v
    return cycles, out


def cycles(d: Design, sites, compute: float, own_traffic: dict[str, float], loop_transfer: float = 0.0,
           loop_exposed: float = 0.0) -> tuple[float, float]:
    """A top-level statement's cycles with its elements' trips to and from the backing store (added to
    ``own_traffic``), and its loops' tile transfers (``loop_transfer``), as hlsim charges them; and the part of
    them its issuing lengthens (``llmulator.dataflow_tasks.issuing_span``)."""
    transfer, mv = moved(d, sites)
    transfer += loop_transfer
    for lv, (r, rb, wr, wb) in mv.items():
        for key, v in (("reads", r), ("read_bits", rb), ("writes", wr), ("write_bits", wb)):
            own_traffic[f"{key}.{lv}"] = own_traffic.get(f"{key}.{lv}", 0.0) + v
    bw = max(traffic.level_cycles(d, lv, moved_bits(own_traffic, lv.name)) for lv in d.arch.memory)
    # the statement's own elements are exposed whole: no other work overlaps them (hlsim's ``ran_transfers``)
    exposed = loop_exposed + transfer - loop_transfer
    return (float(traffic.nest_time(d, compute, transfer, bw, exposed)),
            float(dataflow_tasks.issuing_span(d, compute, transfer, exposed)))


def reached(d: Design, sites, weight: float = 1.0) -> dict[str, float]:
    """The loops at the top of a top-level statement's branches (kernel label -> probability of reaching it)."""
    out: dict[str, float] = {}
    for s in sites:
        if s.kind in ("loop", "region") and s.loop and d.tree.loops[s.loop].parent is None:
            out[s.loop] = max(out.get(s.loop, 0.0), weight)
        elif s.kind == "cond":
            p = _probability(d, s)
            for side, w in ((s.children, weight * p), (s.orelse, weight * (1 - p))):
                for label, v in reached(d, side, w).items():
                    out[label] = out.get(label, 0.0) + v
    return out


def loops(d: Design, sites, ops: dict[str, float], traffic_total: dict[str, float], shares: dict | None = None
          ) -> tuple[float, float, float, float]:
    """Add the expected operations and traffic (datapath and tile transfers) of the loops under a top-level
    statement's branches; returns (transfer cycles, loaded bits, stored bits, the transfer cycles double
    buffering cannot hide: the first tiles in, the last out, as hlsim's ``ran_transfers``)."""
    transfer = loads = stores = exposed = 0.0
    for label, w in reached(d, sites).items():
        nest = traffic.nest_of(d, d.tree.loops[label], shares)
        maps = traffic.mappings_from_design(d, nest)
        if bool((maps.spatial > 0).any()):
            raise UserError(f"loop {label} is under an `if` outside every loop and bound to the PE array: a PE-array "
                            "nest must run unguarded (move the condition inside the nest, or out of the kernel)")
        for key, v in nest.ops.items():
            ops[key] = ops.get(key, 0.0) + v * w
        for key, v in model.memory_traffic(d, nest, maps, False, None).items():
            if key == "transfer_cycles":
                transfer += float(v[0]) * w
            elif key == "exposed_cycles":
                exposed += float(v[0]) * w
            else:
                traffic_total[key] = traffic_total.get(key, 0.0) + float(v[0]) * w
        loads += nest.load_bits * w
        stores += nest.store_bits * w
    return transfer, loads, stores, exposed
