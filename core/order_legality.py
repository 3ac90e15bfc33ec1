"""Whether a mapping's ``order`` keeps every dependence of the band it permutes (loop interchange legality).

Why: ``order`` reorders the loops of a perfect band; when one iteration writes an element that a later
iteration (in the kernel's order) reads or writes, the new order must still run the writer first. A
wavefront ``A[i][j] = A[i - 1][j + 1] + 1`` under ``order: [L_j, L_i]`` reads ``A[i - 1][j + 1]`` before it is
written: hlsim runs the reordered program and its functional check fails, but nothing said which field of the
mapping was at fault. Here each pair of accesses to one array, one of them a write, whose subscripts are the
same affine form up to constants gives a distance vector over the band's loops (in kernel order); the
dependence holds in the new order when the vector, read in that order, is still lexicographically positive.
Pairs this cannot compare (indirect or differently shaped subscripts) are not judged, and a band loop a
subscript does not use is compared at distance 0 (one of the iteration pairs that touch the element): what this
reports is a real violation, and it can miss others, which hlsim's functional check still catches.
"""

from __future__ import annotations

from .expr import ExprError, evaluate


def reversed_dependence(design, band: list[str], sequence: list[str]) -> str | None:
    """The first dependence the loop ``sequence`` (a permutation of ``band``) runs backwards, as text, or None."""
    loops = design.tree.loops
    var_of = {lb: loops[lb].var for lb in band}
    stmts = [n for n in loops[band[-1]].descendants() if getattr(n, "kind", "") == "stmt"]
    accesses = [a for st in stmts for a in st.accesses]
    for w in (a for a in accesses if a.is_write):
        for r in accesses:
            if r.array != w.array or r is w:
                continue
            dist = distance_vector(design, w, r, var_of, band)
            if dist is None or not any(dist.values()):
                continue  # never the same element, or within one iteration
            if not _positive([dist[lb] for lb in band]):  # r comes first in the kernel: the write must stay after it
                dist = {lb: -x for lb, x in dist.items()}
            if not _positive([dist[lb] for lb in sequence]):
                return (f"`{_text(w)}` and `{_text(r)}` touch one element {_vector(dist, band)} iterations apart, "
                        f"and {' > '.join(sequence)} would run the later one first")
    return None


def distance_vector(design, w, r, var_of: dict[str, str | None], band: list[str]) -> dict[str, int] | None:
    """Iterations of each band loop from ``w``'s access to ``r``'s of the same element, where each subscript
    is one band variable (coefficient 1) or none, the same in both, plus a constant; None otherwise."""
    if len(w.affine) != len(r.affine) or w.indirect or r.indirect:
        return None
    dist = {lb: 0 for lb in band}
    for aw, ar in zip(w.affine, r.affine, strict=True):
        if aw.coefs != ar.coefs:
            return None
        used = [v for v, c in aw.coefs.items() if c]
        if len(used) > 1 or any(aw.coefs[v] != 1 for v in used):
            return None
        try:
            delta = int(evaluate(aw.const, design.sizes)) - int(evaluate(ar.const, design.sizes))
        except (ExprError, TypeError, ValueError):
            return None
        if not used:
            if delta:
                return None  # different elements
            continue
        lb = next((b for b in band if var_of[b] == used[0]), None)
        if lb is None:
            if delta:
                return None
            continue
        dist[lb] = delta  # w at v touches element v + cw, r at v' element v' + cr: the same one when v' - v = cw - cr
    return dist


def _positive(vec: list[int]) -> bool:
    """Lexicographically positive: the first non-zero entry is > 0 (all zero: the same iteration, no carried
    dependence)."""
    return next((x > 0 for x in vec if x), False)


def _vector(dist: dict[str, int], band: list[str]) -> str:
    return "(" + ", ".join(f"{lb} {dist[lb]:+d}" for lb in band) + ")"


def _text(a) -> str:
    return a.array + "".join(f"[{t}]" for t in a.index_text)
