"""Timeloop v0.4 import and export: the `llmulator import timeloop` and `llmulator export timeloop` verbs
(see docs/timeloop-compat.md)."""

from llmulator.hookspecs import hookimpl


@hookimpl
def register_commands(subparsers):
    from .cli import add_commands

    add_commands(subparsers)
