"""The LLM estimator plugin (the LLMulator method): digit-by-digit numeric prediction, and ``llmulator train llm``.

Registration imports nothing heavy: the estimator's module and the trainer's options load without torch.
"""

from llmulator.hookspecs import hookimpl


@hookimpl
def register_estimators(register):
    from .estimator import ABLATIONS, LLMEstimator

    register(LLMEstimator)
    for cls in ABLATIONS:
        register(cls)


@hookimpl
def register_trainers(register):
    from .cli import LLMTrainer

    register(LLMTrainer)
