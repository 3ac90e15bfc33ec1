"""The rtl profiler's plan of a design: ``llmulator.pearray``'s (shared with hlsim's bank model,
``llmulator.banks``), with SCALE-Sim's name for a partial-sum dataflow (ws or is)."""

from __future__ import annotations

from llmulator.design import Design
from llmulator.errors import UserError
from llmulator.pearray import Operand, Plan
from llmulator.pearray import make_plan as _make_plan


def make_plan(d: Design) -> Plan:
    """The hardware plan of ``d`` (a UserError saying why there is none), its dataflow named as SCALE-Sim does."""
    return _make_plan(d, is_weight=_is_weight)


def _is_weight(d: Design, stationary: str, var_loop: dict[str, str], op: Operand) -> bool | None:
    """Whether the stationary input is the layer's weight (SCALE-Sim's filter operand: indexed by the
    output-channel loop, role N), so the dataflow is named ws, else is; None where the workload has no
    layer roles (no einsum SCALE-Sim's adapter reads as a GEMM or convolution): the plan says "psum" rather
    than guess."""
    from llmulator_plugins.scalesim.adapter import describe_layer
    try:
        roles = describe_layer(d).roles
    except UserError:
        return None
    return any(roles.get(var_loop[v]) == "N" for v in op.coefs)
