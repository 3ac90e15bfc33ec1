"""A small subset of C run on NumPy lanes: each lane is one execution of the same statements on its own values.

Why: ``llmulator.input_trips`` needs the trip count of a loop whose control reads input data, on thousands of
draws at once, without compiling or trusting the kernel. This walks pycparser's AST itself (no ``eval``, no
compiler) and refuses (``Unsupported``) anything outside the subset, which then stays a hint's business.

The subset: scalar declarations and assignments (``=``, ``op=``, ``++``, ``--``, also inside an expression:
``if (--k < 0)``), ``if``/``else``, ``break``, ``return`` where the caller counts it (``returned``);
``for``/``while``/``do`` loops where the caller grants a trip budget (``loop_budget``:
``llmulator.scalar_control`` runs a whole kernel's control; ``input_trips`` runs one loop itself and grants
none); integer, bitwise, comparison, logical, ternary and float arithmetic; casts; reads of the arrays it is
given; ``fabsf``-like math functions. C semantics where they matter for control: integer ``/`` and ``%``
truncate toward zero, a value stored in a variable wraps to the variable's declared width and signedness
(``uint32_t`` hashes, ``int`` counters), ``float`` rounds to single precision. Writes to arrays are skipped: a
caller only hands over arrays the kernel never writes, so no read can see one. Both sides of ``&&``, ``||``
and ``?:`` are evaluated (an increment inside one of their later operands is refused: it would run where C
skips it); an array index is clipped into the array.
"""

from __future__ import annotations

import numpy as np
from pycparser import c_ast, c_generator

from .c_names import has_step

_GEN = c_generator.CGenerator()
_TYPES = {"int": ("i", 32), "signed": ("i", 32), "signed int": ("i", 32), "int32_t": ("i", 32),
          "long": ("i", 64), "long int": ("i", 64), "long long": ("i", 64), "int64_t": ("i", 64),
          "short": ("i", 16), "int16_t": ("i", 16), "char": ("i", 8), "signed char": ("i", 8), "int8_t": ("i", 8),
          "unsigned": ("u", 32), "unsigned int": ("u", 32), "uint32_t": ("u", 32), "unsigned short": ("u", 16),
          "uint16_t": ("u", 16), "unsigned char": ("u", 8), "uint8_t": ("u", 8), "bool": ("u", 1),
          "float": ("f", 32), "_Float16": ("f", 16), "double": ("f", 64)}
_MATH = {"fabsf": np.abs, "fabs": np.abs, "abs": np.abs, "labs": np.abs, "sqrtf": np.sqrt, "sqrt": np.sqrt,
         "floorf": np.floor, "floor": np.floor, "ceilf": np.ceil, "ceil": np.ceil, "truncf": np.trunc,
         "trunc": np.trunc, "fminf": np.minimum, "fmin": np.minimum, "min": np.minimum,
         "fmaxf": np.maximum, "fmax": np.maximum, "max": np.maximum}
_FLOAT_RESULT = {"fabsf", "fabs", "sqrtf", "sqrt", "floorf", "floor", "ceilf", "ceil", "truncf", "trunc",
                 "fminf", "fmin", "fmaxf", "fmax"}
_CMP = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
        "!=": np.not_equal}
