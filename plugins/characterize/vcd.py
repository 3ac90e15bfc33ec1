"""Value-change dumps as switching activity: toggles per clock and duty per net, per scope.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

# --------------------------------------------------------------------------------------------
# parsers

@attrs.define
class NetActivity:
    toggles: int = 0          # 0<->1 transitions
    high_time: float = 0.0    # time at 1, in VCD time units


@attrs.define
class VcdActivity:
    nets: dict[str, NetActivity]
    t_start: float
    t_end: float
    timescale_s: float

    def cycles(self, clock: str = "clk") -> float:
        """Clock cycles covered by the dump: half the clock's toggles."""
        return self.nets[clock].toggles / 2.0 if clock in self.nets else 0.0

    def activity(self, net: str, cycles: float) -> tuple[float, float]:
        """(toggles per clock cycle, fraction of time at 1) of one net."""
        a = self.nets[net]
        span = self.t_end - self.t_start
        return (a.toggles / cycles if cycles else 0.0), (a.high_time / span if span > 0 else 0.0)


_TS_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "fs": 1e-15}


def parse_vcd(lines: Iterable[str], scope: str | None = None, t_end: float | None = None,
              hierarchical: bool = False) -> VcdActivity:
    """Per-bit toggle counts and time-at-1 of every net in a VCD (streamed line by line).

    Nets are named without escapes, one entry per bit: ``a_r[3]``, ``_05_``, ``clk``. With
    ``scope`` (e.g. ``"tb.dut"``) only variables declared directly in that scope are kept. X and Z
    values are not levels: a 0->x->1 sequence counts as one toggle. The dump ends at the last
    timestamp unless ``t_end`` is given. With ``hierarchical`` every net is named with its scope path
    below ``scope`` (``u_array.u_pe_0_1.w[3]``), so one dump of a hierarchical design serves every
    instance of a module (plugins/rtl).
    """
    ids: dict[str, list[str]] = {}     # id code -> bit names (MSB first for vectors)
    per_var: dict[str, int] = {}       # id code -> bits per variable (several variables may share a code)
    last: dict[str, str] = {}          # id code -> its last vector value, where that was 0s and 1s only
    stack: list[str] = []
    want = scope.split(".") if scope else None
    state: dict[str, str] = {}         # bit name -> last known level '0'/'1'
    since: dict[str, float] = {}       # bit name -> time it went to 1
    nets: dict[str, NetActivity] = {}
    ts = 1e-12
    t = 0.0
    t0: float | None = None
    in_defs = True
    tokens_iter = (tok for line in lines for tok in line.split())
    it = iter(tokens_iter)

    def set_bit(name: str, v: str) -> None:
        if v not in "01":
            return
        old = state.get(name)
        if old == v:
            return
        rec = nets.get(name)
        if rec is None:               # not setdefault: that builds a NetActivity on every change
            rec = nets[name] = NetActivity()
        if old is not None:
            rec.toggles += 1
        if v == "1":
            since[name] = t
        elif old == "1":
            rec.high_time += t - since.pop(name, t)
        state[name] = v

    for tok in it:
        if in_defs:
            if tok == "$scope":
                next(it)
                stack.append(next(it))
            elif tok == "$upscope":
                if stack:
                    stack.pop()
            elif tok == "$timescale":
                spec = ""
                for x in it:
                    if x == "$end":
                        break
                    spec += x
                m = re.fullmatch(r"(\d+)\s*([munpf]?s)", spec)
                if m:
                    ts = int(m.group(1)) * _TS_UNITS[m.group(2)]
            elif tok == "$var":
                _kind, width, code, ref = next(it), int(next(it)), next(it), next(it)
                rest = []
                for x in it:
                    if x == "$end":
                        break
                    rest.append(x)
                if want is not None and (stack[:len(want)] != want if hierarchical else stack != want):
                    continue
                ref = ref[1:] if ref.startswith("\\") else ref
                if hierarchical:
                    sub = stack[len(want):] if want is not None else stack
                    ref = ".".join([*sub, ref])
                rng = rest[0] if rest and rest[0].startswith("[") else None
                if rng is None and "[" in ref and ref.endswith("]") and ":" in ref:
                    ref, rng = ref[:ref.index("[")], ref[ref.index("["):]
                if width == 1:
                    bits = [ref + (rng if rng else "")]
                else:
                    m = re.fullmatch(r"\[(\d+):(\d+)\]", rng or "")
                    hi, lo = (int(m.group(1)), int(m.group(2))) if m else (width - 1, 0)
                    step = -1 if hi >= lo else 1
                    bits = [f"{ref}[{i}]" for i in range(hi, lo + step, step)]
                ids.setdefault(code, []).extend(bits)
                per_var.setdefault(code, len(bits))
            elif tok == "$enddefinitions":
                in_defs = False
            continue
        c = tok[0]
        if c == "#":
            t = float(tok[1:])
            if t0 is None:
                t0 = t
        elif c in "01xXzZ" and len(tok) > 1:
            for name in ids.get(tok[1:], ()):
                set_bit(name, tok[0].lower())
        elif c in "bB":
            value, code = tok[1:], next(it)
            names = ids.get(code, ())
            w = per_var.get(code, 0)   # Verilator gives aliased nets (a port and the wire on it) one code
            value = value.rjust(w, "x" if value[0] in "xXzZ" else "0")[-w:] if names else value
            prev = last.get(code)
            levels = bool(names) and value.count("0") + value.count("1") == w
            if levels and prev is not None:
                # both levels only: visit just the bits that changed (wide buses change few bits)
                diff = int(prev, 2) ^ int(value, 2)
                while diff:
                    low = diff & -diff
                    i = w - low.bit_length()
                    for k in range(0, len(names), w):
                        set_bit(names[k + i], value[i])
                    diff ^= low
            else:
                for k in range(0, len(names), w or 1):
                    for name, v in zip(names[k:k + w], value, strict=False):
                        set_bit(name, v.lower())
            if levels:
                last[code] = value
            else:
                last.pop(code, None)
        elif c in "rR":
            next(it)
        # $dumpvars / $end / $comment keywords carry no values themselves
    end = t if t_end is None else t_end
    for name, s in since.items():
        nets.setdefault(name, NetActivity()).high_time += end - s
    for names in ids.values():
        for n in names:
            nets.setdefault(n, NetActivity())
    return VcdActivity(nets, t0 if t0 is not None else 0.0, end, ts)
