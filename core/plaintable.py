"""Tables and lines printed to a file or pipe exactly as rich prints them, without importing rich.

Why this exists: importing rich (console, table, segments, colours, emoji codes) and laying a table out took
~30 ms of CPU, an eighth of a cold ``llmulator estimate --estimator analytical`` (issue 17). Output that goes to
a file or a pipe has no colours, and a table whose columns fit the width is laid out by rich in one simple way:
the title on its own line as written, then heavy-head box rules, each column as wide as its widest cell plus a
space either side, cells justified in their column. :class:`PlainConsole` prints exactly those bytes.

Everything else goes to rich itself, print by print (the rich console is made on first need): a terminal
(colours, its width), colours forced by the environment, a table that would have to wrap, and any text that
rich would transform (markup other than one ``[dim]...[/dim]``, emoji codes such as ``:smile:``, a backslash,
tabs or control characters, characters outside ASCII, whose widths vary). ``tests/test_plaintable.py``
compares both on every table ``estimate`` prints for the bundled library, at several widths.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import Any

_EMOJI = re.compile(r":\S*?:")  # what rich's emoji replacement could touch (rich/_emoji_replace.py)
_DIM = re.compile(r"\[dim\](.*)\[/dim\]", re.S)


class Grid:
    """A table's content (title, columns, rows of strings), independent of who prints it."""

    def __init__(self, title: str | None = None):
        self.title = title
        self.columns: list[tuple[str, str, str | None]] = []  # (header, justify "left"/"right", style)
        self.rows: list[list[str]] = []

    def add_column(self, header: str, justify: str = "left", style: str | None = None) -> None:
        self.columns.append((header, justify, style))

    def add_row(self, *cells: str) -> None:
        self.rows.append(list(cells))

    def to_rich(self) -> Any:
        """The same table as a ``rich.table.Table``."""
        from rich.table import Table
        t = Table(title=self.title)
        for header, justify, style in self.columns:
            t.add_column(header, justify=justify, style=style)
        for row in self.rows:
            t.add_row(*row)
        return t


def plain(text: str) -> bool:
    """Whether rich prints ``text`` unchanged (without markup): printable ASCII, nothing it would read as
    markup, an escape or an emoji code."""
    return (text.isascii() and text.isprintable() and "[" not in text and "\\" not in text
            and _EMOJI.search(text) is None)


def render(grid: Grid, width: int) -> str | None:
    """``grid`` as rich prints it at ``width`` columns to a non-terminal, or None where rich would lay it out
    otherwise (it does not fit, it is empty, or some text is not :func:`plain`)."""
    cols = grid.columns
    if not cols or not grid.rows or any(len(r) != len(cols) for r in grid.rows):
        return None
    texts = [h for h, _, _ in cols] + [c for r in grid.rows for c in r] + ([grid.title] if grid.title else [])
    if not all(plain(t) for t in texts):
        return None
    widths = [max(len(h), *(len(r[i]) for r in grid.rows)) for i, (h, _, _) in enumerate(cols)]
    if sum(widths) + 3 * len(cols) + 1 > width or len(grid.title or "") > width:
        return None

    def line(cells: list[str], edge: str, sep: str) -> str:
        out = [c.rjust(w) if j == "right" else c.ljust(w) for c, w, (_, j, _) in zip(cells, widths, cols, strict=True)]
        return edge + sep.join(f" {c} " for c in out) + edge

    def rule(left: str, fill: str, mid: str, right: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    lines = [grid.title] if grid.title else []
    lines += [rule("┏", "━", "┳", "┓"), line([h for h, _, _ in cols], "┃", "┃"), rule("┡", "━", "╇", "┩")]
    lines += [line(r, "│", "│") for r in grid.rows]
    lines.append(rule("└", "─", "┴", "┘"))
    return "\n".join(lines) + "\n"


class PlainConsole:
    """Prints :class:`Grid` tables and lines to stdout as ``rich_console()`` (the CLI's rich console) would,
    without rich where the output is a plain file or pipe (see the module); everything else is handed to
    ``rich_console()``, made on first need."""

    def __init__(self, width: int | None, rich_console: Callable[[], Any]):
        self.width = width  # None: every print goes to rich
        self._make_rich = rich_console
        self._rich = None

    @classmethod
    def for_stdout(cls, rich_console: Callable[[], Any], wide: bool) -> PlainConsole:
        """The console for stdout: plain printing where rich would not colour it and its width is known
        (``wide``: 100,000 columns; else ``COLUMNS``, else 160, as ``llmulator.cli.console`` sets it)."""
        env = os.environ
        columns = env.get("COLUMNS")
        width = 100_000 if wide else 160 if columns is None else int(columns) if columns.isdigit() else None
        import builtins
        if (width is None or width < 20 or env.get("TTY_COMPATIBLE") == "1" or env.get("FORCE_COLOR")
                or _isatty(sys.stdout) or not _utf8(sys.stdout) or hasattr(builtins, "get_ipython")):
            # a terminal, forced colours, no UTF-8, Jupyter: rich
            width = None
        return cls(width, rich_console)

    def rich(self) -> Any:
        if self._rich is None:
            self._rich = self._make_rich()
        return self._rich

    def print(self, obj: Any, markup: bool = True, highlight: bool | None = None) -> None:
        """``obj`` (a :class:`Grid` or a string; with ``markup``, a string may be wrapped in ``[dim]``)."""
        text = None
        if self.width is not None and isinstance(obj, Grid):
            text = render(obj, self.width)
        elif self.width is not None and isinstance(obj, str):
            m = _DIM.fullmatch(obj) if markup else None
            inner = m.group(1) if m else obj
            if plain(inner) and inner == inner.strip():
                text = inner + "\n"
        if text is not None:
            try:
                sys.stdout.write(text)
                sys.stdout.flush()
            except BrokenPipeError:  # as rich's Console.on_broken_pipe: the rest to /dev/null, exit status 1
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                raise SystemExit(1) from None
            return
        kw = {} if highlight is None else {"highlight": highlight}
        self.rich().print(obj.to_rich() if isinstance(obj, Grid) else obj, markup=markup, **kw)


def _utf8(f: Any) -> bool:
    """Whether rich would draw box characters to ``f`` (it falls back to ASCII boxes otherwise)."""
    return (getattr(f, "encoding", "utf-8") or "utf-8").lower().startswith("utf")


def _isatty(f: Any) -> bool:
    try:
        return bool(f.isatty())
    except (AttributeError, ValueError):
        return False
