"""Concrete input data for a workload, its NumPy reference, and .npy storage.

A workload's ``inputs`` section describes how to make data for its ``in`` and
``inout`` arrays (a distribution per array, and *structures* such as a CSR
sparsity pattern that fill several index arrays at once); ``variants`` are
named alternatives that override parts of that description. This module turns
the description into arrays:

* :func:`generate_inputs` makes one array for every array of the workload
  (declarative descriptions first, in dependency order for ``copy_of``; then the
  workload's optional Python ``generator`` for inputs that depend on each other);
* :func:`run_reference` executes the workload's NumPy ``reference`` on them;
* :func:`save_inputs` / :func:`load_inputs` store and read them as one
  ``<array>.npy`` file per array.

Generation is deterministic: the same workload, sizes, variant and seed give
bit-identical arrays. Each array draws from its own generator, derived from the
seed and the array's name, so adding or changing the description of one array
does not change the values of the others.

A variant may also change the workload's scalars and the generator's ``params``
(:func:`resolve_inputs` returns the effective ones; :func:`inputs_for` hands the
scalars to the profilers with the arrays).

Python from the workload file -- the reference and the generator -- runs only
through :func:`llmulator.usercode.run_user_code` (the one place the sandbox of
issue #16 confines).

Every problem that comes from user input is raised as
:class:`llmulator.errors.UserError` with a message naming the workload and
the array (or, for a mistake in the description itself that a file position
can point at, :class:`llmulator.errors.SpecError` with file:line and field).
"""

from __future__ import annotations

import copy
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from .errors import SpecError, UserError
from .expr import ExprError, evaluate
from .usercode import MAX_CODE_CHARS, plain_text, run_user_code

NP_DTYPES: dict[str, type[np.generic]] = {
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
    "fp16": np.float16, "fp32": np.float32, "fp64": np.float64,
}

#: Default description for an ``in``/``inout`` array that ``inputs`` does not describe.
#: Floating-point arrays: uniform in [-1, 1). Signed integers: integers uniform in
#: [-128, 127]; unsigned integers: in [0, 255] (whatever the width, so that sums of
#: products do not overflow a wider accumulator).
DEFAULT_FLOAT_RANGE = (-1.0, 1.0)
DEFAULT_SIGNED_RANGE = (-128, 127)
DEFAULT_UNSIGNED_RANGE = (0, 255)


def np_dtype(dtype: str) -> np.dtype:
    """The NumPy dtype of a spec dtype name (``int8`` -> ``np.int8``, ``fp32`` -> ``np.float32``)."""
    try:
        return np.dtype(NP_DTYPES[dtype])
    except KeyError:
        raise UserError(f"unknown dtype '{dtype}' (one of: {', '.join(NP_DTYPES)})") from None


def default_description(dtype: str) -> dict[str, Any]:
    """The description used for an input array that ``inputs`` does not describe."""
    dt = np_dtype(dtype)
    if dt.kind == "f":
        return {"distribution": "uniform", "range": list(DEFAULT_FLOAT_RANGE)}
    if dt.kind == "u":
        return {"distribution": "randint", "range": list(DEFAULT_UNSIGNED_RANGE)}
    return {"distribution": "randint", "range": list(DEFAULT_SIGNED_RANGE)}


def variants(workload) -> list[str]:
    """Names of the input variants of a workload."""
    return sorted((workload.inputs or {}).get("variants", {}))


def _structure_outputs(st: Mapping[str, Any]) -> set[str]:
    return {st[k] for k in ("row_ptr", "col_idx") if st.get(k)}


def _spec_error(workload, path: tuple, message: str, expected: str = "", hint: str = "") -> Exception:
    """A SpecError at ``workload.<path>`` (file:line from the workload's source map), or, for a
    workload built without one, a UserError naming the workload and the field."""
    smap = getattr(workload, "source_map", None)
    if smap is not None:
        return SpecError(smap.diag(("workload",) + tuple(path), message, expected, hint, prefer_key=True))
    field = ".".join(str(p) for p in path)
    text = f"workload '{workload.name}': {field}: {message}"
    if expected:
        text += f" (expected: {expected})"
    return UserError(text + (f"; {hint}" if hint else ""))


