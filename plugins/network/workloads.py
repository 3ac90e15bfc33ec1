"""Layer -> workload spec (the body under ``workload:``), from the library's DNN kernels.

The templates are the library workloads ``conv2d``, ``depthwise-conv``,
``gemm``, ``maxpool``/``avgpool`` and ``softmax`` generalised to what a
network needs: strides and dilations (literal coefficients in the subscripts,
so the kernel stays affine), groups, a batch loop, any pooling window, and
element-wise operators over the flattened tensor. Padding is not a loop: the
input array is the padded extent the kernel reads. Operand types follow the
architecture's MAC unit (``int8``/``int16`` operands with ``int32`` results,
or ``fp16``/``fp32`` on a float MAC), i.e. the network as quantised for the
accelerator, whatever the ONNX file's types.
"""

from __future__ import annotations

from typing import Any

from .onnx_import import Layer


def dtypes(arch) -> tuple[str, str]:
    """(operand, accumulator) types for this architecture's MAC (or its widest arithmetic unit)."""
    mac = arch.operators.get("mac")
    bits = getattr(mac, "bits", 8) if mac is not None else 8
    numeric = getattr(mac, "numeric", "int") if mac is not None else "int"
    if numeric == "float":
        return ("fp16" if bits <= 16 else "fp32"), "fp32"
    return ("int8" if bits <= 8 else "int16" if bits <= 16 else "int32"), "int32"


def _ix(stride: int, var: str, dil: int, win: str) -> str:
    a = var if stride == 1 else f"{stride} * {var}"
    b = win if dil == 1 else f"{dil} * {win}"
    return f"{a} + {b}"


def _extent(out: str, stride: int, win: str, dil: int) -> str:
    """Input extent read by out positions with a window (the padded input the kernel touches)."""
    return f"({out} - 1) * {stride} + ({win} - 1) * {dil} + 1"


def _nest(loops: list[tuple[str, str, str]], body: str) -> str:
    lines, ind = [], ""
    for label, var, bound in loops:
        lines.append(f"{ind}L_{label}: for (int {var} = 0; {var} < {bound}; {var}++) {{")
        ind += "  "
    for b in body.splitlines():
        lines.append(ind + b)
    for _ in loops:
        ind = ind[:-2]
        lines.append(ind + "}")
    return "\n".join(lines) + "\n"


def workload_body(layer: Layer, arch, name: str) -> dict[str, Any]:
    """The workload spec body of one layer (raises KeyError for a kind without a template)."""
    return _BUILD[layer.kind](dict(layer.params), dtypes(arch), name)


def _conv_like(p: dict, dt: tuple[str, str], name: str, kind: str) -> dict[str, Any]:
    op, acc = dt
    sh, sw, dh, dw = p.pop("SH"), p.pop("SW"), p.pop("DH"), p.pop("DW")
    batch = "N" in p
    hi, wi = _extent("P", sh, "R", dh), _extent("Q", sw, "S", dw)
    n_ = ["N"] if batch else []
    nv = "[n]" if batch else ""
    nl = [("n", "n", "N")] if batch else []
    ih, iw = _ix(sh, "p", dh, "r"), _ix(sw, "q", dw, "s")
    if kind == "conv":
        arrays = {"I": [*n_, "C", hi, wi], "W": ["K", "C", "R", "S"], "O": [*n_, "K", "P", "Q"]}
        loops = nl + [("k", "k", "K"), ("c", "c", "C")]
        body = f"O{nv}[k][p][q] += W[k][c][r][s] * I{nv}[c][{ih}][{iw}];"
        desc = "2-D convolution (the library's conv2d with strides, dilations and padding)"
    elif kind == "depthwise":
        arrays = {"I": [*n_, "C", hi, wi], "W": ["C", "R", "S"], "O": [*n_, "C", "P", "Q"]}
        loops = nl + [("c", "c", "C")]
        body = f"O{nv}[c][p][q] += W[c][r][s] * I{nv}[c][{ih}][{iw}];"
        desc = "depthwise 2-D convolution (the library's depthwise-conv with strides, dilations and padding)"
    else:
        arrays = {"I": [*n_, "G", "C", hi, wi], "W": ["G", "K", "C", "R", "S"], "O": [*n_, "G", "K", "P", "Q"]}
        loops = nl + [("g", "g", "G"), ("k", "k", "K"), ("c", "c", "C")]
        body = f"O{nv}[g][k][p][q] += W[g][k][c][r][s] * I{nv}[g][c][{ih}][{iw}];"
        desc = "grouped 2-D convolution (G groups of K filters over C channels each)"
    loops += [("p", "p", "P"), ("q", "q", "Q"), ("r", "r", "R"), ("s", "s", "S")]
    return {"version": 1, "name": name, "description": desc, "tags": ["dnn"], "parameters": p,
            "arrays": {"I": {"shape": arrays["I"], "dtype": op, "role": "in"},
                       "W": {"shape": arrays["W"], "dtype": op, "role": "in"},
                       "O": {"shape": arrays["O"], "dtype": acc, "role": "out"}},
            "kernel": _nest(loops, body)}


