"""Task-level permutation tests (§6.3), BH adjustment, §7 counts and the Appendix F correlations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from testtask.pretrain_on_test.correlation import bert_gpt2_correlations, permuted_correlations, spearman
from testtask.pretrain_on_test.permutation import (
    TEST_COLUMNS,
    benjamini_hochberg,
    section7_counts,
    sign_flip_pvalue,
    task_averages,
    task_tests,
)


def synthetic(
    effects: dict[str, float],
    boosts: dict[str, float] | None = None,
    lm_types: tuple[str, ...] = ("bert", "gpt2"),
    subsamples: int = 30,
    n: int = 200,
    m: int = 50,
    collection: str = "few",
    seed: int = 0,
) -> pd.DataFrame:
    """Counts with a per-dataset true bias (test − extra) and boost (extra − base) in accuracy units."""
    rng = np.random.default_rng(seed)
    boosts = boosts or {}
    rows = []
    for lm_type in lm_types:
        for dataset, bias in effects.items():
            for k in range(subsamples):
                base_p = rng.uniform(0.4, 0.6)
                extra_p = np.clip(base_p + boosts.get(dataset, 0.0), 0, 1)
                test_p = np.clip(extra_p + bias, 0, 1)
                rows.append(
                    {
                        "collection": collection,
                        "m": m,
                        "n": n,
                        "lm_type": lm_type,
                        "dataset": dataset,
                        "subsample": k,
                        "base_correct": rng.binomial(n, base_p),
                        "extra_correct": rng.binomial(n, extra_p),
                        "test_correct": rng.binomial(n, test_p),
                    }
                )
    return pd.DataFrame(rows)


def bh_reference(p: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg by its definition: min over j ≥ i of p_(j) · K / j, capped at 1."""
    order = np.argsort(p)
    ranked = p[order] * len(p) / np.arange(1, len(p) + 1)
    adjusted = np.minimum.accumulate(ranked[::-1])[::-1].clip(max=1)
    out = np.empty_like(adjusted)
    out[order] = adjusted
    return out


# ---------------------------------------------------------------- sign-flip test


def test_exact_enumeration_matches_hand_computation():
    # Sums over the 8 sign patterns of (1, 2, 3): only +1+2+3 = 6 reaches the observed 6.
    assert sign_flip_pvalue([1, 2, 3], permutations=8) == pytest.approx(1 / 8)
    # (3, −1, 2): sums 4, 6, 0, 2, −2, 0, −6, −4; two reach the observed 4 (a tie counts).
    assert sign_flip_pvalue([3, -1, 2], permutations=100) == pytest.approx(2 / 8)
    # All zero differences: every pattern ties, so p = 1.
    assert sign_flip_pvalue([0, 0, 0, 0], permutations=100) == 1.0


def test_exact_enumeration_ties_survive_float_round_off():
    d = np.array([0.1, 0.2, 0.3])  # 0.1 + 0.2 != 0.3 in floating point; the patterns still tie exactly
    assert sign_flip_pvalue(d, permutations=8) == pytest.approx(1 / 8)
    assert sign_flip_pvalue([0.3, -0.1, 0.2], permutations=8) == pytest.approx(2 / 8)


def test_random_flips_use_add_one_estimator_and_seed():
    d = np.full(40, 0.05)  # every flip lowers the sum: p = 1 / (1 + P)
    assert sign_flip_pvalue(d, permutations=999, rng=np.random.default_rng(1)) == pytest.approx(1 / 1000)
    d = np.random.default_rng(2).normal(0, 1, 40)
    p1 = sign_flip_pvalue(d, 2000, np.random.default_rng(3))
    p2 = sign_flip_pvalue(d, 2000, np.random.default_rng(3))
    assert p1 == p2 and 0 < p1 <= 1


def test_strong_positive_effect_gives_small_p_value():
    d = np.random.default_rng(4).normal(0.05, 0.02, 50)
    assert sign_flip_pvalue(d, permutations=2000, rng=np.random.default_rng(5)) < 0.01


def test_strong_negative_effect_gives_large_p_value():
    d = np.random.default_rng(6).normal(-0.05, 0.02, 50)
    assert sign_flip_pvalue(d, permutations=2000, rng=np.random.default_rng(7)) > 0.99


def test_null_p_values_are_roughly_uniform():
    rng = np.random.default_rng(8)
    p = np.array([sign_flip_pvalue(rng.normal(0, 1, 20), 499, rng) for _ in range(200)])
    assert 0.01 <= np.mean(p < 0.05) <= 0.10
    assert 0.35 <= np.mean(p < 0.5) <= 0.65


