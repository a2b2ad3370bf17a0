"""Eq. 1 of *Training on the test task*: the emergence ("hinge") regression, and the log-linear fit of §5.

    A = α · max(0, log C − c_e) + θ · N + r + ε                                              (Eq. 1)

A is benchmark accuracy, C pretraining compute (FLOPs), N a 0/1 indicator (trained after November 2023; also
used for EN+CN vs EN and for control vs treatment), r the chance accuracy (a fixed offset, not fitted).

What the authors' released analysis does (``socialfoundations/training-on-the-test-task``,
``notebooks/regress_utils.py``: ``get_hinge_regressor``, ``regress_hinge``; ``notebooks/plot_utils.py``:
``plot_regressor``, ``plot_r2``, ``plot_emergence``), and how it maps onto the keywords here:

* log is log10 of FLOPs (``np.log10``); callers pass ``log_compute`` already in log10.
* (α, c_e, θ) minimise the sum of squared errors of Eq. 1 (they call ``scipy.optimize.minimize`` from
  (α, c_e, θ) = (0, 22, 0)); then θ is reported from a statsmodels OLS of A − r on [max(0, log C − c_e), N]
  with c_e held at its fitted value and **no intercept**, so its R² is statsmodels' *uncentred* R²,
  1 − SSE / Σ(A − r)². The standard errors are therefore conditional on the fitted c_e.
* That OLS uses statsmodels' default covariance (``nonrobust``) and t-distribution p-values, although §2.2 of
  the paper says SEs are clustered by model family. Here ``cov_type="cluster"`` with ``groups`` follows the
  paper's text; with ``groups=None`` it falls back to ``nonrobust``, which is what the released code ran.
* Figure 8/19 bottom: OLS of A on [1, ln C] with the usual (centred) R²; the log base changes the slope only.
* Figure 8/19 top: c_e of Eq. 1 without the θ term on older models only (``newer=None`` here); the authors fit
  it with ``pwlf`` in ln C on 1e20 < C < 1e24 (``plot_utils.py:158-168``: ``PiecewiseLinFit(ln C, A).fit(2, x_c,
  y_c)``, the first segment forced through (ln 0.8e20, r) and (ln 0.7e20, r), i.e. flat at r: the same model).
  pwlf's differential evolution does not minimise the SSE there but its Lagrangian SSE + Σ|Cᵀζ| (ζ the multipliers
  of the forced points), which at the constrained optimum is SSE + 2|Σe| + 2|Σ(ln C − min ln C)·e| (e the
  residuals). ``c_e_search="pwlf"`` minimises that objective over c_e in [min log C, max log C].
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from scipy import optimize
from statsmodels.regression.linear_model import OLS  # not statsmodels.api: a third of its import time

from testtask.io import to_jsonable
from testtask.training_on_the_test_task.settings import CovType, EmergenceSearch

MIN_MODELS = 4
LN10 = math.log(10.0)


# --------------------------------------------------------------------------------------------------------------
# input checks and the shared OLS helper (mediation.py uses these too)


def as_vector(name: str, values: Any) -> np.ndarray:
    """`values` as a finite 1-D float array; ValueError naming `name` otherwise."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values ({int(np.sum(~np.isfinite(arr)))} of them)")
    return arr


def as_indicator(name: str, values: Any, n: int, *, both_levels: bool = True) -> np.ndarray:
    """`values` as a 0/1 float array of length `n`; with `both_levels`, both cohorts must be present."""
    arr = as_vector(name, values)
    if len(arr) != n:
        raise ValueError(f"{name} has {len(arr)} entries but there are {n} models")
    if not np.all(np.isin(arr, (0.0, 1.0))):
        raise ValueError(f"{name} must be a 0/1 indicator")
    if both_levels and (arr.min() == arr.max()):
        raise ValueError(f"{name} puts all {n} models in one cohort; θ is not identified")
    return arr


