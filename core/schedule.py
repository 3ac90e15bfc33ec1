"""Static scheduling of loop bodies: the data-flow graph of one body, which ``llmulator.list_schedule``
list-schedules; shared by hlsim and the analytical estimator (one implementation, so the two cannot drift
apart).

A body (the statements of one loop iteration, with inner loops of a
pipelined loop fully unrolled and the body replicated ``unroll`` times) is
turned into one data-flow graph of operation nodes. Nodes are list-scheduled
cycle by cycle in order of their longest path to the end, subject to

* the architecture's operator units: at most ``count`` issues of a class per
  cycle (units are fully pipelined), each taking ``latency_cycles``;
* memory ports (``llmulator.costs.memory_resource``): ``ports`` accesses per
  cycle to each bank of an array (banks from the mapping's partitioning: the
  element's bank for a static index, every bank for a dynamic one), one shared
  channel per DRAM level, no limit in a register file.

The schedule length is the body's *depth*. For a pipelined loop the
initiation interval is ``II = max(target, ResMII, MemMII, RecMII)`` (Rau's
modulo-scheduling bounds): ResMII and MemMII from the uses of each resource,
RecMII from the recurrence cycles of the graph: every loop-carried dependence
(a local read before the body writes it; an element stored in one iteration
and loaded ``d`` iterations later, found from the affine indices, or assumed
at distance 1 where an index is not affine or the accesses cannot be
compared); a cycle through any number of them, of latency ``L`` over the
``D`` iterations they span, needs ``II >= ceil(L / D)`` (``llmulator.recurrence``).
A store under a branch waits for its condition, and so does the select that
merges a local the branch sets (``if`` bodies are predicated, not
speculated past their condition). See docs/timing-model.md.
"""

from __future__ import annotations

import math
from collections import defaultdict

from .address_keys import Carried, may_alias, same_element
from .address_keys import carried as carried_dependences
from .copy_reuse import CopyReuse, first_value, uniform
from .costs import access_words, level_latency, memory_resource, op_latency
from .design import Design
from .exclusive_ports import share_ports
from .expr import ExprError, evaluate
from .kernel import Loop, Statement
from .list_schedule import Node
from .load_reuse import forwards, written

MAX_NODES = 4_000  # beyond this, a closed-form bound (dependence chain + busiest resource) replaces the schedule


