"""Each room does one job: no module over ~400 lines, no function over ~60 lines or cyclomatic complexity
~15 (ruff's mccabe rule C901), in ``core/`` and ``plugins/`` (issue 19, item 4).

A module or function above a limit fails this test unless it is

* listed below, in ``MODULES`` or ``FUNCTIONS``, with the reason it is still that size (what it does
  that has not been split yet, or why it is kept whole), or
* a function whose docstring says why it is kept whole, in a paragraph that starts with
  ``Kept whole:``.

An entry that is no longer needed (the module or function shrank, moved or was renamed) is reported
as a warning, not a failure (so that shrinking a function never turns the suite red while the list
lags behind): delete its line. Print the current offenders as ready-to-edit entries with
``python tests/test_code_size.py``.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DIRS = ("core", "plugins")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_COMPLEXITY = 15
KEPT_WHOLE = "Kept whole:"

# -- allow-lists: what was above a limit when this test was written, and why -------------------------
# A reason says what the room still does that could be split out, or why it stays whole. Shrink these
# lists; do not grow them without a reason a reviewer would accept.

#: module path -> reason
MODULES: dict[str, str] = {
    "core/inputs.py":
        "input descriptions -> arrays (distributions, CSR/graph structures, copy_of order, variants, the "
        "workload's generator), the NumPy reference and .npy storage; not split yet",
    "core/cli.py":
        "every built-in verb's parser and handler; not split yet (under concurrent edit when this list was written)",
    "core/instrument.py":
        "timed sites and the cycle-annotated C emitter for hlsim (counters, bounds checks, harness); not split yet",
    "plugins/timeloop/reader.py":
        "Timeloop v0.4/v0.3 reader: tagged YAML with merges, architecture trees, problem, mapping, ERT, "
        "stats.txt; not split yet",
    "plugins/synth/grammar.py":
        "stage-1 program grammar: one generator per loop-nest template (application family) and their shared "
        "helpers; not split yet",
    "plugins/analytical/tiling.py":
        "multi-level tiling nest analysis (Timeloop's delta, multicast, link-transfer and capacity rules); not "
        "split yet",
    "core/hookspecs.py":
        "kept whole: the plugin contract on one page (hook specs and the Protocols with their docstrings, issue"
        " 19 item 1)",
    "core/hls.py":
        "the mapping applied to the kernel's C (strip-mining, order, pragmas, PE binding, fusion on the "
        "pycparser AST); not split yet",
    "plugins/llm/train.py":
        "LLM training: rows and the prompt cache, evaluation, the training loop and checkpoints; not split yet",
    "plugins/network/mappings.py":
        "per-layer mappings: the named dataflows and the per-layer search; not split yet",
}

#: "path::qualified.name" -> reason (the function is too long, too complex, or both)
FUNCTIONS: dict[str, str] = {
    "core/cli.py::build_parser": "one argparse declaration of every built-in verb; not split yet",
    "core/cli.py::cmd_estimate":
        "the estimate verb: options, running the estimators (and a context), tables and JSON; not split yet",
    "core/cli.py::cmd_profile":
        "the profile verb: options, limits, inputs, the run, tables and JSON; not split yet",
    "core/cli.py::cmd_validate":
        "the validate verb: per-file kinds, cross-file checks, warnings, JSON; not split yet",
    "core/inputs.py::_fill":
        "one array from its declarative description (every distribution and structure); not split yet",
    "core/inputs.py::generate_inputs":
        "every input array: declarative ones in copy_of order, then the generator, then checks; not split yet",
    "core/instrument.py::_Emitter._loop":
        "one instrumented loop (counters, tiling, pragmas as timing sites); not split yet",
    "core/instrument.py::instrument": "the whole instrumented program and its harness; not split yet",
    "core/loopforms.py::value_of":
        "what a C expression holds at a point of the kernel (every expression kind); not split yet",
    "core/loopforms.py::value_of.sub": "value_of's substitution over every expression kind; not split yet",
    "core/schema.py::_error_to_diag":
        "one jsonschema error -> positioned diagnostics with hints, per validator kind; not split yet",
    "core/usercode.py::run_user_code":
        "the sandboxed child for workload Python: spawn, limits, result reading, error reporting; not split yet",
    "core/yamlsrc.py::_walk":
        "the YAML node walk building data and positions (every node kind, duplicate keys); not split yet",
    "core/yamlsrc.py::load_yaml":
        "reading a YAML file with positions and every parse error turned into a diagnostic; not split yet",
    "plugins/analytical/estimator.py::AnalyticalEstimator._one":
        "one design's estimate: nests, compute, traffic, energy, area, terms; not split yet",
    "plugins/analytical/model.py::spatial_compute":
        "PE-array cycles of a batch of mappings (steps, II, fill/drain) as one vectorised formula; not split yet",
    "plugins/analytical/tiling.py::analyze":
        "the multi-level nest analysis over levels and data spaces; not split yet",
    "plugins/baselines/graph.py::_Builder.expr":
        "one expression -> graph nodes, every C expression kind; not split yet",
    "plugins/baselines/sequence.py::steps":
        "the loop/branch/statement step sequence of a design; not split yet",
    "plugins/baselines/train.py::train":
        "the baselines' training: data, resume, epochs, checkpoints; not split yet",
    "plugins/bench/cli.py::run_command":
        "the bench verb: option checks, estimators, draws per seed, report and figures; not split yet",
    "plugins/bench/report.py::body": "the report section's text and tables in order; not split yet",
    "plugins/calibrate/loop.py::run":
        "the calibration loop: profile, update, stop rules, hold-out scoring; not split yet",
    "plugins/characterize/measure.py::characterize_one":
        "one operator through synthesis, timing, gate simulation and power, step after step; not split yet",
    "plugins/characterize/opverilog.py::operator_module": "one case per operator class's Verilog body",
    "plugins/characterize/vcd.py::parse_vcd": "a streaming VCD parser: one state machine over the file's lines",
    "plugins/dse/evaluate.py::Evaluator._fast":
        "the batched evaluation of a chunk of design points; not split yet",
    "plugins/dse/evaluate.py::Evaluator._materialised":
        "point-by-point evaluation with per-point error reasons; not split yet",
    "plugins/dse/run.py::explore": "the dse run: search, verification, Pareto front, summary; not split yet",
    "plugins/dse/space.py::_dims":
        "a space file's dimensions, each kind checked against the base design; not split yet",
    "plugins/hlsim/profiler.py::HlsimProfiler._metrics":
        "the measured counts -> cycles, energy, area, counters and breakdown; not split yet",
    "plugins/llm/decode.py::decode_lean":
        "the batched greedy decoding with the prior as a draft (torch); not split yet",
    "plugins/llm/train.py::train":
        "the LLM training loop: data, prompts, model, schedule, evaluation, checkpoints; not split yet",
    "plugins/network/cli.py::print_report": "the network verb's report tables; not split yet",
    "plugins/network/run.py::estimate_network": "a network's layers estimated and summed; not split yet",
    "plugins/rtl/control.py::Walker.build": "the control FSM of a loop nest (the RTL work owns it)",
    "plugins/rtl/control.py::reader_module": "one Verilog module's text in port/wire/always order (its return "
                                             "ring and lane addresses are split out already)",
    "plugins/rtl/writer.py::writer_module": "one Verilog module's text in port/wire/always order",
    "plugins/rtl/datapath.py::buffer_module": "a buffer's Verilog (the RTL work owns it)",
    "core/pearray.py::make_plan": "a design -> the RTL plan (the RTL work owns it)",
    "plugins/rtl/profiler.py::RtlProfiler.profile": "the RTL profiler's run (the RTL work owns it)",
    "plugins/rtl/synth.py::run_synthesis": "running synthesis (the RTL work owns it)",
    "plugins/rtl/top.py::top_module": "the top module's Verilog (the RTL work owns it)",
    "plugins/synth/grammar.py::t_control": "the control-dynamic template (generator logic); not split yet",
    "plugins/synth/primitives.py::perturb_architecture":
        "every architecture field's perturbation (generator logic); not split yet",
    "plugins/synth/primitives.py::sample_mapping":
        "every mapping primitive's draw (generator logic); not split yet",
    "plugins/timeloop/convert.py::build_levels":
        "Timeloop's storage levels -> architecture levels; not split yet",
    "plugins/timeloop/convert.py::from_design": "a design -> Timeloop specs; not split yet",
    "plugins/timeloop/convert.py::to_specs": "Timeloop specs -> the three llmulator specs; not split yet",
    "plugins/timeloop/reader.py::load": "reading and recognising Timeloop files; not split yet",
}


# -- measuring ------------------------------------------------------------------------------------

def _modules() -> list[Path]:
    return sorted(p for d in DIRS for p in (ROOT / d).rglob("*.py") if "__pycache__" not in p.parts)


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def _functions(path: Path) -> dict[int, tuple[str, int, bool]]:
    """line of each def -> (qualified name, lines, whether its docstring says why it is kept whole)."""
    out: dict[int, tuple[str, int, bool]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)):
                q = prefix + ch.name
                doc = ast.get_docstring(ch) or ""
                kept = any(par.strip().startswith(KEPT_WHOLE) for par in doc.split("\n\n"))
                out[ch.lineno] = (q, ch.end_lineno - ch.lineno + 1, kept)
                visit(ch, q + ".")
            elif isinstance(ch, ast.ClassDef):
                visit(ch, prefix + ch.name + ".")
            else:
                visit(ch, prefix)

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return out


def _complexity() -> dict[tuple[str, int], int]:
    """(module path, line of the def) -> cyclomatic complexity, for every function above the limit
    (ruff's C901)."""
    try:
        from ruff.__main__ import find_ruff_bin
        ruff = find_ruff_bin()
    except (ImportError, FileNotFoundError):
        pytest.skip("ruff is not installed (pip install 'llmulator[test]')")
    r = subprocess.run([ruff, "check", "--isolated", "--select", "C901", "--config",
                        f"lint.mccabe.max-complexity={MAX_COMPLEXITY}", "--output-format", "json",
                        "--no-cache", "--exit-zero", *DIRS], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = {}
    for v in json.loads(r.stdout):
        m = re.search(r"too complex \((\d+) >", v["message"])
        if m:
            out[(_rel(Path(v["filename"])), v["location"]["row"])] = int(m.group(1))
    return out


def offenders() -> tuple[dict[str, int], dict[str, str]]:
    """(module -> lines over the limit, "path::function" -> what is over the limit), every one found;
    functions whose docstring says ``Kept whole:`` are left out."""
    mods: dict[str, int] = {}
    funcs: dict[str, str] = {}
    complexity = _complexity()
    for p in _modules():
        rel = _rel(p)
        n = len(p.read_text(encoding="utf-8").splitlines())
        if n > MAX_MODULE_LINES:
            mods[rel] = n
        for line, (name, length, kept) in _functions(p).items():
            cc = complexity.get((rel, line), 0)
            over = ([f"{length} lines"] if length > MAX_FUNCTION_LINES else []) + \
                   ([f"complexity {cc}"] if cc > MAX_COMPLEXITY else [])
            if over and not kept:
                funcs[f"{rel}::{name}"] = ", ".join(over)
    return mods, funcs


@pytest.fixture(scope="module")
def found():
    return offenders()


def test_no_module_over_the_line_limit_unless_listed(found):
    mods, _ = found
    new = {k: v for k, v in mods.items() if k not in MODULES}
    assert not new, (f"modules over {MAX_MODULE_LINES} lines: "
                     + ", ".join(f"{k} ({v})" for k, v in new.items())
                     + " - split them by job, or list them in MODULES with the reason")


def test_no_function_over_the_length_or_complexity_limit_unless_listed(found):
    _, funcs = found
    new = {k: v for k, v in funcs.items() if k not in FUNCTIONS}
    assert not new, (f"functions over {MAX_FUNCTION_LINES} lines or complexity {MAX_COMPLEXITY}: "
                     + "; ".join(f"{k} ({v})" for k, v in new.items())
                     + f" - split them, say why they are kept whole ('{KEPT_WHOLE}' in the docstring), "
                     "or list them in FUNCTIONS with the reason")


def test_allow_list_entries_no_longer_needed_are_reported(found):
    mods, funcs = found
    stale = [k for k in MODULES if k not in mods] + [k for k in FUNCTIONS if k not in funcs]
    if stale:
        warnings.warn("no longer over a limit (or moved/renamed): delete from tests/test_code_size.py's "
                      "allow-list: " + ", ".join(stale), stacklevel=1)


def test_every_allow_list_entry_has_a_reason():
    assert all(v.strip() for v in [*MODULES.values(), *FUNCTIONS.values()])


if __name__ == "__main__":  # print the offenders as allow-list entries
    mods, funcs = offenders()
    print("MODULES = {")
    for k, v in sorted(mods.items(), key=lambda kv: -kv[1]):
        print(f'    "{k}": "{MODULES.get(k, "")}",  # {v} lines')
    print("}\nFUNCTIONS = {")
    for k, v in sorted(funcs.items()):
        print(f'    "{k}": "{FUNCTIONS.get(k, "")}",  # {v}')
    print("}")
