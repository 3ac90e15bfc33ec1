"""Calibration experiment: does profiler feedback on some designs of an application fix the estimator on others?

Per input-dependent application and one input variant (the distribution the
inputs are drawn from), the designs are a grid of the workload's distinct sizes
(its presets and default, smallest first) x two hls-fpga mappings (the
library's optimised mapping, and a plain one without loop or partition pragmas:
the library's ``-plain`` mapping, or one derived here from the optimised
mapping's placement when the library has none). The TRAIN set is the
``--train-sizes`` smallest sizes x the first ``--train-mappings`` mappings
(default: the smaller half of the sizes, optimised mapping only); the TEST set
is the rest of the grid, so every test design has a new size, a new mapping or
both, under the same input distribution. It is never the next seed of a
training design, which a constant scale factor already fits.

Each calibrator (``scale``, ``sft``, ``dpo``) starts from the same static
estimator in a fresh context per application and is fitted on the train set
only: ``--rounds`` passes over the train designs, one ``calibrate`` call with
one update per design and pass (pass r profiles input seed r + 1 of the
variant), all into the same context, whose replay buffer mixes the designs.
Then the saved context is applied (``apply``, as ``estimate --context`` does) to
the test designs, profiled on input seed ``--test-seed`` (a seed no training
profile used). Reported per calibrator and application: cycles APE on the
test designs before calibration (the static estimator) and after, the mean
over applications, the error by what is new in a test design (size, mapping,
both), the fit on the train designs, updates and rollbacks.

The designs are estimated without their input variant (``Design.variant``
None, unless ``--describe-variant``): the estimator is not told the input
distribution, as when a deployed accelerator meets data nobody described;
only the profiles see it.

Writes the ``calibration`` section of docs/results.md and docs/calibration.png
(``--out FILE``: to FILE and FILE's .png instead; ``--no-docs``: print only).

    .venv/bin/python benchmarks/calibration_experiment.py --model models/llm-v2
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parent.parent
ARCH = "hls-fpga"
# workload, input variant, mappings (library names; None = the plain mapping: the library's `<workload>-plain`, or
# derived from the first mapping without its loop and partition pragmas when the library has none)
APPS = [
    ("spmv-csr", "skewed", ("spmv-csr-hls-fpga", None)),
    ("bfs", "core", ("bfs-opt", None)),
    ("topk", "ascending", ("topk-opt", None)),
    ("histogram", "bright", ("histogram-opt", None)),
    ("rle-decode", "long-runs", ("rle-decode-opt", None)),
    ("iterative-solver", "weak", ("iterative-solver-opt", None)),
]
CALIBRATORS = ("scale", "sft", "dpo")


@attrs.define
class Case:
    """One design of an application's grid."""

    label: str  # "<size>/<mapping>"
    design: Any
    size: str  # preset name, "default" for the workload's parameters
    mapping: str
    size_index: int  # 0 = smallest
    mapping_index: int
    novelty: str = ""  # for a test design: "mapping", "size" or "size+mapping" (what training did not see)


@attrs.define
class App:
    workload: str
    variant: str
    train: list[Case]
    test: list[Case]

    @property
    def name(self) -> str:
        return f"{self.workload}:{self.variant}"


# -- the designs ----------------------------------------------------------------------------------------------------

def plain_mapping(opt_path: Path, folder: Path) -> Path:
    """A mapping file like ``opt_path`` without loop pragmas and partitions (its placement kept)."""
    import yaml
    m = yaml.safe_load(opt_path.read_text())["mapping"]
    name = f"{m['workload']}-plain"
    plain = {"version": m.get("version", 1), "name": name,
             "description": f"Derived from {m['name']} by the calibration experiment: no loop primitives, "
                            "no partitioning, the same placement.",
             "workload": m["workload"], "architecture": m.get("architecture", ARCH)}
    if m.get("placement"):
        plain["placement"] = m["placement"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"mapping": plain}, sort_keys=False))
    return path