def _scalar_override(workload, variant: str, name: str, value: Any) -> dict[str, Any]:
    """A scalar of the workload with the value a variant gives it (checked against its dtype)."""
    path = ("inputs", "variants", variant, "scalars", name)
    known = workload.scalars or {}
    if name not in known:
        raise _spec_error(workload, path, f"variant '{variant}' sets unknown scalar '{name}'",
                          "one of: " + (", ".join(sorted(known)) or "none (the workload declares no scalars)"),
                          "declare it under workload.scalars with a dtype and a default value")
    dtype = known[name]["dtype"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _spec_error(workload, path, f"scalar '{name}' of variant '{variant}' is {value!r}, not a number",
                          f"a number of dtype {dtype}")
    dt = np_dtype(dtype)
    if dt.kind in "iu":
        dmin, dmax = _int_bounds(dt)
        if not np.isfinite(value) or value != int(value) or not dmin <= value <= dmax:
            raise _spec_error(workload, path, f"scalar '{name}' of variant '{variant}' is {value}, which does "
                              f"not fit its dtype {dtype}", f"an integer in [{dmin}, {dmax}]")
    else:
        with np.errstate(over="ignore"):
            finite = bool(np.isfinite(value) and np.isfinite(dt.type(value)))
        if not finite:
            raise _spec_error(workload, path, f"scalar '{name}' of variant '{variant}' is {value}, which does "
                              f"not fit its dtype {dtype}", f"a finite {dtype} value")
    return {**known[name], "value": value}


def resolve_inputs(workload, variant: str | None = None) -> dict[str, Any]:
    """The effective input description: the base ``inputs`` with a variant applied.

    Returns ``{"seed", "arrays", "structures", "hints", "scalars", "params", "generator"}``.
    A variant's array descriptions replace the base ones of the same array; a variant's
    structure replaces every base structure that fills one of the same arrays (others are
    kept); a variant's hints override the workload's hints by label; a variant's
    ``scalars`` override the values (not the dtypes) of the workload's scalars by name
    (``"scalars"`` is the whole effective ``{name: {"dtype", "value"}}`` mapping); a
    variant's ``params`` override the generator parameters ``inputs.params`` by name
    (a variant may only set parameters the base declares); a variant's ``generator``
    replaces the base one (``None`` when there is none).
    """
    inp = workload.inputs or {}
    arrays = dict(inp.get("arrays", {}))
    structures = list(inp.get("structures", []))
    hints = {k: dict(v) for k, v in (workload.hints or {}).items()}
    scalars = {k: dict(v) for k, v in (workload.scalars or {}).items()}
    params = copy.deepcopy(dict(inp.get("params", {})))
    generator = inp.get("generator")
    if variant is not None:
        known = inp.get("variants", {})
        if variant not in known:
            names = ", ".join(sorted(known)) or "none"
            raise UserError(f"workload '{workload.name}' has no input variant '{variant}' "
                            f"(variants: {names})")
        v = known[variant]
        arrays.update(v.get("arrays", {}))
        for st in v.get("structures", []):
            outs = _structure_outputs(st)
            structures = [s for s in structures if not (_structure_outputs(s) & outs)]
            structures.append(st)
        for label, h in v.get("hints", {}).items():
            hints.setdefault(label, {}).update(h)
        for name, value in v.get("scalars", {}).items():
            scalars[name] = _scalar_override(workload, variant, name, value)
        for name, value in v.get("params", {}).items():
            if name not in params:
                raise _spec_error(workload, ("inputs", "variants", variant, "params", name),
                                  f"variant '{variant}' sets generator parameter '{name}', which "
                                  "inputs.params does not declare",
                                  "one of: " + (", ".join(sorted(params)) or "none"),
                                  f"give its default under inputs.params ({name}: ...)")
            params[name] = copy.deepcopy(value)
        generator = v.get("generator", generator)
    return {"seed": inp.get("seed", 0), "arrays": arrays, "structures": structures, "hints": hints,
            "scalars": scalars, "params": params, "generator": generator}


def effective_workload(workload, variant: str | None):
    """``workload`` with the scalar values of ``variant`` (the same object when the variant changes
    none): what compiles into the kernel and what the reference sees for that variant."""
    if variant is None:
        return workload
    scalars = resolve_inputs(workload, variant)["scalars"]
    if scalars == (workload.scalars or {}):
        return workload
    return attrs.evolve(workload, scalars=scalars)


def _array_rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(name.encode())])


def _int_bounds(dt: np.dtype) -> tuple[int, int]:
    info = np.iinfo(dt)
    return int(info.min), int(info.max)


def _check_int_range(wname: str, name: str, dt: np.dtype, lo: float, hi: float, what: str) -> None:
    if dt.kind in "iu":
        dmin, dmax = _int_bounds(dt)
        if lo < dmin or hi > dmax:
            raise UserError(f"workload '{wname}', array '{name}': {what} [{lo}, {hi}] does not fit "
                            f"dtype {dt.name} [{dmin}, {dmax}]")


def _axis(wname: str, name: str, desc: Mapping[str, Any], shape: tuple[int, ...]) -> int:
    axis = desc.get("axis", -1)
    if isinstance(axis, bool) or not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
        raise UserError(f"workload '{wname}', array '{name}': axis {axis!r} does not exist in an array of "
                        f"{len(shape)} dimension(s) (use 0..{len(shape) - 1}, or -1 for the last)")
    return axis % len(shape)


