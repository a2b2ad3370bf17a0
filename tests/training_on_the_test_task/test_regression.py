"""Eq. 1 emergence regression, log-linear fit, cluster-robust sandwich and Appendix C effects (training-on-the-test-task)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from testtask.training_on_the_test_task.mediation import (
    direct_effect,
    indirect_effect,
    piecewise_features,
)
from testtask.training_on_the_test_task.regression import (
    cluster_robust_cov,
    fit_emergence,
    fit_log_linear,
    pwlf_objective,
)

ALPHA, C_E, CHANCE = 0.15, 22.0, 0.25


def fit_eq1(*args, cov_type="cluster", c_e_search="profile", **kwargs):
    """fit_emergence with the analysis config's standard errors and c_e search (`regression`)."""
    return fit_emergence(*args, cov_type=cov_type, c_e_search=c_e_search, **kwargs)


def simulate_eq1(theta: float, seed: int, n: int = 60, n_families: int = 12, sd: float = 0.01, c_e=C_E):
    """Eq. 1 data: `n` models in `n_families` families of equal size; every third family is 'newer'."""
    rng = np.random.default_rng(seed)
    family = np.repeat(np.arange(n_families), n // n_families)
    newer = (family % 3 == 0).astype(float)
    x = rng.uniform(20.0, 24.5, n)
    acc = CHANCE + ALPHA * np.maximum(0.0, x - c_e) + theta * newer + rng.normal(0.0, sd, n)
    return x, acc, newer, family


def profile_sse(x, y, newer, c_e):
    """Reference SSE of Eq. 1 at a fixed c_e, written independently of the module."""
    X = np.column_stack([np.maximum(0.0, x - c_e), newer])
    beta = np.linalg.solve(X.T @ X, X.T @ y)
    return float(np.sum((y - X @ beta) ** 2))


# --------------------------------------------------------------------------------------------------------------
# Eq. 1


def test_emergence_recovers_parameters():
    x, acc, newer, family = simulate_eq1(theta=0.07, seed=3)
    fit = fit_eq1(x, acc, newer, CHANCE, family)
    assert fit.alpha == pytest.approx(ALPHA, abs=0.01)
    assert fit.c_e == pytest.approx(C_E, abs=0.1)
    assert fit.theta == pytest.approx(0.07, abs=0.008)
    assert fit.theta_ci[0] < fit.theta < fit.theta_ci[1]
    assert fit.se_type == "cluster" and fit.n_clusters == 12 and fit.n == 60
    assert fit.r2 == fit.r2_uncentered > 0.99


def test_emergence_p_values_null_and_effect():
    null = fit_eq1(*simulate_eq1(theta=0.0, seed=11)[:3], CHANCE, simulate_eq1(0.0, 11)[3])
    effect = fit_eq1(*simulate_eq1(theta=0.05, seed=11)[:3], CHANCE, simulate_eq1(0.05, 11)[3])
    assert null.theta_p > 0.05
    assert abs(null.theta) < 0.01
    assert effect.theta_p < 0.01


def test_profile_search_is_global():
    """No c_e on a fine grid beats the fitted one; the local (authors') search lands on the same optimum here."""
    x, acc, newer, family = simulate_eq1(theta=0.03, seed=5, sd=0.03)
    fit = fit_eq1(x, acc, newer, CHANCE, family)
    y = acc - CHANCE
    dense = min(profile_sse(x, y, newer, c) for c in np.linspace(19.0, x.max() - 0.05, 4001))
    assert fit.sse <= dense + 1e-12
    assert fit.sse == pytest.approx(profile_sse(x, y, newer, fit.c_e), rel=1e-10)
    local = fit_eq1(x, acc, newer, CHANCE, family, c_e_search="local")
    assert local.c_e == pytest.approx(fit.c_e, abs=1e-3)


def test_c_e_below_observed_compute_is_found():
    """With emergence before the smallest model the hinge is a line; c_e is its chance crossing."""
    x, acc, newer, family = simulate_eq1(theta=0.02, seed=8, c_e=18.5, sd=0.005)
    fit = fit_eq1(x, acc, newer, CHANCE, family)
    assert fit.c_e == pytest.approx(18.5, abs=0.15)
    assert fit.alpha == pytest.approx(ALPHA, abs=0.01)


def test_emergence_r2_definitions_and_predict():
    x, acc, newer, family = simulate_eq1(theta=0.07, seed=2, sd=0.05)
    fit = fit_eq1(x, acc, newer, CHANCE, family)
    resid = acc - fit.predict(x, newer)
    sse = float(resid @ resid)
    assert fit.sse == pytest.approx(sse)
    assert fit.r2_uncentered == pytest.approx(1 - sse / np.sum((acc - CHANCE) ** 2))
    assert fit.r2_centered == pytest.approx(1 - sse / np.sum((acc - acc.mean()) ** 2))
    assert fit.r2_uncentered > fit.r2_centered
    centered = fit_eq1(x, acc, newer, CHANCE, family, r2_type="centered")
    assert centered.r2 == pytest.approx(fit.r2_centered)


def test_emergence_cluster_se_matches_statsmodels_and_numpy_sandwich():
    x, acc, newer, family = simulate_eq1(theta=0.07, seed=4, sd=0.03)
    fit = fit_eq1(x, acc, newer, CHANCE, family)
    X = np.column_stack([np.maximum(0.0, x - fit.c_e), newer])
    y = acc - CHANCE
    ref = sm.OLS(y, X).fit(cov_type="cluster", cov_kwds={"groups": family}, use_t=True)
    assert [fit.alpha, fit.theta] == pytest.approx(list(ref.params), rel=1e-9)
    assert [fit.alpha_se, fit.theta_se] == pytest.approx(list(ref.bse), rel=1e-9)
    cov = cluster_robust_cov(X, y - X @ ref.params, family)
    assert np.sqrt(np.diag(cov)) == pytest.approx([fit.alpha_se, fit.theta_se], rel=1e-9)
    # t p-value with G − 1 degrees of freedom (statsmodels' clustered use_t convention).
    assert fit.theta_p == pytest.approx(2 * stats.t.sf(abs(fit.theta / fit.theta_se), df=11), rel=1e-9)


def test_emergence_other_covariances():
    x, acc, newer, family = simulate_eq1(theta=0.07, seed=4, sd=0.03)
    plain = fit_eq1(x, acc, newer, CHANCE)  # no groups: the released code's nonrobust SEs
    assert plain.se_type == "nonrobust" and plain.n_clusters == 0
    X = np.column_stack([np.maximum(0.0, x - plain.c_e), newer])
    ref = sm.OLS(acc - CHANCE, X).fit()
    assert plain.theta_se == pytest.approx(ref.bse[1], rel=1e-9)
    assert plain.theta_p == pytest.approx(ref.pvalues[1], rel=1e-9)
    hc1 = fit_eq1(x, acc, newer, CHANCE, cov_type="HC1")
    assert hc1.se_type == "HC1"
    assert hc1.theta_se == pytest.approx(sm.OLS(acc - CHANCE, X).fit(cov_type="HC1").bse[1], rel=1e-9)


def test_emergence_without_cohort_term_and_json():
    x, acc, newer, _ = simulate_eq1(theta=0.0, seed=9)
    old = newer == 0
    fit = fit_eq1(x[old], acc[old], None, CHANCE)
    assert fit.c_e == pytest.approx(C_E, abs=0.1)
    assert np.isnan(fit.theta)
    record = fit.to_dict()
    json.dumps(record, allow_nan=False)
    assert record["theta"] is None and isinstance(record["alpha"], float)
    assert record["theta_ci"] == [None, None]


# 30 older models (log10 FLOPs, accuracy), and the breakpoint pwlf 2.7.0 returns for them with the authors' call
# (plot_utils.py:158-168: PiecewiseLinFit(ln C, A).fit(2, ln [0.8e20, 0.7e20], [r, r]), r = 0.25), divided by ln 10.
PWLF_X = [23.159, 23.17, 22.058, 21.186, 20.305, 21.557, 21.652, 20.272, 20.285, 23.897, 22.579, 20.991, 21.753, 23.802,
          23.511, 23.308, 21.591, 21.973, 22.671, 20.331, 22.211, 21.132, 23.443, 20.344, 22.681, 23.406, 20.964, 23.503,
          23.414, 20.17]  # fmt: skip
PWLF_ACC = [0.4233, 0.4508, 0.3162, 0.2439, 0.229, 0.2489, 0.2464, 0.2229, 0.2545, 0.5155, 0.4029, 0.2643, 0.2404,
            0.5317, 0.4693, 0.4676, 0.2618, 0.267, 0.3859, 0.2449, 0.3546, 0.2264, 0.4979, 0.228, 0.3851, 0.4619,
            0.279, 0.5017, 0.5283, 0.2628]  # fmt: skip
PWLF_C_E = 21.62450835315399


def pwlf_lagrangian(x_log10, acc, chance, c_e):
    """pwlf's objective written as pwlf computes it (conlstsq): the KKT system of the fit in ln C with the line forced
    through (ln 0.7e20, r) and (ln 0.8e20, r), then L = SSE + Σ|Cᵀζ|."""
    x, b = np.asarray(x_log10) * np.log(10), c_e * np.log(10)
    acc = np.asarray(acc)
    A = np.column_stack([np.ones_like(x), x - x.min(), np.where(x > b, x - b, 0.0)])
    x_c = np.log([0.7e20, 0.8e20])
    C = np.column_stack([np.ones_like(x_c), x_c - x.min(), np.where(x_c > b, x_c - b, 0.0)])
    K = np.block([[2 * A.T @ A, C.T], [C, np.zeros((2, 2))]])
    solution = np.linalg.solve(K, np.concatenate([2 * A.T @ acc, [chance, chance]]))
    beta, zeta = solution[:3], solution[3:]
    e = A @ beta - acc
    return float(e @ e + np.sum(np.abs(C.T @ zeta)))


@pytest.mark.parametrize("c_e", [20.5, 21.3, 21.62, 22.4, 23.5])
def test_pwlf_objective_is_pwlfs_lagrangian(c_e):
    x, acc = np.array(PWLF_X), np.array(PWLF_ACC)
    assert pwlf_objective(x, acc - CHANCE, c_e) == pytest.approx(
        pwlf_lagrangian(x, acc, CHANCE, c_e), rel=1e-8
    )


def test_pwlf_search_gives_pwlfs_breakpoint_not_the_least_squares_one():
    x, acc = np.array(PWLF_X), np.array(PWLF_ACC)
    fit = fit_emergence(x, acc, None, CHANCE, cov_type="nonrobust", c_e_search="pwlf")
    assert fit.c_e == pytest.approx(PWLF_C_E, abs=1e-4)
    least_squares = fit_emergence(x, acc, None, CHANCE, cov_type="nonrobust", c_e_search="profile")
    assert least_squares.c_e - fit.c_e > 0.01 and least_squares.sse < fit.sse
    # the same flat-then-line model: α is the OLS slope at the breakpoint
    h = np.maximum(0.0, x - fit.c_e)
    assert fit.alpha == pytest.approx(h @ (acc - CHANCE) / (h @ h), rel=1e-9)
    with pytest.raises(ValueError, match="newer=None"):
        fit_emergence(x, acc, (x > 22).astype(float), CHANCE, cov_type="nonrobust", c_e_search="pwlf")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 3}, "at least 4 models"),
        ({"newer": "same"}, "one cohort"),
        ({"nan": True}, "NaN"),
        ({"groups": "single"}, "two clusters"),
    ],
)
def test_emergence_rejects_degenerate_input(kwargs, message):
    x, acc, newer, family = simulate_eq1(theta=0.07, seed=1)
    n = kwargs.get("n", len(x))
    x, acc, newer, family = x[:n], acc[:n], newer[:n], family[:n]
    if kwargs.get("newer") == "same":
        newer = np.zeros_like(newer)
    if kwargs.get("nan"):
        acc = acc.copy()
        acc[3] = np.nan
    if kwargs.get("groups") == "single":
        family = np.zeros_like(family)
    with pytest.raises(ValueError, match=message):
        fit_eq1(x, acc, newer, CHANCE, family)


