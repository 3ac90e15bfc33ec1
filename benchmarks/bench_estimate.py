"""Cold-process latency of `llmulator estimate` on one design: what a user waits for at the prompt.

Run:  .venv/bin/python benchmarks/bench_estimate.py [--runs 9] [--baseline COMMIT] [--out FILE]
Writes docs/benchmarks-estimate.md (atomically; --out elsewhere) and prints the same tables.

Each case is a fresh Python process (``python -m llmulator.cli estimate systolic-16x16 gemm gemm-ws-16x16``,
output to /dev/null): wall time (what the user waits for) and CPU time (user + system of the process, less
sensitive to other processes on the machine), median / min / max over ``--runs`` runs. Cases:

* analytical only (``--estimator analytical``) and all bundled estimators (the default);
* reference processes: ``python -c pass``, ``python -c "import numpy"`` and ``python -c "import torch"`` (the
  floor of any torch estimator; the learned estimators run in NumPy since issue 17).

A warm-up run of every case comes first: it fills the file caches and, since issue 17, the spec-validation memo
(``$LLMULATOR_CACHE/valid``, see ``llmulator.schema``), as a user's first run of a design does; the timed runs
are cold processes with that memo warm (a design never loaded before also pays for importing jsonschema, ~70 ms
of CPU). Since analytical 0.9 the warm-up also fills the bank schedule's memo (``$LLMULATOR_CACHE/banks``,
``llmulator.banks``): a PE-array design never estimated before also replays its buffer's schedule, ~40 ms of
CPU for this design (up to ~0.2 s for a long nest), once.

Runs are interleaved (one run of every case in turn), so a change in the machine's load hits all cases alike;
the load average is sampled before every run and reported. Bytecode is compiled first (``compileall``), as an
installed package has it: an environment with PYTHONDONTWRITEBYTECODE=1 (this project's sandbox) would
otherwise compile every module of the project in every process.

``--baseline COMMIT`` also runs the same cases on that commit's ``core/``, ``plugins/`` and ``library/``
(extracted with ``git archive`` into a temporary folder, put first on PYTHONPATH), interleaved with the
current tree: before/after in the same conditions.

The last sections say where the time goes: the all-estimators case once under ``python -X importtime`` (the
largest top-level imports), the analytical-only command's steps timed one by one in a fresh process, and each
estimator of the all-estimators command (its model loading included) in a fresh process.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from _report import md_table, write_report  # noqa: E402

DESIGN = ("systolic-16x16", "gemm", "gemm-ws-16x16")
CASES = {
    "analytical only": ["-m", "llmulator.cli", "estimate", *DESIGN, "--estimator", "analytical"],
    "all estimators": ["-m", "llmulator.cli", "estimate", *DESIGN],
}
REFERENCE = {
    "python -c pass": ["-c", "pass"],
    "python -c 'import numpy'": ["-c", "import numpy"],
    "python -c 'import torch'": ["-c", "import torch"],
}
TARGETS = {"analytical only": 0.3, "all estimators": 2.0}  # seconds of wall time (issue 17, item 1)


def compile_tree(*folders: Path) -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", *map(str, folders)], check=True,
                   stdout=subprocess.DEVNULL)


def baseline_tree(commit: str, tmp: Path) -> dict[str, str]:
    """The environment that runs ``commit``'s packages: its folders extracted, linked under the import names."""
    src = tmp / "tree"
    src.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "core", "plugins", "library"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    pkgs = tmp / "pkgs"
    pkgs.mkdir()
    for name, folder in (("llmulator", "core"), ("llmulator_plugins", "plugins"), ("llmulator_library", "library")):
        (pkgs / name).symlink_to(src / folder)
    compile_tree(src / "core", src / "plugins")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(pkgs) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, *argv], env=env, cwd=tempfile.gettempdir(), stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


