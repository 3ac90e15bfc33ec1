"""The ``llmulator`` command line: one verb per job.

Exit status: 0 success, 2 bad input (a message naming file, line and field),
1 internal error (with a hint to report it), 3 a plugin's component raised (the
others' results are printed; the error names the plugin and its package),
4 ``profile``: outputs differ from the reference, 130 interrupted (143 by SIGTERM). Heavy modules
(rich, numpy, estimators) are imported inside the verbs so that ``--help``
starts fast; torch is never imported here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .errors import SpecError, UserError, escaped

EPILOG_ESTIMATE = """example:
  llmulator estimate systolic-16x16 gemm gemm-ws-16x16
  llmulator estimate arch.yaml work.yaml map.yaml --estimator analytical --json

An estimator that cannot price the design (a SpecError or UserError) is shown as
"refused" in its own column, with its reason under the table; one that raises
anything else is shown as "failed", with the exception and the plugin and package
to blame, and the others still print.
exit status: 0 every estimator ran, was skipped (not available) or refused the
design; 2 bad input, or no estimator could price the design; 3 an estimator
raised (a bug in its plugin; the others' results are printed all the same)"""


def _add_design_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("arch", help="architecture YAML file or library name")
    p.add_argument("workload", help="workload YAML file or library name")
    p.add_argument("mapping", help="mapping YAML file or library name")
    p.add_argument("--preset", help="workload size preset (default: the mapping's, else the workload's parameters)")


class _NameList(argparse.Action):
    """Appends comma-separated names to a list: ``--estimator a --estimator b`` and ``--estimators a,b``
    (and any mix) mean the same; a name given twice counts once."""

    def __call__(self, parser, namespace, values, option_string=None):
        names = list(getattr(namespace, self.dest, None) or [])
        for n in str(values).split(","):
            n = n.strip()
            if n and n not in names:
                names.append(n)
        if not names:
            parser.error(f"{option_string}: give an estimator name")
        setattr(namespace, self.dest, names)


def add_estimator_options(p: argparse.ArgumentParser, dest: str = "estimator", default: str = "every available one",
                          what: str = "estimator to run") -> None:
    """``--estimator NAME`` (repeatable) and ``--estimators A,B`` with one meaning, on every verb that takes
    estimators (estimate, bench, dse): both add to the list ``args.<dest>`` (None when neither is given)."""
    p.add_argument("--estimator", dest=dest, action=_NameList, metavar="NAME",
                   help=f"{what} (repeatable, or a comma list; default: {default})")
    p.add_argument("--estimators", dest=dest, action=_NameList, metavar="A,B",
                   help="the same as --estimator, as a comma-separated list")


def _train_verb(subparsers) -> Any:
    """The shared ``train`` verb; returns its sub-parsers object, which gets one target per registered
    trainer (``llmulator.hookspecs.Trainer``, ``register_trainers``): ``llmulator train llm``, ``train gnn``, ..."""
    p = subparsers.add_parser("train", help="train a learned estimator on a synthesized dataset",
                              description="Train a learned estimator; see `llmulator train MODEL --help`.")
    return p.add_subparsers(dest="model", metavar="MODEL", required=True)


class _Unbuilt:
    """Stands in for the parser of a verb that the command line does not invoke (:func:`build_parser` with
    ``verb``): it takes what verbs and plugins' ``register_commands`` hooks do to a parser (arguments, groups,
    defaults, nested sub-parsers) and builds nothing, since parsing never reads it."""

    def __init__(self, **kwargs: Any):
        self.description = kwargs.get("description")
        self.epilog = kwargs.get("epilog")
        self.prog = kwargs.get("prog")
        self._actions: list = []
        self._defaults: dict[str, Any] = {}

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        return None

    def add_argument_group(self, *args: Any, **kwargs: Any) -> _Unbuilt:
        return self

    add_mutually_exclusive_group = add_argument_group

    def set_defaults(self, **kwargs: Any) -> None:
        self._defaults.update(kwargs)

    def get_default(self, dest: str) -> Any:
        return self._defaults.get(dest)

    def add_subparsers(self, **kwargs: Any) -> _UnbuiltVerbs:
        return _UnbuiltVerbs()


class _UnbuiltVerbs:
    """The sub-parsers of an :class:`_Unbuilt` parser: every one unbuilt too."""

    def __init__(self) -> None:
        self.choices: dict[str, Any] = {}
        self._choices_actions: list = []

    def add_parser(self, name: str, **kwargs: Any) -> _Unbuilt:
        p = self.choices[name] = _Unbuilt(**kwargs)
        for alias in kwargs.get("aliases", ()):
            self.choices[alias] = p
        return p


class _Verbs(argparse._SubParsersAction):
    """The verbs' sub-parsers; with ``only`` set (the invoked verb), every other verb's parser is an
    :class:`_Unbuilt` stand-in, so that its arguments cost nothing."""

    only: str | None = None

    def add_parser(self, name: str, **kwargs: Any):
        if self.only is None or self.only == name or self.only in kwargs.get("aliases", ()):
            return super().add_parser(name, **kwargs)
        p = self._name_parser_map[name] = _Unbuilt(**kwargs)
        for alias in kwargs.get("aliases", ()):
            self._name_parser_map[alias] = p
        return p


_TOP_FLAGS = ("--wide", "--trust-workload")  # top-level options that take no value


def invoked_verb(argv: Sequence[str]) -> str | None:
    """The verb a command line invokes (``llmulator [--wide] estimate ...``), or None where every verb's parser
    is needed: top-level help or version, no verb, or ``train`` (its targets are the trainers')."""
    for a in argv:
        if a in _TOP_FLAGS:
            continue
        return None if a.startswith("-") or a == "train" else a
    return None


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser. With ``verb`` (what :func:`main` passes: the verb the command invokes) only
    that verb's parser is built: every plugin's ``register_commands`` hook still runs (a plugin may extend a
    core verb, as ``--network`` extends ``estimate``), but the other verbs get :class:`_Unbuilt` stand-ins.
    Building every verb's arguments was ~80 ms of a cold ``llmulator estimate``."""
    p = argparse.ArgumentParser(
        prog="llmulator",
        description="Predict cycles, energy, power and area of dataflow accelerators from arch/workload/mapping YAML.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="start with:\n  llmulator list\n  llmulator estimate systolic-16x16 gemm gemm-ws-16x16\n"
               "every verb's --help ends with examples (tests/test_help_examples.py runs them)")
    p.add_argument("--version", action="version", version=f"llmulator {__version__}")
    p.add_argument("--wide", action="store_true",
                   help="print tables as wide as their content (default: they wrap to fit the terminal)")
    p.add_argument("--trust-workload", action="store_true",
                   help="run workload code (kernels, references, input generators) even where the sandbox "
                        "(bubblewrap + seccomp) is unavailable; only for files you trust (docs/security.md)")
    # prog given: what argparse would compute (the top level has no positionals) without building a help
    # formatter, which imports shutil for the terminal size (~2 ms of every command, issue 17)
    sub = p.add_subparsers(dest="verb", metavar="VERB", action=_Verbs, prog=p.prog)
    sub.only = verb

    v = sub.add_parser("validate", help="check spec files (schemas, and cross-file checks for a full design)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="example:\n  llmulator validate arch_specs/systolic-16x16.yaml workloads/gemm.yaml "
                              "mappings/gemm-ws-16x16.yaml")
    v.add_argument("files", nargs="+", help="YAML files (kind taken from the top-level key)")
    v.add_argument("--preset", help="size preset for cross-file checks")
    v.add_argument("--json", action="store_true", help="machine-readable output")
    v.set_defaults(func=cmd_validate)

    r = sub.add_parser("render", help="render a design to HLS C or to the model prompt",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n  llmulator render systolic-16x16 gemm gemm-ws-16x16 --hls -o gemm.c\n"
                              "  llmulator render systolic-16x16 gemm gemm-ws-16x16 --prompt   (what the shipped llm "
                              "model reads)\n"
                              "  llmulator render hls-fpga spmv-csr spmv-csr-hls-fpga --prompt --variant skewed "
                              "--estimator llm")
    _add_design_args(r)
    g = r.add_mutually_exclusive_group(required=True)
    g.add_argument("--hls", action="store_true", help="HLS C with the mapping applied")
    g.add_argument("--prompt", action="store_true",
                   help="exactly the text a model reads (digit-isolated numbers): by default the first estimator "
                        "that reads a prompt, with its own checkpoint (the shipped llm model); see --estimator, "
                        "--model")
    r.add_argument("--estimator", metavar="NAME",
                   help="with --prompt: the estimator whose model's prompt to show")
    r.add_argument("--model", metavar="PATH",
                   help="with --prompt: a checkpoint folder; show what that model reads (default: the "
                        "estimator's own, i.e. its shipped model or LLMULATOR_<NAME>_MODEL)")
    r.add_argument("-o", "--out", "--output", dest="output", metavar="FILE",
                   help="write to this file (atomically) instead of stdout")
    r.add_argument("--variant", help="input variant of the workload, for the prompt's input section")
    r.set_defaults(func=cmd_render)

    e = sub.add_parser("estimate", help="run estimators on a design and print a comparison table",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG_ESTIMATE)
    _add_design_args(e)
    add_estimator_options(e)
    e.add_argument("--json", action="store_true", help="machine-readable output")
    e.add_argument("--terms", action="store_true", help="also print each estimator's terms and breakdown")
    e.add_argument("--variant", help="estimate for this input variant of the workload (its description and "
                   "expected trip counts)")
    e.add_argument("--context", metavar="NAME",
                   help="also run the estimator calibrated by this saved context (`llmulator contexts`), as one "
                        "more column NAME@CONTEXT next to the estimators chosen as without it")
    e.set_defaults(func=cmd_estimate)

    pr = sub.add_parser("profile", help="measure a design by running it on concrete input data (ground truth)",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="example:\n  llmulator profile hls-fpga spmv-csr spmv-csr-hls-fpga --variant skewed\n"
                               "  llmulator profile systolic-16x16 gemm gemm-ws-16x16 --inputs 7 --json\n"
                               "exit status 4: the outputs did not match the workload's reference; 3: the profiler "
                               "raised (a bug in its plugin, named with its package)")
    _add_design_args(pr)
    pr.add_argument("--inputs", metavar="SEED|DIR",
                    help="an integer seed for generated inputs, or a folder of ARRAY.npy files")
    pr.add_argument("--variant", help="input variant of the workload (e.g. skewed)")
    pr.add_argument("--profiler", default="hlsim", help="profiler name (default: hlsim)")
    pr.add_argument("--time-limit", type=float, default=None, metavar="S",
                    help="wall-time limit of each run of workload code in seconds: the kernel (default 60), the "
                         "reference and the input generator (default 120)")
    pr.add_argument("--mem-limit", type=int, default=2048, metavar="MB",
                    help="memory limit of one run in MB (default 2048)")
    pr.add_argument("--json", action="store_true", help="machine-readable output")
    pr.add_argument("--counters", action="store_true", help="also print counters (trip counts, ops, accesses)")
    pr.set_defaults(func=cmd_profile)

    pl = sub.add_parser("plugins", help="list registered plugins and their components",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="example:\n  llmulator plugins --json\n"
                               "exit status 3: a plugin did not load (it is named on stderr with its package); "
                               "2: two plugins register one name")
    pl.add_argument("--json", action="store_true", help="machine-readable output (a list of components)")
    pl.add_argument("--no-check", action="store_true",
                    help="do not build each component to ask whether it is available (faster)")
    pl.set_defaults(func=cmd_plugins)

    ls = sub.add_parser("list", help="list the bundled architectures, workloads and mappings",
                        epilog="example:\n  llmulator list --kind workload")
    ls.add_argument("--kind", choices=["architecture", "workload", "mapping"],
                    help="list only this kind (default: all three)")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.set_defaults(func=cmd_list)

    from . import plugins
    plugins.add_commands(sub)
    if verb is None:  # `train` is never built lazily (invoked_verb)
        plugins.add_trainers(lambda: _train_verb(sub))  # no trainer registered: no `train` verb
    _fill_help(p)
    return p


_DESIGN_VERBS = ("estimate", "render", "validate", "profile")  # verbs that load a design, and so NumPy
_BLAS_ENV = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")  # what OpenBLAS reads when it loads


def numpy_with_one_blas_thread() -> None:
    """Import NumPy with its BLAS (OpenBLAS in the wheels) started on one thread.

    OpenBLAS reads its thread count once, when it loads, and starts a pool of threads, one per core: on this
    project's 2-core machine that was 70 ms of CPU and ~120 ms of wall time of every cold command that loads a
    design (``import numpy`` 223 -> 99 ms, fastest of 9, load average ~4), the pool's waiting workers competing
    with the command itself. The learned estimators raise the count where their work is parallel
    (``llmulator.npinfer.blas_threads``). The variable is set for the import only (child processes do not
    inherit it); nothing changes where NumPy is already imported or the user set a thread count."""
    if "numpy" in sys.modules or any(v in os.environ for v in _BLAS_ENV):
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    except ImportError:
        pass
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)


