"""The `llmulator bench` verb: accuracy, ranking quality and speed of every estimator on held-out splits.

Registration imports nothing heavy: the verb's module (and numpy, matplotlib,
the estimators) load only when the verb runs.
"""

from llmulator.hookspecs import hookimpl


@hookimpl
def register_commands(subparsers):
    from .cli import add_command

    add_command(subparsers)
