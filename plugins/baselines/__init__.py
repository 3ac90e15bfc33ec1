"""Learned baselines behind the estimator contract: ``gnn`` (GNN-HLS style), ``tlp`` and ``tensetmlp``.

Registration imports nothing heavy: featurisers and torch load when an
estimator is used or a ``llmulator train`` target runs.
"""

from llmulator.hookspecs import hookimpl


@hookimpl
def register_estimators(register):
    from .estimator import ESTIMATORS

    for cls in ESTIMATORS:
        register(cls)


@hookimpl
def register_trainers(register):
    from .cli import TRAINERS

    for cls in TRAINERS:
        register(cls)
