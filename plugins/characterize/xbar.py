"""The buffer's crossbar as measured structures: the rtl profiler's own ``xin`` and ``xout`` modules.

The generated buffer (plugins/rtl/datapath.buffer_module) routes requests to bank ports and read data back
through two small combinational modules instantiated many times: ``xin`` (one per bank port: the granted
request's address, and the writer's data and byte mask, selected by a one-hot grant) and ``xout`` (one per
reading lane: the word of the bank port that served it, selected by bank and port number). Both are AND-OR
selection, so their logic grows with their crosspoints, one per (select input x bit):

* ``xin``: requests x address bits + the writer's lanes x (data + mask bits), per bank port;
* ``xout``: bank ports x word bits, per reading lane.

Each is measured at one reference geometry (below) inside a registered wrapper, like an operator (every
input and output in a flip-flop, so the paths are timed and the inputs switch cleanly): ``area_um2`` is the
logic alone (the wrapper's flip-flops left out) per crosspoint; ``energy_pj`` the combinational energy per
cycle per crosspoint with every input random every cycle (a new grant and new data each cycle: an upper
figure), ``idle_energy_pj`` with the inputs held. The area model (llmulator.periphery) uses the area; the
energy of the real crossbar depends on which port each lane last took and how often that port reads, which
a per-crosspoint figure does not capture (docs/rtl-crosscheck.md, "The buffer module").
"""

from __future__ import annotations

from types import SimpleNamespace

from llmulator_plugins.rtl.datapath import clog2 as _clog2

XIN = {"requests": 8, "writers": 2, "width": 32, "depth": 256}     # 8 address bits
XOUT = {"banks": 4, "ports": 2, "width": 32}
KINDS = ("xbar_in", "xbar_out")


def xin_crosspoints(requests: int, writers: int, addr_bits: int, width: int) -> int:
    """Select inputs x bits of one ``xin`` (datapath.xbar_modules): the address of every request, the data
    and byte mask of every writer lane."""
    return requests * addr_bits + writers * (width + width // 8)


def xout_crosspoints(bank_ports: int, width: int) -> int:
    """Select inputs x bits of one ``xout``: a word of every bank port."""
    return bank_ports * width


def _wrapped(inner: str, ins: list[tuple[str, int]], outs: list[tuple[str, int]], name: str) -> str:
    """``inner`` with every input and output registered: module ``name`` (clk + the same ports)."""
    decl = ", ".join(["input clk"] + [f"input [{w - 1}:0] {n}" for n, w in ins]
                     + [f"output reg [{w - 1}:0] {n}" for n, w in outs])
    L = [f"module {name} ({decl});"]
    L += [f"  reg [{w - 1}:0] {n}_r;" for n, w in ins]
    L += [f"  wire [{w - 1}:0] {n}_w;" for n, w in outs]
    conns = ", ".join([f".{n}({n}_r)" for n, _ in ins] + [f".{n}({n}_w)" for n, _ in outs])
    L.append(f"  {inner} u_x ({conns});")
    L.append("  always @(posedge clk) begin " + " ".join(f"{n}_r <= {n};" for n, _ in ins)
             + " " + " ".join(f"{n} <= {n}_w;" for n, _ in outs) + " end")
    L += ["endmodule", ""]
    return "\n".join(L)


def xbar_structure(kind: str):
    """The Structure of ``xbar_in`` or ``xbar_out`` at the reference geometry (register_bits: its crosspoints,
    the unit of the entry)."""
    from llmulator_plugins.rtl.datapath import xbar_modules

    from .structures import Structure
    if kind == "xbar_in":
        g = XIN
        lv = SimpleNamespace(name="X", ports=1, width=g["width"], banks=1, depth=g["depth"])
        mods = xbar_modules(lv, g["requests"], g["writers"])
        RW, W, n = _clog2(g["depth"]), g["width"], g["requests"]
        ins = [("sel", n), ("row", n * RW), ("wdata", g["writers"] * W), ("wmask", g["writers"] * W // 8)]
        outs = [("en", 1), ("we", 1), ("ad", RW), ("wd", W), ("wm", W // 8)]
        cross = xin_crosspoints(n, g["writers"], RW, W)
        name = f"xbar_in_{n}r{g['writers']}w_{W}"
        what = (f"buffer crossbar, bank-port side (the rtl profiler's xin: {n} requests' {RW}-bit addresses and "
                f"{g['writers']} writer lanes' {W}-bit data and mask, one-hot select; {cross} crosspoints)")
    elif kind == "xbar_out":
        g = XOUT
        lv = SimpleNamespace(name="X", ports=g["ports"], width=g["width"], banks=g["banks"], depth=256)
        mods = xbar_modules(lv, 1, 0)
        BW, CW, W, NP = _clog2(g["banks"]), _clog2(g["ports"] + 1) + 1, g["width"], g["banks"] * g["ports"]
        ins = [("rb", BW), ("rp", CW), ("rd_all", NP * W)]
        outs = [("q", W)]
        cross = xout_crosspoints(NP, W)
        name = f"xbar_out_{NP}x{W}"
        what = (f"buffer crossbar, lane side (the rtl profiler's xout: the word of one of {g['banks']} banks x "
                f"{g['ports']} ports, {W} bits, selected by bank and port number; {cross} crosspoints)")
    else:
        raise ValueError(f"unknown crossbar structure '{kind}'")
    inner_name = "xin_X" if kind == "xbar_in" else "xout_X"
    text = ("// the rtl profiler's crossbar module (plugins/rtl/datapath.xbar_modules) in a registered wrapper, "
            "generated by llmulator characterize\n" + mods[inner_name] + "\n" + _wrapped(inner_name, ins, outs, name))
    return Structure(kind, 1, 0, name, text, tuple(ins), tuple(outs), cross, what)


def draw(kind: str) -> str:
    """The testbench's random draw of every input (the task body): a one-hot grant (xin) or a valid bank and
    port number (xout), random addresses and data."""
    rnd = "$random(seed)"
    if kind == "xbar_in":
        n, W = XIN["requests"], XIN["width"]
        words = (n * _clog2(XIN["depth"]) + 31) // 32
        return (f"sel = 1 << ($unsigned({rnd}) % {n}); row = {{{', '.join([rnd] * words)}}}; "
                f"wdata = {{{', '.join([rnd] * ((XIN['writers'] * W + 31) // 32))}}}; wmask = {rnd};")
    g = XOUT
    words = (g["banks"] * g["ports"] * g["width"] + 31) // 32
    return (f"rb = $unsigned({rnd}) % {g['banks']}; rp = $unsigned({rnd}) % {g['ports']}; "
            f"rd_all = {{{', '.join([rnd] * words)}}};")


def stimulus(kind: str, cycles: int, mode: str, vcd: str) -> list[str]:
    """The rest of the testbench after its head (characterize.scripts.tb_dut): ``mode`` "active" draws every
    input anew every cycle, "idle" holds them; the dump covers ``cycles`` cycles."""
    return ["  task draw; begin " + draw(kind) + " end endtask",
            "  initial begin",
            "    draw;",
            "    repeat (3) @(negedge clk) draw;",
            f'    $dumpfile("{vcd}");',
            "    $dumpvars(1, tb.dut);",
            f"    for (i = 1; i <= {int(cycles)}; i = i + 1) @(negedge clk) " + ("draw;" if mode == "active" else
                                                                                  "begin end"),
            "    $dumpflush;",
            "    $finish;",
            "  end",
            "endmodule", ""]
