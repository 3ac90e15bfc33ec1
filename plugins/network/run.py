"""Estimate a whole network: layers -> designs (mapping per layer) -> every estimator, batched."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from llmulator.errors import SpecError, UserError


def load_network(model: str, dims: dict[str, int] | None = None) -> list:
    """The layers of an ONNX file, or of Timeloop layer problems (a folder or comma-separated YAML files)."""
    from . import onnx_import, timeloop_layers
    if timeloop_layers.is_timeloop(model):
        return timeloop_layers.load_layers(model, dims)
    return onnx_import.load_layers(model, dims)


def _key(layer) -> tuple:
    return (layer.kind, tuple(sorted((k, str(v)) for k, v in layer.params.items())))


def _progress(enabled: bool):
    if not enabled:
        return None
    from llmulator.cli import console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    con = console(stderr=True)
    if not con.is_terminal:
        return None
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=con, transient=True)


def estimate_network(arch: str, model: str, estimators: list[str] | None = None, dataflow: str = "auto",
                     objective: str = "cycles", budget: int = 2000, dims: dict[str, int] | None = None,
                     progress: bool = True) -> dict[str, Any]:
    """The whole result (JSON-ready, plus ``_designs``: layer index -> Design) of one network on one arch."""
    from llmulator import plugins
    from llmulator.cli import _failure
    from llmulator.library import resolve

    from .mappings import Mapper

    t0 = time.perf_counter()
    arch_path = resolve("architecture", arch)
    names = estimators or plugins.names("estimators")
    for n in names:
        plugins.entry("estimators", n)  # an unknown name is bad usage (exit 2)
    layers = load_network(model, dims)
    t_load = time.perf_counter() - t0
    mapper = Mapper(arch_path, dataflow, objective, budget)
    designs: dict[int, Any] = {}
    dataflows: dict[int, str] = {}
    not_mapped: dict[int, str] = {}
    bar = _progress(progress)
    todo = [i for i, lay in enumerate(layers) if lay.kind is not None]
    t1 = time.perf_counter()
    if bar is not None:
        bar.start()
        task = bar.add_task("mapping layers", total=len(todo))
    try:
        for i in todo:
            lay = layers[i]
            d, df, why = mapper.design(lay, _key(lay))
            if d is None:
                not_mapped[i] = why
            else:
                designs[i] = d
                dataflows[i] = df
            if bar is not None:
                bar.update(task, advance=1, description=f"mapping {lay.name[-30:]}")
    finally:
        if bar is not None:
            bar.stop()
    t_map = time.perf_counter() - t1
    # every estimator on every distinct design, in one batch (repeated layers share their design)
    uniq: list[Any] = []
    seen: dict[int, int] = {}
    for d in designs.values():
        if id(d) not in seen:
            seen[id(d)] = len(uniq)
            uniq.append(d)
    per: dict[str, list[Any]] = {}  # estimator -> Estimate | ("refused", msg) per unique design
    skipped: dict[str, str] = {}
    failed: dict[str, dict] = {}
    t2 = time.perf_counter()
    for n in names:
        try:
            est = plugins.get("estimators", n)
            why = est.available() if hasattr(est, "available") else None
        except Exception as e:  # noqa: BLE001 - its plugin's bug; the others still run
            failed[n] = _failure("estimators", n, e)
            continue
        if why:
            if estimators:
                raise UserError(f"estimator '{n}' is not available: {why}")
            skipped[n] = why
            continue
        try:
            try:
                per[n] = list(est.estimate(uniq)) if uniq else []
            except (SpecError, UserError):  # some design it cannot price: one at a time, to say which
                out = []
                for d in uniq:
                    try:
                        out.append(est.estimate([d])[0])
                    except SpecError as e:
                        out.append(("refused", "; ".join(x.message for x in e.diagnostics)))
                    except UserError as e:
                        out.append(("refused", str(e)))
                per[n] = out
        except Exception as e:  # noqa: BLE001 - a broken plugin must not take the others' results down
            failed[n] = _failure("estimators", n, e)
    t_est = time.perf_counter() - t2
    macs_unit = mapper.arch.operators["mac"].count if "mac" in mapper.arch.operators else None
    total_macs = sum(lay.macs for lay in layers)
    total_bytes = sum(lay.bytes for lay in layers)
    out_layers, unsupported = [], []
    totals: dict[str, dict[str, float]] = {n: {"cycles": 0.0, "energy_pj": 0.0, "layers": 0, "refused": 0}
                                           for n in per}
    for i, lay in enumerate(layers):
        if lay.kind is None or i in not_mapped:
            reason = lay.reason if lay.kind is None else f"no mapping on {mapper.arch.name}: {not_mapped[i]}"
            unsupported.append({"name": lay.name, "op": lay.op, "macs": lay.macs, "bytes": lay.bytes,
                                "macs_share": lay.macs / total_macs if total_macs else 0.0,
                                "bytes_share": lay.bytes / total_bytes if total_bytes else 0.0, "reason": reason})
            continue
        d = designs[i]
        ests, refused = [], {}
        for n, res in per.items():
            r = res[seen[id(d)]]
            if isinstance(r, tuple):
                refused[n] = [r[1]]
                totals[n]["refused"] += 1
                continue
            e = r.to_dict()
            e["design"] = d.name
            ests.append(e)
            totals[n]["cycles"] += r.metrics.get("cycles", 0.0)
            totals[n]["energy_pj"] += r.metrics.get("energy_pj", 0.0)
            totals[n]["layers"] += 1
        compute_bound = None
        if lay.macs and macs_unit:
            compute_bound = lay.macs / macs_unit
        out_layers.append({"name": lay.name, "op": lay.op, "kind": lay.kind, "shape": lay.shape, "macs": lay.macs,
                           "bytes": lay.bytes, "dataflow": dataflows[i], "design": d.to_dict(),
                           "compute_bound_cycles": compute_bound, "estimates": ests, "refused": refused})
    for t in totals.values():
        t["latency_us"] = t["cycles"] / mapper.arch.clock_mhz
    return {"network": str(model), "architecture": mapper.arch.name, "dataflow": dataflow, "objective": objective,
            "layers": out_layers, "totals": totals, "unsupported": unsupported,
            "macs": total_macs, "bytes": total_bytes, "mac_units": macs_unit,
            "skipped": skipped, "failed": failed,
            "distinct_designs": len(uniq), "mapped_layers": len(designs),
            "seconds": {"load": t_load, "mapping": t_map, "estimate": t_est,
                        "total": time.perf_counter() - t0},
            "_designs": designs, "_layers": layers, "_arch_path": str(arch_path)}


def _safe(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._")
    return s[:80] or "layer"


def save(result: dict[str, Any], folder: str) -> list[str]:
    """Each mapped layer's design files: DIR/architecture.yaml, DIR/NNN-<layer>/{workload,mapping}.yaml."""
    from .mappings import mapping_body
    out = Path(folder)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"--save {folder}: cannot create the folder: {e.strerror or e}") from None
    from llmulator.fileio import atomic_write_text
    atomic_write_text(str(out / "architecture.yaml"), Path(result["_arch_path"]).read_text(encoding="utf-8"))
    written = []
    layers = result["_layers"]
    for i, d in result["_designs"].items():
        sub = out / f"{i:03d}-{_safe(layers[i].name)}"
        sub.mkdir(exist_ok=True)
        wl = _workload_doc(d)
        atomic_write_text(str(sub / "workload.yaml"), _dump({"workload": wl}))
        atomic_write_text(str(sub / "mapping.yaml"), _dump({"mapping": mapping_body(d)}))
        written.append(str(sub))
    return written


def _workload_doc(d) -> dict[str, Any]:
    w = d.workload
    if w.raw:
        return dict(w.raw)
    return {"version": 1, "name": w.name, "parameters": dict(w.parameters), "kernel": w.kernel,
            "arrays": {n: {"shape": list(a.shape), "dtype": a.dtype, "role": a.role} for n, a in w.arrays.items()}}


def _dump(doc: dict[str, Any]) -> str:
    """YAML with multi-line strings (kernels) as literal blocks, readable and re-loadable."""
    import yaml

    class _D(yaml.SafeDumper):
        pass

    def _str(dumper, s):
        return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)

    _D.add_representer(str, _str)
    return yaml.dump(doc, Dumper=_D, sort_keys=False, width=100)