def _fill(wname: str, name: str, desc: Mapping[str, Any], shape: tuple[int, ...], dt: np.dtype,
          rng: np.random.Generator, source: np.ndarray | None = None) -> np.ndarray:
    dist = desc.get("distribution")
    size = int(np.prod(shape, dtype=np.int64))
    is_int = dt.kind in "iu"
    if dist in ("one_hot", "normalized"):
        for key in ("density", "order"):
            if key in desc:
                raise UserError(f"workload '{wname}', array '{name}': '{key}' would break the rows of "
                                f"distribution '{dist}'; remove it")
    if dist in ("uniform", "randint"):
        if "range" not in desc:
            raise UserError(f"workload '{wname}', array '{name}': distribution '{dist}' needs a range")
        lo, hi = (float(v) for v in desc["range"])
        if lo > hi:
            raise UserError(f"workload '{wname}', array '{name}': empty range [{lo}, {hi}]")
        if dist == "randint" or is_int:
            ilo, ihi = int(np.ceil(lo)), int(np.floor(hi))
            if ilo > ihi:
                raise UserError(f"workload '{wname}', array '{name}': range [{lo}, {hi}] "
                                "contains no integer")
            _check_int_range(wname, name, dt, ilo, ihi, "range")
            vals = rng.integers(ilo, ihi, size=shape, endpoint=True, dtype=np.int64)
        else:
            vals = rng.uniform(lo, hi, size=shape)
    elif dist == "normal":
        mean, std = float(desc.get("mean", 0.0)), float(desc.get("std", 1.0))
        vals = rng.normal(mean, std, size=shape)
        if is_int:
            dmin, dmax = _int_bounds(dt)
            vals = np.clip(np.rint(vals), dmin, dmax)
    elif dist == "constant":
        if "value" not in desc:
            raise UserError(f"workload '{wname}', array '{name}': distribution 'constant' needs a value")
        value = desc["value"]
        _check_int_range(wname, name, dt, value, value, "value")
        if is_int and value != int(value):
            raise UserError(f"workload '{wname}', array '{name}': constant {value} is not an integer "
                            f"but the dtype is {dt.name}")
        vals = np.full(shape, value)
    elif dist == "zeros":
        vals = np.zeros(shape)
    elif dist == "arange":
        start, step = desc.get("start", 0), desc.get("step", 1)
        if is_int and (start != int(start) or step != int(step)):
            raise UserError(f"workload '{wname}', array '{name}': arange start {start} and step {step} "
                            f"must be integers for dtype {dt.name}")
        last = start + step * max(size - 1, 0)
        _check_int_range(wname, name, dt, min(start, last), max(start, last), "arange values")
        if start == int(start) and step == int(step):
            seq = int(start) + int(step) * np.arange(size, dtype=np.int64)
        else:
            seq = float(start) + float(step) * np.arange(size, dtype=np.float64)
        vals = seq.reshape(shape)
    elif dist == "permutation":
        _check_int_range(wname, name, dt, 0, max(size - 1, 0), "permutation values")
        vals = rng.permutation(size).reshape(shape)
    elif dist == "one_hot":
        # one 1 per row along the axis (the last by default), at a uniformly random position
        ax = _axis(wname, name, desc, shape)
        hot = rng.integers(0, shape[ax], size=shape[:ax] + shape[ax + 1:])
        vals = np.zeros(shape, dtype=np.int64)
        np.put_along_axis(vals, np.expand_dims(hot, ax), 1, axis=ax)
    elif dist == "normalized":
        # rows drawn uniformly from the probability simplex (Dirichlet(1, ..., 1)): non-negative, sum 1
        if dt.kind != "f":
            raise UserError(f"workload '{wname}', array '{name}': distribution 'normalized' (rows that sum "
                            f"to 1) needs a floating-point dtype, not {dt.name}")
        ax = _axis(wname, name, desc, shape)
        vals = rng.exponential(size=shape)
        vals /= vals.sum(axis=ax, keepdims=True)
    else:
        raise UserError(f"workload '{wname}', array '{name}': unknown distribution {dist!r}")
    out = np.asarray(vals).astype(dt)
    density = desc.get("density")
    if density is not None:
        density = float(density)
        if not 0.0 <= density <= 1.0:
            raise UserError(f"workload '{wname}', array '{name}': density {density} is not in [0, 1]")
        keep = int(round(density * size))
        flat = out.reshape(-1)
        flat[rng.permutation(size)[keep:]] = 0
        out = flat.reshape(shape)
    order = desc.get("order")
    if order is not None:
        if order not in ("ascending", "descending"):
            raise UserError(f"workload '{wname}', array '{name}': order {order!r} is not "
                            "'ascending' or 'descending'")
        flat = np.sort(out.reshape(-1), kind="stable")
        out = (flat if order == "ascending" else flat[::-1]).reshape(shape).copy()
    if source is not None:
        out = _mutated_copy(wname, name, desc, out, source, dt, rng)
    return out


