"""``llmulator dse ARCH --network MODEL.onnx --space HW.yaml``: architecture parameters for a whole network.

A point of the space is one choice of hardware values (the ``hardware:`` section of a dse space file:
PE array, memory capacity / bandwidth / width / banks, clock), applied to the base architecture by dse's
``Space.arch_body``. Its price is the network's total: every layer mapped on that architecture by the
per-layer search (``mappings.Mapper``, the same as ``estimate --network``), priced by the driving
estimator in one batch, and added up (cycles, energy; area and power of the architecture). dse's search
strategies (``search.run``: exhaustive within the budget, else random or evolutionary) pick the points,
dse's ``top_distinct`` and ``pareto`` rank them, and the best ``--verify`` points are verified layer by layer
with a profiler (dse's ``profile_all``; each distinct layer design once, cached in ``OUT/profiles.json``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from llmulator.errors import SpecError, UserError

LAYER_OBJECTIVE = {"cycles": "cycles", "energy": "energy", "edp": "edp"}


# -- the space: the hardware section of a dse space file (dse.space.hardware_dims) ----------------------
def load_hw_space(path: str | Path, arch_path: str | Path, objective: str | None = None):
    """A dse ``Space`` over hardware values only (SpecError with file positions for a bad field)."""
    from llmulator.schema import validate
    from llmulator.yamlsrc import load_yaml
    from llmulator_plugins.dse.space import Space, hardware_dims

    data, smap = load_yaml(path)
    validate("space", data, smap)
    s = data["space"]
    a_data, a_smap = load_yaml(arch_path)
    validate("architecture", a_data, a_smap)
    arch_doc = a_data["architecture"]
    from llmulator.specs import architecture_from_dict
    arch = architecture_from_dict(arch_doc, a_smap)
    diags = []
    for key in ("mapping", "workload", "base_mapping", "preset"):
        if key in s:
            diags.append(smap.diag(("space", key), f"space.{key} has no effect with --network: every layer's "
                                   "mapping is searched per hardware point", "only hardware: (and name, objective)",
                                   prefer_key=True))
    if s.get("architecture") and s["architecture"] != arch_doc["name"]:
        diags.append(smap.diag(("space", "architecture"), f"space is written for architecture "
                               f"'{s['architecture']}', but the architecture is '{arch_doc['name']}'",
                               f"architecture: {arch_doc['name']}"))
    dims = hardware_dims(s.get("hardware") or {}, arch, arch_doc, smap, diags)
    if not dims and not diags:
        diags.append(smap.diag(("space",), "no hardware values to search", "a hardware: section (pe_array, "
                               "memory, clock_mhz)", prefer_key=True))
    if diags:
        raise SpecError(diags)
    return Space(name=s["name"], file=str(path), dims=dims, arch_doc=arch_doc, mapping_doc={}, workload=None,
                 preset=None, objective=objective or s.get("objective", "cycles"), smap=smap,
                 description=s.get("description", ""))


# -- pricing a hardware point: the whole network --------------------------------------------------------
class NetworkEvaluator:
    """dse's evaluator interface (``space``, ``evaluate(points)`` -> dse's result arrays) for a network.

    ``layers``: the imported layers (those without a workload kind are skipped, as by ``estimate --network``);
    a point where a layer that maps on the base architecture cannot be mapped is invalid, with that reason.
    ``details[point]``: the point's architecture body, designs per layer index and per-layer metrics.
    """

    def __init__(self, space, layers: list, estimator, objective: str = "cycles", dataflow: str = "auto",
                 layer_budget: int = 2000, on_point=None):
        from llmulator_plugins.dse.evaluate import METRICS
        self.space = space
        self.layers = layers
        self.est = estimator
        self.objective = objective
        self.dataflow = dataflow
        self.layer_budget = layer_budget
        self.on_point = on_point or (lambda: None)
        self.metrics = METRICS
        self.details: dict[int, dict[str, Any]] = {}
        self.required: set[int] | None = None  # layers mapped on the base architecture
        self.bug: dict[str, Any] | None = None

    def _mapper(self, body: dict[str, Any]):
        from .mappings import Mapper
        return Mapper(None, self.dataflow, LAYER_OBJECTIVE[self.objective], self.layer_budget, doc=body)

    def base_layers(self) -> tuple[set[int], dict[int, str]]:
        """Indices of the layers that map on the base architecture, and why the others do not."""
        from .run import _key
        m = self._mapper(self.space.arch_doc)
        ok, why = set(), {}
        for i, lay in enumerate(self.layers):
            if lay.kind is None:
                continue
            d, _, reason = m.design(lay, _key(lay))
            if d is None:
                why[i] = reason
            else:
                ok.add(i)
        self.required = ok
        return ok, why

    def price(self, values: dict[str, Any]) -> tuple[dict[str, float] | None, str, dict[str, Any]]:
        """(totals or None, why invalid, details) of one choice of hardware values."""
        from llmulator_plugins.dse.evaluate import bug_record

        from .run import _key
        body = self.space.arch_body(values)
        try:
            mapper = self._mapper(body)
        except SpecError as e:
            return None, _first(e), {}
        if self.required is None:
            self.base_layers()
        designs: dict[int, Any] = {}
        dataflows: dict[int, str] = {}
        for i in sorted(self.required):
            lay = self.layers[i]
            d, df, why = mapper.design(lay, _key(lay))
            if d is None:
                return None, f"layer {lay.name}: {why}", {}
            designs[i], dataflows[i] = d, df
        uniq: list[Any] = []
        pos: dict[int, int] = {}
        for d in designs.values():
            if id(d) not in pos:
                pos[id(d)] = len(uniq)
                uniq.append(d)
        try:
            ests = list(self.est.estimate(uniq))
        except (SpecError, UserError) as e:
            return None, f"estimator declined a layer: {str(e).splitlines()[0][:120]}", {}
        except Exception as e:  # noqa: BLE001 - the estimator's plugin's bug: this point is invalid, dse blames it
            if self.bug is None:
                self.bug = {**bug_record(e), "points": 0}
            self.bug["points"] += 1
            return None, f"estimator raised {bug_record(e)['error']}", {}
        per_layer = {i: ests[pos[id(d)]].metrics for i, d in designs.items()}
        cycles = sum(float(m.get("cycles", 0.0)) for m in per_layer.values())
        energy = sum(float(m.get("energy_pj", 0.0)) for m in per_layer.values())
        area = max((float(m.get("area_um2", np.nan)) for m in per_layer.values()), default=np.nan)
        clock = float(body.get("clock_mhz", 1000.0))
        power = energy / (cycles / clock) * 1e-3 if cycles else np.nan  # pJ / us = uW -> mW
        totals = {"cycles": cycles, "energy_pj": energy, "area_um2": area, "power_mw": power}
        return totals, "", {"arch": body, "designs": designs, "dataflows": dataflows, "metrics": per_layer,
                            "distinct": len(uniq)}

    def evaluate(self, points: np.ndarray) -> dict[str, np.ndarray]:
        from llmulator_plugins.dse.evaluate import objective_of
        points = np.asarray(points, dtype=np.int64)
        n = points.shape[0]
        out: dict[str, np.ndarray] = {m: np.full(n, np.nan) for m in self.metrics}
        out["valid"] = np.zeros(n, dtype=bool)
        out["confidence"] = np.full(n, np.nan)
        out["reason"] = np.full(n, "", dtype=object)
        out["point"] = points
        for j, p in enumerate(points):
            totals, why, det = self.price(self.space.values_of(int(p)))
            if totals is None:
                out["reason"][j] = why
            else:
                out["valid"][j] = True
                for m in self.metrics:
                    out[m][j] = totals.get(m, np.nan)
                self.details[int(p)] = det
            self.on_point()
        out["objective"] = objective_of(out, self.objective)
        return out


def _clock(ev: NetworkEvaluator, point: int) -> float:
    return float(ev.details[point]["arch"].get("clock_mhz", 1000.0))


def _first(e: SpecError) -> str:
    msgs = [d.message for d in e.diagnostics] or [str(e)]
    return msgs[0]


# -- the whole job -----------------------------------------------------------------------------------------
def _search(space, layers, est, objective, dataflow, layer_budget, budget, strategy, seed, progress, model):
    """(evaluator, dse's result arrays, strategy used): the hardware points searched, a progress bar meanwhile."""
    from llmulator_plugins.dse import search

    from .run import _progress
    n_planned = space.size if (strategy in ("auto", "exhaustive") and space.size <= budget) else min(budget,
                                                                                                     space.size)
    bar = _progress(progress)
    task = None
    if bar is not None:
        bar.start()
        task = bar.add_task(f"{space.name}: hardware points", total=n_planned)
    ev = NetworkEvaluator(space, layers, est, objective, dataflow, layer_budget,
                          on_point=(lambda: bar.update(task, advance=1)) if bar is not None else None)
    try:
        ev.base_ok, ev.base_why = ev.base_layers()
        if not ev.base_ok:
            raise UserError(f"no layer of {model} maps on {space.arch_doc['name']}: " +
                            "; ".join(f"{layers[i].name}: {w}" for i, w in list(ev.base_why.items())[:3]))
        res, used = search.run(ev, budget, strategy, seed)
    finally:
        if bar is not None:
            bar.stop()
    return ev, res, used


def _ranking(space, ev, res, objective: str):
    """(valid points best first, invalid reasons with counts, the ranked records, the Pareto front records)."""
    from llmulator_plugins.dse import pareto
    from llmulator_plugins.dse.ranking import front_of
    from llmulator_plugins.dse.run import describe, rank_points
    reasons, order = rank_points(res, objective)
    ranked = [{"point": int(res["point"][i]), "params": describe(space, int(res["point"][i])),
               **{m: float(res[m][i]) for m in ("cycles", "energy_pj", "area_um2", "power_mw")},
               "edp": float(res["cycles"][i] * res["energy_pj"][i]),
               "latency_us": float(res["cycles"][i] / _clock(ev, int(res["point"][i])))}
              for i in order]
    front = front_of(res)
    return order, reasons, ranked, [{"point": int(res["point"][i]), "params": describe(space, int(res["point"][i])),
                                     **{m: float(res[m][i]) for m in pareto.OBJECTIVES}} for i in front]


def explore_network(arch: str, model: str, space_file: str, estimator: str = "analytical", budget: int = 200,
                    strategy: str = "auto", objective: str | None = None, dataflow: str = "auto",
                    layer_budget: int = 2000, verify: int = 1, profiler: str = "hlsim", time_limit_s: float = 60.0,
                    workers: int = 1, scheduler: str | None = None, out: str | None = None, seed: int = 0,
                    dims: dict[str, int] | None = None, progress: bool = True) -> dict[str, Any]:
    """Search the hardware space for the network; JSON-ready summary (plus ``_results``)."""
    from llmulator import plugins
    from llmulator.library import resolve
    from llmulator_plugins.dse.run import failures, top_distinct

    from .archverify import verify_points
    from .run import load_network

    for bad, msg in ((budget < 1, "--budget must be at least 1"), (verify < 0, "--verify must be 0 or more"),
                     (layer_budget < 1, "--search-budget must be at least 1")):
        if bad:
            raise UserError(msg)
    arch_path = resolve("architecture", arch)
    from llmulator_plugins.dse.space import resolve_space
    space = load_hw_space(resolve_space(space_file), arch_path, objective)
    objective = space.objective
    est = plugins.get("estimators", estimator)
    why = est.available() if hasattr(est, "available") else None
    if why is not None:
        raise UserError(f"estimator '{estimator}' is not available: {why}")
    t0 = time.perf_counter()
    layers = load_network(model, dims)
    t_load = time.perf_counter() - t0
    t1 = time.perf_counter()
    ev, res, used = _search(space, layers, est, objective, dataflow, layer_budget, budget, strategy, seed, progress,
                            model)
    base_ok, base_why = ev.base_ok, ev.base_why
    search_s = time.perf_counter() - t1
    order, reasons, ranked, front = _ranking(space, ev, res, objective)
    chosen = top_distinct(res, order, verify)
    t2 = time.perf_counter()
    verified, profiles = verify_points(ev, res, chosen, layers, profiler, time_limit_s, workers, scheduler, out)
    verify_s = time.perf_counter() - t2
    summary: dict[str, Any] = {
        "network": str(model), "space": space.name, "space_file": space.file, "architecture": space.arch_doc["name"],
        "estimator": getattr(est, "name", estimator), "objective": objective, "dataflow": dataflow,
        "strategy": used, "budget": budget, "seed": seed, "space_size": space.size,
        "dimensions": {d.key: len(d.values) for d in space.dims},
        "layers": len(layers), "mapped_layers": len(base_ok),
        "not_mapped": [{"name": layers[i].name, "op": layers[i].op, "reason": w} for i, w in base_why.items()],
        "unsupported": [{"name": x.name, "op": x.op, "reason": x.reason} for x in layers if x.kind is None],
        "evaluated": int(res["point"].size), "valid": int(res["valid"].sum()), "invalid_reasons": reasons,
        "seconds": {"load": round(t_load, 3), "search": round(search_s, 3), "verify": round(verify_s, 3)},
        "best": ranked[0] if ranked else None, "ranked": ranked,
        "pareto": front,
        "verified": verified, "profiler": profiler,
        "failures": failures(getattr(est, "name", estimator), ev.bug, profiler, profiles),
    }
    if out is not None:
        from llmulator.fileio import atomic_write_json
        Path(out).mkdir(parents=True, exist_ok=True)
        atomic_write_json(Path(out) / "summary.json", summary)
    summary["_results"] = res
    return summary