def _parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """:func:`build_parser` for the verb ``argv`` invokes; every verb's where that verb is not among the
    built ones (a typo: the error lists every verb) or a plugin's hook failed on a stand-in."""
    from . import plugins
    verb = invoked_verb(argv)
    if verb is None:
        return build_parser()
    if verb in _DESIGN_VERBS:
        numpy_with_one_blas_thread()
    plugins.manager()  # plugins imported (and those that fail to, recorded) before the hooks run
    broken = getattr(plugins, "_BROKEN", {})
    before = {k for k in broken if k[-1] == "commands"}
    parser = build_parser(verb)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    failed = [k for k in broken if k[-1] == "commands" and k not in before]
    if isinstance(sub.choices.get(verb), argparse.ArgumentParser) and not failed:
        return parser
    for k in failed:  # a hook that failed on a stand-in: the whole parser tells whether it fails on a parser
        broken.pop(k, None)
    return build_parser()


# what an option means when the plugin that added it said nothing (the same on every verb)
_COMMON_HELP = {"--json": "machine-readable output", "--no-progress": "no progress bar",
                "--seed": "random seed", "--batch": "batch size", "--lr": "learning rate"}


def _fill_help(p: argparse.ArgumentParser) -> None:
    """Every option says something in ``--help``: an option a plugin added without help gets the common
    meaning of its name, if it has one, and its default."""
    if isinstance(p, _Unbuilt):
        return
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                _fill_help(sp)
            continue
        if not a.option_strings or a.help is not None:
            continue
        text = next((_COMMON_HELP[o] for o in a.option_strings if o in _COMMON_HELP), "")
        if a.default not in (None, False, argparse.SUPPRESS):
            shown = str(a.default).replace("%", "%%")  # argparse %-formats help strings
            text = f"{text} (default: {shown})" if text else f"default: {shown}"
        a.help = text or None


