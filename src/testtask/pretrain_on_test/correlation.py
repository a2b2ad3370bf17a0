"""Appendix F: does the subsample cause a consistent effect? Spearman correlation of BERT's and GPT-2's
subsample-level differences, row k of one paired with row k of the other; the nulls permute GPT-2's rows.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from testtask.pretrain_on_test.permutation import paired_differences

GROUP = ["collection", "m", "n", "dataset"]
LM_TYPES = ("bert", "gpt2")
CORRELATION_COLUMNS = [*GROUP, "effect", "n_subsamples", "spearman"]


def paired_by_subsample(data: pd.DataFrame, effect: str) -> pd.DataFrame:
    """One row per (collection, m, n, dataset, subsample), one column per LM type (both present), of `effect`."""
    frame = data[[*GROUP, "subsample", "lm_type"]].copy()
    frame["difference"] = paired_differences(data, effect).to_numpy()
    frame = frame[frame["lm_type"].isin(LM_TYPES)]
    wide = frame.pivot_table(
        index=[*GROUP, "subsample"], columns="lm_type", values="difference", aggfunc="first"
    )
    if any(lm not in wide.columns for lm in LM_TYPES):
        return pd.DataFrame(columns=[*GROUP, "subsample", *LM_TYPES])
    return wide[list(LM_TYPES)].dropna().reset_index()


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho; NaN when either side is constant (no ranking to correlate)."""
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        return float(stats.spearmanr(x, y).statistic)


def _correlate(wide: pd.DataFrame, effect: str, shuffle=None) -> pd.DataFrame:
    """Spearman per group of `wide`; `shuffle(values)` permutes the second LM type's values first."""
    rows = []
    for key, group in wide.groupby(GROUP, sort=True):
        first, second = (group[lm].to_numpy() for lm in LM_TYPES)
        if shuffle is not None:
            second = shuffle(second)
        rows.append(
            {
                **dict(zip(GROUP, key, strict=True)),
                "effect": effect,
                "n_subsamples": len(group),
                "spearman": spearman(first, second),
            }
        )
    return pd.DataFrame(rows, columns=CORRELATION_COLUMNS)


def bert_gpt2_correlations(data: pd.DataFrame, effect: str = "bias") -> pd.DataFrame:
    """Observed Spearman correlation between the two LM types' subsample-level `effect` per group."""
    return _correlate(paired_by_subsample(data, effect), effect)


def permuted_correlations(
    data: pd.DataFrame, effect: str = "bias", n_permutations: int = 10, seed: int = 0
) -> pd.DataFrame:
    """`n_permutations` null distributions: GPT-2's values randomly permuted within each group."""
    wide = paired_by_subsample(data, effect)
    rng = np.random.default_rng(seed)
    frames = []
    for permutation in range(n_permutations):
        frame = _correlate(wide, effect, shuffle=rng.permutation)
        frame.insert(0, "permutation", permutation)
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["permutation", *CORRELATION_COLUMNS])
    return pd.concat(frames, ignore_index=True)
