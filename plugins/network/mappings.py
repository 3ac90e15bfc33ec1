"""A mapping for each layer: a named dataflow, or the best of them by a per-layer search.

Dataflows (which loops sit on the PE array's rows and columns; the rest run
in time):

======== ===================== ====================== ===================
kind     ws (weight-stationary) os (output-stationary) rs (row-stationary)
======== ===================== ====================== ===================
conv     rows C, cols K         rows K, cols P x Q      rows R x C, cols P
depthwise rows R, cols C        rows P, cols C          rows R x C, cols P
gconv    rows C, cols K x G     rows K x G, cols P x Q  rows R x C, cols P
gemm/bmm rows K, cols N         rows M, cols N          (= ws)
======== ===================== ====================== ===================

For each dataflow the search is ``plugins/dse``'s: a space over the tiles of
the spatial loops (how much of the array they fill), the temporal tiles of the
output and weight loops (what fits the buffer, how often data is re-fetched)
and a few loop orders, priced by the analytical estimator's vectorised path
(``dse``'s Evaluator) and searched by ``dse``'s strategies (exhaustive up to
the budget, else evolutionary). ``auto`` searches every dataflow and keeps the
best by the objective. Layers without MACs (pooling, element-wise, softmax)
and architectures without a PE array get one mapping: the innermost loop
pipelined at II 1, the outer loop tiled until the tiles fit the buffer.

Arrays are placed as the library's GEMM mapping for the architecture places
its operands (inputs as A, weights as B, outputs as C), else in the first
on-chip SRAM.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from llmulator.design import Design, check_design
from llmulator.errors import SpecError, UserError

from .workloads import MAC_KINDS

DATAFLOWS = ("ws", "os", "rs")

_TABLE = {
    "conv": {"ws": (["c"], ["k"]), "os": (["k"], ["p", "q"]), "rs": (["r", "c"], ["p"])},
    "depthwise": {"ws": (["r"], ["c"]), "os": (["p"], ["c"]), "rs": (["r", "c"], ["p"])},
    "gconv": {"ws": (["c"], ["k", "g"]), "os": (["k", "g"], ["p", "q"]), "rs": (["r", "c"], ["p"])},
    "gemm": {"ws": (["k"], ["n"]), "os": (["m"], ["n"]), "rs": (["k"], ["n"])},
    "bmm": {"ws": (["k"], ["n"]), "os": (["m"], ["n"]), "rs": (["k"], ["n"])},
}
# loops tiled in time to fit the buffer and trade re-fetches (when not on the array)
_TEMPORAL = {"conv": ["p", "k", "c"], "depthwise": ["p", "c"], "gconv": ["p", "k", "g"], "gemm": ["m", "n", "k"],
             "bmm": ["m", "n", "k"]}


def gemm_levels(arch) -> dict[str, str | None]:
    """Where the library's GEMM mapping for this architecture places its operands (A, B, C)."""
    from llmulator import library
    from llmulator.specs import load_mapping
    # the library names its GEMM mappings gemm-*: read those first (parsing every mapping file costs ~0.3 s)
    for root in library.roots():
        for f in library.files(root, "mapping"):
            if not f.stem.startswith("gemm"):
                continue
            try:
                m = load_mapping(f)
            except SpecError:
                continue
            if m.workload == "gemm" and m.architecture == arch.name:
                return {"in": m.placement.get("A"), "w": m.placement.get("B"), "out": m.placement.get("C")}
    for e in library.entries("mapping"):
        if e.get("workload") == "gemm" and e.get("architecture") == arch.name:
            try:
                m = load_mapping(e["path"])
            except SpecError:
                continue
            return {"in": m.placement.get("A"), "w": m.placement.get("B"), "out": m.placement.get("C")}
    return {"in": None, "w": None, "out": None}


