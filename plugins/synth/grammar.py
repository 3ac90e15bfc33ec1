"""Stage 1: new kernels written from a grammar of loop nests and statements.

A program is one to three loop nests run one after the other (a later nest may
read what an earlier one wrote). Each nest is drawn from a *template* that
stands for one application family of the library (:mod:`.splits`), with its
own random choices of loop forms, statements and data types:

=================  ===================  =============================================================
template           family               what it draws
=================  ===================  =============================================================
``map``            ml                   element-wise float/int maps over 1-2-D arrays, strided loops,
                                        data-dependent if/else, math calls, bitwise int maps
``reduce``         dense-la             mat-vec / mat-mat reductions into a local accumulator or the
                                        output, max reductions, local arrays (row buffers)
``stencil``        stencil              1-D and 2-D stencils, time-stepped Jacobi with a copy back,
                                        in-place Gauss-Seidel sweeps (loop-carried)
``recur``          solver-recurrence    prefix sums and IIR filters (dependence chains), triangular
                                        forward substitution, Horner, tree reductions with geometric
                                        (``s <<= 1``) and expression-strided (``i += 2 * s``) loops
``gather``         sparse-indirect      gathers ``a[idx[i]]``, scatters (histograms), ragged rows with
                                        data-dependent bounds, CSR rows from a generated structure
``control``        control-dynamic      while loops with data-dependent exits (search, Collatz-like
                                        iteration), integer hashing with ``^ << >> &``, branches
=================  ===================  =============================================================

Every index stays in bounds by construction, every division is by a strictly
positive value, every while loop has a hard iteration cap, and the total work
is bounded, so every program compiles, runs and terminates. Data-dependent
programs declare input *variants* (skewed row lengths, other index ranges or
thresholds) with the hints that go with them, so the same code appears under
several input distributions. Programs carry no reference: their meaning is
arbitrary and hlsim labels them all the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from llmulator.dataset import Rejected

from .primitives import choice

TEMPLATE_FAMILY = {"map": "ml", "reduce": "dense-la", "stencil": "stencil", "recur": "solver-recurrence",
                   "gather": "sparse-indirect", "control": "control-dynamic"}
MAX_WORK = 60_000  # statement executions per program (keeps one hlsim run well under a second)
SIZES = [8, 12, 16, 24, 32, 48, 64]


class Builder:
    """The program under construction: parameters, arrays, input descriptions, hints, variants, lines."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.params: dict[str, int] = {}
        self.arrays: dict[str, dict[str, Any]] = {}
        self.inputs: dict[str, dict[str, Any]] = {}
        self.structures: list[dict[str, Any]] = []
        self.hints: dict[str, dict[str, Any]] = {}
        self.variants: dict[str, dict[str, Any]] = {}
        self.scalars: dict[str, dict[str, Any]] = {}
        self.lines: list[str] = []
        self.n_labels = 0
        self.n_locals = 0
        self.local_names: set[str] = set()
        self.work = 0.0
        self.floats: list[str] = []  # 1-D float arrays written by earlier nests (later nests may read them)
        self.templates: list[str] = []

    # ---- names ------------------------------------------------------------------------------
    def param(self, values: list[int] | None = None, name: str | None = None) -> str:
        name = name or f"N{len(self.params)}"
        self.params[name] = int(choice(self.rng, values or SIZES))
        return name

    def label(self, kind: str = "L") -> str:
        self.n_labels += 1
        return f"{kind}_{self.n_labels}"

    def local(self, prefix: str = "t") -> str:
        """A local's name, never an array's: `c2` was both a control-dynamic program's counter and its count array
        (C's local hid the array; ``validate`` refuses a local with a workload name since the relabel to hlsim
        0.49, which redrew the 4 samples that had one)."""
        self.n_locals += 1
        name = f"{prefix}{self.n_locals}"
        while name in self.arrays:
            name += "_"
        self.local_names.add(name)
        return name

    def array(self, dims: list[str], role: str, dtype: str = "fp32", dist: dict[str, Any] | None = None,
              prefix: str | None = None) -> str:
        name = f"{prefix or ('a' if role == 'in' else 'o')}{len(self.arrays)}"
        while name in self.local_names:  # (a local named first: see ``local``)
            name += "_"
        self.arrays[name] = {"shape": list(dims), "dtype": dtype, "role": role}
        if role in ("in", "inout"):
            self.inputs[name] = dist or self.float_dist()
        return name

    def scalar(self, value: int, prefix: str = "k") -> str:
        """An int32 workload scalar (fixed for a run; a variant may set another value)."""
        name = f"{prefix}{len(self.scalars)}"
        while name in self.arrays or name in self.local_names or name in self.params:
            name += "_"
        self.scalars[name] = {"dtype": "int32", "value": int(value)}
        return name

    def float_dist(self) -> dict[str, Any]:
        if self.rng.random() < 0.5:
            spec: dict[str, Any] = {"distribution": "uniform", "range": [-1.0, 1.0]}
        else:
            spec = {"distribution": "normal", "mean": 0.0, "std": 0.5}
        if self.rng.random() < 0.25:
            spec["density"] = float(choice(self.rng, [0.1, 0.3, 0.5, 0.8]))
        return spec

    def index_array(self, dims: list[str], high: str | int, low: int = 0, prefix: str = "i") -> str:
        """An int32 input with values in [low, high]: gather indices or data-dependent trip counts."""
        hi = self.params[high] if isinstance(high, str) else int(high)
        return self.array(dims, "in", "int32", {"distribution": "randint", "range": [low, hi]}, prefix)

    def variant(self, name: str, description: str, arrays: dict[str, Any] | None = None,
                hints: dict[str, Any] | None = None, structures: list[dict[str, Any]] | None = None,
                scalars: dict[str, Any] | None = None) -> None:
        v: dict[str, Any] = {"description": description}
        if arrays:
            v["arrays"] = arrays
        if scalars:
            v["scalars"] = scalars
        if hints:
            v["hints"] = hints
        if structures:
            v["structures"] = structures
        self.variants[name] = v

    def emit(self, ind: int, text: str) -> None:
        self.lines.append("  " * ind + text)

    def add_work(self, n: float) -> None:
        self.work += n
        if self.work > MAX_WORK:
            raise Rejected("too much work")

    # ---- expressions ------------------------------------------------------------------------
    def fexpr(self, reads: list[str], depth: int = 0) -> str:
        """A float expression over the given reads (divisions by strictly positive values only)."""
        rng = self.rng
        if depth >= 2 or rng.random() < 0.35:
            return choice(rng, reads) if rng.random() < 0.85 else f"{float(rng.integers(1, 9)) / 4:.2f}f"
        a, b = self.fexpr(reads, depth + 1), self.fexpr(reads, depth + 1)
        form = choice(rng, ["+", "-", "*", "*", "/", "max", "exp", "abs", "sel", "sqrt"])
        if form == "/":
            return f"({a} / (1.0f + fabsf({b})))"
        if form == "max":
            return f"fmaxf({a}, {b})"
        if form == "exp":
            return f"expf(fminf({a}, 2.0f))"
        if form == "abs":
            return f"fabsf({a})"
        if form == "sqrt":
            return f"sqrtf(fabsf({a}))"
        if form == "sel":
            return f"({a} > {b} ? {a} : {b})"
        return f"({a} {form} {b})"

    def iexpr(self, reads: list[str], depth: int = 0) -> str:
        """An integer expression: + - * and the bitwise operators, shifts by small constants."""
        rng = self.rng
        if depth >= 2 or rng.random() < 0.3:
            return choice(rng, reads) if rng.random() < 0.8 else str(int(rng.integers(1, 16)))
        a, b = self.iexpr(reads, depth + 1), self.iexpr(reads, depth + 1)
        form = choice(rng, ["+", "-", "*", "&", "|", "^", "<<", ">>", "%", "sel"])
        if form in ("<<", ">>"):
            return f"(({a}) {form} {int(rng.integers(1, 5))})"
        if form == "%":
            return f"(({a}) & {int(choice(rng, [7, 15, 63, 255]))})"
        if form == "sel":
            return f"({a} > {b} ? {a} : {b})"
        return f"({a} {form} {b})"


