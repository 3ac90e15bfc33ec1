"""Sampling hardware variations and mapping primitives around a design (stages 2 and 3)."""

from __future__ import annotations

import copy
import hashlib
import json
from types import SimpleNamespace
from typing import Any

import numpy as np
from llmulator.kernel import LoopTree
from llmulator.reduction_legality import illegal_tree


def choice(rng: np.random.Generator, items):
    return items[int(rng.integers(len(items)))]


def perturb_architecture(rng: np.random.Generator, arch: dict[str, Any], strength: float = 1.0) -> dict[str, Any]:
    """A hardware variant around a library architecture: PE array, buffers, banks, ports, bandwidth,
    operator counts and latencies, clock."""
    a = copy.deepcopy(arch)
    if rng.random() < 0.5 * strength:
        a["clock_mhz"] = float(a["clock_mhz"]) * choice(rng, [0.5, 0.75, 1.5, 2.0])
    pe = a["compute"].get("pe_array")
    if pe is not None and rng.random() < 0.5 * strength:
        pe["rows"] = int(choice(rng, [4, 8, 12, 16, 32]))
        pe["cols"] = int(choice(rng, [4, 8, 14, 16, 32]))
        if "mac" in a["compute"]["operators"]:
            a["compute"]["operators"]["mac"]["count"] = pe["rows"] * pe["cols"]
    for name, op in a["compute"]["operators"].items():
        if pe is not None and name == "mac":
            continue
        if rng.random() < 0.4 * strength:
            op["count"] = max(1, int(op["count"] * choice(rng, [0.25, 0.5, 2, 4])))
        if rng.random() < 0.3 * strength and "latency_cycles" in op:
            low = 0 if name == "select" else 1
            op["latency_cycles"] = max(low, op["latency_cycles"] + int(choice(rng, [-1, 1, 2])))
    for lv in a["memory"]:
        if lv["kind"] == "dram":
            if rng.random() < 0.5 * strength and "bandwidth_bytes_per_cycle" in lv:
                bw = float(lv["bandwidth_bytes_per_cycle"])
                lv["bandwidth_bytes_per_cycle"] = bw * choice(rng, [0.25, 0.5, 2, 4])
            if rng.random() < 0.3 * strength:
                lv["latency_cycles"] = max(1, int(lv.get("latency_cycles", 1) * choice(rng, [0.5, 2])))
            continue
        if rng.random() < 0.4 * strength:
            lv["capacity_kib"] = float(lv["capacity_kib"]) * choice(rng, [1, 2, 4])
        if rng.random() < 0.3 * strength:
            lv["banks"] = max(1, int(lv.get("banks", 1) * choice(rng, [0.5, 2])))
        if rng.random() < 0.3 * strength:
            lv["ports"] = int(choice(rng, [1, 2]))
        if rng.random() < 0.3 * strength:
            lv["latency_cycles"] = max(0, int(lv.get("latency_cycles", 1)) + int(choice(rng, [-1, 1])))
        if "bandwidth_bytes_per_cycle" in lv and rng.random() < 0.3 * strength:
            lv["bandwidth_bytes_per_cycle"] = float(lv["bandwidth_bytes_per_cycle"]) * choice(rng, [0.5, 2])
    digest = hashlib.sha1(json.dumps(a, sort_keys=True).encode()).hexdigest()[:8]
    a["name"] = f"{arch['name']}.v{digest}" if a != arch else arch["name"]
    return a


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n) if n % k == 0]