def mapping_paths(workload: str, mappings: Sequence[str | None], folder: Path) -> list[Path]:
    from llmulator.errors import UserError
    from llmulator.library import resolve
    out: list[Path] = []
    for m in mappings:
        if m is not None:
            out.append(resolve("mapping", m))
            continue
        try:
            out.append(resolve("mapping", f"{workload}-plain"))
        except UserError:
            out.append(plain_mapping(out[0], folder))
    return out


def sizes_of(workload_path: Path, presets: Sequence[str | None] | None = None) -> list[str | None]:
    """The workload's distinct sizes (None = its default parameters), smallest first; presets with the same
    parameter values as an earlier one (e.g. ``small`` equal to the default) are dropped."""
    from llmulator.specs import load_workload
    w = load_workload(workload_path)
    names = list(presets) if presets is not None else [None, *w.presets]
    seen: dict[tuple, str | None] = {}
    for p in names:
        key = tuple(sorted(w.sizes(p).items()))
        seen.setdefault(key, p)

    def volume(p):
        return math.prod(max(int(v), 1) for v in w.sizes(p).values())

    return sorted(seen.values(), key=lambda p: (volume(p), p or ""))


def split(grid: list[Case], train_sizes: int, train_mappings: int) -> tuple[list[Case], list[Case]]:
    """(train, test): the ``train_sizes`` smallest sizes x the first ``train_mappings`` mappings, and the rest of
    the grid, each test case tagged with what it has that no training design has."""
    train, test = [], []
    for c in grid:
        new_size, new_map = c.size_index >= train_sizes, c.mapping_index >= train_mappings
        if not (new_size or new_map):
            train.append(c)
        else:
            test.append(attrs.evolve(c, novelty="size+mapping" if new_size and new_map else
                                     "size" if new_size else "mapping"))
    return train, test


def build_app(workload: str, variant: str, mappings: Sequence[str | None], folder: Path,
              train_sizes: int | None = None, train_mappings: int = 1, presets: Sequence[str | None] | None = None,
              describe_variant: bool = False) -> App:
    from llmulator.design import load_design
    from llmulator.library import resolve
    wpath = resolve("workload", workload)
    sizes = sizes_of(wpath, presets)
    maps = mapping_paths(workload, mappings, folder)
    n_train = (len(sizes) + 1) // 2 if train_sizes is None else train_sizes
    if not (1 <= n_train <= len(sizes) and 1 <= train_mappings <= len(maps)) or \
            (n_train == len(sizes) and train_mappings == len(maps)):
        raise ValueError(f"{workload}: {len(sizes)} sizes x {len(maps)} mappings cannot hold {n_train} train "
                         f"size(s) x {train_mappings} train mapping(s) and a test set")
    grid = []
    for i, p in enumerate(sizes):
        for j, mp in enumerate(maps):
            d = load_design(resolve("architecture", ARCH), wpath, mp, preset=p,
                            variant=variant if describe_variant else None)
            grid.append(Case(f"{p or 'default'}/{d.mapping.name}", d, p or "default", d.mapping.name, i, j))
    train, test = split(grid, n_train, train_mappings)
    return App(workload, variant, train, test)


# -- profiling, estimating, fitting -----------------------------------------------------------------------------------

class CachedProfiler:
    """The profiler, run once per (design, inputs); ``log`` records every request in order (phase, design)."""

    def __init__(self, base):
        self.base, self.name, self.version = base, base.name, getattr(base, "version", "")
        self.cache: dict[tuple[str, str], Any] = {}
        self.log: list[tuple[str, str]] = []
        self.phase = ""
        self.runs = 0

    def profile(self, design, inputs):
        self.log.append((self.phase, design.name))
        key = (design.name, inputs.origin)
        if key not in self.cache:
            self.cache[key] = self.base.profile(design, inputs)
            self.runs += 1
        return self.cache[key]


