"""The rtl profiler plugin: PE-array designs generated as Verilog, simulated cycle-exactly and synthesised.

``llmulator profile ... --profiler rtl`` builds a systolic array of MAC PEs, banked buffers and a
controller from the same Design hlsim reads (plan.py -> layout.py -> datapath.py, control.py,
top.py), simulates it with Icarus on the workload's inputs, checks the outputs against the NumPy
reference, and (LLMULATOR_RTL_SYNTH=1) synthesises it with Yosys/OpenSTA against the OSU 0.18 um
liberty for area, fmax and energy. See docs/rtl.md.
"""

from llmulator.hookspecs import hookimpl


@hookimpl
def register_profilers(register):
    from .profiler import RtlProfiler

    register(RtlProfiler)
