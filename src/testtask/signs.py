"""One rule for "exactly zero", wherever a count or a verdict depends on a sign: accuracies are multiples of 1/n,
so a mean difference that is 0 exactly can come out of float summation as ±1e-18 and, counted by `x < 0`, make a
negative task (§9's zero-shot counts, a −1.8e−19 boost of GPT-2 2 epochs in Table 2).
"""

from __future__ import annotations

ZERO_TOLERANCE = 1e-12
ZERO_RULE = f"a value with |x| < {ZERO_TOLERANCE:g} counts as exactly 0 (neither positive nor negative)"


def is_zero(x: float) -> bool:
    return abs(float(x)) < ZERO_TOLERANCE


def sign(x: float) -> int:
    """-1, 0 or +1 under the zero rule."""
    return 0 if is_zero(x) else (1 if x > 0 else -1)
