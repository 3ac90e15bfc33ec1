"""The winners of ``dse --network`` verified layer by layer: each distinct layer design of a chosen hardware point
profiled once (dse's ``profile_all``: in-process, worker processes or Dask; cached in ``OUT/profiles.json``),
predicted and measured side by side, and the network's measured total."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def _tasks(ev, res, chosen, profiler: str, time_limit_s: float, wl_dir: Path) -> tuple[list[dict], list[tuple]]:
    """dse's profiling tasks (one per distinct layer design of each chosen point) and, per task, (rank, the
    indices of the layers that use that design)."""
    from llmulator.fileio import atomic_write_text

    from .mappings import mapping_body
    from .run import _dump, _safe, _workload_doc
    tasks, owners = [], []
    for rank, i in enumerate(chosen):
        det = ev.details[int(res["point"][i])]
        by_design: dict[int, list[int]] = {}
        for li, d in det["designs"].items():
            by_design.setdefault(id(d), []).append(li)
        for li_list in by_design.values():
            d = det["designs"][li_list[0]]
            wf = wl_dir / f"{_safe(d.workload.name)}.yaml"
            if not wf.exists():
                atomic_write_text(str(wf), _dump({"workload": _workload_doc(d)}))
            tasks.append({"architecture": det["arch"], "mapping": mapping_body(d), "workload_file": str(wf),
                          "preset": None, "profiler": profiler, "time_limit_s": time_limit_s})
            owners.append((rank, li_list))
    return tasks, owners


def _row(layers, det: dict, li_list: list[int], prof: dict) -> dict[str, Any]:
    li = li_list[0]
    pred, meas = det["metrics"][li], prof.get("measured")
    return {"layers": [layers[x].name for x in li_list], "op": layers[li].op, "shape": layers[li].shape,
            "dataflow": det["dataflows"][li],
            "predicted": {"cycles": float(pred.get("cycles", np.nan)),
                          "energy_pj": float(pred.get("energy_pj", np.nan))},
            "measured": None if meas is None else {"cycles": float(meas.get("cycles", np.nan)),
                                                   "energy_pj": float(meas.get("energy_pj", np.nan))},
            "error": prof.get("error", ""), "cached": prof.get("cached", False)}


def verify_points(ev, res, chosen: list[int], layers, profiler: str, time_limit_s: float, workers: int,
                  scheduler: str | None, out: str | None) -> tuple[list[dict[str, Any]], list[dict]]:
    """(one record per chosen point: predicted and measured totals, per-layer rows, errors; dse's profiles)."""
    import tempfile

    from llmulator_plugins.dse.run import describe
    from llmulator_plugins.dse.verify import profile_all
    tmp = tempfile.TemporaryDirectory(prefix="dse-network-") if out is None else None
    wl_dir = Path(out) / "workloads" if out is not None else Path(tmp.name)
    wl_dir.mkdir(parents=True, exist_ok=True)
    try:
        tasks, owners = _tasks(ev, res, chosen, profiler, time_limit_s, wl_dir)
        cache = Path(out) / "profiles.json" if out is not None else None
        profiles = profile_all(tasks, workers=workers, scheduler=scheduler, cache=cache) if tasks else []
    finally:
        if tmp is not None:
            tmp.cleanup()
    verified = []
    for rank, i in enumerate(chosen):
        p = int(res["point"][i])
        det = ev.details[p]
        rows, meas_c, meas_e, errors = [], 0.0, 0.0, []
        for (r, li_list), prof in zip(owners, profiles, strict=True):
            if r != rank:
                continue
            rows.append(_row(layers, det, li_list, prof))
            meas = prof.get("measured")
            if meas is None:
                errors.append(f"{layers[li_list[0]].name}: {prof.get('error', '')}")
            else:
                meas_c += meas.get("cycles", np.nan) * len(li_list)
                meas_e += meas.get("energy_pj", np.nan) * len(li_list)
        verified.append({"point": p, "rank": rank + 1, "params": describe(ev.space, p),
                         "predicted": {m: float(res[m][i]) for m in ("cycles", "energy_pj", "area_um2")},
                         "measured": None if errors else {"cycles": meas_c, "energy_pj": meas_e},
                         "errors": errors, "layers": rows})
    return verified, profiles
