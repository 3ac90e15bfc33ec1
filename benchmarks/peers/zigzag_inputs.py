"""Translate one of our designs (systolic arch + GEMM/conv workload + spatial mapping) into ZigZag 3.9 inputs.

ZigZag wants three YAML files (accelerator, workload, mapping; see docs/peers.md
"How a design becomes ZigZag input"). The translation, level by level:

* operational array: ``pe_array`` rows x cols -> dimensions D1 x D2, both systolic
  (``systolic_dimensions``, new in 3.9: one final drain of rows-1 + cols-1 cycles);
  unit energy / area = our ``mac`` operator's energy_pj / area_um2.
* per-PE storage: a weight register (I2, the operand's bits) and a partial-sum
  register (O, 32 bits) in every PE (``served_dimensions: []``). When the
  architecture has a per-PE ``regfile`` level they take its energy per bit; when it
  has none (the SCALE-Sim-style arrays) they stand for the systolic pipeline
  registers the array has anyway, at zero energy.
* every ``sram`` level: one shared memory (``served_dimensions: [D1, D2]``) holding
  I1, I2 and O, with capacity_kib x instances bits and ONE read_write port of our
  ``bandwidth_bytes_per_cycle`` (our model throttles reads + writes against one
  bandwidth); ZigZag prices an access per port-wide word, so r_cost/w_cost = our
  energy per ``width_bits`` word x port bits / width_bits.
* DRAM: the same, with ZigZag's "unbounded" 10^10-bit size.
* workload: GEMM ``C[m,n] += A[m,k] * B[k,n]`` -> ``O[d0][d1]+=I[d0][d2]*W[d2][d1]``;
  conv2d ``O[k,p,q] += W[k,c,r,s] * I[c,p+r,q+s]`` -> ``O[k][oy][ox]+=W[k][c][fy][fx]*I[c][iy][ix]``
  with iy = oy + fy, ix = ox + fx. Sizes are the design's trip counts; precisions its dtypes.
* mapping: the loops our mapping binds to PE rows / cols -> ``spatial_mapping`` D1 / D2
  with the same tiles. The temporal order is left to ZigZag's LOMA search (our
  tiles and order are not passed on), optimising latency.
"""

from __future__ import annotations

from typing import Any

from llmulator.design import Design

GEMM_DIMS = {"m": "D0", "n": "D1", "k": "D2"}
CONV_DIMS = {"k": "K", "c": "C", "p": "OY", "q": "OX", "r": "FY", "s": "FX"}


def _loop_var(d: Design, label: str) -> str:
    return d.tree.loops[label].var


def workload_of(d: Design) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """ZigZag layer list and our-loop-variable -> ZigZag-dimension names."""
    w = d.workload
    bits = {n: a.bits for n, a in w.arrays.items()}
    trips = {_loop_var(d, lb): int(d.trips(lb)) for lb in d.tree.loops}
    einsum = (w.raw.get("einsum") or "").replace(" ", "")
    if w.name.startswith("gemm") or einsum == "C[m,n]+=A[m,k]*B[k,n]":
        names = GEMM_DIMS
        layer = {"id": 0, "name": w.name, "operator_type": "Gemm", "equation": "O[d0][d1]+=I[d0][d2]*W[d2][d1]",
                 "loop_dims": ["D0", "D1", "D2"], "loop_sizes": [trips["m"], trips["n"], trips["k"]],
                 "operand_precision": {"I": bits["A"], "W": bits["B"], "O": 32, "O_final": bits["C"]},
                 "operand_source": {"I": 0, "W": 0}}
    elif w.name.startswith("conv2d"):
        names = CONV_DIMS
        layer = {"id": 0, "name": w.name, "operator_type": "Conv",
                 "equation": "O[k][oy][ox]+=W[k][c][fy][fx]*I[c][iy][ix]",
                 "dimension_relations": ["ix=1*ox+1*fx", "iy=1*oy+1*fy"],
                 "loop_dims": ["K", "C", "OY", "OX", "FY", "FX"],
                 "loop_sizes": [trips["k"], trips["c"], trips["p"], trips["q"], trips["r"], trips["s"]],
                 "operand_precision": {"I": bits["I"], "W": bits["W"], "O": 32, "O_final": bits["O"]},
                 "operand_source": {"I": 0, "W": 0}}
    else:
        raise ValueError(f"no ZigZag translation for workload '{w.name}' (GEMM and conv2d only)")
    return [layer], names


def _port(name: str, kind: str, bw: int, alloc: list[str], bw_min: int | None = None) -> dict[str, Any]:
    return {"name": name, "type": kind, "bandwidth_min": bw_min or bw, "bandwidth_max": bw, "allocation": alloc}


# ZigZag port names must match r_port_N / w_port_N / rw_port_N
SRAM_PORTS = [("r_port_1", "read", ["I1, tl"]), ("w_port_1", "write", ["I1, fh"]),
              ("r_port_2", "read", ["I2, tl"]), ("w_port_2", "write", ["I2, fh"]),
              ("r_port_3", "read", ["O, tl", "O, th"]), ("w_port_3", "write", ["O, fh", "O, fl"])]


