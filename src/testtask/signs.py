"""One rule for "exactly zero", used wherever a count or a verdict depends on a sign.

Accuracies are multiples of 1/n, so a mean of differences that is 0 in exact arithmetic can come out of float
summation as ±1e-18; counted by `x < 0` it becomes a negative task (§9's zero-shot counts, a −1.8e−19 boost of
GPT-2 2 epochs in Table 2). A value with |x| < ZERO_TOLERANCE is exactly 0: neither positive nor negative.
"""

from __future__ import annotations

ZERO_TOLERANCE = 1e-12
ZERO_RULE = f"a value with |x| < {ZERO_TOLERANCE:g} counts as exactly 0 (neither positive nor negative)"


def is_zero(x: float) -> bool:
    return abs(float(x)) < ZERO_TOLERANCE


def sign(x: float) -> int:
    """-1, 0 or +1 under the zero rule."""
    return 0 if is_zero(x) else (1 if x > 0 else -1)
