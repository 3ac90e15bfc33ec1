"""Comparing the address keys of two accesses of one array in a scheduled body (``schedule.GraphBuilder._key``).

A key holds, per dimension, ``(symbolic part, constant, offset of the unrolled copy, coefficient of the pipelined
loop's variable)``. Two questions are asked of a pair: may they touch the same element in one iteration (the
order a store and a load keep), and how many iterations of the pipelined loop lie between a store and a later load
of the same element (a loop-carried dependence), and from that the body's carried dependences (:func:`carried`).
Split from the schedule, which builds the keys."""

from __future__ import annotations

import attrs

from .load_reuse import names_in


@attrs.define
class Carried:
    """A dependence of the pipelined loop from node ``src`` of one iteration to node ``dst`` of the
    iteration ``distance`` later."""

    src: int
    dst: int
    distance: int
    what: str


def may_alias(k1: tuple | None, k2: tuple | None) -> bool:
    """Two accesses of one array may touch the same element unless, in some dimension, their
    symbolic parts agree and their offsets (constant + copy offset) provably differ."""
    if k1 is None or k2 is None or len(k1) != len(k2):
        return True
    for a, b in zip(k1, k2, strict=True):
        if a[0] != b[0]:
            continue
        if isinstance(a[1], int) and isinstance(b[1], int):
            if a[1] + a[2] != b[1] + b[2]:
                return False
        elif a[1] == b[1] and a[2] != b[2]:
            return False
    return True


def distance(ks: tuple | None, kl: tuple | None, advance: int) -> int | None:
    """Iterations from a store to a later load of the same element, the pipelined loop's variable moving by
    ``advance`` an iteration (its step times the copies of its body): None if never; 1 where it cannot be told
    (an index that is not affine, or accesses that cannot be compared)."""
    if ks is None or kl is None or len(ks) != len(kl):
        return 1
    dist = None
    for (syms, cs, ns, cvs), (syml, cl, nl, cvl) in zip(ks, kl, strict=True):
        if syms != syml or cvs != cvl or not isinstance(cs, int) or not isinstance(cl, int):
            continue  # this dimension cannot be compared; another one may still separate them
        delta = (cs + ns) - (cl + nl)  # load index + cv * advance * k == store index
        if cvs == 0:
            if delta != 0:
                return None
            continue
        step = cvs * advance
        if delta % step:
            return None
        k = delta // step
        if dist is not None and k != dist:
            return None
        dist = k
    if dist is None:
        return 1  # the same element every iteration, or dimensions that cannot be compared
    return dist if dist >= 1 else None


def carried(g) -> list[Carried]:
    """The loop-carried dependences of a built body (``schedule.GraphBuilder``): each local read before the body
    writes it, from its producer; each stored element a later iteration of the pipelined loop loads."""
    out: list[Carried] = []
    for v, readers in g.live_in.items():
        # a local the body leaves as a copy of another's last value (`t = u; u = v; v = t + x;`) passes that
        # one's value on an iteration later: v's add reads v from two iterations back
        name, dist, seen = v, 1, {v}
        while g.local_def.get(name, -1) < 0 and g.alias.get(name) not in (None, *seen):
            name, dist = g.alias[name], dist + 1
            seen.add(name)
        if g.local_def.get(name, -1) >= 0:
            for r in readers:
                out.append(Carried(g.local_def[name], r, dist, f"local `{v}`"))
    if not g.pipelined:
        return out
    # (a while loop has no variable: its indices are the same element every iteration, or not affine in
    # anything, distance 1 either way; before hlsim 0.29 it kept no memory dependence at all)
    for array, stores in g.stores.items():
        for ks, ns, ts in stores:
            for kl, nl, tl in g.loads.get(array, []):
                dist = distance(ks, kl, g.advance)
                if dist is not None:
                    out.append(Carried(ns, nl, dist, f"`{ts}` stored, `{tl}` loaded {dist} iteration(s) later"))
    return out


def text_key(g, acc) -> tuple | None:
    """Where an access without an affine key reads (``x[j]``, ``x[col[k]]``): its subscripts' text, with the
    offsets of the unrolled loops they name and the copy's own locals (a tree reduction's); None where a
    geometric loop's copy has no offset."""
    if acc is None:
        return None
    env = tuple(sorted((v, g.env[v], g.first.get(v, v)) for v in names_in(acc.index_text) if v in g.env))
    if any(o is None for _, o, _ in env):
        return None
    return ("text", acc.index_text, env, g.copy_suffix)


def same_element(g, acc, key: tuple | None) -> tuple | None:
    """Where an access of a body ``g`` (``schedule.GraphBuilder``) reads, to find it again: an affine key with each
    unrolled loop's first value in it (a copy's offset counts from there: copy 0 of `x[k]`, k from 1, is x[1], not
    x[0]; an outside probe) and the constant and the offset as one number (`b[i + 1]` of copy 0 is `b[i]` of copy
    1), else the text key."""
    if key is None:
        return text_key(g, acc)
    out = []
    for a, (sym, const, num, cv) in zip(acc.affine, key, strict=True):  # (the key's offsets count from fixed firsts)
        firsts = [(v, g.first.get(v, v), c) for v, c in a.coefs.items() if c and v in g.env]
        base = tuple(sorted((v, f, c) for v, f, c in firsts if not isinstance(f, int)))
        out.append((sym, base, const + num, 0, cv) if isinstance(const, int) else (sym, base, const, num, cv))
    return tuple(out)
