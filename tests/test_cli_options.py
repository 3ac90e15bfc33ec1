"""Every option of every verb says what it does and what it defaults to, as its author wrote it, and options
that mean the same thing have the same name on every verb.

``llmulator.cli._fill_help`` gives an option that a plugin left without help its default and the common
meaning of its name, so that ``--help`` never shows a bare option; these tests walk the parsers *before* that
safety net, so that no built-in verb relies on it.
"""

from __future__ import annotations

import argparse

import pytest
from llmulator import cli


@pytest.fixture(scope="module")
def options() -> list[tuple[str, argparse.Action]]:
    """(``llmulator VERB ...``, action) of every option of every (sub)parser, with help as written."""
    real = cli._fill_help
    cli._fill_help = lambda p: None
    try:
        parser = cli.build_parser()
    finally:
        cli._fill_help = real
    out = []

    def walk(p: argparse.ArgumentParser, path: list[str]) -> None:
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sp in a.choices.items():
                    walk(sp, [*path, name])
            elif a.option_strings and not isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
                out.append((" ".join(["llmulator", *path]), a))

    walk(parser, [])
    return out


def _where(verb: str, a: argparse.Action) -> str:
    return f"{verb} {'/'.join(a.option_strings)}"


def test_every_option_has_help_written_by_its_author(options):
    missing = [_where(v, a) for v, a in options if not (a.help or "").strip()]
    assert not missing, "options without help: " + ", ".join(missing)


def _shows_default(a: argparse.Action) -> bool:
    text = (a.help or "").lower()
    if "default" in text:
        return True
    d = a.default
    shown = {str(d), f"{d:g}" if isinstance(d, float) else str(d)}
    return any(s in text for s in shown)


def test_every_option_with_a_default_says_what_it_is(options):
    """An option whose value is used when it is not given says so in --help (flags and empty lists need not)."""
    silent = [f"{_where(v, a)} (default {a.default!r})" for v, a in options
              if a.default not in (None, False, [], argparse.SUPPRESS) and not _shows_default(a)]
    assert not silent, "options that do not show their default: " + ", ".join(silent)


# one meaning, one name: a verb with an option in a group's other spellings must also accept the group's name
SAME_MEANING = {
    "--out": ("--output", "--output-dir", "--outdir", "-o"),
    "--time-limit": ("--timeout", "--time-limit-s"),
    "--workers": ("--jobs", "-j", "--procs", "--processes"),
    "--threads": ("--num-threads", "--torch-threads"),
    "--seed": ("--random-seed",),
    "--no-progress": ("--quiet", "--no-bar"),
    "--estimator": ("--estimators",),
    "--json": ("--as-json", "--machine"),
}


def test_options_that_mean_the_same_have_the_same_name_on_every_verb(options):
    by_verb: dict[str, set[str]] = {}
    for v, a in options:
        by_verb.setdefault(v, set()).update(a.option_strings)
    wrong = []
    for verb, names in by_verb.items():
        for canonical, others in SAME_MEANING.items():
            used = sorted(n for n in others if n in names)
            if used and canonical not in names:
                wrong.append(f"{verb} has {', '.join(used)} but not {canonical}")
    assert not wrong, "; ".join(wrong)


def test_old_spellings_still_parse():
    p = cli.build_parser()
    assert p.parse_args(["render", "gemm", "gemm", "gemm", "--hls", "--output", "x.c"]).output == "x.c"
    assert p.parse_args(["render", "gemm", "gemm", "gemm", "--hls", "--out", "x.c"]).output == "x.c"
    args = p.parse_args(["characterize", "--timeout", "5"])
    assert args.timeout == 5 and p.parse_args(["characterize", "--time-limit", "7"]).timeout == 7


@pytest.mark.parametrize("kind", ["llm", "gnn", "tlp", "tensetmlp"])
def test_train_quick_needs_no_out_and_a_full_run_does(kind, capsys, tmp_path, monkeypatch):
    """`train KIND` without --out is bad usage (exit 2) unless --quick, whose default is per-user, not the repo."""
    monkeypatch.setenv("LLMULATOR_HOME", str(tmp_path / "home"))
    assert cli.main(["train", kind, "--data", str(tmp_path / "none")]) == 2
    assert "--out FOLDER is required" in capsys.readouterr().err
    args = cli.build_parser().parse_args(["train", kind, "--quick", "--data", "d"])
    assert args.quick and args.out is None  # filled in by the trainer: $LLMULATOR_HOME/quick/KIND
    from llmulator_plugins.baselines.cli import quick_out
    assert quick_out(kind) == str(tmp_path / "home" / "quick" / kind)


def test_the_baselines_help_shows_the_training_defaults():
    """The defaults --help prints (without importing torch) are the ones training uses."""
    pytest.importorskip("torch")
    from llmulator_plugins.baselines.cli import DEFAULT_EPOCHS, DEFAULT_LR
    from llmulator_plugins.baselines.train import DEFAULTS
    assert DEFAULT_EPOCHS == {k: v["epochs"] for k, v in DEFAULTS.items()}
    assert DEFAULT_LR == {k: v["lr"] for k, v in DEFAULTS.items()}
