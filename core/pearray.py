"""From a Design to the plan of a PE-array accelerator: what the Verilog generator builds.

The plan reads the same Design hlsim and the analytical model read, through the same loop-nest
semantics (``llmulator.nest``: tile loops around the array's *fold*, spatial point loops unrolled
over the PEs, temporal point loops streamed one step per advance). It decides the hardware shape
from which operand depends on which array dimension:

* ``psum`` (weight- or input-stationary): one input is indexed by both PE dimensions and is
  preloaded into the PEs (stationary), the other flows west to east along the dimension it shares
  with the stationary one (``a``, the reduction dimension), and partial sums flow down ``a`` and
  leave at the edge, one vector per stream step, to be added to the output in the buffer.
* ``os`` (output-stationary): the output is indexed by both PE dimensions and accumulates in the
  PEs; one input flows along ``a``, the other along ``b``; at the end of a fold the accumulators
  shift out, one row vector per advance.

Everything that is not such a design raises a UserError that says which operand breaks the rule:
the profiler supports what a systolic array of MACs can run, and says so instead of guessing.
"""

from __future__ import annotations

import math

import attrs

from . import nest
from .design import Design
from .errors import Diagnostic, SpecUnsupported, UserError
from .expr import evaluate
from .yamlsrc import SourceMap

INT_DTYPES = {"int8": (8, True), "int16": (16, True), "int32": (32, True), "uint8": (8, False),
              "uint16": (16, False), "uint32": (32, False)}


@attrs.frozen
class LoopPlan:
    """One mapped loop (a fused loop counts as one, over the product of its members)."""

    label: str
    vars: tuple[str, ...]          # loop variables of its members, outermost first
    radices: tuple[int, ...]       # trip count of each member
    tile: int                      # point extent of a full tile (== trips when not strip-mined)
    kind: str                      # "a" | "b" (spatial, canonical dims) | "t" (temporal point) | "tile" (tile only)
    strip_mined: bool

    @property
    def trips(self) -> int:
        return math.prod(self.radices)

    def digits(self, value: int) -> tuple[int, ...]:
        """``value`` in this loop's mixed radix (outermost digit first)."""
        out = []
        for r in reversed(self.radices):
            out.append(value % r)
            value //= r
        return tuple(reversed(out))


@attrs.frozen
class Operand:
    """An array access of the MAC: its flat element address is ``const + sum(coefs[var] * var)``."""

    array: str
    role: str                      # "S" stationary | "X" flows along a | "Y" flows along b | "O" output
    bits: int
    signed: bool
    coefs: dict[str, int]
    const: int
    level: str
    elems: int                     # elements of the whole array

    def address(self, env: dict[str, int]) -> int:
        return self.const + sum(c * env[v] for v, c in self.coefs.items())


