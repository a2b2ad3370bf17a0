"""Ranking agreement between benchmarks: Kendall's tau-b over the models both benchmarks scored.

Models are pairwise-complete: a pair of benchmarks uses every model with a score on both (as the authors'
analysis does). On the release, all 61 models have all 24 downstream scores, so this equals using common models.
Scores must be oriented so that higher is better (perplexity is negated before it gets here).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy.stats import kendalltau


def _tau(x: np.ndarray, y: np.ndarray) -> tuple[float, int]:
    both = np.isfinite(x) & np.isfinite(y)
    n = int(both.sum())
    if n < 2:
        return float("nan"), n
    return float(kendalltau(x[both], y[both], variant="b").statistic), n


def kendall_tau(x: pd.Series, y: pd.Series) -> tuple[float, int]:
    """Kendall's tau-b (scipy; ties in the scores handled by the b variant) and the number of models used."""
    x, y = x.align(y, join="inner")
    return _tau(x.to_numpy(dtype=float), y.to_numpy(dtype=float))


def kendall_matrix(scores: pd.DataFrame, benchmarks: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Symmetric tau matrix over `benchmarks` (diagonal 1) and the number of models behind each entry."""
    values = scores[benchmarks].to_numpy(dtype=float)
    k = len(benchmarks)
    tau, n = np.eye(k), np.diag(np.isfinite(values).sum(axis=0))
    for i, j in itertools.combinations(range(k), 2):
        tau[i, j], n[i, j] = _tau(values[:, i], values[:, j])
        tau[j, i], n[j, i] = tau[i, j], n[i, j]
    return (
        pd.DataFrame(tau, index=benchmarks, columns=benchmarks),
        pd.DataFrame(n, index=benchmarks, columns=benchmarks),
    )


def kendall_cross(rows: pd.DataFrame, columns: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Tau between every column of `rows` and every column of `columns` (models aligned by index)."""
    rows, columns = rows.align(columns, join="inner", axis=0)
    a, b = rows.to_numpy(dtype=float), columns.to_numpy(dtype=float)
    tau = np.full((a.shape[1], b.shape[1]), np.nan)
    n = np.zeros_like(tau, dtype=int)
    for i in range(a.shape[1]):
        for j in range(b.shape[1]):
            tau[i, j], n[i, j] = _tau(a[:, i], b[:, j])
    return (
        pd.DataFrame(tau, index=rows.columns, columns=columns.columns),
        pd.DataFrame(n, index=rows.columns, columns=columns.columns),
    )


def rounded(matrix: pd.DataFrame, decimals: int | None) -> pd.DataFrame:
    """Tau rounded to `decimals` (the authors' notebook rounds every tau table to 3 before any mean); None: as is."""
    return matrix if decimals is None else matrix.round(decimals)


def off_diagonal(matrix: pd.DataFrame) -> np.ndarray:
    """The entries above the diagonal: one per unordered pair of benchmarks."""
    upper = np.triu_indices(len(matrix), k=1)
    return matrix.to_numpy()[upper]


def mean_off_diagonal(matrix: pd.DataFrame) -> float:
    return float(np.nanmean(off_diagonal(matrix)))


def mean_with_others(matrix: pd.DataFrame) -> pd.Series:
    """Each benchmark's mean tau with every other benchmark."""
    values = matrix.to_numpy(dtype=float).copy()
    np.fill_diagonal(values, np.nan)
    return pd.Series(np.nanmean(values, axis=1), index=matrix.index)


def compare_regimes(before: pd.DataFrame, after: pd.DataFrame) -> dict:
    """How many benchmark pairs agree more after than before (strictly), and which agree less."""
    if list(before.index) != list(after.index):
        raise ValueError("the two tau matrices must cover the same benchmarks in the same order")
    upper = np.triu_indices(len(before), k=1)
    a, b = before.to_numpy()[upper], after.to_numpy()[upper]
    names = before.index
    valid = np.isfinite(a) & np.isfinite(b)
    not_improved = [
        {"pair": [names[i], names[j]], "before": float(x), "after": float(y)}
        for i, j, x, y, ok in zip(*upper, a, b, valid, strict=True)
        if ok and not y > x
    ]
    return {
        "pairs_improved": int(np.sum(b[valid] > a[valid])),
        "pairs_total": int(valid.sum()),
        "pairs_not_improved": not_improved,
        "mean_change": float(np.mean(b[valid] - a[valid])) if valid.any() else float("nan"),
    }
