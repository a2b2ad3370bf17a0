"""Summaries of a distribution (over documents) of per-sample correlations, as in §3 and Appendix B.

For correlations c_1..c_n in [-1, 1]:
- the empirical complementary CDF (survival function) Ŝ(c) = (1/n) Σ 1{c_i > c} (Eq. 6, 8);
- mean and median;
- the area under Ŝ on [-1, 1], ∫ Ŝ(c) dc = (1/n) Σ (c_i + 1), between 0 (all −1) and 2 (all +1);
- the negative Wasserstein-1 distance to perfect correlation or perfect anti-correlation, whichever is nearer:
  −min(W(c, δ_{+1}), W(c, δ_{−1})) (the paper's Figures 4, 7–9), between −1 and 0. Because W to a point mass
  at a is the mean of |c_i − a|, this equals |mean| − 1, so a family perfectly anti-correlated with compute
  scores as well as a perfectly correlated one. The one-sided −W(c, δ_{+1}) = mean − 1 is reported beside it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import wasserstein_distance

from testtask.downstream_predictability.correlations import Correlations
from testtask.downstream_predictability.settings import Undefined

STATISTICS = ("mean", "median", "auc_ccdf", "neg_wasserstein")
STATISTIC_LABELS = {
    "mean": "mean",
    "median": "median",
    "auc_ccdf": "area under complementary CDF",
    "neg_wasserstein": "−min(W(C, +1), W(C, −1))",
}


def usable(correlations: Correlations, policy: Undefined) -> np.ndarray:
    """The correlations a distribution is made of: undefined ones dropped, or counted as 0 (uncorrelated)."""
    if policy == Undefined.drop:
        return correlations.values[correlations.defined]
    if policy == Undefined.zero:
        return np.where(correlations.defined, correlations.values, 0.0)
    raise ValueError(f"undefined policy must be one of {', '.join(Undefined)}, got {policy!r}")


def ccdf(values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Ŝ(c) = fraction of `values` strictly greater than c, at each c of `grid`."""
    values = np.sort(np.asarray(values, dtype=float))
    if values.size == 0:
        return np.full(np.shape(grid), np.nan)
    return 1.0 - np.searchsorted(values, grid, side="right") / values.size


def auc_ccdf(values: np.ndarray, lower: float = -1.0, upper: float = 1.0) -> float:
    """∫_lower^upper Ŝ(c) dc, exactly: each value contributes the length of [lower, value] inside the range."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return float("nan")
    return float(np.mean(np.clip(values, lower, upper) - lower))


def neg_wasserstein(values: np.ndarray, target: float | None = None) -> float:
    """−W1 to the point mass at `target`; None: to +1 or −1, whichever is nearer (the paper's statistic)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return float("nan")
    if target is not None:
        return -float(wasserstein_distance(values, [target]))
    return -min(float(wasserstein_distance(values, [1.0])), float(wasserstein_distance(values, [-1.0])))


def summarise(values: np.ndarray) -> dict[str, Any]:
    """The four statistics of §3, the one-sided Wasserstein variant and the fraction above 0 and 0.75."""
    values = np.asarray(values, dtype=float)
    empty = values.size == 0
    return {
        "n": int(values.size),
        "mean": float("nan") if empty else float(np.mean(values)),
        "median": float("nan") if empty else float(np.median(values)),
        "auc_ccdf": auc_ccdf(values),
        "neg_wasserstein": neg_wasserstein(values),
        "neg_wasserstein_to_plus_one": neg_wasserstein(values, 1.0),
        "fraction_above_0": float("nan") if empty else float(np.mean(values > 0)),
        "fraction_above_0.75": float("nan") if empty else float(np.mean(values > 0.75)),
    }