def _load(args) -> Any:
    from .design import load_design
    from .library import resolve
    return load_design(resolve("architecture", args.arch), resolve("workload", args.workload),
                       resolve("mapping", args.mapping), preset=args.preset, variant=getattr(args, "variant", None))


WIDE_ENV = "LLMULATOR_WIDE"  # set by --wide: tables as wide as their content, never wrapped


def console(stderr: bool = False):
    """The rich console every verb prints with (plugins' verbs too: ``llmulator.cli.console()``).

    Width: a terminal's own (COLUMNS wins); output to a file or pipe is not squeezed into 80 columns
    (160, or COLUMNS); ``--wide``: as wide as the content. Tables never cut a cell to '…': a column that
    does not fit wraps its words, and a word longer than its column folds onto the next line."""
    from rich.console import Console
    from rich.table import Table

    class _Console(Console):
        def print(self, *objects, **kwargs):
            for o in objects:
                if isinstance(o, Table):
                    _fit(o, self.width)
            super().print(*objects, **kwargs)

    kw = {"highlight": False, "soft_wrap": True, "stderr": stderr}
    if os.environ.get(WIDE_ENV):
        return _Console(width=100_000, **kw)
    con = _Console(**kw)
    if not con.is_terminal and "COLUMNS" not in os.environ:
        con = _Console(width=160, **kw)
    return con