def group_codes(groups: Any, n: int) -> np.ndarray:
    """Cluster labels (any hashable values) as integer codes 0..G−1."""
    labels = np.asarray(groups, dtype=object)
    if labels.ndim != 1 or len(labels) != n:
        raise ValueError(f"groups must be one label per model ({n}), got shape {labels.shape}")
    if any(label is None or (isinstance(label, float) and math.isnan(label)) for label in labels):
        raise ValueError("groups contains missing labels")
    _, codes = np.unique(labels.astype(str), return_inverse=True)
    return codes


def fit_ols(
    y: np.ndarray,
    X: np.ndarray,
    groups: Any = None,
    *,
    cov_type: CovType = "nonrobust",
    use_t: bool = True,
) -> tuple[Any, str, int]:
    """statsmodels OLS of `y` on `X` (no constant added); returns (results, se_type used, n_clusters).

    ``cov_type="cluster"`` without `groups` falls back to ``"nonrobust"``; clustered fits get statsmodels'
    G/(G−1)·(n−1)/(n−k) correction and, with ``use_t``, t(G−1) p-values.
    """
    n = len(y)
    if np.linalg.matrix_rank(X) < X.shape[1]:
        raise ValueError("design matrix is rank deficient (a regressor is constant or collinear)")
    if n <= X.shape[1]:
        raise ValueError(f"{n} models cannot identify {X.shape[1]} coefficients")
    if cov_type == "cluster" and groups is not None:
        codes = group_codes(groups, n)
        n_clusters = int(codes.max()) + 1
        if n_clusters < 2:
            raise ValueError("cluster-robust standard errors need at least two clusters; got one")
        results = OLS(y, X).fit(cov_type="cluster", cov_kwds={"groups": codes}, use_t=use_t)
        return results, "cluster", n_clusters
    if cov_type not in tuple(CovType):
        raise ValueError(f"unknown cov_type {cov_type!r}")
    # the plain word, for the sidecars
    se_type = "nonrobust" if cov_type == CovType.cluster else str(cov_type)
    n_clusters = int(group_codes(groups, n).max()) + 1 if groups is not None else 0
    return OLS(y, X).fit(cov_type=se_type, use_t=use_t), se_type, n_clusters


