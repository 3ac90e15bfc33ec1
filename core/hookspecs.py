"""The plugin contract: the whole of it.

A plugin is a module (or object) with one or more of the hook implementations
below, registered through the entry-point group ``llmulator`` in its
``pyproject.toml``::

    [project.entry-points.llmulator]
    my_estimator = "my_package.my_module"

Each ``register_*`` hook receives a ``register`` callable and calls it once
per component it provides, with a *factory*: a class or zero-argument
callable that builds the component on first use. Factories keep start-up
fast: nothing heavy (torch) is imported until a component is actually used.

Components implement these protocols (duck-typed; the records they receive and return,
field by field: docs/api.md):

* Estimator: attributes ``name`` and ``version``; ``available() -> str | None``
  (None when usable, else a one-line reason, e.g. a missing checkpoint);
  ``estimate(designs: list[Design]) -> list[Estimate]`` (batched).
* Profiler: ``name``, ``version``, ``available()``, and
  ``profile(design, inputs: llmulator.inputs.Inputs | None) -> Profile``
  (None: inputs generated from the workload's description and seed).
* Calibrator: ``name``, ``version``, ``available()``, and
  ``calibrate(design, inputs, estimator, profiler, **options) -> CalibrationReport``;
  optionally ``contexts() -> dict[str, dict]`` (the saved contexts it made, each
  with at least ``estimator``: the estimator name it calibrates) and
  ``apply(estimator, context: str) -> Estimator`` (that estimator corrected by
  the saved context; used by ``llmulator estimate --context NAME``).
* Generator: ``name``, ``stage`` (1, 2 or 3) and
  ``sample(group_rng, rng) -> llmulator_plugins.synth.sample.SampleSpec``: one
  design as three spec dicts; ``group_rng`` is shared by the consecutive samples
  of a group (program, sizes, mapping structure), ``rng`` is the sample's own
  (hardware variant, inputs). Raise ``Rejected`` to have another drawn.

``register_commands(subparsers)`` receives the CLI's argparse sub-parsers
object; a plugin adds a verb with ``subparsers.add_parser(...)`` and sets
``func`` via ``set_defaults(func=callable(args) -> int)``.
"""

from __future__ import annotations

import pluggy

PROJECT = "llmulator"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_estimators(register):
    """Call ``register(factory)`` for each estimator this plugin provides."""


@hookspec
def register_profilers(register):
    """Call ``register(factory)`` for each profiler this plugin provides."""


@hookspec
def register_calibrators(register):
    """Call ``register(factory)`` for each calibrator this plugin provides."""


@hookspec
def register_generators(register):
    """Call ``register(factory)`` for each data generator this plugin provides."""


@hookspec
def register_commands(subparsers):
    """Add CLI verbs to the argparse ``subparsers`` object."""
