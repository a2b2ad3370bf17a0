"""Per-sample correlations against scipy, undefined cases, and the four statistics of §3 by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from testtask.downstream_predictability.correlations import paired, per_sample
from testtask.downstream_predictability.statistics import auc_ccdf, ccdf, neg_wasserstein, summarise, usable

SCIPY = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}


@pytest.mark.parametrize("method", list(SCIPY))
def test_per_sample_matches_scipy_with_ties_and_undefined(method):
    rng = np.random.default_rng(3)
    compute = np.log10([1e18, 3e18, 1e19, 1e19, 1e20, 1e21])  # a tie in compute
    scores = rng.normal(size=(6, 40))
    scores[:, 5] = 0.25  # constant: undefined
    scores[:3, 6] = scores[0, 6]  # ties in the scores
    scores[2, 7] = np.inf  # not finite: undefined
    corr = per_sample(compute, scores, method)
    for j in range(40):
        if j in (5, 7):
            assert np.isnan(corr.values[j])
            continue
        assert corr.values[j] == pytest.approx(SCIPY[method](compute, scores[:, j])[0], abs=1e-12)
    assert corr.constant.tolist().count(True) == 1 and corr.constant[5]
    assert corr.non_finite.tolist().count(True) == 1 and corr.non_finite[7]
    assert corr.defined.sum() == 38


def test_designed_signs_and_two_members():
    compute = np.array([1e18, 1e19, 1e20, 1e21])
    rising = np.outer(2.0 * np.log10(compute) + 1.0, [1.0, 0.5, 3.0])  # linear in log compute
    falling = -rising
    scores = np.hstack([rising, falling])
    for method in SCIPY:
        values = per_sample(np.log10(compute), scores, method).values
        np.testing.assert_allclose(values, [1.0] * 3 + [-1.0] * 3, atol=1e-12)
    # With two members any defined correlation is ±1.
    two = per_sample(np.array([1.0, 2.0]), np.array([[0.1, 0.5, 0.3], [0.2, 0.4, 0.3]]), "pearson")
    assert two.values[:2].tolist() == [1.0, -1.0] and np.isnan(two.values[2])
    with pytest.raises(ValueError, match="compute"):
        per_sample(np.array([1.0, 1.0]), np.ones((2, 3)), "spearman")


def test_paired_correlation_per_document():
    x = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    y = np.array([[1.0, 3.0], [2.0, 2.0], [4.0, 1.0]])
    assert paired(x, y, "spearman").values.tolist() == [1.0, -1.0]


def test_statistics_of_perfect_distributions():
    ones = summarise(np.ones(10))
    assert (ones["mean"], ones["median"], ones["auc_ccdf"], ones["neg_wasserstein"]) == (1.0, 1.0, 2.0, 0.0)
    anti = summarise(-np.ones(10))
    assert anti["auc_ccdf"] == 0.0
    assert anti["neg_wasserstein"] == 0.0  # the paper's statistic: nearest of +1 and -1
    assert anti["neg_wasserstein_to_plus_one"] == -2.0


def test_statistics_of_a_small_known_set():
    values = np.array([-1.0, 0.0, 0.5, 1.0])
    s = summarise(values)
    assert s["mean"] == pytest.approx(0.125)
    assert s["median"] == pytest.approx(0.25)
    # ∫_{-1}^{1} Ŝ: Ŝ = 3/4 on [-1, 0), 2/4 on [0, 0.5), 1/4 on [0.5, 1) -> 0.75 + 0.25 + 0.125
    assert s["auc_ccdf"] == pytest.approx(1.125)
    # W1 to δ(+1) = mean |1 - c| = (2 + 1 + 0.5 + 0) / 4; to δ(-1) = (0 + 1 + 1.5 + 2) / 4
    assert s["neg_wasserstein"] == pytest.approx(-0.875)
    assert neg_wasserstein(values, -1.0) == pytest.approx(-1.125)
    assert s["fraction_above_0"] == 0.5
    grid = np.linspace(-1, 1, 200_001)
    assert np.trapezoid(ccdf(values, grid), grid) == pytest.approx(auc_ccdf(values), abs=1e-4)


def test_ccdf_is_strictly_above():
    assert ccdf(np.array([0.0, 0.5]), np.array([-1.0, 0.0, 0.25, 0.5])).tolist() == [1.0, 0.5, 0.5, 0.0]
    assert np.isnan(summarise(np.array([]))["mean"]) and summarise(np.array([]))["n"] == 0


def test_undefined_policies():
    corr = per_sample(np.array([1.0, 2.0, 3.0]), np.array([[0.0, 1.0], [0.0, 2.0], [0.0, 3.0]]), "pearson")
    assert usable(corr, "drop").tolist() == [1.0]
    assert usable(corr, "zero").tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="undefined"):
        usable(corr, "ignore")


def test_scores_equal_up_to_rounding_count_as_constant():
    """A score that moves only at rounding level between members has no correlation with compute."""
    scores = np.array([[1.0, 0.2, 1e-20], [1.0 - 1e-13, 0.5, 3e-20], [1.0 + 2e-13, 0.9, 9e-20]])
    out = per_sample(np.array([1e20, 1e21, 1e22]), scores, "pearson")
    assert out.constant.tolist() == [True, False, False]  # tiny but moving probabilities are not flat
    assert np.isnan(out.values[0]) and out.values[1] > 0.9 and out.values[2] > 0.9