def inputs_of(case: Case, variant: str, seed: int):
    from llmulator.inputs import inputs_for
    return inputs_for(case.design, str(seed), variant)


def truths(cases: Sequence[Case], variant: str, seed: int, prof: CachedProfiler) -> dict[str, float]:
    out = {}
    for c in cases:
        p = prof.profile(c.design, inputs_of(c, variant, seed))
        if not (p.functional_check.startswith("pass") or p.functional_check.startswith("not-run")):
            raise RuntimeError(f"profiling {c.design.name} failed its functional check: {p.functional_check}")
        out[c.label] = p.metrics["cycles"]
    return out


def predict(estimator, cases: Sequence[Case]) -> dict[str, float | None]:
    """Cycles per case; None where the estimator refuses a design (a batch that fails is retried one by one)."""
    from llmulator.errors import SpecError, UserError
    try:
        return {c.label: e.metrics.get("cycles") for c, e in
                zip(cases, estimator.estimate([c.design for c in cases]), strict=True)}
    except (SpecError, UserError):
        out = {}
        for c in cases:
            try:
                out[c.label] = estimator.estimate([c.design])[0].metrics.get("cycles")
            except (SpecError, UserError):
                out[c.label] = None
        return out


def apes(pred: dict[str, float | None], truth: dict[str, float]) -> dict[str, float | None]:
    return {k: None if pred.get(k) is None else round(abs(pred[k] - t) / t * 100, 3) for k, t in truth.items()}


def fit(calibrator: str, cases: Sequence[Case], variant: str, estimator, prof: CachedProfiler, context: str,
        rounds: int, options: dict[str, Any], log: Callable[[str], None] = print, first: int = 0) -> dict[str, Any]:
    """Calibrate one context on ``cases`` only: ``rounds`` passes, one update per design and pass (pass r profiles
    input seed r + 1; passes are numbered from ``first``). Returns what happened, including the designs fed."""
    from llmulator import plugins
    from llmulator.errors import SpecError, UserError
    cal = plugins.get("calibrators", calibrator)
    out: dict[str, Any] = {"context": context, "updates": 0, "rollbacks": 0, "skipped": 0, "refused": [],
                           "fitted": [], "profiler_runs": 0, "seconds": 0.0}
    prof.phase = f"fit:{context}"
    t0 = time.perf_counter()
    for r in range(first, first + rounds):
        for c in cases:
            t = time.perf_counter()
            try:
                rep = cal.calibrate(c.design, [inputs_of(c, variant, r + 1)], estimator, prof, context=context,
                                    max_iters=1, budget=1, **options)
            except (SpecError, UserError) as e:  # the estimator refuses the design: it cannot be calibrated on
                out["refused"].append(f"{c.label}: {str(e).splitlines()[0][:120]}")
                log(f"  {calibrator:5s} round {r + 1} {c.label:34s} refused: {str(e).splitlines()[0][:80]}")
                continue
            out["fitted"].append(rep.design)
            upd = rep.iterations[-1].update if len(rep.iterations) > 1 else "none"
            out["updates"] += upd == "accepted"
            out["rollbacks"] += upd == "rolled back"
            out["skipped"] += upd == "skipped"
            log(f"  {calibrator:5s} round {r + 1} {c.label:34s} APE {rep.static_ape:9.1f} -> {rep.final_ape:9.1f}"
                f"  {upd:11s} {time.perf_counter() - t:6.1f}s")
    out["seconds"] = round(time.perf_counter() - t0, 2)
    prof.phase = ""
    return out


def calibrated(calibrator: str, estimator, context: str):
    """The estimator with the context applied; the base estimator when the context holds no accepted update."""
    from llmulator import plugins
    from llmulator.errors import UserError
    try:
        return plugins.get("calibrators", calibrator).apply(estimator, context)
    except UserError:
        return estimator


