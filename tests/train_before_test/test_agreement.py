"""train-before-test: Kendall's tau (hand-computed), significance ties, category means, regime comparison."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from testtask.train_before_test.agreement import (
    compare_regimes,
    kendall_cross,
    kendall_matrix,
    kendall_tau,
    mean_off_diagonal,
    mean_with_others,
    rounded,
)
from testtask.train_before_test.categories import category_means
from testtask.train_before_test.settings import TieRule
from testtask.train_before_test.ties import (
    leader_classes,
    pair_signs,
    signs,
    tau_b_from_signs,
    tie_aware_matrix,
    z_value,
)


def test_rounded_tau_moves_the_mean_as_the_authors_rounding_does():
    # Two taus 0.12345 and 0.12346: rounded to 3 decimals first (the authors' notebook) the mean is 0.123,
    # unrounded it is 0.123455.
    tau = pd.DataFrame([[1.0, 0.12345, 0.12346], [0.12345, 1.0, 0.0], [0.12346, 0.0, 1.0]])
    assert mean_off_diagonal(rounded(tau, 3)) == pytest.approx((0.123 + 0.123 + 0.0) / 3, abs=1e-15)
    assert mean_off_diagonal(rounded(tau, None)) == pytest.approx((0.12345 + 0.12346) / 3, abs=1e-15)
    assert rounded(tau, None) is tau


def test_kendall_tau_hand_computed_without_ties():
    # Pairs of [1,2,3,4] vs [1,3,2,4]: 5 concordant, 1 discordant -> (5 - 1) / 6.
    tau, n = kendall_tau(pd.Series([1, 2, 3, 4.0]), pd.Series([1, 3, 2, 4.0]))
    assert tau == pytest.approx(4 / 6) and n == 4


def test_kendall_tau_b_hand_computed_with_ties():
    # x = [1,2,2,3], y = [1,2,3,3]: 4 concordant, 0 discordant, 1 pair tied in x only, 1 tied in y only.
    # tau_b = (4 - 0) / sqrt((6 - 1) * (6 - 1)) = 0.8
    tau, _ = kendall_tau(pd.Series([1, 2, 2, 3.0]), pd.Series([1, 2, 3, 3.0]))
    assert tau == pytest.approx(0.8)


def test_kendall_matrix_is_pairwise_complete():
    scores = pd.DataFrame(
        {"a": [1, 2, 3, 4.0], "b": [1, 3, 2, np.nan], "c": [4, 3, 2, 1.0]}, index=["m1", "m2", "m3", "m4"]
    )
    tau, n = kendall_matrix(scores, ["a", "b", "c"])
    # a vs b over m1..m3: [1,2,3] vs [1,3,2] -> (2 - 1) / 3
    assert tau.loc["a", "b"] == pytest.approx(1 / 3) and n.loc["a", "b"] == 3
    assert tau.loc["a", "c"] == pytest.approx(-1.0) and n.loc["a", "c"] == 4
    assert n.loc["b", "b"] == 3 and tau.loc["b", "b"] == 1.0
    assert mean_off_diagonal(tau) == pytest.approx((1 / 3 - 1 - 1 / 3) / 3)
    assert mean_with_others(tau)["a"] == pytest.approx((1 / 3 - 1) / 2)


def test_kendall_cross_aligns_models_by_id():
    rows = pd.DataFrame({"p": [3.0, 2.0, 1.0]}, index=["m1", "m2", "m3"])
    cols = pd.DataFrame({"q": [1.0, 2.0, 3.0, 9.0]}, index=["m3", "m2", "m1", "other"])
    tau, n = kendall_cross(rows, cols)
    # By id the rankings agree (m1 best on both); read by position they would be reversed (-1).
    assert tau.loc["p", "q"] == pytest.approx(1.0)
    assert n.loc["p", "q"] == 3


def test_compare_regimes_counts_strict_improvements():
    names = ["a", "b", "c"]
    before = pd.DataFrame([[1, 0.2, 0.5], [0.2, 1, 0.9], [0.5, 0.9, 1]], index=names, columns=names)
    after = pd.DataFrame([[1, 0.8, 0.5], [0.8, 1, 0.95], [0.5, 0.95, 1]], index=names, columns=names)
    result = compare_regimes(before, after)
    assert result["pairs_improved"] == 2 and result["pairs_total"] == 3
    assert result["pairs_not_improved"] == [{"pair": ["a", "c"], "before": 0.5, "after": 0.5}]


def test_z_value_is_the_two_sided_normal_quantile():
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)
    with pytest.raises(ValueError):
        z_value(1.5)


def test_significance_ties_hand_computed():
    # Threshold 1.96 * sqrt(2) * 0.01 = 0.0277: 0.50 vs 0.52 tie, both differ significantly from 0.60.
    s = pair_signs(np.array([0.50, 0.52, 0.60]), np.array([0.01, 0.01, 0.01]), z_value(0.95))
    assert s.tolist() == [0, -1, -1]  # pairs (0,1), (0,2), (1,2); -1: first model is worse


def test_pairwise_rule_is_not_transitive_and_leader_rule_is():
    x, se, z = np.array([0.0, 0.02, 0.04]), np.full(3, 0.01), z_value(0.95)
    # 0 ~ 0.02 and 0.02 ~ 0.04, yet 0 < 0.04 significantly.
    assert pair_signs(x, se, z).tolist() == [0, -1, 0]
    # Leader rule: 0.04 leads, 0.02 joins it, 0 is significantly below the leader -> a class of its own.
    classes = leader_classes(x, se, z)
    assert classes[1] == classes[2] > classes[0]
    assert signs(x, se, z, "leader").tolist() == [-1, -1, 0]
    with pytest.raises(ValueError, match="ties.rule"):
        signs(x, se, z, "other")


def test_tau_b_from_signs_hand_computed_and_degenerate():
    # sum(ab) = 2, sum(a^2) = 2, sum(b^2) = 3 -> 2 / sqrt(6)
    assert tau_b_from_signs(np.array([0, -1, -1]), np.array([-1, -1, -1])) == pytest.approx(2 / math.sqrt(6))
    assert math.isnan(tau_b_from_signs(np.zeros(3), np.array([1, 1, -1])))


def test_zero_standard_errors_reproduce_scipy_tau_b():
    rng = np.random.default_rng(3)
    scores = pd.DataFrame(rng.integers(0, 6, size=(30, 4)).astype(float), columns=list("abcd"))  # many ties
    scores.iloc[0, 1] = np.nan  # pairwise-complete as well
    zero = pd.DataFrame(0.0, index=scores.index, columns=scores.columns)
    plain, _ = kendall_matrix(scores, list("abcd"))
    tied = tie_aware_matrix(scores, zero, list("abcd"), z_value(0.95), TieRule.pairwise)
    np.testing.assert_allclose(tied.to_numpy(), plain.to_numpy(), atol=1e-12)


def test_significance_ties_from_standard_errors_hand_computed():
    # Benchmark a: 0.50 ~ 0.52 tie, both below 0.60. Benchmark b: strictly increasing, all significant.
    scores = pd.DataFrame({"a": [0.50, 0.52, 0.60], "b": [0.1, 0.2, 0.3]})
    stderr = pd.DataFrame({"a": [0.01] * 3, "b": [0.001] * 3})
    tau = tie_aware_matrix(scores, stderr, ["a", "b"], z_value(0.95), TieRule.pairwise)
    # signs a = [0, -1, -1], b = [-1, -1, -1] -> 2 / sqrt(2 * 3)
    assert tau.loc["a", "b"] == pytest.approx(2 / math.sqrt(6))
    # Huge errors: every pair tied on a -> undefined.
    wide = tie_aware_matrix(scores, stderr.assign(a=1.0), ["a", "b"], z_value(0.95), TieRule.pairwise)
    assert math.isnan(wide.loc["a", "b"])


def test_category_means_on_a_toy_layout():
    names = ["a1", "a2", "b1", "b2", "c1"]
    tau = pd.DataFrame(np.eye(5), index=names, columns=names)

    def put(x, y, v):
        tau.loc[x, y] = tau.loc[y, x] = v

    put("a1", "a2", 0.9)
    put("b1", "b2", 0.7)
    for x, y, v in [("a1", "b1", 0.1), ("a1", "b2", 0.2), ("a2", "b1", 0.3), ("a2", "b2", 0.4)]:
        put(x, y, v)
    put("a1", "c1", 0.5)
    put("a2", "c1", 0.6)
    means, counts = category_means(tau, {"A": ["a1", "a2"], "B": ["b1", "b2"], "C": ["c1", "absent"]})
    assert means.loc["A", "A"] == pytest.approx(0.9) and counts.loc["A", "A"] == 1
    assert means.loc["A", "B"] == pytest.approx(0.25) and counts.loc["A", "B"] == 4
    assert means.loc["B", "A"] == pytest.approx(0.25)
    assert means.loc["A", "C"] == pytest.approx(0.55) and counts.loc["C", "A"] == 2
    assert math.isnan(means.loc["C", "C"]) and counts.loc["C", "C"] == 0  # one benchmark: no intra pair
