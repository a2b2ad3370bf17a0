"""Posterior predictive average differences: eq. 11 (over LM types, tasks, subsamples) and eq. 12 (per task).

For each posterior draw, Ŷ_ijkl ~ Binomial(n, λ_ijkl) is drawn for every observed cell, and
(Ŷ_··1 − Ŷ_··0)/n is averaged over the cells of interest. Working from the linear predictor avoids building a
posterior-predictive InferenceData of draws × observations, which is what made the authors' step take 30 minutes.
"""

from __future__ import annotations

from dataclasses import dataclass

import arviz as az
import numpy as np
from scipy.special import expit

from testtask.pretrain_on_test.hierarchical import Fit, ModelData


@dataclass
class PredictiveDifferences:
    average: np.ndarray  # (draws,) eq. 11
    per_task: np.ndarray  # (draws, dataset, lm_type) eq. 12
    task_accuracy: np.ndarray  # (draws, dataset, lm_type, arm): predicted mean accuracy per task
    data: ModelData

    def observed_average(self) -> float:
        d = self.data
        diff = (d.correct[..., 1] - d.correct[..., 0]) / np.maximum(d.trials[..., 0], 1)
        return float(diff[d.observed].mean())

    def observed_per_task(self) -> np.ndarray:
        """(dataset, lm_type) mean observed difference; NaN where a task has no data for an LM type."""
        d = self.data
        diff = (d.correct[..., 1] - d.correct[..., 0]) / np.maximum(d.trials[..., 0], 1)
        mask = d.observed
        with np.errstate(invalid="ignore"):
            return (diff * mask).sum(axis=1) / mask.sum(axis=1)

    def observed_task_accuracy(self) -> np.ndarray:
        d = self.data
        mask = d.observed[..., None]
        acc = d.correct / np.maximum(d.trials, 1)
        with np.errstate(invalid="ignore"):
            return (acc * mask).sum(axis=1) / mask.sum(axis=1)


def simulate(fit: Fit, seed: int, max_draws: int | None = None, chunk: int = 200) -> PredictiveDifferences:
    """Draw Ŷ for every posterior draw and observed cell; reduce to eqs. 11 and 12 chunk by chunk."""
    data = fit.data
    rng = np.random.default_rng(seed)
    eta_all = fit.linear_predictor(max_draws)
    mask = data.observed  # (J, K, I)
    trials = data.trials
    n_cells = mask.sum()
    per_task_count = mask.sum(axis=1)  # (J, I)
    averages, per_task, task_acc = [], [], []
    for start in range(0, eta_all.shape[0], chunk):
        lam = expit(eta_all[start : start + chunk])
        y_hat = rng.binomial(trials[None], lam)
        acc = y_hat / np.maximum(trials[None], 1)
        diff = (acc[..., 1] - acc[..., 0]) * mask[None]
        averages.append(diff.sum(axis=(1, 2, 3)) / n_cells)
        with np.errstate(invalid="ignore"):
            per_task.append(diff.sum(axis=2) / per_task_count[None])
            task_acc.append((acc * mask[None, ..., None]).sum(axis=2) / per_task_count[None, ..., None])
    return PredictiveDifferences(
        average=np.concatenate(averages),
        per_task=np.concatenate(per_task),
        task_accuracy=np.concatenate(task_acc),
        data=data,
    )


def interval(draws: np.ndarray, prob: float = 0.89) -> dict[str, float | list[float]]:
    """Posterior mean and highest-density interval of a 1-D array of draws."""
    draws = np.asarray(draws, dtype=float)
    lo, hi = az.hdi(draws, hdi_prob=prob)
    return {"mean": float(draws.mean()), f"hdi_{round(prob * 100)}": [float(lo), float(hi)]}
