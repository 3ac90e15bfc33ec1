"""The Markdown body of the ``bench`` section of docs/results.md, from the run's outcomes."""

from __future__ import annotations

import math
import os
import platform
from typing import Any

import numpy as np
from llmulator.results import METRICS

from .metrics import (
    MIN_PAIRS,
    TIE,
    ape,
    beats_prior,
    confidence_quartiles,
    confident_misses,
    direction_accuracy,
    interval_coverage,
    kendall_tau,
    mean_std,
    pairs_by_key,
    ranking_accuracy,
    summarise,
)


def md_table(headers: list[str], rows: list[tuple]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _f(x: float | None, nd: int = 1) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.{nd}f}"


def machine() -> str:
    return (f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
            f"load average at start {os.getloadavg()[0]:.2f} (other processes may share these cores).")


def accuracy_rows(outcomes) -> list[tuple]:
    rows = []
    for o in outcomes:
        for m in METRICS:
            ok = o.ok(m)
            n = int(ok.sum())
            if n == 0:
                rows.append((o.estimator, o.split, m, 0, "-", "-", "-", "-"))
                continue
            p, t = o.predicted[m][ok], o.measured[m][ok]
            s = summarise(ape(p, t))
            rows.append((o.estimator, o.split, m, n, _f(s["mape"]), _f(s["median"]), _f(s["p90"]),
                         _f(kendall_tau(p, t), 3)))
    return rows


def confidence_rows(outcomes) -> list[tuple]:
    rows = []
    for o in outcomes:
        for m, c in o.confidence.items():
            has = o.ok(m) & np.isfinite(c)
            q = confidence_quartiles(c[has], ape(o.predicted[m][has], o.measured[m][has]))
            if q:
                rows.append((o.estimator, o.split, m, _f(q[0]), _f(q[1]), "yes" if q[0] < q[1] else "no"))
    return rows


# -- beyond MAPE ------------------------------------------------------------------------------------

PRIOR = "analytical"  # the estimator the learned ones are compared with, row by row


def ranking_key(row: dict[str, Any]) -> tuple:
    """Rows comparable as plain vs optimised mappings: same application (name, workload document, size
    preset), same hardware family and same input distribution."""
    from llmulator.dataset import hw_family
    return (row.get("app"), row.get("workload_yaml"), row.get("preset"), hw_family(str(row.get("hw", ""))),
            row.get("input_dist"))


def direction_key(row: dict[str, Any]) -> tuple:
    """Rows that are the same design apart from the input variant and seed: same workload, mapping and
    architecture documents and size preset."""
    return (row.get("workload_yaml"), row.get("mapping_yaml"), row.get("architecture_yaml"), row.get("preset"))


def _pct(x: float, n: int, least: int = 1) -> str:
    """A fraction as a percentage with its count; ``-`` below ``least`` items (with the count, when a
    minimum above one is asked for: the pair statistics)."""
    if n < least or not math.isfinite(x):
        return f"- ({n})" if least > 1 else "-"
    return f"{100 * x:.1f} ({n})"


def beyond(o, prior=None) -> dict[str, dict[str, tuple[float, int]]]:
    """metric -> statistic -> (fraction, n) for one outcome; ``prior``: the analytical outcome of the same
    split and draw (None: not run, or ``o`` is the analytical estimator)."""
    rank_pairs = pairs_by_key([ranking_key(r) for r in o.rows], [r.get("mapping_yaml") for r in o.rows])
    dir_pairs = pairs_by_key([direction_key(r) for r in o.rows], [r.get("input_dist") for r in o.rows])
    prior_ape: dict[str, dict[str, float]] = {}
    if prior is not None:
        for m in METRICS:
            e = ape(prior.predicted[m], prior.measured[m])
            prior_ape[m] = {str(r.get("sample_id")): float(x) for r, x in zip(prior.rows, e, strict=True)}
    out = {}
    for m in METRICS:
        p, t = o.predicted[m], o.measured[m]
        st = {"ranking": ranking_accuracy(p, t, rank_pairs), "direction": direction_accuracy(p, t, dir_pairs),
              "coverage": interval_coverage(o.lower.get(m, np.full(len(t), np.nan)),
                                            o.upper.get(m, np.full(len(t), np.nan)), t),
              "misses": confident_misses(p, t, o.confidence.get(m, np.full(len(t), np.nan)))}
        if prior is not None:
            q = [prior_ape[m].get(str(r.get("sample_id")), math.nan) for r in o.rows]
            st["beats"] = beats_prior(ape(p, t), q)
        out[m] = st
    return out


def _priors(outcomes) -> dict[tuple[str, int], Any]:
    return {(o.split, o.seed): o for o in outcomes if o.estimator == PRIOR}