def test_emergence_rejects_mismatched_lengths():
    x, acc, newer, family = simulate_eq1(theta=0.07, seed=1)
    with pytest.raises(ValueError, match="entries"):
        fit_eq1(x, acc[:-1], newer, CHANCE, family)
    with pytest.raises(ValueError, match="0/1"):
        fit_eq1(x, acc, newer * 2, CHANCE, family)


# --------------------------------------------------------------------------------------------------------------
# cluster-robust sandwich


def test_cluster_robust_cov_hand_case():
    # Orthogonal columns make X'X = 6·I, so the sandwich is meat / 36. Cluster score sums X_g'e_g:
    # {0,1}: (3, −1), {2,3}: (−1, −1), {4,5}: (1, 5) → meat = [[11, 3], [3, 27]].
    X = np.column_stack([np.ones(6), [1, -1, 1, -1, 1, -1]])
    e = np.array([1.0, 2.0, -1.0, 0.0, 3.0, -2.0])
    groups = ["a", "a", "b", "b", "c", "c"]
    meat = np.array([[11.0, 3.0], [3.0, 27.0]])
    np.testing.assert_allclose(cluster_robust_cov(X, e, groups, correction=False), meat / 36)
    # G/(G−1)·(n−1)/(n−k) = 3/2 · 5/4 = 15/8.
    np.testing.assert_allclose(cluster_robust_cov(X, e, groups), meat / 36 * 15 / 8)


