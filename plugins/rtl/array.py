"""Verilog of the PE array: the PE, the A x B grid with its edge skews, and the trees that carry its controls.

Everything in the array moves on ``adv``: the controller advances the array one step when the operands
of the step are at the edges and the output has room, so a memory stall freezes the array instead of
corrupting it. That one enable reaches every register of the array (22k flip-flop inputs at 16x16; the
output-stationary ``drain`` reaches every accumulator), and synthesis maps each unique module once (one
PE module for all PEs), so ABC, which buffers and sizes only the nets driven inside a module, cannot
buffer a net that enters a module through a port: written as one wire, ``adv`` was one gate driving
every register, 302 of the 389 ns critical path of a 16x16 array (docs/rtl-crosscheck.md). Here each
such control is carried as a designer writes a high-fan-out net, through a tree of ``adv_buf``
instances, at most ``FANOUT`` loads per buffer, each leaf enabling one PE or at most ``CHUNK_BITS``
skew-register bits. In the synthesised text a buffer is the liberty's ``BUFX4`` cell (an instance
ABC cannot see through, as it saw through two inverters and wired the port straight on); in the
simulated text it is a wire, so simulation and its cycle counts do not change.
"""

from __future__ import annotations

from llmulator.pearray import Plan

FANOUT = 16       # loads (buffer inputs, PE control ports) one adv_buf drives
CHUNK_BITS = 64   # skew-register bits one leaf of the tree enables
BUFFER_CELL = "BUFX4"  # the liberty cell of a buffer in the synthesised text (osu018_stdcells)


def _ext(expr: str, src_bits: int, dst_bits: int, signed: bool) -> str:
    """``expr`` (``src_bits`` wide) extended or truncated to ``dst_bits``."""
    if src_bits == dst_bits:
        return expr
    if src_bits > dst_bits:
        return f"{expr}[{dst_bits - 1}:0]"
    fill = f"{{{dst_bits - src_bits}{{{expr}[{src_bits - 1}]}}}}" if signed else f"{{{dst_bits - src_bits}{{1'b0}}}}"
    return f"{{{fill}, {expr}}}"


def _product(a: str, abits: int, asig: bool, b: str, bbits: int, bsig: bool, obits: int) -> list[str]:
    """Lines computing ``prod`` = a * b, as wide as the output (two's complement, wrapping like NumPy)."""
    # a full-width product of the operands (one extra bit when one is unsigned), then extended: a
    # multiplier as wide as the operands, not as wide as the accumulator
    w = abits + bbits + (1 if asig != bsig else 0)
    return [f"  wire [{w - 1}:0] ax = {_ext(a, abits, w, asig)};",
            f"  wire [{w - 1}:0] bx = {_ext(b, bbits, w, bsig)};",
            f"  wire [{w - 1}:0] pw = ax * bx;",
            f"  wire [{obits - 1}:0] prod = {_ext('pw', w, obits, asig or bsig)};"]


def pe_module(plan: Plan) -> str:
    o = plan.operands
    ob = o["O"].bits
    xb = o["X"].bits
    if plan.shape == "psum":
        sb = o["S"].bits
        return "\n".join([
            "// one PE: a stationary operand register, a MAC, the west->east operand and north->south partial sum",
            "module pe (input clk, input rst, input adv, input load,",
            f"  input [{sb - 1}:0] s_in, input [{xb - 1}:0] x_in, input [{ob - 1}:0] p_in,",
            f"  output reg [{xb - 1}:0] x_out, output reg [{ob - 1}:0] p_out);",
            f"  reg [{sb - 1}:0] w;",
            *_product("w", sb, o["S"].signed, "x_in", xb, o["X"].signed, ob),
            "  always @(posedge clk) begin",
            "    if (rst) begin w <= 0; x_out <= 0; p_out <= 0; end",
            "    else if (adv) begin",
            "      if (load) w <= s_in;",
            "      x_out <= x_in;",
            "      p_out <= p_in + prod;",
            "    end",
            "  end",
            "endmodule", ""])
    yb = o["Y"].bits
    return "\n".join([
        "// one PE: an output accumulator, a MAC, west->east and north->south operands; drain shifts the",
        "// accumulators up one row per step",
        "module pe (input clk, input rst, input adv, input drain,",
        f"  input [{xb - 1}:0] x_in, input [{yb - 1}:0] y_in, input [{ob - 1}:0] acc_in,",
        f"  output reg [{xb - 1}:0] x_out, output reg [{yb - 1}:0] y_out, output reg [{ob - 1}:0] acc);",
        *_product("x_in", xb, o["X"].signed, "y_in", yb, o["Y"].signed, ob),
        "  always @(posedge clk) begin",
        "    if (rst) begin acc <= 0; x_out <= 0; y_out <= 0; end",
        "    else if (adv) begin",
        "      x_out <= x_in;",
        "      y_out <= y_in;",
        "      acc <= drain ? acc_in : acc + prod;",
        "    end",
        "  end",
        "endmodule", ""])


