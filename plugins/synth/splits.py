"""Held-out splits and application families: a pure function of each dataset record.

A split must mean its name, so each test split holds out exactly one thing and
never shares a program+mapping group with training:

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
* ``val`` — 5 % of the remaining program+mapping *groups* (the four samples that
  share one program and mapping go to the same side).
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
from typing import Any

SPLITS = ("train", "val", "test_app", "test_hw", "test_input", "test_family")
TEST_SPLITS = ("test_app", "test_hw", "test_input")
#: percentage of hash buckets held out per group kind
HELD_OUT = {"app": 15, "hw": 30, "input_dist": 30, "val": 5}
GROUP = 4  # samples per program+mapping group (the synth driver's unit; kept in step with driver.GROUP)

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
    if bucket("app:" + base_app(rec["app"])) < HELD_OUT["app"]:
        return "test_app"
    if hw_family_held_out(hw_family(rec["hw"])):
        return "test_hw"
    dist = rec.get("input_dist", "")
    if not dist.endswith(":base") and bucket("input:" + dist) < HELD_OUT["input_dist"]:
        return "test_input"
    if bucket("group:" + group_of(rec)) < HELD_OUT["val"]:
        return "val"
    return "train"