def test_cluster_robust_cov_matches_loops_and_statsmodels():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.ones(30), rng.normal(size=30), rng.integers(0, 2, 30)])
    groups = rng.integers(0, 7, 30)
    y = X @ [0.5, 1.0, -0.3] + rng.normal(size=30)
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    e = y - X @ beta
    bread = np.linalg.inv(X.T @ X)
    meat = np.zeros((3, 3))
    for g in np.unique(groups):
        s = X[groups == g].T @ e[groups == g]
        meat += np.outer(s, s)
    G = len(np.unique(groups))
    expected = bread @ meat @ bread * G / (G - 1) * 29 / 27
    np.testing.assert_allclose(cluster_robust_cov(X, e, groups), expected, rtol=1e-12)
    ref = sm.OLS(y, X).fit(cov_type="cluster", cov_kwds={"groups": groups})
    np.testing.assert_allclose(cluster_robust_cov(X, e, groups), ref.cov_params(), rtol=1e-10)
    with pytest.raises(ValueError, match="two clusters"):
        cluster_robust_cov(X, e, np.zeros(30))


# --------------------------------------------------------------------------------------------------------------
# Figure 8/19 bottom


def test_log_linear_fit():
    rng = np.random.default_rng(7)
    x = rng.uniform(20, 24, 40)
    acc = -2.0 + 0.11 * x + rng.normal(0, 0.02, 40)
    fit = fit_log_linear(x, acc)
    assert fit.slope == pytest.approx(0.11, abs=0.01)
    assert fit.intercept == pytest.approx(-2.0, abs=0.2)
    resid = acc - fit.predict(x)
    assert fit.r2 == pytest.approx(1 - resid @ resid / np.sum((acc - acc.mean()) ** 2))
    assert fit.r2 == pytest.approx(np.corrcoef(x, acc)[0, 1] ** 2)
    # The log base rescales the slope only.
    natural = fit_log_linear(x * np.log(10), acc)
    assert natural.r2 == pytest.approx(fit.r2) and natural.slope == pytest.approx(fit.slope / np.log(10))
    assert fit.to_dict()["n"] == 40
    with pytest.raises(ValueError, match="NaN"):
        fit_log_linear([20.0, 21.0, np.nan], [0.3, 0.4, 0.5])
    with pytest.raises(ValueError, match="at least 3"):
        fit_log_linear([20.0, 21.0], [0.3, 0.4])


