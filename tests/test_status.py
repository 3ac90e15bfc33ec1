"""The status line (llmulator.status): a spinner on a terminal's stderr while a model loads, nothing elsewhere."""

from __future__ import annotations

import io
import sys
import time

from llmulator import status


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_is_written_when_stderr_is_not_a_terminal(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with status.status("loading the llm model"):
        pass
    assert err.getvalue() == ""


def test_a_terminal_sees_the_message_and_nested_uses_share_one_line(monkeypatch):
    err = _Tty()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.delenv("LLMULATOR_NO_STATUS", raising=False)
    with status.status("estimating"):
        with status.status("loading the llm model"):
            assert len(status._ACTIVE) == 1
            time.sleep(0.3)  # the spinner redraws about 12 times a second
    assert not status._ACTIVE
    out = err.getvalue()
    assert "loading the llm model" in out and out.endswith("\x1b[2K")  # transient: the line is cleared


def test_llmulator_no_status_turns_it_off(monkeypatch):
    err = _Tty()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setenv("LLMULATOR_NO_STATUS", "1")
    with status.status("loading"):
        pass
    assert err.getvalue() == ""
