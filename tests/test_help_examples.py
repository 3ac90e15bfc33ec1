"""Every example in every ``--help`` runs as printed.

The examples are the lines of each (sub)parser's epilog that are a command: ``llmulator ...``,
possibly after ``NAME=value`` environment settings, with a ``# comment`` or a trailing
``(remark)`` dropped. Each one is parsed by the real parser; those that need no dataset, no
trained model, no EDA tools and no long run are also executed with ``main()`` in a scratch
folder that has the repository's library folders and the placeholder files the examples name
(``arch.yaml``, ``work.yaml``, ``map.yaml``), and must exit 0. The others are only parsed, for
the reason given in ``PARSE_ONLY`` (a reason that no example needs any more fails the test).
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
from pathlib import Path

import pytest
from llmulator import plugins
from llmulator.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent

# (pattern matched against the example's text, why it is only parsed)
PARSE_ONLY = [
    (r"^llmulator synth ", "generates a dataset: renders, compiles and runs thousands of kernels (minutes to hours)"),
    (r"^llmulator train ", "needs a synthesized dataset (data/synth-v1 is not in a fresh clone) and trains for "
                           "minutes to hours"),
    (r"_MODEL=models/", "needs the checkpoint the train example above it writes"),
    (r"^llmulator bench ", "needs a synthesized dataset and runs every estimator over hundreds of rows "
                           "(tests/test_bench.py runs bench on a small generated dataset)"),
    (r"^llmulator characterize", "needs the EDA tools (scripts/install_eda.sh) and runs logic synthesis for "
                                 "minutes"),
    (r"^llmulator calibrate ", "trains a LoRA adapter (dpo) or profiles the design several times with the llm "
                               "estimator (tests/test_calibrate.py runs the calibrators)"),
    (r"--context spmv|contexts --remove spmv", "needs the context 'spmv' the calibrate example saves"),
    (r"--scheduler tcp://", "needs a running Dask scheduler at that address"),
    (r"^llmulator import timeloop ", "needs Timeloop v0.4 spec files (tests/test_timeloop_import.py imports the "
                                     "vendored reference designs)"),
    (r"^llmulator export timeloop imported/", "needs the design the import example above writes"),
    (r"dse .*--workers 2", "the first dse example's search, verified on 2 worker processes "
                           "(tests/test_dse.py runs the worker path)"),
]


def _command(line: str) -> tuple[dict[str, str], list[str]] | None:
    text = re.sub(r"\s{2,}\(.*\)\s*$", "", line.strip())  # `...  (regenerates docs/results.md)`
    try:
        words = shlex.split(text, comments=True)
    except ValueError:
        return None
    env = {}
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    if len(words) < 2 or words[0] != "llmulator":
        return None
    return env, words[1:]


def _examples() -> list[tuple[str, str, dict[str, str], list[str]]]:
    """(whose --help, the line, environment, argv) of every example."""
    out = []

    def walk(p: argparse.ArgumentParser, path: list[str]) -> None:
        for line in (p.epilog or "").splitlines():
            cmd = _command(line)
            if cmd:
                out.append((" ".join(["llmulator", *path]), line.strip(), *cmd))
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sp in a.choices.items():
                    walk(sp, [*path, name])

    walk(build_parser(), [])
    return out


EXAMPLES = _examples()


def _why_parse_only(line: str) -> str | None:
    return next((why for pattern, why in PARSE_ONLY if re.search(pattern, line)), None)


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A working folder like the repository root (library folders by link) plus the examples' placeholders."""
    for folder in ("arch_specs", "workloads", "mappings", "spaces"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    for name, src in (("arch.yaml", "arch_specs/systolic-16x16.yaml"), ("work.yaml", "workloads/gemm.yaml"),
                      ("map.yaml", "mappings/gemm-ws-16x16.yaml")):
        shutil.copy(ROOT / src, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LLMULATOR_HOME", str(tmp_path / "home"))  # contexts and caches stay in here
    return tmp_path


def test_every_verb_has_examples_and_they_are_found():
    helps = {h for h, *_ in EXAMPLES}
    for verb in ("llmulator", "llmulator validate", "llmulator render", "llmulator estimate", "llmulator profile",
                 "llmulator plugins", "llmulator list", "llmulator dse", "llmulator bench", "llmulator synth",
                 "llmulator train llm", "llmulator calibrate", "llmulator contexts", "llmulator characterize"):
        assert verb in helps, f"`{verb} --help` shows no runnable example"
    for pattern, _why in PARSE_ONLY:
        assert any(re.search(pattern, line) for _h, line, _e, _a in EXAMPLES), f"stale PARSE_ONLY rule {pattern}"


@pytest.mark.parametrize("where, line, env, argv", EXAMPLES, ids=[line for _h, line, _e, _a in EXAMPLES])
def test_help_example_parses(where, line, env, argv):
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:
        pytest.fail(f"`{line}` (in `{where} --help`) does not parse (exit {e.code})")
    assert getattr(args, "func", None) is not None, line


RUN = [e for e in EXAMPLES if _why_parse_only(e[1]) is None]


@pytest.mark.parametrize("where, line, env, argv", RUN, ids=[line for _h, line, _e, _a in RUN])
def test_help_example_runs(where, line, env, argv, scratch, monkeypatch, capsys):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    plugins.reset()  # an example's environment (a model path) is read when a component is built
    try:
        rc = main(argv)
    finally:
        plugins.reset()
    out, err = capsys.readouterr()
    assert rc == 0, f"`{line}` (in `{where} --help`) exited {rc}:\n{err[-3000:]}"
    assert out.strip() or (scratch / "gemm.c").exists(), f"`{line}` printed nothing"
