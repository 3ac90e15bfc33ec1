"""The digit codec of the LLM estimator."""

from __future__ import annotations

import math

import pytest
from llmulator_plugins.llm import codec


@pytest.mark.parametrize("value,text", [
    (12345, "+ 0 4 1 2 3"), (0.0421, "- 0 2 4 2 1"), (1, "+ 0 0 1 0 0"), (999.6, "+ 0 3 1 0 0"),
    (0, "+ 0 0 0 0 0"), (5.5e-7, "- 0 7 5 5 0"), (2.3456e12, "+ 1 2 2 3 5")])
def test_encode_writes_the_signed_exponent_then_three_significant_digits(value, text):
    assert " ".join(codec.encode(value)) == text
    assert len(codec.encode(value)) == codec.LENGTH


@pytest.mark.parametrize("value", [1.0, 7.77, 123.4, 1e-9, 3.14159e20, 65536, 0.5])
def test_round_trip_is_within_the_format_resolution(value):
    back = codec.decode(codec.encode(value))
    assert math.isclose(back, value, rel_tol=5e-3)
    assert codec.relative_step(codec.encode(value)) <= 0.01 + 1e-12


def test_every_position_of_an_encoding_is_in_its_allowed_vocabulary():
    for v in (1, 0.001, 123456789.0, 0):
        for tok, allowed in zip(codec.encode(v), codec.POSITIONS, strict=True):
            assert tok in allowed


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), 1e150])
def test_bad_values_are_refused(bad):
    with pytest.raises(ValueError):
        codec.encode(bad)


def test_decode_refuses_malformed_sequences():
    with pytest.raises(ValueError):
        codec.decode(list("123456"))
    with pytest.raises(ValueError):
        codec.decode(list("+0412"))