def _mutated_copy(wname: str, name: str, desc: Mapping[str, Any], fresh: np.ndarray, source: np.ndarray,
                  dt: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """``copy_of``: the source's elements (C order), each replaced with probability ``mutation_rate``
    by the element of ``fresh`` (this array's own draw) at the same place."""
    src_name = desc["copy_of"]
    if source.size != fresh.size:
        raise UserError(f"workload '{wname}', array '{name}': copy_of '{src_name}' has {source.size} "
                        f"elements (shape {source.shape}), but '{name}' has {fresh.size} (shape {fresh.shape})")
    rate = float(desc.get("mutation_rate", 0.0))
    if not 0.0 <= rate <= 1.0:
        raise UserError(f"workload '{wname}', array '{name}': mutation_rate {rate} is not in [0, 1]")
    src = source.reshape(fresh.shape)
    if dt.kind in "iu" and src.size:
        if src.dtype.kind == "f" and not np.array_equal(src, np.round(src)):
            raise UserError(f"workload '{wname}', array '{name}': copy_of '{src_name}' holds non-integer "
                            f"values, which dtype {dt.name} cannot hold")
        _check_int_range(wname, name, dt, int(src.min()), int(src.max()), f"values copied from '{src_name}'")
    mutate = rng.random(fresh.shape) < rate
    return np.where(mutate, fresh, src.astype(dt))


def _eval_int(wname: str, what: str, expr: Any, sizes: Mapping[str, int]) -> int:
    try:
        v = evaluate(expr, sizes)
    except ExprError as e:
        raise UserError(f"workload '{wname}': {what}: {e}") from None
    if abs(v - round(v)) > 1e-9:
        raise UserError(f"workload '{wname}': {what} = {expr!r} evaluates to {v}, not an integer")
    return int(round(v))


def csr_row_lengths(rows: int, cols: int, nnz: int, row_skew: float = 0.0,
                    rng: np.random.Generator | None = None) -> np.ndarray:
    """Row lengths of a CSR pattern: ``rows`` non-negative integers <= ``cols`` summing to ``nnz``.

    ``row_skew == 0``: every row gets ``nnz // rows`` entries and the remainder is
    spread evenly over the rows (lengths differ by at most one). ``row_skew > 0``:
    lengths are proportional to ``1 / rank**row_skew`` (Zipf-like) for ranks
    1..rows assigned to rows in random order, rounded by largest remainder and
    capped at ``cols`` (the excess of a capped row goes to the others).
    """
    if rows < 1 or cols < 1:
        raise ValueError(f"a CSR pattern needs rows >= 1 and cols >= 1 (got {rows} x {cols})")
    if not 0 <= nnz <= rows * cols:
        raise ValueError(f"nnz = {nnz} does not fit a {rows} x {cols} matrix (0..{rows * cols})")
    if row_skew <= 0:
        base, rem = divmod(nnz, rows)
        i = np.arange(rows, dtype=np.int64)
        extra = ((i + 1) * rem) // rows - (i * rem) // rows
        return base + extra
    rng = rng if rng is not None else np.random.default_rng(0)
    weights = 1.0 / np.arange(1, rows + 1, dtype=np.float64) ** float(row_skew)
    weights = weights[rng.permutation(rows)]
    lengths = np.zeros(rows, dtype=np.int64)
    remaining = nnz
    while remaining > 0:
        active = lengths < cols
        w = np.where(active, weights, 0.0)
        share = remaining * w / w.sum()
        add = np.minimum(np.floor(share).astype(np.int64), cols - lengths)
        if add.sum() == 0:
            # every active share is below one: the largest shares get one more entry each
            frac = np.where(active, share, -1.0)
            order = np.argsort(-frac, kind="stable")[:remaining]
            add = np.zeros(rows, dtype=np.int64)
            add[order] = 1
        lengths += add
        remaining -= int(add.sum())
    return lengths


def _fill_csr(workload, st: Mapping[str, Any], sizes: Mapping[str, int], rng: np.random.Generator,
              out: dict[str, np.ndarray]) -> None:
    wname = workload.name
    rp_name, ci_name = st.get("row_ptr"), st.get("col_idx")
    if not rp_name or not ci_name:
        raise UserError(f"workload '{wname}': a csr structure needs both row_ptr and col_idx array names")
    for n in (rp_name, ci_name):
        if n not in workload.arrays:
            raise UserError(f"workload '{wname}': csr structure names unknown array '{n}'")
    rp_shape, ci_shape = workload.shape(rp_name, sizes), workload.shape(ci_name, sizes)
    rows = (_eval_int(wname, "csr rows", st["rows"], sizes) if "rows" in st
            else int(np.prod(rp_shape)) - 1)
    cols = _eval_int(wname, "csr cols", st["cols"], sizes) if "cols" in st else rows
    nnz = (_eval_int(wname, "csr nnz", st["nnz"], sizes) if "nnz" in st
           else int(np.prod(ci_shape)))
    if int(np.prod(rp_shape)) != rows + 1:
        raise UserError(f"workload '{wname}': csr row_ptr array '{rp_name}' has shape {rp_shape} "
                        f"but rows = {rows} needs {rows + 1} entries")
    if int(np.prod(ci_shape)) != nnz:
        raise UserError(f"workload '{wname}': csr col_idx array '{ci_name}' has shape {ci_shape} "
                        f"but nnz = {nnz}")
    try:
        lengths = csr_row_lengths(rows, cols, nnz, float(st.get("row_skew", 0.0)), rng)
    except ValueError as e:
        raise UserError(f"workload '{wname}': csr structure ({rp_name}, {ci_name}): {e}") from None
    row_ptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=row_ptr[1:])
    col_idx = np.empty(nnz, dtype=np.int64)
    for i, n in enumerate(lengths.tolist()):
        if n:
            col_idx[row_ptr[i]:row_ptr[i + 1]] = np.sort(rng.choice(cols, size=n, replace=False))
    rp_dt, ci_dt = np_dtype(workload.arrays[rp_name].dtype), np_dtype(workload.arrays[ci_name].dtype)
    for n, dt, hi in ((rp_name, rp_dt, nnz), (ci_name, ci_dt, max(cols - 1, 0))):
        if dt.kind not in "iu":
            raise UserError(f"workload '{wname}': csr index array '{n}' must have an integer dtype, "
                            f"not {workload.arrays[n].dtype}")
        _check_int_range(wname, n, dt, 0, hi, "index values")
    out[rp_name] = row_ptr.astype(rp_dt).reshape(rp_shape)
    out[ci_name] = col_idx.astype(ci_dt).reshape(ci_shape)


def _fill_ell(workload, st: Mapping[str, Any], sizes: Mapping[str, int], rng: np.random.Generator,
              out: dict[str, np.ndarray]) -> None:
    """ELLPACK column indices: a 2-D ``col_idx`` [rows][width], each row's column indices
    (sorted, distinct, < cols) left-justified and the rest of the row padded with -1.
    Row lengths follow :func:`csr_row_lengths` capped at the width."""
    wname = workload.name
    ci_name = st.get("col_idx")
    if not ci_name or st.get("row_ptr"):
        raise UserError(f"workload '{wname}': an ell structure names a col_idx array and no row_ptr")
    if ci_name not in workload.arrays:
        raise UserError(f"workload '{wname}': ell structure names unknown array '{ci_name}'")
    ci_shape = workload.shape(ci_name, sizes)
    if len(ci_shape) != 2:
        raise UserError(f"workload '{wname}': ell col_idx array '{ci_name}' must have 2 dimensions "
                        f"[rows, width], not {len(ci_shape)}")
    rows = _eval_int(wname, "ell rows", st["rows"], sizes) if "rows" in st else ci_shape[0]
    width = ci_shape[1]
    cols = _eval_int(wname, "ell cols", st["cols"], sizes) if "cols" in st else rows
    nnz = _eval_int(wname, "ell nnz", st["nnz"], sizes) if "nnz" in st else rows * width
    if rows != ci_shape[0]:
        raise UserError(f"workload '{wname}': ell col_idx array '{ci_name}' has shape {ci_shape} "
                        f"but rows = {rows}")
    if cols < 1 or width < 1:
        raise UserError(f"workload '{wname}': ell structure needs cols >= 1 and width >= 1")
    try:
        lengths = csr_row_lengths(rows, min(width, cols), nnz, float(st.get("row_skew", 0.0)), rng)
    except ValueError as e:
        raise UserError(f"workload '{wname}': ell structure ({ci_name}, width {width}): {e}") from None
    col_idx = np.full((rows, width), -1, dtype=np.int64)
    for i, n in enumerate(lengths.tolist()):
        if n:
            col_idx[i, :n] = np.sort(rng.choice(cols, size=n, replace=False))
    dt = np_dtype(workload.arrays[ci_name].dtype)
    if dt.kind != "i":
        raise UserError(f"workload '{wname}': ell index array '{ci_name}' must have a signed integer "
                        f"dtype (padding is -1), not {workload.arrays[ci_name].dtype}")
    _check_int_range(wname, ci_name, dt, -1, max(cols - 1, 0), "index values")
    out[ci_name] = col_idx.astype(dt)