def beyond_rows(outcomes) -> list[tuple]:
    priors = _priors(outcomes)
    rows = []
    for o in outcomes:
        prior = priors.get((o.split, o.seed)) if o.estimator != PRIOR else None
        for m, st in beyond(o, prior).items():
            if not o.n_metric(m):
                continue
            rows.append((o.estimator, o.split, m, o.n_metric(m),
                         _pct(*st["ranking"], least=MIN_PAIRS), _pct(*st["direction"], least=MIN_PAIRS),
                         _pct(*st["coverage"]), _pct(*st["beats"]) if "beats" in st else "-",
                         _pct(*st["misses"])))
    return rows


def seed_rows(seed_outcomes: dict[int, list]) -> list[tuple]:
    """Mean and spread over the seeds' draws of MAPE, median APE and Kendall tau, per estimator/split/metric."""
    stats: dict[tuple[str, str, str], dict[str, list[float]]] = {}
    for outcomes in seed_outcomes.values():
        for o in outcomes:
            for m in METRICS:
                ok = o.ok(m)
                st = stats.setdefault((o.estimator, o.split, m), {"mape": [], "median": [], "tau": []})
                if not ok.any():
                    continue
                p, t = o.predicted[m][ok], o.measured[m][ok]
                s = summarise(ape(p, t))
                st["mape"].append(s["mape"])
                st["median"].append(s["median"])
                st["tau"].append(kendall_tau(p, t))
    rows = []
    for (est, split, m), st in stats.items():
        mape, mape_sd = mean_std(st["mape"])
        med, med_sd = mean_std(st["median"])
        tau, tau_sd = mean_std(st["tau"])
        rows.append((est, split, m, len(st["mape"]), _f(mape), _f(mape_sd), _f(med), _f(med_sd), _f(tau, 3),
                     _f(tau_sd, 3)))
    return rows


SPLIT_TEXT = {
    "test_app": "test_app holds out whole applications",
    "test_hw": "test_hw hardware families",
    "test_input": "test_input input distributions",
    "test_family": "test_family one whole application family (leave-one-family-out)",
    "val": "val is the validation split",
    "train": "train is the training split (not held out)",
}


def beyond_text(have_prior: bool) -> str:
    return (
        "### Beyond MAPE: ranking, input direction, intervals, the analytical prior\n\n"
        "Each cell is a percentage followed by the number of pairs or rows it is computed on, in brackets; "
        f"a pair statistic on fewer than {MIN_PAIRS} pairs prints `-` and that number. Pairs are formed among "
        "the drawn rows of the split that the estimator priced (drawing more rows, up to `--per-split 0`, "
        "finds more pairs).\n\n"
        "* **ranking**: between mappings (such as a plain and an optimised one). Pairs of rows with the same "
        "application (name, workload document and size preset), the same hardware family and the same input "
        "distribution but a different mapping document; pairs whose hlsim values differ by at most "
        f"{100 * TIE:g} % (no faster design) are left out. The share of pairs whose design with the lower hlsim "
        "value (for cycles: the faster one) the estimator also predicts strictly lower.\n"
        "* **direction**: between input variants. Pairs of rows that are the same design (identical workload, "
        "mapping and architecture documents and size preset) under different input distributions (a dataset has "
        "them only where one design is labelled under several input variants on the same architecture). The share "
        "whose prediction moves the same way as the hlsim value from one to the other: both up, both down, or "
        f"both within {100 * TIE:g} % (a tie).\n"
        "* **90 % interval**: the share of rows whose hlsim value lies inside the 90 % interval the estimator "
        "reports (bounds included), on the rows that carry one; `-`: no interval reported.\n"
        "* **beats analytical**: the share of rows where the estimator's APE is strictly below the analytical "
        "estimator's APE on the same row (both priced); "
        + ("`-` for the analytical estimator itself." if have_prior else
           "`-`: the analytical estimator was not run.") + "\n"
        "* **confidently off 3x**: the share of rows whose prediction is more than 3x away from the hlsim value "
        "(either way) while its confidence is above 50 %, on the rows that carry a confidence; `-`: no "
        "confidence reported.")