def buffer_designs(context: str) -> list[str]:
    """The designs whose feedback is in a context's replay buffer."""
    import json

    from llmulator_plugins.calibrate import store
    f = store.context_path(context) / store.BUFFER_FILE
    return sorted({e["design"] for e in json.loads(f.read_text())["entries"]}) if f.is_file() else []


def run_app(app: App, calibrators: Sequence[str], estimator, prof: CachedProfiler, args,
            log: Callable[[str], None] = print, prefix: str = "") -> dict[str, Any]:
    """Static and calibrated cycles APE of one application's test (and train) designs."""
    prof.phase = "truth"
    test_truth = truths(app.test, app.variant, args.test_seed, prof)
    train_truth = truths(app.train, app.variant, 1, prof)
    prof.phase = ""
    static_test = apes(predict(estimator, app.test), test_truth)
    static_train = apes(predict(estimator, app.train), train_truth)
    res: dict[str, Any] = {
        "app": app.workload, "variant": app.variant,
        "train": [c.label for c in app.train], "train_designs": [c.design.name for c in app.train],
        "test": [{"label": c.label, "design": c.design.name, "size": c.size, "mapping": c.mapping,
                  "novelty": c.novelty, "truth": test_truth[c.label], "static": static_test[c.label]}
                 for c in app.test],
        "static_train": static_train, "calibrators": {}}
    log(f"{app.name}: train {', '.join(res['train'])}; test {', '.join(c.label for c in app.test)}; static test "
        f"APE mean {mean(static_test.values()):.1f}%")
    for name in calibrators:
        ctx = f"{prefix}{name}-{app.workload}"
        info = fit(name, app.train, app.variant, estimator, prof, ctx, args.rounds, cal_options(name, args), log)
        final = calibrated(name, estimator, ctx)
        info["test"] = apes(predict(final, app.test), test_truth)
        info["train_after"] = apes(predict(final, app.train), train_truth)
        info["buffer_designs"] = buffer_designs(ctx)
        res["calibrators"][name] = info
        log(f"{name:5s} {app.name:28s} test APE {mean(static_test.values()):8.1f} -> {mean(info['test'].values()):8.1f}"
            f"  train {mean(static_train.values()):8.1f} -> {mean(info['train_after'].values()):8.1f}"
            f"  updates {info['updates']} rollbacks {info['rollbacks']} {info['seconds']:.0f}s")
    return res


def run_shared(apps: Sequence[App], calibrators: Sequence[str], estimator, prof: CachedProfiler, args,
               log: Callable[[str], None] = print) -> dict[str, Any]:
    """One context per calibrator fitted on the train designs of every application in turn, tested on all test
    designs: where one factor per metric cannot serve several applications and a learned update might."""
    out: dict[str, Any] = {}
    for name in calibrators:
        info = {"updates": 0, "rollbacks": 0, "seconds": 0.0, "test": {}}
        ctx = f"shared-{name}"
        for r in range(args.rounds):  # rounds outside, applications inside: the buffer interleaves them
            for app in apps:
                one = fit(name, app.train, app.variant, estimator, prof, ctx, 1, cal_options(name, args), log,
                          first=r)
                for k in ("updates", "rollbacks", "seconds"):
                    info[k] += one[k]
        final = calibrated(name, estimator, ctx)
        for app in apps:
            truth = truths(app.test, app.variant, args.test_seed, prof)
            info["test"][app.name] = apes(predict(final, app.test), truth)
        info["seconds"] = round(info["seconds"], 2)
        out[name] = info
        log(f"shared {name:5s} test APE " + " ".join(f"{a}: {mean(v.values()):.1f}" for a, v in info["test"].items()))
    return out


def cal_options(name: str, args) -> dict[str, Any]:
    opts = {"tol": args.tol, "replay": args.replay}
    if name != "scale":
        opts |= {"steps": args.steps, "lr": args.lr, "threads": args.threads}
    return opts


