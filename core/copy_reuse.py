"""Redundancy between the copies of an unrolled body: what one copy loaded or stored, the next one reads.

An HLS tool unrolls a region (a pipelined loop's inner loops, completely; the region's own ``unroll`` copies)
into straight-line code and then runs GVN and dead-store elimination over it. ``C[i][j] += A[i][k] * B[k][j]``
over an unrolled k then loads C[i][j] once (the first copy), takes every later copy's operand from the copy
before (store-to-load forwarding) and stores it once (the last copy: each earlier store is overwritten before
anything reads it); an element every copy reads (``t[k] = x[i] / w[k]`` over an unrolled k reads x[i]) is
loaded once. ``load_reuse`` finds the same within one loop body's straight-line run, in the C text, the same
for every copy; before hlsim 0.56 the copies of an unrolled loop did not share with each other, and every copy
loaded and stored again (more port issues, a load and a store latency on each copy's chain, more reads and
writes: an outside probe and a scan of the dataset, 19 of 400 rows).

:class:`CopyReuse` follows one region's graph as ``schedule.GraphBuilder`` builds it (copy by copy, branch
sides predicated) and says which access needs no memory operation: an element some earlier statement of the
graph loaded or stored on every path to here (``avail``), and a store a later store of the same element on a
path through it overwrites with no memory read of the array between (``pending``). What kills an available
element is what kills it in ``load_reuse``: a store to its array (any element: aliasing is not judged) or to
an array its subscripts read, or a write of a local they name. Copies of a loop whose copies do not all run
together (a trip count that varies per entry or that the data decide, a loop left by ``break``, a tile loop's
or a ``while`` loop's copies, which have no offset to tell their elements apart) share nothing with each other.

The counts follow the graph: :meth:`shares` is, per access, the fraction of its copies in the graph that make
the memory operation, which hlsim's tally and the analytical model's traffic multiply its executions by (the
first copy loads, the others reuse: one read per group of copies). A group the trips leave partial (10 trips
unrolled 4 ways) is counted at that fraction too.
"""

from __future__ import annotations

from .expr import ExprError, evaluate
from .load_reuse import element, names_in


def uniform(design, loop, copies: int, region: bool = False) -> bool:
    """Whether the ``copies`` of ``loop`` all run whenever its first does, at offsets that tell their elements
    apart: a counted loop (static trips, the same for every entry, an additive constant step, a first value the
    sizes fix unless it is the ``region``'s own loop) without a jump inside, whose trips (a tile's, where it is
    tiled, and the tiles divide it) the copies divide: a group the trips leave partial runs its first copies
    alone (`unroll: 2` over 15 trips), so they cannot leave the value to a copy that does not run."""
    if loop is None or loop.var is None or not loop.static or loop.depends_on_outer or loop.step_op != "+" \
            or loop.step_text or design.longest_trips(loop.label, guarded=False) is not None:
        return False
    if has_jump(loop):
        return False
    if not region and not isinstance(first_value(design, loop), int):
        return False
    full, tile = design.trips(loop.label), design.mapping.loop(loop.label).tile
    n = tile if tile and tile < full else full
    return copies > 0 and n > 0 and n % copies == 0 and full % n == 0  # (0 trips: a loop that never runs)


def first_value(design, loop) -> int | str:
    """The first value of an unrolled loop's variable: a number where the sizes fix it, else a name for it (a
    point loop's first value moves with its tile); a copy's offset is counted from it."""
    tile = design.mapping.loop(loop.label).tile
    if tile and tile < design.trips(loop.label):
        return f"{loop.var}@tile"
    try:
        v = evaluate(loop.lower_text, design.values)
    except (ExprError, KeyError, TypeError, ValueError):
        return loop.lower_text
    return int(v) if float(v).is_integer() else loop.lower_text


def _index(st, acc) -> int:
    """The access's index in its statement's (-1 for one the counts do not see: a constant table the kernel
    declares and initialises is a ROM, not a counted array)."""
    return next((k for k, a in enumerate(st.accesses) if a is acc), -1)


def _names(acc) -> frozenset[str] | None:
    """The identifiers an access's subscripts name; None where evaluating them changes one (``a[k++]``: no element,
    ``load_reuse.element``)."""
    return frozenset(names_in(acc.index_text)) if element(acc) is not None else None


def has_jump(loop) -> bool:
    """A ``break``, ``continue`` or ``return`` inside the loop: its copies, or its body's, need not all run."""
    return any(getattr(n, "kind", "") == "jump" for n in loop.descendants())


