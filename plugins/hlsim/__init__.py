"""The hlsim profiler plugin: cycle-annotated execution of the mapped design on real inputs."""

from llmulator.hookspecs import hookimpl


@hookimpl
def register_profilers(register):
    from .profiler import HlsimProfiler

    register(HlsimProfiler)