def _gemm(p: dict, dt, name: str) -> dict[str, Any]:
    op, acc = dt
    return {"version": 1, "name": name, "description": "matrix multiply C = A x B (the library's gemm)",
            "tags": ["dnn"], "parameters": p,
            "arrays": {"A": {"shape": ["M", "K"], "dtype": op, "role": "in"},
                       "B": {"shape": ["K", "N"], "dtype": op, "role": "in"},
                       "C": {"shape": ["M", "N"], "dtype": acc, "role": "out"}},
            "einsum": "C[m,n] += A[m,k] * B[k,n]",
            "kernel": _nest([("m", "m", "M"), ("n", "n", "N"), ("k", "k", "K")], "C[m][n] += A[m][k] * B[k][n];"),
            "reference": "C[:] = A.astype(C.dtype) @ B.astype(C.dtype)\n"}


def _bmm(p: dict, dt, name: str) -> dict[str, Any]:
    op, acc = dt
    return {"version": 1, "name": name, "tags": ["dnn"], "parameters": p,
            "description": "batched matrix multiply C[g] = A[g] x B[g] (attention products)",
            "arrays": {"A": {"shape": ["G", "M", "K"], "dtype": op, "role": "in"},
                       "B": {"shape": ["G", "K", "N"], "dtype": op, "role": "in"},
                       "C": {"shape": ["G", "M", "N"], "dtype": acc, "role": "out"}},
            "einsum": "C[g,m,n] += A[g,m,k] * B[g,k,n]",
            "kernel": _nest([("g", "g", "G"), ("m", "m", "M"), ("n", "n", "N"), ("k", "k", "K")],
                            "C[g][m][n] += A[g][m][k] * B[g][k][n];"),
            "reference": "C[:] = A.astype(C.dtype) @ B.astype(C.dtype)\n"}


def _pool(p: dict, dt, name: str) -> dict[str, Any]:
    op, _ = dt
    mode = p.pop("mode")
    sh, sw, dh, dw = p.pop("SH"), p.pop("SW"), p.pop("DH"), p.pop("DW")
    ih, iw = _ix(sh, "p", dh, "r"), _ix(sw, "q", dw, "s")
    fn = "fmaxf" if op.startswith("fp") else "max"
    body = (f"O[c][p][q] = {fn}(O[c][p][q], I[c][{ih}][{iw}]);" if mode == "max" else
            f"O[c][p][q] += I[c][{ih}][{iw}];")
    return {"version": 1, "name": name, "tags": ["dnn"], "parameters": p,
            "description": f"{mode} pooling over an R x S window (the library's {mode}pool, any window and "
                           "stride; the average's final scale is not counted)",
            "arrays": {"I": {"shape": ["C", _extent("P", sh, "R", dh), _extent("Q", sw, "S", dw)], "dtype": op,
                             "role": "in"},
                       "O": {"shape": ["C", "P", "Q"], "dtype": op if mode == "max" else "int32"
                             if not op.startswith("fp") else "fp32", "role": "out"}},
            "kernel": _nest([("c", "c", "C"), ("p", "p", "P"), ("q", "q", "Q"), ("r", "r", "R"), ("s", "s", "S")],
                            body)}