class JsonDict:
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (non-finite numbers as None)."""
        return to_jsonable(asdict(self))


# --------------------------------------------------------------------------------------------------------------
# cluster-robust sandwich


def cluster_robust_cov(
    X: np.ndarray, residuals: np.ndarray, groups: Any, *, correction: bool = True
) -> np.ndarray:
    """Cluster-robust covariance (X'X)⁻¹ (Σ_g X_g' e_g e_g' X_g) (X'X)⁻¹ of OLS coefficients.

    With `correction`, scaled by G/(G−1) · (n−1)/(n−k), statsmodels' default for ``cov_type="cluster"``.
    """
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    e = np.asarray(residuals, dtype=float).ravel()
    n, k = X.shape
    if len(e) != n:
        raise ValueError(f"residuals have {len(e)} entries but X has {n} rows")
    codes = group_codes(groups, n)
    n_groups = int(codes.max()) + 1
    if n_groups < 2:
        raise ValueError("cluster-robust covariance needs at least two clusters")
    bread = np.linalg.inv(X.T @ X)
    # Per-cluster score sums X_g' e_g, accumulated with one scatter-add instead of a Python loop.
    scores = np.zeros((n_groups, k))
    np.add.at(scores, codes, X * e[:, None])
    meat = scores.T @ scores
    cov = bread @ meat @ bread
    if correction:
        cov *= n_groups / (n_groups - 1) * (n - 1) / (n - k)
    return cov


# --------------------------------------------------------------------------------------------------------------
# Eq. 1


@dataclass(frozen=True)
class EmergenceFit(JsonDict):
    """Fit of Eq. 1. SEs of α and θ are conditional on the fitted c_e (c_e is treated as known).

    ``r2`` is the uncentred R² (1 − SSE/Σ(A − r)²) by default, the number the authors' code reports; see
    ``r2_type``. ``theta`` and its statistics are NaN when the fit had no cohort term (``newer=None``).
    """

    alpha: float
    c_e: float
    theta: float
    alpha_se: float
    theta_se: float
    theta_p: float
    theta_ci: tuple[float, float]
    r2: float
    r2_centered: float
    r2_uncentered: float
    n: int
    n_clusters: int
    chance: float
    se_type: str
    sse: float = float("nan")
    r2_type: str = "uncentered"

    def predict(self, log_compute: Any, newer: Any = None) -> np.ndarray:
        """Eq. 1 without noise at `log_compute` (log10 FLOPs); `newer` may be None when θ was not fitted."""
        x = np.asarray(log_compute, dtype=float)
        pred = self.chance + self.alpha * np.maximum(0.0, x - self.c_e)
        if newer is not None and math.isfinite(self.theta):
            pred = pred + self.theta * np.asarray(newer, dtype=float)
        return pred


def _hinge_design(x: np.ndarray, c_e: float, newer: np.ndarray | None) -> np.ndarray:
    hinge = np.maximum(0.0, x - c_e)
    return hinge[:, None] if newer is None else np.column_stack([hinge, newer])


def _profile_sse(x: np.ndarray, y: np.ndarray, newer: np.ndarray | None, c_e: float) -> float:
    """SSE of Eq. 1 at fixed c_e with α, θ at their least-squares values."""
    X = _hinge_design(x, c_e, newer)
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ coef
    return float(resid @ resid)


def _grid_refine(f: Callable[[float], float], grid: np.ndarray, xatol: float) -> tuple[float, float, Any]:
    """(value, point) of `f`'s best point on `grid`, and Brent's bounded minimum between that point's neighbours
    (None when they coincide): the kinks at the observed values can stall a gradient method."""
    values = np.array([f(c) for c in grid])
    best = int(np.argmin(values))
    lo, hi = float(grid[max(best - 1, 0)]), float(grid[min(best + 1, grid.size - 1)])
    res = None
    if hi > lo:
        res = optimize.minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": xatol})
    return float(values[best]), float(grid[best]), res


def _search_c_e_profile(
    x: np.ndarray,
    y: np.ndarray,
    newer: np.ndarray | None,
    grid: np.ndarray | None,
    margin: float,
    n_grid: int,
) -> float:
    """Global profile search: the profile SSE on a grid of c_e (with every observed value), refined."""
    lo, hi = float(x.min()) - margin, float(x.max())
    user_grid = grid is not None
    if grid is None:
        grid = np.unique(np.concatenate([np.linspace(lo, hi, n_grid), x]))
    else:
        grid = np.unique(np.asarray(grid, dtype=float))
        if grid.size < 2 or not np.all(np.isfinite(grid)):
            raise ValueError("c_e_grid must hold at least two finite values")
    value, c_best, res = _grid_refine(lambda c: _profile_sse(x, y, newer, c), grid, 1e-7)
    candidates = [(value, c_best)]
    if res is not None:
        candidates.append((float(res.fun), float(res.x)))
    # Left of every model the hinge is a plain line, so the best c_e there has a closed form: fit
    # y = a + b·x (+ θN) and set c_e = −a/b. This keeps the search global when c_e lies below the data.
    X_line = np.column_stack([np.ones_like(x), x] + ([] if newer is None else [newer]))
    coef, *_ = np.linalg.lstsq(X_line, y, rcond=None)
    if coef[1] != 0:
        c_line = -coef[0] / coef[1]
        # An explicit grid also bounds the search, so the closed form must fall inside it.
        if c_line <= x.min() and (not user_grid or c_line >= grid.min()):
            candidates.append((_profile_sse(x, y, newer, c_line), float(c_line)))
    return min(candidates)[1]


def _search_c_e_local(x: np.ndarray, y: np.ndarray, newer: np.ndarray | None, start: float) -> float:
    """The authors' search: unconstrained quasi-Newton (scipy's default BFGS) on (α, c_e, θ) from (0, start, 0)."""

    def sse(params: np.ndarray) -> float:
        pred = params[0] * np.maximum(0.0, x - params[1])
        if newer is not None:
            pred = pred + params[2] * newer
        return float(np.sum((y - pred) ** 2))

    return float(optimize.minimize(sse, np.array([0.0, start, 0.0])).x[1])


def pwlf_objective(x: np.ndarray, y: np.ndarray, c_e: float) -> float:
    """The objective pwlf minimises for the authors' Figure 8/19 fit, at breakpoint ``c_e`` (log10 FLOPs).

    ``x`` is log10 compute, ``y`` accuracy minus r. pwlf solves the KKT system of the least-squares fit with the
    first segment forced through two points at height r left of the data (so the fit is r + β·max(0, x − c_e)) and
    returns L = SSE + Σ|Cᵀζ|; from the KKT equations Cᵀζ = −2Aᵀe with A = [1, ln C − min ln C, max(0, ln C − b)],
    whose last entry vanishes at the optimum of β. So L = SSE + 2|Σe| + 2|Σ(ln C − min ln C)·e|, in ln C as pwlf saw
    it (pwlf/pwlf.py: ``fit_force_points_opt``, ``conlstsq``).
    """
    h = np.maximum(0.0, x - c_e)
    hh = float(h @ h)
    beta = float(h @ y) / hh if hh > 0 else 0.0
    e = beta * h - y
    return float(e @ e + 2.0 * abs(e.sum()) + 2.0 * abs(LN10 * (x - x.min()) @ e))


def _search_c_e_pwlf(x: np.ndarray, y: np.ndarray, n_grid: int) -> float:
    """The breakpoint in [min x, max x] (pwlf's bounds) that minimises `pwlf_objective`, on a grid with every
    observed value, refined. pwlf searches the same interval by differential evolution; this is deterministic."""
    grid = np.unique(np.concatenate([np.linspace(x.min(), x.max(), n_grid), x]))
    value, c_e, res = _grid_refine(lambda c: pwlf_objective(x, y, c), grid, 1e-9)
    return float(res.x) if res is not None and res.fun < value else c_e


def fit_emergence(
    log_compute: Sequence[float] | np.ndarray,
    accuracy: Sequence[float] | np.ndarray,
    newer: Sequence[float] | np.ndarray | None,
    chance: float,
    groups: Any = None,
    *,
    cov_type: CovType,
    c_e_search: EmergenceSearch,
    c_e_grid: Sequence[float] | np.ndarray | None = None,
    c_e_start: float = 22.0,
    c_e_margin: float = 1.0,
    n_grid: int = 201,
    use_t: bool = True,
    r2_type: Literal["uncentered", "centered"] = "uncentered",
    ci_level: float = 0.95,
) -> EmergenceFit:
    """Fit Eq. 1 by least squares; report θ with its standard error, p-value and confidence interval.

    `log_compute` is log10 FLOPs (the authors' base); `newer` None drops the θ·N term (Figure 8/19 top); `chance`
    is r (0.25 for four-way multiple choice, 0 for GSM8K); `groups` (model family) serve ``cov_type="cluster"``.
    `c_e_search`: ``"profile"`` (global), ``"local"`` (the authors' BFGS from (0, ``c_e_start``, 0): it can stop at
    a local minimum, yet produced the published numbers) or ``"pwlf"`` (no θ only: `pwlf_objective` on a grid of
    ``10 · n_grid`` points, refined). Without `c_e_grid` the profile grid spans the observed range, ``c_e_margin``
    more below, in ``n_grid`` steps plus every observed value. Standard errors are conditional on the fitted c_e.
    """
    if r2_type not in ("uncentered", "centered"):
        raise ValueError(f"unknown r2_type {r2_type!r}")
    x = as_vector("log_compute", log_compute)
    a = as_vector("accuracy", accuracy)
    n = len(x)
    if len(a) != n:
        raise ValueError(f"accuracy has {len(a)} entries but log_compute has {n}")
    if n < MIN_MODELS:
        raise ValueError(f"Eq. 1 needs at least {MIN_MODELS} models, got {n}")
    if not math.isfinite(chance):
        raise ValueError("chance must be a finite number")
    if np.ptp(x) == 0:
        raise ValueError("log_compute is constant; the point of emergence is not identified")
    N = None if newer is None else as_indicator("newer", newer, n)
    y = a - chance

    if c_e_search == "profile":
        c_e = _search_c_e_profile(x, y, N, c_e_grid, c_e_margin, n_grid)
    elif c_e_search == "pwlf":
        if N is not None:
            raise ValueError("c_e_search='pwlf' is the authors' fit without the cohort term: pass newer=None")
        c_e = _search_c_e_pwlf(x, y, 10 * n_grid)
    elif c_e_search == "local":
        c_e = _search_c_e_local(x, y, N, c_e_start)
    else:
        raise ValueError(f"unknown c_e_search {c_e_search!r}")

    X = _hinge_design(x, c_e, N)
    if not np.any(X[:, 0] > 0):
        raise ValueError(f"no model lies above the fitted c_e = {c_e:.3f}; α is not identified")
    results, se_type, n_clusters = fit_ols(y, X, groups, cov_type=cov_type, use_t=use_t)
    params, bse = np.asarray(results.params), np.asarray(results.bse)
    sse = float(results.ssr)
    r2_unc = 1.0 - sse / float(y @ y)
    r2_cen = 1.0 - sse / float(np.sum((a - a.mean()) ** 2))
    if N is None:
        theta = theta_se = theta_p = float("nan")
        theta_ci = (float("nan"), float("nan"))
    else:
        theta, theta_se, theta_p = float(params[1]), float(bse[1]), float(np.asarray(results.pvalues)[1])
        ci = np.asarray(results.conf_int(alpha=1.0 - ci_level))[1]
        theta_ci = (float(ci[0]), float(ci[1]))
    return EmergenceFit(
        alpha=float(params[0]),
        c_e=float(c_e),
        theta=theta,
        alpha_se=float(bse[0]),
        theta_se=theta_se,
        theta_p=theta_p,
        theta_ci=theta_ci,
        r2=r2_unc if r2_type == "uncentered" else r2_cen,
        r2_centered=r2_cen,
        r2_uncentered=r2_unc,
        n=n,
        n_clusters=n_clusters,
        chance=float(chance),
        se_type=se_type,
        sse=sse,
        r2_type=r2_type,
    )


# --------------------------------------------------------------------------------------------------------------
# Figure 8/19 bottom


@dataclass(frozen=True)
class LogLinearFit(JsonDict):
    """OLS fit A = a + b · log C with the centred R² (what the authors report in Figure 8/19 bottom).

    The slope is per unit of whatever log the caller passed; the authors used ln C there (slope_ln =
    slope_log10 / ln 10). R² and predictions do not depend on the base.
    """

    intercept: float
    slope: float
    r2: float
    n: int

    def predict(self, log_compute: Any) -> np.ndarray:
        """Fitted accuracy at `log_compute`."""
        return self.intercept + self.slope * np.asarray(log_compute, dtype=float)


def fit_log_linear(
    log_compute: Sequence[float] | np.ndarray, accuracy: Sequence[float] | np.ndarray
) -> LogLinearFit:
    """Least-squares line of accuracy on log compute, with R² = 1 − SSE/SST."""
    x = as_vector("log_compute", log_compute)
    a = as_vector("accuracy", accuracy)
    if len(a) != len(x):
        raise ValueError(f"accuracy has {len(a)} entries but log_compute has {len(x)}")
    if len(x) < 3:
        raise ValueError(f"a log-linear fit needs at least 3 models, got {len(x)}")
    if np.ptp(x) == 0:
        raise ValueError("log_compute is constant; the slope is not identified")
    X = np.column_stack([np.ones_like(x), x])
    coef, *_ = np.linalg.lstsq(X, a, rcond=None)
    resid = a - X @ coef
    sst = float(np.sum((a - a.mean()) ** 2))
    r2 = 1.0 - float(resid @ resid) / sst if sst > 0 else float("nan")
    return LogLinearFit(intercept=float(coef[0]), slope=float(coef[1]), r2=r2, n=len(x))
