"""The rtl profiler's plan of a design: ``llmulator.pearray``'s (shared with hlsim's bank model,
``llmulator.banks``), with SCALE-Sim's name for a partial-sum dataflow (ws or is)."""

from __future__ import annotations

from llmulator.design import Design
from llmulator.errors import SpecUnsupported, UserError
from llmulator.pearray import Operand, Plan
from llmulator.pearray import make_plan as _make_plan
from llmulator.yamlsrc import SourceMap


def make_plan(d: Design) -> Plan:
    """The hardware plan of ``d`` (a UserError saying why there is none), its dataflow named as SCALE-Sim does."""
    plan = _make_plan(d, is_weight=_is_weight)
    _refuse_pipeline_ii(d)
    return plan


def _refuse_pipeline_ii(d: Design) -> None:
    """The generated array advances every cycle it is fed: a ``pipeline_ii`` above 1, which hlsim and the analytical
    model honour (one stream step per II), is not generated. Before 2026-12-06 it was ignored, and the rtl's cycles
    (and its cached simulation) were those of II 1: 86 where hlsim says 125 (an outside probe)."""
    for lb in d.tree.loops:
        ii = d.mapping.loop(lb).pipeline_ii
        if ii is not None and ii > 1:
            smap = d.mapping.source_map or SourceMap("<mapping>")
            raise SpecUnsupported(smap.diag(
                ("mapping", "loops", lb, "pipeline_ii"),
                f"rtl: pipeline_ii {ii} on loop {lb} is not generated: the PE array advances every cycle its "
                "operands arrive (hlsim and the analytical model price one stream step every II cycles)",
                "no pipeline_ii, or 1, for the rtl profiler", "profile this design with hlsim", prefer_key=True))


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
