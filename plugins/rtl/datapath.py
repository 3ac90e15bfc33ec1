"""Verilog of the buffers: the banks, their arbiter and crossbar, and the output queue (the PE array
is in ``array.py``).

Every module here is written once per design and instantiated many times (one bank module for all
banks of a level, one crossbar piece per bank port and lane), so synthesis maps each unique module once.
"""

from __future__ import annotations

from llmulator.buflayout import Layout
from llmulator.pearray import Plan


def clog2(n: int) -> int:
    return max(1, (max(n, 1) - 1).bit_length())


# -- buffers --------------------------------------------------------------------------------------

def bank_module(lv, sim: bool = True) -> str:
    """One bank of a level: ``ports`` read/write ports, ``width`` bits, byte-masked writes, reads
    registered through ``latency`` stages. ``sim=False`` gives the synthesis stand-in (see synth.py)."""
    P, W, RW, Lt = lv.ports, lv.width, clog2(lv.depth), lv.latency
    name = f"bank_{lv.name}"
    head = [f"module {name} (input clk, input [{P - 1}:0] en, input [{P - 1}:0] we, input [{P * RW - 1}:0] addr,",
            f"  input [{P * W - 1}:0] wdata, input [{P * W // 8 - 1}:0] wmask, output [{P * W - 1}:0] rdata);"]
    if not sim:
        # no SRAM compiler for this liberty: the bank's own registers stand for the macro's input latches
        # and output register, so that paths into and out of the memory are timed; its area and power are
        # reported apart and replaced by the technology table's memory figures
        return "\n".join(head + [
            f"  reg [{P - 1}:0] en_r, we_r; reg [{P * RW - 1}:0] addr_r; reg [{P * W - 1}:0] wdata_r;",
            f"  reg [{P * W // 8 - 1}:0] wmask_r;",
            "  always @(posedge clk) begin en_r <= en; we_r <= we; addr_r <= addr; wdata_r <= wdata; "
            "wmask_r <= wmask; end",
            f"  assign rdata = wdata_r ^ {{{P * W}{{^{{en_r, we_r, addr_r, wmask_r}}}}}};",
            "endmodule", ""])
    L = head + [f"  reg [{W - 1}:0] mem [0:{lv.depth - 1}];"]
    for p in range(P):
        for s in range(Lt):
            L.append(f"  reg [{W - 1}:0] rd_{p}_{s};")
    L.append("  integer i;")
    L.append("  always @(posedge clk) begin")
    for p in range(P):
        a = f"addr[{(p + 1) * RW - 1}:{p * RW}]"
        L.append(f"    if (en[{p}] && we[{p}]) for (i = 0; i < {W // 8}; i = i + 1)")
        L.append(f"      if (wmask[{p * W // 8} + i]) mem[{a}][i*8 +: 8] <= wdata[{p * W} + i*8 +: 8];")
        L.append(f"    if (en[{p}] && !we[{p}]) rd_{p}_0 <= mem[{a}];")
        for s in range(1, Lt):
            L.append(f"    rd_{p}_{s} <= rd_{p}_{s - 1};")
    L.append("  end")
    L.append("  assign rdata = {" + ", ".join(f"rd_{p}_{Lt - 1}" for p in reversed(range(P))) + "};")
    L += ["endmodule", ""]
    return "\n".join(L)


