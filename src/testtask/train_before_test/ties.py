"""Kendall's tau-b with significance ties (Appendix C.2 of the paper).

Two models tie on a benchmark when their scores do not differ significantly:
|x_i - x_j| <= z * sqrt(se_i^2 + se_j^2), z the two-sided normal quantile of the confidence (1.96 at 95%).

"Not significantly different" is not transitive (A~B and B~C while A>C), so ties do not form classes. Kendall's
tau-b needs none in its pairwise form (Kendall 1945): with s_k(i, j) in {-1, 0, +1} the order of models i, j on
benchmark k (0 = tied),

    tau_b(k, l) = sum_{i<j} s_k s_l / sqrt(sum_{i<j} s_k^2 * sum_{i<j} s_l^2)
                = (n_c - n_d) / sqrt((n_0 - n_1)(n_0 - n_2)),

which is scipy's tau-b whenever the ties are exact (equal scores). `rule="pairwise"` applies the paper's rule to
each pair on its own. `rule="leader"` is a sensitivity variant with transitive classes: walking down the ranking,
a model joins the current class while it is not significantly below the class's best model.

A missing standard error counts as zero: that model ties only with equal scores.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy.stats import norm

from testtask.train_before_test.settings import TieRule


def z_value(confidence: float) -> float:
    """Two-sided normal quantile, e.g. 1.96 for 0.95."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    return float(norm.ppf(0.5 + confidence / 2))


def _upper(matrix: np.ndarray) -> np.ndarray:
    return matrix[np.triu_indices(len(matrix), k=1)]


def pair_signs(x: np.ndarray, se: np.ndarray, z: float) -> np.ndarray:
    """s(i, j) for i < j: sign(x_i - x_j) when the difference is significant, else 0 (tied)."""
    x, se = np.asarray(x, float), np.nan_to_num(np.asarray(se, float), nan=0.0)
    diff = x[:, None] - x[None, :]
    threshold = z * np.sqrt(se[:, None] ** 2 + se[None, :] ** 2)
    return _upper(np.sign(diff) * (np.abs(diff) > threshold))


def leader_classes(x: np.ndarray, se: np.ndarray, z: float) -> np.ndarray:
    """Transitive tie classes (higher value = better class) by the leader rule."""
    x, se = np.asarray(x, float), np.nan_to_num(np.asarray(se, float), nan=0.0)
    classes = np.empty(len(x))
    leader, current = None, 0
    for k in np.argsort(-x, kind="stable"):
        if leader is None or x[leader] - x[k] > z * np.hypot(se[leader], se[k]):
            leader, current = k, current + 1
        classes[k] = -current
    return classes


def signs(x: np.ndarray, se: np.ndarray, z: float, rule: TieRule) -> np.ndarray:
    """Pair signs of one benchmark's ranking under the tie `rule`."""
    if rule == TieRule.pairwise:
        return pair_signs(x, se, z)
    if rule == TieRule.leader:
        classes = leader_classes(x, se, z)
        return _upper(np.sign(classes[:, None] - classes[None, :]))
    raise ValueError(f"ties.rule must be one of {', '.join(TieRule)}, got {rule!r}")


def tau_b_from_signs(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b from two pair-sign vectors (NaN when either ranking is all ties)."""
    denominator = np.sqrt(np.sum(a * a) * np.sum(b * b))
    return float(np.sum(a * b) / denominator) if denominator > 0 else float("nan")


def tie_aware_matrix(
    scores: pd.DataFrame, stderr: pd.DataFrame, benchmarks: list[str], z: float, rule: TieRule
) -> pd.DataFrame:
    """Tau-b with significance ties for every pair of `benchmarks` (models pairwise-complete)."""
    x = scores[benchmarks].to_numpy(dtype=float)
    se = stderr.reindex(index=scores.index, columns=benchmarks).to_numpy(dtype=float)
    k = len(benchmarks)
    tau = np.eye(k)
    cache: dict[tuple[int, bytes], np.ndarray] = {}

    def pair_signs_of(col: int, rows: np.ndarray) -> np.ndarray:
        key = (col, rows.tobytes())  # the same model subset recurs for most pairs: compute its signs once
        if key not in cache:
            cache[key] = signs(x[rows, col], se[rows, col], z, rule)
        return cache[key]

    for i, j in itertools.combinations(range(k), 2):
        rows = np.isfinite(x[:, i]) & np.isfinite(x[:, j])
        tau[i, j] = tau[j, i] = tau_b_from_signs(pair_signs_of(i, rows), pair_signs_of(j, rows))
    return pd.DataFrame(tau, index=benchmarks, columns=benchmarks)
