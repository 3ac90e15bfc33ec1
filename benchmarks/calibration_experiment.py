"""Calibration experiment: does profiler feedback fix the LLM estimator on inputs it was not trained on?

For input-dependent library kernels at sizes and input variants outside the
training data (data/synth-v1 has only the default and ``mini`` sizes), each
calibrator (``scale``, ``sft``, ``dpo``) starts from the same static LLM
estimator in a fresh context and runs up to ``--iters`` updates. Iteration 0 is
the static estimate against the profile (hlsim) of input seed 1; iteration k
is the estimate after k updates against the profile of seed k + 1 (an input
the calibration has not learned from yet; inputs of one variant differ only in
their random draw). Reported per calibrator: cycles APE per iteration (mean
over kernels, and per kernel), profiler runs, seconds per iteration, rollbacks.

Writes the ``calibration`` section of docs/results.md and docs/calibration.png.

    LLMULATOR_LLM_MODEL=models/llm-v2 .venv/bin/python benchmarks/calibration_experiment.py
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = [  # workload, mapping, preset (bigger than any in the training data), input variant
    ("spmv-csr", "spmv-csr-hls-fpga", "medium", "skewed"),
    ("bfs", "bfs-opt", "small", "core"),
    ("topk", "topk-opt", "medium", "ascending"),
    ("iterative-solver", "iterative-solver-opt", "small", "weak"),
    ("histogram", "histogram-opt", "medium", "bright"),
    ("rle-decode", "rle-decode-opt", "small", "long-runs"),
]
# The designs are loaded without their variant (``Design.variant`` None): the estimator is not told the input
# distribution, as when a deployed accelerator meets data nobody described; the profiles use the variant's inputs.
CALIBRATORS = ("scale", "sft", "dpo")


def run(args) -> dict:
    import torch
    from llmulator import plugins
    from llmulator.design import load_design
    from llmulator.errors import UserError
    from llmulator.inputs import inputs_for
    from llmulator.library import resolve
    from llmulator_plugins.llm.estimator import LLMEstimator

    torch.set_num_threads(args.threads)
    prof = plugins.get("profilers", "hlsim")
    results = []
    home = Path(tempfile.mkdtemp(prefix="llmulator-calibration-"))
    os.environ["LLMULATOR_HOME"] = str(home)  # fresh contexts, nothing left in the user's cache
    for w, m, preset, variant in KERNELS[:args.kernels]:
        d = load_design(resolve("architecture", "hls-fpga"), resolve("workload", w), resolve("mapping", m),
                        preset=preset)
        inputs = [inputs_for(d, str(s), variant) for s in range(1, args.iters + 2)]
        for name in args.calibrators:
            cal = plugins.get("calibrators", name)
            est = LLMEstimator(args.model)
            opts = {} if name == "scale" else {"steps": args.steps, "lr": args.lr, "threads": args.threads}
            t0 = time.perf_counter()
            rep = cal.calibrate(d, inputs, est, prof, context=f"{name}-{w}", max_iters=args.iters,
                                budget=args.iters + 1, tol=args.tol, replay=args.replay, **opts)
            rows = [{"iteration": it.iteration, "ape": round(it.ape["cycles"], 3), "runs": it.profiler_runs,
                     "seconds": it.seconds, "update": it.update} for it in rep.iterations]
            if len(rows) < args.iters + 1:  # stopped (converged): keep measuring the saved context on new inputs
                try:
                    final = cal.apply(LLMEstimator(args.model), f"{name}-{w}")
                except UserError:  # no accepted update: the context holds nothing, the base model is in use
                    final = LLMEstimator(args.model)
                pred = final.estimate([d])[0].metrics["cycles"]
                for k in range(len(rows), args.iters + 1):
                    truth = prof.profile(d, inputs[k]).metrics["cycles"]
                    rows.append({"iteration": k, "ape": round(abs(pred - truth) / truth * 100, 3),
                                 "runs": rep.profiler_runs, "seconds": 0.0, "update": "none (stopped)"})
            results.append({"kernel": f"{w}@{preset}:{variant}", "calibrator": name, "rows": rows,
                            "stopped": rep.stopped, "rollbacks": rep.rollbacks, "profiler_runs": rep.profiler_runs,
                            "seconds": round(time.perf_counter() - t0, 2)})
            print(f"{name:5s} {w:17s} " + " ".join(f"{r['ape']:8.1f}" for r in rows) +
                  f"   runs {rep.profiler_runs} rollbacks {rep.rollbacks} {rep.seconds:.1f}s", flush=True)
    return {"model": args.label or str(args.model), "iters": args.iters, "steps": args.steps, "lr": args.lr,
            "tol": args.tol, "replay": args.replay, "threads": args.threads, "results": results,
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"}


def run_shared(args) -> list[dict]:
    """One context per calibrator for all kernels, one update per kernel in turn (replay mixes earlier kernels in);
    then every kernel is measured with the final shared state on a fresh input."""
    from llmulator import plugins
    from llmulator.design import load_design
    from llmulator.errors import UserError
    from llmulator.inputs import inputs_for
    from llmulator.library import resolve
    from llmulator_plugins.llm.estimator import LLMEstimator

    prof = plugins.get("profilers", "hlsim")
    out = []
    kernels = []
    for w, m, preset, variant in KERNELS[:args.kernels]:
        d = load_design(resolve("architecture", "hls-fpga"), resolve("workload", w), resolve("mapping", m),
                        preset=preset)
        kernels.append((f"{w}@{preset}:{variant}", d, inputs_for(d, "1", variant), inputs_for(d, "2", variant)))
    for name in args.calibrators:
        cal = plugins.get("calibrators", name)
        opts = {} if name == "scale" else {"steps": args.steps, "lr": args.lr, "threads": args.threads}
        res = {"calibrator": name, "kernels": [], "seconds": 0.0, "rollbacks": 0, "profiler_runs": 0}
        for label, d, first, _ in kernels:
            rep = cal.calibrate(d, [first], LLMEstimator(args.model), prof, context=f"shared-{name}",
                                max_iters=1, budget=1, tol=args.tol, replay=args.replay, **opts)
            res["kernels"].append({"kernel": label, "at_turn": round(rep.static_ape, 3),
                                   "after_update": round(rep.final_ape, 3),
                                   "update": rep.iterations[-1].update if len(rep.iterations) > 1 else "none"})
            res["seconds"] += rep.seconds
            res["rollbacks"] += rep.rollbacks
            res["profiler_runs"] += rep.profiler_runs
        try:
            final = cal.apply(LLMEstimator(args.model), f"shared-{name}")
        except UserError:
            final = LLMEstimator(args.model)
        for k, (_, d, _, fresh) in zip(res["kernels"], kernels, strict=True):
            truth = prof.profile(d, fresh).metrics["cycles"]
            k["final"] = round(abs(final.estimate([d])[0].metrics["cycles"] - truth) / truth * 100, 3)
        res["seconds"] = round(res["seconds"], 2)
        print(f"shared {name:5s} " + " ".join(f"{k['at_turn']:.1f}/{k['after_update']:.1f}/{k['final']:.1f}"
                                           for k in res["kernels"]), flush=True)
        out.append(res)
    return out


def curve(res: dict, iters: int) -> list[float]:
    return [r["ape"] for r in res["rows"]][:iters + 1]


def first_under(res: dict, pct: float) -> str:
    for r in res["rows"]:
        if r["ape"] < pct:
            return str(r["iteration"])
    return "never"


def summary(data: dict) -> str:
    iters = data["iters"]
    lines = [
        f"Calibration of the `llm` estimator (model `{data['model']}`) with hlsim feedback on "
        f"{len({r['kernel'] for r in data['results']})} input-dependent kernels at sizes and input variants "
        "outside the training data. The designs are estimated without their input variant (the prompt describes the "
        "workload's default inputs), so the static model does not know the distribution the inputs come from; only "
        "the profiles do. Iteration 0 = static estimate vs the profile of input seed 1; iteration k = "
        "estimate after k updates vs the profile of seed k+1 (not yet learned from). "
        f"dpo/sft: LoRA (r 8) updates with trl, {data['steps']} steps at lr {data['lr']}, replay sample = newest "
        f"feedback + up to {data['replay']} older. A calibration stops when the cycles APE is under "
        f"{data['tol']}%; the saved context is then measured, without further updates, on the remaining seeds "
        "(marked `s`). Machine: " + data["machine"] + f", {data['threads']} torch "
        "thread(s), shared with other jobs.",
        "",
        "Cycles APE over the kernels, mean (median) in %:",
        "",
        "| calibrator | static | " + " | ".join(f"iter {k}" for k in range(1, iters + 1)) +
        f" | profiler runs / kernel | s / update | rollbacks | kernels under 10% by iter {iters} |",
        "|---|---:|" + "---:|" * iters + "---:|---:|---:|---|",
    ]
    for name in dict.fromkeys(r["calibrator"] for r in data["results"]):
        rs = [r for r in data["results"] if r["calibrator"] == name]
        curves = [curve(r, iters) for r in rs]
        mean = [sum(c[k] for c in curves) / len(curves) for k in range(iters + 1)]
        med = [sorted(c[k] for c in curves)[len(curves) // 2] if len(curves) % 2 else
               sum(sorted(c[k] for c in curves)[len(curves) // 2 - 1:len(curves) // 2 + 1]) / 2
               for k in range(iters + 1)]
        its = [row for r in rs for row in r["rows"][1:] if row["update"] != "none (stopped)"]
        per_it = sum(x["seconds"] for x in its) / max(len(its), 1)
        runs = sum(r["profiler_runs"] for r in rs) / len(rs)
        under = sum(first_under(r, 10.0) != "never" for r in rs)
        lines.append(f"| {name} | {mean[0]:.1f} ({med[0]:.1f}) | " +
                     " | ".join(f"{v:.1f} ({w:.1f})" for v, w in zip(mean[1:], med[1:], strict=True)) +
                     f" | {runs:.1f} | {per_it:.2f} | {sum(r['rollbacks'] for r in rs)} | {under}/{len(rs)} |")
    lines += ["", "Per kernel (cycles APE %, iterations 0..N; `r`: the update was rolled back; "
              "`s`: stopped, no update):", "",
              "| kernel | calibrator | APE per iteration | first < 10% | profiler runs | seconds |",
              "|---|---|---|---:|---:|---:|"]
    for r in data["results"]:
        seq = " → ".join(f"{x['ape']:.1f}" + {"rolled back": "r", "none (stopped)": "s"}.get(x["update"], "")
                         for x in r["rows"])
        lines.append(f"| {r['kernel']} | {r['calibrator']} | {seq} | {first_under(r, 10.0)} | "
                     f"{r['profiler_runs']} | {r['seconds']:.1f} |")
    if data.get("shared"):
        lines += ["", "Shared context: one context per calibrator for all kernels; each kernel in turn gets one "
                  "update from its seed-1 profile (replay mixes the earlier kernels in; the guard checks on the "
                  "buffer's held-back entries); at the end every kernel is measured with the final shared state "
                  "on seed 2. Cycles APE % (mean over kernels):", "",
                  "| calibrator | static | at its turn (after the earlier kernels' updates) | right after its own "
                  "update | final, all kernels | kernels under 10% at the end | rollbacks | seconds |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        static = {r["kernel"]: r["rows"][0]["ape"] for r in data["results"] if r["calibrator"] == "scale"} or \
            {r["kernel"]: r["rows"][0]["ape"] for r in data["results"]}
        for s in data["shared"]:
            ks = s["kernels"]
            n = len(ks)
            st = sum(static.get(k["kernel"], float("nan")) for k in ks) / n
            lines.append(f"| {s['calibrator']} | {st:.1f} | {sum(k['at_turn'] for k in ks) / n:.1f} | "
                         f"{sum(k['after_update'] for k in ks) / n:.1f} | {sum(k['final'] for k in ks) / n:.1f} | "
                         f"{sum(k['final'] < 10 for k in ks)}/{n} | {s['rollbacks']} | {s['seconds']:.0f} |")
        lines += ["", "Per kernel, shared context (at its turn → after its update → final):", "",
                  "| kernel | " + " | ".join(s["calibrator"] for s in data["shared"]) + " |",
                  "|---|" + "---|" * len(data["shared"])]
        for i, k in enumerate(data["shared"][0]["kernels"]):
            cells = []
            for s in data["shared"]:
                x = s["kernels"][i]
                cells.append(f"{x['at_turn']:.1f} → {x['after_update']:.1f}" +
                             ("r" if x["update"] == "rolled back" else "") + f" → {x['final']:.1f}")
            lines.append(f"| {k['kernel']} | " + " | ".join(cells) + " |")
    cmd = data.get("command", "LLMULATOR_LLM_MODEL=<model> .venv/bin/python benchmarks/calibration_experiment.py")
    lines += ["", "![calibration](calibration.png)", "", f"Reproduce: `{cmd}`."]
    return "\n".join(lines)


def plot(data: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    iters = data["iters"]
    shared = data.get("shared") or []
    fig, axes = plt.subplots(1, 2 if shared else 1, figsize=(12 if shared else 7, 4.4), squeeze=False)
    ax = axes[0][0]
    colors = {"scale": "tab:gray", "sft": "tab:blue", "dpo": "tab:red"}
    styles = {"scale": ("-", "o", 7), "sft": ("--", "s", 6), "dpo": (":", "^", 5)}
    for name in dict.fromkeys(r["calibrator"] for r in data["results"]):
        rs = [r for r in data["results"] if r["calibrator"] == name]
        curves = [curve(r, iters) for r in rs]
        for c in curves:
            ax.plot(range(iters + 1), [max(v, 0.01) for v in c], color=colors.get(name), alpha=0.15, lw=1)
        mean = [sum(c[k] for c in curves) / len(curves) for k in range(iters + 1)]
        ls, mk, ms = styles.get(name, ("-", "o", 6))
        ax.plot(range(iters + 1), [max(v, 0.01) for v in mean], color=colors.get(name), lw=2.2, ls=ls, marker=mk,
                ms=ms, label=f"{name} (mean of {len(rs)})")
    ax.axhline(10, color="k", ls="--", lw=0.8, label="10 %")
    ax.set_yscale("log")
    ax.set_xlabel("calibration iteration (0 = static)")
    ax.set_ylabel("cycles APE (%)")
    ax.set_title("one context per kernel (sft and dpo coincide)", fontsize=10)
    ax.legend(fontsize=8)
    if shared:
        ax = axes[0][1]
        stages = ("at its turn", "after its update", "final")
        keys = ("at_turn", "after_update", "final")
        width = 0.8 / len(shared)
        for i, s in enumerate(shared):
            vals = [sum(k[key] for k in s["kernels"]) / len(s["kernels"]) for key in keys]
            ax.bar([x + i * width for x in range(len(keys))], vals, width, color=colors.get(s["calibrator"]),
                   label=s["calibrator"])
        ax.axhline(10, color="k", ls="--", lw=0.8)
        ax.set_yscale("log")
        ax.set_xticks([x + width * (len(shared) - 1) / 2 for x in range(len(keys))], stages)
        ax.set_ylabel("mean cycles APE over the kernels (%)")
        ax.set_title("one context shared by all kernels, one update each", fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle("Calibration of the llm estimator with hlsim feedback on out-of-distribution inputs")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=os.environ.get("LLMULATOR_LLM_MODEL"), help="LLM checkpoint folder")
    p.add_argument("--label", help="how the results name the model (default: its path)")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--lr", type=float, default=5e-3)
    p.add_argument("--tol", type=float, default=10.0)
    p.add_argument("--replay", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--kernels", type=int, default=len(KERNELS))
    p.add_argument("--calibrators", nargs="+", default=list(CALIBRATORS))
    p.add_argument("--shared", action="store_true", help="also run the shared-context scenario")
    p.add_argument("--json", type=Path, help="also write the raw results here")
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
        if args.shared:
            data["shared"] = run_shared(args)
        given = list(sys.argv[1:] if argv is None else argv)
        kept = [a for i, a in enumerate(given)  # the run's settings, not where its raw results went
                if a not in ("--no-docs", "--json") and not (i and given[i - 1] == "--json")]
        data["command"] = ".venv/bin/python benchmarks/calibration_experiment.py " + shlex.join(kept)
    text = summary(data)
    print(text)
    if args.json and not args.from_json:
        from llmulator.fileio import atomic_write_json
        atomic_write_json(args.json, data)
    if not args.no_docs:
        from llmulator.fileio import update_section
        plot(data, ROOT / "docs" / "calibration.png")
        update_section(ROOT / "docs" / "results.md", "calibration", "## Calibration\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
