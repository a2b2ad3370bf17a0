"""Predict a target task's score from its proxies, evaluated leave-one-model-out.

"Prediction" here: on the training models, select and weight proxies (selection.select), form each model's
combined proxy score x = sum_i W_i p_i in the two-step normalised space, fit the target's normalised score by
ordinary least squares y = a + b x, apply it to the held-out model and invert the normalisation (first the
sample step with the held-out model's own mean and spread over the candidate tasks, then the feature step with
the training models' target mean and spread). Everything is fitted without the held-out model, whose target
score is masked (NaN) before any step.

Beside it, two baselines fitted on the same folds:
- `mean_of_tasks`: x = mean over all candidate tasks of the feature-normalised scores (the average-of-benchmarks
  score, a common baseline; the two-step mean is identically 0, so the feature step is used), y = the target's
  feature-normalised score, OLS, inverted through the target's mean and spread;
- `best_single`: the most relevant candidate alone (weight 1), through the proxy pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from testtask.proxy_tasks import normalise
from testtask.proxy_tasks.robustness import variance_ratio
from testtask.proxy_tasks.selection import robustness_values, select
from testtask.proxy_tasks.settings import Method, Normalisation

PREDICTORS = ("proxy", "mean_of_tasks", "best_single")


def linear_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """OLS intercept and slope of y on x (slope 0 when x has no spread)."""
    xc = x - x.mean()
    sxx = float(xc @ xc)
    slope = float(xc @ (y - y.mean())) / sxx if sxx > 0 else 0.0
    return float(y.mean() - slope * x.mean()), slope


@dataclass(frozen=True)
class Lomo:
    """Leave-one-model-out predictions (models x [actual, proxy, mean_of_tasks, best_single]) and fold details."""

    target: str
    predictions: pd.DataFrame
    folds: list[dict]


def _fold(
    x: np.ndarray,
    se: np.ndarray | None,
    t: int,
    cand: np.ndarray,
    tasks: list[str],
    held: int,
    settings: Method,
    rng: np.random.Generator,
    ens_ratio: np.ndarray | None,
) -> tuple[dict[str, float], dict]:
    """Predictions for model `held` from models fitted on all the others; x[held, t] must be NaN."""
    train = np.flatnonzero(np.arange(len(x)) != held)
    xt = x[train]
    mean, sd = normalise.task_stats(xt, settings.normalisation)
    if not (sd > 0).all():
        raise ValueError(
            f"tasks with no spread across the training models: {[tasks[i] for i in np.flatnonzero(~(sd > 0))]}"
        )
    p, mu, sigma = normalise.apply(x, mean, sd, cand, settings.normalisation)
    rob = robustness_values(settings, xt[:, cand], None if se is None else se[train][:, cand], ens_ratio)
    cand_names = [tasks[i] for i in cand]
    sel = select(p[train][:, cand], p[train, t], cand_names, settings, rng, rob)

    def via(kept: np.ndarray, weights: np.ndarray) -> float:
        combined = p[:, cand[kept]] @ weights
        a, b = linear_fit(combined[train], p[train, t])
        return float(normalise.invert(a + b * combined[held], mu[held], sigma[held], mean[t], sd[t]))

    best = int(np.argmax(np.where(np.isnan(sel.relevance), -np.inf, sel.relevance)))
    fmean, fsd = normalise.task_stats(xt, Normalisation.feature)
    feat = (x - fmean) / fsd
    level = feat[:, cand].mean(axis=1)
    a, b = linear_fit(level[train], feat[train, t])
    preds = {
        "proxy": via(sel.kept, sel.weights),
        "mean_of_tasks": float(fmean[t] + fsd[t] * (a + b * level[held])),
        "best_single": via(np.array([best]), np.array([1.0])),
    }
    fold = {
        "metric": sel.metric,
        "metric_rule": sel.metric_rule,
        "weights": {cand_names[k]: float(w) for k, w in zip(sel.kept, sel.weights, strict=True)},
        "fallback": sel.fallback,
        "best_single": cand_names[best],
    }
    return preds, fold


def leave_one_model_out(
    scores: pd.DataFrame,
    target: str,
    settings: Method,
    seed: int,
    stderr: pd.DataFrame | None = None,
    ensembles: pd.DataFrame | None = None,
    ensemble_labels: dict[str, str] | None = None,
) -> Lomo:
    """Each model in turn is held out; everything is fitted on the others (fold i seeded by [seed, i])."""
    if target not in scores.columns:
        raise KeyError(f"target task {target!r} is not a column of the score matrix")
    if scores.isna().any().any():
        raise ValueError("leave_one_model_out needs a complete score matrix (drop incomplete models first)")
    if settings.uses_algorithm_1 and len(scores) < settings.n_models + 1:
        raise ValueError(
            f"{len(scores)} models: too few for subsets of n={settings.n_models} plus a held-out one"
        )
    tasks = [str(c) for c in scores.columns]
    t = tasks.index(target)
    cand = np.array([i for i in range(len(tasks)) if i != t])
    x0 = scores.to_numpy(float)
    se = (
        None if stderr is None else stderr.reindex(index=scores.index, columns=scores.columns).to_numpy(float)
    )
    ens_ratio = None
    if ensembles is not None:
        ratio = variance_ratio(ensembles, ensemble_labels or {})
        ens_ratio = ratio["ratio"].reindex([tasks[i] for i in cand]).to_numpy(float)
    rows, folds = [], []
    for held in range(len(x0)):
        x = x0.copy()
        x[held, t] = np.nan  # the held-out target never enters a fit
        preds, fold = _fold(
            x, se, t, cand, tasks, held, settings, np.random.default_rng([seed, held]), ens_ratio
        )
        model = scores.index[held]
        rows.append({"model": model, "actual": float(x0[held, t]), **preds})
        folds.append({"held_out": model, **fold})
    return Lomo(target, pd.DataFrame(rows).set_index("model"), folds)