def buffer_module(lv, nreq: int, nwr: int = 0) -> str:
    """A level: its banks and the arbiter that grants up to ``ports`` requests per bank per cycle in
    priority order (request 0 first), routes read data back after the latency and counts accesses.

    Requests ``0 .. nwr-1`` are the writer's lanes (the only ones that write); the others read. The
    crossbar is two small modules instantiated many times, so that synthesis maps each once: ``xin``
    (one per bank port: the granted request's address and write data) and ``xout`` (one per reading
    lane: the word of the bank port that served it). The arbitration (a running count of grants per
    bank) stays here."""
    P, W, NB, RW, Lt = lv.ports, lv.width, lv.banks, clog2(lv.depth), lv.latency
    BW = clog2(NB)
    CW = clog2(P + 1) + 1
    name = f"buf_{lv.name}"
    L = [f"module {name} (input clk, input rst,",
         f"  input [{nreq - 1}:0] req, input [{nreq * BW - 1}:0] bank, input [{nreq * RW - 1}:0] row,",
         f"  input [{nreq - 1}:0] we, input [{nreq * W - 1}:0] wdata, input [{nreq * W // 8 - 1}:0] wmask,",
         f"  output [{nreq - 1}:0] gnt, output [{nreq - 1}:0] rvalid, output [{nreq * W - 1}:0] rdata,",
         "  output reg [31:0] reads, output reg [31:0] writes);"]
    for b in range(NB):
        L.append(f"  wire [{CW - 1}:0] c_0_{b} = 0;")
    for j in range(nreq):
        bj = f"bank[{(j + 1) * BW - 1}:{j * BW}]" if NB > 1 else "1'b0"
        L.append(f"  wire [{BW - 1}:0] b_{j} = {bj};")
        free = " || ".join(f"(b_{j} == {b} && c_{j}_{b} < {P})" for b in range(NB))
        L.append(f"  wire g_{j} = req[{j}] && ({free});")
        L.append(f"  wire [{CW - 1}:0] pt_{j} = " + " | ".join(f"(b_{j} == {b} ? c_{j}_{b} : 0)" for b in range(NB))
                 + ";")
        for b in range(NB):
            L.append(f"  wire [{CW - 1}:0] c_{j + 1}_{b} = c_{j}_{b} + (g_{j} && b_{j} == {b});")
        L.append(f"  assign gnt[{j}] = g_{j};")
    nw = max(nwr, 1)
    for b in range(NB):
        for p in range(P):
            for j in range(nreq):
                L.append(f"  wire s_{b}_{p}_{j} = g_{j} && b_{j} == {b} && pt_{j} == {p};")
            L.append(f"  wire en_{b}_{p}, we_{b}_{p}; wire [{RW - 1}:0] ad_{b}_{p}; wire [{W - 1}:0] wd_{b}_{p}; "
                     f"wire [{W // 8 - 1}:0] wm_{b}_{p};")
            sel = "{" + ", ".join(f"s_{b}_{p}_{j}" for j in reversed(range(nreq))) + "}"
            L.append(f"  xin_{lv.name} u_xi_{b}_{p} (.sel({sel}), .row(row), .wdata(wdata[{nw * W - 1}:0]), "
                     f".wmask(wmask[{nw * W // 8 - 1}:0]), .en(en_{b}_{p}), .we(we_{b}_{p}), .ad(ad_{b}_{p}), "
                     f".wd(wd_{b}_{p}), .wm(wm_{b}_{p}));")
        L.append(f"  wire [{P * W - 1}:0] rd_{b};")
        cat = lambda pre, b=b: "{" + ", ".join(f"{pre}_{b}_{p}" for p in reversed(range(P))) + "}"  # noqa: E731
        L.append(f"  bank_{lv.name} u_bank_{b} (.clk(clk), .en({cat('en')}), .we({cat('we')}), .addr({cat('ad')}), "
                 f".wdata({cat('wd')}), .wmask({cat('wm')}), .rdata(rd_{b}));")
    rd_all = "{" + ", ".join(f"rd_{b}" for b in reversed(range(NB))) + "}"
    L.append(f"  wire [{NB * P * W - 1}:0] rd_all = {rd_all};")
    # return path: which bank and port served each read, delayed by the latency
    for j in range(nreq):
        L.append(f"  reg rv_{j}_[0:{Lt - 1}]; reg [{BW - 1}:0] rb_{j}_[0:{Lt - 1}]; "
                 f"reg [{CW - 1}:0] rp_{j}_[0:{Lt - 1}];")
    L.append("  integer i;")
    L.append("  always @(posedge clk) begin")
    for j in range(nreq):
        L.append(f"    rv_{j}_[0] <= !rst && g_{j} && !we[{j}]; rb_{j}_[0] <= b_{j}; rp_{j}_[0] <= pt_{j};")
        if Lt > 1:
            L.append(f"    for (i = 1; i < {Lt}; i = i + 1) begin rv_{j}_[i] <= rv_{j}_[i - 1]; "
                     f"rb_{j}_[i] <= rb_{j}_[i - 1]; rp_{j}_[i] <= rp_{j}_[i - 1]; end")
    nr = " + ".join(f"(g_{j} && !we[{j}])" for j in range(nreq))
    nwx = " + ".join(f"(g_{j} && we[{j}])" for j in range(nreq))
    L.append(f"    if (rst) begin reads <= 0; writes <= 0; end else begin reads <= reads + {nr}; "
             f"writes <= writes + {nwx}; end")
    L.append("  end")
    for j in range(nreq):
        L.append(f"  assign rvalid[{j}] = rv_{j}_[{Lt - 1}];")
        if j < nwr:   # the writer never reads
            L.append(f"  assign rdata[{(j + 1) * W - 1}:{j * W}] = {W}'d0;")
            continue
        L.append(f"  xout_{lv.name} u_xo_{j} (.rb(rb_{j}_[{Lt - 1}]), .rp(rp_{j}_[{Lt - 1}]), .rd_all(rd_all), "
                 f".q(rdata[{(j + 1) * W - 1}:{j * W}]));")
    L += ["endmodule", ""]
    return "\n".join(L)


