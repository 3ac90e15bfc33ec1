"""The text every prompt consumer reads is frozen byte for byte on a set of library designs.

The shipped LLM checkpoint was trained on ``compact-v2`` prompts with analytical hints: its accuracy
depends on every character of them. ``tests/data/prompts.json`` holds, for each design below, the model's
prompt under each hint level, the dataset's ``prompt`` column (``render.prompt``) and the rendered HLS C,
as they were before the prompt format moved to the llm plugin's public API; a refactoring that changes
one byte fails here. Regenerate (only for an intended format change, with a new ``PROMPT_FORMAT``, or where a
new analytical version moves a prior the ``model/analytical`` prompts quote, as analytical 0.64 moved
merge-sort-opt's energy digits): ``python tests/test_prompt_golden.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "prompts.json"

# (architecture, workload, mapping, variant): a systolic GEMM, sparse and data-dependent kernels with input
# variants, a triangular band, fused loops with a reduction tree, dataflow and partitions, an Eyeriss conv
DESIGNS = [
    ("systolic-16x16", "gemm", "gemm-ws-16x16", None),
    ("hls-fpga", "spmv-csr", "spmv-csr-hls-fpga", "skewed"),
    ("hls-fpga", "k2mm", "k2mm-opt", None),
    ("hls-fpga", "cholesky", "cholesky-opt", None),
    ("systolic-16x16", "attention-av", "attention-av-opt", None),
    ("eyeriss-like", "conv2d", "conv2d-rs-eyeriss", None),
    ("hls-fpga", "iterative-solver", "iterative-solver-opt", "weak"),
    ("hls-fpga", "bfs", "bfs-plain", "skewed"),
    ("hls-fpga", "merge-sort", "merge-sort-opt", None),
    ("hls-fpga", "atax", "atax-hls-fpga", None),
]


def _key(a, w, m, v) -> str:
    return f"{a} {w} {m}" + (f" --variant {v}" if v else "")


def _design(a, w, m, v):
    from llmulator.design import load_design
    from llmulator.library import resolve
    return load_design(resolve("architecture", a), resolve("workload", w), resolve("mapping", m), variant=v)


def texts(a, w, m, v) -> dict[str, str]:
    """Every text of one design that the golden file freezes."""
    from llmulator import render
    from llmulator_plugins.llm import text

    d = _design(a, w, m, v)
    out = {f"model/{h}": text.model_prompt(d, hints=h) for h in ("none", "static", "analytical")}
    out["dataset"] = render.prompt(d)
    out["hls"] = render.hls_c(d)
    return out


@pytest.fixture(scope="module")
def golden() -> dict[str, dict[str, str]]:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.mark.parametrize("spec", DESIGNS, ids=[_key(*s) for s in DESIGNS])
def test_prompts_are_byte_identical_to_the_golden_ones(spec, golden):
    want = golden[_key(*spec)]
    got = texts(*spec)
    assert set(got) == set(want)
    for kind in want:
        assert got[kind] == want[kind], f"{_key(*spec)}: the {kind} text changed"


def test_the_shipped_model_reads_the_frozen_analytical_prompt(golden):
    """The shipped checkpoint's own settings pick the frozen text: its format and hints."""
    from llmulator_plugins.llm import text
    from llmulator_plugins.llm.estimator import DEFAULT_MODEL

    meta = json.loads((DEFAULT_MODEL / "llmulator.json").read_text())
    assert meta["format"] == text.PROMPT_FORMAT == "compact-v2" and meta["hints"] == "analytical"
    d = _design(*DESIGNS[0])
    assert text.model_prompt(d, hints=meta["hints"]) == golden[_key(*DESIGNS[0])]["model/analytical"]


if __name__ == "__main__":
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps({_key(*s): texts(*s) for s in DESIGNS}, indent=1, sort_keys=True) + "\n",
                      encoding="utf-8")
    print(f"wrote {GOLDEN}", file=sys.stderr)
