"""The statistics of a model's verdict: its distance from the older models' scaling fit, and what the adjustment
removes of it.

The older models' fit is Eq. 1 without the cohort term (`regression.fit_emergence(newer=None)`), as Figures 8/19
fit older models alone. A model's residual is its score minus that fit's prediction at its compute; its standard
error is that of a new observation: sqrt(h² · SE(α̂)² + σ̂²), with h = max(0, log C − ĉ_e) and σ̂² = SSE / (n − 1),
conditional on ĉ_e as every SE of Eq. 1 here. Intervals use t(n − 1).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from testtask.training_on_the_test_task.regression import EmergenceFit


@dataclass(frozen=True)
class Residual:
    """Score minus the older models' fit, oriented so that positive is better than the fit."""

    score: float
    predicted: float
    residual: float
    se: float
    ci: tuple[float, float]
    n_older: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def residual(
    fit: EmergenceFit, log_compute: float, score: float, higher_is_better: bool, level: float
) -> Residual:
    """`score` at `log_compute` against `fit` (the older models' Eq. 1 without θ), with its interval at `level`."""
    predicted = float(fit.predict(np.array([log_compute]))[0])
    sign = 1.0 if higher_is_better else -1.0
    value = sign * (score - predicted)
    hinge = max(0.0, log_compute - fit.c_e)
    sigma2 = fit.sse / (fit.n - 1)  # the fit has one coefficient (α) once ĉ_e is fixed
    se = math.sqrt(hinge**2 * fit.alpha_se**2 + sigma2)
    half = float(stats.t.ppf(0.5 + level / 2, fit.n - 1)) * se
    return Residual(score, predicted, value, se, (value - half, value + half), fit.n)


@dataclass(frozen=True)
class Removed:
    """How much of the advantage before adjustment the adjustment removes."""

    removed: float  # residual before − residual after
    se: float
    ci: tuple[float, float]
    share: float | None  # removed / residual before; None when there was no advantage to remove

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def removed(before: Residual, after: Residual, level: float) -> Removed:
    """The advantage the adjustment removes; its SE treats the two residuals as independent (they come from
    different fits and different evaluations), which ignores their positive correlation and so is conservative."""
    value = before.residual - after.residual
    se = math.hypot(before.se, after.se)
    half = float(stats.norm.ppf(0.5 + level / 2)) * se
    share = value / before.residual if before.residual > 0 else None
    return Removed(value, se, (value - half, value + half), share)


def theta(fit: EmergenceFit) -> dict[str, Any]:
    """θ̂ of a fit with its SE, p-value and interval (the JSON record of one cohort fit)."""
    return {
        "theta": fit.theta,
        "se": fit.theta_se,
        "p": fit.theta_p,
        "ci": list(fit.theta_ci),
        "n_models": fit.n,
        "se_type": fit.se_type,
    }
