"""Two-step normalisation of a model x task score matrix (Section 3.1) and its inverse.

Feature step: each task's scores are z-scored across models, p_f = (p - mu_j) / sigma_j.
Sample step: each model's feature-normalised scores are z-scored across tasks, p_s = (p_f - mu_i) / sigma_i.

The statistics are fitted on one set of models (the training models of a leave-one-model-out fold) and applied
to any model. The per-model statistics mu_i, sigma_i use the candidate tasks only, never the target, so a
held-out model's target score can be predicted in the normalised space and mapped back to the score scale
without ever being seen. Standard deviations are population ones (ddof=0); any constant factor cancels in the
correlations and in the inverse. Array functions do the work (the leave-one-model-out loop calls them many
times); `Normaliser` wraps them for labelled frames.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from testtask.proxy_tasks.settings import Normalisation


def task_stats(x: np.ndarray, mode: Normalisation) -> tuple[np.ndarray, np.ndarray]:
    """mu_j and sigma_j of each column of `x` (models x tasks) for `mode` (0 and 1 when `none`)."""
    if mode not in tuple(Normalisation):
        raise ValueError(f"normalisation must be one of {', '.join(Normalisation)}, got {mode!r}")
    if mode == Normalisation.none:
        return np.zeros(x.shape[1]), np.ones(x.shape[1])
    return np.nanmean(x, axis=0), np.nanstd(x, axis=0)


def apply(
    x: np.ndarray, mean: np.ndarray, sd: np.ndarray, candidates: np.ndarray, mode: Normalisation
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Normalised scores, and each model's mu_i and sigma_i over the `candidates` columns (0 and 1 unless two_step)."""
    feat = (x - mean) / sd
    if mode != Normalisation.two_step:
        return feat, np.zeros(len(x)), np.ones(len(x))
    cand = feat[:, candidates]
    mu, sigma = cand.mean(axis=1), cand.std(axis=1)
    return (feat - mu[:, None]) / sigma[:, None], mu, sigma


def invert(values: np.ndarray, mu: np.ndarray, sigma: np.ndarray, mean: float, sd: float) -> np.ndarray:
    """From the normalised space back to one task's score scale: undo the sample step, then the feature step."""
    return mean + sd * (mu + sigma * values)


@dataclass(frozen=True)
class Normalised:
    """Scores after normalisation, with the per-model statistics needed to invert the sample step."""

    values: pd.DataFrame  # models x tasks
    model_mean: pd.Series  # mu_i (0 unless two_step)
    model_sd: pd.Series  # sigma_i (1 unless two_step)


@dataclass(frozen=True)
class Normaliser:
    mode: Normalisation
    task_mean: pd.Series  # mu_j over the fitted models
    task_sd: pd.Series  # sigma_j over the fitted models
    candidates: tuple[str, ...]  # tasks that define each model's mu_i and sigma_i

    @classmethod
    def fit(
        cls, scores: pd.DataFrame, candidates: list[str] | tuple[str, ...], mode: Normalisation
    ) -> Normaliser:
        """Fit the task statistics on the rows of `scores` (models x tasks)."""
        missing = [t for t in candidates if t not in scores.columns]
        if missing:
            raise KeyError(f"candidate tasks missing from the score matrix: {missing}")
        mean, sd = task_stats(scores.to_numpy(float), mode)
        flat = list(scores.columns[~(sd > 0)])
        if flat:
            raise ValueError(f"tasks with no spread across the {len(scores)} fitted models: {flat}")
        return cls(mode, pd.Series(mean, scores.columns), pd.Series(sd, scores.columns), tuple(candidates))

    def transform(self, scores: pd.DataFrame) -> Normalised:
        """Both steps; mu_i and sigma_i of each model come from its candidate tasks only."""
        cols = list(scores.columns)
        cand = np.array([cols.index(c) for c in self.candidates])
        values, mu, sigma = apply(
            scores.to_numpy(float),
            self.task_mean.reindex(cols).to_numpy(),
            self.task_sd.reindex(cols).to_numpy(),
            cand,
            self.mode,
        )
        if not (sigma > 0).all():
            flat = list(scores.index[~(sigma > 0)])
            raise ValueError(f"models with identical normalised scores on every candidate task: {flat}")
        return Normalised(
            pd.DataFrame(values, index=scores.index, columns=scores.columns),
            pd.Series(mu, index=scores.index),
            pd.Series(sigma, index=scores.index),
        )

    def invert(self, values: pd.Series, task: str, model_mean: pd.Series, model_sd: pd.Series) -> pd.Series:
        """Back from the normalised space to `task`'s score scale, for the models indexing `values`."""
        out = invert(
            values.to_numpy(float),
            model_mean[values.index].to_numpy(),
            model_sd[values.index].to_numpy(),
            float(self.task_mean[task]),
            float(self.task_sd[task]),
        )
        return pd.Series(out, index=values.index)