# --------------------------------------------------------------------------------------------------------------
# Appendix C


def test_piecewise_features_values():
    x = [21.0, 22.5, 24.0]
    seg = piecewise_features(x)
    assert seg.shape == (3, 4)
    np.testing.assert_allclose(seg, [[1, 21, 0, 0], [1, 22, 0.5, 0], [1, 22, 1, 1]])
    ind = piecewise_features(x, basis="indicator", intercept=False)
    np.testing.assert_allclose(ind, [[21, 0, 0], [22.5, 22.5, 0], [24, 24, 24]])
    # A numeric first knot switches the first term off below it.
    np.testing.assert_allclose(
        piecewise_features([20.0, 21.5, 23.0], knots=(21.0, 22.0), intercept=False),
        [[0, 0], [0.5, 0], [1, 1]],
    )
    with pytest.raises(ValueError, match="increasing"):
        piecewise_features(x, knots=(None, 23.0, 22.0))


def simulate_mediation(psi: float, phi: float, seed: int, n: int = 80):
    """Eq. 3–6 with a continuous piecewise-linear f and knots at 1e22, 1e23 FLOPs."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(20.0, 24.5, n)
    newer = (rng.uniform(size=n) < 0.4).astype(float)
    f = piecewise_features(x) @ np.array([-1.0, 0.06, 0.15, 0.05])
    g = piecewise_features(x) @ np.array([0.5, -0.02, -0.05, -0.01])
    adjusted = f + psi * newer + rng.normal(0, 0.01, n)
    accuracy = adjusted + g + phi * newer + rng.normal(0, 0.01, n)
    return x, accuracy, adjusted, newer


def test_effects_recover_psi_and_phi():
    x, acc, adj, newer = simulate_mediation(psi=0.0, phi=0.08, seed=21)
    direct = direct_effect(x, adj, newer)
    indirect = indirect_effect(x, acc, adj, newer)
    assert abs(direct.coef) < 0.01 and direct.p > 0.05
    assert indirect.coef == pytest.approx(0.08, abs=0.01) and indirect.p < 0.01
    assert direct.se_type == "nonrobust" and direct.n == 80
    x, acc, adj, newer = simulate_mediation(psi=0.04, phi=0.0, seed=22)
    assert direct_effect(x, adj, newer).coef == pytest.approx(0.04, abs=0.01)
    assert abs(indirect_effect(x, acc, adj, newer).coef) < 0.01
    json.dumps(direct.to_dict(), allow_nan=False)


def test_effects_match_the_authors_design():
    """Same N coefficient, SE and centred R² as OLS on [1, N, min(x,22), clip(x−22,0,1), max(0,x−23)]."""
    x, acc, adj, newer = simulate_mediation(psi=0.02, phi=0.05, seed=23)
    design = np.column_stack(
        [np.ones_like(x), newer, np.minimum(x, 22), np.clip(x - 22, 0, 1), np.maximum(0, x - 23)]
    )
    for fit, y in [(direct_effect(x, adj, newer), adj), (indirect_effect(x, acc, adj, newer), acc - adj)]:
        ref = sm.OLS(y, design).fit()
        assert fit.coef == pytest.approx(ref.params[1], rel=1e-9)
        assert fit.se == pytest.approx(ref.bse[1], rel=1e-9)
        assert fit.p == pytest.approx(ref.pvalues[1], rel=1e-9)
        assert fit.r2 == pytest.approx(ref.rsquared, rel=1e-9)


def test_effects_clustered_and_errors():
    x, acc, adj, newer = simulate_mediation(psi=0.02, phi=0.05, seed=24)
    family = np.arange(len(x)) % 10
    clustered = direct_effect(x, adj, newer, family, cov_type="cluster")
    assert clustered.se_type == "cluster" and clustered.n_clusters == 10
    X = np.column_stack([piecewise_features(x), newer])
    ref = sm.OLS(adj, X).fit(cov_type="cluster", cov_kwds={"groups": family}, use_t=True)
    assert clustered.se == pytest.approx(ref.bse[-1], rel=1e-9)
    with pytest.raises(ValueError, match="one cohort"):
        direct_effect(x, adj, np.ones_like(newer))
    with pytest.raises(ValueError, match="segment"):
        direct_effect(x[x < 22.5], adj[x < 22.5], newer[x < 22.5])
    with pytest.raises(ValueError, match="NaN"):
        indirect_effect(x, np.where(x > 23, np.nan, acc), adj, newer)
