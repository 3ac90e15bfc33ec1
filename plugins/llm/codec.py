"""Numbers as digit sequences: the LLM estimator's output format.

Every metric is written in fixed-precision scientific form, one token per
symbol: three significant digits, ``e``, the exponent's sign and two exponent
digits — ``12345 -> 1 2 3 e + 0 4`` (1.23e4), ``0.0421 -> 4 2 1 e - 0 2``.
The format is range-agnostic (1e-99 .. 9.99e99) and every position has a
fixed vocabulary, so decoding can be constrained to valid tokens and each
position's probability distribution gives a confidence and an interval.
"""

from __future__ import annotations

import math

DIGITS = tuple("0123456789")
SIGNS = ("+", "-")
MANTISSA = 3
EXP_DIGITS = 2
LENGTH = MANTISSA + 1 + 1 + EXP_DIGITS  # d d d e s d d

# the vocabulary allowed at each position of one number
POSITIONS: tuple[tuple[str, ...], ...] = (
    tuple("123456789") + ("0",),  # leading digit (0 only for the value zero)
    DIGITS, DIGITS, ("e",), SIGNS, DIGITS, DIGITS)


def encode(value: float) -> list[str]:
    """The token sequence of a non-negative value."""
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"cannot encode {value!r}: metrics are finite and non-negative")
    if value == 0:
        return ["0", "0", "0", "e", "+", "0", "0"]
    exp = math.floor(math.log10(value))
    mant = round(value / 10 ** (exp - MANTISSA + 1))
    if mant >= 10 ** MANTISSA:  # rounding carried into a new digit
        exp += 1
        mant = round(value / 10 ** (exp - MANTISSA + 1))
    if abs(exp) > 10 ** EXP_DIGITS - 1:
        raise ValueError(f"cannot encode {value!r}: exponent out of range")
    digits = f"{mant:0{MANTISSA}d}"
    return [*digits, "e", "+" if exp >= 0 else "-", *f"{abs(exp):0{EXP_DIGITS}d}"]


def decode(tokens: list[str]) -> float:
    """The value of a token sequence written by :func:`encode` (or by constrained decoding)."""
    if len(tokens) != LENGTH or tokens[MANTISSA] != "e" or tokens[MANTISSA + 1] not in SIGNS:
        raise ValueError(f"not a number encoding: {' '.join(tokens)}")
    mant = int("".join(tokens[:MANTISSA]))
    exp = int("".join(tokens[MANTISSA + 2:]))
    if tokens[MANTISSA + 1] == "-":
        exp = -exp
    return mant * 10.0 ** (exp - MANTISSA + 1)


def relative_step(tokens: list[str]) -> float:
    """Relative size of one unit in the last mantissa digit (the format's resolution at this value)."""
    v = decode(tokens)
    if v == 0:
        return 0.0
    exp = int("".join(tokens[MANTISSA + 2:])) * (-1 if tokens[MANTISSA + 1] == "-" else 1)
    return 10.0 ** (exp - MANTISSA + 1) / v