def buf_module(synth: bool = False) -> str:
    """One buffer of a control's tree (module docstring): the liberty's buffer cell in the synthesised
    text, a wire in the simulated one."""
    body = f"  {BUFFER_CELL} u_b (.A(i), .Y(o));" if synth else "  assign o = i;"
    return "\n".join(["// one buffer of a control's fan-out tree in the PE array (plugins/rtl/array.py)",
                      "module adv_buf (input i, output o);", body, "endmodule", ""])


def fanout_tree(src: str, leaves: list[str], fanout: int | None = None, name: str | None = None) -> list[str]:
    """Lines declaring every wire in ``leaves`` as ``src`` carried through ``adv_buf`` instances, none of
    which (and not ``src``) drives more than ``fanout`` of them: leaves are driven by buffers, buffers in
    groups of ``fanout`` by the buffers of the level above, up to at most ``fanout`` buffers on ``src``
    (default FANOUT). ``name``: the prefix of the tree's inner wires (default ``src``)."""
    fanout = fanout or FANOUT
    name = name or src
    L = [f"  wire {', '.join(leaves)};"] if leaves else []
    level, depth = list(leaves), 0
    while level:
        if len(level) <= fanout:
            L += [f"  adv_buf u_{w} (.i({src}), .o({w}));" for w in level]
            break
        groups = [level[i:i + fanout] for i in range(0, len(level), fanout)]
        drivers = [f"{name}_t{depth}_{g}" for g in range(len(groups))]
        L.append(f"  wire {', '.join(drivers)};")
        for d, group in zip(drivers, groups, strict=True):
            L += [f"  adv_buf u_{w} (.i({d}), .o({w}));" for w in group]
        level, depth = drivers, depth + 1
    return L


