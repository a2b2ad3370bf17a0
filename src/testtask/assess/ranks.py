"""Train-before-test's verdict for one model: its rank among the release's models on every downstream benchmark,
under direct evaluation and after train-before-test (where the user's run has those scores).

Rank 1 is the best; models tied on a score share the best rank of the tie. Every downstream benchmark is scored
higher-is-better (conf/train_before_test/analysis.yaml; the perplexity corpora, lower-is-better, are not ranked).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from testtask.context import Context
from testtask.train_before_test.inputs import results


def _rank(column: pd.Series, model: str) -> int:
    return int((column.dropna() > column[model]).sum()) + 1


def regime_ranks(scores: pd.DataFrame, model: str, benchmarks: list[str]) -> dict[str, Any] | None:
    """The model's rank per benchmark, their mean, and its rank by mean score among the models scored on the same
    benchmarks; None without a score in this regime."""
    if model not in scores.index:
        return None
    own = [b for b in benchmarks if b in scores.columns and np.isfinite(scores.at[model, b])]
    if not own:
        return None
    per = {b: {"rank": _rank(scores[b], model), "of": int(scores[b].notna().sum())} for b in own}
    complete = scores[own].dropna()
    means = complete.mean(axis=1)
    return {
        "benchmarks": per,
        "mean_rank": float(np.mean([p["rank"] for p in per.values()])),
        "rank_by_mean_score": _rank(means, model),
        "of": int(len(means)),
        "mean_score": float(means[model]),
    }


def verdict(ctx: Context, model: str) -> dict[str, Any]:
    """Ranks of `model` in each regime of the train-before-test results of `ctx`'s source."""
    res = results(ctx)
    benchmarks = [b for cat in ctx.settings.categories.values() for b in cat.benchmarks]
    regimes = {key: regime_ranks(res.scores[key], model, benchmarks) for key in ctx.settings.regimes}
    return {"regimes": regimes, "labels": {k: r.label for k, r in ctx.settings.regimes.items()}}
