"""Diagnostics a user can act on.

Every problem with user input becomes a :class:`Diagnostic` (file, line,
column, field path, what was expected, a hint) collected in a
:class:`SpecError`. The CLI prints them and exits with status 2; nothing that
reaches the user is a Python traceback.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Diagnostic:
    file: str
    line: int | None
    col: int | None
    path: str  # JSON-path-like field path, e.g. architecture.memory[1].capacity_kib
    message: str
    expected: str = ""
    hint: str = ""
    severity: str = "error"  # or "warning": the input is accepted, but something cannot be done with it

    def format(self) -> str:
        """The diagnostic as the terminal shows it; control characters from the files (a key spelled with a
        terminal escape, a newline that fakes a line of our output: an outside probe) shown escaped."""
        where = escaped(self.file or "<input>")
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        path = escaped(self.path)
        text = f"{where}: {self.severity}: {path + ': ' if path else ''}{escaped(self.message, lines=True)}"
        if self.expected:
            text += f"\n    expected: {escaped(self.expected, lines=True)}"
        if self.hint:
            text += f"\n    hint: {escaped(self.hint, lines=True)}"
        return text


def escaped(text: str, lines: bool = False) -> str:
    """``text`` with its control characters written as escapes (newlines kept where ``lines``)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or (lines and c == "\n") else repr(c)[1:-1] for c in text)


class SpecError(Exception):
    """Bad user input: one or more diagnostics. Exit status 2."""

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(d.format() for d in self.diagnostics))


class UserError(Exception):
    """Bad usage that is not tied to a spec file position (missing file, unknown name). Exit 2."""


class SpecUnsupported(SpecError, UserError):
    """A spec field a component cannot handle (not wrong in itself: other components accept it), reported at
    its file position. A :class:`UserError` too, so that callers that treat a design as outside their scope on
    a UserError (hlsim's bank model, the periphery model) still do."""


class InvariantError(Exception):
    """A model broke a physical bound (fewer cycles than its units, ports or recurrences allow):
    an internal error, reported with the design's name. Exit 1."""


def did_you_mean(word: str, options: list[str]) -> str:
    """A hint naming the closest of ``options`` to a misspelt ``word``, or "" when none is close."""
    import difflib
    c = difflib.get_close_matches(word, options, n=1, cutoff=0.5)
    return f"did you mean '{c[0]}'?" if c else ""
