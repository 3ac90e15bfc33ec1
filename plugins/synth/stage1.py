"""Stage 1: random but well-formed loop-nest programs from a small grammar.

Programs have 1-5 nested loops with affine, triangular or data-dependent
bounds, while loops, affine and indirect (gathered) array accesses, a mix of
arithmetic, comparisons and math calls, and data-dependent or static
conditionals. Every index stays in bounds by construction (arrays are sized
for the largest index the loop ranges allow; gather indices are generated in
range), every division is by a strictly positive value and every exp takes a
bounded argument, so every program runs and terminates. They carry no
reference (their meaning is arbitrary); hlsim labels them all the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import library_source as lib
from .primitives import choice, perturb_architecture, sample_mapping
from .sample import Rejected, SampleSpec

MAX_ITERS = 40_000


class _Prog:
    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.params: dict[str, int] = {}
        self.arrays: dict[str, dict[str, Any]] = {}
        self.inputs: dict[str, dict[str, Any]] = {}
        self.hints: dict[str, dict[str, Any]] = {}
        self.lines: list[str] = []
        self.loop_vars: list[tuple[str, str]] = []  # (var, size parameter bounding it)
        self.n_loops = 0
        self.n_ifs = 0
        self.iters = 1.0

    def param(self) -> str:
        name = f"N{len(self.params)}"
        self.params[name] = int(choice(self.rng, [4, 6, 8, 12, 16, 24, 32]))
        return name

    def array(self, dims: list[str], role: str, dtype: str = "fp32") -> str:
        name = f"{'a' if role == 'in' else 'o'}{len(self.arrays)}"
        # one extra element per dimension: indices up to N (inclusive) stay in bounds
        self.arrays[name] = {"shape": [f"{d} + 1" for d in dims], "dtype": dtype, "role": role}
        if role == "in":
            if dtype.startswith("fp"):
                dist = choice(self.rng, ["uniform", "normal"])
                spec: dict[str, Any] = {"distribution": dist}
                if dist == "uniform":
                    spec["range"] = [-1.0, 1.0]
                else:
                    spec.update(mean=0.0, std=0.5)
                if self.rng.random() < 0.3:
                    spec["density"] = float(choice(self.rng, [0.1, 0.3, 0.5, 0.8]))
                self.inputs[name] = spec
        return name

    def index_array(self, bound: str, size: str) -> str:
        """An int32 input whose values lie in [0, bound]: gather indices or data-dependent trip counts."""
        name = f"i{len(self.arrays)}"
        self.arrays[name] = {"shape": [f"{size} + 1"], "dtype": "int32", "role": "in"}
        self.inputs[name] = {"distribution": "randint", "range": [0, self.params[bound]]}
        return name


def _expr(p: _Prog, reads: list[str], depth: int = 0) -> str:
    rng = p.rng
    if depth >= 2 or rng.random() < 0.35:
        return choice(rng, reads) if rng.random() < 0.85 else f"{float(rng.integers(1, 9)) / 4:.2f}f"
    a, b = _expr(p, reads, depth + 1), _expr(p, reads, depth + 1)
    form = choice(rng, ["+", "-", "*", "*", "/", "max", "exp", "abs", "sel"])
    if form == "/":
        return f"({a} / (1.0f + fabsf({b})))"
    if form == "max":
        return f"fmaxf({a}, {b})"
    if form == "exp":
        return f"expf(fminf({a}, 2.0f))"
    if form == "abs":
        return f"fabsf({a})"
    if form == "sel":
        return f"({a} > {b} ? {a} : {b})"
    return f"({a} {form} {b})"


def _reads(p: _Prog, vars_: list[tuple[str, str]]) -> list[str]:
    """Array reads over the enclosing loop variables: affine (i, i+1, 2-D) and indirect (gathers)."""
    rng = p.rng
    out = []
    for _ in range(int(rng.integers(1, 4))):
        if len(vars_) >= 2 and rng.random() < 0.5:
            (v1, s1), (v2, s2) = [vars_[int(k)] for k in rng.choice(len(vars_), 2, replace=False)]
            arr = p.array([s1, s2], "in")
            off = choice(rng, ["", " + 1"])
            out.append(f"{arr}[{v1}{off}][{v2}]")
        else:
            v, s = vars_[int(rng.integers(len(vars_)))]
            if rng.random() < 0.25:
                idx = p.index_array(s, s)
                arr = p.array([s], "in")
                out.append(f"{arr}[{idx}[{v}]]")
            else:
                arr = p.array([s], "in")
                out.append(f"{arr}[{v}{choice(rng, ['', ' + 1'])}]")
    return out


def generate_program(rng: np.random.Generator) -> dict[str, Any]:
    p = _Prog(rng)
    depth = int(rng.integers(1, 6))
    ind = "  "
    closers = []
    outer_param = None
    for level in range(depth):
        p.n_loops += 1
        label = f"L_{p.n_loops}"
        var = f"v{level}"
        size = p.param()
        kind = rng.random()
        if level > 0 and kind < 0.15:
            # triangular bound over the enclosing variable
            parent_var, parent_size = p.loop_vars[-1]
            p.params[size] = p.params[parent_size]
            p.lines.append(f"{ind}{label}: for (int {var} = 0; {var} <= {parent_var}; {var}++) {{")
            p.iters *= (p.params[size] + 1) / 2
        elif level > 0 and kind < 0.3:
            # data-dependent bound read from an input array
            parent_var, parent_size = p.loop_vars[-1]
            cnt = p.index_array(size, parent_size)
            p.lines.append(f"{ind}{label}: for (int {var} = 0; {var} < {cnt}[{parent_var}]; {var}++) {{")
            p.hints[label] = {"expected_trips": f"{size} / 2"}
            p.iters *= p.params[size] / 2 + 1
        elif level > 0 and kind < 0.38:
            parent_var, parent_size = p.loop_vars[-1]
            cnt = p.index_array(size, parent_size)
            p.lines.append(f"{ind}int {var} = 0;")
            p.lines.append(f"{ind}{label}: while ({var} < {cnt}[{parent_var}]) {{")
            p.hints[label] = {"expected_trips": f"{size} / 2"}
            p.iters *= p.params[size] / 2 + 1
            closers.append(f"{ind}}}")
            closers.append(f"{ind}  {var}++;")  # emitted first: the increment ends the while body
            p.loop_vars.append((var, size))
            ind += "  "
            continue
        else:
            p.lines.append(f"{ind}{label}: for (int {var} = 0; {var} < {size}; {var}++) {{")
            p.iters *= p.params[size]
        p.loop_vars.append((var, size))
        if outer_param is None:
            outer_param = size
        ind += "  "
        closers.append(f"{ind[:-2]}}}")
        if p.iters > MAX_ITERS:
            raise Rejected("too many iterations")
    out = p.array([outer_param], "out")
    v0 = p.loop_vars[0][0]
    reads = _reads(p, p.loop_vars)
    n_stmts = int(rng.integers(1, 4))
    for k in range(n_stmts):
        e = _expr(p, reads)
        if rng.random() < 0.3:
            p.n_ifs += 1
            cond_read = choice(rng, reads)
            lab = f"L_if{p.n_ifs}"
            if rng.random() < 0.5:
                p.lines.append(f"{ind}{lab}: if ({cond_read} > 0.0f) {{")
                p.hints[lab] = {"taken_probability": 0.5}
            else:
                p.lines.append(f"{ind}{lab}: if ({p.loop_vars[-1][0]} % 2 == 0) {{")
                p.hints[lab] = {"taken_probability": 0.5}
            p.lines.append(f"{ind}  {out}[{v0}] += {e};")
            p.lines.append(f"{ind}}}")
        elif k == 0 and rng.random() < 0.4:
            p.lines.append(f"{ind}{out}[{v0}] = fmaxf({out}[{v0}], {e});")
        else:
            p.lines.append(f"{ind}{out}[{v0}] += {e};")
    p.lines.extend(reversed(closers))  # innermost first; a while loop's increment precedes its brace
    kernel = "\n".join(line[2:] for line in p.lines) + "\n"
    return {"version": 1, "name": f"ast{int(rng.integers(1 << 30))}", "description": "stage-1 synthetic program",
            "source": "llmulator synth stage 1 (grammar)", "parameters": p.params, "arrays": p.arrays,
            "kernel": kernel, **({"hints": p.hints} if p.hints else {}),
            "inputs": {"seed": 0, "arrays": p.inputs}}


class AstGenerator:
    """Random loop-nest programs from a grammar, on hardware variants of the library's HLS architectures."""

    name = "ast"
    stage = 1

    def sample(self, group_rng: np.random.Generator, rng: np.random.Generator) -> SampleSpec:
        from llmulator.kernel import analyze
        from llmulator.specs import workload_from_dict
        from llmulator.yamlsrc import SourceMap

        w = generate_program(group_rng)
        wl = workload_from_dict(w, SourceMap("<stage1>"))
        tree = analyze(wl)
        sizes = wl.sizes()
        trips = {lb: (0.0 if (lp.data_dependent or lp.is_while) else tree.static_trips(lb, sizes, wl.hints))
                 for lb, lp in tree.loops.items()}
        shapes = {a: wl.shape(a, sizes) for a in wl.arrays}
        archs = [a for a in lib.architectures().values() if a["compute"].get("pe_array") is None
                 and {"add", "mul", "div", "cmp", "exp"} <= set(a["compute"]["operators"])]
        if not archs:
            raise Rejected("no HLS-style architecture in the library")
        base = choice(group_rng, sorted(archs, key=lambda a: a["name"]))
        mapping = sample_mapping(group_rng, f"{w['name']}-m", w, tree, sizes, base, trips, shapes)
        arch = perturb_architecture(rng, base)
        return SampleSpec(stage=1, generator=self.name, arch=arch, workload=w, mapping=mapping,
                          input_seed=int(rng.integers(1 << 20)), app=w["name"], hw=arch["name"],
                          input_dist=f"{w['name']}:base")