def placement_for(levels: dict, arch_doc: dict, arrays: list[str], kind: str) -> dict[str, str]:
    """Memory level of each array: as the library's GEMM mapping for this architecture places A, B, C."""
    names = [m["name"] for m in arch_doc["memory"]]
    onchip = next((m["name"] for m in arch_doc["memory"] if m["kind"] == "sram"),
                  next((m["name"] for m in arch_doc["memory"] if m["kind"] != "dram"), names[0]))
    role = {"I": "in", "A": "in", "X": "in", "W": "w", "B": "w" if kind in ("gemm", "bmm") else "in",
            "O": "out", "C": "out", "Y": "out"}
    out = {}
    for a in arrays:
        lv = levels.get(role.get(a, "in"))
        out[a] = lv if lv in names else onchip
    return out


def _spatial_tiles(bound: int, dim: int) -> list[int]:
    """Tiles of a loop bound to an array axis of ``dim`` PEs: those that fill it, fewest folds first."""
    top = min(bound, dim)
    vals = {top}
    f0 = math.ceil(bound / dim)
    for f in range(f0, f0 + 2):
        vals.add(math.ceil(bound / f))
    p = 1
    while p <= top:
        if p * 4 >= top:
            vals.add(p)
        p *= 2
    return sorted(v for v in vals if 1 <= v <= top)


def _temporal_tiles(bound: int, n: int = 5) -> list[int]:
    vals = []
    t = bound
    while len(vals) < n and t >= 1:
        vals.append(int(t))
        if t == 1:
            break
        t = math.ceil(t / 2)
    return vals


