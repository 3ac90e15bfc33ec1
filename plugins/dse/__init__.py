"""The design-space exploration plugin: the `llmulator dse` verb (see docs/dse.md)."""

from llmulator.hookspecs import hookimpl


@hookimpl
def register_commands(subparsers):
    from .cli import add_command

    add_command(subparsers)