def _fit(t, width: int) -> None:
    """Let a table wrap instead of cutting: fold what does not fit, and keep headers whole where there is
    room for all of them."""
    for c in t.columns:
        c.overflow = "fold"
        c.no_wrap = False

    def longest_word(c) -> int:  # a number or a name is best kept on one line
        words = [w for x in (c.header, *c.cells) for w in str(x).split()]
        return min(max((len(w) for w in words), default=1), 16)

    words = [longest_word(c) for c in t.columns]
    for mins, pad in ((words, 2), (words, 1), ([min(len(str(c.header)), 12) for c in t.columns], 2)):
        if sum(mins) + (pad + 1) * len(mins) + 1 <= width:
            if pad == 1:  # one space between a cell and the next rule instead of two: every word stays whole
                t.padding = (0, 0, 0, 1)
            for c, m in zip(t.columns, mins, strict=True):
                c.min_width = max(c.min_width or 0, m)
            return


_console = console


def cmd_validate(args) -> int:
    from . import checks
    from .design import Design, check_design
    from .schema import detect_kind, validate
    from .specs import architecture_from_dict, mapping_from_dict, workload_from_dict
    from .yamlsrc import load_yaml
    builders = {"architecture": architecture_from_dict, "workload": workload_from_dict,
                "mapping": mapping_from_dict}
    loaded: dict[str, Any] = {}
    diags = []
    results = []
    for f in args.files:
        f = _library_path(f)
        try:
            data, smap = load_yaml(f)
            kind = detect_kind(data)
            if kind is None:
                # let validate() produce the positioned message, guessing the closest kind
                keys = list(data) if isinstance(data, dict) else []
                import difflib
                guess = next((difflib.get_close_matches(str(k), list(builders), n=1, cutoff=0.5) for k in keys), [])
                validate(guess[0] if guess else "architecture", data, smap)
            validate(kind, data, smap)
            loaded[kind] = builders[kind](data[kind], smap)
            if kind == "workload":
                from .inputs import check_inputs
                check_inputs(loaded[kind])  # variants' scalars and generator parameters, copy_of, the generator
            results.append({"file": f, "kind": kind, "ok": True})
        except SpecError as e:
            diags.extend(e.diagnostics)
            results.append({"file": f, "ok": False, "errors": [d.format() for d in e.diagnostics]})
    warnings = []
    if not diags and len(loaded) == 3:
        d = Design(loaded["architecture"], loaded["workload"], loaded["mapping"],
                   args.preset or loaded["mapping"].preset)
        try:
            check_design(d)
            d.tree  # noqa: B018 - parse the kernel
            warnings = checks.design_warnings(d)
        except SpecError as e:
            diags.extend(e.diagnostics)
            results.append({"design": d.name, "ok": False, "errors": [x.format() for x in e.diagnostics]})
        except UserError as e:  # e.g. --preset names no preset of the workload
            if args.json:
                print(json.dumps({"ok": False, "files": results, "errors": [str(e)]}, indent=2))
            raise
    elif not diags and "workload" in loaded:
        try:
            warnings = checks.missing_hints(loaded["workload"])
        except SpecError as e:
            diags.extend(e.diagnostics)
    if diags:
        if args.json:  # a machine reading stdout gets the verdict too, not only stderr
            print(json.dumps({"ok": False, "files": results, "errors": [x.format() for x in diags]}, indent=2))
        raise SpecError(diags)
    if args.json:
        print(json.dumps({"ok": True, "files": results, "warnings": [w.format() for w in warnings]}, indent=2))
    else:
        for r in results:
            print(f"ok  {escaped(str(r['file']))}  ({r['kind']})")
        if len(loaded) == 3:
            print("ok  cross-file checks")
        for w in warnings:
            print(w.format(), file=sys.stderr)
    return 0