def _chain(name: str, bits: int, stages: int, first: str, leaf: str) -> tuple[list[str], list[str]]:
    """A skew chain of ``stages`` registers ``name_0 .. name_{stages-1}`` (``bits`` wide) fed by ``first``,
    split into groups of at most CHUNK_BITS bits, each enabled by its own leaf ``leaf_<group>``:
    (declaration and register lines, leaf names)."""
    per = max(1, CHUNK_BITS // max(bits, 1))
    decl = [f"  reg [{bits - 1}:0] " + ", ".join(f"{name}_{i}" for i in range(stages)) + ";"]
    leaves = []
    for g, lo in enumerate(range(0, stages, per)):
        idx = range(lo, min(stages, lo + per))
        en = f"{leaf}_{g}"
        leaves.append(en)
        resets = " ".join(f"{name}_{i} <= 0;" for i in idx)
        moves = " ".join(f"{name}_{i} <= {first if i == 0 else f'{name}_{i - 1}'};" for i in idx)
        decl.append(f"  always @(posedge clk) if (rst) begin {resets} end else if ({en}) begin {moves} end")
    return decl, leaves


def _lane(vec: str, i: int, bits: int) -> str:
    return f"{vec}[{(i + 1) * bits - 1}:{i * bits}]"


def _grid(plan: Plan, body: list[str], leaves: list[str]) -> list[str]:
    """The PEs (appended to ``body``): every PE's advance enable a leaf of ``adv``'s tree (appended to
    ``leaves``) and, output stationary, a leaf of ``drain``'s; a row's load select in groups of FANOUT
    PEs. Returns the lines of the drain and load trees."""
    A, B = plan.A, plan.B
    o = plan.operands
    ob, xb = o["O"].bits, o["X"].bits
    psum = plan.shape == "psum"
    for a in range(A):
        for b in range(B):
            body.append(f"  wire [{xb - 1}:0] x_{a}_{b};")
            if psum:
                body.append(f"  wire [{ob - 1}:0] p_{a}_{b};")
            else:
                body += [f"  wire [{o['Y'].bits - 1}:0] y_{a}_{b};", f"  wire [{ob - 1}:0] c_{a}_{b};"]
    trees, drains = [], []
    for a in range(A):
        if psum:
            groups = [f"ld_{a}_{g}" for g in range((B + FANOUT - 1) // FANOUT)]
            trees += fanout_tree(f"load_row[{a}]", groups, name=f"ld_{a}")
        for b in range(B):
            en = f"en_pe_{a}_{b}"
            leaves.append(en)
            xin = f"xw_{a}" if b == 0 else f"x_{a}_{b - 1}"
            if psum:
                pin = f"{ob}'d0" if a == 0 else f"p_{a - 1}_{b}"
                body.append(f"  pe u_pe_{a}_{b} (.clk(clk), .rst(rst), .adv({en}), .load(ld_{a}_{b // FANOUT}), "
                            f".s_in({_lane('s_vec', b, o['S'].bits)}), .x_in({xin}), .p_in({pin}), "
                            f".x_out(x_{a}_{b}), .p_out(p_{a}_{b}));")
            else:
                drains.append(f"dr_pe_{a}_{b}")
                yin = f"yn_{b}" if a == 0 else f"y_{a - 1}_{b}"
                cin = f"{ob}'d0" if a == A - 1 else f"c_{a + 1}_{b}"
                body.append(f"  pe u_pe_{a}_{b} (.clk(clk), .rst(rst), .adv({en}), .drain(dr_pe_{a}_{b}), "
                            f".x_in({xin}), .y_in({yin}), .acc_in({cin}), .x_out(x_{a}_{b}), .y_out(y_{a}_{b}), "
                            f".acc(c_{a}_{b}));")
    return trees + fanout_tree("drain", drains)


def _edge_skew(body: list[str], leaves: list[str], vec: str, reg: str, out: str, lanes: int, bits: int) -> None:
    """Lane i of ``vec`` delayed by i registers (``reg_i_*``, enabled by leaves appended to ``leaves``) into
    the wire ``out_i`` (lines appended to ``body``)."""
    for i in range(lanes):
        if i == 0:
            body.append(f"  wire [{bits - 1}:0] {out}_0 = {_lane(vec, 0, bits)};")
            continue
        decl, lv = _chain(f"{reg}_{i}", bits, i, _lane(vec, i, bits), f"en_{reg}_{i}")
        body += decl + [f"  wire [{bits - 1}:0] {out}_{i} = {reg}_{i}_{i - 1};"]
        leaves += lv


def array_module(plan: Plan) -> str:
    """The A x B grid with its edge skew (west lanes delayed by their row, north by their column), for
    partial sums the de-skew that lines a step's outputs up into one vector, and the enable tree."""
    A, B = plan.A, plan.B
    o = plan.operands
    ob, xb = o["O"].bits, o["X"].bits
    psum = plan.shape == "psum"
    if psum:
        sb = o["S"].bits
        L = ["module pe_array (input clk, input rst, input adv, input in_valid,",
             f"  input [{A - 1}:0] load_row, input [{B * sb - 1}:0] s_vec, input [{A * xb - 1}:0] x_vec,",
             f"  output [{B * ob - 1}:0] out_vec, output out_valid);"]
    else:
        yb = o["Y"].bits
        L = ["module pe_array (input clk, input rst, input adv, input drain,",
             f"  input [{A * xb - 1}:0] x_vec, input [{B * yb - 1}:0] y_vec,",
             f"  output [{B * ob - 1}:0] out_vec);"]
    body, leaves = [], []
    # west skew: lane a through a registers; (os) north skew: lane b through b registers
    _edge_skew(body, leaves, "x_vec", "xs", "xw", A, xb)
    if not psum:
        _edge_skew(body, leaves, "y_vec", "ys", "yn", B, o["Y"].bits)
    trees = _grid(plan, body, leaves)
    if psum:
        # de-skew: column b's bottom output waits B-1-b steps; a valid bit follows the A+B-2 step latency
        for b in range(B):
            n = B - 1 - b
            if n == 0:
                body.append(f"  assign {_lane('out_vec', b, ob)} = p_{A - 1}_{b};")
                continue
            decl, lv = _chain(f"ds_{b}", ob, n, f"p_{A - 1}_{b}", f"en_ds_{b}")
            body += decl + [f"  assign {_lane('out_vec', b, ob)} = ds_{b}_{n - 1};"]
            leaves += lv
        lat = A + B - 1
        leaves.append("en_valid")
        body += [f"  reg [{lat - 1}:0] vchain;", f"  assign out_valid = vchain[{lat - 1}];",
                 "  always @(posedge clk) if (rst) vchain <= 0; else if (en_valid) vchain <= "
                 + (f"{{vchain[{lat - 2}:0], in_valid}};" if lat > 1 else "in_valid;")]
    else:
        body += [f"  assign {_lane('out_vec', b, ob)} = c_0_{b};" for b in range(B)]
    L += fanout_tree("adv", leaves) + trees + body + ["endmodule", ""]
    return "\n".join(L)
