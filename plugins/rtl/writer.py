"""Verilog of the writer: adds the array's output vectors to the old values and writes them back,
combining per lane.

Each lane keeps one word being combined (tag, data, byte mask). A vector's element joins its
lane's word when the lane is still on that word; a lane that moves to another word first writes
its combined word back (lanes holding the same word write it together, as one masked write), and
at the end of every fold all lanes write back what they hold before the fold counts as done. So a
lane that walks consecutive elements of one word (an int32 output along the stream, 4 to a 128-bit
word) writes that word once instead of once per element, and the reader of old outputs, which
waits for the writer's finished folds (plugins/rtl/control.py), sees every value of the previous
fold in the buffer.
"""

from __future__ import annotations

from llmulator.buflayout import Layout
from llmulator.pearray import Plan

from .control import Walker, bank_row, geometry, lane_wires, ports_decl, walker_step_end


def writer_module(plan: Plan, lay: Layout) -> str:
    g = geometry(plan, lay, "wr")
    NL, EB, W, IW = g.NL, g.EB, g.lv.width, g.IW
    M = W // 8
    wk = Walker(plan, "", g.inner)
    D, wires, init, step = wk.build()
    L = ["module wr (input clk, input rst, input start,",
         f"  input in_valid, input [{NL * EB - 1}:0] in_vec, input old_valid, input [{NL * EB - 1}:0] old_vec,",
         "  output in_ready, output reg [31:0] folds_done, output [31:0] vecs_done, output done,"]
    L += ports_decl(g) + D
    L += ["  reg active; reg fph; reg [31:0] vm;", f"  reg [{NL * EB - 1}:0] cur; reg cur_v;"]
    wires += lane_wires(plan, g, wk)
    for i in range(NL):
        L.append(f"  reg [{g.AW - 1}:0] ct_{i}; reg cv_{i}; reg [{W - 1}:0] cd_{i}; reg [{M - 1}:0] cm_{i}; "
                 f"reg [31:0] cf_{i};")
        # vectors of this fold every element of which is in the buffer: before the first one a lane holds
        prev = "vm" if i == 0 else f"fv_{i - 1}"
        wires.append(f"  wire [31:0] fv_{i} = (cv_{i} && cf_{i} < {prev}) ? cf_{i} : {prev};")
        # the lane writes its word back: the fold is ending, or its next element is in another word
        wires.append(f"  wire fl_{i} = cv_{i} && (fph || (cur_v && v_{i} && ct_{i} != wd_{i}));")
        lead = f"fl_{i}" if i == 0 else f"fl_{i} && (!fl_{i - 1} || ct_{i} != ct_{i - 1})"
        wires.append(f"  wire fd_{i} = {lead};")
        prev = f"fi_{i - 1}" if i else f"{IW}'d0"
        wires.append(f"  wire [{IW - 1}:0] fi_{i} = fd_{i} ? {IW}'d{i} : {prev};")
        wires += bank_row(g, i, f"ct_{i}")
        wires.append(f"  wire fg_{i} = fl_{i} && gnt[fi_{i}];")  # written back this cycle
        wires.append(f"  wire [{W - 1}:0] ed_{i} = ({{{W}'d0}} | cur[{(i + 1) * EB - 1}:{i * EB}]) << (of_{i} * {EB});")
        wires.append(f"  wire [{M - 1}:0] em_{i} = ({{{M}'d0}} | {{{EB // 8}{{1'b1}}}}) << (of_{i} * {EB // 8});")
    L += wires
    for j in range(NL):  # a leader's write gathers the lanes that hold the same word
        sel = [f"(fl_{i} && fi_{i} == {j})" for i in range(j, NL)]
        L.append(f"  assign wdata[{(j + 1) * W - 1}:{j * W}] = "
                 + " | ".join(f"({c} ? cd_{i} : {W}'d0)" for c, i in zip(sel, range(j, NL), strict=True)) + ";")
        L.append(f"  assign wmask[{(j + 1) * M - 1}:{j * M}] = "
                 + " | ".join(f"({c} ? cm_{i} : {M}'d0)" for c, i in zip(sel, range(j, NL), strict=True)) + ";")
    waiting = " || ".join(f"(fl_{i} && !fg_{i})" for i in range(NL))
    L.append("  assign req = active ? {" + ", ".join(f"fd_{i}" for i in reversed(range(NL))) + "} : 0;")
    # the vector merges once no lane waits to write back first (a lane written back this cycle starts anew)
    L.append(f"  wire mg = active && !walk_done && cur_v && !({waiting});")
    sums = ", ".join(f"in_vec[{(i + 1) * EB - 1}:{i * EB}] + old_vec[{(i + 1) * EB - 1}:{i * EB}]"
                     for i in reversed(range(NL)))
    L.append(f"  wire [{NL * EB - 1}:0] sum = {{{sums}}};")
    L.append("  wire load = in_valid && old_valid && (!cur_v || mg);")
    L.append("  assign in_ready = load;")
    L.append("  assign done = walk_done && !fph;")
    L.append(f"  assign vecs_done = fv_{NL - 1};")
    clear = " ".join(f"cv_{i} <= 0;" for i in range(NL))
    L.append("  always @(posedge clk) begin")
    L.append(f"    if (rst) begin active <= 0; walk_done <= 0; cur_v <= 0; folds_done <= 0; vm <= 0; fph <= 0; "
             f"{clear} end")
    L.append("    else if (start) begin active <= 1; fph <= 0; " + " ".join(init) + " end")
    L.append("    else begin")
    L.append("      if (load) begin cur <= sum; cur_v <= 1; end else if (mg) cur_v <= 0;")
    L += [f"      if (fl_{i} && gnt[fi_{i}]) cv_{i} <= 0;" for i in range(NL)]
    # the fold is done in the cycle its last words are written back
    L.append(f"      if (fph && !({waiting})) begin fph <= 0; folds_done <= folds_done + 1; vm <= 0; end")
    L.append("      if (mg) begin")
    for i in range(NL):
        keep = f"(cv_{i} && !fg_{i})"
        L.append(f"        if (v_{i}) begin ct_{i} <= wd_{i}; cv_{i} <= 1; "
                 f"cd_{i} <= ({keep} ? cd_{i} : {W}'d0) | ed_{i}; cm_{i} <= ({keep} ? cm_{i} : {M}'d0) | em_{i}; "
                 f"if (!{keep}) cf_{i} <= fph ? 0 : vm; end")
    L.append("        vm <= (fph ? 0 : vm) + 1;")
    L.append("        if (fold_end) fph <= 1;")
    return "\n".join(L + walker_step_end(step))