def generate_inputs(workload, sizes: Mapping[str, int], variant: str | None = None,
                    seed: int | None = None) -> dict[str, np.ndarray]:
    """Make one array for every array of ``workload`` at ``sizes``.

    * ``in`` and ``inout`` arrays follow ``inputs.arrays`` (and ``inputs.structures``,
      which fill index arrays such as CSR ``row_ptr``/``col_idx``), after applying
      ``variant`` (see :func:`resolve_inputs`). An input array with no description
      gets uniform random values: floats uniform in [-1, 1), signed integers in
      [-128, 127], unsigned integers in [0, 255] (:func:`default_description`).
    * Then ``inputs.generator``, if the workload (or the variant) has one, may
      overwrite any ``in``/``inout`` array (:func:`run_generator`).
    * ``out`` and ``temp`` arrays are zero.

    Dtypes come from the spec (``fp32`` -> ``np.float32``, ...), shapes from
    ``workload.shape``. Distributions: ``uniform`` (range [low, high); on an
    integer dtype, integers in [low, high]), ``normal`` (mean, std; rounded and
    clipped on integer dtypes), ``randint`` (range, high inclusive),
    ``constant`` (value), ``zeros``, ``arange`` (``start``, ``start + step``, ...
    in C order; start 0 and step 1 by default), ``permutation`` (a random
    permutation of 0..size-1), ``one_hot`` (along ``axis``, the last by default:
    each row all zeros but a single 1 at a uniformly random position) and
    ``normalized`` (floating-point dtypes: non-negative rows along ``axis`` that
    sum to 1, uniform on the probability simplex). ``density`` then keeps
    exactly ``round(density * size)`` randomly chosen elements and zeroes the rest,
    and ``order`` (``ascending`` / ``descending``) finally sorts the elements (C order);
    neither combines with ``one_hot`` or ``normalized``. ``copy_of: OTHER`` makes the
    array a copy of the input array OTHER (same number of elements, taken in C order;
    OTHER is generated first, whatever the order of the arrays, and a cycle of copies
    is an error), each element replaced with probability ``mutation_rate`` (default 0)
    by this array's own draw from its distribution at that place.
    Structures: ``csr`` (``row_ptr`` and ``col_idx``) and ``ell`` (a 2-D ``col_idx``
    [rows][width], each row's indices left-justified and padded with -1).

    ``seed`` defaults to ``inputs.seed`` (or 0). Each array uses its own
    ``numpy.random.default_rng`` seeded with ``[seed, crc32(name)]`` (a structure
    uses one seeded with its row_ptr and col_idx names; the generator one seeded
    with ``[seed, crc32("<generator>")]``), so the values of one array do not
    depend on the description of another (except through ``copy_of``, or what the
    generator does). Parameters missing from ``sizes`` take the workload's default values.
    """
    desc = resolve_inputs(workload, variant)
    seed = desc["seed"] if seed is None else seed
    if int(seed) < 0:
        raise UserError(f"seed must be >= 0, got {seed}")
    sizes = _full_sizes(workload, sizes)
    check_memory(workload, sizes)
    out: dict[str, np.ndarray] = {}
    filled_by: dict[str, str] = {}
    for st in desc["structures"]:
        if st.get("kind") not in ("csr", "ell"):
            raise UserError(f"workload '{workload.name}': unknown structure kind {st.get('kind')!r}")
        label = (f"csr:{st.get('row_ptr')}:{st.get('col_idx')}" if st["kind"] == "csr"
                 else f"ell:{st.get('col_idx')}")
        for n in _structure_outputs(st):
            if n in filled_by:
                raise UserError(f"workload '{workload.name}': array '{n}' is filled by two structures")
            filled_by[n] = "structure"
        fill = _fill_csr if st["kind"] == "csr" else _fill_ell
        fill(workload, st, sizes, _array_rng(seed, label), out)
    pending = []
    for name, spec in workload.arrays.items():
        shape = workload.shape(name, sizes)
        dt = np_dtype(spec.dtype)
        if name in out:
            if name in desc["arrays"]:
                raise UserError(f"workload '{workload.name}': array '{name}' has a distribution and is "
                                "also filled by a structure; remove one of them")
            if spec.role not in ("in", "inout"):
                raise UserError(f"workload '{workload.name}': structure fills array '{name}' "
                                f"whose role is '{spec.role}'")
            continue
        if spec.role in ("out", "temp"):
            if name in desc["arrays"]:
                raise UserError(f"workload '{workload.name}': array '{name}' has role '{spec.role}' "
                                "and takes no input data")
            out[name] = np.zeros(shape, dtype=dt)
            continue
        pending.append(name)
    for name in fill_order(workload, desc["arrays"], pending, variant):
        spec = workload.arrays[name]
        adesc = desc["arrays"].get(name) or default_description(spec.dtype)
        src = adesc.get("copy_of")
        out[name] = _fill(workload.name, name, adesc, workload.shape(name, sizes), np_dtype(spec.dtype),
                          _array_rng(seed, name), None if src is None else out[src])
    if desc["generator"]:
        out.update(run_generator(workload, desc, sizes, seed, out, variant))
    return {name: out[name] for name in workload.arrays}