def _library_path(name: str) -> str:
    """A file path as given, or the one library file (of any kind) with that name (``validate hls-fpga``)."""
    from . import library
    p = Path(name)
    if p.exists() or p.suffix in (".yaml", ".yml") or os.sep in name:
        return name
    found = []
    for kind in ("architecture", "workload", "mapping"):
        try:
            found.append(str(library.resolve(kind, name)))
        except UserError:
            pass
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise UserError(f"'{name}' names library files of several kinds ({', '.join(found)}); give the path")
    return name  # load_yaml says the file is not there


def cmd_render(args) -> int:
    from . import render
    if args.hls and (args.estimator or args.model):
        raise UserError("--estimator and --model choose whose prompt --prompt shows; leave them out with --hls")
    d = _load(args)
    text = render.hls_c(d) if args.hls else _model_prompt(d, args.estimator, args.model)
    if args.output:
        from .fileio import atomic_write_text
        if Path(args.output).is_dir():
            raise UserError(f"-o {args.output} is a folder; give a file name (e.g. {Path(args.output) / 'kernel.c'})")
        try:
            atomic_write_text(args.output, text)
        except OSError as e:
            raise UserError(f"cannot write {args.output}: {e.strerror or e}") from None
    else:
        sys.stdout.write(text)
    return 0


def _model_prompt(d, name: str | None, model: str | None) -> str:
    """Exactly what a model reads for design ``d``: the ``prompts`` of an estimator that reads a prompt
    (``llmulator.hookspecs.PromptReader``), estimator ``name``'s or else the first registered one whose
    checkpoint gives one; ``model``: that checkpoint folder instead of the estimator's own."""
    from . import plugins
    from .hookspecs import PromptReader
    if model is not None and not Path(model).is_dir():
        raise UserError(f"--model {model}: no such checkpoint folder")
    tried = []
    for n in [name] if name else plugins.names("estimators"):
        r = plugins.entry("estimators", n)
        est = r.factory() if model is not None else r.get()  # another checkpoint: an instance of its own
        if not isinstance(est, PromptReader):
            if name:
                raise UserError(f"estimator '{n}' has no model that reads a prompt; --prompt shows the text of one "
                                "that has (see `llmulator plugins`)")
            continue
        if model is not None:
            est.path = Path(model)
        try:
            return est.prompts([d])[0]
        except UserError as e:
            if name or model is not None:  # the one asked for, or the checkpoint given: its own reason
                raise
            tried.append(f"{n}: {e}")
    raise UserError("no estimator gave its model's prompt" + "".join(f"\n  {t}" for t in tried)
                    if tried else "no registered estimator reads a prompt (see `llmulator plugins`)")


def _context_owner(name: str) -> tuple[Any, str]:
    """(calibrator, estimator name) of a saved calibration context, asking each calibrator's ``contexts()``."""
    from . import plugins
    from .hookspecs import ContextCalibrator
    known = []
    for cname in plugins.names("calibrators"):
        cal = plugins.get("calibrators", cname)
        ctxs = cal.contexts() if isinstance(cal, ContextCalibrator) else {}
        if name in ctxs:
            return cal, ctxs[name]["estimator"]
        known += list(ctxs)
    raise UserError(f"unknown calibration context '{name}' (saved: {', '.join(sorted(known)) or 'none'}); "
                    "make one with `llmulator calibrate`, list them with `llmulator contexts`")