def test_sign_flip_rejects_bad_input():
    with pytest.raises(ValueError):
        sign_flip_pvalue([], 10)
    with pytest.raises(ValueError):
        sign_flip_pvalue([1.0, 2.0], 0)


# ---------------------------------------------------------------- Benjamini–Hochberg


def test_bh_matches_statsmodels_and_definition():
    p = np.array([0.01, 0.04, 0.03, 0.005, 0.2, 0.5, 0.9, 0.041])
    adjusted, reject = benjamini_hochberg(p, alpha=0.05)
    expected_reject, expected, _, _ = multipletests(p, alpha=0.05, method="fdr_bh")
    np.testing.assert_allclose(adjusted, expected)
    np.testing.assert_array_equal(reject, expected_reject)
    np.testing.assert_allclose(adjusted, bh_reference(p))
    # By hand: sorted p · 8 / rank = .04, .04, .08, .08, .0656, .2667, .5714, .9; the running minimum from the
    # right lowers ranks 3–4 to .0656.
    np.testing.assert_allclose(
        adjusted, [0.04, 0.0656, 0.0656, 0.04, 0.26666667, 0.57142857, 0.9, 0.0656], rtol=1e-6
    )
    np.testing.assert_array_equal(reject, [True, False, False, True, False, False, False, False])


def test_bh_of_equal_spacing_is_flat():
    adjusted, _ = benjamini_hochberg([0.01, 0.02, 0.03, 0.04, 0.05])
    np.testing.assert_allclose(adjusted, 0.05)


# ---------------------------------------------------------------- task_tests


def test_task_tests_finds_the_planted_bias_only():
    effects = {"planted": 0.08, **{f"null{i}": 0.0 for i in range(9)}}
    data = synthetic(effects, subsamples=30)
    tests = task_tests(data, "bias", permutations=2000, seed=1)
    assert list(tests.columns) == TEST_COLUMNS
    assert len(tests) == 2 * len(effects)
    planted = tests[tests.dataset == "planted"]
    assert (planted.p_adjusted < 0.01).all() and planted.significant.all()
    assert planted.mean_difference.between(0.06, 0.10).all()
    assert tests[tests.dataset != "planted"].significant.sum() <= 1
    assert (tests.n_subsamples == 30).all()


def test_task_tests_adjusts_within_each_family():
    data = pd.concat([synthetic({"a": 0.05, "b": 0.0, "c": 0.0}, subsamples=12, n=n) for n in (50, 100)])
    tests = task_tests(data, "bias", permutations=500, seed=2)
    for _, family in tests.groupby(["collection", "m", "n", "lm_type"]):
        _, expected, _, _ = multipletests(family.p_value, method="fdr_bh")
        np.testing.assert_allclose(family.p_adjusted, expected)
    assert tests.groupby(["collection", "m", "n", "lm_type"]).ngroups == 4


def test_task_tests_mean_difference_is_from_counts_and_reproducible():
    data = synthetic({"a": 0.02, "b": -0.02}, subsamples=15, n=100)
    tests = task_tests(data, "boost", permutations=300, seed=3)
    for row in tests.itertuples():
        group = data[(data.lm_type == row.lm_type) & (data.dataset == row.dataset)]
        assert row.mean_difference == pytest.approx((group.extra_correct - group.base_correct).mean() / 100)
    pd.testing.assert_frame_equal(tests, task_tests(data, "boost", permutations=300, seed=3))
    # A task's p-value does not depend on which other tasks are tested alongside it.
    alone = task_tests(data[data.dataset == "a"], "boost", permutations=300, seed=3)
    np.testing.assert_allclose(alone.p_value, tests[tests.dataset == "a"].p_value)


def test_task_tests_rejects_unknown_effect():
    with pytest.raises(ValueError):
        task_tests(synthetic({"a": 0.0}, subsamples=3), "nonsense")


# ---------------------------------------------------------------- §7 counts


def test_section7_counts():
    effects = {"pos1": 0.03, "pos2": 0.02, "neg1": -0.04, "zero": 0.0}
    boosts = {"pos1": 0.05, "pos2": -0.2, "neg1": 0.05, "zero": -0.1}
    data = synthetic(effects, boosts, subsamples=40, n=500)
    data.loc[data.dataset == "zero", "test_correct"] = data.loc[data.dataset == "zero", "extra_correct"]
    counts = section7_counts(data, permutations=200, seed=0)["few"]
    assert counts["n_tasks"] == 4
    assert counts["negative_boost"]["count"] == 2
    assert counts["negative_boost"]["tasks"] == ["pos2", "zero"]  # most negative first
    assert counts["positive_bias"]["tasks"] == ["pos1", "pos2"]
    assert counts["negative_bias"]["tasks"] == ["neg1"]
    assert counts["zero_bias"]["count"] == 1
    assert counts["max_abs_bias"]["task"] == "neg1"
    assert counts["max_abs_bias"]["value"] == pytest.approx(0.04, abs=0.01)
    assert counts["tests"]["n_tests"] == 8 and counts["tests"]["n_families"] == 2


