"""The SCALE-Sim profiler plugin: runs the real SCALE-Sim v3 as an external cycle cross-check.

SCALE-Sim lives in its own virtual environment (``scripts/install_scalesim.sh``);
the profiler reports itself unavailable until it is installed. See docs/scalesim.md.
"""

from llmulator.hookspecs import hookimpl


@hookimpl
def register_profilers(register):
    from .adapter import ScaleSimProfiler

    register(ScaleSimProfiler)
