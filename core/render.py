"""Rendering a Design: HLS C with the mapping applied, and the text pieces prompts are made of.

* :func:`hls_c` -- a complete C translation unit in Vitis-HLS style: the
  workload's kernel, re-parsed with pycparser, with the mapping applied on the
  AST (strip-mining, tile-loop order, pipeline/unroll pragmas, PE-array
  binding) and emitted with a :class:`pycparser.c_generator.CGenerator`;
  interface, storage, partition and dataflow pragmas from placement,
  partition and dataflow. It compiles with ``gcc -std=c11``.
* :func:`prompt` -- the dataset prompt: a compact, digit-isolated summary of a
  design (hardware, mapping, sizes, code and inputs sections; ``templates/prompt.j2``)
  that ``llmulator synth`` stores with every sample (the ``prompt`` column). It is
  *not* what a model reads: an estimator owns its model's prompt format (the llm
  plugin's ``llmulator_plugins.llm.text.model_prompt``, which the checkpoint records),
  and ``llmulator render --prompt`` prints exactly that text
  (``llmulator.hookspecs.PromptReader``).
* The public pieces prompts are built from: :func:`isolate_digits` (every numeric
  literal digit by digit), :func:`num` (a number as prompts write it),
  :func:`compact` (whitespace squeezed), :func:`kernel_function` (the mapped kernel
  as an HLS function) and :func:`input_lines` (the input description, one line per
  array or structure).

How the mapping is applied to the kernel's C (strip-mining, tile-loop order, pragmas):
:mod:`llmulator.hls`.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from .expr import ExprError, evaluate
from .hls import mapped_body, mapped_kernel  # noqa: F401 - mapped_kernel: re-exported (instrument, baselines)
from .inputs import default_description, resolve_inputs
from .kernel import C_TYPES


@functools.cache
def _env():
    """The templates' environment, made on first use: estimating a design renders no template (jinja2 is
    imported only here)."""
    import jinja2
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).resolve().parent / "templates")),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        autoescape=False)


# ----------------------------------------------------------------------------------------------
# digit isolation

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|(?P<num>\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.])*)")
_SIGN_CONTEXT = re.compile(r"[A-Za-z0-9_)\]]")


def isolate_digits(text: str) -> str:
    """Write every numeric literal with each character as its own space-separated token.

    ``-128`` -> ``- 1 2 8``, ``3.75`` -> ``3 . 7 5``, ``1e-5`` -> ``1 e - 5``,
    ``0.2f`` -> ``0 . 2 f``, ``16x16`` -> ``1 6 x 1 6``.

    A numeric literal is a C preprocessing number: it starts with a digit (or
    ``.`` and a digit) that is not part of an identifier, and runs on over
    letters, digits, ``_``, ``.`` and a sign after an exponent letter. Digits
    inside identifiers (``L_k2``, ``int32_t``, ``x2``) are left alone, so
    names keep their meaning. A ``+`` or ``-`` sign written directly before a
    number, where it cannot be a binary operator (not after an identifier,
    number, ``)`` or ``]``), is separated from it: ``[-1, 2]`` -> ``[- 1, 2]``,
    while ``j-1`` stays ``j-1``. Nothing else changes, and applying the
    function to its own output changes nothing (idempotent).
    """

    def sub(m: re.Match) -> str:
        num = m.group("num")
        if num is None:
            return m.group(0)
        out = " ".join(num)
        i = m.start()
        if i > 0 and text[i - 1] in "+-" and (i == 1 or not _SIGN_CONTEXT.match(text[i - 2])):
            out = " " + out
        return out

    return _TOKEN.sub(sub, text)


# ----------------------------------------------------------------------------------------------
# HLS C


def num(x: Any) -> str:
    """A number as prompts write it: integers (and integral floats below 1e15) without a decimal point,
    other floats as ``repr``, booleans as ``true``/``false``."""
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, int):
        return str(x)
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


def _c_value(dtype: str, value: Any) -> str:
    if dtype.startswith("fp"):
        text = repr(float(value))
        return text + "f" if dtype == "fp32" else text
    return str(int(value))


def _dims(shape) -> str:
    return "".join(f"[{str(d).replace('//', '/')}]" for d in shape)


def _array_info(d) -> list[dict[str, Any]]:
    w, m = d.workload, d.mapping
    out = []
    for name, a in w.arrays.items():
        level_name = d.placement(name)
        level = d.arch.level(level_name)
        kind = level.kind if level is not None else "dram"
        ctype = C_TYPES[a.dtype]
        decl = f"{ctype} {name}{_dims(a.shape)}"
        part = m.partition.get(name)
        out.append({
            "name": name, "role": a.role, "temp": a.role == "temp",
            "decl": ("const " if a.role == "in" else "") + decl,
            "level": level_name, "kind": kind,
            "ram": "ram_2p" if level is not None and level.ports >= 2 else "ram_1p",
            "impl": "lutram" if kind == "regfile" else "bram",
            "partition": None if part is None else {"type": part.type, "factor": part.factor, "dim": part.dim},
        })
    return out


def kernel_function(d, comments: bool) -> str:
    """The design's kernel as an HLS C function with the mapping applied (pragmas included; with
    ``comments``, the spatial-binding and reduction remarks too), without a trailing newline."""
    body = mapped_body(d, comments)
    return _env().get_template("hls_function.c.j2").render(
        fname=f"{_c_ident(d.workload.name)}_kernel", arrays=_array_info(d), comments=comments,
        dataflow=d.mapping.dataflow, body=body).rstrip("\n")


def _c_ident(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return s if not s[:1].isdigit() else "_" + s


def hls_c(design) -> str:
    """The design as a complete HLS C translation unit (see the module docstring for the mapping)."""
    d = design
    _ = d.tree  # a kernel that does not parse raises its SpecError here
    w = d.workload
    sizes = d.sizes
    scalars = [{"name": s, "ctype": C_TYPES[v["dtype"]], "value": _c_value(v["dtype"], v["value"])}
               for s, v in w.scalars.items()]
    return _env().get_template("hls.c.j2").render(
        arch=d.arch.name, workload=w.name, mapping=d.mapping.name, preset=d.preset or "(default parameters)",
        defines=[(p, sizes[p]) for p in w.parameters], scalars=scalars, function=kernel_function(d, True),
        note=d.levels_note())


# ----------------------------------------------------------------------------------------------
# prompt


def _expr_value(e: Any, sizes: dict[str, int]) -> str:
    try:
        return num(evaluate(e, sizes))
    except ExprError:
        return str(e)


def _distribution(a: dict[str, Any]) -> str:
    parts = [a["distribution"]]
    if "range" in a:
        parts.append(f"[{num(a['range'][0])}, {num(a['range'][1])}]")
    for k in ("mean", "std", "value", "density"):
        if k in a:
            parts.append(f"{k} {num(a[k])}")
    if "order" in a:
        parts.append(f"sorted {a['order']}")
    return " ".join(parts)


def input_lines(d, variant: str | None) -> list[str]:
    """The input description of ``variant`` (None: the workload's own inputs), one line per sparse
    structure (``csr row_ptr col_idx: rows 64, ...``) and per other input array (``A: uniform [0, 1]``),
    led by ``variant NAME`` when one is given."""
    w = d.workload
    desc = resolve_inputs(w, variant)
    lines = []
    if variant is not None:
        lines.append(f"variant {variant}")
    filled = set()
    for st in desc["structures"]:
        arrs = [st[k] for k in ("row_ptr", "col_idx") if st.get(k)]
        filled.update(arrs)
        fields = [f"{k} {_expr_value(st[k], d.sizes)}" for k in ("rows", "cols", "nnz") if k in st]
        fields.append(f"row_skew {num(st.get('row_skew', 0))}")
        lines.append(f"{st['kind']} {' '.join(arrs)}: {', '.join(fields)}")
    for name, a in w.arrays.items():
        if a.role not in ("in", "inout") or name in filled:
            continue
        spec = desc["arrays"].get(name) or default_description(a.dtype)
        lines.append(f"{name}: {_distribution(spec)}")
    return lines


def compact(text: str) -> str:
    """Every line stripped with runs of whitespace made one space, blank lines dropped, one final newline."""
    lines = (re.sub(r"\s+", " ", ln).strip() for ln in text.splitlines())
    return "\n".join(ln for ln in lines if ln) + "\n"


def prompt(design, variant: str | None = None) -> str:
    """The dataset prompt: hardware, mapping, sizes, code and inputs, numbers digit-isolated.

    Deterministic for a given design and variant; whitespace is compacted
    (no indentation, no blank lines, single spaces). ``llmulator synth`` stores it with every
    sample; a model reads its own format instead (see the module docstring).
    """
    d = design
    a, m, w = d.arch, d.mapping, d.workload
    variant = variant if variant is not None else d.variant
    _ = d.tree
    loops = []
    for label in d.tree.loops:
        lm = m.loop(label)
        items = []
        if lm.tile is not None:
            items.append(f"tile {lm.tile}")
        if lm.spatial:
            items.append(f"spatial {lm.spatial}")
        if lm.unroll:
            items.append(f"unroll {lm.unroll}")
        if lm.pipeline_ii:
            items.append(f"pipeline II {lm.pipeline_ii}")
        if lm.fuse:
            items.append("fuse " + " ".join(lm.fuse))
        if lm.reduction == "tree":
            items.append("reduction tree")
        if items:
            loops.append({"label": label, "items": items})
    mems = [{"name": lv.name, "kind": lv.kind,
             "capacity": None if lv.capacity_kib is None else num(lv.capacity_kib),
             "instances": lv.instances, "width": lv.width_bits, "banks": lv.banks, "ports": lv.ports,
             "bandwidth": num(lv.bandwidth_bytes_per_cycle), "latency": lv.latency_cycles} for lv in a.memory]
    used = d.used_operator_classes()
    ops = [{"name": o.name, "count": o.count, "latency": o.latency_cycles, "bits": o.bits, "numeric": o.numeric}
           for o in a.operators.values() if o.name in used]
    placement = [f"{n} {d.placement(n)}" for n in w.arrays]
    partition = [f"{n} {p.type}" + (f" {p.factor}" if p.type != "complete" else "") + f" dim {p.dim}"
                 for n, p in m.partition.items()]
    sizes = [(p, d.sizes[p]) for p in w.parameters]
    sizes += [(s, num(v["value"])) for s, v in w.scalars.items()]
    text = _env().get_template("prompt.j2").render(
        clock=num(a.clock_mhz), pe=a.pe_array, ops=ops, mems=mems, loops=loops, order=list(m.order),
        placement=placement, partition=partition, dataflow=m.dataflow, sizes=sizes,
        code=kernel_function(d, False), inputs=input_lines(d, variant))
    return isolate_digits(compact(text))
