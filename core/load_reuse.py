"""A value one statement loaded or stored is the next statement's: reads reused across a straight-line run.

``b[i] = a[i] + 1; c[i] = a[i] * 2;`` loads ``a[i]`` once in an HLS tool (the compiler's redundant-load
elimination: the element is not stored between, and its subscript's variables do not change), so the second
statement takes no port, no memory read and no load latency for it. Before hlsim 0.34 only reads within one
statement were merged (``kernel_expr``: ``a[i] * a[i]``), and each statement of a body loaded its own copy.
Since hlsim 0.53 a store is such a value too (GVN's store-to-load forwarding: ``y[i] = ...; t = y[i];`` reads
no memory), and a store that a later statement of the run overwrites before any read of its array from memory
is not made (dead-store elimination: ``b[i] = 0; b[i] += x;`` stores once).

The run is what the C text shows: consecutive statements of one loop body (a loop or a jump between them ends
it; a branch's condition runs on into both sides, and after the branch the run holds what both sides still
hold), so the value is loaded on every path that reaches the reuse. What kills a loaded element: a store
to its array (any element: aliasing is not judged) or to an array its subscript reads, or a write of a local
its subscript names. Only subscripts that do not step (``a[k++]``) are reused, affine or not: the schedule
finds the same address (``schedule.GraphBuilder``: an affine key, else the subscripts' text with the unrolled
copy's offsets). Before hlsim 0.50 an indirect element (``x[j]`` with j a local the data set, ``x[col[k]]``)
was loaded again by every statement that read it, where GVN loads it once. The statements outside every loop
are nests of their own and are left alone. The copies of an unrolled loop are one statement each here, the same
marks for every copy; what one copy takes from another (``C[i][j] += A[i][k] * B[k][j]`` over unrolled k) is
``llmulator.copy_reuse``'s, on the region's graph. The counts (hlsim's reads and writes, the analytical model's)
skip what :func:`mark` marks.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[A-Za-z_]\w*")


def names_in(texts) -> set[str]:
    """The identifiers the subscript texts name (``x[col[k] + j]`` -> col, k, j): what a write must not touch
    for a loaded element to stay the same, and what locates an indirect element (``schedule._text_key``)."""
    return {w for t in texts for w in _WORD.findall(t)}


def element(acc) -> tuple[str, tuple[str, ...]] | None:
    """The element an access reads, by its subscripts' text: affine (`a[i + 1]`) or not (`x[j]` with j a
    local the data set, `x[col[k]]`); None where reading it changes what it names (`a[k++]`, `a[j = 2]`)."""
    if any(op in t for t in acc.index_text for op in ("++", "--", "=")):
        return None
    return acc.array, acc.index_text


def mark(nodes: list, loaded: set | None = None) -> set:
    """Set ``Statement.reused`` (indices into its accesses) on every statement of ``nodes`` (one body's list, in
    program order) whose read an earlier statement of its straight-line run loaded or stored (``loaded``: what the
    run before ``nodes`` holds), and ``Statement.dead_stores`` on a store a later statement of the run overwrites
    before anything reads the element from memory; return what the run holds at its end.

    A branch's condition is evaluated on every path, so it continues the run into both sides (hlsim 0.42:
    `if (a[i] > 0) b[i] = a[i] * 2;` loads a[i] once; before, the side loaded it again, two reads and two port
    issues an iteration: an outside probe). After the branch the run holds what both sides still hold at their
    ends (a side that ends in a jump does not reach it): `if (x[i] > .5) c[i] = 1; else c[i] = 0; d[i] = x[i] * 2;`
    loads x[i] once, as GVN does (hlsim 0.48; before, the run started again after every branch, two reads and
    II 2 on a one-port memory: an outside probe). A store is dead only to a later store of the same side; a side
    that ends in a jump leaves the join, and the run goes on past the branch with what the other side holds."""
    loaded = set(loaded or ())
    pending: dict = {}  # element -> (statement, access index) of a store nothing has read back from memory yet
    for n in nodes:
        kind = getattr(n, "kind", "")
        if kind == "branch":
            _statement(n.cond, loaded, pending)
            ends = [mark(side, loaded) for side in (n.then, n.orelse) if not _jumps(side)]
            loaded = set.intersection(*ends) if ends else set()
            pending.clear()
        elif kind != "stmt":
            loaded.clear()
            pending.clear()
        else:
            _statement(n, loaded, pending)
    return loaded


def _jumps(side: list) -> bool:
    """A side whose last node is a ``break``, ``continue`` or ``return``: nothing after its branch follows it."""
    return bool(side) and getattr(side[-1], "kind", "") == "jump"


def _statement(n, loaded: set, pending: dict) -> None:
    """Mark one statement's reused reads and the earlier stores it overwrites, and update ``loaded`` with what it
    loads, stores and kills, and ``pending`` with its stores.

    A store forwards its value: ``y[i] = f(...); t = y[i];`` reads y[i] back from the register that held it
    (GVN's store-to-load forwarding), and ``b[i] = 0; b[i] += x[i];`` does not load b[i] at all and stores it once
    (dead-store elimination: the first store is overwritten before anything reads it). Before hlsim 0.53 every
    such read went to memory after the store, a store and a load latency more on the dependence chain (Deriche's
    `y1[i][j] = ...; ym1 = y1[i][j];` recurrence), and every such store took a port and a write. A store only some
    evaluations make (`c ? (b[i] = 1) : 0`) forwards nothing and overwrites nothing; one the statement reads its
    array after (`(b[i] = x, b[col[i]])`) stays made; two stores of different elements of one array in a
    statement forward neither, nor does a store whose subscript names an array the statement stores (`b[b[i]]`,
    `(b[idx[i]] = s, idx[i] = x[i])`: which element a later `b[idx[i]]` reads is not the stored one; an outside
    probe)."""
    n.reused = tuple(k for k, a in enumerate(n.accesses) if a.is_read and element(a) in loaded)
    n.dead_stores = ()  # (a branch's side is marked again in its enclosing body's run: the last marking holds)
    stores = [(k, a) for k, a in enumerate(n.accesses) if a.is_write]
    stored = {a.array for _, a in stores}
    # a read from memory keeps the array's pending stores (any element: aliasing is not judged)
    mem_reads = [(k, a.array) for k, a in enumerate(n.accesses) if a.is_read and k not in n.reused]
    loaded |= {e for a in n.accesses if a.is_read and (e := element(a)) is not None}
    written_now = written(n)
    # a store to the array kills its elements, and one to an array a subscript reads (`x[col[k]]` after a store
    # to col) the elements it names; so does a write of a name a subscript reads
    kept = {e for e in loaded if e[0] not in stored and not names_in(e[1]) & (written_now | stored)}
    loaded.intersection_update(kept)
    read_arrays = {a for _, a in mem_reads}
    for e in [e for e in pending if e[0] in read_arrays or names_in(e[1]) & (written_now | stored)]:
        del pending[e]
    for k, a in stores:
        e = element(a)
        if not forwards(n, a):
            continue
        if e in pending:
            st, j = pending.pop(e)
            st.dead_stores = (*st.dead_stores, j)
        loaded.add(e)
        if not any(j > k and array == a.array for j, array in mem_reads):  # (read back after it: it stays)
            pending[e] = (n, k)


def forwards(n, acc) -> bool:
    """Whether the store ``acc`` of statement ``n`` leaves its value for a later read of the element: not a store
    only some evaluations make, nor one whose subscript names a name or an array the statement writes, nor one of
    two stores of different elements of its array (see :func:`_statement`); ``copy_reuse`` asks the same."""
    e = element(acc)
    stores = [b for b in n.accesses if b.is_write]
    return e is not None and not acc.conditional and not names_in(e[1]) & (written(n) | {b.array for b in stores}) \
        and not any(b.array == acc.array and element(b) != e for b in stores)


# an assignment's target (`j = ...`, `j += ...`, `j <<= ...`, not `==`, `<=`, `>=`, `!=`) and a `++`/`--` operand
_ASSIGNED = re.compile(r"([A-Za-z_]\w*)\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)"
                       r"|([A-Za-z_]\w*)\s*(?:\+\+|--)|(?:\+\+|--)\s*([A-Za-z_]\w*)")


def written(n) -> set[str]:
    """Every name the statement assigns: its local, and any other in its text (the loop variable's `i++`, which
    ``writes_local`` leaves out on purpose, a nested `k = (j = j + 1)`, `c[j++] = 1`). Before, only ``writes_local``
    killed a loaded element, so `if (a[i] > 3) i++; b[i] = a[i];` reused a[i] for the new i: half the reads and II 1
    on a one-port memory (an outside probe)."""
    out = {g for m in _ASSIGNED.finditer(n.text) for g in m.groups() if g}
    return out | ({n.writes_local} if n.writes_local else set())