def xbar_modules(lv, nreq: int, nwr: int) -> dict[str, str]:
    """The buffer's crossbar pieces (see buffer_module): ``xin_<level>`` selects the granted request of
    one bank port (one-hot ``sel``), ``xout_<level>`` the word of the bank port that served a read."""
    P, W, NB, RW = lv.ports, lv.width, lv.banks, clog2(lv.depth)
    BW = clog2(NB)
    CW = clog2(P + 1) + 1
    nw = max(nwr, 1)
    xin = [f"module xin_{lv.name} (input [{nreq - 1}:0] sel, input [{nreq * RW - 1}:0] row, "
           f"input [{nw * W - 1}:0] wdata, input [{nw * W // 8 - 1}:0] wmask,",
           f"  output en, output we, output [{RW - 1}:0] ad, output [{W - 1}:0] wd, output [{W // 8 - 1}:0] wm);",
           "  assign en = |sel;",
           "  assign ad = " + " | ".join(f"({{{RW}{{sel[{j}]}}}} & row[{(j + 1) * RW - 1}:{j * RW}])"
                                         for j in range(nreq)) + ";"]
    if nwr:
        xin += ["  assign we = |sel[" + f"{nwr - 1}:0];",
                "  assign wd = " + " | ".join(f"({{{W}{{sel[{j}]}}}} & wdata[{(j + 1) * W - 1}:{j * W}])"
                                              for j in range(nwr)) + ";",
                "  assign wm = " + " | ".join(f"({{{W // 8}{{sel[{j}]}}}} & wmask[{(j + 1) * W // 8 - 1}:{j * W // 8}])"
                                              for j in range(nwr)) + ";"]
    else:
        xin += ["  assign we = 1'b0;", f"  assign wd = {W}'d0;", f"  assign wm = {W // 8}'d0;"]
    xin += ["endmodule", ""]
    terms = [f"((rb == {b} && rp == {p}) ? rd_all[{(b * P + p + 1) * W - 1}:{(b * P + p) * W}] : {W}'d0)"
             for b in range(NB) for p in range(P)]
    xout = [f"module xout_{lv.name} (input [{BW - 1}:0] rb, input [{CW - 1}:0] rp, input [{NB * P * W - 1}:0] rd_all,",
            f"  output [{W - 1}:0] q);",
            "  assign q = " + " | ".join(terms) + ";",
            "endmodule", ""]
    return {f"xin_{lv.name}": "\n".join(xin), f"xout_{lv.name}": "\n".join(xout)}


def fifo_module(name: str, width: int, depth: int) -> str:
    """A small first-in first-out buffer of vectors (the array's output queue to the writer)."""
    aw = clog2(depth)
    return "\n".join([
        f"module {name} (input clk, input rst, input push, input [{width - 1}:0] din, input pop,",
        f"  output [{width - 1}:0] dout, output empty, output full);",
        f"  reg [{width - 1}:0] m [0:{depth - 1}];",
        f"  reg [{aw - 1}:0] rp, wp; reg [{aw}:0] n;",
        "  assign dout = m[rp];",
        "  assign empty = n == 0;",
        f"  assign full = n == {depth};",
        "  always @(posedge clk) begin",
        "    if (rst) begin rp <= 0; wp <= 0; n <= 0; end",
        "    else begin",
        f"      if (push) begin m[wp] <= din; wp <= wp == {depth - 1} ? 0 : wp + 1; end",
        f"      if (pop) rp <= rp == {depth - 1} ? 0 : rp + 1;",
        "      n <= n + push - pop;",
        "    end",
        "  end",
        "endmodule", ""])


def level_requests(plan: Plan, lay: Layout) -> dict[str, list[tuple[str, int]]]:
    """Per level, the engines that use it in priority order with their lane counts: the writer first (it
    empties the output queue, whose back-pressure stops the array), then the operand streams the array
    consumes this step, the old-output reader last: it prefetches ahead and its values are needed only
    when the outputs leave the array, the skew later. When it falls behind (control.URGENT_LEAD) the
    stream readers of its level hold their requests for it. (With the old reader fixed second, a 16x16
    ws GEMM whose steps move 9 words through 8 bank ports starved its input stream: 262 waits on 1,776
    advances, now 12; with it fixed last and no urgency, conv2d ws starved the old reader instead.)"""
    lanes = {"S": plan.B, "X": plan.A, "Y": plan.B, "O": plan.B}
    order = [("wr", "O"), ("rd_S", "S"), ("rd_X", "X"), ("rd_Y", "Y"), ("old", "O")]
    out: dict[str, list[tuple[str, int]]] = {lv: [] for lv in lay.levels}
    for eng, role in order:
        if role in plan.operands:
            out[plan.operands[role].level].append((eng, lanes[role]))
    return out
