"""The llm's prefix cache (plugins/llm/prefix.py): a prompt that starts like a recent one is prefilled from
that prompt's keys and values, on both lean backends, with the same digits as a full prefill."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("safetensors")

from llmulator import library  # noqa: E402
from llmulator.design import load_design  # noqa: E402
from llmulator_plugins.llm import decode, lean, lean_numpy  # noqa: E402
from llmulator_plugins.llm.estimator import DEFAULT_MODEL, LLMEstimator  # noqa: E402
from llmulator_plugins.llm.prefix import PrefixCache  # noqa: E402

CONF_TOL = 1e-4


@pytest.fixture(scope="module")
def prompts():
    """Prompts of the library mappings on one architecture (they share the hardware section)."""
    designs = []
    for m in library.entries("mapping"):
        if m.get("architecture") == "systolic-16x16" and "workload" in m:
            designs.append(load_design(library.resolve("architecture", m["architecture"]),
                                       library.resolve("workload", m["workload"]), m["path"]))
    est = LLMEstimator(DEFAULT_MODEL)
    est.meta = est._meta()
    return est.prompts(designs[:8])


def test_the_cache_finds_the_longest_shared_prefix():
    pc = PrefixCache(size=2, min_tokens=2)
    pc.remember([1, 2, 3, 4], "a")
    pc.remember([1, 2, 9], "b")
    assert pc.longest([1, 2, 3, 7]) == ("a", 3)
    assert pc.longest([5]) == (None, 0)
    pc.remember([7], "c")          # the oldest goes
    assert pc.longest([1, 2, 3, 4])[0] == "b"


@pytest.mark.parametrize("backend", ["lean", "numpy"])
def test_prefilled_from_a_shared_prefix_gives_the_same_digits(prompts, backend):
    assert len(prompts) >= 4
    if backend == "lean":
        cold, warm = lean.LeanLlama(DEFAULT_MODEL), lean.LeanLlama(DEFAULT_MODEL)
    else:
        cold, warm = lean_numpy.NumpyLlama(DEFAULT_MODEL), lean_numpy.NumpyLlama(DEFAULT_MODEL)
    tok = lean.LeanTokenizer(DEFAULT_MODEL)
    want = []
    for p in prompts:            # each from scratch: a fresh cache every time
        cold._prefixes = PrefixCache(size=0)
        want += decode.decode_batch(cold, tok, [p])
    got = []
    for p in prompts:            # one after the other: every prompt after the first finds the hardware prefilled
        got += decode.decode_batch(warm, tok, [p])
    pc = warm._prefixes
    assert pc.hits == len(prompts) - 1
    assert pc.reused_tokens > 0.15 * (pc.reused_tokens + pc.prefilled_tokens)
    for w, g in zip(want, got, strict=True):
        assert g["metrics"] == w["metrics"] and g["interval"] == w["interval"]
        for m, c in w["confidence"].items():
            assert g["confidence"][m] == pytest.approx(c, abs=CONF_TOL)