def fill_order(workload, descriptions: Mapping[str, Mapping[str, Any]], names: list[str],
               variant: str | None = None) -> list[str]:
    """``names`` (input arrays with declarative descriptions) in an order where every ``copy_of``
    source comes before its copies (otherwise the given order). A source must be an ``in``/``inout``
    array of the workload; a cycle of copies is an error naming it."""
    order: list[str] = []
    done: set[str] = set()
    todo = set(names)

    def visit(name: str, chain: list[str]) -> None:
        if name in done or name not in todo:
            return
        if name in chain:
            cycle = " -> ".join(chain[chain.index(name):] + [name])
            raise _spec_error(workload, _desc_path(workload, variant, name, "copy_of"),
                              f"copy_of forms a cycle: {cycle}", "copies that end in an array generated "
                              "another way", "remove copy_of from one array of the cycle")
        src = (descriptions.get(name) or {}).get("copy_of")
        if src is not None:
            spec = workload.arrays.get(src)
            if spec is None or spec.role not in ("in", "inout"):
                msg = (f"array '{name}' is a copy_of unknown array '{src}'" if spec is None else
                       f"array '{name}' is a copy_of '{src}', whose role is '{spec.role}' (no input data)")
                raise _spec_error(workload, _desc_path(workload, variant, name, "copy_of"), msg,
                                  "the name of an in or inout array: " + ", ".join(
                                      n for n, a in workload.arrays.items() if a.role in ("in", "inout")))
            visit(src, chain + [name])
        done.add(name)
        order.append(name)

    for n in names:
        visit(n, [])
    return order


def _desc_path(workload, variant: str | None, name: str, key: str) -> tuple:
    """Field path of ``key`` in the description of array ``name``: the variant's when it describes it."""
    v = (workload.inputs or {}).get("variants", {}).get(variant or "", {})
    if variant is not None and name in v.get("arrays", {}):
        return ("inputs", "variants", variant, "arrays", name, key)
    return ("inputs", "arrays", name, key)


_GENERATOR_NAMES = ("np", "rng", "params")


def run_generator(workload, desc: Mapping[str, Any], sizes: Mapping[str, int], seed: int,
                  arrays: Mapping[str, np.ndarray], variant: str | None = None) -> dict[str, np.ndarray]:
    """Run the input generator of a resolved description (:func:`resolve_inputs`) and return every
    ``in``/``inout`` array, checked and cast to its declared dtype.

    The generator is Python, run by :func:`llmulator.usercode.run_user_code` with ``np``, the
    parameters (``sizes``), the effective scalars (NumPy scalars of their dtype), ``rng`` (a
    ``numpy.random.Generator`` seeded with ``[seed, crc32("<generator>")]``), ``params`` (the
    generator parameters: ``inputs.params`` with the variant's applied) and a copy of every
    ``in``/``inout`` array as the declarative descriptions made it. It changes or reassigns any of
    those arrays; the others keep their values. Each result must be numeric, have the declared
    shape, and hold values its dtype can represent (integers for an integer dtype, within its
    range; no overflow to infinity for a float dtype). The generator runs twice and both runs must
    give identical arrays: random numbers must come from ``rng``.
    """
    wname = workload.name
    code = desc["generator"]
    inputs = [n for n, a in workload.arrays.items() if a.role in ("in", "inout")]
    others = [n for n, a in workload.arrays.items() if a.role not in ("in", "inout")]
    taken = set(sizes) | set(desc["scalars"]) | set(workload.arrays)
    for n in _GENERATOR_NAMES:
        if n in taken:
            raise UserError(f"workload '{wname}': the input generator needs the name '{n}', which is also "
                            "a parameter, scalar or array of the workload; rename that")
    what = "input generator" + (f" (variant '{variant}')" if variant else "")

    def once() -> dict[str, np.ndarray]:
        ns: dict[str, Any] = {"np": np}
        ns.update(sizes)
        ns.update({k: _scalar_value(v) for k, v in desc["scalars"].items()})
        ns.update({n: np.array(arrays[n], copy=True) for n in inputs})
        ns["rng"] = _array_rng(seed, "<generator>")
        ns["params"] = copy.deepcopy(desc["params"])
        # an out or temp array is refused below: it need not come back whole first (an outside probe made this
        # process load 1 GiB for one before the refusal)
        run_user_code("input generator", wname, code, ns, want=list(workload.arrays), caps=dict.fromkeys(others, 64))
        for n in others:
            if n in ns:
                raise UserError(f"{what} of workload '{wname}' assigned '{n}', whose role is "
                                f"'{workload.arrays[n].role}': a generator makes data for in/inout arrays only")
        return {n: _generated(workload, what, n, ns.get(n), sizes) for n in inputs}

    first, second = once(), once()
    for n in inputs:
        if first[n].tobytes() != second[n].tobytes():
            raise UserError(f"{what} of workload '{wname}' is not deterministic: array '{n}' differs between "
                            f"two runs with seed {seed}; draw random numbers from `rng` only (not np.random "
                            "or a generator of your own without a fixed seed)")
    return first


