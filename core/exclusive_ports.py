"""The two sides of a branch never run together: what they both do to one element takes one port.

An HLS tool predicates an ``if`` in a pipelined body and muxes what its sides write: ``if (c) b[i] = 5; else
b[i] = 9;`` is one store of the selected value, and ``if (c) y = a[i] * 2; else y = a[i] + 1;`` one load of
``a[i]``. Before hlsim 0.34 the schedule gave each side's access its own port (II 2 on a one-port memory where
the tool reaches 1). Loads of an array either side stores are left alone (a store may change what the other
side's load would see). Accesses whose index is not affine (no address key) are not compared.
"""

from __future__ import annotations


def share_ports(nodes: list, before: tuple, then_mem: tuple, else_mem: tuple) -> None:
    """Take the port off all but one access per element that both sides make (``schedule.GraphBuilder``'s
    nodes; ``before``/``then_mem``/``else_mem``: its (stores, loads) lists of ``(key, node, text)`` per array
    before the branch, after the then side and after the else side). A shared store is the last of them and
    waits for every side's operands; a shared load is the first."""
    then_st, then_ld, else_st, else_ld = (
        {a: [e for e in accs if e not in before[k % 2].get(a, [])] for a, accs in side.items()}
        for k, side in enumerate((*then_mem, *else_mem)))
    for stores, mine, theirs in ((True, then_st, else_st), (False, then_ld, else_ld)):
        for array in set(mine) & set(theirs):
            if not stores and (then_st.get(array) or else_st.get(array)):
                continue
            for key in {k for k, _, _ in mine[array] if k is not None} & {k for k, _, _ in theirs[array]}:
                ported = sorted(i for k, i, _ in mine[array] + theirs[array]
                                if k == key and nodes[i].resource is not None)
                if len(ported) < 2:
                    continue
                keep = ported[-1] if stores else ported[0]
                for i in ported:
                    if i != keep:
                        nodes[i].resource = None
                        if stores:  # (deps point backwards: every other store comes before the kept one)
                            nodes[keep].deps = sorted(set(nodes[keep].deps) | set(nodes[i].deps))
