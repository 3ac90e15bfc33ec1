"""Read an ONNX model into a list of layers with their shapes filled in (issue 23).

Shapes come from ``onnx.shape_inference``; weights are never read (only the
initializers' dimensions), so external-data files need not be present.
Each node becomes a :class:`Layer`: ``kind`` names the workload template it
maps to (``plugins/network/workloads.py``), or is ``None`` for an operator we
do not model; every layer carries its MACs and the bytes of its inputs and
outputs, so that what is not modelled is reported with its share of the
network, never dropped.

Supported: default-domain (``ai.onnx``) opsets ``MIN_OPSET`` to the newest the
installed ``onnx`` package knows. Nodes of another domain are listed as
unsupported; the rest of the network is still estimated.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import attrs
from llmulator.errors import UserError

MIN_OPSET = 7  # Conv/Gemm/MatMul/pooling semantics as modelled here are stable from opset 7 on
MAX_FILE_BYTES = 2 * 1024**3  # protobuf's limit for one message: a bigger file needs external data

# element bytes of ONNX TensorProto data types
_ELEM_BYTES = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2, 17: 1, 18: 1,
               19: 1, 20: 1, 21: 1, 22: 1, 23: 1}

UNARY = {"Relu": "relu", "Clip": "clip", "LeakyRelu": "leaky", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp",
         "Erf": "erf", "Sqrt": "sqrt", "Neg": "neg", "Abs": "abs", "HardSigmoid": "hsigmoid", "HardSwish": "hswish",
         "Gelu": "gelu", "BatchNormalization": "affine", "Reciprocal": "recip"}
BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Max": "max", "Min": "min", "Pow": "pow"}
POOLS = {"MaxPool": "max", "AveragePool": "avg", "GlobalAveragePool": "avg", "GlobalMaxPool": "max"}


@attrs.define
class Layer:
    name: str  # the node's name (or op_type#index when it has none)
    op: str  # ONNX op_type, with its domain when not the default one
    kind: str | None  # workload template (conv, depthwise, gconv, gemm, bmm, pool, eltwise, softmax) or None
    params: dict[str, Any] = attrs.field(factory=dict)  # the template's sizes and options
    macs: int = 0
    bytes: int = 0  # inputs + outputs (weights included) at the model's element types
    shape: str = ""  # short human-readable shape
    reason: str = ""  # why it is not modelled (kind None)


def _dims(vi) -> list[int | str] | None:
    t = vi.type
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    out: list[int | str] = []
    for d in t.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            out.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            out.append(d.dim_param)
        else:
            out.append("?")
    return out


def load(path: str | Path, dims: dict[str, int] | None = None):
    """The model with symbolic input dimensions set (``dims``) and shapes inferred; UserError when it cannot
    be read."""
    import onnx
    from google.protobuf.message import DecodeError

    p = Path(path)
    if not p.is_file():
        raise UserError(f"--network {path}: no such file")
    size = p.stat().st_size
    if size > MAX_FILE_BYTES:
        raise UserError(f"--network {path}: {size / 1024**3:.1f} GiB is larger than one ONNX protobuf can be "
                        "(2 GiB); save the model with external data (onnx.save(..., save_as_external_data=True))")
    if size == 0:
        raise UserError(f"--network {path}: the file is empty")
    try:
        model = onnx.load(os.fspath(p), load_external_data=False)
    except (DecodeError, RuntimeError, ValueError, OSError) as e:
        raise UserError(f"--network {path}: not a readable ONNX model (truncated or not ONNX?): "
                        f"{type(e).__name__}: {e}") from None
    if not model.graph.node:
        raise UserError(f"--network {path}: the model's graph has no nodes (truncated or not ONNX?)")
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    newest = onnx.defs.onnx_opset_version()
    if opset is None:
        raise UserError(f"--network {path}: the model imports no default-domain (ai.onnx) opset")
    if not MIN_OPSET <= opset <= newest:
        raise UserError(f"--network {path}: opset {opset} is outside the supported range {MIN_OPSET} to {newest} "
                        "(convert it with onnx.version_converter.convert_version)")
    _check_acyclic(model.graph, path)
    _set_dims(model.graph, dims or {}, path)
    try:
        model = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception as e:  # noqa: BLE001 - onnx raises several types for an inconsistent graph
        raise UserError(f"--network {path}: shape inference failed: {type(e).__name__}: {e}") from None
    return model


def load_layers(path: str | Path, dims: dict[str, int] | None = None) -> list[Layer]:
    """``layers(load(path, dims))``, cached by the file's content: a model read before (same bytes, same
    ``dims``, same onnx version and importer code) costs no ``import onnx`` (whose ``ml_dtypes`` alone takes
    about 1 s of CPU to import) and no shape inference. The cache is ``$LLMULATOR_CACHE/network`` (default
    ``~/.cache/llmulator/network``); ``LLMULATOR_NETWORK_CACHE=0`` turns it off. Bad models are never cached."""
    import json

    key = _cache_key(path, dims)
    f = None
    if key is not None:
        root = Path(os.environ.get("LLMULATOR_CACHE", Path.home() / ".cache" / "llmulator")) / "network"
        f = root / f"{key}.json"
        try:
            return [Layer(**d) for d in json.loads(f.read_text(encoding="utf-8"))]
        except (OSError, ValueError, TypeError):
            pass  # not cached yet, or unreadable: read the model
    out = layers(load(path, dims))
    if f is not None:
        try:
            from llmulator.fileio import atomic_write_text
            f.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(str(f), json.dumps([attrs.asdict(x) for x in out]))
        except OSError:
            pass  # a read-only cache only costs the next run its import
    return out


def _cache_key(path: str | Path, dims: dict[str, int] | None) -> str | None:
    import hashlib
    from importlib.metadata import PackageNotFoundError, version

    if os.environ.get("LLMULATOR_NETWORK_CACHE", "1") == "0":
        return None
    p = Path(path)
    try:
        if not p.is_file() or not 0 < p.stat().st_size <= MAX_FILE_BYTES:
            return None  # load() says what is wrong
        h = hashlib.sha256()
        with p.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        h.update(Path(__file__).read_bytes())  # the importer's code: a new version reads the model again
        h.update(repr(sorted((dims or {}).items())).encode())
        h.update(version("onnx").encode())
    except (OSError, PackageNotFoundError):
        return None
    return h.hexdigest()[:32]


def _check_acyclic(graph, path) -> None:
    produced = {o: i for i, n in enumerate(graph.node) for o in n.output if o}
    deps = [{produced[x] for x in n.input if x in produced} for n in graph.node]
    state = [0] * len(deps)  # 0 new, 1 on the stack, 2 done
    for start in range(len(deps)):
        if state[start]:
            continue
        stack = [(start, iter(deps[start]))]
        state[start] = 1
        while stack:
            i, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[i] = 2
                stack.pop()
            elif state[nxt] == 1:
                names = [graph.node[j].name or graph.node[j].op_type for j, _ in stack]
                k = [j for j, _ in stack].index(nxt)
                raise UserError(f"--network {path}: the graph has a cycle: {' -> '.join(names[k:] + [names[k]])} "
                                "(an ONNX graph must be acyclic)")
            elif state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, iter(deps[nxt])))


def _set_dims(graph, dims: dict[str, int], path) -> None:
    inits = {t.name for t in graph.initializer}
    for vi in graph.input:
        if vi.name in inits:
            continue
        for k, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                continue
            sym = d.dim_param if d.HasField("dim_param") else ""
            if sym and sym in dims:
                d.dim_value = int(dims[sym])
                continue
            what = f"symbolic ('{sym}')" if sym else "unknown"
            hint = f"give it a value with --dim {sym}=1" if sym else "give the model a fixed input shape"
            raise UserError(f"--network {path}: input '{vi.name}' dimension {k} is {what} and has no value; {hint}")


def layers(model) -> list[Layer]:
    g = model.graph
    shapes: dict[str, list] = {}
    etype: dict[str, int] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        s = _dims(vi)
        if s is not None:
            shapes[vi.name] = s
            etype[vi.name] = vi.type.tensor_type.elem_type
    for t in g.initializer:
        shapes[t.name] = [int(x) for x in t.dims]
        etype[t.name] = t.data_type
    consts = {t.name for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant":
            consts.update(n.output)
            for a in n.attribute:
                if a.name == "value":
                    shapes[n.output[0]] = [int(x) for x in a.t.dims]
                    etype[n.output[0]] = a.t.data_type
    out = []
    for i, n in enumerate(g.node):
        name = n.name or f"{n.op_type}#{i}"
        out.append(_layer(n, name, shapes, etype, consts))
    return out


def _numel(s) -> int | None:
    if s is None or any(not isinstance(d, int) or d < 0 for d in s):
        return None
    return math.prod(s)


def _attrs(n) -> dict[str, Any]:
    import onnx
    return {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}


def _layer(n, name, shapes, etype, consts) -> Layer:
    op = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
    ins = [x for x in n.input if x]
    nbytes = 0
    for x in ins + [o for o in n.output if o]:
        k = _numel(shapes.get(x))
        if k is not None:
            nbytes += k * _ELEM_BYTES.get(etype.get(x, 1), 4)
    lay = Layer(name, op, None, bytes=nbytes)
    if n.domain not in ("", "ai.onnx"):
        lay.reason = f"operator of domain '{n.domain}', which llmulator does not know"
        return lay
    if op == "Constant":
        lay.reason = "constant (no work)"
        return lay
    outs = shapes.get(n.output[0]) if n.output else None
    if outs is None or _numel(outs) is None:
        lay.reason = "output shape unknown after shape inference"
        if op in ("Conv", "Gemm", "MatMul"):
            raise UserError(f"node '{name}' ({op}): its output shape could not be inferred "
                            f"({outs or 'no shape'}); give the model static shapes (--dim NAME=VALUE for "
                            "symbolic input dimensions)")
        return lay
    a = _attrs(n)
    try:
        if op == "Conv":
            return _conv(lay, a, shapes[ins[0]], shapes[ins[1]], outs)
        if op == "ConvTranspose":
            w = shapes[ins[1]]
            lay.macs = _numel(shapes[ins[0]]) * math.prod(w[1:])
            lay.reason = "ConvTranspose is not modelled"
            return lay
        if op in ("Gemm", "MatMul"):
            return _matmul(lay, a, shapes[ins[0]], shapes[ins[1]], outs, op, ins[1] in consts)
        if op in POOLS:
            return _pool(lay, a, shapes[ins[0]], outs, op)
        if op in UNARY or op in BINARY:
            return _eltwise(lay, a, [shapes.get(x) for x in ins], outs, op)
        if op == "Softmax":
            axis = int(a.get("axis", -1))
            if axis not in (-1, len(outs) - 1):
                lay.reason = "Softmax over an axis other than the last is not modelled"
                return lay
            cols = int(outs[-1])
            lay.kind, lay.params = "softmax", {"ROWS": _numel(outs) // cols, "COLS": cols}
            lay.shape = f"{_numel(outs) // cols}x{cols}"
            return lay
    except (KeyError, IndexError, TypeError) as e:
        lay.kind = None
        lay.reason = f"an input's shape is unknown ({type(e).__name__}: {e})"
        return lay
    lay.reason = "data movement or an operator llmulator does not model" if op in _MOVES else \
        f"operator {op} is not modelled"
    return lay


_MOVES = {"Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice", "Gather",
          "Identity", "Dropout", "Shape", "Cast", "Pad", "Expand", "Tile", "Resize", "Upsample", "ConstantOfShape"}


def _pair(v, default, n=2) -> list[int]:
    v = list(v) if v is not None else []
    return [int(x) for x in v] if len(v) == n else [default] * n


def _conv(lay, a, xs, ws, ys) -> Layer:
    if len(xs) != 4 or len(ws) != 4 or len(ys) != 4:
        lay.macs = _numel(ys) * math.prod(ws[1:]) if _numel(ys) and _numel(ws) else 0
        lay.reason = f"{len(xs) - 2}-D convolution (only 2-D is modelled)"
        return lay
    n, c, _, _ = xs
    k, cg, r, s = ws
    _, _, p, q = ys
    g = int(a.get("group", 1))
    sh, sw = _pair(a.get("strides"), 1)
    dh, dw = _pair(a.get("dilations"), 1)
    lay.macs = n * k * p * q * cg * r * s
    common = {"P": p, "Q": q, "R": r, "S": s, "SH": sh, "SW": sw, "DH": dh, "DW": dw}
    if n > 1:
        common["N"] = n
    if g == 1:
        lay.kind, lay.params = "conv", {"K": k, "C": c, **common}
    elif g == c == k and cg == 1:
        lay.kind, lay.params = "depthwise", {"C": c, **common}
    else:
        lay.kind, lay.params = "gconv", {"G": g, "K": k // g, "C": cg, **common}
    st = f"/{sh}" if sh == sw else f"/{sh}x{sw}"
    dl = "" if dh == dw == 1 else f" d{dh}"
    grp = "" if g == 1 else (" dw" if lay.kind == "depthwise" else f" g{g}")
    lay.shape = f"{c}>{k} {p}x{q} {r}x{s}{st if (sh, sw) != (1, 1) else ''}{dl}{grp}" + (f" n{n}" if n > 1 else "")
    return lay


def _matmul(lay, a, xa, xb, ys, op, b_const) -> Layer:
    if op == "Gemm":
        m, k = (xa[1], xa[0]) if a.get("transA", 0) else (xa[0], xa[1])
        nn = xb[0] if a.get("transB", 0) else xb[1]
        lay.macs = m * nn * k
        lay.kind, lay.params = "gemm", {"M": m, "N": nn, "K": k}
        lay.shape = f"{m}x{k}x{nn}"
        return lay
    xa = [1] + list(xa) if len(xa) == 1 else list(xa)
    xb = list(xb) + [1] if len(xb) == 1 else list(xb)
    m, k = xa[-2], xa[-1]
    nn = xb[-1]
    batch = math.prod(ys[:-2]) if len(ys) > 2 else 1
    lay.macs = batch * m * nn * k
    b_batch = math.prod(xb[:-2]) if len(xb) > 2 else 1
    if b_batch == 1:  # one B for every batch (weights): the batch folds into M
        lay.kind, lay.params = "gemm", {"M": batch * m, "N": nn, "K": k}
        lay.shape = f"{batch * m}x{k}x{nn}"
    else:  # both operands batched (attention products)
        lay.kind, lay.params = "bmm", {"G": batch, "M": m, "N": nn, "K": k}
        lay.shape = f"{batch}x({m}x{k}x{nn})"
    return lay


def _pool(lay, a, xs, ys, op) -> Layer:
    if len(xs) != 4 or len(ys) != 4:
        lay.reason = f"{len(xs) - 2}-D pooling (only 2-D is modelled)"
        return lay
    n, c, h, w = xs
    _, _, p, q = ys
    if op.startswith("Global"):
        r, s, sh, sw, dh, dw = h, w, 1, 1, 1, 1
    else:
        r, s = _pair(a.get("kernel_shape"), 1)
        sh, sw = _pair(a.get("strides"), 1)
        dh, dw = _pair(a.get("dilations"), 1)
    lay.kind = "pool"
    lay.params = {"C": n * c, "P": p, "Q": q, "R": r, "S": s, "SH": sh, "SW": sw, "DH": dh, "DW": dw,
                  "mode": POOLS[op]}
    lay.shape = f"{n * c} {p}x{q} {r}x{s}/{sh}"
    return lay


def _eltwise(lay, a, in_shapes, ys, op) -> Layer:
    n = _numel(ys)
    mode = UNARY.get(op) or BINARY[op]
    binary = op in BINARY and len(in_shapes) >= 2
    other = _numel(in_shapes[1]) if binary and in_shapes[1] is not None else None
    lay.kind = "eltwise"
    lay.params = {"N": n, "mode": mode, "binary": binary, "broadcast": bool(binary and other != n)}
    lay.shape = f"{n:,}".replace(",", "_") if n >= 10**6 else str(n)
    return lay
