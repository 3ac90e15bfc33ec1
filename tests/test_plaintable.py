"""``llmulator.plaintable`` prints what the CLI's rich console prints to a file or pipe, byte for byte, and hands
everything it cannot print the same way to rich (issue 17: rich was ~30 ms of a cold ``estimate``)."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

import pytest
from llmulator import cli, library
from llmulator.design import load_design
from llmulator.plaintable import Grid, PlainConsole, render
from llmulator.report import estimate_grid, terms_grid
from llmulator_plugins.analytical.estimator import AnalyticalEstimator

WIDTHS = (None, "60", "80", "200")  # None: a pipe without COLUMNS (160 columns)


def _both(obj, monkeypatch, columns: str | None, wide: bool = False, **kw) -> tuple[str, str, bool]:
    """(plain console's output, rich console's output, whether the plain one printed without rich)."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    if wide:
        monkeypatch.setenv(cli.WIDE_ENV, "1")
    else:
        monkeypatch.delenv(cli.WIDE_ENV, raising=False)
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(var, raising=False)
    got, want = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(got):
        con = PlainConsole.for_stdout(cli.console, wide=wide)
        con.print(obj, **kw)
    with contextlib.redirect_stdout(want):
        cli.console().print(obj.to_rich() if isinstance(obj, Grid) else obj, **kw)
    return got.getvalue(), want.getvalue(), con._rich is None


def _grids():
    est = AnalyticalEstimator()
    maps = [e for e in library.entries("mapping")][::7]
    for m in maps:
        d = load_design(library.resolve("architecture", m["architecture"]),
                        library.resolve("workload", m["workload"]), m["path"])
        (e,) = est.estimate([d])
        yield estimate_grid(d, [e], {"broken": "failed"}), terms_grid(e)


@pytest.mark.parametrize("columns", WIDTHS)
def test_the_library_tables_print_the_same_as_rich(columns, monkeypatch):
    plain_prints = 0
    for grids in _grids():
        for g in grids:
            got, want, plain = _both(g, monkeypatch, columns)
            assert got == want, g.title
            plain_prints += plain
    assert plain_prints  # most tables fit: printed without rich


def _edge_grids() -> list[Grid]:
    out = []
    for title in ("t", "a title much longer than the table it heads, by a long way", None, "[bold]x[/bold]"):
        for cells in (("a", "1"), ("a longer cell", "12,345,678"), ("x:smile:y", "1"), ("caf\u00e9", "2"),
                      ("back\\slash", "3"), ("A[i][k]", "4"), ("tab\there", "5"), ("", "")):
            g = Grid(title=title)
            g.add_column("metric")
            g.add_column("value", justify="right")
            g.add_column("other", justify="right", style="red")
            g.add_row(*cells, "failed")
            g.add_row("second", "-", "-")
            out.append(g)
    empty = Grid(title="empty")
    empty.add_column("only")
    return [*out, empty]


@pytest.mark.parametrize("columns", ("20", "30", "80"))
def test_edge_cases_print_the_same_as_rich(columns, monkeypatch):
    for g in _edge_grids():
        got, want, _ = _both(g, monkeypatch, columns)
        assert got == want, (g.title, g.rows)
    got, want, _ = _both(_edge_grids()[1], monkeypatch, None, wide=True)
    assert got == want


@pytest.mark.parametrize("text", ["[dim]analytical: L_j: pipeline_ii 1 is not achievable[/dim]",
                                  "[dim]skipped gnn: no model[/dim]", "[dim]x :smile: y[/dim]", "plain line",
                                  "[dim]A[i][k] read twice[/dim]", "[bold]x[/bold]", "[dim] padded [/dim]",
                                  "[dim]caf\u00e9[/dim]", "", "[dim]a\\b[/dim]"])
def test_lines_print_the_same_as_rich(text, monkeypatch):
    for kw in ({}, {"markup": False, "highlight": False}):
        got, want, _ = _both(text, monkeypatch, None, **kw)
        assert got == want


def test_a_terminal_or_forced_colour_goes_to_rich(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert PlainConsole.for_stdout(cli.console, wide=False).width is None
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.setenv("COLUMNS", "wide")
    assert PlainConsole.for_stdout(cli.console, wide=False).width is None


def test_a_fitting_table_is_rendered_without_rich():
    g = Grid("t")
    g.add_column("a")
    g.add_row("1")
    assert render(g, 10) == "t\n┏━━━┓\n┃ a ┃\n┡━━━┩\n│ 1 │\n└───┘\n"
    assert render(g, 4) is None


def test_the_analytical_estimate_does_not_import_rich():
    code = ("import sys\nfrom llmulator.cli import main\n"
            "rc = main(['estimate', 'systolic-16x16', 'gemm', 'gemm-ws-16x16', '--estimator', 'analytical', "
            "'--terms'])\nassert rc == 0\nprint('rich' in sys.modules, file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stderr.strip().splitlines()[-1] == "False"


def test_a_closed_pipe_exits_with_status_1_as_rich_does():
    import os
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run([sys.executable, "-m", "llmulator.cli", "estimate", "systolic-16x16", "gemm",
                            "gemm-ws-16x16", "--estimator", "analytical"], stdout=w, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(w)
    assert p.returncode == 1 and p.stderr == ""
