"""The `llmulator dse` verb: argument parsing and printing; the work is in run.py."""

from __future__ import annotations

import argparse
import json
import math

from llmulator.errors import UserError

EPILOG = """examples:
  llmulator dse systolic-16x16 gemm --space gemm-large-systolic --verify 5 --out out/dse-gemm
  llmulator dse systolic-16x16 gemm --space spaces/gemm-small-systolic.yaml --budget 500 --objective edp
  llmulator dse systolic-16x16 gemm --space gemm-large-systolic --workers 2 --out out/dse
  llmulator dse systolic-16x16 gemm --space gemm-large-systolic --scheduler tcp://127.0.0.1:8786
The search is exhaustive when the space has no more points than --budget, else an evolutionary
search (or --search random) evaluates --budget points. The --verify best designs (and, with
--low-confidence Q, designs whose estimator confidence is below Q) are re-measured with hlsim.
Rerunning with the same --out reuses designs already profiled (out/profiles.json).
exit status: 0 done; 2 bad input; 3 the estimator or the profiler raised an exception other than declining a
design (a bug in its plugin, named on stderr with its package): the points it raised on are invalid (reason
"estimator raised ...") or unverified, and everything else is printed and written all the same."""


def add_command(subparsers) -> None:
    p = subparsers.add_parser("dse", help="explore a mapping/hardware design space with a fast estimator, "
                              "verify the best designs with a profiler",
                              formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("arch", help="base architecture YAML file or library name")
    p.add_argument("workload", help="workload YAML file or library name")
    p.add_argument("--space", required=True, help="space YAML file or library name (spaces/)")
    p.add_argument("--mapping", help="base mapping (default: the space's base_mapping, else the library pairing)")
    p.add_argument("--preset", help="workload size preset (default: the space's, else the base mapping's)")
    from llmulator.cli import add_estimator_options
    add_estimator_options(p, default="analytical", what="the one estimator that drives the search")
    p.add_argument("--budget", type=int, default=20000, help="most points evaluated (default 20000)")
    p.add_argument("--search", choices=["auto", "exhaustive", "random", "evolve"], default="auto",
                   help="auto: exhaustive when the space fits the budget, else evolve")
    p.add_argument("--objective", choices=["cycles", "energy", "edp"],
                   help="what to minimise (default: the space's objective, else cycles)")
    p.add_argument("--verify", type=int, default=5, metavar="K", help="re-measure the K best designs (default 5)")
    p.add_argument("--low-confidence", type=float, metavar="Q",
                   help="also re-measure designs whose estimator confidence is below Q (estimators that report one)")
    p.add_argument("--profiler", default="hlsim", help="profiler for verification (default hlsim)")
    p.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                   help="wall-time limit of one profile in seconds (default 60)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, default=1, help="local worker processes for verification (default 1)")
    g.add_argument("--scheduler", help="address of a Dask scheduler for verification")
    p.add_argument("--out", help="folder for points.csv, summary.json, pareto.png, profiles.json")
    p.add_argument("--seed", type=int, default=0, help="seed of the random and evolutionary searches (default 0)")
    p.add_argument("--top", type=int, default=15, help="rows of the Pareto table printed (default 15)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (it goes to stderr)")
    p.set_defaults(func=run_command)


def driving_estimator(args) -> str:
    """The one estimator that drives a dse run, after checking --workers, --profiler and --estimator
    (UserError, exit 2, otherwise). Shared by ``dse`` on a design and ``dse --network``."""
    from llmulator import plugins

    if args.workers < 1:
        raise UserError("--workers must be at least 1")
    if args.profiler not in plugins.names("profilers"):
        raise UserError(f"unknown profiler '{args.profiler}' (known: {', '.join(plugins.names('profilers'))})")
    chosen = args.estimator or ["analytical"]
    if len(chosen) > 1:
        raise UserError(f"dse is driven by one estimator; got {', '.join(chosen)} (compare estimators on the "
                        "best designs with `llmulator estimate`, or run dse once per estimator)")
    if chosen[0] not in plugins.names("estimators"):
        raise UserError(f"unknown estimator '{chosen[0]}' (known: {', '.join(plugins.names('estimators'))})")
    return chosen[0]


def run_command(args) -> int:
    from llmulator import plugins
    from llmulator.library import resolve

    from .run import explore
    from .space import load_space, resolve_space

    args.estimator = driving_estimator(args)
    space = load_space(resolve_space(args.space), resolve("architecture", args.arch),
                       resolve("workload", args.workload), mapping=args.mapping, preset=args.preset)
    try:  # the estimator's factory and available() are its plugin's code
        est = plugins.get("estimators", args.estimator)
        if hasattr(est, "available"):
            est.available()
    except Exception as e:  # noqa: BLE001 - its plugin's bug: nothing to search with
        from .evaluate import bug_record
        from .run import failures
        print_failures(failures(args.estimator, bug_record(e), args.profiler, []))
        return 3
    s = explore(space, est, budget=args.budget, strategy=args.search, objective=args.objective,
                verify=args.verify, low_confidence=args.low_confidence, workers=args.workers,
                scheduler=args.scheduler, out=args.out, seed=args.seed, progress=not args.no_progress and not args.json,
                profiler=args.profiler, time_limit_s=args.time_limit)
    if args.json:
        print(json.dumps({k: v for k, v in s.items() if not k.startswith("_")}, indent=2, default=str))
    else:
        print_summary(s, args.top, args.out)
    print_failures(s["failures"])
    return 3 if s["failures"] else 0


def print_failures(failures: dict) -> None:
    """``error: estimator 'x' raised ...`` on stderr, with the plugin and package to blame."""
    import sys
    for kind, items in failures.items():
        for name, f in items.items():
            n = f.get("points") or f.get("designs")
            on = (f" on {n} point{'s' if n != 1 else ''}" if "points" in f else
                  f" on {n} design{'s' if n != 1 else ''}") if n else ""
            print(f"error: {kind[:-1]} '{name}' raised {f['error']}{on}\n  {f['blame']}"
                  + (f"\n  raised at {f['where']}" if f.get("where") else ""), file=sys.stderr)


def _fmt(x) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def print_summary(s: dict, top: int = 15, out: str | None = None) -> None:
    from llmulator.cli import console
    from rich.table import Table

    con = console()
    con.print(f"[bold]{s['space']}[/]: {s['workload']}{'@' + s['preset'] if s['preset'] else ''} on "
              f"{s['architecture']}, {s['space_size']:,} points, {s['strategy']} search with {s['estimator']}: "
              f"{s['evaluated']:,} evaluated ({s['valid']:,} valid) in {s['search_seconds']:.2f} s "
              f"({s['points_per_second']:,.0f} points/s)")
    if s.get("repriced_points"):
        con.print(f"{s['repriced_points']:,} of the best points re-priced one by one with `estimate` (the vectorised "
                  "path leaves out the PE array's waits for banked buffers)"
                  + ("" if s.get("report_exact", True) else "; the limit was reached: points.csv's exact column "
                     "marks the figures that are still lower bounds"))
    if s["invalid_reasons"]:
        con.print("invalid points skipped: " + ", ".join(f"{k}: {v:,}" for k, v in
                                                        sorted(s["invalid_reasons"].items(), key=lambda t: -t[1])))
    if s["best"]:
        b = s["best"]
        con.print(f"best by {s['objective']}: {b['params']}  cycles {_fmt(b['cycles'])}, "
                  f"energy {_fmt(b['energy_pj'])} pJ, area {_fmt(b['area_um2'])} um^2")
    if s["verified"]:
        t = Table(title=f"verified with {s['profiler']} ({s['verify_seconds']:.1f} s)")
        for c in ("pred. rank", "meas. rank", "why", "design", "pred. cycles", "meas. cycles", "cycles err %",
                  "pred. energy pJ", "meas. energy pJ"):
            t.add_column(c, justify="right" if c not in ("why", "design") else "left")
        for v in s["verified"]:
            m = v["measured"] or {}
            err = (v["predicted"]["cycles"] / m["cycles"] - 1) * 100 if m.get("cycles") else None
            t.add_row(str(v["predicted_rank"] or "-"), str(v.get("measured_rank", "-")), v["why"],
                      v["params"] + (f"  [red]{v['error']}[/]" if v["error"] else ""),
                      _fmt(v["predicted"]["cycles"]), _fmt(m.get("cycles")),
                      "-" if err is None else f"{err:+.1f}", _fmt(v["predicted"]["energy_pj"]),
                      _fmt(m.get("energy_pj")))
        con.print(t)
        tau = s["kendall_tau_top"]
        con.print(f"Kendall tau (predicted vs measured {s['objective']} of the top designs): "
                  f"{'-' if tau is None else f'{tau:.3f}'}")
    t = Table(title=f"Pareto front (cycles, energy, area): {len(s['pareto'])} designs")
    for c in ("cycles", "energy pJ", "area um^2", "design"):
        t.add_column(c, justify="right" if c != "design" else "left")
    for p in s["pareto"][:top]:
        t.add_row(_fmt(p["cycles"]), _fmt(p["energy_pj"]), _fmt(p["area_um2"]), p["params"])
    if len(s["pareto"]) > top:
        t.add_row("...", "", "", f"{len(s['pareto']) - top} more in summary.json")
    con.print(t)
    if out:
        con.print(f"wrote {out}/points.csv, summary.json, pareto.png")