# ---- templates ------------------------------------------------------------------------------
def _loop(b: Builder, ind: int, var: str, bound: str, start: str = "0", step: str = "1") -> str:
    lab = b.label()
    inc = f"{var}++" if step == "1" else f"{var} += {step}"
    b.emit(ind, f"{lab}: for (int {var} = {start}; {var} < {bound}; {inc}) {{")
    return lab


def _resampled(b: Builder, n: str, dtype: str, dist: dict[str, Any] | None) -> str:
    """A read of a new 1-D input at a subscript other than ``i`` (in bounds for i < n): nearest-neighbour
    upsampling (`x[i / 2]`, `x[i >> 1]`, `x[(i >> 2) + c]`), a broadcast element (`x[N / 2]`), or a window
    shifted by an int32 scalar (`x[i + k]`, x a pad longer; a variant moves k). Pooling, upsampling and offset
    kernels index this way; before 2026-12-08 the grammar wrote none of them, and hlsim priced them as
    indirect until 0.78-0.80 (docs/hlsim-versions.md)."""
    rng = b.rng
    form = choice(rng, ["half", "shift", "quarter", "broadcast", "scalar", "scalar"])
    if form == "scalar":
        pad = int(choice(rng, [4, 8]))
        k = b.scalar(int(rng.integers(0, pad + 1)))
        x = b.array([f"{n} + {pad}"], "in", dtype, dist)
        other = (b.scalars[k]["value"] + pad // 2) % (pad + 1)
        b.variant(f"offset-{other}", f"{k} = {other}: the window starts {other} elements in", scalars={k: other})
        return f"{x}[i + {k}]"
    x = b.array([n], "in", dtype, dist)
    if form == "quarter":
        return f"{x}[(i >> 2) + {int(rng.integers(0, b.params[n] // 2 + 1))}]"
    return x + {"half": "[i / 2]", "shift": "[i >> 1]", "broadcast": f"[{n} / 2]"}[form]


def t_map(b: Builder, ind: int) -> None:
    rng = b.rng
    integer = rng.random() < 0.3
    dtype = "int32" if integer else "fp32"
    dist = {"distribution": "randint", "range": [-1000, 1000]} if integer else None
    n = b.param()
    two_d = rng.random() < 0.5
    step = str(choice(rng, [2, 4])) if (not two_d and rng.random() < 0.25) else "1"
    if two_d:
        m = b.param()
        a, c = b.array([n, m], "in", dtype, dist), b.array([m], "in", dtype, dist)
        o = b.array([n, m], "out", dtype)
        _loop(b, ind, "i", n)
        _loop(b, ind + 1, "j", m)
        # a nearest-neighbour upsampling reads each element of a for 2 x 2 outputs (`i / 2`, `i >> 1`)
        up = choice(rng, ["[i / 2][j / 2]", "[i >> 1][j >> 1]", "[i / 2][j]"]) if rng.random() < 0.3 else "[i][j]"
        reads, dst, inner = [f"{a}{up}", f"{c}[j]"], f"{o}[i][j]", ind + 2
        b.add_work(b.params[n] * b.params[m])
    else:
        earlier: list[str] = []
        if b.floats and not integer and rng.random() < 0.5:
            prev = choice(rng, b.floats)  # read what an earlier nest wrote, over its own extent
            n = b.arrays[prev]["shape"][0]
            earlier = [prev]
        resample = rng.random() < 0.4
        first = _resampled(b, n, dtype, dist) if resample else None
        srcs = [b.array([n], "in", dtype, dist) for _ in range(int(rng.integers(1, 3)) - resample)] + earlier
        o = b.array([n], "out", dtype)
        _loop(b, ind, "i", n, step=step)
        reads, dst, inner = [f"{s}[i]" for s in srcs], f"{o}[i]", ind + 1
        if first:
            reads.insert(0, first)
        b.add_work(b.params[n])
        if not integer:
            b.floats.append(o)
    expr = b.iexpr if integer else b.fexpr
    if rng.random() < 0.3:
        lab = b.label("L_if")
        zero = "0" if integer else "0.0f"
        b.emit(inner, f"{lab}: if ({reads[0]} > {zero}) {{")
        b.emit(inner + 1, f"{dst} = {expr(reads)};")
        b.emit(inner, "} else {")
        b.emit(inner + 1, f"{dst} = {expr(reads)};")
        b.emit(inner, "}")
        b.hints[lab] = {"taken_probability": 0.5}
    else:
        b.emit(inner, f"{dst} = {expr(reads)};")
    for k in range(inner - 1, ind - 1, -1):
        b.emit(k, "}")


def t_reduce(b: Builder, ind: int) -> None:
    rng = b.rng
    n, k = b.param(), b.param()
    form = choice(rng, ["matvec", "matvec", "matmul", "rowmax", "localbuf"])
    if form == "matmul":
        m = b.param([4, 8, 12, 16])
        a, w = b.array([n, k], "in"), b.array([k, m], "in")
        o = b.array([n, m], "out")
        b.add_work(b.params[n] * b.params[k] * b.params[m])
        _loop(b, ind, "i", n)
        _loop(b, ind + 1, "j", m)
        s = b.local("s")
        b.emit(ind + 2, f"float {s} = 0.0f;")
        _loop(b, ind + 2, "k", k)
        b.emit(ind + 3, f"{s} += {a}[i][k] * {w}[k][j];")
        b.emit(ind + 2, "}")
        b.emit(ind + 2, f"{o}[i][j] = {s};" if rng.random() < 0.6 else f"{o}[i][j] = fmaxf({s}, 0.0f);")
        b.emit(ind + 1, "}")
        b.emit(ind, "}")
        return
    a, x = b.array([n, k], "in"), b.array([k], "in")
    o = b.array([n], "out")
    b.add_work(b.params[n] * b.params[k])
    if form == "localbuf":
        # copy a row into a local buffer, then reduce over it twice (a local array with its own accesses)
        buf = b.local("buf")
        _loop(b, ind, "i", n)
        b.emit(ind + 1, f"float {buf}[{b.params[k]}];")
        _loop(b, ind + 1, "k", k)
        b.emit(ind + 2, f"{buf}[k] = {a}[i][k] * {x}[k];")
        b.emit(ind + 1, "}")
        s = b.local("s")
        b.emit(ind + 1, f"float {s} = 0.0f;")
        _loop(b, ind + 1, "k", k)
        b.emit(ind + 2, f"{s} += {buf}[k] * {buf}[k];")
        b.emit(ind + 1, "}")
        b.emit(ind + 1, f"{o}[i] = sqrtf({s});")
        b.emit(ind, "}")
        b.add_work(b.params[n] * b.params[k])
        b.floats.append(o)
        return
    s = b.local("s")
    _loop(b, ind, "i", n)
    if form == "rowmax":
        b.emit(ind + 1, f"float {s} = {a}[i][0];")
        _loop(b, ind + 1, "k", k, start="1")
        b.emit(ind + 2, f"{s} = fmaxf({s}, {b.fexpr([f'{a}[i][k]', f'{x}[k]'])});")
    else:
        b.emit(ind + 1, f"float {s} = 0.0f;")
        _loop(b, ind + 1, "k", k)
        b.emit(ind + 2, f"{s} += {a}[i][k] * {x}[k];")
    b.emit(ind + 1, "}")
    b.emit(ind + 1, f"{o}[i] = {s};" if rng.random() < 0.5 else f"{o}[i] = {b.fexpr([s])};")
    b.emit(ind, "}")
    b.floats.append(o)


def t_stencil(b: Builder, ind: int) -> None:
    rng = b.rng
    form = choice(rng, ["jacobi1d", "jacobi2d", "seidel1d", "timestep"])
    c = f"{float(choice(rng, [0.2, 0.25, 0.33, 0.5])):.2f}f"
    if form == "jacobi2d":
        n, m = b.param([8, 12, 16, 24, 32]), b.param([8, 12, 16, 24, 32])
        a, o = b.array([n, m], "in"), b.array([n, m], "out")
        b.add_work(b.params[n] * b.params[m])
        _loop(b, ind, "i", f"{n} - 1", start="1")
        _loop(b, ind + 1, "j", f"{m} - 1", start="1")
        b.emit(ind + 2, f"{o}[i][j] = {c} * ({a}[i - 1][j] + {a}[i + 1][j] + {a}[i][j - 1] + {a}[i][j + 1]"
                        f" + {a}[i][j]);")
        b.emit(ind + 1, "}")
        b.emit(ind, "}")
        return
    n = b.param()
    if form == "jacobi1d":
        a, o = b.array([n], "in"), b.array([n], "out")
        b.add_work(b.params[n])
        _loop(b, ind, "i", f"{n} - 1", start="1")
        b.emit(ind + 1, f"{o}[i] = {c} * ({a}[i - 1] + {a}[i] + {a}[i + 1]);")
        b.emit(ind, "}")
        b.floats.append(o)
        return
    if form == "seidel1d":
        a = b.array([n], "inout")
        b.add_work(b.params[n])
        _loop(b, ind, "i", f"{n} - 1", start="1")
        b.emit(ind + 1, f"{a}[i] = {c} * ({a}[i - 1] + {a}[i] + {a}[i + 1]);")
        b.emit(ind, "}")
        return
    t = b.param([2, 3, 4, 6, 8], name=f"T{len(b.params)}")
    a, tmp = b.array([n], "inout"), b.array([n], "temp")
    b.add_work(2 * b.params[t] * b.params[n])
    _loop(b, ind, "t", t)
    _loop(b, ind + 1, "i", f"{n} - 1", start="1")
    b.emit(ind + 2, f"{tmp}[i] = {c} * ({a}[i - 1] + {a}[i] + {a}[i + 1]);")
    b.emit(ind + 1, "}")
    _loop(b, ind + 1, "i", f"{n} - 1", start="1")
    b.emit(ind + 2, f"{a}[i] = {tmp}[i];")
    b.emit(ind + 1, "}")
    b.emit(ind, "}")


def t_recur(b: Builder, ind: int) -> None:
    rng = b.rng
    form = choice(rng, ["prefix", "iir", "trisolve", "horner", "tree"])
    if form == "tree":
        n = b.param([8, 16, 32, 64])
        a = b.array([n], "inout")
        b.add_work(b.params[n])
        lab = b.label()
        b.emit(ind, f"{lab}: for (int s = 1; s < {n}; s <<= 1) {{")
        _loop(b, ind + 1, "i", f"{n} - s", step="2 * s")
        b.emit(ind + 2, f"{a}[i] = {a}[i] + {a}[i + s];" if rng.random() < 0.7
               else f"{a}[i] = fmaxf({a}[i], {a}[i + s]);")
        b.emit(ind + 1, "}")
        b.emit(ind, "}")
        return
    n = b.param()
    if form in ("prefix", "iir"):
        x = b.array([n], "in")
        y = b.array([n], "out")
        b.add_work(b.params[n])
        b.emit(ind, f"{y}[0] = {x}[0];")
        _loop(b, ind, "i", n, start="1")
        if form == "prefix":
            b.emit(ind + 1, f"{y}[i] = {y}[i - 1] + {x}[i];")
        else:
            c0, c1 = (f"{float(v):.2f}f" for v in rng.uniform(0.1, 0.9, 2))
            b.emit(ind + 1, f"{y}[i] = {c0} * {x}[i] + {c1} * {y}[i - 1];")
        b.emit(ind, "}")
        b.floats.append(y)
        return
    if form == "horner":
        k = b.param([3, 4, 5, 6, 8], name=f"K{len(b.params)}")
        x, cf = b.array([n], "in"), b.array([k], "in")
        y = b.array([n], "out")
        b.add_work(b.params[n] * b.params[k])
        r = b.local("r")
        _loop(b, ind, "i", n)
        b.emit(ind + 1, f"float {r} = 0.0f;")
        _loop(b, ind + 1, "k", k)
        b.emit(ind + 2, f"{r} = {r} * {x}[i] + {cf}[k];")
        b.emit(ind + 1, "}")
        b.emit(ind + 1, f"{y}[i] = {r};")
        b.emit(ind, "}")
        b.floats.append(y)
        return
    # triangular forward substitution: x[i] depends on every x[j], j < i
    lo, rhs = b.array([n, n], "in"), b.array([n], "in")
    x = b.array([n], "out")
    b.add_work(b.params[n] * (b.params[n] + 1) / 2)
    s = b.local("s")
    _loop(b, ind, "i", n)
    b.emit(ind + 1, f"float {s} = {rhs}[i];")
    lab = b.label()
    b.emit(ind + 1, f"{lab}: for (int j = 0; j < i; j++) {{")
    b.emit(ind + 2, f"{s} -= {lo}[i][j] * {x}[j];")
    b.emit(ind + 1, "}")
    b.emit(ind + 1, f"{x}[i] = {s} / (1.0f + fabsf({lo}[i][i]));")
    b.emit(ind, "}")
    b.floats.append(x)


def _row_sums(b: Builder, ind: int, n: str, body: Callable[[str], str], lo: str, hi: str, out: str) -> str:
    """``out[i] = sum over j in [lo, hi) of body`` for i < n, with a data-dependent inner bound; its label."""
    s = b.local("s")
    _loop(b, ind, "i", n)
    b.emit(ind + 1, f"float {s} = 0.0f;")
    lab = b.label()
    b.emit(ind + 1, f"{lab}: for (int j = {lo}; j < {hi}; j++) {{")
    b.emit(ind + 2, body(s))
    b.emit(ind + 1, "}")
    b.emit(ind + 1, f"{out}[i] = {s};")
    b.emit(ind, "}")
    return lab


def t_gather(b: Builder, ind: int) -> None:
    rng = b.rng
    form = choice(rng, ["gather", "scatter", "ragged", "csr"])
    if form in ("gather", "scatter"):
        n, m = b.param(), b.param()
        idx = b.index_array([n], b.params[m] - 1)
        w = b.array([n], "in")
        b.add_work(b.params[n])
        narrow = max(1, b.params[m] // 8)
        b.variant("clustered", "indices crowd into the first eighth of the range (cache-friendly, bank conflicts)",
                  arrays={idx: {"distribution": "randint", "range": [0, narrow - 1]}})
        if form == "gather":
            a = b.array([m], "in")
            o = b.array([n], "out")
            _loop(b, ind, "i", n)
            b.emit(ind + 1, f"{o}[i] = {b.fexpr([f'{a}[{idx}[i]]', f'{w}[i]'])};")
            b.emit(ind, "}")
            b.floats.append(o)
        else:
            h = b.array([m], "out")
            _loop(b, ind, "i", n)
            b.emit(ind + 1, f"{h}[{idx}[i]] += {w}[i];")
            b.emit(ind, "}")
        return
    if form == "ragged":
        n, m = b.param(), b.param()
        cnt = b.index_array([n], m, prefix="c")
        a, x = b.array([n, m], "in"), b.array([m], "in")
        o = b.array([n], "out")
        b.add_work(b.params[n] * b.params[m])
        lab = _row_sums(b, ind, n, lambda s: f"{s} += {a}[i][j] * {x}[j];", "0", f"{cnt}[i]", o)
        b.hints[lab] = {"expected_trips": f"{m} / 2"}
        b.variant("short-rows", "row lengths drawn from the first quarter of the range",
                  arrays={cnt: {"distribution": "randint", "range": [0, max(1, b.params[m] // 4)]}},
                  hints={lab: {"expected_trips": f"{m} / 8"}})
        b.variant("full-rows", "every row at least three quarters full",
                  arrays={cnt: {"distribution": "randint", "range": [3 * b.params[m] // 4, b.params[m]]}},
                  hints={lab: {"expected_trips": f"7 * {m} / 8"}})
        b.floats.append(o)
        return
    rows, cols = b.param([8, 16, 24, 32, 48]), b.param([8, 16, 32, 64])
    nnz = b.param([2 * b.params[rows], 4 * b.params[rows]], name=f"NNZ{len(b.params)}")
    ptr = b.array([f"{rows} + 1"], "in", "int32", {"distribution": "zeros"}, "p")
    col = b.array([nnz], "in", "int32", {"distribution": "zeros"}, "c")
    vals, x = b.array([nnz], "in"), b.array([cols], "in")
    y = b.array([rows], "out")
    b.structures.append({"kind": "csr", "row_ptr": ptr, "col_idx": col, "rows": rows, "cols": cols, "nnz": nnz})
    b.add_work(b.params[nnz] + b.params[rows])
    lab = _row_sums(b, ind, rows, lambda s: f"{s} += {vals}[j] * {x}[{col}[j]];", f"{ptr}[i]", f"{ptr}[i + 1]", y)
    b.hints[lab] = {"expected_trips": f"{nnz} / {rows}"}
    b.variant("skewed", "power-law row lengths (Zipf exponent 1.5), same non-zero count",
              structures=[{"kind": "csr", "row_ptr": ptr, "col_idx": col, "rows": rows, "cols": cols, "nnz": nnz,
                           "row_skew": 1.5}])
    b.floats.append(y)


def t_control(b: Builder, ind: int) -> None:
    rng = b.rng
    form = choice(rng, ["search", "collatz", "hash", "threshold"])
    if form == "search":
        q, n = b.param([4, 8, 12, 16]), b.param()
        data = b.array([n], "in", "int32", {"distribution": "randint", "range": [0, 2 * b.params[n]]})
        keys = b.array([q], "in", "int32", {"distribution": "randint", "range": [0, 2 * b.params[n]]})
        pos = b.array([q], "out", "int32")
        b.add_work(b.params[q] * b.params[n])
        k = b.local("k")
        _loop(b, ind, "q", q)
        b.emit(ind + 1, f"int {k} = 0;")
        lab = b.label()
        b.emit(ind + 1, f"{lab}: while ({k} < {n} && {data}[{k}] != {keys}[q]) {{")
        b.emit(ind + 2, f"{k}++;")
        b.emit(ind + 1, "}")
        b.emit(ind + 1, f"{pos}[q] = {k};")
        b.emit(ind, "}")
        b.hints[lab] = {"expected_trips": f"{n} / 2"}
        b.variant("hits-early", "keys drawn from a narrow range that the data hits early",
                  arrays={data: {"distribution": "randint", "range": [0, 3]},
                          keys: {"distribution": "randint", "range": [0, 3]}},
                  hints={lab: {"expected_trips": "2"}})
        return
    n = b.param()
    if form == "collatz":
        cap = int(choice(rng, [16, 32, 64]))
        hi = int(choice(rng, [20, 100, 1000]))
        a = b.array([n], "in", "int32", {"distribution": "randint", "range": [1, hi]})
        o = b.array([n], "out", "int32")
        b.add_work(b.params[n] * cap)
        x, c = b.local("x"), b.local("c")
        _loop(b, ind, "i", n)
        b.emit(ind + 1, f"int {x} = {a}[i];")
        b.emit(ind + 1, f"int {c} = 0;")
        lab = b.label()
        b.emit(ind + 1, f"{lab}: while ({x} > 1 && {c} < {cap}) {{")
        b.emit(ind + 2, f"{x} = ({x} & 1) ? 3 * {x} + 1 : {x} >> 1;")
        b.emit(ind + 2, f"{c}++;")
        b.emit(ind + 1, "}")
        b.emit(ind + 1, f"{o}[i] = {c};")
        b.emit(ind, "}")
        b.hints[lab] = {"expected_trips": str(cap // 2)}
        b.variant("small-values", "values in [1, 8]: the iteration ends after a few steps",
                  arrays={a: {"distribution": "randint", "range": [1, 8]}}, hints={lab: {"expected_trips": "3"}})
        return
    if form == "hash":
        r = b.param([2, 4, 8], name=f"R{len(b.params)}")
        d = b.array([n], "in", "uint32", {"distribution": "randint", "range": [0, 65535]})
        o = b.array([n], "out", "uint32")
        b.add_work(b.params[n] * b.params[r])
        h = b.local("h")
        _loop(b, ind, "i", n)
        b.emit(ind + 1, f"uint32_t {h} = {int(rng.integers(1, 1 << 16))}u;")
        _loop(b, ind + 1, "r", r)
        b.emit(ind + 2, f"{h} = ({h} ^ {d}[i]) * 16777619u;")
        b.emit(ind + 2, f"{h} = {h} ^ ({h} >> {int(rng.integers(5, 17))});")
        b.emit(ind + 1, "}")
        b.emit(ind + 1, f"{o}[i] = {h} & {int(choice(rng, [255, 1023, 65535]))}u;")
        b.emit(ind, "}")
        return
    a = b.array([n], "in")
    o = b.array([n], "out")
    b.add_work(b.params[n])
    lab = b.label("L_if")
    _loop(b, ind, "i", n)
    thr = f"{float(choice(rng, [-0.5, 0.0, 0.5])):.1f}f"
    b.emit(ind + 1, f"{lab}: if ({a}[i] > {thr}) {{")
    b.emit(ind + 2, f"{o}[i] = {b.fexpr([f'{a}[i]'])};")
    b.emit(ind + 1, "} else {")
    b.emit(ind + 2, f"{o}[i] = {b.fexpr([f'{a}[i]'])};")
    b.emit(ind + 1, "}")
    b.emit(ind, "}")
    b.hints[lab] = {"taken_probability": 0.5}
    b.variant("mostly-high", "values shifted up: the first branch is taken nearly always",
              arrays={a: {"distribution": "uniform", "range": [0.5, 1.5]}},
              hints={lab: {"taken_probability": 0.95}})
    b.floats.append(o)


TEMPLATES: dict[str, Callable[[Builder, int], None]] = {
    "map": t_map, "reduce": t_reduce, "stencil": t_stencil, "recur": t_recur, "gather": t_gather,
    "control": t_control}


def generate_program(rng: np.random.Generator, template: str | None = None) -> dict[str, Any]:
    """One program (a workload document as a dict) with ``family`` set from its first nest's template."""
    b = Builder(rng)
    first = template or choice(rng, sorted(TEMPLATES))
    n_nests = int(choice(rng, [1, 1, 2, 2, 3]))
    for k in range(n_nests):
        # later nests stay in the same family more often than not, so a family's programs look like it
        t = first if k == 0 or rng.random() < 0.5 else choice(rng, sorted(TEMPLATES))
        b.templates.append(t)
        TEMPLATES[t](b, 0)
    name = f"g{int(rng.integers(1 << 30)):09d}"
    inputs: dict[str, Any] = {"seed": 0, "arrays": b.inputs}
    if b.structures:
        inputs["structures"] = b.structures
        for s in b.structures:  # arrays a structure fills take no declarative description
            inputs["arrays"].pop(s["row_ptr"], None)
            inputs["arrays"].pop(s["col_idx"], None)
    if b.variants:
        inputs["variants"] = b.variants
    w: dict[str, Any] = {"version": 1, "name": name,
                         "description": f"stage-1 generated program ({' + '.join(b.templates)})",
                         "source": "llmulator synth stage 1 (grammar)", "parameters": b.params,
                         "arrays": b.arrays, "kernel": "\n".join(b.lines) + "\n", "inputs": inputs}
    if b.hints:
        w["hints"] = b.hints
    if b.scalars:
        w["scalars"] = b.scalars
    return {"workload": w, "family": TEMPLATE_FAMILY[first], "templates": list(b.templates)}