def test_task_averages_weight_configurations_equally():
    few = synthetic({"a": 0.0}, lm_types=("bert",), subsamples=2, n=100)
    many = synthetic({"a": 0.0}, lm_types=("bert",), subsamples=20, n=200)
    few["test_correct"] = few["extra_correct"] + 10  # bias 0.1 at n = 100
    many["test_correct"] = many["extra_correct"]  # bias 0 at n = 200
    averages = task_averages(pd.concat([few, many], ignore_index=True))
    assert averages.loc[0, "bias"] == pytest.approx(0.05)
    assert averages.loc[0, "n_configurations"] == 2


# ---------------------------------------------------------------- Appendix F correlations


def paired_frame(bert: np.ndarray, gpt2: np.ndarray, n: int = 100) -> pd.DataFrame:
    """Bias counts `bert`, `gpt2` for the same subsamples of one task."""
    rows = []
    for lm_type, bias in (("bert", bert), ("gpt2", gpt2)):
        for k, b in enumerate(bias):
            rows.append(
                {
                    "collection": "few",
                    "m": 50,
                    "n": n,
                    "lm_type": lm_type,
                    "dataset": "t",
                    "subsample": k,
                    "base_correct": 40,
                    "extra_correct": 50,
                    "test_correct": 50 + int(b),
                }
            )
    return pd.DataFrame(rows)


def test_spearman_of_monotone_pairs():
    bert = np.array([-5, -2, 0, 3, 7, 11])
    assert bert_gpt2_correlations(paired_frame(bert, bert**3)).spearman.iloc[0] == pytest.approx(1.0)
    assert bert_gpt2_correlations(paired_frame(bert, -2 * bert)).spearman.iloc[0] == pytest.approx(-1.0)
    assert np.isnan(spearman(np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0])))


def test_rows_are_paired_by_subsample_index():
    bert = np.array([1, 2, 3, 4, 5])
    data = paired_frame(bert, bert).sample(frac=1, random_state=0)  # row order must not matter
    corr = bert_gpt2_correlations(data)
    assert corr.spearman.iloc[0] == pytest.approx(1.0)
    assert list(corr.columns) == ["collection", "m", "n", "dataset", "effect", "n_subsamples", "spearman"]


def test_groups_without_both_lm_types_are_dropped():
    data = paired_frame(np.arange(5), np.arange(5))
    assert bert_gpt2_correlations(data[data.lm_type == "bert"]).empty


def test_permuted_correlations_shuffle_gpt2_within_groups():
    bert = np.arange(30)
    data = pd.concat([paired_frame(bert, bert), paired_frame(bert, bert, n=200)], ignore_index=True)
    nulls = permuted_correlations(data, "bias", n_permutations=10, seed=0)
    assert len(nulls) == 20 and sorted(nulls.permutation.unique()) == list(range(10))
    assert nulls.spearman.abs().max() < 0.9  # the perfect pairing is broken
    assert abs(nulls.spearman.mean()) < 0.2
    pd.testing.assert_frame_equal(nulls, permuted_correlations(data, "bias", n_permutations=10, seed=0))
    assert not nulls.equals(permuted_correlations(data, "bias", n_permutations=10, seed=1))


def test_task_counts_apply_the_zero_rule():
    """A task average that float summation leaves at ±1e-18 is exactly 0, neither positive nor negative (the §9
    count the paper gets from a −2.8e−18 mean); before the rule it was counted negative."""
    from testtask.pretrain_on_test.permutation import _collection_counts

    averages = pd.DataFrame(
        {
            "collection": ["c"] * 4,
            "dataset": ["a", "b", "c", "d"],
            "boost": [0.02, -1.8e-19, -0.004, 0.01],
            "bias": [0.003, -2.8e-18, -0.002, 1e-19],
            "n_configurations": [1, 1, 1, 1],
        }
    )
    counts = _collection_counts(averages)
    assert counts["negative_boost"]["tasks"] == ["c"]
    assert counts["positive_bias"]["tasks"] == ["a"] and counts["negative_bias"]["tasks"] == ["c"]
    assert counts["zero_bias"]["count"] == 2