class CopyReuse:
    """The elements available to later copies of one region's graph and the stores a later copy may overwrite."""

    def __init__(self, fixed: frozenset = frozenset()):
        self.fixed = fixed  # names no copy changes: the region's loop variables and those around it, sizes, arrays
        self.avail: dict[tuple, tuple[frozenset, int]] = {}  # (array, key) -> (names its subscripts read, stmt)
        # (array, key) -> [(store node, path, (stmt id, access), names its subscripts read)]
        self.pending: dict[tuple, list[tuple]] = {}
        self.path: tuple = ()  # the branch sides the statement being built is on: ((branch, side), ...)
        self.branches = 0
        self.stmt = 0  # serial of the statement being built (a value it made itself is not reused by it)
        self.counts: dict[tuple[int, int], list[int]] = {}  # (stmt id, access) -> [reads, made, writes, made]

    # -- what the schedule asks ----------------------------------------------------------------------
    def start(self) -> None:
        """A statement begins."""
        self.stmt += 1

    def holds(self, array: str, key) -> bool:
        """An earlier statement on every path to here left the element in a register. Not asked on a branch's
        side: its copies need not run equally often (`if (k > 0)`, or data that favour one copy), and the counts
        take one share for all of them."""
        v = self.avail.get((array, key)) if key is not None and not self.path else None
        return v is not None and v[1] != self.stmt

    def read(self, st, acc, made: bool, key) -> None:
        """Count a read (``made``: it loads from memory); a made read ends the array's pending stores (it reads
        what they wrote) and, unless only some evaluations make it, leaves the element available."""
        c = self._count(st, acc)
        c[0] += 1
        c[1] += made
        if made:
            self.pending = {k: v for k, v in self.pending.items() if k[0] != acc.array}
            names = _names(acc)
            if key is not None and names is not None and not acc.conditional:
                self.avail[(acc.array, key)] = (names, self.stmt)

    def write(self, st, acc, node: int | None, key, forwards: bool, nodes: list, stores: list) -> None:
        """Count a store (``node`` None: ``load_reuse`` found it dead) and kill what it changes; a store that
        forwards its value leaves the element available, and one a later store may overwrite waits in
        ``pending``. An earlier pending store of the element this one overwrites on every path through it is
        made dead: its node takes no port and no cycle, and leaves ``stores`` (no carried dependence)."""
        array = acc.array
        self.avail = {k: v for k, v in self.avail.items() if k[0] != array and array not in v[0]}
        self._unpend(lambda k, names: array in names)  # (`c[p[0]]` waits no more after a store to p)
        if node is None:
            return
        c = self._count(st, acc)
        c[2] += 1
        c[3] += 1
        if key is None:
            self.pending = {k: v for k, v in self.pending.items() if k[0] != array}
            return
        names = _names(acc)
        if acc.conditional or names is None:
            return
        waiting = self.pending.get((array, key), [])
        for n, path, owner, _ in waiting:
            if path[:len(self.path)] == self.path:  # this store runs whenever that one did: it is dead
                nodes[n].op, nodes[n].latency, nodes[n].resource = "copy", 0, None
                stores[:] = [e for e in stores if e[1] != n]
                self.counts[owner][3] -= 1
        kept = [e for e in waiting if e[1][:len(self.path)] != self.path]
        # (a store on a branch's side waits for none: its copies need not run equally often, see holds)
        self.pending[(array, key)] = kept + ([] if self.path else [(node, self.path, (id(st), _index(st, acc)), names)])
        if forwards:
            self.avail[(array, key)] = (names, self.stmt)

    def local(self, name: str) -> None:
        """A local is written: an element whose subscripts name it is another element now."""
        self.avail = {k: v for k, v in self.avail.items() if name not in v[0]}
        self._unpend(lambda k, names: name in names)

    def _unpend(self, gone) -> None:
        """End the pending stores ``gone(key, names)`` says a later store of the same text no longer overwrites."""
        self.pending = {k: kept for k, v in self.pending.items() if (kept := [e for e in v if not gone(k, e[3])])}

    # -- the shape of the graph ----------------------------------------------------------------------
    def copy(self, env) -> None:
        """A copy of a loop begins: an element whose subscripts name anything but the fixed names and the unrolled
        loops' variables (``env``, whose offsets are in the keys) may be another one now, since the loop's head may
        step a local of its own (`for (k = 0, j = 2; k < 4; k++, j += 2)`: j; before, every copy of `x[j]` took
        copy 0's load: an outside probe)."""
        fixed = self.fixed | set(env)
        self.avail = {k: v for k, v in self.avail.items() if v[0] <= fixed}
        self._unpend(lambda k, names: not names <= fixed)

    def snapshot(self) -> dict:
        return dict(self.avail)

    def barrier(self, before: dict) -> None:
        """A copy of a loop whose copies need not all run: it shares only what held before the loop."""
        self.avail = {k: v for k, v in self.avail.items() if before.get(k) == v}
        self.pending = {}

    def side(self, branch: int, which: str, before: dict) -> None:
        """Build a branch's side: it starts from what held before the branch."""
        self.avail = dict(before)
        self.path = self.path + ((branch, which),)

    def join(self, then_avail: dict, path: tuple) -> None:
        """After both sides: what both left available, whichever loaded it (the value a later read takes is the
        schedule's join: the select of the two where a side stored it, else the one load both sides share a port
        for, ``exclusive_ports``)."""
        self.avail = {k: (v[0] | then_avail[k][0], v[1]) for k, v in self.avail.items() if k in then_avail}
        self.path = path

    def new_branch(self) -> int:
        self.branches += 1
        return self.branches

    # -- the counts ----------------------------------------------------------------------------------
    def _count(self, st, acc) -> list[int]:
        return self.counts.setdefault((id(st), _index(st, acc)), [0, 0, 0, 0])

    def shares(self) -> dict[tuple[int, int], tuple[float, float]]:
        """(stmt id, access index) -> (share of its reads, share of its writes) that move memory."""
        return {k: (c[1] / c[0] if c[0] else 1.0, c[3] / c[2] if c[2] else 1.0) for k, c in self.counts.items()
                if c[1] < c[0] or c[3] < c[2]}
