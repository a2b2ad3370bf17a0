"""Agreement of perplexity rankings with downstream rankings (Sec. 3.3, Figures 4 and 5 of the paper).

A perplexity corpus ranks models by bits per byte, lower = better, so its values are negated before Kendall's tau
(which then reads "higher = better" on both sides). Models are pairwise-complete; models excluded from perplexity
by configuration (Gemma, whose bpb lm-eval computes unreliably) are dropped first.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from testtask.train_before_test.agreement import kendall_cross, kendall_tau, off_diagonal, rounded


def oriented(frame: pd.DataFrame, higher_is_better: bool) -> pd.DataFrame:
    """`frame` with higher = better."""
    return frame if higher_is_better else -frame


def keep_models(frame: pd.DataFrame, exclude_prefixes: Sequence[str]) -> pd.DataFrame:
    """Rows whose model id starts with none of `exclude_prefixes`."""
    keep = [m for m in frame.index if not any(str(m).startswith(p) for p in exclude_prefixes)]
    return frame.loc[keep]


def is_instruction_tuned(model: str, suffixes: Sequence[str]) -> bool:
    return any(str(model).endswith(s) for s in suffixes)


def split_by_tuning(models: Sequence[str], suffixes: Sequence[str]) -> dict[str, list[str]]:
    return {
        "base": [m for m in models if not is_instruction_tuned(m, suffixes)],
        "instruction_tuned": [m for m in models if is_instruction_tuned(m, suffixes)],
    }


def agreement(perplexity: pd.DataFrame, downstream: pd.DataFrame, decimals: int | None = None) -> dict:
    """Tau of every corpus (oriented, higher = better) with every corpus and every downstream benchmark (rounded
    to `decimals` before their means), and of the mean over corpora with the mean over benchmarks (means over
    models scored on all of them)."""
    between = rounded(kendall_cross(perplexity, perplexity)[0], decimals)
    with_downstream, n = kendall_cross(perplexity, downstream)
    with_downstream = rounded(with_downstream, decimals)
    mean_tau, mean_n = kendall_tau(perplexity.dropna().mean(axis=1), downstream.dropna().mean(axis=1))
    return {
        "tau_between_corpora": between,
        "tau_with_downstream": with_downstream,
        "n_models": n,
        "mean_tau_between_corpora": float(np.nanmean(off_diagonal(between))) if len(between) > 1 else None,
        "mean_tau_with_downstream": float(np.nanmean(with_downstream.to_numpy(dtype=float))),
        "tau_mean_perplexity_vs_mean_downstream": mean_tau,
        "n_models_means": mean_n,
    }