def _failure(kind: str, name: str, e: BaseException) -> dict:
    """A component that raised something other than SpecError/UserError: what, where, and whose bug."""
    import traceback

    from . import plugins
    r = plugins.registry()[kind].get(name)
    frames = traceback.extract_tb(e.__traceback__)
    where = f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
    return {"error": f"{type(e).__name__}: {e}", "where": where,
            "plugin": r.plugin if r else None, "package": r.distribution if r else None,
            "blame": plugins.blame(kind, name)}


def _print_failures(kind: str, failed: dict) -> None:
    for n, f in failed.items():
        print(f"error: {kind} '{n}' failed: {f['error']}\n  {f['blame']}"
              + (f"\n  raised at {f['where']}" if f["where"] else ""), file=sys.stderr)


def cmd_estimate(args) -> int:
    from . import plugins
    from .hookspecs import why_unavailable
    d = _load(args)
    owner = _context_owner(args.context) if args.context else None
    names = args.estimator or plugins.names("estimators")  # --context adds a column, it drops none
    if not names:
        raise UserError("no estimators are registered; see `llmulator plugins`")
    estimates, skipped, refused, failed = [], {}, {}, {}
    for n in names:
        plugins.entry("estimators", n)  # an unknown name is bad usage (exit 2), not a plugin failure
        try:
            est = plugins.get("estimators", n)
            why = why_unavailable(est)
        except Exception as e:  # noqa: BLE001 - its factory or available() raised: its plugin's bug
            failed[n] = _failure("estimators", n, e)
            continue
        if why:
            if args.estimator:
                raise UserError(f"estimator '{n}' is not available: {why}")
            skipped[n] = why
            continue
        try:
            estimates.extend(est.estimate([d]))
        except SpecError as e:
            # this estimator cannot price this design (e.g. a loop without an expected trip count): say
            # so for it and keep the others' results
            if len(names) == 1:
                raise
            refused[n] = [dg.format() for dg in e.diagnostics]
        except UserError as e:
            if len(names) == 1:
                raise
            refused[n] = [str(e)]
        except Exception as e:  # noqa: BLE001 - a broken plugin must not take the others' results down
            failed[n] = _failure("estimators", n, e)
    if owner:  # the base estimator corrected by the saved context, as one more column
        cal, base = owner
        col = f"{base}@{args.context}"
        est = plugins.get("estimators", base)
        why = why_unavailable(est)
        if why:
            raise UserError(f"context '{args.context}' calibrates estimator '{base}', which is not available: {why}")
        try:
            estimates.extend(cal.apply(est, args.context).estimate([d]))
        except (SpecError, UserError) as e:
            if not estimates:
                raise
            refused[col] = [dg.format() for dg in e.diagnostics] if isinstance(e, SpecError) else [str(e)]
        except Exception as e:  # noqa: BLE001 - the calibrator's plugin's bug
            failed[col] = _failure("calibrators", cal.name, e)
    if refused and not estimates and not failed:
        raise UserError("no estimator could price this design:\n" + "\n".join(_refusal_lines(refused, "")))
    status = 3 if failed else 0  # 3: a plugin raised; the other estimators' results are printed all the same
    warned = _design_warning_lines(d)
    if args.json:
        print(json.dumps({"design": d.to_dict(), "estimates": [e.to_dict() for e in estimates],
                          "warnings": warned, "skipped": skipped,
                          "refused": refused,
                          "failed": failed},
                         indent=2))
        _print_failures("estimator", failed)
        return status
    from .plaintable import PlainConsole
    from .report import estimate_grid, terms_grid
    con = PlainConsole.for_stdout(_console, wide=bool(os.environ.get(WIDE_ENV)))  # rich only where needed
    if estimates or refused:
        con.print(estimate_grid(d, estimates, {**{n: "refused" for n in refused}, **{n: "failed" for n in failed}}))
    if args.terms:
        for e in estimates:
            if e.terms or e.breakdown:
                con.print(terms_grid(e))
    for e in estimates:
        for note in e.notes:
            con.print(f"[dim]{e.estimator}: {note}[/dim]")
    for line in _refusal_lines(refused, "cannot price this design: "):
        con.print(line, markup=False, highlight=False)
    if len(skipped) == 1:
        (n, why), = skipped.items()
        con.print(f"[dim]skipped {n}: {why}[/dim]")
    elif skipped:  # one line, not a paragraph per estimator; --json and `llmulator plugins` give the reasons
        con.print(f"[dim]skipped (not available): {', '.join(skipped)}; reasons with --json[/dim]")
    for w in warned:
        console(stderr=True).print(w, markup=False, highlight=False)
    _print_failures("estimator", failed)
    return status