def sample_mapping(rng: np.random.Generator, name: str, workload: dict[str, Any], tree: LoopTree,
                   sizes: dict[str, int], arch: dict[str, Any], trips: dict[str, float],
                   shapes: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """Random but plausible loop primitives, placement and partitioning for one workload."""
    loops: dict[str, dict[str, Any]] = {}
    levels = [lv["name"] for lv in arch["memory"]]
    onchip = [lv["name"] for lv in arch["memory"] if lv["kind"] == "sram"] or levels[-1:]
    placement = {}
    for arr, spec in workload["arrays"].items():
        if spec["role"] == "temp":
            placement[arr] = onchip[0]
        else:
            placement[arr] = onchip[0] if rng.random() < 0.85 else levels[0]
    pe = arch["compute"].get("pe_array")
    tops = tree.top_loops()
    if pe is not None and len(tops) == 1 and rng.random() < 0.8:
        band = tops[0].band()
        inner_ok = all(getattr(n, "kind", "") == "stmt" for n in band[-1].body)
        static = [lp for lp in band if not (lp.data_dependent or lp.is_while or lp.depends_on_outer) and lp.simple]
        if inner_ok and len(static) >= 2 and len(band) == len(tree.loops):
            idx = rng.permutation(len(static))[:2]
            r, c = static[int(idx[0])], static[int(idx[1])]
            for lp, dim, size in ((r, "rows", pe["rows"]), (c, "cols", pe["cols"])):
                n = int(trips[lp.label])
                t = max([k for k in range(1, min(n, size) + 1) if n % k == 0])
                loops[lp.label] = {"tile": t, "spatial": dim}
            rest = [lp for lp in band if lp.label not in loops]
            if rest:
                loops.setdefault(rest[-1].label, {})["pipeline_ii"] = 1
            order = [lp.label for lp in band]
            rng.shuffle(order)
            return {"version": 1, "name": name, "workload": workload["name"], "architecture": arch["name"],
                    "loops": loops, "order": order, "placement": placement}
    for lp in tree.loops.values():
        inner = not _has_inner_loop(lp)  # anywhere below, branches included: pipelining unrolls them
        static = not (lp.data_dependent or lp.is_while)
        n = int(trips[lp.label]) if static else 0
        entry: dict[str, Any] = {}
        if inner and rng.random() < 0.65:
            entry["pipeline_ii"] = int(choice(rng, [1, 1, 1, 2]))
            if static and not lp.depends_on_outer and rng.random() < 0.35:
                divs = [u for u in (2, 4, 8) if n % u == 0 and u < n]
                if divs:
                    entry["unroll"] = int(choice(rng, divs))
        elif inner and static and not lp.depends_on_outer and rng.random() < 0.15:
            divs = [u for u in (2, 4) if n % u == 0 and u < n]
            if divs:
                entry["unroll"] = int(choice(rng, divs))
        if static and lp.simple and not lp.depends_on_outer and lp.perfect_child() is not None and rng.random() < 0.25:
            divs = [t for t in _divisors(n) if t > 1]
            if divs:
                entry["tile"] = int(choice(rng, divs))
        if entry:
            loops[lp.label] = entry
    partition = {}
    for arr, shape in shapes.items():
        if rng.random() < 0.35 and shape[-1] >= 2:
            f = int(choice(rng, [k for k in (2, 4, 8) if k <= shape[-1]] or [2]))
            partition[arr] = {"type": "cyclic", "factor": f, "dim": len(shape)}
    out = {"version": 1, "name": name, "workload": workload["name"], "architecture": arch["name"],
           "loops": loops, "placement": placement}
    if partition:
        out["partition"] = partition
    _overlap_and_regroup(name, tree, out)
    _inner_tiles(name, tree, trips, out)
    return out


def _inner_tiles(name: str, tree: LoopTree, trips: dict[str, float], mapping: dict[str, Any]) -> None:
    """Tile loops the draw above never tiles (synth before 2026-12-07: none of 640 sampled rows): a loop with no
    perfect child, i.e. an innermost loop or one whose body is more than the next loop (`for i { s = 0; for j
    ...; y[i] = s; }`), a fifth of those with static trips of 4 or more. Such a tile puts a band's tile loop
    inside another band's point loop, which the tile model prices on its own (hlsim 0.68); a learned model saw
    none. From a generator of its own, seeded by the mapping's name, so every other draw stays as it was."""
    rng = np.random.default_rng(int.from_bytes(hashlib.sha1(f"inner-tiles:{name}".encode()).digest()[:8], "little"))
    for label, loop in tree.loops.items():
        entry = mapping["loops"].get(label, {})
        if (loop.data_dependent or loop.is_while or loop.depends_on_outer or not loop.simple
                or loop.perfect_child() is not None or "tile" in entry or "unroll" in entry):
            continue
        n = int(trips[label])
        divs = [t for t in _divisors(n) if 1 < t < n]
        if n >= 4 and divs and rng.random() < 0.2:
            mapping["loops"][label] = {**entry, "tile": int(choice(rng, divs))}


def _overlap_and_regroup(name: str, tree: LoopTree, mapping: dict[str, Any]) -> None:
    """Draw the two primitives the rest of ``sample_mapping`` never did (synth before 2026-12-06: 0 of 54,720
    designs): ``reduction: tree`` on an unrolled loop that accumulates, where regrouping is legal (half of them),
    and ``dataflow: true`` on a kernel of two or more top-level nests (a quarter). From a generator of their own,
    seeded by the mapping's name, so every other draw, and so every earlier design of a seed, stays as it was."""
    rng = np.random.default_rng(int.from_bytes(hashlib.sha1(f"regroup:{name}".encode()).digest()[:8], "little"))
    for label, entry in mapping["loops"].items():
        loop = tree.loops.get(label)
        if loop is None or entry.get("unroll", 1) < 2 or not _accumulates(loop):
            continue
        if rng.random() < 0.5 and illegal_tree(SimpleNamespace(tree=tree), label) is None:
            entry["reduction"] = "tree"
    if len(tree.top_loops()) >= 2 and rng.random() < 0.25:
        mapping["dataflow"] = True


def _accumulates(loop) -> bool:
    """Whether a statement under ``loop`` updates a local from its own value (``s += ...``)."""
    return any(getattr(n, "kind", "") == "stmt" and n.writes_local and n.writes_local in n.reads_locals
               for n in loop.descendants())


def _has_inner_loop(loop) -> bool:
    """Whether any loop lies inside ``loop`` (under branches too)."""
    return any(getattr(n, "kind", "") == "loop" for n in loop.descendants())