def accelerator_of(d: Design, w_bits: int, o_served: list[str]) -> dict[str, Any]:
    a = d.arch
    pe = a.pe_array
    if pe is None:
        raise ValueError(f"architecture '{a.name}' has no PE array")
    n_pe = pe.rows * pe.cols
    mac = a.operators.get("mac")
    unit_energy = mac.energy_pj if mac else a.operators["mul"].energy_pj + a.operators["add"].energy_pj
    unit_area = mac.area_um2 if mac else a.operators["mul"].area_um2 + a.operators["add"].area_um2
    rf = next((m for m in a.memory if m.kind == "regfile" and m.instances == n_pe), None)
    e_bit_r = rf.read_energy_pj / rf.width_bits if rf else 0.0
    e_bit_w = rf.write_energy_pj / rf.width_bits if rf else 0.0
    mems: dict[str, Any] = {
        "rf_w": {"size": 2 * w_bits, "r_cost": e_bit_r * w_bits, "w_cost": e_bit_w * w_bits, "area": 0, "latency": 1,
                 "operands": ["I2"],
                 "ports": [_port("r_port_1", "read", w_bits, ["I2, tl"]),
                           _port("w_port_1", "write", w_bits, ["I2, fh"])],
                 "served_dimensions": []},
        "rf_o": {"size": 32, "r_cost": e_bit_r * 32, "w_cost": e_bit_w * 32, "area": 0, "latency": 1,
                 "operands": ["O"],
                 "ports": [_port("r_port_1", "read", 32, ["O, tl"]), _port("r_port_2", "read", 32, ["O, th"]),
                           _port("w_port_1", "write", 32, ["O, fh"]), _port("w_port_2", "write", 32, ["O, fl"])],
                 "served_dimensions": o_served},
    }
    for lv in reversed(a.memory):  # innermost first, as ZigZag lists them
        if lv.kind == "regfile":
            continue
        bw = int(round(lv.bandwidth_bytes_per_cycle * 8))
        size = int(lv.capacity_bits * lv.instances) if lv.capacity_kib is not None else 10_000_000_000
        scale = bw / lv.width_bits
        word = min(lv.width_bits, bw)
        if lv.kind == "dram":  # one channel: every operand and direction shares it
            ports = [_port("rw_port_1", "read_write", bw,
                           ["I1, fh", "I1, tl", "I2, fh", "I2, tl", "O, fh", "O, tl", "O, fl", "O, th"], word)]
        else:  # a banked buffer: a port per operand and direction, each with the level's bandwidth
            ports = [_port(n, k, bw, al, word) for n, k, al in SRAM_PORTS]
        mems[lv.name.lower()] = {
            "size": size, "r_cost": lv.read_energy_pj * scale, "w_cost": lv.write_energy_pj * scale,
            "area": lv.area_um2 * lv.instances, "latency": 1, "operands": ["I1", "I2", "O"],
            "ports": ports, "served_dimensions": ["D1", "D2"]}
    return {"name": f"{a.name}-zigzag", "memories": mems,
            "operational_array": {"unit_energy": unit_energy, "unit_area": unit_area, "dimensions": ["D1", "D2"],
                                  "sizes": [pe.rows, pe.cols], "systolic_dimensions": ["D1", "D2"]}}


def mapping_of(d: Design, names: dict[str, str], fixed_order: bool = True) -> list[dict[str, Any]]:
    sm: dict[str, list[str]] = {}
    for label, lm in d.mapping.loops.items():
        if lm.spatial:
            dim = "D1" if lm.spatial == "rows" else "D2"
            sm.setdefault(dim, []).append(f"{names[_loop_var(d, label)]}, {int(lm.tile or d.trips(label))}")
    if "D1" not in sm or "D2" not in sm:
        raise ValueError("the mapping must bind one loop to PE rows and one to PE cols")
    entry = {"name": "default", "spatial_mapping": sm,
             "memory_operand_links": {"O": "O", "W": "I2", "I": "I1"}}
    if fixed_order:
        entry["temporal_ordering"] = temporal_ordering(d, names)
    return [entry]


def temporal_ordering(d: Design, names: dict[str, str]) -> list[list[Any]]:
    """Our mapping's temporal loops, innermost first: point loops of temporal loops, then the tile loops in
    ``order`` (the band's nesting order when the mapping gives none)."""
    m = d.mapping
    band = [lp.label for lp in d.tree.top_loops()[0].band()]
    order = [lb for lb in m.order if lb in band] + [lb for lb in band if lb not in m.order]
    outer, inner = [], []
    for lb in order:
        trips, lm = int(d.trips(lb)), m.loop(lb)
        tile = int(lm.tile or trips)
        n = -(-trips // tile)
        if n > 1:
            outer.append([names[_loop_var(d, lb)], n])
        if not lm.spatial and tile > 1:
            inner.append([names[_loop_var(d, lb)], tile])
    return list(reversed(outer + inner))


def reduction_dims(d: Design) -> list[str]:
    """PE-array dimensions bound to a loop the output does not depend on: partial sums flow (and are
    reduced) along them, so one output register serves the whole line, as at the foot of a systolic column."""
    out_arr = next(n for n, a in d.workload.arrays.items() if a.role == "out")
    out_vars = set()
    for st, _ in d.statements_with_loops():
        for acc in st.accesses:
            if acc.array == out_arr:
                for aff in acc.affine:
                    if aff is not None:
                        out_vars |= {v for v, c in aff.coefs.items() if c}
    dims = []
    for label, lm in d.mapping.loops.items():
        if lm.spatial and _loop_var(d, label) not in out_vars:
            dims.append("D1" if lm.spatial == "rows" else "D2")
    return sorted(set(dims))


def zigzag_inputs(d: Design, fixed_order: bool = True) -> dict[str, Any]:
    """The three ZigZag documents for a design (``fixed_order``: our temporal loop order, else LOMA searches)."""
    layers, names = workload_of(d)
    w_bits = layers[0]["operand_precision"]["W"]
    return {"accelerator": accelerator_of(d, w_bits, reduction_dims(d)), "workload": layers,
            "mapping": mapping_of(d, names, fixed_order)}