def _refusal_lines(refused: dict[str, list[str]], lead: str) -> list[str]:
    """One line per refusing estimator (``lead`` after its name), its further reasons indented under it;
    a reason another estimator already gave is named, not repeated (the llm's refusal carries the
    analytical model's, which was printed twice before)."""
    shown: dict[str, str] = {}
    lines = []
    for n, msgs in refused.items():
        for k, m in enumerate(msgs):
            if k and m in shown:
                lines.append(f"    because {shown[m]} cannot price it (above)")
                continue
            lines.append((f"{n}: {lead}" if k == 0 else "    because: ") + m)
            shown.setdefault(m, n)
    return lines


def _design_warning_lines(d) -> list[str]:
    """validate's warnings about a design, which ``estimate`` prints beside its prices: the same facts in both
    places (an outside user saw `validate` warn of 32-bit operands on an 8-bit MAC, and `estimate`, which
    prices them on it, say nothing)."""
    from . import checks
    try:
        return [w.format() for w in checks.design_warnings(d)]
    except (SpecError, UserError):  # what cannot be checked is the estimators' to refuse
        return []


def cmd_profile(args) -> int:
    from . import plugins
    from .hookspecs import set_limits, why_unavailable
    from .inputs import inputs_for
    d = _load(args)
    plugins.entry("profilers", args.profiler)  # an unknown name is bad usage (exit 2)
    try:
        prof = plugins.get("profilers", args.profiler)
        why = why_unavailable(prof)
    except (SpecError, UserError):
        raise
    except Exception as e:  # noqa: BLE001 - its plugin's bug
        _print_failures("profiler", {args.profiler: _failure("profilers", args.profiler, e)})
        return 3
    if why:
        raise UserError(f"profiler '{args.profiler}' is not available: {why}")
    from .sandbox import Limits
    Limits(wall_s=args.time_limit or 60.0, mem_bytes=args.mem_limit).check()  # no value turns a limit off
    set_limits(prof, time_limit_s=args.time_limit or 60.0, mem_limit_mb=args.mem_limit)  # its declared limits
    if args.time_limit is not None:  # the reference and generator too (they kept 120 s: an outside probe)
        from . import usercode
        usercode.limit_wall_time(args.time_limit)
    if args.variant is not None:
        from .inputs import variants
        if args.variant not in variants(d.workload):
            known = ", ".join(variants(d.workload)) or "none"
            raise UserError(f"workload '{d.workload.name}' has no input variant '{args.variant}' (variants: {known})")
    inputs = inputs_for(d, args.inputs, args.variant)
    try:
        p = prof.profile(d, inputs)
    except (SpecError, UserError):
        raise
    except Exception as e:  # noqa: BLE001 - a profiler that raises is its plugin's bug, not llmulator's
        _print_failures("profiler", {args.profiler: _failure("profilers", args.profiler, e)})
        return 3
    ok = p.functional_check.startswith("pass") or p.functional_check.startswith("not-run")
    warned = _design_warning_lines(d)  # as estimate prints them: the profile prices the same design
    if args.json:
        print(json.dumps({"design": d.to_dict(), "profile": p.to_dict(), "warnings": warned}, indent=2))
    else:
        from rich.table import Table

        from .report import fmt
        from .results import UNITS
        con = _console()
        t = Table(title=f"{p.profiler} profile of {d.name}")
        t.add_column("metric")
        t.add_column("unit")
        t.add_column("value", justify="right")
        for k, v in p.metrics.items():
            t.add_row(k, UNITS.get(k, ""), fmt(v))
        con.print(t)
        con.print(f"inputs: {p.inputs}")
        trips = {k: v for k, v in p.counters.items() if k.startswith("trips.")}
        if trips:
            con.print("mean trip counts: " + ", ".join(f"{k[6:]} {v:.4g}" for k, v in trips.items()))
        if args.counters:
            ct = Table(title="counters")
            ct.add_column("counter")
            ct.add_column("value", justify="right")
            for k, v in p.counters.items():
                ct.add_row(k, fmt(v))
            con.print(ct)
        for note in p.notes:
            con.print(f"note: {note}", markup=False)
        style = "green" if ok else "bold red"
        con.print(f"functional check: [{style}]{p.functional_check}[/{style}]   ({p.seconds:.3f} s)")
        for w in warned:
            console(stderr=True).print(w, markup=False, highlight=False)
    if not ok:
        print("error: the design's outputs do not match the workload's NumPy reference "
              f"({p.functional_check})", file=sys.stderr)
        return 4
    return 0


