"""The layer SCALE-Sim is asked to simulate, read from a Design (docs/scalesim.md).

A GEMM (einsum ``C[m,n] += A[m,k] * B[k,n]``, any operand order or storage
transpose) becomes a ``-i gemm`` row ``name, M, N, K,``; a 2-D convolution
(einsum like ``O[k,p,q] += W[k,c,r,s] * I[c,p+r,q+s]``, optional stride
coefficient on p and q) a conv row ``name, IfmapH, IfmapW, FilterH, FilterW,
Channels, NumFilter, Stride,``. Sizes are the trip counts of the design's
loops; each loop gets its role in SCALE-Sim's im2col view (M, N or K).
Anything else is a UserError.
"""

from __future__ import annotations

import re

import attrs
from llmulator.design import Design
from llmulator.errors import UserError
from llmulator.expr import ExprError, evaluate


# -- the layer: what SCALE-Sim is asked to simulate ------------------------------------------------
@attrs.frozen
class Layer:
    """One SCALE-Sim layer, plus the role (M, N or K) of each loop label of the design."""

    kind: str  # "gemm" or "conv"
    dims: dict[str, int]  # gemm: M N K; conv: IfmapH IfmapW FilterH FilterW Channels NumFilter Stride
    roles: dict[str, str]  # loop label -> "M" | "N" | "K"
    name: str = "layer"

    GEMM_COLS = ("M", "N", "K")
    CONV_COLS = ("IfmapH", "IfmapW", "FilterH", "FilterW", "Channels", "NumFilter", "Stride")

    @property
    def macs(self) -> int:
        d = self.dims
        if self.kind == "gemm":
            return d["M"] * d["N"] * d["K"]
        oh = (d["IfmapH"] - d["FilterH"]) // d["Stride"] + 1
        ow = (d["IfmapW"] - d["FilterW"]) // d["Stride"] + 1
        return oh * ow * d["FilterH"] * d["FilterW"] * d["Channels"] * d["NumFilter"]

    def topology_csv(self) -> str:
        """SCALE-Sim's topology CSV; every row ends with the trailing comma SCALE-Sim requires."""
        cols = self.GEMM_COLS if self.kind == "gemm" else self.CONV_COLS
        name = re.sub(r"[^A-Za-z0-9_]", "_", self.name) or "layer"
        head = "Layer, " + ", ".join(cols) + ",\n"
        return head + name + ", " + ", ".join(str(self.dims[c]) for c in cols) + ",\n"


_ACCESS = re.compile(r"^\s*(\w+)\s*\[([^\]]*)\]\s*$")
_EINSUM = re.compile(r"^\s*(\w+\s*\[[^\]]*\])\s*\+=\s*(\w+\s*\[[^\]]*\])\s*\*\s*(\w+\s*\[[^\]]*\])\s*$")


def _parse_access(text: str) -> tuple[str, list[str]] | None:
    m = _ACCESS.match(text)
    if not m:
        return None
    return m.group(1), [re.sub(r"\s+", "", i) for i in m.group(2).split(",")]


def _is_var(index: str) -> bool:
    return re.fullmatch(r"[A-Za-z_]\w*", index) is not None


def _strided(index: str, names: dict[str, int]) -> list[tuple[str, int]] | None:
    """``p+r``, ``2*p+r``, ``p*STRIDE+r`` -> [(var, coefficient), ...]; None if not of that form."""
    out = []
    for term in index.split("+"):
        factors = term.split("*")
        if not 1 <= len(factors) <= 2 or not all(factors):
            return None
        var = [f for f in factors if _is_var(f) and f not in names]
        if len(var) != 1:
            return None
        coef = 1
        for f in factors:
            if f != var[0]:
                try:
                    coef = int(evaluate(f, names))
                except (ExprError, TypeError, ValueError):
                    return None
        out.append((var[0], coef))
    return out


class _Sizes:
    """Trip count of each einsum index variable, from the design's loops (or its parameters)."""

    def __init__(self, d: Design):
        self.d = d
        self.by_var: dict[str, list[str]] = {}
        for label, loop in d.tree.loops.items():
            if loop.var:
                self.by_var.setdefault(loop.var, []).append(label)

    def labels(self, var: str) -> list[str]:
        return self.by_var.get(var, [])

    def trips(self, var: str) -> int:
        labels = self.labels(var)
        if len(labels) == 1:
            return int(round(self.d.trips(labels[0])))
        for cand in (var.upper(), var):
            if cand in self.d.sizes:
                return int(self.d.sizes[cand])
        raise UserError(f"scalesim: cannot tell the size of einsum index '{var}' of workload "
                        f"'{self.d.workload.name}': {len(labels)} loops iterate over it and there is no "
                        f"parameter {var.upper()}")


def describe_layer(d: Design) -> Layer:
    """The SCALE-Sim layer equivalent to the design's workload, or a UserError saying why not."""
    w = d.workload
    names = {**d.sizes, **{k: v["value"] for k, v in w.scalars.items()}}
    if w.einsum:
        m = _EINSUM.match(w.einsum)
        parts = [_parse_access(g) for g in m.groups()] if m else [None]
        if all(p is not None for p in parts):
            out, a, b = parts
            layer = _gemm_layer(d, out, a, b) or _conv_layer(d, out, a, b, names)
            if layer is not None:
                return layer
    elif w.name in ("gemm", "conv2d"):
        return _layer_by_name(d)
    raise UserError(
        f"scalesim: workload '{w.name}' is neither a GEMM nor a 2-D convolution, the only layers SCALE-Sim "
        f"simulates (einsum: {w.einsum or 'none'}); supported forms: "
        "'C[m,n] += A[m,k] * B[k,n]' and 'O[k,p,q] += W[k,c,r,s] * I[c,p+r,q+s]' (optionally strided, "
        "e.g. I[c,2*p+r,2*q+s])")