def body(command: str, outcomes, skipped: dict[str, str], per_split: int, seed: int,
         figures: dict[str, tuple[str, str]], load_avg_line: str, title: str | None = None,
         seed_outcomes: dict[int, list] | None = None, holdout_family: str | None = None) -> str:
    """``figures``: split -> (scatter link, CDF link), relative to the report; ``seed_outcomes``: seed ->
    outcomes of that seed's draw (``outcomes`` is the first seed's), given when several seeds were run."""
    ran = sorted({f"{o.estimator} {o.version}".strip() for o in outcomes})
    splits = list(dict.fromkeys(o.split for o in outcomes))
    seeds = list(seed_outcomes) if seed_outcomes else [seed]
    seed_text = (f"seed {seed}" if len(seeds) < 2 else
                 f"seeds {', '.join(map(str, seeds))}; the tables below are seed {seeds[0]}'s draw, the last "
                 "table gives the mean and spread over the seeds")
    family_text = (f" Leave-one-family-out: every row of application family `{holdout_family}` is in test_family "
                   "and in no other split (a model evaluated on it should be trained with the same "
                   "`--holdout-family`)." if holdout_family else "")
    parts = [
        f"## {title or 'Estimator accuracy and speed (`llmulator bench`)'}",
        f"Generated by `{command}`; do not edit by hand.",
        load_avg_line,
        (f"Per held-out split, {'up to ' + str(per_split) if per_split else 'all'} rows drawn uniformly at random "
         f"({seed_text}) are rebuilt from their stored specs and estimated; errors are absolute percentage errors "
         "(APE, %) against the hlsim label stored with each row. Kendall tau (tau-b) compares the ranking of the "
         "split's designs by predicted and by measured value (1: same order; what design-space exploration "
         "needs). Splits: " + ", ".join(SPLIT_TEXT.get(s, s) for s in splits) + "." + family_text),
        "Estimators run: " + (", ".join(ran) or "none") + "."
        + ("" if not skipped else " Skipped (not available): "
           + "; ".join(f"{k} ({v})" for k, v in skipped.items()) + "."),
        "### Accuracy on held-out splits (APE %, against hlsim labels)\n\nEach metric is scored on the rows "
        "for which the estimator returned it (n).",
        md_table(["estimator", "split", "metric", "n", "MAPE", "median APE", "P90 APE", "Kendall tau"],
                 accuracy_rows(outcomes)),
        "### Coverage\n\nRows drawn, rows whose specs did not rebuild, designs the estimator could not price "
        "(raised, or returned no finite metric; left out of every table), and priced designs without some "
        "metric (an estimator may report a subset; each metric is scored on the rows that have it).",
        md_table(["estimator", "split", "rows drawn", "not rebuilt", "failed", "failure reasons", "metric missing"],
                 [(o.estimator, o.split, o.drawn, o.not_rebuilt, sum(o.failed.values()),
                   "; ".join(f"{n}x {r}" for r, n in o.failed.most_common(3)).replace("|", "/") or "-",
                   ", ".join(f"{m} {n}" for m, n in o.missing.items()) or "-")
                  for o in outcomes]),
        beyond_text(any(o.estimator == PRIOR for o in outcomes)),
        md_table(["estimator", "split", "metric", "n", "ranking % (pairs)", "direction % (pairs)",
                  "in 90 % interval %", "beats analytical %", "confidently off 3x %"], beyond_rows(outcomes)),
    ]
    if seed_outcomes and len(seed_outcomes) > 1:
        parts += [f"### Over seeds {', '.join(map(str, seeds))}\n\nThe per-split draw repeated with each seed; "
                  "mean and sample standard deviation (ddof 1) over the seeds"
                  + "; a split with no more rows than the per-split cap is drawn whole, the same rows for "
                  "every seed (std 0).",
                  md_table(["estimator", "split", "metric", "seeds", "MAPE mean", "MAPE std", "median APE mean",
                            "median APE std", "Kendall tau mean", "tau std"], seed_rows(seed_outcomes))]
    conf = confidence_rows(outcomes)
    if conf:
        parts += ["### Is the confidence informative?\n\nMAPE of the predictions in the most confident quartile vs "
                  "the least confident quartile, for estimators that report a confidence.",
                  md_table(["estimator", "split", "metric", "top-quartile MAPE", "bottom-quartile MAPE",
                            "top better"], conf)]
    parts += ["### Speed\n\nBatched: all of a split's designs in one `estimate` call, wall time, the best of "
              "up to 3 runs on freshly rebuilt designs (a run over 2 s is not repeated); one untimed warm-up call "
              "comes first, so loading a model is not counted. Single query: one design per call, median "
              "wall time over the split's first designs, rebuilt afresh so that no cache filled by the batched "
              "run is reused.",
              md_table(["estimator", "split", "predictions", "batched predictions/s", "batched runs",
                        "single-query ms (median)", "single-query designs"],
                       [(o.estimator, o.split, o.n,
                         _f(o.batch_rate)
                         + (f" ({o.batch_note})" if o.batch_note else ""), o.batch_runs,
                         _f(o.single_ms, 2), o.single_n) for o in outcomes])]
    if figures:
        parts.append("### Figures")
        for split, (sc, cdf) in figures.items():
            parts.append(f"**{split}**: [predicted vs measured]({sc}) · [error CDF]({cdf})\n\n"
                         f"![predicted vs measured, {split}]({sc})\n![error CDF, {split}]({cdf})")
    return "\n\n".join(parts) + "\n"