def _availability(kind: str, name: str) -> tuple[bool | None, str]:
    """(usable?, why not) of one component: its ``available()`` (True, "" without one); a component whose
    factory or ``available()`` raises is not available, and the reason blames its plugin."""
    from . import plugins
    from .hookspecs import why_unavailable
    try:
        comp = plugins.get(kind, name)
        why = why_unavailable(comp)
    except Exception as e:  # noqa: BLE001 - a broken plugin: say so in its row
        return False, f"raised {type(e).__name__}: {e} ({plugins.blame(kind, name)})"
    return (why is None), (why or "")


def cmd_plugins(args) -> int:
    from . import plugins
    reg = plugins.registry()
    rows = []
    con = _console()
    with con.status("checking which components are available...", spinner="dots") if (
            con.is_terminal and not args.no_check and not args.json) else _nothing():
        for kind, entries in reg.items():
            for name, r in entries.items():
                ok, why = (None, "not checked") if args.no_check else _availability(kind, name)
                rows.append({"kind": kind[:-1], "name": name, "plugin": r.plugin, "package": r.distribution,
                             "version": str(getattr(r.factory, "version", "")), "available": ok, "reason": why})
    broken = plugins.broken()
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        from rich.table import Table
        t = Table(title="registered components")
        for c in ("kind", "name", "version", "plugin", "package", "available"):
            t.add_column(c, overflow="fold")
        reasons = []  # under the table, where a long reason can wrap at any width
        for r in rows:
            avail = "-" if r["available"] is None else "yes"
            if r["available"] is False:
                reasons.append(f"[{len(reasons) + 1}] {r['name']}: {r['reason']}")
                avail = f"no [{len(reasons)}]"
            t.add_row(r["kind"], r["name"], r["version"], r["plugin"], r["package"] or "-", avail)
        con.print(t)
        for line in reasons:
            con.print(line, markup=False, highlight=False)
    for why in broken:
        print(f"error: {why}", file=sys.stderr)
    return 3 if broken else 0


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def cmd_list(args) -> int:
    from .library import entries
    kinds = [args.kind] if args.kind else ["architecture", "workload", "mapping"]
    data = {k: entries(k) for k in kinds}
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    from rich.table import Table
    con = _console()
    for k in kinds:
        t = Table(title=f"{k}s")
        t.add_column("name", style="bold")
        if k == "mapping":
            t.add_column("workload")
            t.add_column("architecture")
        t.add_column("description")
        for e in data[k]:
            extra = [e.get("workload", ""), e.get("architecture", "")] if k == "mapping" else []
            row = [e["name"], *extra, e["description"]]
            t.add_row(*row)
        con.print(t)
    return 0


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command runs so that it ends as Ctrl-C ends it: files written atomically, the
    work done kept, the scratch folders and the sandboxed children removed (``llmulator.scratch``). Before,
    SIGTERM killed the process where it stood and its run folders stayed in /tmp."""


def _end_on_sigterm() -> None:
    """Make SIGTERM raise :class:`Terminated` in this process (a forked pool worker that inherits the handler
    takes the default action: its parent's pool ends it)."""
    import signal
    owner = os.getpid()

    def handler(signum, frame):
        if os.getpid() != owner:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise Terminated

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # pragma: no cover - not the main thread: leave the default
        pass


def main(argv: Sequence[str] | None = None) -> int:
    try:
        if argv is None:  # the command itself (a caller's own process keeps its handlers)
            _end_on_sigterm()
        argv = sys.argv[1:] if argv is None else list(argv)
        parser = _parser_for(argv)
        args = parser.parse_args(argv)
        if args.trust_workload:
            from .sandbox import TRUST_ENV
            os.environ[TRUST_ENV] = "1"  # worker processes inherit it
        if args.wide:
            os.environ[WIDE_ENV] = "1"
        if not getattr(args, "func", None):
            parser.print_help()
            return 0
        return int(args.func(args) or 0)
    except SpecError as e:
        for d in e.diagnostics:
            print(d.format(), file=sys.stderr)
        return 2
    except UserError as e:
        # (a name from the command line or a file, escapes and all, reached the terminal raw: an outside probe)
        print(f"error: {escaped(str(e), lines=True)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        from .pools import cancel_all, wait_stopped
        cancel_all()  # a pool whose generator the interrupt left suspended would otherwise run its whole queue
        print("terminated" if isinstance(e, Terminated) else "interrupted", file=sys.stderr)
        with contextlib.suppress(KeyboardInterrupt):  # (a second Ctrl-C leaves the running jobs to the exit)
            wait_stopped()
        return 143 if isinstance(e, Terminated) else 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # noqa: BLE001 - last-resort guard: never a bare traceback
        import traceback
        print(f"internal error: {type(e).__name__}: {e}", file=sys.stderr)
        print("this is a bug in llmulator; please report it with the command and the files used.\n"
              "details:\n" + traceback.format_exc(limit=6), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