def _gemm_layer(d: Design, out, a, b) -> Layer | None:
    (_, oi), (_, ai), (_, bi) = out, a, b
    if not (len(oi) == len(ai) == len(bi) == 2 and all(map(_is_var, oi + ai + bi))):
        return None
    i, j = oi
    red = (set(ai) | set(bi)) - {i, j}
    if i == j or len(red) != 1 or len(set(ai)) != 2 or len(set(bi)) != 2:
        return None
    (k,) = red
    if {i, k} == set(ai) and {j, k} == set(bi):
        pass
    elif {i, k} == set(bi) and {j, k} == set(ai):
        pass
    else:
        return None
    sz = _Sizes(d)
    roles = {lb: r for var, r in ((i, "M"), (j, "N"), (k, "K")) for lb in sz.labels(var)}
    return Layer("gemm", {"M": sz.trips(i), "N": sz.trips(j), "K": sz.trips(k)}, roles, d.workload.name)


def _conv_layer(d: Design, out, a, b, names) -> Layer | None:
    (_, oi) = out
    if len(oi) != 3 or not all(map(_is_var, oi)):
        return None
    # the input operand is the one indexed by sums (p + r); the weight is indexed by plain variables
    pair = next(((w, i) for w, i in ((a, b), (b, a))
                 if len(w[1]) == 4 and all(map(_is_var, w[1])) and len(i[1]) == 3), None)
    if pair is None:
        return None
    (_, wi), (iname, ii) = pair
    plain = [x for x in ii if _is_var(x)]
    sums = [_strided(x, names) for x in ii if not _is_var(x)]
    if len(plain) != 1 or len(sums) != 2 or any(s is None or len(s) != 2 for s in sums):
        return None
    c = plain[0]
    filt = [x for x in oi if x in wi and x not in ii]
    if len(filt) != 1 or c not in wi or c in oi:
        return None
    kf = filt[0]
    spatial = []  # (output var, stride, filter var) for H then W, in the input's dimension order
    for s in sums:
        (v0, c0), (v1, c1) = s
        if v0 in oi and v1 in wi and v1 not in oi and c1 == 1:
            spatial.append((v0, c0, v1))
        elif v1 in oi and v0 in wi and v0 not in oi and c0 == 1:
            spatial.append((v1, c1, v0))
        else:
            return None
    (ph, sh, rh), (pw, sw, rw) = spatial
    if {ph, pw, kf} != set(oi) or {kf, c, rh, rw} != set(wi):
        return None
    if sh != sw or sh < 1:
        raise UserError(f"scalesim: convolution '{d.workload.name}' has strides {sh} and {sw}; SCALE-Sim "
                        "supports only one stride for both directions")
    sz = _Sizes(d)
    dim_h = ii.index(next(x for x in ii if not _is_var(x)))
    dim_w = [n for n, x in enumerate(ii) if not _is_var(x)][1]
    shape = d.workload.shape(iname, d.sizes)
    oh, ow, r, s = sz.trips(ph), sz.trips(pw), sz.trips(rh), sz.trips(rw)
    ih, iw = shape[dim_h], shape[dim_w]
    if (ih - r) // sh + 1 != oh or (iw - s) // sh + 1 != ow:
        raise UserError(f"scalesim: convolution '{d.workload.name}': input {iname} is {ih}x{iw} but a "
                        f"{r}x{s} filter with stride {sh} gives {oh}x{ow} outputs only without padding; "
                        "SCALE-Sim does not model padding")
    roles = {lb: role for var, role in ((ph, "M"), (pw, "M"), (kf, "N"), (c, "K"), (rh, "K"), (rw, "K"))
             for lb in sz.labels(var)}
    dims = {"IfmapH": ih, "IfmapW": iw, "FilterH": r, "FilterW": s, "Channels": sz.trips(c),
            "NumFilter": sz.trips(kf), "Stride": sh}
    return Layer("conv", dims, roles, d.workload.name)


def _layer_by_name(d: Design) -> Layer:
    """Fallback for a workload named gemm/conv2d without an einsum: the library parameter names."""
    s, w = d.sizes, d.workload
    need = ("M", "N", "K") if w.name == "gemm" else ("K", "C", "P", "Q", "R", "S")
    missing = [p for p in need if p not in s]
    if missing:
        raise UserError(f"scalesim: workload '{w.name}' has no einsum and lacks parameters "
                        f"{', '.join(missing)}; add an einsum such as 'C[m,n] += A[m,k] * B[k,n]'")
    by_var = {lp.var: lb for lb, lp in d.tree.loops.items() if lp.var}
    if w.name == "gemm":
        roles = {by_var[v]: r for v, r in (("m", "M"), ("n", "N"), ("k", "K")) if v in by_var}
        return Layer("gemm", {"M": s["M"], "N": s["N"], "K": s["K"]}, roles, w.name)
    roles = {by_var[v]: r for v, r in (("p", "M"), ("q", "M"), ("k", "N"), ("c", "K"), ("r", "K"), ("s", "K"))
             if v in by_var}
    dims = {"IfmapH": s["P"] + s["R"] - 1, "IfmapW": s["Q"] + s["S"] - 1, "FilterH": s["R"], "FilterW": s["S"],
            "Channels": s["C"], "NumFilter": s["K"], "Stride": 1}
    return Layer("conv", dims, roles, w.name)