_INT = {"&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor}
_STEP = ("p++", "++", "p--", "--")


class Unsupported(Exception):
    """The statements use something outside the subset."""


def ctype(text: str) -> tuple[str, int]:
    """``(kind, bits)`` of a C scalar type (``i``, ``u`` or ``f``)."""
    words = [w for w in text.replace("const ", "").replace("volatile ", "").split() if w]
    t = _TYPES.get(" ".join(words))
    if t is None:
        raise Unsupported(f"type {text!r}")
    return t


def wrap(v: np.ndarray, t: tuple[str, int]) -> np.ndarray:
    """A value stored in a variable of C type ``t`` (int64 lanes for integers, float64 for floats)."""
    kind, bits = t
    if kind == "f":
        if bits == 64:
            return v.astype(np.float64)
        return v.astype(np.float16 if bits == 16 else np.float32).astype(np.float64)
    if v.dtype.kind == "f":
        if not np.all(np.isfinite(v)):
            raise Unsupported("a non-finite value converted to an integer")
        v = np.trunc(v).astype(np.int64)
    if bits == 1:
        return (v != 0).astype(np.int64)
    if bits == 64:
        return v.astype(np.int64)
    v = v.astype(np.int64) & ((1 << bits) - 1)
    return v - ((v >> (bits - 1)) << bits) if kind == "i" else v


def constant(node: c_ast.Constant) -> float | int:
    text = node.value.lower()
    if node.type in ("float", "double", "long double"):
        return float(text.rstrip("fl"))
    if "char" in node.type or "string" in node.type:
        raise Unsupported("a character constant")
    text = text.rstrip("ul")
    if len(text) > 1 and text[0] == "0" and text[1] not in "xb":
        return int(text, 8)
    return int(text, 0)


def binary(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a op b`` with C's arithmetic on lanes (comparisons give 0/1)."""
    fl = a.dtype.kind == "f" or b.dtype.kind == "f"
    if fl:
        a, b = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        if op in _CMP:
            return _CMP[op](a, b).astype(np.int64)
        if op in ("+", "-", "*"):
            return a + b if op == "+" else a - b if op == "-" else a * b
        if op in ("/", "%"):
            if fl:
                return a / b if op == "/" else np.fmod(a, b)
            if np.any(b == 0):
                raise Unsupported("an integer division by zero")
            q = (np.abs(a) // np.abs(b)) * np.sign(a) * np.sign(b)
            return q if op == "/" else a - b * q
        if fl:
            raise Unsupported(f"{op} on floats")
        if op in _INT:
            return _INT[op](a, b)
        if op in ("<<", ">>"):
            if np.any((b < 0) | (b > 62)):
                raise Unsupported("a shift out of range")
            return a << b if op == "<<" else a >> b
    raise Unsupported(f"operator {op}")


class Lanes:
    """Scalars (``env``: name -> one value per lane), their C types, and read-only arrays indexed per lane
    (``arrays``: name -> ``[draw, *shape]``, ``draw``: each lane's draw)."""

    def __init__(self, names: dict[str, float], int_names: set[str], arrays: dict[str, np.ndarray],
                 draw: np.ndarray):
        self.names, self.int_names, self.arrays, self.draw = names, int_names, arrays, draw
        self.env: dict[str, np.ndarray] = {}
        self.types: dict[str, tuple[str, int]] = {}
        self.unknown: set[str] = set()  # locals whose value here no lane knows (set by code not run)
        self.watch: dict[int, list[int]] = {}  # id of an ``if`` -> [lanes that reached it, lanes that took it]
        # id of a loop inside what runs -> [each entry's trips, the trips per draw]: a loop whose entries only
        # the run of an enclosing data-dependent loop makes (input_trips)
        self.loop_watch: dict[int, list] = {}
        self.loop_budget: int | None = None  # trips the loops it runs may take in all (None: it runs no loop)
        self.returned: int | None = None  # lanes a ``return`` ended (None: a ``return`` is outside what it runs)
        # array -> which of its elements ([draw, *shape]) hold a known value (a read of another is refused), and
        # whether writes to those arrays are stored (one lane per draw: ``llmulator.earlier_writes``)
        self.known: dict[str, np.ndarray] = {}
        self.stores = False
        self._active: np.ndarray | None = None  # the lanes the statement being run runs on (an increment's)
        self._depth = 0  # loops this is running inside (``loop``)
        self._continued: np.ndarray | None = None  # lanes a ``continue`` ended this pass of the loop body (body)

    def size(self) -> int:
        return self.draw.size

    def compact(self, keep: np.ndarray) -> None:
        """Drop the lanes not in ``keep`` (finished ones cost nothing more)."""
        self.env = {k: v[keep] for k, v in self.env.items()}
        self.draw = self.draw[keep]

    # -- statements -------------------------------------------------------------------------------------------
    def block(self, items, mask: np.ndarray, skip=frozenset()) -> np.ndarray:
        """Run statements on the lanes of ``mask`` (those whose ``id`` is in ``skip`` are not run); the lanes
        still running afterwards (``break`` leaves)."""
        for st in items:
            if not mask.any():
                return mask
            c = None
            if id(st) in self.watch:  # counted whether or not the run needs its sides
                c = self.truth(st.cond, mask)
                self.watch[id(st)][0] += int(mask.sum())
                self.watch[id(st)][1] += int((mask & c).sum())
            if id(st) in skip:
                continue
            if isinstance(st, c_ast.Compound):
                mask = self.block(st.block_items or [], mask, skip)
            elif isinstance(st, c_ast.Label):
                mask = self.block([st.stmt], mask, skip)
            elif isinstance(st, c_ast.If):
                c = self.truth(st.cond, mask) if c is None else c  # once: the condition may step a counter
                then = self.block([st.iftrue], mask & c, skip) if st.iftrue is not None else mask & c
                other = self.block([st.iffalse], mask & ~c, skip) if st.iffalse is not None else mask & ~c
                mask = then | other
            elif isinstance(st, c_ast.Break):
                return np.zeros_like(mask)
            elif isinstance(st, c_ast.Continue):
                if self._continued is None:
                    raise Unsupported("a continue outside a loop this runs")
                self._continued |= mask   # these lanes skip the rest of the body, and stay in the loop
                return np.zeros_like(mask)
            elif isinstance(st, c_ast.Return) and self.returned is not None:  # the caller's loop ends the kernel
                if self._depth:
                    raise Unsupported("a return inside a loop this runs: it would end the loops around it too")
                self.returned += int(mask.sum())
                return np.zeros_like(mask)
            elif isinstance(st, (c_ast.For, c_ast.While, c_ast.DoWhile)):
                self.loop(st, mask, skip)
            elif not isinstance(st, (c_ast.EmptyStatement, c_ast.Pragma)):
                self.simple(st, mask)
        return mask

    def loop(self, node, mask: np.ndarray, skip=frozenset()) -> None:
        """Run a loop to its end on the lanes of ``mask`` (a ``break`` ends it on its lane), within the trip
        budget the caller granted (``loop_budget``; none granted: ``Unsupported``)."""
        if self.loop_budget is None:
            raise Unsupported("a loop inside what runs")
        if isinstance(node, c_ast.For) and node.init is not None:
            self.simple(node.init, mask)
        step = node.next if isinstance(node, c_ast.For) else None
        # `for (;;)` (no condition) ends through its body's break
        live = mask.copy() if isinstance(node, c_ast.DoWhile) or node.cond is None else \
            mask & self.truth(node.cond, mask)
        counts = np.zeros(mask.size, dtype=np.int64) if id(node) in self.loop_watch else None
        self._depth += 1
        try:
            while live.any():
                self.loop_budget -= int(live.sum())
                if self.loop_budget < 0:
                    raise Unsupported("the loops run past their trip budget")
                if counts is not None:
                    counts[live] += 1
                live = self.body(node.stmt, live, skip)
                if step is not None and live.any():
                    self.simple(step, live)
                if node.cond is not None:
                    live = live & self.truth(node.cond, live)
        finally:
            self._depth -= 1
        if counts is not None:
            entries, per_draw = self.loop_watch[id(node)]
            entries.extend(counts[mask].tolist())
            np.add.at(per_draw, self.draw[mask], counts[mask])

    def body(self, stmt, live: np.ndarray, skip=frozenset()) -> np.ndarray:
        """One pass of a loop body on the lanes of ``live``: the lanes still in the loop after it (those that
        reached its end and those a ``continue`` sent to the next iteration; a ``break`` leaves)."""
        outer, self._continued = self._continued, np.zeros_like(live)
        try:
            return self.block([stmt], live, skip) | self._continued
        finally:
            self._continued = outer

    def simple(self, st, mask: np.ndarray) -> None:
        """A declaration, an assignment, an increment or a list of them."""
        self._active = mask
        if isinstance(st, c_ast.DeclList):
            for d in st.decls:
                self.simple(d, mask)
        elif isinstance(st, c_ast.Decl):
            if not isinstance(st.type, c_ast.TypeDecl):
                raise Unsupported("a local array")
            self.types[st.name] = ctype(_GEN.visit(st.type))
            if st.init is None:
                self.unknown.add(st.name)
                self.env.pop(st.name, None)
            else:
                self.unknown.discard(st.name)
                self.env.pop(st.name, None)
                self.store(st.name, self.ev(st.init), mask)
        elif isinstance(st, c_ast.ExprList):
            for e in st.exprs:
                self.simple(e, mask)
        elif isinstance(st, c_ast.UnaryOp) and st.op in _STEP:
            if isinstance(st.expr, c_ast.ID):
                self.store(self.target(st.expr), self.ev(st.expr) + (1 if "++" in st.op else -1), mask)
            elif self.stores and self._index(st.expr)[0] in self.known:  # ``cnt[k]++`` on a held array
                self.put(st.expr, self.ev(st.expr) + (1 if "++" in st.op else -1), mask)
        elif isinstance(st, c_ast.Assignment):
            stored = isinstance(st.lvalue, c_ast.ArrayRef) and self.stores and self._index(st.lvalue)[0] in self.known
            if isinstance(st.lvalue, c_ast.ArrayRef) and not stored:
                return  # an array write: nothing this runs reads it back (module docstring)
            value = self.ev(st.rvalue)
            if st.op != "=":
                value = binary(st.op[:-1], self.ev(st.lvalue), value)
            if stored:
                self.put(st.lvalue, value, mask)
            else:
                self.store(self.target(st.lvalue), value, mask)
        else:
            raise Unsupported(type(st).__name__)

    def target(self, node) -> str:
        if not isinstance(node, c_ast.ID) or node.name not in self.types:
            raise Unsupported("an assignment to something other than a typed local")
        return node.name

    def store(self, name: str, value, mask: np.ndarray) -> None:
        value = wrap(np.broadcast_to(np.asarray(value), mask.shape), self.types[name])
        if name in self.unknown:
            if not mask.all():
                raise Unsupported(f"{name} is known on some lanes only")
            self.unknown.discard(name)
        if name not in self.env:
            self.env[name] = value.copy()  # a fresh local: the lanes outside the mask never read it
        else:
            old = self.env[name]
            self.env[name] = np.where(mask, value, old).astype(np.result_type(value, old))

    # -- expressions ------------------------------------------------------------------------------------------
    def truth(self, node, mask: np.ndarray | None = None) -> np.ndarray:
        """Whether ``node`` holds on every lane; ``mask``: the lanes that evaluate it (those an increment in
        it steps; None: all)."""
        self._active = mask
        return np.asarray(self.ev(node)) != 0

    def ev(self, n) -> np.ndarray:
        """The value of an expression on every lane."""
        if isinstance(n, c_ast.Constant):
            v = constant(n)
            return np.full(self.size(), v, dtype=np.float64 if isinstance(v, float) else np.int64)
        if isinstance(n, c_ast.ID):
            return self.name(n.name)
        if isinstance(n, c_ast.ArrayRef):
            return self.element(n)
        if isinstance(n, c_ast.BinaryOp):
            if n.op in ("&&", "||"):
                if has_step(n.right):
                    raise Unsupported("an increment C may skip")
                a = self.ev(n.left) != 0
                b = self._on(a if n.op == "&&" else ~a, n.right) != 0  # C evaluates it on those lanes only
                return (a & b if n.op == "&&" else a | b).astype(np.int64)
            left, right = self.ev(n.left), self.ev(n.right)
            if n.op in ("/", "%") and right.dtype.kind != "f" and self._active is not None:
                right = np.where(self._active, right, np.where(right == 0, 1, right))  # a lane C never runs
            return binary(n.op, left, right)
        if isinstance(n, c_ast.UnaryOp):
            return self.unary(n)
        if isinstance(n, c_ast.TernaryOp):
            if has_step(n.iftrue) or has_step(n.iffalse):
                raise Unsupported("an increment C may skip")
            c = self.ev(n.cond) != 0
            return np.where(c, self._on(c, n.iftrue), self._on(~c, n.iffalse))
        if isinstance(n, c_ast.Cast):
            return wrap(self.ev(n.expr), ctype(_GEN.visit(n.to_type)))
        if isinstance(n, c_ast.FuncCall) and isinstance(n.name, c_ast.ID) and n.name.name in _MATH:
            f = n.name.name
            with np.errstate(all="ignore"):  # C's sqrt of a negative is NaN, not a warning on the user's terminal
                out = _MATH[f](*[self.ev(a) for a in (n.args.exprs if n.args else [])])
            return np.asarray(out, dtype=np.float64) if f in _FLOAT_RESULT else out
        raise Unsupported(type(n).__name__)

    def _on(self, lanes: np.ndarray, n) -> np.ndarray:
        """``n`` where C evaluates it: on ``lanes`` of the running statement's (an arm of ``?:``, the right of
        ``&&``), so a division by zero on a lane that never reaches it (``b ? a / b : 0``) is no error."""
        outer = self._active
        self._active = lanes if outer is None else outer & lanes
        try:
            return self.ev(n)
        finally:
            self._active = outer

    def name(self, name: str) -> np.ndarray:
        if name in self.unknown:
            raise Unsupported(f"{name} is not known here")
        if name in self.env:
            return self.env[name]
        if name in self.names:
            dtype = np.int64 if name in self.int_names else np.float64
            return np.full(self.size(), self.names[name], dtype=dtype)
        raise Unsupported(f"{name} has no value here")

    def _index(self, n: c_ast.ArrayRef) -> tuple[str | None, list]:
        """The array an element names and its subscripts (outermost first), not evaluated."""
        idx, base = [], n
        while isinstance(base, c_ast.ArrayRef):
            idx.append(base.subscript)
            base = base.name
        return (base.name if isinstance(base, c_ast.ID) else None), idx[::-1]

    def element(self, n: c_ast.ArrayRef) -> np.ndarray:
        name, subs = self._index(n)
        data = self.arrays.get(name)
        if data is None or len(subs) != data.ndim - 1:
            raise Unsupported("a read of an array it was not given")
        ix = (self.draw, *(np.clip(np.asarray(self.ev(s)).astype(np.int64), 0, data.shape[k + 1] - 1)
                           for k, s in enumerate(subs)))
        if name in self.known and not (self.known[name][ix] | ~self._lanes_on()).all():
            raise Unsupported(f"a read of an element of {name} that nothing before wrote")
        v = data[ix]
        return v.astype(np.float64) if v.dtype.kind == "f" else v.astype(np.int64)

    def put(self, n: c_ast.ArrayRef, value, mask: np.ndarray) -> None:
        """Store ``value`` into an element of a held array on the lanes of ``mask`` (one lane per draw)."""
        name, subs = self._index(n)
        data, on = self.arrays[name], np.flatnonzero(mask)
        ix = (self.draw[on], *(np.broadcast_to(np.asarray(self.ev(s)), mask.shape)[on].astype(np.int64) for s in subs))
        if len(subs) != data.ndim - 1 or any(((i < 0) | (i >= data.shape[k + 1])).any() for k, i in enumerate(ix[1:])):
            raise Unsupported(f"a write outside {name}")
        data[ix] = np.broadcast_to(np.asarray(value), mask.shape)[on].astype(data.dtype)
        self.known[name][ix] = True

    def _lanes_on(self) -> np.ndarray:
        return np.ones(self.size(), dtype=bool) if self._active is None else self._active

    def unary(self, n: c_ast.UnaryOp) -> np.ndarray:
        if n.op in _STEP:  # ``--k < 0``: k steps on the lanes that evaluate it; the value is the new or old one
            name = self.target(n.expr)
            old = self.name(name)
            self.store(name, old + (1 if "++" in n.op else -1),
                       np.ones(self.size(), dtype=bool) if self._active is None else self._active)
            return old if n.op.startswith("p") else self.env[name]
        v = self.ev(n.expr)
        if n.op == "-":
            return -v
        if n.op == "+":
            return v
        if n.op == "!":
            return (v == 0).astype(np.int64)
        if n.op == "~" and v.dtype.kind != "f":
            return ~v
        raise Unsupported(f"unary {n.op}")