# the analytical-only command, phase by phase, in one fresh process (the CLI's own steps, called one by one)
PHASES = r"""
import contextlib, io, json, time
t = [time.perf_counter()]
import llmulator.cli as cli
t.append(time.perf_counter())
getattr(cli, "numpy_with_one_blas_thread", lambda: __import__("numpy"))()  # main() does it first (before: later)
t.append(time.perf_counter())
argv = ["estimate", *DESIGN, "--estimator", "analytical"]
parser_for = getattr(cli, "_parser_for", None)  # the invoked verb's parser (before: every verb's)
args = (parser_for(argv) if parser_for else cli.build_parser()).parse_args(argv)
t.append(time.perf_counter())
d = cli._load(args)
t.append(time.perf_counter())
from llmulator import plugins
est = plugins.get("estimators", "analytical")
t.append(time.perf_counter())
estimates = est.estimate([d])
t.append(time.perf_counter())
with contextlib.redirect_stdout(io.StringIO()):  # as cmd_estimate prints (before issue 17's plaintable: rich)
    from llmulator import report
    if hasattr(report, "estimate_grid"):
        from llmulator.plaintable import PlainConsole
        PlainConsole.for_stdout(cli.console, wide=False).print(report.estimate_grid(d, estimates))
    else:
        cli.console().print(report.estimate_table(d, estimates))
t.append(time.perf_counter())
print(json.dumps([b - a for a, b in zip(t, t[1:])]))
"""
PHASE_NAMES = ("import llmulator.cli", "import numpy (one BLAS thread)",
               "parser (the invoked verb's; every plugin's hook runs)",
               "load and check the design (YAML, "
               "schemas, kernel)", "the analytical estimator (its modules)", "estimate",
               "print the table (plain text to a pipe since issue 17; rich before)")


# each estimator of the all-estimators command, in one fresh process: the design loaded first, then every
# estimator's first estimate (its modules, its model, its prediction), as cmd_estimate calls them
PER_ESTIMATOR = r"""
import json, time
import llmulator.cli as cli
from llmulator import plugins
d = cli._load(cli.build_parser().parse_args(["estimate", *DESIGN]))
out = []
for n in plugins.names("estimators"):
    t0 = time.perf_counter()
    est = plugins.get("estimators", n)
    if est.available() if hasattr(est, "available") else None:
        continue
    est.estimate([d])
    out.append((n, time.perf_counter() - t0))
print(json.dumps(out))
"""


def per_estimator(env: dict[str, str], runs: int) -> list[tuple[str, str]] | None:
    """Median ms of each available estimator's first estimate in a fresh process (None on failure)."""
    import json
    code = f"DESIGN = {list(DESIGN)!r}\n" + PER_ESTIMATOR
    got: dict[str, list[float]] = {}
    for _ in range(runs):
        r = subprocess.run([sys.executable, "-c", code], env=env, cwd=tempfile.gettempdir(), capture_output=True,
                           text=True)
        if r.returncode != 0:
            return None
        for n, s in json.loads(r.stdout.strip().splitlines()[-1]):
            got.setdefault(n, []).append(s)
    return [(n, f"{statistics.median(v) * 1e3:.0f}") for n, v in got.items()]


def phases(env: dict[str, str], runs: int) -> list[tuple[str, str]] | None:
    """Median seconds of each phase of the analytical-only command (None if the CLI's helpers changed)."""
    import json
    code = f"DESIGN = {list(DESIGN)!r}\n" + PHASES
    got = []
    for _ in range(runs):
        r = subprocess.run([sys.executable, "-c", code], env=env, cwd=tempfile.gettempdir(), capture_output=True,
                           text=True)
        if r.returncode != 0:
            return None
        got.append(json.loads(r.stdout.strip().splitlines()[-1]))
    return [(name, f"{statistics.median(g[i] for g in got) * 1e3:.0f}") for i, name in enumerate(PHASE_NAMES)]


