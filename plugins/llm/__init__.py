"""The LLM estimator plugin (the LLMulator method): digit-by-digit numeric prediction."""

from llmulator.hookspecs import hookimpl


@hookimpl
def register_estimators(register):
    from .estimator import ABLATIONS, LLMEstimator

    register(LLMEstimator)
    for cls in ABLATIONS:
        register(cls)


@hookimpl
def register_commands(subparsers):
    from .cli import add_command

    add_command(subparsers)
