"""Simulate accuracy counts from the generative model of §6.1 with known parameters (Appendix E.1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit


@dataclass(frozen=True)
class TruePars:
    beta: float = 0.0
    mu: float = 0.0
    alpha: float = -0.25
    sigma_u: float = 1.0
    sigma_v: float = 0.2
    sigma_w: float = 0.1


def simulate_long(
    pars: TruePars,
    datasets: int = 25,
    subsamples: int = 50,
    n: int = 200,
    lm_types: int = 2,
    seed: int = 0,
) -> pd.DataFrame:
    """Paired counts in the layout of `accuracies.paired_long` (treatment 0 = control, 1 = treatment)."""
    rng = np.random.default_rng(seed)
    u = rng.normal(0, pars.sigma_u, datasets)
    v = rng.normal(0, pars.sigma_v, (datasets, subsamples))
    w = rng.normal(0, pars.sigma_w, (datasets, 2))
    z = (np.arange(lm_types) > 0).astype(float)
    x = np.array([0.0, 1.0])
    eta = (
        pars.mu
        + pars.alpha * z[None, None, :, None]
        + u[:, None, None, None]
        + v[:, :, None, None]
        + w[:, None, None, :]
        + pars.beta * x[None, None, None, :]
    )
    correct = rng.binomial(n, expit(eta))
    j, k, i, arm = np.indices(correct.shape).reshape(4, -1)
    return pd.DataFrame(
        {
            "lm_type": np.array([f"lm{idx}" for idx in range(lm_types)])[i],
            "dataset": np.array([f"task{idx:02d}" for idx in range(datasets)])[j],
            "subsample": k,
            "treatment": arm,
            "correct": correct.reshape(-1),
            "trials": n,
        }
    )
