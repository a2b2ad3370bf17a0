"""Prediction errors of leave-one-model-out predictions, and how the proxy predictor compares to the baselines."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from testtask.proxy_tasks.predict import PREDICTORS, Lomo


def error_summary(pred: pd.DataFrame, predictor: str) -> dict[str, float]:
    """MAE, RMSE, median absolute error (score units), and Kendall tau / Pearson r of predicted vs actual."""
    err = pred[predictor] - pred["actual"]
    tau = kendalltau(pred[predictor], pred["actual"]).statistic
    return {
        "mae": float(err.abs().mean()),
        "rmse": float(np.sqrt((err**2).mean())),
        "median_ae": float(err.abs().median()),
        "kendall_tau": float(tau),
        "pearson_r": float(np.corrcoef(pred[predictor], pred["actual"])[0, 1]),
    }


def paired_mae_difference(
    pred: pd.DataFrame, baseline: str, rng: np.random.Generator, n_boot: int, level: float = 0.95
) -> dict[str, float]:
    """MAE(baseline) - MAE(proxy) with a percentile bootstrap interval over models (positive: proxy better)."""
    diff = (pred[baseline] - pred["actual"]).abs() - (pred["proxy"] - pred["actual"]).abs()
    d = diff.to_numpy()
    boots = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1) if n_boot > 0 else np.array([])
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2]) if n_boot > 0 else (np.nan, np.nan)
    return {
        "mae_difference": float(d.mean()),
        "ci_low": float(lo),
        "ci_high": float(hi),
        "ci_level": level,
        "share_models_proxy_better": float((d > 0).mean()),
    }


def selection_frequency(lomo: Lomo) -> pd.DataFrame:
    """Per task: share of folds in which it is a proxy, its mean weight when chosen, and its mean weight overall."""
    n = len(lomo.folds)
    chosen = Counter(t for f in lomo.folds for t in f["weights"])
    total = Counter()
    for f in lomo.folds:
        total.update(f["weights"])
    rows = {
        t: {
            "share_folds": chosen[t] / n,
            "mean_weight_when_chosen": total[t] / chosen[t],
            "mean_weight": total[t] / n,
        }
        for t in chosen
    }
    return pd.DataFrame.from_dict(rows, orient="index").sort_values("share_folds", ascending=False)


def lomo_numbers(lomo: Lomo, rng: np.random.Generator, n_boot: int) -> dict:
    """Everything a LOMO panel reports: errors per predictor, paired comparisons, proxy-set statistics."""
    pred = lomo.predictions
    folds = lomo.folds
    return {
        "target": lomo.target,
        "n_models": len(pred),
        "errors": {p: error_summary(pred, p) for p in PREDICTORS},
        "proxy_vs": {b: paired_mae_difference(pred, b, rng, n_boot) for b in PREDICTORS[1:]},
        "proxy_set": {
            "mean_size": float(np.mean([len(f["weights"]) for f in folds])),
            "fallback_folds": int(sum(f["fallback"] for f in folds)),
            "metric_counts": dict(Counter(f["metric"] for f in folds)),
            "metric_rule_counts": dict(Counter(f["metric_rule"] for f in folds)),
            "frequency": selection_frequency(lomo).to_dict(orient="index"),
            "best_single_counts": dict(Counter(f["best_single"] for f in folds)),
        },
        "predictions": pred.reset_index().to_dict(orient="records"),
    }
