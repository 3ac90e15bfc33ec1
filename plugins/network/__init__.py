"""Whole networks: ``llmulator estimate ARCH --network MODEL.onnx`` (docs/networks.md).

Registration imports nothing heavy: onnx, numpy and the estimators load only when a network is estimated.
"""

from llmulator.hookspecs import hookimpl


@hookimpl
def register_commands(subparsers):
    from .cli import extend_estimate

    extend_estimate(subparsers)
