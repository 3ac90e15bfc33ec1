"""The dataset format: the one module that reads and writes a labelled dataset.

``llmulator synth`` writes a dataset; ``train``, ``bench``, the baselines and
the benchmarks read it, all through this module. A dataset is a folder:

* ``dataset.json``: the manifest (stages, size, seed, shard size, shard names);
* ``data/stage<s>-<k>.parquet``: the shards, one row per sample, each written
  to a temporary name and renamed (:func:`write_shard`).

A row (:func:`record`) holds the three spec documents as YAML text
(``architecture_yaml``, ``workload_yaml``, ``mapping_yaml``), the size preset,
the input variant and seed, the group keys of the held-out splits (``app``,
``hw``, ``input_dist``, ``family``), the prompt, the four metrics
(:data:`METRICS`), ``facts_json`` (trip counts, II, depth, traffic per level,
units: reasoning targets) and the structure statistics of the dataset card;
the synth driver adds ``index`` and ``sample_id``. :func:`design_of_row`
rebuilds a row's :class:`~llmulator.design.Design`.

Held-out splits and application families are a pure function of each row
(:func:`split_of`):

* ``test_app`` — every sample of an application (a library kernel or a
  generated program) whose name hashes into the held-out 15 %: code the model
  has never read.
* ``test_hw`` — samples of applications that *are* trained on, on a hardware
  family (the base architecture a variant was drawn around, e.g. ``tpu-like``
  for ``tpu-like.v3a9f...``) that hashes into the held-out buckets. Every
  sample of such a family is held out, so no variant of it is seen in
  training; generated programs are only ever drawn on non-held-out families
  (``hw_family_held_out``), so ``test_hw`` holds library applications only.
* ``test_input`` — samples of trained applications under an input *variant*
  (``workload:variant``, never the default ``:base`` distribution) that hashes
  into the held-out buckets: the same code under data it was not trained on.
* ``val`` — every sample of an application whose name hashes into the next 5 %
  (buckets 15-19): applications that are neither trained on nor tested on. Early
  stopping and the 90 % intervals (split-conformal, ``llmulator.conformal``) are
  measured here, so they describe code the model has not read, as ``test_app``
  is; a validation split drawn from the training applications made the
  baselines' "90 %" intervals cover 52-64 % of outside kernels.
* ``train`` — the rest.

Leave-one-family-out: every record belongs to an application family
(:data:`FAMILIES`: library kernels by a fixed table, generated programs by the
template of their first loop nest). ``split_of(rec, holdout_family=F)`` puts
every sample of family ``F`` into ``test_family`` (before any other rule), so
training without ``F`` and testing on it measures generalisation to a kind of
code the model never saw.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import yaml

from .design import Design, check_design
from .errors import SpecError, UserError
from .results import METRICS
from .schema import validate
from .specs import BUILDERS
from .yamlsrc import SourceMap

__all__ = ["METRICS", "SPLITS", "TEST_SPLITS", "HELD_OUT", "GROUP", "FAMILIES", "LIBRARY_FAMILIES", "bucket",
           "base_app", "hw_family", "hw_family_held_out", "family_of", "group_of", "split_of", "check_holdout_family",
           "rows_by_split",
           "Rejected", "SampleSpec", "build_design", "spec_of_row", "design_of_row", "designs_of", "record",
           "read_records", "load_rows", "write_shard", "shard_complete"]

# -- splits and families ------------------------------------------------------------------------

SPLITS = ("train", "val", "test_app", "test_hw", "test_input", "test_family")
TEST_SPLITS = ("test_app", "test_hw", "test_input")
#: percentage of hash buckets held out per group kind (``val``: the application buckets after ``test_app``'s)
HELD_OUT = {"app": 15, "hw": 30, "input_dist": 30, "val": 5}
GROUP = 4  # samples per program+mapping group (the synth driver's unit: one compile serves them)

#: application family of every library workload (generated programs name their own family)
LIBRARY_FAMILIES: dict[str, str] = {
    **dict.fromkeys(["gemm", "gemm-pb", "relu-gemm", "k2mm", "k3mm", "atax", "bicg", "mvt", "gemver", "gesummv",
                     "symm", "syrk", "syr2k", "trmm", "doitgen", "covariance", "correlation", "gramschmidt"],
                    "dense-la"),
    **dict.fromkeys(["cholesky", "lu", "ludcmp", "trisolv", "durbin", "iterative-solver", "deriche", "adi"],
                    "solver-recurrence"),
    **dict.fromkeys(["jacobi-1d", "jacobi-2d", "seidel-2d", "heat-3d", "fdtd-2d"], "stencil"),
    **dict.fromkeys(["conv2d", "depthwise-conv", "pointwise-conv", "avgpool", "maxpool", "attention-qk",
                     "attention-av", "softmax", "layernorm", "gelu"], "ml"),
    **dict.fromkeys(["spmv-csr", "spmv-ell", "sparse-conv", "bfs", "histogram", "embedding"], "sparse-indirect"),
    **dict.fromkeys(["early-exit-search", "merge-sort", "topk", "rle-decode", "nussinov", "floyd-warshall"],
                    "control-dynamic"),
}
FAMILIES = ("dense-la", "solver-recurrence", "stencil", "ml", "sparse-indirect", "control-dynamic")


def bucket(text: str) -> int:
    """A stable bucket in 0..99 for a group name (SHA-1, not Python's salted hash)."""
    return int(hashlib.sha1(text.encode()).hexdigest(), 16) % 100


def base_app(app: str) -> str:
    """The application a sample was derived from (mutations ``gemm.mut3`` belong to ``gemm``)."""
    return app.split(".mut")[0]


def hw_family(hw: str) -> str:
    """The base architecture a hardware variant was drawn around (``tpu-like.v1a2b.mag`` -> ``tpu-like``)."""
    return hw.split(".v")[0]


def hw_family_held_out(family: str) -> bool:
    return bucket("hw:" + family) < HELD_OUT["hw"]


def family_of(rec: dict[str, Any]) -> str:
    """The record's application family: its own ``family`` field, else the library table, else ``other``."""
    fam = rec.get("family") or ""
    if fam:
        return fam
    return LIBRARY_FAMILIES.get(base_app(rec.get("app", "")), "other")


def group_of(rec: dict[str, Any]) -> str:
    """The program+mapping group of a record (samples ``4g .. 4g+3`` of one stage share one)."""
    return f"{rec.get('stage')}:{int(rec.get('index', 0)) // GROUP}"


def split_of(rec: dict[str, Any], holdout_family: str | None = None) -> str:
    if holdout_family is not None and family_of(rec) == holdout_family:
        return "test_family"
    app_bucket = bucket("app:" + base_app(rec["app"]))
    if app_bucket < HELD_OUT["app"]:
        return "test_app"
    if app_bucket < HELD_OUT["app"] + HELD_OUT["val"]:
        return "val"
    if hw_family_held_out(hw_family(rec["hw"])):
        return "test_hw"
    dist = rec.get("input_dist", "")
    if not dist.endswith(":base") and bucket("input:" + dist) < HELD_OUT["input_dist"]:
        return "test_input"
    return "train"


def check_holdout_family(rows: list[dict[str, Any]], family: str | None, option: str = "--holdout-family") -> None:
    """A UserError unless some row belongs to application family ``family`` (None: nothing to check)."""
    if family is None:
        return
    present = sorted({family_of(r) for r in rows})
    if family not in present:
        raise UserError(f"{option} {family!r}: no row of the dataset belongs to that family "
                        f"(families present: {', '.join(present) or 'none'})")


def rows_by_split(rows: list[dict[str, Any]], splits=SPLITS,
                  holdout_family: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The rows of each of ``splits`` (others left out), each list ordered by sample id, so that what is
    drawn from it does not depend on how the dataset was sharded."""
    out: dict[str, list[dict[str, Any]]] = {s: [] for s in splits}
    for r in sorted(rows, key=lambda r: r["sample_id"]):
        s = split_of(r, holdout_family)
        if s in out:
            out[s].append(r)
    return out


# -- samples: specs -> Design, rows -> Design ---------------------------------------------------

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser, the same safe constructor


def _load(text: str) -> Any:
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader


class Rejected(Exception):
    """The generated design is not valid or cannot be labelled (the synth driver draws another), or a
    dataset row's specs no longer build a design."""


@attrs.define
class SampleSpec:
    """One sample before labelling: the three spec documents as plain dicts and the keys of its splits."""

    stage: int
    generator: str
    arch: dict[str, Any]
    workload: dict[str, Any]
    mapping: dict[str, Any]
    preset: str | None = None
    variant: str | None = None
    input_seed: int = 0
    app: str = ""  # application (held-out-application split)
    hw: str = ""  # hardware configuration id (held-out-hardware split)
    input_dist: str = "base"  # input distribution id (held-out-input split)
    family: str = ""  # application family (leave-one-family-out); library kernels: LIBRARY_FAMILIES
    mutations: list[str] = attrs.field(factory=list)


def spec_yaml(kind: str, body: dict[str, Any]) -> str:
    """One spec document as a row stores it (``kind:`` at the top)."""
    return yaml.dump({kind: body}, Dumper=_DUMPER, sort_keys=False, width=100)


def build_design(spec: SampleSpec) -> Design:
    """Schema-validate and cross-check the three documents; Rejected with the reason otherwise."""
    docs = {}
    for kind, body in (("architecture", spec.arch), ("workload", spec.workload), ("mapping", spec.mapping)):
        smap = SourceMap(f"<synth {kind}>")
        try:
            validate(kind, {kind: body}, smap)
        except SpecError as e:
            raise Rejected(f"{kind}: {e.diagnostics[0].format()}") from None
        docs[kind] = (body, smap)
    try:
        a, w, m = (BUILDERS[kind](*docs[kind]) for kind in ("architecture", "workload", "mapping"))
        d = Design(a, w, m, spec.preset, spec.variant)
        check_design(d)
    except SpecError as e:
        raise Rejected(e.diagnostics[0].format()) from None
    return d


def spec_of_row(row: dict[str, Any]) -> SampleSpec:
    """The spec a dataset row was made from (rows store the three specs as YAML)."""
    return SampleSpec(stage=int(row["stage"]), generator=row["generator"],
                      arch=_load(row["architecture_yaml"])["architecture"],
                      workload=_load(row["workload_yaml"])["workload"],
                      mapping=_load(row["mapping_yaml"])["mapping"], preset=row["preset"] or None,
                      variant=row["variant"] or None)


def design_of_row(row: dict[str, Any]) -> Design:
    """Rebuild the Design of a dataset row (raises ``Rejected`` if it no longer builds)."""
    return build_design(spec_of_row(row))


def designs_of(rows: list[dict[str, Any]]) -> tuple[list[tuple[dict[str, Any], Design]], Counter]:
    """Rebuild each row's design; returns (row, design) pairs and a Counter of the reasons rows failed."""
    out, bad = [], Counter()
    for r in rows:
        try:
            out.append((r, design_of_row(r)))
        except (Rejected, KeyError, TypeError, yaml.YAMLError) as e:
            bad[f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"] += 1
    return out, bad


def record(spec: SampleSpec, profile, prompt: str, stats: dict[str, Any]) -> dict[str, Any]:
    """One row: the sample's specs and keys, its ``prompt``, the profile's metrics and facts, and the
    structure statistics ``stats`` of the dataset card (``index`` and ``sample_id`` are the driver's)."""
    p = profile
    facts = {k: v for k, v in p.counters.items() if k.startswith(("trips.", "reads.", "writes.", "units."))}
    facts.update({k: v for k, v in p.breakdown.items() if k.startswith(("ii.", "depth.", "cycles."))})
    rec: dict[str, Any] = {
        "stage": spec.stage, "generator": spec.generator, "app": spec.app, "hw": spec.hw,
        "input_dist": spec.input_dist, "family": spec.family or family_of({"app": spec.app}),
        "variant": spec.variant or "", "input_seed": spec.input_seed,
        "preset": spec.preset or "", "mutations": ",".join(spec.mutations),
        "architecture_yaml": spec_yaml("architecture", spec.arch),
        "workload_yaml": spec_yaml("workload", spec.workload),
        "mapping_yaml": spec_yaml("mapping", spec.mapping), "prompt": prompt,
        "facts_json": json.dumps(facts, sort_keys=True), "functional_check": p.functional_check,
        "profiler": f"{p.profiler} {p.version}",
    }
    for k in METRICS:
        rec[k] = float(p.metrics[k])
    rec.update(stats)
    return rec


# -- storage: Parquet shards --------------------------------------------------------------------

def read_records(out: str | Path) -> list[dict[str, Any]]:
    """Every row of the dataset in folder ``out``, shard by shard (shards in name order)."""
    import pyarrow.parquet as pq
    rows: list[dict[str, Any]] = []
    for f in sorted((Path(out) / "data").glob("*.parquet")):
        rows.extend(pq.read_table(f).to_pylist())
    return rows


def load_rows(data: str | Path, option: str = "--data") -> list[dict[str, Any]]:
    """The rows of a dataset a command was pointed at (``option``: how the command names it); a UserError
    that says what is missing when the folder is not a dataset made by ``llmulator synth``."""
    d = Path(data)
    if not d.is_dir():
        raise UserError(f"{option} {data}: no such folder (expected a dataset made by `llmulator synth`)")
    if not any((d / "data").glob("*.parquet")):
        raise UserError(f"{option} {data}: no Parquet shards under {d / 'data'} (expected a dataset made by "
                        "`llmulator synth --out DIR`)")
    return read_records(d)


def write_shard(path: Path, records: list[dict[str, Any]]) -> None:
    """Write one shard atomically (a temporary name, then a rename): a shard that exists is complete."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pa.Table.from_pylist(records)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except OSError as e:  # a full disk, a read-only folder: the shards written so far stay; resume later
        tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write {path}: {e.strerror or e}; the {path.parent.parent} dataset keeps "
                        "its finished shards; free space and run the same command again to resume") from None


def shard_complete(path: Path, rows: int) -> bool:
    """Whether the shard at ``path`` exists, reads, and holds ``rows`` rows (a damaged one is redone)."""
    if not path.is_file():
        return False
    try:
        import pyarrow.parquet as pq
        return pq.ParquetFile(path).metadata.num_rows == rows
    except Exception:  # noqa: BLE001 - a damaged shard is redone
        return False
