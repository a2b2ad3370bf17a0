"""Principal components of the model x benchmark score matrix (Sec. 3.4 of the paper).

PCA needs a complete matrix, so it uses the models scored on every benchmark analysed (common models).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler


def complete_rows(scores: pd.DataFrame, benchmarks: list[str]) -> pd.DataFrame:
    """The models with a score on every one of `benchmarks`."""
    return scores[benchmarks].dropna()


def max_with_baseline(matrices: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The regimes' matrices with every regime after the first replaced by its cell-wise max with the first
    (the baseline: direct evaluation); scores must be oriented higher = better."""
    keys = list(matrices)
    if not keys:
        return {}
    first = matrices[keys[0]]
    out = {keys[0]: first}
    for key in keys[1:]:
        frame = matrices[key]
        if list(frame.index) != list(first.index) or list(frame.columns) != list(first.columns):
            raise ValueError(f"regime {key!r} does not cover the baseline's models and benchmarks in order")
        out[key] = frame.where(frame >= first, first)
    return out


def _prepared(matrix: pd.DataFrame, standardize: bool) -> np.ndarray:
    # Centre each benchmark; standardising also divides by its standard deviation across models (a benchmark
    # with no spread keeps scale 1), so every benchmark weighs the same whatever its metric's range.
    return StandardScaler(with_std=standardize).fit_transform(matrix.to_numpy(dtype=float))


def explained_variance(matrix: pd.DataFrame, standardize: bool) -> np.ndarray:
    """Explained-variance ratio of every principal component (sums to 1)."""
    if matrix.shape[0] < 2 or matrix.shape[1] < 1:
        raise ValueError(f"PCA needs at least 2 models and 1 benchmark, got shape {matrix.shape}")
    return PCA().fit(_prepared(matrix, standardize)).explained_variance_ratio_


def pc1(matrix: pd.DataFrame, standardize: bool) -> tuple[pd.Series, pd.Series, float]:
    """(PC1 score per model, PC1 loading per benchmark, PC1's explained-variance ratio).

    The sign of a component is arbitrary; it is chosen so that the loadings sum to a positive number, i.e. a
    higher PC1 score means better scores overall."""
    model = PCA(n_components=1).fit(_prepared(matrix, standardize))
    loadings = model.components_[0]
    flip = -1.0 if loadings.sum() < 0 else 1.0
    scores = model.transform(_prepared(matrix, standardize))[:, 0] * flip
    return (
        pd.Series(scores, index=matrix.index, name="pc1"),
        pd.Series(loadings * flip, index=matrix.columns, name="loading"),
        float(model.explained_variance_ratio_[0]),
    )
