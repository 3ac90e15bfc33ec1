"""Calibration with profiler feedback (DESIGN.md section 6): the ``dpo``, ``sft`` and ``scale`` calibrators,
the ``calibrate`` and ``contexts`` verbs. Registration imports nothing heavy (no torch)."""

from llmulator.hookspecs import hookimpl


@hookimpl
def register_calibrators(register):
    from .calibrators import DPOCalibrator, ScaleCalibrator, SFTCalibrator

    register(DPOCalibrator)
    register(SFTCalibrator)
    register(ScaleCalibrator)


@hookimpl
def register_commands(subparsers):
    from .cli import add_commands

    add_commands(subparsers)
