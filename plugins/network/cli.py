"""``llmulator estimate ARCH --network MODEL.onnx``: the options, and the tables, JSON and plot it prints.

The ``estimate`` verb is core's; this plugin adds its network options and makes WORKLOAD and MAPPING
optional (they are then omitted). Nothing heavy is imported until a network is estimated.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from llmulator.errors import UserError

NETWORK_HELP = """
whole networks (docs/networks.md): estimate ARCH --network MODEL.onnx, e.g. with
zigzag-dse's resnet18.onnx, [--dataflow auto|ws|os|rs] [--save DIR] [--plot FILE];
or --network DIR (or a.yaml,b.yaml): Timeloop layer problems, one per file.
Each layer of the ONNX model (opset 7 and newer) becomes a library-style workload with
its shapes filled in; a mapping per layer is searched with the analytical model (cached
by layer shape) or taken from --dataflow; operators not modelled are listed with their
share of the network's MACs and bytes."""


def _dim(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    if not sep or not name or not value.strip().isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with a positive integer VALUE, got '{text}'")
    return name.strip(), int(value)


def extend_estimate(subparsers) -> None:
    e = subparsers.choices.get("estimate")
    if e is None:
        return
    for a in e._actions:
        if a.dest in ("workload", "mapping") and not a.option_strings:
            a.nargs = "?"
            a.required = False
            a.default = None
            a.help = (a.help or "") + " (omitted with --network)"
    g = e.add_argument_group("whole networks")
    g.add_argument("--network", metavar="MODEL",
                   help="estimate every layer of this ONNX model, or of Timeloop layer problems: a folder or "
                        "comma-separated YAML files (WORKLOAD and MAPPING are then omitted)")
    g.add_argument("--dim", type=_dim, action="append", default=[], metavar="NAME=VALUE",
                   help="value of a symbolic input dimension of the model (e.g. --dim batch=1; repeatable)")
    g.add_argument("--dataflow", choices=["auto", "ws", "os", "rs"], default="auto",
                   help="mapping of every MAC layer: ws, os or rs (docs/networks.md), or auto: the best of the "
                        "three per layer by a search with the analytical model (default: auto)")
    g.add_argument("--objective", choices=["cycles", "energy", "edp"], default="cycles",
                   help="what the per-layer mapping search minimises (default: cycles)")
    g.add_argument("--search-budget", type=int, default=2000, metavar="N",
                   help="most mappings priced per layer and dataflow (default: 2000)")
    g.add_argument("--save", metavar="DIR", help="write each layer's design files (architecture, workload, mapping)")
    g.add_argument("--plot", metavar="FILE", help="write a PNG of cycles and energy per layer")
    g.add_argument("--top", type=int, default=3, metavar="K", help="dominating layers listed (default: 3)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    if NETWORK_HELP not in (e.epilog or ""):
        e.epilog = (e.epilog or "") + NETWORK_HELP
    original = e.get_default("func")

    def func(args) -> int:
        if args.network:
            if args.workload is not None or args.mapping is not None:
                raise UserError("give either WORKLOAD and MAPPING, or --network MODEL, not both")
            if args.context or args.variant or args.preset:
                raise UserError("--context, --variant and --preset apply to one design, not to --network")
            return run_command(args)
        if args.workload is None or args.mapping is None:
            raise UserError("estimate needs ARCH WORKLOAD MAPPING (or ARCH --network MODEL.onnx)")
        return original(args)

    e.set_defaults(func=func)


DSE_HELP = """
whole networks (docs/networks.md): dse ARCH --network MODEL.onnx --space HW.yaml searches the hardware
values of a space file (its hardware: section) for the network's total (--objective cycles|energy|edp),
mapping every layer per hardware point, and verifies the --verify best points layer by layer."""


def extend_dse(p) -> None:
    """``dse ARCH --network MODEL --space HW.yaml``: WORKLOAD becomes optional; the network options are added."""
    for a in p._actions:
        if a.dest == "workload" and not a.option_strings:
            a.nargs = "?"
            a.required = False
            a.default = None
            a.help = (a.help or "") + " (omitted with --network)"
    g = p.add_argument_group("whole networks")
    g.add_argument("--network", metavar="MODEL",
                   help="search the space's hardware values for this ONNX model's total, or Timeloop layer "
                        "problems' (a folder or a,b.yaml); WORKLOAD is then omitted, --budget counts hardware points")
    g.add_argument("--dim", type=_dim, action="append", default=[], metavar="NAME=VALUE",
                   help="with --network: value of a symbolic input dimension (repeatable)")
    g.add_argument("--dataflow", choices=["auto", "ws", "os", "rs"], default="auto",
                   help="with --network: the mapping of every MAC layer, as for estimate --network (default auto)")
    g.add_argument("--search-budget", type=int, default=2000, metavar="N",
                   help="with --network: most mappings priced per layer and dataflow (default 2000)")
    if DSE_HELP not in (p.epilog or ""):
        p.epilog = (p.epilog or "") + DSE_HELP
    original = p.get_default("func")

    def func(args) -> int:
        if args.network:
            if args.workload is not None:
                raise UserError("give either WORKLOAD, or --network MODEL, not both")
            if args.mapping or args.preset:
                raise UserError("--mapping and --preset apply to one workload, not to --network (every layer's "
                                "mapping is searched)")
            return run_dse(args)
        if args.workload is None:
            raise UserError("dse needs ARCH WORKLOAD --space SPACE (or ARCH --network MODEL.onnx --space HW.yaml)")
        return original(args)

    p.set_defaults(func=func)


def _need_onnx(model: str) -> None:
    """UserError for an ONNX model without the onnx package (found, not imported: a model read before needs no
    import). Timeloop layer problems need no onnx."""
    import importlib.util

    from .timeloop_layers import is_timeloop
    if not is_timeloop(model) and importlib.util.find_spec("onnx") is None:
        raise UserError("--network needs the onnx package: pip install 'llmulator[network]' (or pip install onnx)")


def run_dse(args) -> int:
    from llmulator_plugins.dse.cli import driving_estimator

    from .archsearch import explore_network
    _need_onnx(args.network)
    estimator = driving_estimator(args)
    s = explore_network(args.arch, args.network, args.space, estimator, args.budget, args.search, args.objective,
                        args.dataflow, args.search_budget, args.verify, args.profiler, args.time_limit,
                        args.workers, args.scheduler, args.out, args.seed, dict(args.dim),
                        progress=not args.no_progress and not args.json)
    if args.json:
        print(json.dumps({k: v for k, v in s.items() if not k.startswith("_")}, indent=2, default=str))
    else:
        print_dse(s, args.top)
    from llmulator_plugins.dse.cli import print_failures
    print_failures(s["failures"])
    return 3 if s["failures"] else 0


def print_dse(s: dict[str, Any], top: int = 15) -> None:
    from llmulator.cli import console
    from rich.table import Table

    con = console()
    con.print(f"{s['space']}: {s['network']} on {s['architecture']} ({s['mapped_layers']} layers mapped), "
              f"{s['space_size']:,} hardware points, {s['strategy']} search with {s['estimator']}: "
              f"{s['evaluated']:,} evaluated ({s['valid']:,} valid) in {s['seconds']['search']:.1f} s",
              markup=False, highlight=False, soft_wrap=False)
    if s["invalid_reasons"]:
        con.print("invalid points: " + "; ".join(f"{k} ({v})" for k, v in s["invalid_reasons"].items()),
                  markup=False, highlight=False)
    t = Table(title=f"hardware points by total {s['objective']} ({min(top, len(s['ranked']))} of "
                    f"{len(s['ranked'])} valid)")
    for c in ("#", "hardware", "cycles", "latency us", "energy pJ", "EDP", "area um^2"):
        t.add_column(c, justify="left" if c == "hardware" else "right")
    for k, r in enumerate(s["ranked"][:top]):
        t.add_row(str(k + 1), r["params"], si(r["cycles"]), si(r["latency_us"]), si(r["energy_pj"]), si(r["edp"]),
                  si(r["area_um2"]))
    con.print(t)
    for v in s["verified"]:
        vt = Table(title=f"#{v['rank']} {v['params']}: verified per layer with {s['profiler']}")
        for c in ("layers", "op", "shape", "dataflow", "pred. cycles", "meas. cycles", "err %", "pred. energy pJ",
                  "meas. energy pJ"):
            vt.add_column(c, justify="right" if c.startswith(("pred", "meas", "err")) else "left")
        for row in v["layers"]:
            m = row["measured"] or {}
            pc = row["predicted"]["cycles"]
            err = f"{(pc / m['cycles'] - 1) * 100:+.1f}" if m.get("cycles") else "-"
            names = row["layers"][0] + (f" (+{len(row['layers']) - 1})" if len(row["layers"]) > 1 else "")
            vt.add_row(names, row["op"], row["shape"], row["dataflow"], si(pc),
                       si(m.get("cycles")) if m else (row["error"][:40] or "-"), err,
                       si(row["predicted"]["energy_pj"]), si(m.get("energy_pj")) if m else "-")
        _squeeze_dse(vt, con.width)
        con.print(vt)
        if v["measured"]:
            pc, mc = v["predicted"]["cycles"], v["measured"]["cycles"]
            con.print(f"network total: predicted {si(pc)} cycles, measured {si(mc)} ({(pc / mc - 1) * 100:+.1f} %); "
                      f"energy predicted {si(v['predicted']['energy_pj'])} pJ, measured "
                      f"{si(v['measured']['energy_pj'])} pJ", markup=False, highlight=False, soft_wrap=False)
        else:
            con.print("not verified: " + "; ".join(v["errors"][:3]), markup=False, highlight=False)
    if s["unsupported"] or s["not_mapped"]:
        ops = sorted({u["op"] for u in s["unsupported"]} | {u["op"] for u in s["not_mapped"]})
        con.print(f"not in the totals: {len(s['unsupported']) + len(s['not_mapped'])} nodes ({', '.join(ops)}); "
                  "`estimate --network` lists why", markup=False, highlight=False)


def _squeeze_dse(t, width: int) -> None:
    for c in t.columns:
        if c.header in ("layers", "shape"):
            c.max_width = max(8, width // 6)


def run_command(args) -> int:
    from .run import estimate_network, save
    if args.search_budget < 1:
        raise UserError("--search-budget must be at least 1")
    _need_onnx(args.network)
    r = estimate_network(args.arch, args.network, args.estimator, args.dataflow, args.objective,
                         args.search_budget, dict(args.dim), progress=not args.no_progress and not args.json)
    if args.save:
        r["saved"] = save(r, args.save)
    if args.plot:
        plot(r, args.plot)
    status = 3 if r["failed"] else 0
    if not r["layers"]:
        raise UserError(f"no layer of {args.network} could be estimated on {r['architecture']}: " +
                        "; ".join(f"{u['name']} ({u['op']}): {u['reason']}" for u in r["unsupported"][:5]))
    if args.json:
        print(json.dumps({k: v for k, v in r.items() if not k.startswith("_")}, indent=2, default=str))
    else:
        print_report(r, args.top)
        if args.save:
            from llmulator.cli import console
            msg = (f"wrote {len(r['saved'])} layer designs under {args.save}; re-estimate one with "
                   f"`llmulator estimate {args.save}/architecture.yaml {r['saved'][0]}/workload.yaml "
                   f"{r['saved'][0]}/mapping.yaml`") if r["saved"] else f"no layer designs to save in {args.save}"
            console().print(msg, markup=False, highlight=False, soft_wrap=False)
        if args.plot:
            from llmulator.cli import console
            console().print(f"wrote {args.plot}", markup=False)
    from llmulator.cli import _print_failures
    _print_failures("estimator", r["failed"])
    return status


def si(v: float | None) -> str:
    """Compact number: 1.2k, 34.5M, 6.7G."""
    if v is None:
        return "-"
    a = abs(v)
    for div, suf in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            x = v / div
            return f"{x:.3g}{suf}" if x < 100 else f"{x:.0f}{suf}"
    return f"{v:.3g}" if a < 100 else f"{v:.0f}"


def _bound(e: dict) -> str:
    terms = e.get("terms") or {}
    cyc = (e.get("metrics") or {}).get("cycles")
    if "stall_cycles" not in terms or not cyc:
        return "-"
    return "mem" if terms["stall_cycles"] > 0.05 * cyc else "comp"


def print_report(r: dict[str, Any], top: int = 3) -> None:
    from llmulator.cli import console
    from rich.table import Table

    con = console()
    n_layers = len(r["layers"]) + len(r["unsupported"])
    head = (f"{r['network']} on {r['architecture']}: {n_layers} nodes, {len(r['layers'])} estimated "
            f"({r['distinct_designs']} distinct designs), {si(r['macs'])} MACs")
    t = Table()
    names = list(r["totals"])
    many = len(names) > 1  # one estimator: named in the title, not in a column of its own
    with_conf = any((e.get("confidence") or {}).get("cycles") is not None
                    for lay in r["layers"] for e in lay["estimates"])
    if not many and names:
        head += f", estimator {names[0]}"
    con.print(head, markup=False, highlight=False, soft_wrap=False)
    cols = [("layer", "left"), ("op", "left"), ("shape", "left"), ("MACs", "right"), ("cycles", "right"),
            ("energy pJ", "right"), ("util", "right"), ("bound", "left")]
    cols += [("estimator", "left")] if many else []
    cols += [("conf", "right")] if with_conf else []
    for c, just in cols:
        t.add_column(c, justify=just)
    units = r.get("mac_units")
    for lay in r["layers"]:
        ana = next((e for e in lay["estimates"] if e["estimator"] == "analytical"), None)
        bound = _bound(ana) if ana else "-"
        first = True
        for e in lay["estimates"]:
            cyc = e["metrics"].get("cycles")
            util = f"{lay['macs'] / (cyc * units):.0%}" if lay["macs"] and units and cyc else "-"
            conf = (e.get("confidence") or {}).get("cycles")
            row = [lay["name"] if first else "", lay["op"] if first else "", lay["shape"] if first else "",
                   si(lay["macs"]) if first else "", si(cyc), si(e["metrics"].get("energy_pj")), util, bound]
            row += [e["estimator"]] if many else []
            row += ["-" if conf is None else f"{conf:.0%}"] if with_conf else []
            t.add_row(*row)
            first = False
        for n in lay["refused"]:
            row = [lay["name"] if first else "", lay["op"] if first else "", lay["shape"] if first else "",
                   si(lay["macs"]) if first else "", "refused", "", "", ""]
            row += [n] if many else []
            row += [""] if with_conf else []
            t.add_row(*row)
            first = False
    _squeeze(t, con.width)
    con.print(t)
    tt = Table(title="totals per estimator")
    for c in ("estimator", "layers", "cycles", "latency us", "energy pJ", "refused"):
        tt.add_column(c, justify="left" if c == "estimator" else "right")
    for n, v in r["totals"].items():
        tt.add_row(n, str(v["layers"]), si(v["cycles"]), si(v["latency_us"]), si(v["energy_pj"]), str(v["refused"]))
    con.print(tt)
    for n, v in r["totals"].items():
        if not v["cycles"]:
            continue
        rows = sorted(((e["metrics"].get("cycles", 0.0), lay["name"]) for lay in r["layers"] for e in lay["estimates"]
                       if e["estimator"] == n), reverse=True)[:top]
        con.print(f"dominating layers ({n}): " + ", ".join(f"{name} {c / v['cycles']:.1%}" for c, name in rows)
                  + " of the cycles", markup=False, highlight=False, soft_wrap=False)
    if r["unsupported"]:
        ut = Table(title="not estimated (share of the network's MACs and bytes)")
        for c in ("op", "nodes", "MACs %", "bytes %", "why"):
            ut.add_column(c, justify="right" if c in ("nodes", "MACs %", "bytes %") else "left")
        groups: dict[tuple[str, str], list[dict]] = {}
        for u in r["unsupported"]:
            groups.setdefault((u["op"], u["reason"]), []).append(u)
        for (op, why), us in groups.items():
            ut.add_row(op, str(len(us)), f"{sum(u['macs_share'] for u in us):.2%}",
                       f"{sum(u['bytes_share'] for u in us):.2%}", why)
        con.print(ut)
    for n, why in r["skipped"].items():
        con.print(f"[dim]skipped {n}: {why}[/dim]", soft_wrap=False)
    s = r["seconds"]
    con.print(f"[dim]{s['total']:.2f} s: model {s['load']:.2f} s, mappings {s['mapping']:.2f} s, "
              f"estimators {s['estimate']:.2f} s[/dim]", soft_wrap=False)


def _squeeze(t, width: int) -> None:
    """Give the text columns (layer, op, shape) what the numbers leave of ``width``, so the table wraps its names
    instead of growing past the terminal (rich alone does not shrink this many columns enough)."""
    import os

    from llmulator.cli import WIDE_ENV
    if os.environ.get(WIDE_ENV):
        return
    text = [c for c in t.columns if c.header in ("layer", "op", "shape")]
    others = [c for c in t.columns if c not in text]
    need = sum(max(len(str(c.header).split()[0]), *(len(str(x)) for x in c._cells)) for c in others)
    left = width - need - 3 * len(t.columns) - 1
    if left < 3 * len(text):
        return
    share = {"layer": 0.4, "op": 0.25, "shape": 0.35}
    for c in text:
        c.max_width = max(4, int(left * share[str(c.header)]))


def plot(r: dict[str, Any], path: str) -> None:
    """Cycles and energy per layer, one bar series per estimator (PNG)."""
    try:
        import matplotlib
    except ImportError:
        raise UserError("--plot needs matplotlib: pip install 'llmulator[plots]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    layers = r["layers"]
    names = list(r["totals"])
    x = np.arange(len(layers))
    w = 0.8 / max(len(names), 1)
    fig, axes = plt.subplots(2, 1, figsize=(max(8.0, 0.22 * len(layers) + 2), 7), sharex=True)
    for k, n in enumerate(names):
        for ax, m in zip(axes, ("cycles", "energy_pj"), strict=True):
            vals = [next((e["metrics"].get(m, 0.0) for e in lay["estimates"] if e["estimator"] == n), 0.0)
                    for lay in layers]
            ax.bar(x + k * w, vals, w, label=n)
    axes[0].set_ylabel("cycles")
    axes[1].set_ylabel("energy (pJ)")
    axes[0].set_title(f"{r['network'].split('/')[-1]} on {r['architecture']}")
    axes[1].set_xticks(x + w * (len(names) - 1) / 2)
    axes[1].set_xticklabels([f"{i} {lay['op']}" for i, lay in enumerate(layers)], rotation=90, fontsize=6)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise UserError(f"--plot {path}: cannot write: {e.strerror or e}") from None
    finally:
        plt.close(fig)
