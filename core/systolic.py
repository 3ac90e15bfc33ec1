"""Per-fold timing constants of a systolic PE array, as the generated RTL (plugins/rtl) has them: the fill and
drain of a fold, the I/O registers a nest pays once, and whether a PE holds a shadow accumulator.

Why a module of its own: these are the RTL's structure written as numbers, shared by hlsim (``llmulator.timing``)
and the analytical model (its batch path over B mappings), and checked against the RTL's cycle counts
(docs/rtl-crosscheck.md); ``llmulator.nest`` re-exports them.
"""

from __future__ import annotations

import math

import numpy as np


def preload_pes(design, out_deps: list[np.ndarray], spatial: np.ndarray) -> np.ndarray:
    """(B,) PEs a stationary operand's preload walks: the array's side along the dimension the outputs do not
    vary along, which the partial sums travel (the RTL's ``A``). That is the rows, unless the outputs are
    indexed by the loop on the rows and by none on the columns: the RTL then runs its plan transposed and
    preloads along the columns (an outside user's 1x4 array with the reduction on the columns took 16 cycles
    in the RTL, 13 in hlsim). ``out_deps``: each output's (L,) index dependence on the mapped loops;
    ``spatial`` (B, L): 0, 1 (rows) or 2 (cols)."""
    pe = design.arch.pe_array
    on = {dim: np.zeros(spatial.shape[0], dtype=bool) for dim in (1, 2)}
    for dep in out_deps:
        for dim in (1, 2):
            on[dim] |= (np.asarray(dep, dtype=bool)[None, :] & (spatial == dim)).any(axis=1)
    return np.where(on[1] & ~on[2], float(pe.cols), float(pe.rows))


def pe_register_level(design):
    """The per-PE register level (``PE_REG``): the innermost regfile with one instance per PE and a
    finite capacity, or None when the architecture declares none."""
    pe = design.arch.pe_array
    if pe is None:
        return None
    found = [lv for lv in design.arch.memory
             if lv.kind == "regfile" and lv.instances == pe.size and math.isfinite(lv.capacity_bits)]
    return found[-1] if found else None


def shadow_accumulator_fits(design, out_bits: int, in_bits: int) -> bool:
    """Whether each PE can keep a second (shadow) accumulator, so that an output-stationary fold's
    results drain while the next fold accumulates: two accumulators plus the input operands' registers
    must fit the PE register level; an architecture without one does not limit it."""
    lv = pe_register_level(design)
    return lv is None or lv.capacity_bits >= 2 * out_bits + in_bits


def systolic_fill(design, band: list[str], stationary: bool, output_drain: bool = False, preload=None) -> float:
    """Fill and drain of one fold on a systolic array, what the generated RTL (plugins/rtl) does:

    * the skew R + C - 2 (SCALE-Sim's per-fold model);
    * when an input operand is stationary (weight/input stationary): its preload of R cycles, and one
      cycle more, in which the last partial sum leaves the edge PE's output register before the next
      fold's preload may start (SCALE-Sim counts the cycle of the last MAC instead); ``preload`` the PEs it
      walks (:func:`preload_pes`; the rows when not given);
    * ``output_drain`` (an output-stationary fold whose PEs have no room for a shadow accumulator,
      :func:`shadow_accumulator_fits`): R cycles in which the accumulators shift out, one row per cycle,
      before the next fold may accumulate (SCALE-Sim overlaps them, as a second accumulator would).

    A broadcast array pays its PE pipeline depth. ``stationary`` and ``output_drain`` may be bool arrays
    over B mappings (the analytical model's batch): the fill is then an array too."""
    pe = design.arch.pe_array
    if pe is None:
        return 0.0
    if pe.interconnect == "systolic":
        a = pe.rows if preload is None else preload
        return (pe.rows + pe.cols - 2) + np.where(stationary, a + 1, 0) + np.where(output_drain, pe.rows, 0)
    return float(pe.pipeline_depth_cycles)


def last_drain(design) -> float:
    """The last fold's output drain where a shadow accumulator overlaps the others with the next fold: R cycles
    in which its results shift out of the array, one row per cycle, with no fold after it to hide them."""
    pe = design.arch.pe_array
    return float(pe.rows) if pe is not None and pe.interconnect == "systolic" else 0.0


def array_io_cycles(design) -> float:
    """Cycles a nest on a systolic array pays once beyond its body's schedule, for the register stages
    between the buffer and the array that the body's schedule (load latency, MAC, store) does not see,
    as the generated RTL (plugins/rtl) has them: the buffer request is registered before the bank's
    latency starts (1), and results leave through the output queue, the writer's accumulation with the
    stored value and its registered write (3). Measured on its VCD: 3 cycles from start to the first
    array step and 4 from the last step to done, 7 against the 3 the body's schedule pays beyond one II
    (load latency 2, store 1)."""
    pe = design.arch.pe_array
    return 4.0 if pe is not None and pe.interconnect == "systolic" else 0.0
