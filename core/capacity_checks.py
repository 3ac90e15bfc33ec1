"""The buffer-capacity check of a design: the tiles of the arrays placed on each on-chip level must fit it, two
copies of a tile that changes over the nest on a double-buffered level (``design_checks`` runs it with the other
cross-file checks; split out to keep that module in its size)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .design_checks import _mdiag
from .errors import Diagnostic, SpecError

if TYPE_CHECKING:
    from .design import Design


def check_capacity(d: Design) -> list[Diagnostic]:
    """Buffer capacity per on-chip level: the tiles of the arrays placed there must fit."""
    a, w, m = d.arch, d.workload, d.mapping
    by_level: dict[str, list[tuple[str, float, float]]] = {}  # level -> (array, bits, copies)
    for arr in w.arrays:
        if m.levels and arr not in m.placement:
            continue  # placed by multi-level tiling: its tiles are checked per level by the nest analysis
        lvl = d.placement(arr)
        if a.level(lvl).kind == "dram":
            continue
        try:
            elems = d.footprint_elems(arr)
        except SpecError:
            continue  # a loop without an expected trip count: ``validate`` warns (llmulator.checks)
        # a double-buffered level holds the next tile beside this one where a loop indexing the array is tiled
        copies = float(a.level(lvl).tile_copies(_tiled(d, arr)))
        by_level.setdefault(lvl, []).append((arr, elems * w.arrays[arr].bits * copies, copies))
    diags: list[Diagnostic] = []
    for lvl, items in by_level.items():
        level = a.level(lvl)
        need = sum(b for _, b, _ in items)
        have = level.capacity_bits * level.instances
        if need > have:
            arr0 = max(items, key=lambda t: t[1])[0]
            detail = ", ".join(f"{n} {_size(b)}" + (" (two copies: double-buffered)" if c > 1 else "")
                               for n, b, c in items)
            diags.append(_mdiag(m, ("placement", arr0) if arr0 in m.placement else ("placement",),
                                f"buffer capacity exceeded at level {lvl}: tiles need {_size(need)} "
                                f"({detail}), the level holds {_size(have)}",
                                "tiles that fit the level",
                                "use smaller tiles or place an array further out, or raise capacity_kib of "
                                f"{lvl}" + (f" in {a.source_map.file}" if a.source_map else "")))
    return diags


def _size(bits: float) -> str:
    """Bits as bytes below 1 KiB, else KiB to two places (128 B against 124 B both read "0.12 KiB": a probe)."""
    return f"{bits / 8:g} B" if bits < 8192 else f"{bits / 8192:.2f} KiB"


def _tiled(d: Design, arr: str) -> bool:
    """Whether a loop whose variable indexes ``arr`` is cut into tiles (its tile below its trips): the array's
    tile then changes over the nest, and a double-buffered level fetches the next one beside it."""
    for st, _loops in d.statements_with_loops():
        for acc in st.accesses:
            for aff in (acc.affine or []) if acc.array == arr else []:
                for v, c in (aff.coefs.items() if aff is not None else ()):
                    loop = d._loop_of_var(v)
                    try:
                        if c and loop is not None and d.tile(loop.label) < d.trips(loop.label):
                            return True
                    except SpecError:
                        return True  # a trip count only the run knows: its tiles may differ
    return False
