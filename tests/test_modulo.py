"""The modulo placement of pipelined bodies (``llmulator.modulo``), checked by a legality test written apart
from the schedulers: in every slot ``cycle mod II`` a resource issues at most its units or ports, every node
issues after its producers' results, and every carried dependence of distance d holds one II x d later. Random
bodies (seeded) on one multiplier, four adders and a two-port memory, with random carried dependences."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from llmulator import list_schedule as ls
from llmulator import modulo
from llmulator.costs import resource_cap
from llmulator.design import load_design
from llmulator.schedule import Carried
from test_carried_placement import ARCH

RESOURCES = [("op:mul", 3), ("op:add", 2), ("mem:a", 2), ("op:cmp", 1), (None, 1)]


def _load(d, arch: str):
    (d / "a.yaml").write_text(arch)
    (d / "w.yaml").write_text("""
workload:
  version: 1
  name: w
  parameters: {N: 8}
  arrays:
    a: {shape: [N], dtype: int32, role: in}
    b: {shape: [N], dtype: int32, role: out}
  kernel: |
    L_i: for (int i = 0; i < N; i++) {
      b[i] = a[i] * 3;
    }
  reference: |
    b[:] = a * 3
""")
    (d / "m.yaml").write_text("mapping:\n  version: 1\n  name: m\n  loops: {L_i: {pipeline_ii: 1}}\n"
                              "  placement: {a: BRAM, b: BRAM}\n")
    return load_design(d / "a.yaml", d / "w.yaml", d / "m.yaml")


@pytest.fixture(scope="module")
def design(tmp_path_factory):
    return _load(tmp_path_factory.mktemp("modulo"), ARCH.replace("MULS", "1"))


def _body(rng: random.Random, n: int) -> tuple[list[ls.Node], list[Carried]]:
    nodes = []
    for i in range(n):
        resource, latency = rng.choice(RESOURCES)
        deps = sorted(rng.sample(range(i), min(i, rng.randint(0, 2))))
        nodes.append(ls.Node("load" if resource == "mem:a" else "op", latency, deps, resource))
    carried = [Carried(s, d, rng.randint(1, 2), "") for _ in range(rng.randint(0, 3))
               for s, d in [sorted(rng.sample(range(n), 2), reverse=True)]]
    return nodes, carried


def _illegal(design, nodes: list[ls.Node], sched: ls.Schedule, carried) -> list[str]:
    """What breaks a modulo schedule at ``sched.ii`` (empty: legal)."""
    ii, why = sched.ii, []
    slots: Counter = Counter()
    for i, nd in enumerate(nodes):
        if nd.resource is not None:
            slots[nd.resource, sched.start[i] % ii] += 1
        for p in nd.deps:
            if sched.start[i] < sched.finish[p]:
                why.append(f"node {i} issues at {sched.start[i]} before producer {p} finishes at {sched.finish[p]}")
        if sched.finish[i] != sched.start[i] + nd.latency:
            why.append(f"node {i}: finish {sched.finish[i]} is not its start + latency")
    why += [f"{r} issues {k} times in slot {s}" for (r, s), k in slots.items() if k > resource_cap(design, r)]
    why += [f"carried {c.src}->{c.dst} broken" for c in carried
            if sched.start[c.dst] < sched.finish[c.src] - c.distance * ii]
    return why


@pytest.mark.parametrize("seed", range(40))
def test_every_modulo_placement_is_legal_and_no_shorter_than_its_bounds(design, seed):
    rng = random.Random(seed)
    nodes, carried = _body(rng, rng.randint(4, 24))
    plain = ls.list_schedule(design, nodes)
    mii = int(ls.initiation_interval(design, plain, 1, (1, ""))["ii"])
    sched = modulo.modulo_schedule(design, nodes, carried, mii)
    assert sched.ii >= mii
    assert _illegal(design, nodes, sched, carried) == []
    # the longest chain of producers bounds the depth from below
    assert sched.depth >= plain.depth or any(nd.resource for nd in nodes)


@pytest.mark.parametrize("seed", range(40))
def test_the_iterative_scheduler_returns_only_legal_placements(design, seed):
    rng = random.Random(100 + seed)
    nodes, carried = _body(rng, rng.randint(4, 24))
    for ii in range(1, 12):
        sched = modulo.iterative_modulo(design, nodes, carried, ii)
        if sched is not None:
            assert sched.ii == ii and _illegal(design, nodes, sched, carried) == []
            return
    pytest.fail("no II up to 11 placed")


def test_the_iterative_scheduler_finds_what_one_port_allows(tmp_path):
    """The one-port body of ``test_a_recurrence_spread_by_its_port_runs_at_the_ii_that_keeps_it``, by hand: two
    loads (2 cycles) and a store that waits for both and must finish before the next iteration's loads; at II 3
    both loads would need one cycle (no placement), at II 4 one exists: depth 4."""
    design = _load(tmp_path, ARCH.replace("MULS", "1").replace("ports: 2", "ports: 1"))
    nodes = [ls.Node("load", 2, [], "mem:a"), ls.Node("load", 2, [], "mem:a"), ls.Node("store", 1, [0, 1], "mem:a")]
    carried = [Carried(2, 0, 1, ""), Carried(2, 1, 1, "")]
    assert modulo.iterative_modulo(design, nodes, carried, 3) is None
    sched = modulo.iterative_modulo(design, nodes, carried, 4)
    assert sched is not None and sched.depth == 4 and _illegal(design, nodes, sched, carried) == []
    assert modulo.modulo_schedule(design, nodes, carried, 3).ii == 4
