"""Whole networks: ``llmulator estimate ARCH --network MODEL.onnx`` and ``llmulator dse ARCH --network MODEL.onnx
--space HW.yaml`` (docs/networks.md).

Registration imports nothing heavy: onnx, numpy and the estimators load only when a network is estimated.
"""

from llmulator.hookspecs import hookimpl


@hookimpl(trylast=True)  # after dse's hook, whose verb it extends (estimate is core's)
def register_commands(subparsers):
    from .cli import extend_dse, extend_estimate

    extend_estimate(subparsers)
    dse = subparsers.choices.get("dse")
    if dse is not None:
        extend_dse(dse)
