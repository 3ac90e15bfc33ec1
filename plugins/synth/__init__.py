"""The data synthesizer plugin: three stages of generators and the `synth` verb."""

from llmulator.hookspecs import hookimpl


@hookimpl
def register_generators(register):
    from .stage1 import AstGenerator
    from .stage2 import TemplateGenerator
    from .stage3 import MutationGenerator

    register(AstGenerator)
    register(TemplateGenerator)
    register(MutationGenerator)


@hookimpl
def register_commands(subparsers):
    from .cli import add_command

    add_command(subparsers)
