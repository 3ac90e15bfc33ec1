"""Numbers as digit sequences: the LLM estimator's output format.

Every metric is written in fixed-precision scientific form, one token per
symbol, **order of magnitude first**: the exponent's sign, two exponent digits,
then three significant digits — ``12345 -> + 0 4 1 2 3`` (1.23e4),
``0.0421 -> - 0 2 4 2 1`` (4.21e-2). The format is range-agnostic
(1e-99 .. 9.99e99) and every position has a fixed vocabulary, so decoding can
be constrained to valid tokens and each position's distribution gives a
confidence and an interval.

Why exponent first: a causal model writes left to right, so the magnitude —
the part that matters most and is hardest — is decided first and the mantissa
is conditioned on it. Mantissa-first (``1 2 3 e + 0 4``, the first version)
commits to a leading digit before knowing the decade, and wrong decades were
the dominant error of the first trained model.
"""

from __future__ import annotations

import math

DIGITS = tuple("0123456789")
SIGNS = ("+", "-")
MANTISSA = 3
EXP_DIGITS = 2
LENGTH = 1 + EXP_DIGITS + MANTISSA  # s d d d d d
LEAD = 1 + EXP_DIGITS  # index of the leading mantissa digit
ZERO = ["+", "0", "0", "0", "0", "0"]

# the vocabulary allowed at each position of one number
POSITIONS: tuple[tuple[str, ...], ...] = (
    SIGNS, DIGITS, DIGITS,
    tuple("123456789") + ("0",),  # leading digit (0 only for the value zero)
    DIGITS, DIGITS)


def encode(value: float) -> list[str]:
    """The token sequence of a non-negative value."""
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"cannot encode {value!r}: metrics are finite and non-negative")
    if value == 0:
        return list(ZERO)
    exp = math.floor(math.log10(value))
    mant = round(value / 10 ** (exp - MANTISSA + 1))
    if mant >= 10 ** MANTISSA:  # rounding carried into a new digit
        exp += 1
        mant = round(value / 10 ** (exp - MANTISSA + 1))
    if abs(exp) > 10 ** EXP_DIGITS - 1:
        raise ValueError(f"cannot encode {value!r}: exponent out of range")
    return ["+" if exp >= 0 else "-", *f"{abs(exp):0{EXP_DIGITS}d}", *f"{mant:0{MANTISSA}d}"]


def exponent(tokens: list[str]) -> int:
    e = int("".join(tokens[1:LEAD]))
    return -e if tokens[0] == "-" else e


def decode(tokens: list[str]) -> float:
    """The value of a token sequence written by :func:`encode` (or by constrained decoding)."""
    if (len(tokens) != LENGTH or tokens[0] not in SIGNS
            or not all(t in DIGITS for t in tokens[1:])):
        raise ValueError(f"not a number encoding: {' '.join(tokens)}")
    if tokens[LEAD] == "0":  # a leading zero only encodes the value zero
        return 0.0
    return int("".join(tokens[LEAD:])) * 10.0 ** (exponent(tokens) - MANTISSA + 1)


def relative_step(tokens: list[str]) -> float:
    """Relative size of one unit in the last mantissa digit (the format's resolution at this value)."""
    v = decode(tokens)
    if v == 0:
        return 0.0
    return 10.0 ** (exponent(tokens) - MANTISSA + 1) / v