def _generated(workload, what: str, name: str, value: Any, sizes: Mapping[str, int]) -> np.ndarray:
    """One array a generator left, checked against its declaration and cast to its dtype."""
    wname = workload.name
    spec = workload.arrays[name]
    shape, dt = workload.shape(name, sizes), np_dtype(spec.dtype)
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001 - any object that is not array-like
        arr = None
    if arr is None or arr.dtype.kind not in "biuf":
        raise UserError(f"{what} of workload '{wname}' left {plain_text(type(value).__name__)} in array '{name}', "
                        f"expected a numeric array of dtype {spec.dtype} and shape {shape}")
    if arr.shape != shape:
        dims = ", ".join(map(str, spec.shape))
        raise UserError(f"{what} of workload '{wname}' left array '{name}' with shape {arr.shape}, expected "
                        f"{shape} (the declared shape [{dims}])")
    if arr.size and dt.kind in "iu":
        if arr.dtype.kind == "f":
            bad = ~np.isfinite(arr) | (arr != np.round(arr))
            if bad.any():
                i = np.unravel_index(int(np.argmax(bad)), shape)
                raise UserError(f"{what} of workload '{wname}' left array '{name}' with non-integer value "
                                f"{arr[i].item()!r} at {list(map(int, i))}, expected integers of dtype {spec.dtype}")
        lo, hi = arr.min(), arr.max()
        dmin, dmax = _int_bounds(dt)
        if lo < dmin or hi > dmax:
            raise UserError(f"{what} of workload '{wname}' left array '{name}' with values in "
                            f"[{lo}, {hi}], which do not fit its dtype {spec.dtype} [{dmin}, {dmax}]")
    if arr.size and dt.kind == "f":
        with np.errstate(over="ignore"):
            cast = arr.astype(dt)
        over = np.isinf(cast) & np.isfinite(arr)
        if over.any():
            i = np.unravel_index(int(np.argmax(over)), shape)
            raise UserError(f"{what} of workload '{wname}' left array '{name}' with value {arr[i].item()!r} at "
                            f"{list(map(int, i))}, which overflows its dtype {spec.dtype} (largest "
                            f"{float(np.finfo(dt).max):g})")
    return arr.astype(dt, copy=True)


def check_inputs(workload) -> None:
    """Check the input description of a workload without generating data: for the base inputs and
    every variant, the scalar and generator-parameter overrides, the ``copy_of`` sources (known
    input arrays, no cycle) and that the generator compiles. Raises SpecError / UserError."""
    inp = workload.inputs or {}
    for variant in [None, *sorted(inp.get("variants", {}))]:
        desc = resolve_inputs(workload, variant)
        names = [n for n, a in workload.arrays.items() if a.role in ("in", "inout")]
        fill_order(workload, desc["arrays"], names, variant)
        if desc["generator"]:
            if len(desc["generator"]) > MAX_CODE_CHARS:  # checked before compiling here, as a run checks it
                where = ("inputs", "variants", variant, "generator") if variant and "generator" in \
                    inp["variants"][variant] else ("inputs", "generator")
                raise _spec_error(workload, where, f"the input generator is {len(desc['generator']):,} characters "
                                  f"long; at most {MAX_CODE_CHARS:,} are accepted (an outside probe's 3 MB generator "
                                  "took 1.15 GB to compile)")
            try:
                compile(desc["generator"], f"<input generator of workload '{workload.name}'>", "exec")
            except SyntaxError as e:
                where = ("inputs", "variants", variant, "generator") if variant and "generator" in \
                    inp["variants"][variant] else ("inputs", "generator")
                raise _spec_error(workload, where, f"the input generator has a syntax error at its line "
                                  f"{e.lineno}: {e.msg}") from None


def available_memory() -> int:
    """Bytes this machine can still give (``MemAvailable``), or a large number where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 1 << 60


def check_memory(workload, sizes: Mapping[str, int]) -> None:
    """Refuse, before anything is allocated, arrays that cannot fit in memory: a UserError naming the
    largest array, its shape and size, instead of a MemoryError (or the machine swapping) later."""
    need, largest = 0, ("", (), 0)
    for name, spec in workload.arrays.items():
        shape = workload.shape(name, sizes)
        n = int(np.prod(shape, dtype=object)) * np_dtype(spec.dtype).itemsize
        need += n
        if n > largest[2]:
            largest = (name, shape, n)
    have = available_memory()
    if need > have // 2:
        name, shape, n = largest
        raise UserError(f"workload '{workload.name}': its arrays need {need / 2**30:.1f} GiB at these sizes "
                        f"(largest: '{name}' {list(shape)} = {n / 2**30:.1f} GiB), more than half of the "
                        f"{have / 2**30:.1f} GiB this machine has free; use a smaller preset or smaller parameters")


def _full_sizes(workload, sizes: Mapping[str, int]) -> dict[str, int]:
    """``sizes`` completed with the workload's default parameters."""
    return {**workload.parameters, **{k: int(v) for k, v in sizes.items()}}


def _scalar_value(spec: Mapping[str, Any]) -> Any:
    return np_dtype(spec["dtype"]).type(spec["value"])


