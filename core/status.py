"""A transient status line on stderr (a rich spinner) while something slow runs, e.g. a model loading.

Shown only when stderr is a terminal (never in pipes, logs or ``--json`` captures) and not with
``LLMULATOR_NO_STATUS=1``; nested or repeated uses share one line. Costs nothing otherwise: rich is
imported only when the line is shown.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

_ACTIVE: list = []  # the rich Status being shown, if any


def enabled() -> bool:
    if os.environ.get("LLMULATOR_NO_STATUS"):
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


@contextlib.contextmanager
def status(message: str) -> Iterator[None]:
    """Show ``message`` with a spinner on stderr while the block runs (a terminal only)."""
    if not enabled():
        yield
        return
    if _ACTIVE:  # already showing: change the text for the block, then put it back
        outer = _ACTIVE[-1]
        before = outer.status
        outer.update(message)
        try:
            yield
        finally:
            outer.update(before)
        return
    from rich.console import Console
    st = Console(stderr=True).status(message, spinner="dots")
    _ACTIVE.append(st)
    st.start()
    try:
        yield
    finally:
        st.stop()
        _ACTIVE.pop()
