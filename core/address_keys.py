"""Comparing the address keys of two accesses of one array in a scheduled body (``schedule.GraphBuilder._key``).

A key holds, per dimension, ``(symbolic part, constant, offset of the unrolled copy, coefficient of the pipelined
loop's variable)``. Two questions are asked of a pair: may they touch the same element in one iteration (the
order a store and a load keep), and how many iterations of the pipelined loop lie between a store and a later load
of the same element (a loop-carried dependence). Split from the schedule, which builds the keys."""

from __future__ import annotations


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