def run_reference(workload, arrays: Mapping[str, np.ndarray], sizes: Mapping[str, int],
                  variant: str | None = None) -> dict[str, np.ndarray]:
    """Execute the workload's NumPy ``reference`` and return its ``out`` and ``inout`` arrays.

    The code runs (through :func:`llmulator.usercode.run_user_code`) with ``np``, the
    parameters (``sizes``), the scalars (as NumPy scalars of their dtype, with the values
    ``variant`` gives them) and a copy of every array in scope; ``out`` and ``temp`` arrays
    missing from ``arrays`` start as zeros. The caller's arrays are never modified. Results
    are cast to the declared dtype.
    """
    wname = workload.name
    code = workload.reference
    if not code:
        raise UserError(f"workload '{wname}' has no reference")
    sizes = _full_sizes(workload, sizes)
    scalars = resolve_inputs(workload, variant)["scalars"] if variant is not None else (workload.scalars or {})
    ns: dict[str, Any] = {"np": np, "__name__": f"reference_{wname}"}
    ns.update(sizes)
    ns.update({k: _scalar_value(v) for k, v in scalars.items()})
    for name, spec in workload.arrays.items():
        shape = workload.shape(name, sizes)
        if name in arrays:
            ns[name] = np.array(arrays[name], copy=True)
        elif spec.role in ("out", "temp"):
            ns[name] = np.zeros(shape, dtype=np_dtype(spec.dtype))
        else:
            raise UserError(f"workload '{wname}': no data for input array '{name}' "
                            "(generate_inputs makes data for every array)")
    run_user_code("reference", wname, code, ns,
                  want=[n for n, a in workload.arrays.items() if a.role in ("out", "inout")], memo=True)
    result: dict[str, np.ndarray] = {}
    for name, spec in workload.arrays.items():
        if spec.role not in ("out", "inout"):
            continue
        shape = workload.shape(name, sizes)
        value = ns.get(name)
        try:
            arr = np.asarray(value)
        except Exception:  # noqa: BLE001
            arr = None
        if arr is None or arr.dtype.kind not in "biuf":
            raise UserError(f"reference of workload '{wname}' did not leave a numeric array in "
                            f"'{name}' (got {plain_text(type(value).__name__)})")
        if arr.shape != shape:
            raise UserError(f"reference of workload '{wname}' left '{name}' with shape {arr.shape}, "
                            f"expected {shape}")
        result[name] = arr.astype(np_dtype(spec.dtype), copy=True)
    return result


def save_inputs(directory: str | Path, arrays: Mapping[str, np.ndarray]) -> list[Path]:
    """Write each array to ``<directory>/<name>.npy`` (the directory is created); return the paths."""
    d = Path(directory)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create directory '{d}': {e}") from None
    paths = []
    for name, arr in arrays.items():
        if not name.isidentifier():
            raise UserError(f"cannot save array with name {name!r}: not an identifier")
        p = d / f"{name}.npy"
        try:
            np.save(p, np.asarray(arr), allow_pickle=False)
        except OSError as e:
            raise UserError(f"cannot write '{p}': {e}") from None
        paths.append(p)
    return paths


def load_inputs(directory: str | Path, workload, sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """Read ``<directory>/<name>.npy`` for every ``in``/``inout`` array of ``workload``.

    Each file must exist and hold exactly the shape (at ``sizes``) and dtype the
    workload declares; otherwise a UserError says what differs. ``out`` and
    ``temp`` arrays are returned as zeros (outputs start zero-initialised), and
    files for them, if any, are ignored. Returns one array per workload array.
    """
    d = Path(directory)
    sizes = _full_sizes(workload, sizes)
    if not d.is_dir():
        raise UserError(f"input directory '{d}' does not exist")
    out: dict[str, np.ndarray] = {}
    for name, spec in workload.arrays.items():
        shape, dt = workload.shape(name, sizes), np_dtype(spec.dtype)
        if spec.role in ("out", "temp"):
            out[name] = np.zeros(shape, dtype=dt)
            continue
        p = d / f"{name}.npy"
        if not p.is_file():
            raise UserError(f"missing input file '{p}' for array '{name}' of workload '{workload.name}'")
        try:
            arr = np.load(p, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise UserError(f"cannot read '{p}' as a .npy array: {e}") from None
        if arr.shape != shape:
            size_text = ", ".join(f"{k}={v}" for k, v in sizes.items())
            raise UserError(f"'{p}': array '{name}' has shape {arr.shape}, but workload "
                            f"'{workload.name}' ({size_text}) expects {shape}")
        if arr.dtype != dt:
            raise UserError(f"'{p}': array '{name}' has dtype {arr.dtype}, but workload "
                            f"'{workload.name}' declares {spec.dtype} ({dt})")
        out[name] = arr
    return out


@attrs.define
class Inputs:
    """Concrete input arrays for one design, and where they came from (what profilers receive).

    ``scalars``: the workload's scalars with the values of the input variant the arrays were made
    for (``{name: {"dtype", "value"}}``, see :func:`resolve_inputs`); None: the workload's own."""

    arrays: dict[str, np.ndarray]
    origin: str
    scalars: dict[str, dict[str, Any]] | None = None


def inputs_for(design, spec: str | None = None, variant: str | None = None) -> Inputs:
    """Inputs from a CLI-style spec: None (the workload's seed), an integer seed, or a folder of .npy files.

    ``variant`` defaults to the design's own (``design.variant``); its scalar values come with the
    arrays (``Inputs.scalars``), whichever way the arrays are made."""
    w = design.workload
    if variant is None:
        variant = getattr(design, "variant", None)
    scalars = resolve_inputs(w, variant)["scalars"]
    if spec is not None and not str(spec).lstrip("-").isdigit():
        return Inputs(load_inputs(spec, w, design.sizes), f"directory {spec}", scalars)
    seed = int(spec) if spec is not None else None
    arrays = generate_inputs(w, design.sizes, variant=variant, seed=seed)
    used = seed if seed is not None else (w.inputs or {}).get("seed", 0)
    return Inputs(arrays, f"generated: seed={used}" + (f", variant={variant}" if variant else ""), scalars)
