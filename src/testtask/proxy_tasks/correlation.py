"""Relevance of candidate tasks to a target: Pearson, Spearman or Kendall (tau-b) correlation across models.

Vectorised over candidates and over batches of model subsets, because Algorithm 1 recomputes them for many
subsets in every fold of the leave-one-model-out evaluation.
"""

from __future__ import annotations

import numpy as np

from testtask.proxy_tasks.settings import Metric


def _pearson(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """y (b, n), x (b, n, T) -> (b, T)."""
    yc = y - y.mean(axis=1, keepdims=True)
    xc = x - x.mean(axis=1, keepdims=True)
    den = np.sqrt((yc**2).sum(axis=1)[:, None] * (xc**2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.einsum("bn,bnt->bt", yc, xc) / den
    return np.where(den > 0, out, np.nan)


def average_ranks(x: np.ndarray, axis: int = 0) -> np.ndarray:
    """Ranks 1..n along `axis`, ties sharing their mean rank (as scipy.stats.rankdata); O(n^2), small n."""
    x = np.moveaxis(np.asarray(x, dtype=float), axis, 0)
    a, b = x[None], x[:, None]  # a[0, j] against b[i, 0]
    less = (a < b).sum(axis=1)  # entries below each one
    equal = (a == b).sum(axis=1)  # ties, itself included
    return np.moveaxis(less + (equal + 1) / 2.0, 0, axis)


def _kendall_b(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """tau-b = (concordant - discordant) / sqrt(pairs untied in x * pairs untied in y); y (b, n), x (b, n, T)."""
    i, j = np.triu_indices(y.shape[1], k=1)
    dy = np.sign(y[:, i] - y[:, j])
    dx = np.sign(x[:, i] - x[:, j])
    den = np.sqrt(np.count_nonzero(dx, axis=1) * np.count_nonzero(dy, axis=1)[:, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.einsum("bp,bpt->bt", dy, dx) / den
    return np.where(den > 0, out, np.nan)


def correlate_batch(target: np.ndarray, candidates: np.ndarray, metric: str) -> np.ndarray:
    """Correlations per batch: target (b, n), candidates (b, n, T) -> (b, T); NaN where a vector is constant."""
    y = np.asarray(target, dtype=float)
    x = np.asarray(candidates, dtype=float)
    if x.ndim != 3 or y.ndim != 2 or x.shape[:2] != y.shape:
        raise ValueError(
            f"candidates must be (batch, models, tasks) matching target {y.shape}, got {x.shape}"
        )
    if np.isnan(y).any() or np.isnan(x).any():
        raise ValueError("correlate: scores contain NaN (drop incomplete models first)")
    if metric == Metric.pearson:
        return _pearson(y, x)
    if metric == Metric.spearman:
        return _pearson(average_ranks(y, axis=1), average_ranks(x, axis=1))
    if metric == Metric.kendall:
        return _kendall_b(y, x)
    raise ValueError(f"unknown correlation metric {metric!r}; choose one of {', '.join(Metric)}")


def correlate(target: np.ndarray, candidates: np.ndarray, metric: str) -> np.ndarray:
    """Correlation of `target` (models,) with each column of `candidates` (models, tasks); NaN if constant."""
    y = np.asarray(target, dtype=float)
    x = np.asarray(candidates, dtype=float)
    if x.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(f"candidates must be (models, tasks) with {y.shape[0]} models, got {x.shape}")
    return correlate_batch(y[None], x[None], metric)[0]
