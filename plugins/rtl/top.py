"""The top module (controller + instances) and the whole design's Verilog text.

The controller runs every fold as the spec's loop nest says: (psum) preload the stationary operand
one array row per step, stream the fold's steps, drain the array's A+B-1 step latency; (os) stream,
wait the A+B-2 steps until the far corner has its last product, shift the accumulators out one row
per step. A 64-bit counter counts the cycles from start to the last write: the profile's cycles.
"""

from __future__ import annotations

import attrs
from llmulator.banks import FIFO_DEPTH  # noqa: E402  (the output queue between the array and the writer)
from llmulator.buflayout import Layout
from llmulator.pearray import Plan

from . import array, control, datapath


@attrs.frozen
class Rtl:
    """The generated design: Verilog text per module (unique modules only) and what the testbench needs."""

    modules: dict[str, str]        # name -> text (simulation versions)
    synth_modules: dict[str, str]  # name -> text as synthesised (bank stand-ins)
    engines: tuple[str, ...]
    levels: tuple[str, ...]

    def text(self, synth: bool = False) -> str:
        mods = self.synth_modules if synth else self.modules
        return "\n".join(mods.values())


def top_module(plan: Plan, lay: Layout, engines: list[str], reqs: dict[str, list[tuple[str, int]]]) -> str:
    o = plan.operands
    A, B = plan.A, plan.B
    ob = o["O"].bits
    L = ["module accel (input clk, input rst, input start, output done, output reg [63:0] cycles"]
    for lv in lay.levels:
        L[-1] += f", output [31:0] reads_{lv}, output [31:0] writes_{lv}"
    L[-1] += ");"
    lanes = {"rd_S": B, "rd_X": A, "rd_Y": B, "old": B, "wr": B}
    for e in engines:
        role = control.ROLE_OF[e]
        lv = lay.levels[lay.placed[role].level]
        n = lanes[e]
        L.append(f"  wire [{n - 1}:0] {e}_req, {e}_gnt, {e}_rv; wire [{n * datapath.clog2(lv.banks) - 1}:0] {e}_bank;")
        L.append(f"  wire [{n * datapath.clog2(lv.depth) - 1}:0] {e}_row; wire [{n * lv.width - 1}:0] {e}_wd, {e}_rd; "
                 f"wire [{n * lv.width // 8 - 1}:0] {e}_wm;")
    # controller state
    L += ["  localparam IDLE = 0, PRE = 1, STR = 2, WAIT = 3, DRAIN = 4, FLUSH = 5, FIN = 6;",
          "  reg [2:0] st; reg [15:0] k; reg [15:0] cnt; reg walk_end;",
          "  wire wq_full, wq_empty; wire wr_ready, wr_done; wire [31:0] wr_folds, wr_vecs;",
          f"  wire [{B * ob - 1}:0] out_vec, wq_out; wire out_valid;"]
    heads = {"S": "rd_S", "X": "rd_X", "Y": "rd_Y"}
    for role, e in heads.items():
        if e in engines:
            bits = o[role].bits
            n = lanes[e]
            L.append(f"  wire {role}_v; wire [{n * bits - 1}:0] {role}_h;")
    old_bits = o["O"].bits
    L.append(f"  wire old_v, old_urgent; wire [{B * old_bits - 1}:0] old_h;")
    ready = "X_v" + (" && Y_v" if plan.shape == "os" else "")
    L.append(f"  wire adv = st == PRE ? (S_v && !wq_full) : st == STR ? ({ready} && !wq_full) : "
             "(st == WAIT || st == DRAIN) ? !wq_full : 1'b0;" if plan.shape == "psum" else
             f"  wire adv = st == STR ? ({ready} && !wq_full) : (st == WAIT || st == DRAIN) ? !wq_full : 1'b0;")
    cw = control.Walker(plan, "c_", "stream")
    D, wires, init, step = cw.build()
    L += D + wires
    L.append("  assign done = st == FIN;")
    # engines
    for e in engines:
        role = control.ROLE_OF[e]
        mem = (f".req({e}_req), .bank({e}_bank), .row({e}_row), .wdata({e}_wd), .wmask({e}_wm), .gnt({e}_gnt), "
               f".rvalid({e}_rv), .rdata({e}_rd)")
        if e == "wr":
            L.append(f"  wr u_wr (.clk(clk), .rst(rst), .start(start), .in_valid(!wq_empty), .in_vec(wq_out), "
                     f".old_valid(old_v), .old_vec(old_h), .in_ready(wr_ready), .folds_done(wr_folds), "
                     f".vecs_done(wr_vecs), .done(wr_done), {mem});")
        elif e == "old":
            L.append(f"  old u_old (.clk(clk), .rst(rst), .start(start), .pop(wr_ready), .head_valid(old_v), "
                     f".head(old_h), .fold_limit(wr_folds), .vec_limit(wr_vecs), .urgent(old_urgent), {mem});")
        else:
            pop = "st == PRE && adv" if role == "S" else "st == STR && adv"
            hold = "old_urgent && (out_valid || !wq_empty)" if o[role].level == o["O"].level else "1'b0"
            L.append(f"  {e} u_{e} (.clk(clk), .rst(rst), .start(start), .pop({pop}), .hold({hold}), "
                     f".head_valid({role}_v), .head({role}_h), {mem});")
    L.append("  out_fifo u_wq (.clk(clk), .rst(rst), .push(adv && out_valid), .din(out_vec), .pop(wr_ready), "
             ".dout(wq_out), .empty(wq_empty), .full(wq_full));")
    # the array
    if plan.shape == "psum":
        xb = o["X"].bits
        L.append(f"  wire [{A - 1}:0] load_row = st == PRE ? ({A}'d1 << k) : {A}'d0;")
        L.append(f"  pe_array u_array (.clk(clk), .rst(rst), .adv(adv), .in_valid(st == STR), .load_row(load_row), "
                 f".s_vec(S_h), .x_vec(st == STR ? X_h : {A * xb}'d0), .out_vec(out_vec), .out_valid(out_valid));")
    else:
        xb, yb = o["X"].bits, o["Y"].bits
        L.append("  assign out_valid = st == DRAIN;")
        L.append(f"  pe_array u_array (.clk(clk), .rst(rst), .adv(adv), .drain(st == DRAIN), "
                 f".x_vec(st == STR ? X_h : {A * xb}'d0), .y_vec(st == STR ? Y_h : {B * yb}'d0), .out_vec(out_vec));")
    # buffers
    for lv, lst in reqs.items():
        cat = lambda sfx, lst=lst: "{" + ", ".join(f"{e}_{sfx}" for e, _ in reversed(lst)) + "}"  # noqa: E731
        we = "{" + ", ".join(f"{{{n}{{1'b{1 if e == 'wr' else 0}}}}}" for e, n in reversed(lst)) + "}"
        L.append(f"  buf_{lv} u_buf_{lv} (.clk(clk), .rst(rst), .req({cat('req')}), .bank({cat('bank')}), "
                 f".row({cat('row')}), .we({we}), .wdata({cat('wd')}), .wmask({cat('wm')}), .gnt({cat('gnt')}), "
                 f".rvalid({cat('rv')}), .rdata({cat('rd')}), .reads(reads_{lv}), .writes(writes_{lv}));")
    # controller
    after_stream = "DRAIN" if plan.shape == "psum" else ("WAIT" if A + B - 2 > 0 else "DRAIN")
    stream_cnt = A + B - 1 if plan.shape == "psum" else (A + B - 2 if A + B - 2 > 0 else A)
    first = "PRE" if plan.shape == "psum" else "STR"
    L += ["  always @(posedge clk) begin",
          "    if (rst) begin st <= IDLE; cycles <= 0; k <= 0; cnt <= 0; walk_end <= 0; end",
          "    else begin",
          "      if (st != IDLE && st != FIN) cycles <= cycles + 1;",
          "      case (st)",
          f"        IDLE: if (start) begin st <= {first}; k <= 0; cycles <= 0; " + " ".join(init) + " end",
          f"        PRE: if (adv) begin k <= k + 1; if (k == {A - 1}) begin st <= STR; k <= 0; end end",
          "        STR: if (adv) begin",
          "          " + " ".join(step),
          f"          if (c_fold_end) begin st <= {after_stream}; cnt <= {stream_cnt}; walk_end <= c_all_tlast; end",
          "        end",
          f"        WAIT: if (adv) begin cnt <= cnt - 1; if (cnt == 1) begin st <= DRAIN; cnt <= {A}; end end",
          f"        DRAIN: if (adv) begin cnt <= cnt - 1; if (cnt == 1) st <= walk_end ? FLUSH : {first}; end",
          "        FLUSH: if (wr_done) st <= FIN;",
          "        default: ;",
          "      endcase",
          "    end",
          "  end",
          "endmodule", ""]
    return "\n".join(L)


