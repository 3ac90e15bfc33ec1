"""Price points of a space with an estimator: vectorised where it can, one design at a time otherwise.

Fast path (an estimator with the ``BatchEstimator`` capability of
``llmulator.hookspecs``, e.g. the analytical one, on a single perfect nest that
uses the PE array): points are grouped by their *outer* values (hardware, unroll,
pipeline II, partition), one Design is built per group, and the group's
tile / spatial / order choices go through ``evaluate_batch`` as NumPy arrays.
Everything else (another estimator, several nests, a point that binds no loop
to the array) is *materialised*: each point becomes a checked Design and the
estimator's ``estimate`` prices a list of them. A point that breaks a rule
(tile larger than its loop, PE array or buffer overflow, any cross-file check)
is counted as invalid with its reason, never raised.

An estimator that raises anything other than ``SpecError``/``UserError`` (a
bug in its plugin, not a design it declines) does not end the search either:
its points are invalid with the reason ``estimator raised ...``, and the first
such exception is kept in ``Evaluator.bug`` (exception, where, on how many
points) for ``dse`` to blame on the plugin and exit with 3.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llmulator.design import Design
from llmulator.errors import SpecError, UserError
from llmulator.results import METRICS

from .space import Space

CHUNK = 64  # designs per estimate() call on the materialised path


def objective_of(metrics: dict[str, np.ndarray], objective: str) -> np.ndarray:
    """The minimised quantity; inf where the point is invalid."""
    if objective == "cycles":
        v = metrics["cycles"]
    elif objective == "energy":
        v = metrics["energy_pj"]
    elif objective == "edp":
        v = metrics["cycles"] * metrics["energy_pj"]
    else:
        raise ValueError(f"unknown objective {objective!r}")
    return np.where(metrics["valid"], v, np.inf)


def _reason_of(e: SpecError) -> str:
    msg = e.diagnostics[0].message if e.diagnostics else str(e)
    if "buffer capacity exceeded" in msg:
        return "buffer overflow"
    if "larger than the bound" in msg:
        return "tile > loop bound"
    if "loops bound to PE" in msg:
        return "PE array overflow"
    if "exceeds the" in msg and "unroll" in msg:
        return "unroll > tile"
    return msg.split(":")[0][:80]


def bug_record(e: BaseException) -> dict[str, str]:
    """``{"error": "Type: message", "where": "file:line in function"}`` of an exception."""
    import traceback
    frames = traceback.extract_tb(e.__traceback__)
    return {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".strip()[:120],
            "where": f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""}


class Evaluator:
    """Evaluates batches of point numbers of one space with one estimator."""

    def __init__(self, space: Space, estimator: Any, objective: str = "cycles", force_materialise: bool = False):
        self.space = space
        self.est = estimator
        self.objective = objective
        self.outer_dims = [i for i, d in enumerate(space.dims) if not d.inner]
        self.inner_dims = [i for i, d in enumerate(space.dims) if d.inner]
        self._designs: dict[tuple, Design | None] = {}
        self.fast = (not force_materialise) and self._fast_possible()
        self.n_fast = 0
        self.n_materialised = 0
        self.bug: dict[str, Any] | None = None  # the first exception that is its plugin's bug, and how many points

    def _bug(self, e: BaseException, points: int) -> str:
        """Record an exception other than SpecError/UserError; the reason its points get."""
        rec = bug_record(e)
        if self.bug is None:
            self.bug = {**rec, "points": 0}
        self.bug["points"] += points
        return f"estimator raised {rec['error']}"

    # -- setup --------------------------------------------------------------------------------
    def _fast_possible(self) -> bool:
        from llmulator.hookspecs import BatchEstimator
        if not isinstance(self.est, BatchEstimator):  # a declared capability, not a name
            return False
        base = self._outer_design(tuple(0 for _ in self.outer_dims))
        if base is None or any(lm.fuse for lm in base.mapping.loops.values()):
            return False  # fused loops are priced design by design
        try:
            labels = self.est.nest_labels(base)
        except (ValueError, SpecError):
            return False
        self.labels = labels
        self.trips = np.array([base.trips(lb) for lb in labels], dtype=float)
        from llmulator import traffic

        nest = traffic.nest_of(base, base.tree.top_loops()[0])
        if not nest.is_band:
            return False
        maps = traffic.mappings_from_design(base, nest)
        self.base_tiles = maps.tiles[0]
        self.base_spatial = maps.spatial[0]
        self.base_pos = maps.pos[0]
        any_spatial = bool((self.base_spatial > 0).any()) or any(
            d.key.endswith(".spatial") and any(v != "none" for v in d.values) for d in self.space.dims)
        return any_spatial and base.arch.pe_array is not None

    def _outer_design(self, outer_choice: tuple) -> Design | None:
        if outer_choice in self._designs:
            return self._designs[outer_choice]
        values = {self.space.dims[i].key: self.space.dims[i].values[c]
                  for i, c in zip(self.outer_dims, outer_choice, strict=True)}
        try:
            d = self.space.design_from(values, check=False)
            _ = d.tree
        except SpecError:
            d = None
        if len(self._designs) > 4096:
            self._designs.clear()
        self._designs[outer_choice] = d
        return d

    # -- evaluation ---------------------------------------------------------------------------
    def evaluate(self, points: np.ndarray) -> dict[str, np.ndarray]:
        points = np.asarray(points, dtype=np.int64)
        B = points.shape[0]
        out: dict[str, np.ndarray] = {m: np.full(B, np.nan) for m in METRICS}
        out["valid"] = np.zeros(B, dtype=bool)
        out["confidence"] = np.full(B, np.nan)
        out["reason"] = np.full(B, "", dtype=object)
        out["exact"] = np.ones(B, dtype=bool)  # False: a batch row whose cycles and energy are lower bounds
        out["point"] = points
        if B == 0:
            return out
        choice = self.space.decode(points)
        slow = np.ones(B, dtype=bool)
        if self.fast:
            slow = self._fast(choice, out)
        idx = np.nonzero(slow)[0]
        for start in range(0, idx.size, CHUNK):
            self._materialised(points, idx[start:start + CHUNK], out)
        out["objective"] = objective_of(out, self.objective)
        return out

    def _fast(self, choice: np.ndarray, out: dict[str, np.ndarray]) -> np.ndarray:
        """Vectorised path; returns the mask of points it could not price (left for the slow path)."""
        B = choice.shape[0]
        L = len(self.labels)
        tiles = np.tile(self.base_tiles, (B, 1))
        spatial = np.tile(self.base_spatial, (B, 1))
        pos = np.tile(self.base_pos, (B, 1))
        col = {lb: i for i, lb in enumerate(self.labels)}
        slow = np.zeros(B, dtype=bool)
        for j in self.inner_dims:
            d = self.space.dims[j]
            vals = d.values
            if d.key == "order":
                # position of each loop in the mapping sequence; loops outside the listed order keep their base position
                table = np.array([[list(o).index(lb) if lb in o else L + i for i, lb in enumerate(self.labels)]
                                  for o in vals])
                pos = table[choice[:, j]]
                continue
            _, label, field = d.key.split(".")
            if label not in col:  # a loop outside the vectorised band: price these points one by one
                slow[:] = True
                continue
            c = col[label]
            if field == "tile":
                tiles[:, c] = np.array(vals, dtype=float)[choice[:, j]]
            else:
                code = np.array([{"none": 0, "rows": 1, "cols": 2}[v] for v in vals])
                spatial[:, c] = code[choice[:, j]]
        no_spatial = ~(spatial > 0).any(axis=1)
        slow |= no_spatial
        tile_ok = (tiles <= self.trips[None, :]).all(axis=1)
        outer = choice[:, self.outer_dims] if self.outer_dims else np.zeros((B, 0), dtype=np.int64)
        keys, inverse = np.unique(outer, axis=0, return_inverse=True) if self.outer_dims else \
            (np.zeros((1, 0), dtype=np.int64), np.zeros(B, dtype=np.int64))
        inverse = np.asarray(inverse).reshape(-1)
        for g, key in enumerate(keys):
            sel = np.nonzero((inverse == g) & ~slow)[0]
            if sel.size == 0:
                continue
            d = self._outer_design(tuple(int(x) for x in key))
            if d is None:  # the hardware values make an invalid architecture: price one by one for the reason
                slow[sel] = True
                continue
            try:
                r = self.est.evaluate_batch(d, tiles[sel], spatial[sel], pos[sel])
            except (SpecError, UserError):
                slow[sel] = True  # priced one by one, each with its reason
                continue
            except Exception as e:  # noqa: BLE001 - its plugin's bug: these points are invalid, the search goes on
                out["reason"][sel] = self._bug(e, sel.size)
                continue
            pe = d.arch.pe_array
            rows = np.where(spatial[sel] == 1, tiles[sel], 1).prod(axis=1)
            cols = np.where(spatial[sel] == 2, tiles[sel], 1).prod(axis=1)
            pe_ok = (rows <= pe.rows) & (cols <= pe.cols)
            ok = r["valid"] & pe_ok & tile_ok[sel]
            for m in METRICS:
                out[m][sel] = r[m]
            out["exact"][sel] = np.asarray(r.get("exact", True), dtype=bool) & np.ones(sel.size, dtype=bool)
            out["valid"][sel] = ok
            reason = np.where(~tile_ok[sel], "tile > loop bound",
                              np.where(~pe_ok, "PE array overflow", np.where(~r["valid"], "buffer overflow", "")))
            out["reason"][sel] = reason
            self.n_fast += sel.size
        return slow

    def reprice(self, res: dict[str, np.ndarray], idx: np.ndarray) -> None:
        """Price the points ``idx`` of ``res`` (a search's results) again, one design at a time with the
        estimator's ``estimate``, and mark them exact: the batch path's lower bounds made exact."""
        idx = np.asarray(idx, dtype=np.int64)
        for m in METRICS:
            res[m][idx] = np.nan
        res["valid"][idx] = False
        res["reason"][idx] = ""
        for start in range(0, idx.size, CHUNK):
            self._materialised(res["point"], idx[start:start + CHUNK], res)
        res["exact"][idx] = True
        res["objective"][idx] = objective_of({m: res[m][idx] for m in METRICS} | {"valid": res["valid"][idx]},
                                             self.objective)

    def _materialised(self, points: np.ndarray, idx: np.ndarray, out: dict[str, np.ndarray]) -> None:
        designs, where = [], []
        for i in idx:
            try:
                d = self.space.materialise(int(points[i]), check=True)
            except SpecError as e:
                out["reason"][i] = _reason_of(e)
                continue
            designs.append(d)
            where.append(i)
        if not designs:
            return
        try:
            ests = list(self.est.estimate(designs))
            if len(ests) != len(designs):
                raise RuntimeError(f"estimate returned {len(ests)} results for {len(designs)} designs")
        except Exception:  # noqa: BLE001 - find the designs it declines (SpecError) or raises on, one by one
            ests = []
            for d in designs:
                try:
                    ests.append(self.est.estimate([d])[0])
                except Exception as e:  # noqa: BLE001 - sorted out below
                    ests.append(e)
        for i, e in zip(where, ests, strict=True):
            self.n_materialised += 1
            if isinstance(e, SpecError):
                out["reason"][i] = _reason_of(e)
                continue
            if isinstance(e, UserError):
                out["reason"][i] = str(e).splitlines()[0][:80]
                continue
            if isinstance(e, BaseException):
                out["reason"][i] = self._bug(e, 1)
                continue
            if not isinstance(getattr(e, "metrics", None), dict):
                out["reason"][i] = self._bug(TypeError(f"estimate returned {type(e).__name__}, not an Estimate"), 1)
                continue
            for m in METRICS:
                try:
                    out[m][i] = float((e.metrics or {}).get(m, np.nan))
                except (TypeError, ValueError):
                    out[m][i] = np.nan
            out["valid"][i] = bool(np.isfinite(out["cycles"][i]) and out["cycles"][i] > 0)
            if not out["valid"][i]:
                out["reason"][i] = "no cycles estimate"
            if e.confidence:
                key = {"energy": "energy_pj", "edp": "cycles"}.get(self.objective, self.objective)
                c = e.confidence.get(key, e.confidence.get("cycles"))
                if c is not None:
                    out["confidence"][i] = float(c)
