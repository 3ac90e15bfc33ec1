"""`llmulator calibrate` (the feedback loop) and `llmulator contexts` (list or remove saved contexts)."""

from __future__ import annotations

import argparse
import json

EPILOG = """examples:
  llmulator calibrate hls-fpga spmv-csr spmv-csr-hls-fpga --variant skewed --inputs 1 --inputs 2 --context spmv
  llmulator calibrate hls-fpga topk topk-opt --variant ascending --calibrator scale --estimator analytical --inputs 1
  llmulator estimate hls-fpga spmv-csr spmv-csr-hls-fpga --variant skewed --context spmv
Each iteration: estimate, profile on the next input (inputs are cycled; one already profiled is not run again),
add the feedback to the context's replay buffer, update, check on held-back feedback (a worse update is rolled
back). An iteration scored on an input the calibration has already fitted is marked in-sample: its error says
the fit worked, not that the next input will be right. So the calibration ends by profiling a held-out input
(--holdout; by default one seed from 1000 up that no feedback came from) and reports the error on it before and
after calibration. Contexts live under $LLMULATOR_HOME/contexts (default ~/.cache/llmulator/contexts)."""


def add_commands(subparsers) -> None:
    p = subparsers.add_parser("calibrate", help="adapt an estimator to a design's actual inputs with profiler feedback",
                              formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("arch", help="architecture YAML file or library name")
    p.add_argument("workload", help="workload YAML file or library name")
    p.add_argument("mapping", help="mapping YAML file or library name")
    p.add_argument("--preset", help="workload size preset")
    p.add_argument("--inputs", action="append", metavar="SEED|DIR",
                   help="an integer seed or a folder of ARRAY.npy files (repeatable; default: the workload's seed)")
    p.add_argument("--holdout", action="append", metavar="SEED|DIR",
                   help="an input to measure the calibrated estimator on, never fitted to (repeatable; default: one "
                        "seed from 1000 up that neither --inputs nor the context's feedback uses); one profiler run "
                        "each, not counted against --budget")
    p.add_argument("--no-holdout", action="store_true",
                   help="skip the held-out measurement (the report then has only in-sample errors after an update)")
    p.add_argument("--variant", help="input variant of the workload (e.g. skewed)")
    p.add_argument("--calibrator", default="dpo", help="dpo (default), sft or scale")
    p.add_argument("--estimator", default="llm", help="estimator to calibrate (default: llm)")
    p.add_argument("--profiler", default="hlsim", help="profiler giving the feedback (default: hlsim)")
    p.add_argument("--context", help="name to save the calibration under (default: from the design's name)")
    p.add_argument("--max-iters", type=int, default=5, metavar="N", help="most updates (default 5)")
    p.add_argument("--budget", type=int, default=10, metavar="RUNS", help="most profiler runs (default 10)")
    p.add_argument("--tol", type=float, default=10.0, metavar="PCT",
                   help="stop when the error of --metric is under PCT percent (default 10)")
    p.add_argument("--metric", default="cycles", help="metric whose error decides (default cycles)")
    p.add_argument("--steps", type=int, help="optimizer steps per update (dpo/sft; default 24)")
    p.add_argument("--lr", type=float, help="learning rate of the LoRA adapter (dpo/sft; default 5e-3)")
    p.add_argument("--threads", type=int, help="torch threads for dpo/sft (1 is fastest on a busy machine)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the replay buffer draws and the adapter training (default 0)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run_calibrate)

    c = subparsers.add_parser("contexts", help="list saved calibration contexts, or remove one",
                              epilog="examples:\n  llmulator contexts\n  llmulator contexts --remove spmv",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--remove", metavar="NAME", help="delete this context (adapter, scale factors, replay buffer)")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(func=run_contexts)


def _plural(n: int, word: str, many: str | None = None) -> str:
    """``1 profiler run``, ``2 profiler runs``, ``0 entries``."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def _short(origin: str) -> str:
    """``generated: seed=1, variant=skewed`` -> ``seed 1``; ``directory in/`` stays."""
    if origin.startswith("generated: seed="):
        return "seed " + origin.removeprefix("generated: seed=").split(",")[0]
    return origin


def _scored(it) -> str:
    """The input an iteration's error is measured on, and whether the calibration has fitted it."""
    if it.iteration == 0 and not it.in_sample:
        return f"{_short(it.inputs)} (before calibration)"
    return f"{_short(it.inputs)} ({'in-sample: fitted to it' if it.in_sample else 'new input'})"


def _row(it, metric: str = "cycles") -> list[str]:
    upd = it.update or "-"
    if it.check_before is not None:
        upd += f" (check {it.check_before:.1f}% -> {it.check_after:.1f}%)"
    return [str(it.iteration), f"{it.ape[metric]:.2f}", _scored(it), str(it.profiler_runs), f"{it.seconds:.2f}",
            upd]


def summary(report, metric: str) -> list[str]:
    """What a calibration achieved, each figure named in-sample or held out."""
    last = report.iterations[-1]
    lines = [f"stopped: {report.stopped} after {_plural(len(report.iterations) - 1, 'update')} "
             f"({_plural(report.rollbacks, 'rolled back', 'rolled back')}), "
             f"{_plural(report.profiler_runs, 'profiler run')}, {report.seconds:.1f} s; replay buffer "
             f"{_plural(report.buffer_entries, 'entry', 'entries')}"]
    if len(report.iterations) > 1:
        kind = ("in-sample: on an input it was fitted to, so this says the fit worked, not that the next input "
                "will be right" if last.in_sample else "on an input new to the calibration")
        lines.append(f"{metric} APE {report.static_ape:.2f}% before -> {report.final_ape:.2f}% after "
                     f"({_short(last.inputs)}; {kind})")
    h = report.held_out
    if h:
        lines.append(f"held out ({', '.join(_short(o) for o in h['inputs'])}, never fitted to): {metric} APE "
                     f"{h['static_ape'][metric]:.2f}% uncalibrated -> {h['calibrated_ape'][metric]:.2f}% calibrated")
    elif len(report.iterations) > 1:
        lines.append("no held-out input was measured (--no-holdout): the figures above are the only evidence")
    return lines


def _fresh_seed(design, inputs, context: str | None, variant: str | None) -> str:
    """A seed from 1000 up that none of the calibration's inputs, nor the context's earlier feedback, used."""
    from . import store
    from .calibrators import default_context
    used = {i.origin for i in inputs}
    ctx = context or default_context(design)
    try:
        path = store.context_path(ctx) / store.BUFFER_FILE
        used |= {e.get("inputs") for e in store.ReplayBuffer(path).entries} if path.is_file() else set()
    except Exception:  # noqa: BLE001 - a bad name or damaged buffer is reported by the calibration itself
        pass
    from llmulator.inputs import inputs_for
    seed = 1000
    while inputs_for(design, str(seed), variant).origin in used:
        seed += 1
    return str(seed)


def run_calibrate(args) -> int:
    from llmulator import plugins
    from llmulator.design import load_design
    from llmulator.errors import UserError
    from llmulator.inputs import inputs_for
    from llmulator.library import resolve

    from . import loop
    opts = {"max_iters": args.max_iters, "budget": args.budget, "tol": args.tol, "metric": args.metric}
    loop.check_options(opts)
    for k in ("steps", "threads"):
        if getattr(args, k) is not None and getattr(args, k) < 1:
            raise UserError(f"--{k} must be a positive integer, got {getattr(args, k)}")
    if args.lr is not None and not args.lr > 0:
        raise UserError(f"--lr must be positive, got {args.lr}")
    # the design carries the variant, as in `estimate --variant` and `profile --variant`: the prompt the model is
    # calibrated on describes the input distribution the profiled inputs come from
    d = load_design(resolve("architecture", args.arch), resolve("workload", args.workload),
                    resolve("mapping", args.mapping), preset=args.preset, variant=args.variant)
    cal = plugins.get("calibrators", args.calibrator)
    est = plugins.get("estimators", args.estimator)
    prof = plugins.get("profilers", args.profiler)
    for kind, name, obj in (("calibrator", args.calibrator, cal), ("estimator", args.estimator, est),
                            ("profiler", args.profiler, prof)):
        why = obj.available() if hasattr(obj, "available") else None
        if why:
            raise UserError(f"{kind} '{name}' is not available: {why}")
    inputs = [inputs_for(d, s, args.variant) for s in (args.inputs or [None])]
    if args.no_holdout and args.holdout:
        raise UserError("--holdout and --no-holdout contradict each other; give one")
    holdout = [] if args.no_holdout else [inputs_for(d, s, args.variant) for s in
                                          (args.holdout or [_fresh_seed(d, inputs, args.context, args.variant)])]

    from llmulator.cli import console
    con = console(stderr=args.json)

    def show(it):
        con.print(f"[dim]iteration {it.iteration}: {args.metric} APE {it.ape[args.metric]:.2f}% on {_scored(it)}, "
                  f"{_plural(it.profiler_runs, 'profiler run')}, {it.seconds:.2f} s {it.update}[/dim]")

    report = cal.calibrate(d, inputs, est, prof, context=args.context, seed=args.seed, on_iteration=show,
                           steps=args.steps, lr=args.lr, threads=args.threads, holdout=holdout, **opts)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return 0
    from rich.table import Table
    t = Table(title=f"{args.calibrator} calibration of {d.name} (context '{report.context}')")
    for c in ("iteration", f"{args.metric} APE %", "scored on", "profiler runs", "seconds", "update"):
        t.add_column(c, justify="left" if c in ("update", "scored on") else "right")
    for it in report.iterations:
        t.add_row(*_row(it, args.metric))
    con.print(t)
    for line in summary(report, args.metric):
        con.print(line, markup=False, highlight=False)
    extra = "".join(f" --{k} {v}" for k, v in (("preset", args.preset), ("variant", args.variant)) if v)
    con.print(f"use it with: llmulator estimate {args.arch} {args.workload} {args.mapping}{extra} "
              f"--context {report.context}")
    return 0


def run_contexts(args) -> int:
    from . import store
    if args.remove:
        store.remove_context(args.remove)
        print(f"removed context '{args.remove}'")
        return 0
    ctxs = store.list_contexts()
    if args.json:
        print(json.dumps(ctxs, indent=2))
        return 0
    from llmulator.cli import console
    from rich.table import Table
    t = Table(title=f"calibration contexts in {store.contexts_dir()}")
    for c in ("name", "calibrator", "estimator", "updates", "rollbacks", "buffer", "state", "updated"):
        t.add_column(c)
    for name, m in ctxs.items():
        state = m.get("adapter") or ", ".join(f"{k} x{v:.3g}" for k, v in (m.get("scale") or {}).items()) or "-"
        t.add_row(name, str(m.get("calibrator")), str(m.get("estimator")), str(m.get("updates", 0)),
                  str(m.get("rollbacks", 0)), str(m.get("buffer_entries", 0)), state, str(m.get("updated", "")))
    console().print(t)
    if not ctxs:
        print("no contexts yet: make one with `llmulator calibrate`")
    return 0
