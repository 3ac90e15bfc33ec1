"""Verilog of the control: loop-nest walkers, the operand engines, the controller and the top.

Every engine (one per operand stream: the stationary preload, the west and north streams, the old
outputs and the writer) walks the mapping's loop nest on its own copy of the walker: the fold's
tile loops (mixed-radix counters, so a fused loop's members are digits of one counter), then its
vectors (the stream's temporal point loops, or the rows of the array). From the walker's state it
computes each lane's element address with the subscript's affine coefficients, coalesces lanes
that share a word and requests the words from its level's arbiter; read data comes back after
the bank latency into a ring of vector slots that the array consumes in order. Each reader lane
keeps the last word it fetched (a one-word line) and fetches only when it moves to another word,
so a stream along a word's elements reads the word once. The writer (writer.py) adds the array's
outputs to the old values and writes them back (read-modify-write), combining each lane's
elements of one word into one write. The reader of old values reads vector v of fold f only once
every element of vector v of fold f-1 is in the buffer: no read before write, per vector.
"""

from __future__ import annotations

import attrs
from llmulator.buflayout import Layout, Level, Placed
from llmulator.pearray import LoopPlan, Operand, Plan

from .datapath import clog2
from .ring import return_ring


class Walker:
    """The loop-nest walker's registers and next-state logic, as Verilog text with a name prefix."""

    def __init__(self, plan: Plan, pre: str, inner: str):
        self.plan, self.pre, self.inner = plan, pre, inner
        self.tiles = [plan.loop(lb) for lb in plan.tile_order]
        self.temporal = [plan.loop(lb) for lb in plan.temporal]
        self.la = plan.loop(plan.loop_a)
        self.decl: list[str] = []
        self.wires: list[str] = []
        self._n = 0

    # helpers -------------------------------------------------------------------------------
    def fw(self, lp: LoopPlan) -> int:
        return clog2(lp.trips + lp.tile + 1) + 1

    def dw(self, lp: LoopPlan) -> int:
        return clog2(max(lp.radices) + 1) + 1

    def bd(self, lp: LoopPlan, j: int) -> str:
        return f"{self.pre}bd_{lp.label}_{j}" if lp.strip_mined else "0"

    def bf(self, lp: LoopPlan) -> str:
        return f"{self.pre}bf_{lp.label}" if lp.strip_mined else "0"

    def addc(self, lp: LoopPlan, digits: list[str], c: int) -> list[str]:
        """Wires holding ``digits + c`` in the loop's mixed radix (the carry out of the top is dropped)."""
        cd = lp.digits(c % lp.trips) if c < lp.trips else lp.digits(c % lp.trips)
        if c >= lp.trips:
            cd = (cd[0] + c // lp.trips,) + cd[1:]
        self._n += 1
        k = self._n
        w = self.dw(lp) + 1
        out = [""] * len(digits)
        carry = "1'b0"
        for j in reversed(range(len(digits))):
            s = f"{self.pre}ad{k}_{j}"
            if len(digits) == 1:
                self.wires.append(f"  wire [{w + clog2(c + 2)}:0] {s} = {digits[j]} + {cd[j]};")
                out[j] = s
                break
            self.wires.append(f"  wire [{w - 1}:0] {s}_s = {digits[j]} + {cd[j]} + {carry};")
            self.wires.append(f"  wire {s}_c = {s}_s >= {lp.radices[j]};")
            self.wires.append(f"  wire [{w - 1}:0] {s} = {s}_c ? {s}_s - {lp.radices[j]} : {s}_s;")
            carry = f"{s}_c"
            out[j] = s
        return out

    def ext(self, lp: LoopPlan) -> str:
        """Point extent of the loop in the current fold: min(tile, trips - base)."""
        if not lp.strip_mined:
            return str(lp.tile)
        return f"{self.pre}ext_{lp.label}"

    # the walker ------------------------------------------------------------------------------
    def build(self) -> tuple[list[str], list[str], list[str], list[str]]:
        """(declarations, wires, init statements, step statements)."""
        pre = self.pre
        D, init, step = self.decl, [], []
        D.append(f"  reg {pre}walk_done; reg [31:0] {pre}fidx;")
        init += [f"{pre}walk_done <= 0;", f"{pre}fidx <= 0;"]
        for lp in self.plan.loops:
            if lp.strip_mined:
                D.append(f"  reg [{self.fw(lp) - 1}:0] {pre}bf_{lp.label};")
                D.append("  " + " ".join(f"reg [{self.dw(lp) - 1}:0] {pre}bd_{lp.label}_{j};"
                                         for j in range(len(lp.radices))))
                init.append(f"{pre}bf_{lp.label} <= 0;")
                init += [f"{pre}bd_{lp.label}_{j} <= 0;" for j in range(len(lp.radices))]
                self.wires.append(f"  wire [{self.fw(lp) - 1}:0] {pre}ext_{lp.label} = "
                                  f"({pre}bf_{lp.label} + {lp.tile} > {lp.trips}) ? {lp.trips} - {pre}bf_{lp.label} "
                                  f": {lp.tile};")
        # next fold: the innermost tile loop advances by its tile; a finished one resets and carries
        carry = "1'b1"
        nxt: dict[str, tuple[str, list[str]]] = {}
        for lp in reversed(self.tiles):
            last = f"{pre}tl_{lp.label}"
            self.wires.append(f"  wire {last} = {pre}bf_{lp.label} + {lp.tile} >= {lp.trips};")
            inc = self.addc(lp, [self.bd(lp, j) for j in range(len(lp.radices))], lp.tile)
            cin = f"{pre}ci_{lp.label}"
            self.wires.append(f"  wire {cin} = {carry};")
            nbf = f"{pre}nbf_{lp.label}"
            self.wires.append(f"  wire [{self.fw(lp) - 1}:0] {nbf} = {cin} ? ({last} ? 0 : {pre}bf_{lp.label} + "
                              f"{lp.tile}) : {pre}bf_{lp.label};")
            nbd = []
            for j in range(len(lp.radices)):
                n = f"{pre}nbd_{lp.label}_{j}"
                self.wires.append(f"  wire [{self.dw(lp) - 1}:0] {n} = {cin} ? ({last} ? 0 : {inc[j]}) : "
                                  f"{self.bd(lp, j)};")
                nbd.append(n)
            nxt[lp.label] = (nbf, nbd)
            carry = f"{cin} && {last}"
        self.wires.append(f"  wire {pre}all_tlast = {carry};")

        def nbd_of(lp: LoopPlan, j: int) -> str:
            return nxt[lp.label][1][j] if lp.label in nxt else "0"

        fold_adv = [f"{pre}fidx <= {pre}fidx + 1;", f"if ({pre}all_tlast) {pre}walk_done <= 1;"]
        for lp in self.tiles:
            fold_adv.append(f"{pre}bf_{lp.label} <= {nxt[lp.label][0]};")
            fold_adv += [f"{pre}bd_{lp.label}_{j} <= {nxt[lp.label][1][j]};" for j in range(len(lp.radices))]
        if self.inner == "stream":
            lasts = []
            for lp in self.temporal:
                D.append(f"  reg [{self.fw(lp) - 1}:0] {pre}p_{lp.label};")
                D.append("  " + " ".join(f"reg [{self.dw(lp) - 1}:0] {pre}pd_{lp.label}_{j};"
                                         for j in range(len(lp.radices))))
                init.append(f"{pre}p_{lp.label} <= 0;")
                init += [f"{pre}pd_{lp.label}_{j} <= 0;" for j in range(len(lp.radices))]
                self.wires.append(f"  wire {pre}pl_{lp.label} = {pre}p_{lp.label} == {self.ext(lp)} - 1;")
                lasts.append(f"{pre}pl_{lp.label}")
            self.wires.append(f"  wire {pre}fold_end = {' && '.join(lasts) if lasts else '1' + chr(39) + 'b1'};")
            # odometer, innermost first
            chain = []
            for idx in reversed(range(len(self.temporal))):
                lp = self.temporal[idx]
                inc = self.addc(lp, [f"{pre}pd_{lp.label}_{j}" for j in range(len(lp.radices))], 1)
                body = [f"{pre}p_{lp.label} <= {pre}p_{lp.label} + 1;"]
                body += [f"{pre}pd_{lp.label}_{j} <= {inc[j]};" for j in range(len(lp.radices))]
                for inner in self.temporal[idx + 1:]:
                    body.append(f"{pre}p_{inner.label} <= 0;")
                    body += [f"{pre}pd_{inner.label}_{j} <= {self.bd(inner, j)};" for j in range(len(inner.radices))]
                chain.append((f"!{pre}pl_{lp.label}", body))
            end = list(fold_adv)
            for lp in self.temporal:
                end.append(f"{pre}p_{lp.label} <= 0;")
                end += [f"{pre}pd_{lp.label}_{j} <= {nbd_of(lp, j)};" for j in range(len(lp.radices))]
        else:  # rows of the array along a
            la, A = self.la, self.plan.A
            D.append(f"  reg [15:0] {pre}k;")
            D.append("  " + " ".join(f"reg [{self.dw(la) - 1}:0] {pre}rd_{j};" for j in range(len(la.radices))))
            init.append(f"{pre}k <= 0;")
            init += [f"{pre}rd_{j} <= 0;" for j in range(len(la.radices))]
            inc = self.addc(la, [f"{pre}rd_{j}" for j in range(len(la.radices))], 1)
            self.wires.append(f"  wire {pre}fold_end = {pre}k == {A - 1};")
            chain = [(f"!{pre}fold_end", [f"{pre}k <= {pre}k + 1;"]
                      + [f"{pre}rd_{j} <= {inc[j]};" for j in range(len(la.radices))])]
            end = list(fold_adv) + [f"{pre}k <= 0;"] + [f"{pre}rd_{j} <= {nbd_of(la, j)};"
                                                        for j in range(len(la.radices))]
        for n, (cond, body) in enumerate(chain):
            step.append(("if" if n == 0 else "else if") + f" ({cond}) begin " + " ".join(body) + " end")
        step.append(("else begin " if chain else "begin ") + " ".join(end) + " end")
        return D, self.wires, init, step

    def value(self, var: str, lane_loop: str | None, lane: int | None) -> str:
        """The Verilog expression of a loop variable's value at the walker's current vector."""
        for lp in self.plan.loops:
            if var not in lp.vars:
                continue
            j = lp.vars.index(var)
            if lp.label == lane_loop:
                return self.lane_digits(lp, lane)[j]
            if self.inner == "rows" and lp.label == self.plan.loop_a:
                return f"{self.pre}rd_{j}"
            if self.inner == "stream" and lp.label in self.plan.temporal:
                return f"{self.pre}pd_{lp.label}_{j}"
            return self.bd(lp, j)
        raise KeyError(var)

    _lane_cache: dict

    def lane_digits(self, lp: LoopPlan, lane: int) -> list[str]:
        cache = self.__dict__.setdefault("_lane_cache", {})
        key = (lp.label, lane)
        if key not in cache:
            cache[key] = self.addc(lp, [self.bd(lp, j) for j in range(len(lp.radices))], lane)
        return cache[key]


# the memory system's constants are the model's (llmulator.banks, which replays this schedule)
from llmulator.banks import RING_EXTRA, URGENT_LEAD  # noqa: E402

ROLE_OF = {"rd_S": "S", "rd_X": "X", "rd_Y": "Y", "old": "O", "wr": "O"}


@attrs.frozen
class Geometry:
    """An engine's operand, placement and widths: what its lane addresses and ports are built from."""

    kind: str
    op: Operand
    pl: Placed
    lv: Level
    lane_loop: str
    NL: int             # lanes
    inner: str          # "rows" | "stream": what the walker steps through within a fold
    BW: int             # bank index bits
    RW: int             # row (word within a bank) bits
    LOG: int            # log2 elements per word
    OW: int             # element offset bits
    IW: int             # lane index bits
    AW: int             # element / word address bits

    @property
    def EB(self) -> int:
        return self.op.bits


def geometry(plan: Plan, lay: Layout, kind: str) -> Geometry:
    role = ROLE_OF[kind]
    op = plan.operands[role]
    pl = lay.placed[role]
    lv = lay.levels[pl.level]
    LOG = clog2(pl.epw) if pl.epw > 1 else 0
    NL = plan.A if role == "X" else plan.B
    return Geometry(kind, op, pl, lv, plan.loop_a if role == "X" else plan.loop_b, NL,
                    "rows" if role == "S" or (role == "O" and plan.shape == "os") else "stream",
                    clog2(lv.banks), clog2(lv.depth), LOG, max(LOG, 1), clog2(NL),
                    max(clog2(lv.used_words * pl.epw + 1) + 2, 8))


def ports_decl(g: Geometry) -> list[str]:
    W = g.lv.width
    return [f"  output [{g.NL - 1}:0] req, output [{g.NL * g.BW - 1}:0] bank, output [{g.NL * g.RW - 1}:0] row,",
            f"  output [{g.NL * W - 1}:0] wdata, output [{g.NL * W // 8 - 1}:0] wmask,",
            f"  input [{g.NL - 1}:0] gnt, input [{g.NL - 1}:0] rvalid, input [{g.NL * W - 1}:0] rdata);"]


def lane_wires(plan: Plan, g: Geometry, wk: Walker) -> list[str]:
    """Each lane's element address ``el_i``, word ``wd_i``, offset in the word ``of_i`` and valid ``v_i``
    at the walker's current vector."""
    rowv = f"(k < {wk.ext(wk.la)})" if g.inner == "rows" else "1'b1"
    lane_ext = wk.ext(plan.loop(g.lane_loop))
    out = []
    for i in range(g.NL):
        terms = [str(g.op.const)] + [f"{c} * {wk.value(var, g.lane_loop, i)}" for var, c in g.op.coefs.items()]
        out.append(f"  wire [{g.AW - 1}:0] el_{i} = " + " + ".join(terms) + ";")
        out.append(f"  wire [{g.AW - 1}:0] wd_{i} = {g.pl.base_word} + (el_{i} >> {g.LOG});")
        out.append(f"  wire [{g.OW - 1}:0] of_{i} = " + (f"el_{i}[{g.LOG - 1}:0];" if g.LOG else "0;"))
        out.append(f"  wire v_{i} = {i} < {lane_ext} && {rowv};")
    return out


def bank_row(g: Geometry, i: int, word: str) -> list[str]:
    """Lane ``i``'s bank (layout.Level.bank_of) and row outputs for the word address ``word``."""
    NB = g.lv.banks
    if NB == 1:
        bank = "0"
    elif NB & (NB - 1):
        bank = f"{word} % {NB}"
    else:
        lb = NB.bit_length() - 1
        bank = " ^ ".join(f"{word}[{min(k + lb, g.AW) - 1}:{k}]" for k in range(0, g.AW, lb))
    return [f"  assign bank[{(i + 1) * g.BW - 1}:{i * g.BW}] = {bank};",
            f"  assign row[{(i + 1) * g.RW - 1}:{i * g.RW}] = {word} / {NB};"]


def engine_module(plan: Plan, lay: Layout, kind: str) -> str:
    """One operand engine: the writer (plugins/rtl/writer.py) or a reader (walker + lane addresses +
    requests + the return ring the array consumes in order)."""
    if kind == "wr":
        from .writer import writer_module
        return writer_module(plan, lay)
    return reader_module(plan, lay, kind)


def reader_module(plan: Plan, lay: Layout, kind: str) -> str:
    """A reader. Its lanes keep the last word they fetched (a one-word line per lane) and request a
    word only when they move to another; lanes that share a word request it once. The reader of old
    outputs reads fold f only once the writer has finished fold f-1 (so every word it reads holds
    what fold f-1 wrote) and forgets its lines at the end of each fold."""
    g = geometry(plan, lay, kind)
    NL, EB, W, IW = g.NL, g.EB, g.lv.width, g.IW
    wk = Walker(plan, "", g.inner)
    D, wires, init, step = wk.build()
    L = [f"module {kind} (input clk, input rst, input start,",
         f"  input pop, output head_valid, output [{NL * EB - 1}:0] head,"]
    if kind == "old":
        L += ["  input [31:0] fold_limit, input [31:0] vec_limit, output urgent,"]
    else:
        L += ["  input hold,"]
    L += ports_decl(g) + D
    L.append("  reg active;")
    wires += lane_wires(plan, g, wk)
    for i in range(NL):  # the lane's word is in its line register: no request
        L.append(f"  reg [{g.AW - 1}:0] lt_{i}; reg lv_{i}; reg [{W - 1}:0] lw_{i};")
        wires.append(f"  wire hit_{i} = v_{i} && lv_{i} && lt_{i} == wd_{i};")
        wires.append(f"  wire n_{i} = v_{i} && !hit_{i};")
        lead = "n_0" if i == 0 else f"n_{i} && (!n_{i - 1} || wd_{i} != wd_{i - 1})"
        wires.append(f"  wire ld_{i} = {lead};")
        prev = f"li_{i - 1}" if i else f"{IW}'d0"
        wires.append(f"  wire [{IW - 1}:0] li_{i} = ld_{i} ? {IW}'d{i} : {prev};")
        wires += bank_row(g, i, f"wd_{i}")
    leaders = "{" + ", ".join(f"ld_{i}" for i in reversed(range(NL))) + "}"
    L += wires
    L.append(f"  reg [{NL - 1}:0] gd;")
    L.append(f"  wire [{NL - 1}:0] lead = {leaders};")
    S = g.lv.latency + RING_EXTRA
    SW = clog2(S)
    L += [f"  reg [{SW}:0] cnt; reg [{SW - 1}:0] h, ip; reg [{S - 1}:0] ready;"]
    L += [f"  reg [{NL * EB - 1}:0] slot_{s};" for s in range(S)]
    # an old output may be read once the writer has written it in the previous fold: the writer is past
    # that fold, or in it and every element of this vector is in the buffer (consecutive folds of one
    # output tile walk the same vectors, and each lane the same words, so the words of a lane's line
    # were written back together; a fold of another tile finished before the writer got this far)
    gate = (" && (fidx <= fold_limit || (fidx == fold_limit + 1 && vcnt < vec_limit))"
            if kind == "old" else "")
    if kind == "old":
        L.append("  reg [31:0] vcnt;")
    hold = "" if kind == "old" else " && !hold"
    L.append(f"  wire can = active && !walk_done && cnt < {S}{gate}{hold};")
    L.append("  assign req = can ? (lead & ~gd) : 0;")
    if kind == "old":  # fewer than latency + URGENT_LEAD vectors issued: the stream readers hold their requests
        L.append(f"  assign urgent = can && cnt < {g.lv.latency + URGENT_LEAD};")
    L.append("  wire fin = can && ((lead & ~gd & ~gnt) == 0);")
    L.append("  assign wdata = 0; assign wmask = 0;")
    L += return_ring(g, S)
    # walker and request state
    L.append("  always @(posedge clk) begin")
    clear = " ".join(f"lv_{i} <= 0;" for i in range(NL))
    vz = " vcnt <= 0;" if kind == "old" else ""
    L.append(f"    if (rst) begin active <= 0; gd <= 0; walk_done <= 0;{vz} {clear} end")
    L.append("    else if (start) begin active <= 1; gd <= 0; " + " ".join(init) + " end")
    L.append("    else begin")
    L.append("      gd <= fin ? 0 : gd | (gnt & req);")
    if kind == "old":
        L.append("      if (fin) vcnt <= fold_end ? 0 : vcnt + 1;")
    L.append("      if (fin) begin")
    # the words this vector fetched are the lanes' lines from now on (the old outputs' until the fold ends)
    L += [f"        if (n_{i}) begin lt_{i} <= wd_{i}; lv_{i} <= 1; end" for i in range(NL)]
    if kind == "old":
        L.append(f"        if (fold_end) begin {clear} end")
    return "\n".join(L + walker_step_end(step))


def walker_step_end(step: list[str]) -> list[str]:
    """The end of an engine: the walker's next-state statements inside the open ``if (...) begin``,
    then the blocks it sits in and the module closed."""
    return ["        " + s for s in step] + ["      end", "    end", "  end", "endmodule", ""]