@attrs.frozen
class Plan:
    shape: str                     # "psum" | "os"
    dataflow: str                  # "ws" | "is" | "os" (SCALE-Sim's name for the same dataflow); "psum" unnamed
    transposed: bool               # canonical a = physical cols
    A: int                         # physical PEs along a
    B: int                         # physical PEs along b
    loops: tuple[LoopPlan, ...]    # every mapped loop
    tile_order: tuple[str, ...]    # tile loops, outermost first (the fold walk)
    temporal: tuple[str, ...]      # temporal point loops, outermost first (the stream)
    loop_a: str                    # the loop on dimension a (a dummy of one trip if none)
    loop_b: str
    operands: dict[str, Operand]   # by role
    levels: tuple[str, ...]        # memory levels that hold operands
    name: str = ""

    def loop(self, label: str) -> LoopPlan:
        return next(lp for lp in self.loops if lp.label == label)

    def folds(self) -> list[dict[str, int]]:
        """The tile bases (flat) of every fold, in walk order (a reference for tests and the model)."""
        out = [{}]
        for lb in self.tile_order:
            lp = self.loop(lb)
            out = [{**f, lb: base} for f in out for base in range(0, lp.trips, lp.tile)]
        return out

    def fold_count(self) -> int:
        """len(folds()), without listing them."""
        return math.prod(-(-self.loop(lb).trips // self.loop(lb).tile) for lb in self.tile_order)

    def fold_at(self, i: int) -> dict[str, int]:
        """folds()[i] without listing the others (the last tile loop varies fastest)."""
        out: dict[str, int] = {}
        for lb in reversed(self.tile_order):
            lp = self.loop(lb)
            n = -(-lp.trips // lp.tile)
            i, k = divmod(i, n)
            out[lb] = k * lp.tile
        return {lb: out[lb] for lb in self.tile_order}

    def total_stream_steps(self) -> int:
        """sum(stream_steps(f) for f in folds()) in closed form: a loop's extent depends on its own base
        only, so the sum over the fold walk factorises; over its bases a tiled loop's extents add up
        to its trips, an untiled loop streams its one extent in every fold."""
        tiled = set(self.tile_order)
        steps = math.prod(self.loop(lb).trips if lb in tiled else self.extent(lb, {}) for lb in self.temporal)
        others = math.prod(-(-self.loop(lb).trips // self.loop(lb).tile) for lb in self.tile_order
                           if lb not in self.temporal)
        return steps * others

    def extent(self, label: str, bases: dict[str, int]) -> int:
        lp = self.loop(label)
        base = bases.get(label, 0)
        return min(lp.tile, lp.trips - base)

    def stream_steps(self, bases: dict[str, int]) -> int:
        return math.prod(self.extent(lb, bases) for lb in self.temporal)


DUMMY_A, DUMMY_B = "__a", "__b"


def _int(x, sizes) -> int:
    if isinstance(x, int):
        return x
    v = evaluate(str(x), sizes)
    if float(v) != int(v):
        raise UserError(f"rtl: address term '{x}' is not an integer")
    return int(v)


def _fail(d: Design, what: str, where: tuple | int | None = None) -> UserError:
    """Why the rtl profiler has no plan for ``d``; at the spec field it names where ``where`` says which
    ((kind, path): "mapping", "architecture" or "workload", and the path under it; an int: that line of the
    workload's kernel), as a SpecUnsupported (a UserError too: hlsim's bank model and the periphery model take
    the design as outside their scope). Before 2026-12-06 the kernel's refusals named no line (an outside probe)."""
    msg = f"rtl: design {d.name} is not a PE-array design the rtl profiler supports: {what}"
    if where is None:
        return UserError(msg)
    if isinstance(where, int):
        file = d.workload.source_map.file if d.workload.source_map else "<workload>"
        return SpecUnsupported(Diagnostic(file, where, None, "workload.kernel", msg,
                                          "a design the rtl profiler generates (docs/rtl.md)", ""))
    kind, path = where
    spec = {"mapping": d.mapping, "architecture": d.arch, "workload": d.workload}[kind]
    smap = spec.source_map or SourceMap(f"<{kind}>")
    return SpecUnsupported(smap.diag((kind, *path), msg, "a design the rtl profiler generates (docs/rtl.md)", "",
                                     prefer_key=True))


def make_plan(d: Design, is_weight=None) -> Plan:
    """The hardware plan of a design, or a UserError saying why there is none. ``is_weight(d, stationary,
    var_loop, operand)`` names a psum dataflow (ws when the stationary input is the layer's weight, else
    is: the rtl profiler asks SCALE-Sim's layer roles; None: it cannot tell); unnamed, a psum plan's
    dataflow is "psum"."""
    pe = d.arch.pe_array
    if pe is None:
        raise _fail(d, f"architecture '{d.arch.name}' has no compute.pe_array", ("architecture", ("compute",)))
    if pe.interconnect != "systolic":
        raise _fail(d, f"the PE array's interconnect is '{pe.interconnect}'; only 'systolic' is generated",
                    ("architecture", ("compute", "pe_array", "interconnect")))
    loops = d.tree.loops
    tops = [lb for lb, lp in loops.items() if lp.parent is None]
    if len(tops) != 1:
        raise _fail(d, f"the kernel has {len(tops)} top-level loop nests; one perfect nest is expected",
                    ("workload", ("kernel",)))
    band = nest.band_labels(d.tree, tops[0])
    if set(band) != set(loops):
        raise _fail(d, "the kernel's loops do not form one perfect nest", ("workload", ("kernel",)))
    stmts = loops[band[-1]].statements()
    if len(stmts) != 1 or dict(stmts[0].ops) != {"mac": 1}:
        if len(stmts) != 1:
            why, line = f"it holds {len(stmts)} statements", (stmts[1] if stmts else loops[band[-1]]).line
        else:
            ops = ", ".join(f"{k} x{v}" for k, v in sorted(stmts[0].ops.items())) or "none"
            why, line = f"its statement's operations are {ops}", stmts[0].line
        raise _fail(d, "the innermost loop must hold exactly one multiply-accumulate statement "
                       f"(OUT[...] += X[...] * Y[...]); {why}", line)
    for lb in band:
        lp = loops[lb]
        if lp.data_dependent or lp.is_while or lp.depends_on_outer or lp.var is None:
            raise _fail(d, f"loop {lb} is not a rectangular counted loop", lp.line)
    st = stmts[0]
    writes = [a for a in st.accesses if a.is_write]
    reads = [a for a in st.accesses if a.is_read and not a.is_write]
    if len(writes) != 1:
        raise _fail(d, "the statement must write one array", st.line)
    out_name = writes[0].array
    ins = [a for a in reads if a.array != out_name]
    if len(ins) != 2:
        raise _fail(d, "the statement must read two input arrays besides its output", st.line)
    sizes = {**d.sizes, **{k: v["value"] for k, v in d.workload.scalars.items()}}

    # mapped loops ------------------------------------------------------------------------------
    m = d.mapping
    mapped = nest.mapped_band(d, band)
    heads = list(dict.fromkeys(lb for _k, lb in mapped))
    spatial = {"rows": [], "cols": []}
    for lb in heads:
        sp = m.loop(lb).spatial
        if sp in spatial:
            spatial[sp].append(lb)
        elif sp:
            raise _fail(d, f"loop {lb} is bound to '{sp}', not to PE rows or cols", ("mapping", ("loops", lb)))
    for dim, lbs in spatial.items():
        if len(lbs) > 1:
            raise _fail(d, f"loops {', '.join(lbs)} are all bound to PE {dim}; fuse them into one (fuse: [...])",
                        ("mapping", ("loops", lbs[-1])))
    if not spatial["rows"] and not spatial["cols"]:
        raise _fail(d, f"mapping '{m.name}' binds no loop to the PE array (spatial: rows | cols)",
                    ("mapping", ("loops",)))
    var_loop: dict[str, str] = {}
    for lb in heads:
        for mb in nest.members(d, lb):
            var_loop[loops[mb].var] = lb
    tile_labels = [lb for k, lb in mapped if k == "tile"]
    point_labels = [lb for k, lb in mapped if k == "point"]

    def full_tile(lb: str) -> int:
        n = math.prod(int(round(d.trips(mb))) for mb in nest.members(d, lb))
        t = m.loop(lb).tile
        return min(int(t), n) if t is not None else n

    # operands: flat addresses from the kernel's affine subscripts ------------------------------
    def operand(acc, role_hint: str) -> Operand:
        arr = d.workload.arrays[acc.array]
        if arr.dtype not in INT_DTYPES:
            raise _fail(d, f"array {acc.array} is {arr.dtype}; the generated datapath is integer only "
                           f"({', '.join(INT_DTYPES)})", ("workload", ("arrays", acc.array, "dtype")))
        if acc.affine is None or any(a is None for a in acc.affine):
            raise _fail(d, f"the subscript of {acc.array} is not affine in the loop variables", st.line)
        shape = d.workload.shape(acc.array, d.sizes)
        strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
        coefs: dict[str, int] = {}
        const = 0
        for aff, stride in zip(acc.affine, strides, strict=True):
            const += _int(aff.const, sizes) * stride
            for v, c in aff.coefs.items():
                if v not in var_loop:
                    raise _fail(d, f"the subscript of {acc.array} uses '{v}', which is no loop variable", st.line)
                coefs[v] = coefs.get(v, 0) + _int(c, sizes) * stride
        level = d.placement(acc.array)
        lv = d.arch.level(level)
        if lv is None or lv.kind == "dram":
            raise _fail(d, f"array {acc.array} is placed on {level}; the generated design holds its operands in "
                           "on-chip buffers (place them on an sram or regfile level)",
                        ("mapping", ("placement", acc.array)))
        bits, signed = INT_DTYPES[arr.dtype]
        return Operand(acc.array, role_hint, bits, signed, {v: c for v, c in coefs.items() if c}, const, level,
                       math.prod(shape))

    ops = {a.array: operand(a, "?") for a in ins}
    out = operand(writes[0], "O")
    phys = {"rows": spatial["rows"][0] if spatial["rows"] else None,
            "cols": spatial["cols"][0] if spatial["cols"] else None}

    def deps(op: Operand) -> set[str]:
        """Which of rows / cols / t (a temporal point loop of more than one trip) the operand varies with."""
        out_ = set()
        for v in op.coefs:
            lb = var_loop[v]
            if lb == phys["rows"]:
                out_.add("rows")
            elif lb == phys["cols"]:
                out_.add("cols")
            elif lb in point_labels and full_tile(lb) > 1:
                out_.add("t")
        return out_

    dout = deps(out)
    din = {n: deps(op) for n, op in ops.items()}
    names = list(ops)
    if "rows" in dout and "cols" in dout:
        shape_, dataflow = "os", "os"
        if "t" in dout:
            raise _fail(d, f"the output {out.array} is stationary in the PEs but also varies along the stream")
        a_dim = "rows"
        b_dim = "cols"
        pick = None
        for x, y in (names, names[::-1]):
            if din[x] <= {a_dim, "t"} and din[y] <= {b_dim, "t"}:
                pick = (x, y)
                break
        if pick is None:
            raise _fail(d, f"output-stationary needs one input indexed by PE rows and the stream only and the other "
                           f"by PE cols and the stream only ({_show(din)})")
        roles = {pick[0]: "X", pick[1]: "Y"}
    else:
        shape_ = "psum"
        if "rows" in dout and "cols" not in dout:
            b_dim, a_dim = "rows", "cols"
        elif "cols" in dout and "rows" not in dout:
            b_dim, a_dim = "cols", "rows"
        else:
            unbound = [k for k in ("rows", "cols") if phys[k] is None]
            raise _fail(d, f"the output {out.array} is indexed by neither PE dimension; every PE would add into the "
                           "same outputs (a reduction tree, not a systolic array)"
                           + (f"; no loop is bound to PE {unbound[0]} (bind one that indexes {out.array})"
                              if unbound else ""), ("mapping", ("loops", next(lb for lb in phys.values() if lb))))
        tloops = [lb for lb in point_labels if lb not in (phys["rows"], phys["cols"]) and full_tile(lb) > 1]
        odeps_t = {var_loop[v] for v in out.coefs}
        missing = [lb for lb in tloops if lb not in odeps_t]
        if missing:
            raise _fail(d, f"the output {out.array} is accumulated over the temporal loop(s) {', '.join(missing)} "
                           "inside one fold (the same partial sum read and written again in flight); move them to the "
                           "tile level (tile: 1) or onto the array", ("mapping", ("loops", missing[0])))
        pick = None
        for s, x in (names, names[::-1]):
            if din[s] <= {a_dim, b_dim} and din[x] <= {a_dim, "t"}:
                pick = (s, x)
                break
        if pick is None:
            hint = _stationary_hint(din, tloops, ops, var_loop, a_dim, b_dim)
            raise _fail(d, f"with the output flowing along PE {b_dim}, one input must be indexed by the PE dimensions "
                           f"only (stationary) and the other by PE {a_dim} and the stream only ({_show(din)}; t: "
                           f"the temporal loops of a fold with more than one trip, {', '.join(tloops) or 'none'}); a "
                           "row-stationary or diagonal dataflow is not generated" + hint)
        roles = {pick[0]: "S", pick[1]: "X"}
        # SCALE-Sim's names: the stationary operand is the weight (ws) or the input (is); "psum" where nothing
        # says which (no namer, or a workload without the einsum that names a layer's roles)
        w = None if is_weight is None else is_weight(d, pick[0], var_loop, ops[pick[0]])
        dataflow = "psum" if w is None else "ws" if w else "is"
    transposed = a_dim == "cols"
    A = pe.rows if a_dim == "rows" else pe.cols
    B = pe.cols if b_dim == "cols" else pe.rows
    loop_a = phys[a_dim] or DUMMY_A
    loop_b = phys[b_dim] or DUMMY_B

    plans = []
    for lb in heads:
        mem = nest.members(d, lb)
        kind = "a" if lb == loop_a else "b" if lb == loop_b else ("t" if lb in point_labels else "tile")
        plans.append(LoopPlan(lb, tuple(loops[mb].var for mb in mem), tuple(int(round(d.trips(mb))) for mb in mem),
                              full_tile(lb), kind, lb in tile_labels))
    for dummy, kind in ((DUMMY_A, "a"), (DUMMY_B, "b")):
        if dummy in (loop_a, loop_b):
            plans.append(LoopPlan(dummy, (), (1,), 1, kind, False))
    for lp in plans:
        if lp.kind == "a" and lp.tile > A or lp.kind == "b" and lp.tile > B:
            raise _fail(d, f"loop {lp.label} puts {lp.tile} iterations on {A if lp.kind == 'a' else B} PEs")
    operands = {roles[n]: attrs.evolve(op, role=roles[n]) for n, op in ops.items()}
    operands["O"] = out
    levels = tuple(dict.fromkeys(op.level for op in operands.values()))
    temporal = tuple(lb for lb in point_labels if lb not in (loop_a, loop_b))
    return Plan(shape_, dataflow, transposed, A, B, tuple(plans), tuple(tile_labels), temporal, loop_a, loop_b,
                operands, levels, d.name)


def _stationary_hint(din: dict[str, set[str]], tloops: list[str], ops: dict[str, Operand], var_loop: dict[str, str],
                     a_dim: str, b_dim: str) -> str:
    """Where an input would be stationary but for temporal loops of the fold, the mapping change that fixes it."""
    for s, x in (list(din), list(din)[::-1]):
        if din[s] - {a_dim, b_dim} == {"t"} and din[x] <= {a_dim, "t"}:
            loops = [lb for lb in tloops if any(var_loop[v] == lb for v in ops[s].coefs)]
            if loops:
                return (f"; {s} would be stationary but for {', '.join(loops)}: give "
                        f"{'them' if len(loops) > 1 else 'it'} `tile: 1` in the mapping (each iteration its own "
                        "fold)")
    return ""


def _show(din: dict[str, set[str]]) -> str:
    return "; ".join(f"{n} varies with {', '.join(sorted(v)) or 'nothing'}" for n, v in din.items())