class GraphBuilder:
    """Accumulates statements into one DAG, with dependences through locals and arrays.

    ``carried_loop``/``copies``: the pipelined loop whose body this is (unrolled ``copies`` times);
    the builder then also collects the loop-carried dependences (:meth:`carried`).
    """

    def __init__(self, design: Design, carried_loop: Loop | None = None, copies: int = 1):
        self.d = design
        self.nodes: list[Node] = []
        self.local_def: dict[str, int] = {}  # local -> node producing its value
        self.port_free = False  # accesses inside PE-array loops reach the PEs through the array's operand network
        self.env: dict[str, int | None] = {}  # variable of an unrolled loop -> offset of the copy being built
        self.stores: dict[str, list[tuple]] = defaultdict(list)  # array -> [(address key, node, text)]
        self.loads: dict[str, list[tuple]] = defaultdict(list)
        self.var = carried_loop.var if carried_loop is not None else None
        self.loop = carried_loop
        self.pipelined = carried_loop is not None  # a while loop's too: no variable, but iterations all the same
        self.guards: list[int] = []  # the conditions of the branches whose side is being built (stores wait)
        self.advance = copies * (carried_loop.step if carried_loop is not None else 1)
        self.live_in: dict[str, list[int]] = defaultdict(list)  # local read before the body writes it -> readers
        self.copy_suffix = ""  # set per unrolled copy under a tree reduction (each copy its own partial)
        self.alias: dict[str, str] = {}  # local -> the live-in local it copies (x = y before y is written)
        self.loaded: dict[tuple, int] = {}  # (array, address key) -> the load node a later statement may reuse
        self.text_keys: dict[int, tuple] = {}  # load node without an affine key -> where it reads (text_key)
        self.reuse: CopyReuse | None = None  # a region's body: what its copies share (``llmulator.copy_reuse``)
        self.first: dict[str, int | str] = {}  # variable of an unrolled loop -> its first value (a name: not fixed)

    def _append(self, node: Node) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def _value(self, text: str) -> int | str:
        try:
            v = evaluate(text, self.d.values)
        except (ExprError, KeyError, TypeError, ValueError):
            return text
        return int(v) if float(v).is_integer() else text

    def _key(self, acc) -> tuple | None:
        """Address of an access within the body: per dimension the symbolic part (variables that are
        not unrolled), the constant (a number where the sizes fix it), the offset of this copy, and the
        coefficient of the pipelined loop's variable; None if not affine, or indexed by the copies of a geometric
        loop (``i *= 2``: its copies i, 2i, ... are not at offsets; hlsim 0.33 banked them as i, i + 1)."""
        if acc is None or acc.indirect or any(c and v in self.env and self.env[v] is None
                                              for a in acc.affine for v, c in a.coefs.items()):
            return None
        key = []
        for a in acc.affine:
            sym = [(v, c) for v, c in a.coefs.items() if c and v not in self.env]
            num = 0
            for v, c in a.coefs.items():
                f = self.first.get(v, 0) if v in self.env else None
                if isinstance(f, int):  # the copy's element: from its loop's first value (hlsim 0.56; before, from 0)
                    num += c * (self.env[v] + f)
                elif f is not None:  # a first value not fixed: its offset counts from a name of its own
                    num += c * self.env[v]
                    sym += [(f"{v}@{f}", c)] if c and not f.endswith("@tile") else []
            key.append((tuple(sorted(sym)), self._value(a.const), num, a.coefs.get(self.var, 0) if self.var else 0))
        return tuple(key)

    def _resource(self, array: str, key: tuple | None) -> str | None:
        if self.port_free:
            return None
        p = self.d.mapping.partition.get(array)
        value = None
        # the symbolic part is taken as bank-aligned (the offsets then place a cyclic partition's accesses
        # exactly against each other); a block's bank is fixed only where one block holds the element of every
        # iteration of the pipelined loop (a[i - 1] and a[i] share a block but at its edge: no fixed bank)
        if p is not None and key is not None and p.dim - 1 < len(key) and isinstance(key[p.dim - 1][1], int):
            sym, const, num, cv = key[p.dim - 1]
            value = const + num if p.type != "block" or not (sym or cv) else None if sym else \
                self._one_block(array, p, const + num, cv)
        return memory_resource(self.d, array, value)

    def _words(self, array: str) -> int:
        return 1 if self.port_free else access_words(self.d, array)

    def _one_block(self, array: str, p, offset: int, coef: int) -> int | None:
        """The first element a block-partitioned access takes over the pipelined loop's range, if every
        element it takes is in that element's block; else None (the bank moves with the loop)."""
        lp = self.loop
        if lp is None or not lp.static or lp.step_op != "+" or lp.step_text or lp.step <= 0:
            return None
        try:
            lo, hi = int(evaluate(lp.lower_text, self.d.values)), int(evaluate(lp.upper_text, self.d.values)) - 1
        except (ExprError, KeyError, TypeError, ValueError):
            return None
        a, b = sorted((offset + coef * lo, offset + coef * hi))
        block = math.ceil(self.d.workload.shape(array, self.d.sizes)[p.dim - 1] / p.factor)
        return a if a >= 0 and a // block == b // block else None

    def _local(self, v: str) -> str:
        """A local as this copy sees it: under a tree reduction each unrolled copy keeps its own."""
        return v + self.copy_suffix

    def _local_deps(self, names) -> list[int]:
        """Producers of the locals an operation reads (a local set to a constant has none)."""
        names = [self._local(v) for v in names]
        return [self.local_def[v] for v in names if self.local_def.get(v, -1) >= 0]

    def _note_live_in(self, names, node: int) -> None:
        for v in map(self._local, names):
            if v not in self.local_def:
                self.live_in[self.alias.get(v, v)].append(node)

    def _reused(self, array: str, key: tuple) -> int | None:
        """The node of the run's earlier load of an element (a branch's other side may have dropped it from
        ``loaded``); None where it ran in an earlier site (a condition scheduled apart from its side): a register.
        After a branch a side stored, the select of the two sides' values (``_join_loaded``), made when read."""
        if (array, key) not in self.loaded:
            return next((i for k, i, _ in reversed(self.loads.get(array, []))
                         if (k if k is not None else self.text_keys.get(i)) == key), None)
        v = self.loaded[(array, key)]
        if isinstance(v, tuple):
            v = self.loaded[(array, key)] = self._append(Node("select", op_latency(self.d, "select"), list(v), None))
        return v

    def _load(self, st: Statement, n, deps: list[int], ordered: bool) -> tuple[bool, int | None]:
        """(reused, the node holding a load's value): an earlier load of the element where ``load_reuse`` marked
        the read reused (None: a register an earlier site loaded), else a new load after the stores it may alias."""
        acc = n.access
        key = self._key(acc)
        same = same_element(self, acc, key)  # what a later read of it finds
        if same is not None and any(acc is st.accesses[k] for k in st.reused):
            return True, self._reused(n.array, same)
        if self.reuse is not None:  # an element an earlier copy of the region's body loaded or stored
            if self.reuse.holds(n.array, same):
                self.reuse.read(st, acc, False, same)
                return True, self._reused(n.array, same)
            self.reuse.read(st, acc, True, same)
        if ordered:
            deps += [node for k, node, _ in self.stores[n.array] if may_alias(k, key)]
        i = self._append(Node("load", level_latency(self.d, n.array), deps, self._resource(n.array, key),
                              slots=self._words(n.array)))
        self.loads[n.array].append((key, i, _text(acc)))
        self.loaded[(n.array, same)] = i
        if key is None:
            self.text_keys[i] = same
        return False, i

    def _store(self, st: Statement, n, idx: dict, deps: list[int], ordered: bool) -> tuple[int | None, int | None]:
        """(the store's node after the accesses it may alias, None for a store ``load_reuse`` found dead; the node
        of the value it stores). A later read of the element ``load_reuse`` marked reused takes that value."""
        acc = n.access
        key = self._key(acc)
        i = None
        if not any(acc is st.accesses[k] for k in st.dead_stores):
            if ordered:
                deps += [node for k, node, _ in self.loads[n.array] if may_alias(k, key)]
                deps += [node for k, node, _ in self.stores[n.array] if may_alias(k, key)]
            i = self._append(Node("store", 1, deps + self.guards, self._resource(n.array, key),
                                  slots=self._words(n.array)))
            self.stores[n.array].append((key, i, _text(acc)))
        self.loaded = {k: v for k, v in self.loaded.items() if k[0] != n.array}
        same = same_element(self, acc, key)
        value = self._stored_value(n, idx)
        if self.reuse is not None:
            self.reuse.write(st, acc, i, same, forwards(st, acc), self.nodes, self.stores[n.array])
        if same is not None:
            self.loaded[(n.array, same)] = value
        return i, value

    def _stored_value(self, n, idx: dict) -> int | None:
        """The node holding the value a store writes: its operation, the producer of the local it stores, None for
        a constant. A local the body has not written yet (last iteration's, or the loop's invariant) is read by a
        free copy node, so that its recurrence runs through the reader (`b[i] = s; s = b[i] + x[i];`: the add)."""
        v = n.value
        if isinstance(v, int):
            return idx.get(v)
        if isinstance(v, str):
            p = self.local_def.get(self._local(v))
            if p is None:
                p = self._append(Node("copy", 0, [], None))
                self._note_live_in([v], p)
            return p if p >= 0 else None
        return None

    def add_statement(self, st: Statement) -> None:
        d = self.d
        if self.reuse is not None:
            self.reuse.start()
        unfused = "mac" in st.ops and "mac" not in d.stmt_ops(st)
        idx: dict[int, int | None] = {}
        first = len(self.nodes)
        ordered = not self.port_free  # PE-array operands flow through PE registers, not memory
        for j, n in enumerate(st.dag):
            deps = [idx[k] for k in n.deps if idx[k] is not None] + self._local_deps(n.reads)
            if n.op == "load":
                reused, i = self._load(st, n, deps, ordered)
                if reused:  # a value an earlier statement loaded (llmulator.load_reuse)
                    idx[j] = i
                    continue
            elif n.op == "store":
                i, value = self._store(st, n, idx, deps, ordered)
                if i is None:  # overwritten later in the run before anything reads it (load_reuse: dead store)
                    idx[j] = value
                    continue
            elif n.op == "mac" and unfused:
                # the product waits for its own operands, nodes and locals (before hlsim 0.33 for its nodes only:
                # `s = s + s * x` had no multiply on its recurrence), not for the accumulator; the add does
                acc = [idx[n.acc]] if n.acc >= 0 and idx[n.acc] is not None else []
                nodes, locs = n.factors
                mul = self._append(Node("mul", op_latency(d, "mul"), [idx[k] for k in nodes if idx[k] is not None]
                                        + self._local_deps(locs), "op:mul"))
                self._note_live_in(locs, mul)
                i = self._append(Node("add", op_latency(d, "add"), [mul] + acc + self._local_deps(n.reads),
                                      "op:add"))
            else:
                res = None if n.op == "select" else f"op:{n.op}"
                i = self._append(Node(n.op, op_latency(d, n.op), deps, res))
            self._note_live_in(n.reads, i)
            idx[j] = i
        for nd in self.nodes[first:]:
            nd.deps = sorted(set(nd.deps))
        for v in written(st) if self.reuse is not None else ():
            self.reuse.local(v)  # (an element a subscript of which names it is another one now)
        if st.writes_local:
            x = self._local(st.writes_local)
            y = self._local(st.copies) if st.copies else None
            self.alias.pop(x, None)
            if idx:  # its last node; none where its value is a register an earlier site loaded (load_reuse)
                self.local_def[x] = max((i for i in idx.values() if i is not None), default=-1)
            elif y is not None and y not in self.local_def:  # x = y, y from the last iteration
                self.local_def.pop(x, None)
                self.alias[x] = self.alias.get(y, y)
            else:  # x = y (y's producer), or x = constant (-1: no producer)
                self.local_def[x] = self.local_def.get(y, -1) if y else -1

    def add_model(self, model: list, trips) -> None:
        """Add a mapped body (see llmulator.instrument): inner loops unrolled ``trips(kl, is_tile)`` times."""
        for entry in model:
            kind = entry[0]
            if kind == "stmt":
                self.add_statement(entry[1])
            elif kind == "branch":
                n0 = len(self.nodes)
                if entry[1] is not None:
                    self.add_statement(entry[1])
                # the condition's value: the last node its statement added, else the producers of the locals it
                # reads (`if (c)`); none where it reads only loop indices and counters
                guard = [len(self.nodes) - 1] if len(self.nodes) > n0 else \
                    self._local_deps(entry[1].reads_locals) if entry[1] is not None else []
                self.guards += guard
                self._predicated(entry[2], entry[3], trips, guard)
                del self.guards[len(self.guards) - len(guard):]
            else:
                _, kl, is_tile, sub = entry
                loop = self.d.tree.loops.get(kl) if kl is not None and not is_tile else None
                var = loop.var if loop is not None else None
                copies = int(math.ceil(trips(kl, is_tile)))
                before = self.reuse.snapshot() if self.reuse is not None else None
                apart = before is not None and not uniform(self.d, loop, copies)  # (copies that need not all run)
                if var is not None:
                    self.first[var] = first_value(self.d, loop)
                for k in range(copies):
                    if var is not None:  # this copy's offset from the loop's first value (geometric: none)
                        self.env[var] = k * loop.step if k == 0 or loop.step_op == "+" and not loop.step_text else None
                    if apart:
                        self.reuse.barrier(before)
                    if self.reuse is not None:
                        self.reuse.copy(self.env)
                    self.add_model(sub, trips)
                if var is not None:
                    self.env.pop(var, None)
                    self.first.pop(var, None)
                if apart:
                    self.reuse.barrier(before)  # (nor need its first: no trip at all)

    def _predicated(self, then_m: list, else_m: list, trips, guard: list[int] = ()) -> None:
        """Both sides of a branch, predicated: each side reads the locals as they were before the branch
        (not the other side's results), and a local either side writes leaves through a select of the
        two values. ``if (c) a += x; else a = 0;`` thus keeps ``a``'s recurrence through the add (the else
        side's constant used to hide it), and ``if (c) a += x; else a -= x;`` is one add deep, not two. The
        select waits for the condition (``guard``: its node), as a ternary's does; before hlsim 0.29 it waited
        only for the two values, and a slow condition (`if (sqrtf(p) > t)`) was off every dependence chain."""
        before, before_alias = dict(self.local_def), dict(self.alias)
        mem = {k: list(v) for k, v in self.stores.items()}, {k: list(v) for k, v in self.loads.items()}
        loaded = dict(self.loaded)
        if self.reuse is not None:  # (what the region's later copies find: what both sides leave)
            avail, path, b = self.reuse.snapshot(), self.reuse.path, self.reuse.new_branch()
            self.reuse.side(b, "then", avail)
        self.add_model(then_m, trips)
        then_def, then_alias, then_mem, then_loaded = self.local_def, self.alias, (self.stores, self.loads), self.loaded
        self.local_def, self.alias, self.loaded = dict(before), dict(before_alias), dict(loaded)
        if self.reuse is not None:
            then_avail = self.reuse.snapshot()
            self.reuse.path = path
            self.reuse.side(b, "else", avail)
        # the other side never runs with this one: its accesses do not wait for this side's, and share its ports
        self.stores, self.loads = defaultdict(list, mem[0]), defaultdict(list, mem[1])
        self.add_model(else_m, trips)
        self._join_loaded(then_loaded, {a for a, v in then_mem[0].items() if len(v) > len(mem[0].get(a, ()))}
                          | {a for a, v in self.stores.items() if len(v) > len(mem[0].get(a, ()))}, guard)
        share_ports(self.nodes, mem, then_mem, (self.stores, self.loads))
        if self.reuse is not None:
            self.reuse.join(then_avail, path)
        for mine, theirs in zip((self.stores, self.loads), then_mem, strict=True):
            for array, accs in theirs.items():
                mine[array] += [a for a in accs if a not in mine[array]]
        self._join_locals(then_def, then_alias, before_alias, guard)

    def _join_locals(self, then_def: dict, then_alias: dict, before_alias: dict, guard: list[int]) -> None:
        """A local the two sides leave different leaves through a select of the two values, which waits for the
        condition (``guard``); a side that leaves the local's value from the last iteration, or a copy of another
        local's (`t = s` with s not yet written: an alias), makes the select read that one across the iteration.
        Before, such an alias on one side compared equal to the value before the branch: `int t = x[i] * 2;
        if (x[i] > 3) t = s; b[i] = t; s = t + 1;` lost its recurrence through s (II 1 where 3: an outside probe)."""
        def side(defs: dict, aliases: dict, v: str):
            return defs[v] if v in defs else ("alias", aliases[v]) if v in aliases else None

        for v in sorted(set(then_def) | set(self.local_def) | set(then_alias) | set(self.alias)):
            a, b = side(then_def, then_alias, v), side(self.local_def, self.alias, v)
            if a == b:
                continue
            self.alias.pop(v, None)  # a value of its own now (a select, or a constant), no copy of another local
            producers = sorted({p for p in (a, b) if isinstance(p, int) and p >= 0})
            if not producers and isinstance(a, int) and isinstance(b, int):
                self.local_def[v] = -1  # a constant on both sides
                continue
            sel = self._append(Node("select", op_latency(self.d, "select"), sorted(set(producers) | set(guard)), None))
            for x in (a, b):  # a side that leaves a value from the last iteration: the select reads it
                if x is None:
                    self.live_in[before_alias.get(v, v)].append(sel)
                elif isinstance(x, tuple):
                    self.live_in[x[1]].append(sel)
            self.local_def[v] = sel

    def _join_loaded(self, then_loaded: dict, stored: set, guard: list[int]) -> None:
        """What a later read finds after a branch: each side's loads; of an array a side stored, an element the
        sides leave different is the select of the two values and the guard (made when read: ``_reused``), as a
        local is. Before, the read found no producer (an outside probe: `if (c) b[i] = s - x[i]; else b[i] = 2;
        s = b[i] + 1;` pipelined at II 1 where its recurrence needs 6)."""
        joined = {**then_loaded, **self.loaded}
        for k in joined:
            a, b = then_loaded.get(k), self.loaded.get(k)
            if k[0] in stored and a != b:  # (a side's own select not made yet joins by its inputs)
                inputs = {x for v in (a, b) for x in (v if isinstance(v, tuple) else (v,)) if x is not None and x >= 0}
                joined[k] = tuple(sorted(inputs | set(guard)))
        self.loaded = joined

    def carried(self) -> list[Carried]:
        """The body's loop-carried dependences (``address_keys.carried``)."""
        return carried_dependences(self)


def _text(acc) -> str:
    if acc is None:
        return "?"
    return acc.array + "".join(f"[{t}]" for t in acc.index_text)
