"""Timeloop layer problems as a network (issue 23 item 1): ``--network DIR`` or ``--network a.yaml,b.yaml``.

Each file is one Timeloop v0.4 ``problem:`` (dimensions, data spaces with their projections and
coefficients, the instance), as the timeloop-accelergy-exercises repository writes its layer shapes
(``{{include_text('../problem_base.yaml')}}`` and ``<<<: *problem_base`` included). It is read with the
Timeloop importer's reader (``plugins/timeloop/reader.py``) and recognised by its structure, not by its
names: one read-write data space (the output) indexed by single dimensions, two inputs, one of which may
index sliding windows (``R*Wdilation + P*Wstride``). The dimensions then play the roles of a convolution's
batch, output and input channels, groups, output positions and filter offsets, and the problem becomes
the same :class:`~.onnx_import.Layer` an ONNX Conv, Gemm or MatMul becomes. A problem that does not fit
(three inputs, a 3-D window, a sparse instance, ...) is a layer with no workload kind, listed as
unsupported with its MACs (the product of its dimensions' bounds), never dropped. A bad file (not YAML,
an unknown key, a dimension missing from the instance) is a ``SpecError`` naming the file and line.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from llmulator.errors import Diagnostic, SpecError, UserError

from .onnx_import import Layer

SUFFIXES = (".yaml", ".yml")
TOP_KEYS = {"problem", "variables", "globals"}  # and any key ending in _ignore (the exercises' anchors)
PROBLEM_KEYS = {"version", "shape", "instance"}
SHAPE_KEYS = {"name", "dimensions", "coefficients", "data_spaces"}
SPACE_KEYS = {"name", "projection", "read_write"}


def is_timeloop(model: str) -> bool:
    """A folder, or YAML files (one, or a comma-separated list), rather than an ONNX file."""
    p = Path(model)
    if p.is_dir():
        return True
    if p.is_file() and not model.lower().endswith(SUFFIXES):
        return False
    return all(x.strip().lower().endswith(SUFFIXES) for x in model.split(",") if x.strip())


def _natural(name: str) -> list:
    return [(0, int(t), "") if t.isdigit() else (1, 0, t.lower()) for t in re.split(r"(\d+)", name) if t]


def files(model: str) -> list[Path]:
    """The problem files: a folder's ``*.yaml``/``*.yml`` (not its subfolders) in natural order (``layer2``
    before ``layer10``), or the comma-separated list in the order given."""
    p = Path(model)
    if p.is_dir():
        out = sorted((q for q in p.iterdir() if q.suffix.lower() in SUFFIXES and q.is_file()),
                     key=lambda q: _natural(q.name))
        if not out:
            raise UserError(f"--network {model}: the folder holds no .yaml or .yml files (Timeloop layer problems)")
        return out
    out = [Path(x.strip()) for x in model.split(",") if x.strip()]
    for q in out:
        if not q.is_file():
            raise UserError(f"--network {model}: {q}: no such file")
    return out


def load_layers(model: str, dims: dict[str, int] | None = None) -> list[Layer]:
    """One layer per problem file; files that hold only YAML anchors (``*_ignore`` keys, such as the exercises'
    ``problem_base.yaml``) are skipped."""
    if dims:
        raise UserError("--dim sets a symbolic input dimension of an ONNX model; Timeloop problems give every "
                        "dimension in their instance")
    out: list[Layer] = []
    names: set[str] = set()
    for f in files(model):
        lay = read_file(f)
        if lay is None:
            continue
        if lay.name in names:  # the same file name in two folders
            lay.name = f"{f.parent.name}/{f.stem}"
        names.add(lay.name)
        out.append(lay)
    if not out:
        raise UserError(f"--network {model}: no Timeloop `problem:` among its files")
    return out


def _err(obj: Any, msg: str, key: str | None = None, expected: str = "", hint: str = "") -> SpecError:
    from llmulator_plugins.timeloop.reader import err
    return err(obj, msg, key, expected, hint)


def _remap(e: SpecError, path: Path, origin: list[int]) -> SpecError:
    """The diagnostics' lines in the file as written (an included text's lines: the line including it)."""
    import attrs

    def fix(d: Diagnostic) -> Diagnostic:
        if d.file != str(path) or d.line is None or not origin:
            return d
        return attrs.evolve(d, line=origin[min(d.line, len(origin)) - 1])
    return SpecError([fix(d) for d in e.diagnostics])


def read_file(path: Path) -> Layer | None:
    """The layer of one problem file; None for a file of anchors only; SpecError for a bad file."""
    from llmulator_plugins.timeloop.reader import TLSpec, load_yaml_lines, read_problem

    doc, origin = load_yaml_lines(path)
    try:
        prob = _problem(doc, path)
        if prob is None:
            return None
        sparse = _check_keys(prob)
        spec = TLSpec()
        try:
            read_problem(spec, prob)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
            raise _err(prob, f"malformed problem ({type(e).__name__}: {e})", None,
                       "Timeloop v0.4 problem: shape (dimensions, data_spaces with projections), instance") from None
    except SpecError as e:
        raise _remap(e, path, origin) from None
    lay = to_layer(spec, path.stem)
    if sparse and lay.kind is not None:
        lay.kind, lay.params = None, {}
        lay.reason = "sparse problem (instance densities): llmulator's model is dense"
    return lay


def _problem(doc: Any, path: Path) -> Any:
    if not isinstance(doc, dict):
        raise SpecError(Diagnostic(str(path), 1, None, "", "not a Timeloop problem (a YAML mapping with `problem:`)"))
    for k in doc:
        if k not in TOP_KEYS and not str(k).endswith("_ignore"):
            raise _err(doc, f"unknown top-level key '{k}' in a layer problem file", str(k), "problem:",
                       "--network reads Timeloop problems only; pass an architecture or mapping to `llmulator "
                       "timeloop` instead" if k in ("architecture", "mapping") else "")
    if "problem" not in doc:
        if all(str(k).endswith("_ignore") for k in doc):
            return None
        raise _err(doc, "no `problem:` in this file", None, "problem:")
    prob = doc["problem"]
    if not isinstance(prob, dict):
        raise _err(doc, "`problem` is not a mapping", "problem")
    return prob


def _unknown(d: Any, allowed: set[str], where: str) -> None:
    if not isinstance(d, dict):
        raise _err(d, f"{where} is not a mapping", None)
    for k in d:
        if k not in allowed and k != "_tag":
            raise _err(d, f"unknown key '{k}' in {where}", str(k), ", ".join(sorted(allowed)))


def _check_keys(prob: Any) -> bool:
    """Unknown keys are errors (with their line); returns whether the instance gives densities (sparse),
    which it removes. An instance key that is neither a dimension nor a coefficient is an error where the
    file writes it, and ignored where it is inherited through ``<<<`` (the exercises' base carries H and W)."""
    _unknown(prob, PROBLEM_KEYS, "problem")
    shape = prob.get("shape")
    if isinstance(shape, dict):
        _unknown(shape, SHAPE_KEYS, "problem.shape")
        for ds in shape.get("data_spaces") or []:
            _unknown(ds, SPACE_KEYS, "a data space")
        for c in shape.get("coefficients") or []:
            _unknown(c, {"name", "default"}, "a coefficient")
    inst = prob.get("instance")
    if not isinstance(inst, dict) or not isinstance(shape, dict):
        return False  # read_problem says what is missing
    known = {str(d) for d in shape.get("dimensions") or []}
    known |= {str(c.get("name")) for c in shape.get("coefficients") or [] if isinstance(c, dict)}
    lines = getattr(inst, "key_lines", {})
    for k in inst:
        if k in known and (not isinstance(inst[k], int) or isinstance(inst[k], bool)):
            raise _err(inst, f"instance.{k} is {inst[k]!r}, not an integer", str(k), "a positive integer")
        if k in known or k == "densities" or k not in lines:
            continue
        near = next((n for n in sorted(known) if n.lower() == str(k).lower()), None)
        hint = f"did you mean {near}? (names are case-sensitive: Timeloop ignores '{k}' and uses {near}'s " \
               "default)" if near else ""
        raise _err(inst, f"instance key '{k}' is neither a dimension nor a coefficient of the problem", str(k),
                   "one of " + ", ".join(sorted(known)), hint)
    return bool(inst.pop("densities", None))


# -- recognising the problem -------------------------------------------------------------------------------
def _footprint(space: dict, inst: dict[str, int]) -> int:
    return math.prod(sum(c * (inst[d] - 1) for c, d in part) + 1 for part in space["projection"])


def to_layer(spec, name: str) -> Layer:
    """A read TLSpec as a network layer (kind None with the reason when its shape is not expressible)."""
    inst = spec.instance
    macs = math.prod(inst.values())
    nbytes = sum(_footprint(s, inst) for s in spec.spaces)  # elements: a Timeloop problem has no types
    lay = Layer(name, spec.problem_name if spec.problem_name != "timeloop_problem" else "problem", None,
                macs=macs, bytes=nbytes, shape=" ".join(f"{d}{inst[d]}" for d in spec.dims))
    roles = _roles(spec)
    if isinstance(roles, str):
        lay.reason = roles
        return lay
    kind, params, shape = _express(roles, inst)
    lay.op = "Conv" if kind in ("conv", "depthwise", "gconv") else "MatMul"
    lay.kind, lay.params, lay.shape = kind, params, shape
    return lay


def _window(part: list, out_dims: set[str]) -> tuple | str:
    if len(part) != 2:
        return "an input index with three or more terms"
    (c1, d1), (c2, d2) = part
    if d2 in out_dims and d1 not in out_dims:
        (c1, d1), (c2, d2) = (c2, d2), (c1, d1)
    if d1 not in out_dims or d2 in out_dims:
        return f"an input index {c1}*{d1} + {c2}*{d2} that is not an output position plus a filter offset"
    return (d1, c1, d2, c2)  # output dim, stride, filter dim, dilation


def _roles(spec) -> dict[str, Any] | str:
    """Dimension -> role (N batch, K output channels, C input channels, G groups) and the windows, or why not."""
    out = next(s for s in spec.spaces if s["rw"])
    ins = [s for s in spec.spaces if not s["rw"]]
    if len(ins) != 2:
        return f"{len(ins)} input data spaces (a convolution or a matrix product has 2)"
    if any(len(part) != 1 or part[0][0] != 1 for part in out["projection"]):
        return f"output {out['name']} is not indexed by single dimensions"
    odims = [part[0][1] for part in out["projection"]]
    windowed = [any(len(p) > 1 for p in s["projection"]) for s in ins]
    if all(windowed):
        return "both inputs are indexed by sliding windows"
    x, w = (ins[1], ins[0]) if windowed[1] else (ins[0], ins[1])  # x: the input activations (A of a product)
    if any(len(part) != 1 or part[0][0] != 1 for part in w["projection"]):
        return f"input {w['name']} is not indexed by single dimensions"
    wdims = [part[0][1] for part in w["projection"]]
    xdims, windows = [], []
    for part in x["projection"]:
        if len(part) == 1 and part[0][0] == 1:
            xdims.append(part[0][1])
            continue
        win = _window(part, set(odims)) if len(part) > 1 else f"an input index {part[0][0]}*{part[0][1]}"
        if isinstance(win, str):
            return win
        windows.append(win)
    return _assign(spec, odims, wdims, xdims, windows)


def _assign(spec, odims: list, wdims: list, xdims: list, windows: list) -> dict[str, Any] | str:
    inst = spec.instance
    big = [w for w in windows if inst[w[0]] > 1 or inst[w[2]] > 1]
    if len(big) > 2:
        return f"{len(big)}-D sliding window (only 2-D convolutions are modelled)"
    if len(windows) > 2:  # the unit windows beyond two are loops of one iteration
        windows = (big + [w for w in windows if w not in big])[:2]
    used = [d for w in windows for d in (w[0], w[2])]
    roles: dict[str, str] = {}
    for d in spec.dims:
        o, wt, x = d in odims, d in wdims, d in xdims
        n_uses = odims.count(d) + wdims.count(d) + xdims.count(d) + used.count(d)
        if d in used:
            ok = n_uses == 2 and (d in odims if d in (w[0] for w in windows) else d in wdims)
            role = "window" if ok else None
        else:
            role = {(True, True, True): "G", (True, True, False): "K", (True, False, True): "N",
                    (False, True, True): "C"}.get((o, wt, x)) if n_uses == int(o) + int(wt) + int(x) else None
        if role is None and inst[d] > 1:
            return f"dimension {d} ({inst[d]}) is not a batch, channel, group, output position or filter offset"
        roles[d] = role or "unit"
    return {"roles": roles, "windows": windows}


def _express(r: dict[str, Any], inst: dict[str, int]) -> tuple[str, dict[str, Any], str]:
    """(kind, params, shape text) as onnx_import writes them for the same Conv, Gemm or MatMul."""
    size = {k: math.prod(inst[d] for d, role in r["roles"].items() if role == k) for k in "NKCG"}
    wins = [(inst[o], s if inst[o] > 1 else 1, inst[f], dl if inst[f] > 1 else 1) for o, s, f, dl in r["windows"]]
    wins += [(1, 1, 1, 1)] * (2 - len(wins))
    (p, sh, rr, dh), (q, sw, ss, dw) = wins
    n, k, c, g = size["N"], size["K"], size["C"], size["G"]
    if rr == ss == 1 and (p == 1 or q == 1) and sh == sw == 1 and not (g > 1 and c == k == 1):
        m = n * p * q  # a matrix product: a fully-connected or linear layer (per group: a batched product)
        if g == 1:
            return "gemm", {"M": m, "N": k, "K": c}, f"{m}x{c}x{k}"
        return "bmm", {"G": g, "M": m, "N": k, "K": c}, f"{g}x({m}x{c}x{k})"
    common = {"P": p, "Q": q, "R": rr, "S": ss, "SH": sh, "SW": sw, "DH": dh, "DW": dw}
    if n > 1:
        common["N"] = n
    if g == 1:
        kind, params = "conv", {"K": k, "C": c, **common}
    elif c == k == 1:
        kind, params = "depthwise", {"C": g, **common}
    else:
        kind, params = "gconv", {"G": g, "K": k, "C": c, **common}
    st = "" if (sh, sw) == (1, 1) else (f"/{sh}" if sh == sw else f"/{sh}x{sw}")
    dl = "" if dh == dw == 1 else f" d{dh}"
    grp = "" if g == 1 else (" dw" if kind == "depthwise" else f" g{g}")
    shape = f"{c * g}>{k * g} {p}x{q} {rr}x{ss}{st}{dl}{grp}" + (f" n{n}" if n > 1 else "")
    return kind, params, shape