def run(args, estimator_factory: Callable[[], Any] | None = None, log: Callable[[str], None] = print) -> dict:
    from llmulator import plugins
    home = Path(tempfile.mkdtemp(prefix="llmulator-calibration-"))
    os.environ["LLMULATOR_HOME"] = str(home)  # fresh contexts, nothing left in the user's cache
    if estimator_factory is None:
        import torch
        from llmulator_plugins.llm.estimator import LLMEstimator
        torch.set_num_threads(args.threads)

        def estimator_factory():
            return LLMEstimator(args.model)
    estimator = estimator_factory()
    prof = CachedProfiler(plugins.get("profilers", "hlsim"))
    chosen = [a for a in APPS if not args.apps or a[0] in args.apps][:args.kernels]
    apps = [build_app(w, v, maps, home / "mappings", args.train_sizes, args.train_mappings,
                      describe_variant=args.describe_variant) for w, v, maps in chosen]
    t0 = time.perf_counter()
    results = [run_app(a, args.calibrators, estimator, prof, args, log) for a in apps]
    data = {"model": args.label or str(args.model), "estimator": getattr(estimator, "name", "?"),
            "rounds": args.rounds, "steps": args.steps, "lr": args.lr, "tol": args.tol, "replay": args.replay,
            "threads": args.threads, "test_seed": args.test_seed, "describe_variant": args.describe_variant,
            "calibrators": list(args.calibrators), "results": results, "profiler_runs": prof.runs,
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"}
    if args.shared:
        data["shared"] = run_shared(apps, args.calibrators, estimator, prof, args, log)
    data["seconds"] = round(time.perf_counter() - t0, 1)
    return data


# -- the report -----------------------------------------------------------------------------------------------------

def mean(values) -> float:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else float("nan")


def median(values) -> float:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else float("nan")


def cell(values) -> str:
    values = list(values)
    missing = sum(v is None for v in values)
    return f"{mean(values):.1f} ({median(values):.1f})" + (f" [{missing} refused]" if missing else "")


def summary(data: dict) -> str:
    cals = data["calibrators"]
    rs = data["results"]
    variant = ("with their input variant in the prompt" if data.get("describe_variant") else
               "without their input variant (the prompt describes the workload's default inputs, so only the "
               "profiles know the distribution)")
    lines = [
        f"Calibration of the `{data.get('estimator', 'llm')}` estimator (model `{data['model']}`) with hlsim "
        f"feedback, fitted on some designs of an input-dependent application and tested on others under the same "
        f"input distribution. Per application and variant, the designs are the workload's distinct sizes x two "
        "hls-fpga mappings (the library's optimised one and a plain one without loop or partition pragmas); "
        "TRAIN = the smaller sizes with the optimised mapping, TEST = the rest of the grid (a new size, a new "
        f"mapping or both), disjoint from TRAIN. Designs are estimated {variant}. Each calibrator fits one fresh "
        f"context per application on the TRAIN designs only ({data['rounds']} pass(es), one update per design and "
        f"pass; pass r profiles input seed r; replay sample = newest feedback + up to {data['replay']} older; tol "
        f"{data['tol']}%); the context is then applied to the TEST designs, profiled on seed {data['test_seed']}. "
        f"dpo/sft: LoRA (r 8) updates with trl, {data['steps']} steps at lr {data['lr']}. Machine: "
        f"{data['machine']}, {data['threads']} torch thread(s), shared with other jobs; {data.get('seconds', 0):.0f} s "
        f"in all, {data.get('profiler_runs', 0)} profiler runs.",
        "",
        "Cycles APE on the TEST designs, mean (median) over an application's test designs, %:",
        "",
        "| application:variant | train designs | test designs | static | " + " | ".join(cals) + " |",
        "|---|---|---:|---:|" + "---:|" * len(cals),
    ]
    for r in rs:
        lines.append(f"| {r['app']}:{r['variant']} | {', '.join(r['train'])} | {len(r['test'])} | "
                     f"{cell(t['static'] for t in r['test'])} | " +
                     " | ".join(cell(r["calibrators"][c]["test"].values()) for c in cals) + " |")
    per_app = {c: [mean(r["calibrators"][c]["test"].values()) for r in rs] for c in cals}
    static_app = [mean(t["static"] for t in r["test"]) for r in rs]
    lines.append(f"| **mean over applications** | | {sum(len(r['test']) for r in rs)} | {mean(static_app):.1f} | " +
                 " | ".join(f"{mean(per_app[c]):.1f}" for c in cals) + " |")
    kinds = ("mapping", "size", "size+mapping")
    lines += ["", "By what a test design has that no training design has (all applications' test designs), cycles "
              "APE mean (median) %:", "",
              "| estimator | " + " | ".join(f"new {k} ({sum(t['novelty'] == k for r in rs for t in r['test'])})"
                                           for k in kinds) + " | all |",
              "|---|" + "---:|" * (len(kinds) + 1)]
    rows = [("static", lambda r, t: t["static"])] + [(c, lambda r, t, c=c: r["calibrators"][c]["test"][t["label"]])
                                                     for c in cals]
    for name, get in rows:
        lines.append(f"| {name} | " + " | ".join(cell(get(r, t) for r in rs for t in r["test"] if t["novelty"] == k)
                                                 for k in kinds) +
                     f" | {cell(get(r, t) for r in rs for t in r['test'])} |")
    lines += ["", "The fit on the TRAIN designs (cycles APE on input seed 1, mean %, before → after), and the cost:",
              "", "| application | " + " | ".join(cals) + " |", "|---|" + "---|" * len(cals)]
    for r in rs:
        cells = []
        for c in cals:
            i = r["calibrators"][c]
            cells.append(f"{mean(r['static_train'].values()):.1f} → {mean(i['train_after'].values()):.1f}; "
                         f"{i['updates']} accepted, {i['rollbacks']} rolled back; {i['seconds']:.0f} s")
        lines.append(f"| {r['app']} | " + " | ".join(cells) + " |")
    lines += ["", "Per test design (cycles APE %):", "",
              "| application | design | new | profiled cycles | static | " + " | ".join(cals) + " |",
              "|---|---|---|---:|---:|" + "---:|" * len(cals)]

    def f(v):
        return "refused" if v is None else f"{v:.1f}"

    for r in rs:
        for t in r["test"]:
            lines.append(f"| {r['app']} | {t['label']} | {t['novelty']} | {t['truth']:.0f} | {f(t['static'])} | " +
                         " | ".join(f(r["calibrators"][c]["test"][t["label"]]) for c in cals) + " |")
    if data.get("shared"):
        sh = data["shared"]
        lines += ["", "Shared context: one context per calibrator fitted on the TRAIN designs of all applications "
                  "(round by round, the applications in turn), tested on every application's TEST designs; cycles "
                  "APE mean (median) %:", "",
                  "| application | static | " + " | ".join(sh) + " |", "|---|---:|" + "---:|" * len(sh)]
        for r in rs:
            key = f"{r['app']}:{r['variant']}"
            lines.append(f"| {key} | {cell(t['static'] for t in r['test'])} | " +
                         " | ".join(cell(sh[c]["test"][key].values()) for c in sh) + " |")
        lines.append("| updates accepted / rolled back | | " +
                     " | ".join(f"{sh[c]['updates']} / {sh[c]['rollbacks']}" for c in sh) + " |")
    cmd = data.get("command", ".venv/bin/python benchmarks/calibration_experiment.py --model <model>")
    lines += ["", "![calibration](calibration.png)", "", f"Reproduce: `{cmd}`."]
    return "\n".join(lines)


def plot(data: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cals = data["calibrators"]
    rs = data["results"]
    names = [f"{r['app']}\n{r['variant']}" for r in rs] + ["mean"]
    series = {"static": [mean(t["static"] for t in r["test"]) for r in rs]}
    for c in cals:
        series[c] = [mean(r["calibrators"][c]["test"].values()) for r in rs]
    colors = {"static": "tab:olive", "scale": "tab:gray", "sft": "tab:blue", "dpo": "tab:red"}
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(names)), 4.4))
    width = 0.8 / len(series)
    for i, (name, vals) in enumerate(series.items()):
        vals = [*vals, mean(vals)]
        ax.bar([x + i * width for x in range(len(names))], [max(v, 0.01) if v == v else 0 for v in vals], width,
               color=colors.get(name), label=name)
    ax.axhline(10, color="k", ls="--", lw=0.8, label="10 %")
    ax.set_yscale("log")
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(names))], names, fontsize=8)
    ax.set_ylabel("cycles APE on the test designs, mean (%)")
    ax.set_title("fitted on small sizes with the optimised mapping, tested on other sizes and mappings", fontsize=9)
    ax.legend(fontsize=8)
    fig.suptitle(f"Calibration of the {data.get('estimator', 'llm')} estimator with hlsim feedback")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=os.environ.get("LLMULATOR_LLM_MODEL"), help="LLM checkpoint folder")
    p.add_argument("--label", help="how the results name the model (default: its path)")
    p.add_argument("--rounds", type=int, default=2, help="passes over the train designs (one update per design)")
    p.add_argument("--steps", type=int, default=12, help="optimizer steps per dpo/sft update")
    p.add_argument("--lr", type=float, default=5e-3)
    p.add_argument("--tol", type=float, default=0.01,
                   help="a train design whose estimate is already within this many %% gives no feedback")
    p.add_argument("--replay", type=int, default=8, help="older buffer entries mixed into each update")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--kernels", type=int, default=3, help=f"the first N applications of {len(APPS)}")
    p.add_argument("--apps", nargs="+", choices=[a[0] for a in APPS], help="only these applications")
    p.add_argument("--calibrators", nargs="+", default=list(CALIBRATORS), choices=CALIBRATORS)
    p.add_argument("--train-sizes", type=int, help="how many of the smallest sizes train (default: half, rounded up)")
    p.add_argument("--train-mappings", type=int, default=1, help="how many mappings train (1: the optimised one)")
    p.add_argument("--test-seed", type=int, default=1000, help="input seed of the test profiles")
    p.add_argument("--describe-variant", action="store_true", help="estimate the designs with their variant")
    p.add_argument("--shared", action="store_true", help="also fit one context on all applications' train designs")
    p.add_argument("--json", type=Path, help="also write the raw results here")
    p.add_argument("--out", type=Path, help="write the section here (and the plot next to it), not into docs/")
    p.add_argument("--no-docs", action="store_true", help="print only; do not touch docs/")
    p.add_argument("--from-json", type=Path, help="rewrite the docs from results saved with --json (no runs)")
    args = p.parse_args(argv)
    if not args.model and not args.from_json:
        p.error("give --model or set LLMULATOR_LLM_MODEL")
    if args.from_json:
        import json
        data = json.loads(args.from_json.read_text())
    else:
        data = run(args)
        given = list(sys.argv[1:] if argv is None else argv)
        skip = ("--json", "--out")
        kept = [a for i, a in enumerate(given)  # the run's settings, not where its results went
                if a not in ("--no-docs", *skip) and not (i and given[i - 1] in skip)]
        data["command"] = ".venv/bin/python benchmarks/calibration_experiment.py " + shlex.join(kept)
    text = summary(data)
    print(text)
    if args.json and not args.from_json:
        from llmulator.fileio import atomic_write_json
        atomic_write_json(args.json, data)
    if args.out:
        from llmulator.fileio import atomic_write_text
        atomic_write_text(args.out, "## Calibration\n\n" + text + "\n")
        plot(data, args.out.with_suffix(".png"))
    elif not args.no_docs:
        from llmulator.fileio import update_section
        plot(data, ROOT / "docs" / "calibration.png")
        update_section(ROOT / "docs" / "results.md", "calibration", "## Calibration\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
