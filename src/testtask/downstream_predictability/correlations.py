"""Per-sample score–compute correlations: for each document, the correlation over a family's members between
their compute and their score on that document (Pearson, Spearman or Kendall's τ_b), vectorised over documents.

A correlation is undefined when the scores are the same for every member (e.g. accuracy 0 for all members) or
when a score is not finite; those documents get NaN and a reason, so the statistics can drop or count them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from testtask.downstream_predictability.settings import CorrelationMethod


@dataclass(frozen=True)
class Correlations:
    values: np.ndarray  # (n,) correlation per document; NaN where undefined
    constant: np.ndarray  # (n,) bool: the score is the same for every member
    non_finite: np.ndarray  # (n,) bool: some member's score is NaN or infinite

    @property
    def defined(self) -> np.ndarray:
        return ~(self.constant | self.non_finite)


def _pearson_columns(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson correlation of each column of x with the same column of y, both (K, n)."""
    xc = x - x.mean(axis=0)
    yc = y - y.mean(axis=0)
    denom = np.sqrt(np.sum(xc**2, axis=0) * np.sum(yc**2, axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.sum(xc * yc, axis=0) / denom
    return np.clip(r, -1.0, 1.0)


def _kendall_columns(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ_b (ties corrected, scipy's default) of each column of x with that of y, both (K, n)."""
    i, j = np.triu_indices(x.shape[0], k=1)
    sx = np.sign(x[i] - x[j])  # (pairs, n)
    sy = np.sign(y[i] - y[j])
    denom = np.sqrt(np.sum(sx != 0, axis=0) * np.sum(sy != 0, axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(np.sum(sx * sy, axis=0) / denom, -1.0, 1.0)


# Scores of different members that agree to ~1e-9 relative are the same number computed through different
# float paths (e.g. p_choices saturated at 1): their "correlation" with compute would be rounding noise.
# Relative only: p_vocab of a long continuation is legitimately tiny (1e-20) and must not count as flat.
FLAT_RTOL = 1e-9


def _flat(values: np.ndarray) -> np.ndarray:
    """Columns whose values are equal for every member, up to rounding."""
    return np.all(np.isclose(values, values[:1], rtol=FLAT_RTOL, atol=0.0), axis=0)


def _columns(x: np.ndarray, y: np.ndarray, method: CorrelationMethod) -> Correlations:
    """Column-wise correlation of x and y (K, n); a column where either is constant or not finite is undefined."""
    non_finite = ~(np.all(np.isfinite(y), axis=0) & np.all(np.isfinite(x), axis=0))
    constant = ~non_finite & (_flat(y) | _flat(x))
    y = np.where(np.isfinite(y), y, 0.0)
    x = np.where(np.isfinite(x), x, 0.0)
    if method == CorrelationMethod.pearson:
        r = _pearson_columns(x, y)
    elif method == CorrelationMethod.spearman:
        r = _pearson_columns(rankdata(x, axis=0), rankdata(y, axis=0))
    elif method == CorrelationMethod.kendall:
        r = _kendall_columns(x, y)
    else:
        raise ValueError(f"method must be one of {', '.join(CorrelationMethod)}, got {method!r}")
    r = np.where(constant | non_finite, np.nan, r)
    return Correlations(values=r, constant=constant, non_finite=non_finite)


def per_sample(compute: np.ndarray, scores: np.ndarray, method: CorrelationMethod) -> Correlations:
    """Correlation of `compute` (K members) with `scores` (K, n documents) for each document."""
    x = np.asarray(compute, dtype=float)
    y = np.asarray(scores, dtype=float)
    if x.ndim != 1 or y.ndim != 2 or y.shape[0] != x.shape[0]:
        raise ValueError(f"scores must be (members, documents) with {x.shape[0]} members, got {y.shape}")
    if x.shape[0] < 2:
        raise ValueError(f"a correlation needs at least 2 members, got {x.shape[0]}")
    if not np.all(np.isfinite(x)) or np.all(x == x[0]):
        raise ValueError(f"compute must be finite and not the same for every member, got {x.tolist()}")
    return _columns(np.repeat(x[:, None], y.shape[1], axis=1), y, method)


def paired(x: np.ndarray, y: np.ndarray, method: CorrelationMethod) -> Correlations:
    """Per-document correlation over members of two scores, both (K, n): e.g. how the mass on the correct
    choice and the mass on the incorrect ones move together as compute grows."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"x and y must both be (members >= 2, documents), got {x.shape} and {y.shape}")
    return _columns(x, y, method)
