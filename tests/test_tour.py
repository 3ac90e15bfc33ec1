"""docs/tour.md, run: every command of its ``sh`` blocks, in order, in one temporary working folder.

The commands are read from the page, so the page and the test cannot drift apart. Sizes are cut down to
CI's by the substitutions in ``CI`` (each must still match the page, or the test fails: a tour command
changed, and this file must say how to run the new one small). Commands run in-process through
``llmulator.cli.main`` (one interpreter, torch imported once), each with a fresh plugin registry and the
environment restored afterwards, with ``LLMULATOR_HOME`` in the temporary folder. Lines that are not
``llmulator`` commands must be the set-up lines in ``SETUP``.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from pathlib import Path

import pytest
from llmulator import plugins
from llmulator.cli import main

ROOT = Path(__file__).resolve().parent.parent
TOUR = ROOT / "docs" / "tour.md"

# the tour's set-up lines (activate the venv, make and enter a scratch folder): the test has its own
SETUP = [r"^\. \.venv/bin/activate$", r"^mkdir -p ~/llmulator-tour && cd ~/llmulator-tour$"]

# (pattern in a tour command, replacement): the same commands at CI's size
CI = [
    # 36 samples: the smallest count (seed 0) whose draw puts rows in held-out splits for bench
    (r"^synth (.*)--n 120 (.*)--workers 2$", r"synth \1--n 36 \2--workers 1 --no-progress"),
    (r"^train llm --quick (.*)$", r"train llm --quick \1 --pretrain-steps 1 --steps 2 --max-train-rows 8 "
                                  r"--no-progress"),
    (r"^bench (.*)--per-split 20 (.*)$", r"bench \1--per-split 2 \2 --single 1 --no-figures --no-progress"),
    (r"^dse (.*)--verify 3 (.*)$", r"dse \1--verify 1 \2 --budget 150 --no-progress"),
]


def tour_commands(text: str) -> list[str]:
    """The lines of the page's ``sh`` code blocks, without comments, in order."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


COMMANDS = tour_commands(TOUR.read_text())
RUN = [c for c in COMMANDS if c.startswith("llmulator ")]


def ci_sized(command: str) -> list[str]:
    text = command.removeprefix("llmulator ")
    for pattern, repl in CI:
        text = re.sub(pattern, repl, text)
    return shlex.split(text)


def test_the_tour_has_every_step_and_nothing_else():
    others = [c for c in COMMANDS if not c.startswith("llmulator ")]
    assert len(others) == len(SETUP) and all(re.match(p, c) for p, c in zip(SETUP, others, strict=True)), others
    verbs = [shlex.split(c)[1] for c in RUN]
    for verb in ("list", "validate", "estimate", "render", "profile", "dse", "synth", "train", "bench",
                 "calibrate"):
        assert verb in verbs, f"the tour lost its `{verb}` step"
    for pattern, _ in CI:  # every cut-down rule still applies to a command of the page
        assert any(re.search(pattern, c.removeprefix("llmulator ")) for c in RUN), f"stale CI rule {pattern}"
    assert "estimate systolic-16x16 gemm gemm-ws-16x16 --estimator analytical" in " | ".join(RUN)
    assert any(c.startswith("llmulator train llm --quick") for c in RUN)


def test_the_tour_states_its_measured_time():
    text = TOUR.read_text()
    assert "TOUR_TIME" not in text
    m = re.search(r"\*\*Measured:\*\* (\d+) min (\d+) s", text)
    assert m and int(m.group(1)) * 60 + int(m.group(2)) <= 5 * 60, "the five-minute tour takes longer"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("tour")


@pytest.mark.parametrize("command", RUN, ids=[c.removeprefix("llmulator ")[:60] for c in RUN])
def test_tour_command(command, scratch, monkeypatch, capsys):
    monkeypatch.chdir(scratch)
    monkeypatch.setenv("LLMULATOR_HOME", str(scratch / "home"))
    before = dict(os.environ)  # bench --model sets LLMULATOR_LLM_MODEL for the rest of its process
    plugins.reset()
    argv = ci_sized(command)
    t0 = time.perf_counter()
    try:
        rc = main(argv)
    finally:
        for k in set(os.environ) - set(before):
            del os.environ[k]
        os.environ.update(before)
        plugins.reset()
    out, err = capsys.readouterr()
    assert rc == 0, f"`{' '.join(argv)}` exited {rc} after {time.perf_counter() - t0:.1f} s:\n{err[-3000:]}"
    verb = argv[0]
    if verb == "render":
        assert "void" in (scratch / "gemm.c").read_text()
    elif verb == "bench":
        report = (scratch / "bench-results" / "results.md").read_text()
        assert re.search(r"\| llm \| test_app \| cycles \| [1-9]", report), "bench scored no row"
        assert not (scratch / "docs").exists()
    elif verb == "train":
        assert (scratch / "quick-llm" / "model.safetensors").is_file()
    elif verb == "calibrate":
        assert "held out (seed 1000, never fitted to)" in out
    elif verb == "dse":
        assert (scratch / "dse-gemm" / "summary.json").is_file()
    else:
        assert out.strip(), f"`{command}` printed nothing"
