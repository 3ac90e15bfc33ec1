"""The static twin of running hlsim's binary: the instrumented sites walked with expected trips.

What hlsim's counters add up over a run (``llmulator.timing``'s constants per site, times the trips and
branch outcomes the run measured), this module adds up with every loop running its expected trips and
every branch taken with its expected probability: the analytical estimator's cycles. One walker over the
same sites and constants, so the two agree by construction where nothing depends on the data.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING

import attrs

from . import dataflow_tasks
from . import nest as lnest
from .design import Design
from .instrument import SLOTS, Instrumented, Site

if TYPE_CHECKING:
    from .timing import Timing

# the static twin of running the binary: what the counters would add up with expected trips


@attrs.define
class Expected:
    """Expected cycles of each nest (``cycles``) as hlsim's counters would add them up, with every loop
    running its expected trips and every branch taken with its expected probability; ``stalls`` holds,
    per pipelined loop and cause, the cycles lost to an II above the one the mapping asked for."""

    cycles: list[float]
    stalls: dict[str, float]
    notes: list[str]
    busy: list[dict] = attrs.field(factory=list)  # per nest: schedule resource -> cycles its pipelines take it
    rate: list[dict] = attrs.field(factory=list)  # per nest: resource -> steady-state share (llmulator.dataflow_tasks)


def expected_cycles(d: Design, inst: Instrumented, timing: Timing) -> Expected:
    """Walk the instrumented sites with expected trip counts (``Design.trips``: static bounds, or the
    hints of the design's input variant for data-dependent ones) instead of measured ones.

    The site constants are the ones hlsim runs with, so on a kernel whose trips and branches do not
    depend on the data the two agree by construction; where they do, the difference is the hints'.
    A loop's mean trips may be fractional: a region that runs ``n < U`` iterations on average costs
    ``n / U`` of one pass, not a whole one.
    """
    branches = {id(n.cond): n for n in d.tree.walk() if getattr(n, "kind", "") == "branch"}
    notes: list[str] = []
    stalls: dict[str, float] = {}
    walker = _Walker(d, timing, branches, notes, stalls)
    out = []
    for k, tree in enumerate(inst.trees):
        latency = sum(timing.T[SLOTS * s.id + 2] for s in inst.sites if s.nest == k and s.region == "array")
        out.append(float(walker.cost(tree, 1.0) + latency))
    n = len(inst.trees)
    return Expected(out, stalls, notes, [walker.busy.get(k, {}) for k in range(n)],
                    [walker.rate.get(k, {}) for k in range(n)])


class _Walker:
    def __init__(self, d: Design, timing: Timing, branches: dict, notes: list[str], stalls: dict[str, float]):
        self.d, self.timing, self.branches, self.notes, self.stalls = d, timing, branches, notes, stalls
        self.busy: dict[int, dict] = {}  # nest -> its pipelines' resource use (llmulator.dataflow_tasks)
        self.rate: dict[int, dict] = {}

    def prob(self, s: Site) -> float:
        br = self.branches.get(id(s.stmts[0])) if s.stmts else None
        if br is None:
            return 0.5
        p, note = self.d.branch_probability(br)
        if note and note not in self.notes:
            self.notes.append(note)
        return p

    def split(self, kl: str) -> tuple[float, float | None]:
        """(all trips of a mapped loop per entry of its band, its tile when strip-mined else None)."""
        full = lnest.mapped_trips(self.d, kl)
        tile = self.d.mapping.loop(kl).tile
        if tile is not None and len(lnest.members(self.d, kl)) == 1 and self.d.longest_trips(kl) is not None:
            # a triangular loop: the rendered kernel strip-mines it unless its trips are exact and within the tile
            return full, (float(tile) if lnest.strip_mined(self.d, kl) else None)
        return full, (float(tile) if tile is not None and tile < full else None)

    def trips(self, s: Site) -> float:
        """Expected iterations of a loop site per entry: a tile loop over the tiles, a point loop over
        one tile on average (so that tiles x points is every iteration, edge tile included)."""
        if s.loop is None:
            return 1.0
        full, tile = self.split(s.loop)
        if tile is None:
            return full if s.label == s.loop else 1.0
        tiles = float(math.ceil(full / tile))
        profile = self.d.trip_profile(s.loop) if len(lnest.members(self.d, s.loop)) == 1 else None
        if profile:  # a triangular loop: each entry's own tiles (5, 4, ..., 0 trips in tiles of 2: 9, not 6 x 2)
            tiles = sum(math.ceil(n / tile) for n in profile) / len(profile)
        return tiles if s.label != s.loop else (full / tiles if tiles else 0.0)

    def cost(self, sites: list[Site], weight: float) -> float:
        """Expected cycles of one pass over ``sites``; ``weight`` is how often that pass runs (for stalls)."""
        return self._pass(sites, weight)[0]

    def _pass(self, sites: list[Site], weight: float) -> tuple[float, float]:
        """(expected cycles of one pass over ``sites``, the probability that the pass ends in a ``continue`` of
        the enclosing loop). A cond whose side continues leaves what follows it to the other side's share:
        ``live`` is the probability that the pass reaches a site (hlsim adds a site's cycles only when the run
        gets there)."""
        T = self.timing.T
        total, live, ended = 0.0, 1.0, 0.0
        for s in sites:
            if s.in_region or live <= 0.0:
                continue
            if s.kind == "block":
                total += live * T[SLOTS * s.id]
            elif s.kind == "cond":
                p = self.prob(s)
                c1, q1 = self._pass(s.children, weight * live * p)
                c2, q2 = self._pass(s.orelse, weight * live * (1 - p))
                total += live * (T[SLOTS * s.id] + p * c1 + (1 - p) * c2)
                skip = p * (1.0 if s.skips[0] else q1) + (1 - p) * (1.0 if s.skips[1] else q2)
                ended += live * skip
                live *= 1.0 - skip
            elif s.kind == "loop":
                n = self.trips(s)
                # the test beyond the control cycle, per evaluation: every trip and the exit (as hlsim counts it),
                # and the exit's control cycle where the test ends the loop (hlsim knows; here on the entries the
                # declared inputs do not end by a return, a break or not)
                ends = 1.0 - (self.d.return_share(s.loop) if s.loop else 0.0)
                total += live * (n * (T[SLOTS * s.id] + self.cost(s.children, weight * live * n))
                                 + (n + 1.0) * T[SLOTS * s.id + 1] + ends * T[SLOTS * s.id + 3])
            elif s.region == "array":
                total += live * (T[SLOTS * s.id] + (self.steps(s) - 1.0) * T[SLOTS * s.id + 1])
            else:
                total += live * self.region(s, weight * live)
        return total, ended

    def steps(self, s: Site) -> float:
        """Stream steps of one PE-array fold: the temporal point loops' trips within a tile (on average)."""
        n = 1.0
        for kind, lb in lnest.mapped_band(self.d, s.band):
            if kind == "point" and not self.d.mapping.loop(lb).spatial:
                full, tile = self.split(lb)
                n *= full / math.ceil(full / tile) if tile else full
        return n

    def region(self, s: Site, weight: float) -> float:
        """A pipelined or unrolled loop per entry: ``depth + (ceil(n / U) - 1) x II`` for n iterations,
        averaged over the entries of a strip-mined loop (full tiles and the edge tile); where a test the data
        decide ends it, not less than ``ceil(n / U) x II + test`` when U divides n (as hlsim's ``__region``)."""
        depth, ii, u, test0, test = (float(x) for x in self.timing.T[SLOTS * s.id: SLOTS * s.id + 5])
        full, tile = self.split(s.loop)
        passes = [(full, 1.0)]
        profile = self.d.trip_profile(s.loop) if len(lnest.members(self.d, s.loop)) == 1 else None
        p0 = float(self.d.hints.get(s.loop, {}).get("zero_trip_probability", 0.0))
        if profile and tile is not None:  # a triangular loop in tiles: every tile's own trips, edge tiles too
            sizes = Counter(min(tile, n - k * tile) for n in profile for k in range(math.ceil(n / tile)))
            passes = [(float(n), c / sum(sizes.values())) for n, c in sizes.items()] or [(0.0, 1.0)]
        elif profile:  # a triangular loop: every entry's own trips (an entry of 0 trips costs nothing)
            passes = [(float(n), c / len(profile)) for n, c in Counter(profile).items()]
        elif 0 < p0 < 1 and tile is None:  # entries that run nothing pay nothing; the others run more
            passes = [(0.0, p0), (full / (1 - p0), 1 - p0)]
        elif tile is not None:
            k = math.ceil(full / tile)
            passes = [(tile, (k - 1) / k), (full - (k - 1) * tile, 1.0 / k)]
        cyc = groups_total = groups_all = 0.0
        for n, share in passes:
            if n <= 0:
                cyc += share * test0  # the test that finds no trip (hlsim's __region)
                continue
            g = math.ceil(n / u) if float(n).is_integer() else n / u
            end = g * depth if g < 1 else depth + (g - 1) * ii
            # the exit test in a group of its own: when U divides n (a share 1 / U of a mean trip count)
            whole = (n % u == 0) if float(n).is_integer() else 1.0 / u
            cyc += share * (end + (whole * max(0.0, g * ii + test - end) if test > 0 else 0.0))
            groups_total += share * max(g - 1, 0.0)
            groups_all += share * g
        if s.region in ("pipeline", "unroll") and self.d.mapping.dataflow:
            dataflow_tasks.issue_pressure(self.d, self.timing, s, weight * groups_all,
                                          self.busy.setdefault(s.nest, {}), self.rate.setdefault(s.nest, {}))
        info = self.timing.info.get(s.id, {})
        target = self.d.mapping.loop(s.loop).pipeline_ii
        if s.region == "pipeline" and target and ii > target:
            causes = {"recurrence": info.get("rec_mii", 1), "memory_port": info.get("mem_mii", 1),
                      "operator_units": info.get("res_mii", 1)}
            cause = max(causes, key=causes.get)
            key = f"{s.loop}.{cause}"
            self.stalls[key] = self.stalls.get(key, 0.0) + weight * groups_total * (ii - target)
        return cyc