def generate(plan: Plan, lay: Layout) -> Rtl:
    engines = ["wr", "old"] + [e for e, r in (("rd_S", "S"), ("rd_X", "X"), ("rd_Y", "Y")) if r in plan.operands]
    reqs = datapath.level_requests(plan, lay)
    mods: dict[str, str] = {"adv_buf": array.buf_module(), "pe": array.pe_module(plan),
                            "pe_array": array.array_module(plan)}
    for e in engines:
        mods[e] = control.engine_module(plan, lay, e)
    mods["out_fifo"] = datapath.fifo_module("out_fifo", plan.B * plan.operands["O"].bits, FIFO_DEPTH)
    synth = dict(mods)
    synth["adv_buf"] = array.buf_module(synth=True)  # the liberty's buffer cell (array.py)
    for name, lv in lay.levels.items():
        nreq = sum(n for _, n in reqs[name])
        nwr = sum(n for e, n in reqs[name] if e == "wr")
        assert all(e == "wr" for e, _ in reqs[name][:1]) or not nwr   # the writer's lanes come first
        mods[f"bank_{name}"] = datapath.bank_module(lv, sim=True)
        synth[f"bank_{name}"] = datapath.bank_module(lv, sim=False)
        for m, text in datapath.xbar_modules(lv, nreq, nwr).items():
            mods[m] = synth[m] = text
        mods[f"buf_{name}"] = synth[f"buf_{name}"] = datapath.buffer_module(lv, nreq, nwr)
    mods["accel"] = synth["accel"] = top_module(plan, lay, engines, reqs)
    return Rtl(mods, synth, tuple(engines), tuple(lay.levels))