def import_profile(env: dict[str, str], top: int = 10) -> tuple[list[tuple[str, float]], float]:
    """The largest top-level imports of one all-estimators run (ms, cumulative) and their total."""
    r = subprocess.run([sys.executable, "-X", "importtime", *CASES["all estimators"]], env=env,
                       cwd=tempfile.gettempdir(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    rows = []
    for line in r.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cum, name = line.split("|", 2)
        if cum.strip().isdigit() and not name[1:].startswith(" "):  # top level: no indentation
            rows.append((name.strip(), int(cum) / 1e3))
    rows.sort(key=lambda r: -r[1])
    return rows[:top], sum(ms for _, ms in rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--baseline", metavar="COMMIT", help="also run this commit's packages, interleaved")
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks-estimate.md"))
    args = ap.parse_args()
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["LLMULATOR_NO_STATUS"] = "1"
    compile_tree(ROOT / "core", ROOT / "plugins")
    trees = {"now": env}
    tmp = tempfile.TemporaryDirectory(prefix="bench-estimate-")
    if args.baseline:
        trees[f"before ({args.baseline})"] = baseline_tree(args.baseline, Path(tmp.name))
    jobs = [(tree, case, argv) for case, argv in CASES.items() for tree in trees]
    jobs += [("-", case, argv) for case, argv in REFERENCE.items()]
    for tree, _, argv in jobs:  # warm-up: file caches, and a first run of every tree
        run_once(argv, trees.get(tree, env))
    times: dict[tuple[str, str], list[tuple[float, float]]] = {(t, c): [] for t, c, _ in jobs}
    loads = []
    t_start = time.time()
    for _ in range(args.runs):
        for tree, case, argv in jobs:
            loads.append(os.getloadavg()[0])
            times[(tree, case)].append(run_once(argv, trees.get(tree, env)))
    minutes = (time.time() - t_start) / 60
    rows = []
    for (tree, case), ts in times.items():
        wall = sorted(w for w, _ in ts)
        cpu = statistics.median(c for _, c in ts)
        target = TARGETS.get(case)
        rows.append((case, tree, f"{statistics.median(wall):.2f}", f"{wall[0]:.2f}", f"{wall[-1]:.2f}", f"{cpu:.2f}",
                     f"<= {target:g}" if target else ""))
    imports, total = import_profile(env)
    steps = phases(env, args.runs)
    per_est = per_estimator(env, args.runs)
    import torch
    body = (f"Design `{' '.join(DESIGN)}`; {args.runs} runs of each case, interleaved, over {minutes:.1f} min; "
            f"load average during the runs: median {statistics.median(loads):.2f} (min {min(loads):.2f}, max "
            f"{max(loads):.2f}) on {len(os.sched_getaffinity(0))} cores; torch {torch.__version__}; bytecode "
            "compiled beforehand; the spec-validation memo and the bank schedule's memo filled by the warm-up "
            "runs (a design never loaded before also imports jsonschema, ~70 ms of CPU, and replays its banks "
            "once, ~40 ms for this one: llmulator.banks).\n\n"
            "## Cold process, one design\n\n"
            + md_table(["case", "tree", "median wall s", "min s", "max s", "median CPU s", "target s"], rows)
            + "\n\nWall time is what the user waits for; CPU time is the process's user + system time over all "
            "its threads (numpy and torch start thread pools, so it can exceed the wall time). The 2 cores are "
            "shared with other engineers' processes (test runs, training, benchmarks): a load average above 1 "
            "means they were busy during the runs, and wall times grow with it more than CPU times do.\n\n"
            "## Where a cold all-estimators process spends its time: the largest top-level imports\n\n"
            f"One run under `python -X importtime`: {total / 1e3:.2f} s of imports in all.\n\n"
            + md_table(["module", "ms (cumulative)"], [(f"`{n}`", f"{ms:.0f}") for n, ms in imports])
            + ("" if steps is None else
               "\n\n## Where a cold analytical-only process spends its time, step by step\n\n"
               f"The command's steps called one by one in a fresh process, median of {args.runs} (the interpreter's "
               "own start, `python -c pass` above, comes on top):\n\n" + md_table(["step", "ms"], steps))
            + ("" if per_est is None else
               "\n\n## Each estimator of a cold all-estimators process\n\n"
               "The design loaded first, then each available estimator's first estimate of it (its modules, its "
               f"model, its prediction) in turn, in one fresh process; median of {args.runs}:\n\n"
               + md_table(["estimator", "ms"], per_est)))
    cmd = ".venv/bin/python benchmarks/bench_estimate.py" + (f" --runs {args.runs}" if args.runs != 9 else "") + \
        (f" --baseline {args.baseline}" if args.baseline else "")
    write_report(Path(args.out), "`llmulator estimate` latency (cold process)", cmd, body)
    tmp.cleanup()


if __name__ == "__main__":
    main()