class Mapper:
    """Chooses and caches (by layer shape) the mapping of each layer on one architecture."""

    def __init__(self, arch_path, dataflow: str = "auto", objective: str = "cycles", budget: int = 2000,
                 doc: dict[str, Any] | None = None):
        """``arch_path``: the architecture YAML; or ``doc``: its body (``dse --network``'s hardware points)."""
        from llmulator.schema import validate
        from llmulator.specs import architecture_from_dict
        from llmulator.yamlsrc import SourceMap, load_yaml
        if doc is not None:
            data, smap = {"architecture": doc}, SourceMap(f"<architecture {doc.get('name', '')}>")
        else:
            data, smap = load_yaml(arch_path)
        validate("architecture", data, smap)
        self.arch_doc = data["architecture"]
        self.arch = architecture_from_dict(self.arch_doc, smap)
        self.arch_smap = smap
        self.dataflow = dataflow
        self.objective = objective
        self.budget = budget
        self.cache: dict[tuple, tuple[Design | None, str, str]] = {}
        self.pruned = 0  # dataflow searches skipped by the compute bound
        self._est = None
        self.levels = gemm_levels(self.arch)
        if dataflow != "auto" and self.arch.pe_array is None:
            raise UserError(f"--dataflow {dataflow}: architecture '{self.arch.name}' has no PE array (only "
                            "--dataflow auto, which pipelines each layer's loops)")

    @property
    def est(self):
        if self._est is None:
            from llmulator import plugins
            self._est = plugins.get("estimators", "analytical")
        return self._est

    def design(self, layer, key: tuple) -> tuple[Design | None, str, str]:
        """(design or None, dataflow used, why none) of a layer; repeated shapes cost nothing."""
        if key in self.cache:
            return self.cache[key]
        from llmulator.specs import from_dict

        from .workloads import workload_body
        name = "net_" + "_".join([layer.kind] + [f"{k}{v}" for k, v in layer.params.items()
                                                 if not isinstance(v, bool) and not (k in ("SH", "SW", "DH", "DW")
                                                                                     and v == 1)])
        body = workload_body(layer, self.arch, name)
        try:
            wl = from_dict("workload", body, f"<workload of layer {layer.name}>")
        except SpecError as e:
            r = (None, "-", _first(e))
            self.cache[key] = r
            return r
        if layer.kind in MAC_KINDS and self.arch.pe_array is not None:
            r = self._search(layer, wl, body)
        else:
            r = self._fixed(layer, wl, body)
        self.cache[key] = r
        return r

    # -- MAC layers on a PE array: dse's search per dataflow -----------------------------------
    def _space(self, kind: str, wl, body: dict, df: str):
        from llmulator.yamlsrc import SourceMap
        from llmulator_plugins.dse.space import Dim
        pe = self.arch.pe_array
        rows, cols = _TABLE[kind][df]
        params = body["parameters"]
        labels = [ln.split(":")[0].strip()[2:] for ln in body["kernel"].splitlines() if ln.strip().startswith("L_")]
        bound = {lb: int(params[lb.upper()]) if lb.upper() in params else 1 for lb in labels}
        bound["n"] = int(params.get("N", 1))
        loops: dict[str, dict] = {}
        dims: list = []
        for axis, which, size in (("rows", rows, pe.rows), ("cols", cols, pe.cols)):
            left = size
            for i, lb in enumerate(which):
                if lb not in bound:
                    continue
                loops[f"L_{lb}"] = {"spatial": axis}
                if i == 0 and len(which) > 1 and lb in ("r",):  # filter rows: whole, the next loop fills the rest
                    t = min(bound[lb], size)
                    loops[f"L_{lb}"]["tile"] = t
                    left = max(1, size // t)
                    continue
                vals = _spatial_tiles(bound[lb], left)
                loops[f"L_{lb}"]["tile"] = vals[-1]
                dims.append(Dim(f"loop.L_{lb}.tile", tuple(vals), True, ()))
        for lb in _TEMPORAL[kind]:
            if f"L_{lb}" in loops or lb not in bound or bound[lb] <= 1:
                continue
            dims.append(Dim(f"loop.L_{lb}.tile", tuple(_temporal_tiles(bound[lb], 4)), True, ()))
        band = labels
        orders = [band]
        if "r" in band and "p" in band:
            # the filter window outside the output positions: a weight stays in its PE while the outputs stream
            # (without it the window loops run innermost and every weight is fetched again each cycle; on
            # ResNet-18's 3x3 layers that halves the cycles of ws)
            win = [x for x in band if x in ("r", "s")]
            pos = [x for x in band if x in ("p", "q")]
            orders.append([x for x in band if x not in win and x not in pos] + win + pos)
        for lb in _TEMPORAL[kind]:
            if lb in band and f"L_{lb}" not in loops:
                o = [lb] + [x for x in band if x != lb]
                if o not in orders:
                    orders.append(o)
        dims.append(Dim("order", tuple(tuple(f"L_{x}" for x in o) for o in orders[:4]), True, ()))
        arrays = list(body["arrays"])
        mapping = {"version": 1, "name": f"{df}", "workload": body["name"], "architecture": self.arch.name,
                   "loops": loops, "order": [f"L_{x}" for x in band],
                   "placement": placement_for(self.levels, self.arch_doc, arrays, kind)}
        sp = _NetSpace(name=f"{body['name']}-{df}", file="<network>", dims=dims, arch_doc=self.arch_doc,
                       mapping_doc=mapping, workload=wl, preset=None, objective=self.objective,
                       smap=SourceMap("<network space>"))
        sp.arch_obj = self.arch
        return sp

    def _compute_bound(self, layer, body: dict, df: str) -> float:
        """Fewest cycles any mapping of this dataflow can take: the layer's MACs over the most PEs its spatial
        loops can fill (the analytical model's compute cycles are never below that)."""
        pe = self.arch.pe_array
        rows, cols = _TABLE[layer.kind][df]
        params = body["parameters"]
        bound = {lb: int(params.get(lb.upper(), 1)) for lb in set(rows) | set(cols)}
        used = 1
        for which, size in ((rows, pe.rows), (cols, pe.cols)):
            if len(which) > 1 and which[0] == "r":  # as _space: filter rows whole, the next loop in what is left
                t = min(bound["r"], size)
                fill = t * min(math.prod(bound[lb] for lb in which[1:]), max(1, size // t))
            else:  # any tiles whose product fits the axis
                fill = math.prod(bound[lb] for lb in which)
            used *= max(1, min(fill, size))
        return layer.macs / used if layer.macs else 0.0

    def _search(self, layer, wl, body) -> tuple[Design | None, str, str]:
        import numpy as np
        from llmulator_plugins.dse import search
        from llmulator_plugins.dse.evaluate import Evaluator
        from llmulator_plugins.dse.ranking import rank_points, refine
        dfs = DATAFLOWS if self.dataflow == "auto" else (self.dataflow,)
        if layer.kind in ("gemm", "bmm"):
            dfs = tuple(dict.fromkeys("ws" if d == "rs" else d for d in dfs))
        best = None
        reasons: dict[str, int] = {}
        bounds = {df: self._compute_bound(layer, body, df) for df in dfs}
        if self.objective == "cycles" and len(dfs) > 1:
            # the dataflow that can fill the most PEs first; a later one whose compute bound (MACs / the PEs its
            # spatial loops can fill) is already above the best cycles found cannot win, and is not searched.
            # Ties keep the first in DATAFLOWS order, as without the pruning
            dfs = tuple(sorted(dfs, key=lambda d: (bounds[d], DATAFLOWS.index(d))))
        for df in dfs:
            if self.objective == "cycles" and best is not None and bounds[df] > best[0]:
                self.pruned += 1
                continue
            space = self._space(layer.kind, wl, body, df)
            ev = Evaluator(space, self.est, self.objective)
            res, _ = search.run(ev, self.budget, "auto", seed=0)
            if not len(res.get("objective", [])):
                continue
            obj = res["objective"]
            for r in res["reason"]:
                if r:
                    reasons[r] = reasons.get(r, 0) + 1
            # the batch's figures are lower bounds where not exact: a dataflow whose best bound already loses to
            # the best exact figure found cannot win; else its best point is made exact (dse's ranking.refine)
            if best is not None and np.isfinite(obj).any() and \
                    (float(np.nanmin(obj)), DATAFLOWS.index(df)) > (best[0], DATAFLOWS.index(best[1])):
                continue
            refine(ev, res, self.objective, 1, with_front=False)
            # ties on the objective (mappings the model cannot tell apart) break on energy, then area, as in dse
            _, ranked = rank_points(res, self.objective)
            if not ranked.size:
                continue
            i = int(ranked[0])
            if best is None or (obj[i], DATAFLOWS.index(df)) < (best[0], DATAFLOWS.index(best[1])):
                best = (float(obj[i]), df, space, int(res["point"][i]))
        if best is None:
            why = ", ".join(f"{k} ({v})" for k, v in sorted(reasons.items(), key=lambda t: -t[1])) or "no points"
            return None, "-", f"no valid mapping found ({why})"
        _, df, space, point = best
        values = space.values_of(point)
        try:
            d = space.design_from(values, check=True)
        except SpecError as e:
            return None, df, _first(e)
        m = space.mapping_body(values)
        m["name"] = f"{body['name']}-{df}"
        d.mapping = _rebuild_mapping(m)
        return d, df, ""

    # -- everything else: one pipelined mapping, tiled to fit ----------------------------------
    def _fixed(self, layer, wl, body) -> tuple[Design | None, str, str]:
        labels = [ln.split(":")[0].strip() for ln in body["kernel"].splitlines() if ln.strip().startswith("L_")]
        params = body["parameters"]
        arrays = list(body["arrays"])
        top = labels[0]
        var = top[2:]
        bound = int(params.get(var.upper(), params.get("N", params.get("ROWS", 1))))
        # the loop pipelined at II 1: the output columns of a pooling window (its R x S inside), the exp pass of
        # a softmax, else the innermost loop; element-wise loops also unrolled over the vector units
        inner = {"pool": "L_q", "softmax": "L_exp"}.get(layer.kind, labels[-1])
        unroll = 1
        if layer.kind == "eltwise":
            counts = [u.count for c, u in self.arch.operators.items() if c in ("add", "cmp", "mul")]
            unroll = max(1, min(min(counts, default=1), 16, bound))
        placement = placement_for(self.levels, self.arch_doc, arrays, layer.kind)

        def attempt(t: int):
            m = {"version": 1, "name": f"{body['name']}-pipelined", "workload": body["name"],
                 "architecture": self.arch.name, "loops": {inner: {"pipeline_ii": 1}}, "placement": placement}
            if unroll > 1:
                m["loops"][inner]["unroll"] = unroll
            if t < bound:
                m["loops"].setdefault(top, {})["tile"] = t
            try:
                d = Design(self.arch, wl, _build_mapping(m))
                check_design(d)
                return d, ""
            except SpecError as e:
                return None, _first(e)

        # the largest tile of the outer loop that fits: a binary search over halvings
        tiles = _temporal_tiles(bound, 40)
        if unroll > 1:  # tiles a multiple of the unroll factor
            p2 = 1 << (bound.bit_length() - 1)
            tiles = [bound] + [t for t in (p2 >> k for k in range(40)) if unroll <= t < bound]
        d, why = attempt(tiles[0])
        if d is not None:
            return d, "pipelined", ""
        if "buffer capacity" not in why:
            return None, "-", why
        lo, hi, best = 1, len(tiles) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            d, w = attempt(tiles[mid])
            if d is not None:
                best, hi = d, mid - 1
            else:
                why, lo = w, mid + 1
        return (best, "pipelined", "") if best is not None else (None, "-", why)


def _net_space_class():
    from llmulator_plugins.dse.space import Space

    class NetSpace(Space):
        """A dse space whose points vary the mapping only: the architecture is built once, not per point."""

        arch_obj = None

        def design_from(self, values, check: bool = True) -> Design:
            d = Design(self.arch_obj, self.workload, _build_mapping(self.mapping_body(values),
                                                                   f"<network mapping {self.name}>"), self.preset)
            if check:
                check_design(d)
            return d

    return NetSpace


def _NetSpace(**kw):
    global _NET_SPACE
    if _NET_SPACE is None:
        _NET_SPACE = _net_space_class()
    return _NET_SPACE(**kw)


_NET_SPACE = None


def _first(e: SpecError) -> str:
    """The first diagnostic's message (and how many more there are): one line for a table."""
    msgs = [d.message for d in e.diagnostics] or [str(e)]
    return msgs[0] + (f" (and {len(msgs) - 1} more)" if len(msgs) > 1 else "")


def _rebuild_mapping(body: dict[str, Any]):
    return _build_mapping(copy.deepcopy(body))


def _build_mapping(body: dict[str, Any], source: str = "<network mapping>"):
    """A mapping this module wrote, built without the JSON-schema pass (a third of the search's time on
    ResNet-18): its fields are generated here, and ``check_design`` still runs every cross-file check.
    ``LLMULATOR_NETWORK_VALIDATE=1`` validates them all the same."""
    import os

    from llmulator.specs import from_dict, mapping_from_dict
    from llmulator.yamlsrc import SourceMap
    if os.environ.get("LLMULATOR_NETWORK_VALIDATE"):
        return from_dict("mapping", body, source)
    return mapping_from_dict(body, SourceMap(source))


def mapping_body(d: Design) -> dict[str, Any]:
    """The plain spec body of a design's mapping (for --save)."""
    m = d.mapping
    loops = {}
    for lb, lm in m.loops.items():
        f = {k: getattr(lm, k) for k in ("tile", "spatial", "unroll", "pipeline_ii") if getattr(lm, k) is not None}
        if f:
            loops[lb] = f
    out = {"version": 1, "name": m.name, "workload": d.workload.name, "architecture": d.arch.name, "loops": loops}
    if m.order:
        out["order"] = list(m.order)
    if m.placement:
        out["placement"] = dict(m.placement)
    return out