_UNARY_BODY = {
    "relu": "O[i] = {mx}(A[i], 0);", "clip": "O[i] = {mn}({mx}(A[i], 0), 6);",
    "leaky": "O[i] = {mx}(A[i], A[i] / 8);", "neg": "O[i] = 0 - A[i];", "abs": "O[i] = {mx}(A[i], 0 - A[i]);",
    "affine": "O[i] = A[i] * 3 + 1;",  # batch norm at inference: one scale and one shift per element
    "hsigmoid": "O[i] = {mn}({mx}(A[i] * 3 + 1, 0), 6);", "hswish": "O[i] = A[i] * {mn}({mx}(A[i] + 3, 0), 6);",
    "sigmoid": "O[i] = 1.0f / (1.0f + expf(0.0f - A[i]));", "tanh": "O[i] = tanhf(A[i]);",
    "exp": "O[i] = expf(A[i]);", "erf": "O[i] = erff(A[i]);", "sqrt": "O[i] = sqrtf(A[i]);",
    "recip": "O[i] = 1.0f / A[i];", "gelu": "O[i] = 0.5f * A[i] * (1.0f + tanhf(0.8f * A[i]));",
}
_BINARY_OP = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


def _eltwise(p: dict, dt, name: str) -> dict[str, Any]:
    op, _ = dt
    mode, binary, bcast = p.pop("mode"), p.pop("binary"), p.pop("broadcast")
    fl = op.startswith("fp")
    mx, mn = ("fmaxf", "fminf") if fl else ("max", "min")
    dtype = "fp32" if mode in ("sigmoid", "tanh", "exp", "erf", "sqrt", "recip", "gelu") else op
    arrays = {"A": {"shape": ["N"], "dtype": dtype, "role": "in"}}
    if binary:
        b = "B[0]" if bcast else "B[i]"
        arrays["B"] = {"shape": [1] if bcast else ["N"], "dtype": dtype, "role": "in"}
        body = (f"O[i] = {mx if mode == 'max' else mn}(A[i], {b});" if mode in ("max", "min") else
                f"O[i] = powf(A[i], {b});" if mode == "pow" else f"O[i] = A[i] {_BINARY_OP[mode]} {b};")
    else:
        body = _UNARY_BODY[mode].format(mx=mx, mn=mn)
    arrays["O"] = {"shape": ["N"], "dtype": dtype, "role": "out"}
    return {"version": 1, "name": name, "tags": ["dnn"], "parameters": p,
            "description": f"element-wise {mode} over the flattened tensor", "arrays": arrays,
            "kernel": _nest([("i", "i", "N")], body)}


def _softmax(p: dict, dt, name: str) -> dict[str, Any]:
    body = """float mx = X[r][0];
L_max: for (int c = 1; c < COLS; c++) {
  mx = fmaxf(mx, X[r][c]);
}
float sum = 0;
L_exp: for (int c = 0; c < COLS; c++) {
  float e = expf(X[r][c] - mx);
  Y[r][c] = e;
  sum += e;
}
L_div: for (int c = 0; c < COLS; c++) {
  Y[r][c] = Y[r][c] / sum;
}"""
    return {"version": 1, "name": name, "tags": ["dnn"], "parameters": p,
            "description": "row softmax, max-subtracted three-pass form (the library's softmax)",
            "arrays": {"X": {"shape": ["ROWS", "COLS"], "dtype": "fp32", "role": "in"},
                       "Y": {"shape": ["ROWS", "COLS"], "dtype": "fp32", "role": "out"}},
            "kernel": _nest([("r", "r", "ROWS")], body)}


_BUILD = {"conv": lambda p, dt, n: _conv_like(p, dt, n, "conv"),
          "depthwise": lambda p, dt, n: _conv_like(p, dt, n, "depthwise"),
          "gconv": lambda p, dt, n: _conv_like(p, dt, n, "gconv"),
          "gemm": _gemm, "bmm": _bmm, "pool": _pool, "eltwise": _eltwise, "softmax": _softmax}

#: the loops of each template, outermost first (what the mapping search binds and tiles)
MAC_KINDS = ("conv", "depthwise", "gconv", "gemm", "bmm")
