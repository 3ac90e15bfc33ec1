"""A reader's return path (Verilog text): what comes back from the banks, in the order it was asked for.

Each issued vector's context (its ring slot, which lanes fetched, from which request and offset, which
lanes hit their line) travels through a delay line as long as the bank latency; when it comes out, the
returned words, or the lanes' lines, are split into elements and written into the vector's slot of the
ring, which the array consumes in order (plugins/rtl/control.py builds the rest of the reader).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .datapath import clog2

if TYPE_CHECKING:
    from .control import Geometry


def return_ring(g: Geometry, S: int) -> list[str]:
    """A reader's return path: the context of each issued vector delayed by the bank latency, the
    returned words (or the lanes' lines) split into elements, and the ring of ``S`` vector slots."""
    NL, EB, W, IW, OW, Lt = g.NL, g.EB, g.lv.width, g.IW, g.OW, g.lv.latency
    SW = clog2(S)
    L = ["  assign head_valid = ready[h];",
         "  assign head = " + " : ".join(f"h == {s} ? slot_{s}" for s in range(S - 1)) + f" : slot_{S - 1};",
         f"  reg cx_v [0:{Lt - 1}]; reg cx_f [0:{Lt - 1}]; reg [{SW - 1}:0] cx_s [0:{Lt - 1}];",
         f"  reg [{NL - 1}:0] cx_lv [0:{Lt - 1}]; reg [{NL * IW - 1}:0] cx_li [0:{Lt - 1}]; "
         f"reg [{NL * OW - 1}:0] cx_of [0:{Lt - 1}]; reg [{NL - 1}:0] cx_h [0:{Lt - 1}];"]

    def cat(fmt: str) -> str:
        return "{" + ", ".join(fmt.format(i=i) for i in reversed(range(NL))) + "}"

    T = Lt - 1
    for i in range(NL):
        L.append(f"  wire [{IW - 1}:0] rl_{i} = cx_li[{T}][{(i + 1) * IW - 1}:{i * IW}];")
        L.append(f"  wire [{OW - 1}:0] ro_{i} = cx_of[{T}][{(i + 1) * OW - 1}:{i * OW}];")
        L.append(f"  wire [{W - 1}:0] rw_{i} = rdata[rl_{i} * {W} +: {W}];")
        L.append(f"  wire [{EB - 1}:0] re_{i} = rw_{i}[ro_{i} * {EB} +: {EB}];")
        L.append(f"  wire rv_{i} = rvalid[rl_{i}];")
        L.append(f"  wire [{EB - 1}:0] le_{i} = lw_{i}[ro_{i} * {EB} +: {EB}];")
    L.append("  integer q;")
    L.append("  always @(posedge clk) begin")
    L.append(f"    cx_v[0] <= !rst && can; cx_f[0] <= fin; cx_s[0] <= ip; cx_lv[0] <= {cat('v_{i}')}; "
             f"cx_li[0] <= {cat('li_{i}')}; cx_of[0] <= {cat('of_{i}')}; cx_h[0] <= {cat('hit_{i}')};")
    if Lt > 1:
        L.append(f"    for (q = 1; q < {Lt}; q = q + 1) begin cx_v[q] <= cx_v[q-1]; cx_f[q] <= cx_f[q-1]; "
                 "cx_s[q] <= cx_s[q-1]; cx_lv[q] <= cx_lv[q-1]; cx_li[q] <= cx_li[q-1]; "
                 "cx_of[q] <= cx_of[q-1]; cx_h[q] <= cx_h[q-1]; end")
    L.append("    if (rst) begin cnt <= 0; h <= 0; ip <= 0; ready <= 0; end")
    L.append("    else begin")
    L.append("      cnt <= cnt + fin - (pop && ready[h]);")
    L.append(f"      if (fin) ip <= ip == {S - 1} ? 0 : ip + 1;")
    L.append(f"      if (pop && ready[h]) begin ready[h] <= 0; h <= h == {S - 1} ? 0 : h + 1; end")
    L.append(f"      if (cx_v[{T}] && cx_f[{T}]) ready[cx_s[{T}]] <= 1;")
    for s in range(S):
        for i in range(NL):
            sl = f"slot_{s}[{(i + 1) * EB - 1}:{i * EB}]"
            L.append(f"      if (cx_v[{T}] && cx_s[{T}] == {s}) begin if (cx_lv[{T}][{i}]) begin "
                     f"if (cx_h[{T}][{i}]) begin if (cx_f[{T}]) {sl} <= le_{i}; end else if (rv_{i}) {sl} <= re_{i}; "
                     f"end else if (cx_f[{T}]) {sl} <= 0; end")
    for i in range(NL):  # a fetched word fills its lanes' line registers
        L.append(f"      if (cx_v[{T}] && cx_lv[{T}][{i}] && !cx_h[{T}][{i}] && rv_{i}) lw_{i} <= rw_{i};")
    L.append("    end")
    L.append("  end")
    return L
