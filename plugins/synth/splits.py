"""Held-out splits and application families: moved to :mod:`llmulator.dataset` (the dataset format's home).

The names stay importable from here for code written against this module.
"""

from llmulator.dataset import (  # noqa: F401 - re-exported
    FAMILIES,
    GROUP,
    HELD_OUT,
    LIBRARY_FAMILIES,
    SPLITS,
    TEST_SPLITS,
    base_app,
    bucket,
    family_of,
    group_of,
    hw_family,
    hw_family_held_out,
    split_of,
)
