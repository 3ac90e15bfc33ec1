"""llmulator: predict the performance of dataflow accelerators.

The package is deliberately light at import time: nothing here imports torch,
so the CLI and the analytical estimator start fast.
"""

__version__ = "0.1.0"
