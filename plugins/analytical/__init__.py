"""The analytical estimator plugin (Timeloop/Accelergy-style)."""

from llmulator.hookspecs import hookimpl


@hookimpl
def register_estimators(register):
    from .estimator import AnalyticalEstimator

    register(AnalyticalEstimator)
