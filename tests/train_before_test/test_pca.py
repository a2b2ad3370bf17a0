"""train-before-test: PCA of the score matrix, PC1 against compute, perplexity orientation and model groups."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from testtask.schema import ConfigError, load
from testtask.train_before_test.compute import compute_table, correlate
from testtask.train_before_test.pca import explained_variance, max_with_baseline, pc1
from testtask.train_before_test.perplexity import agreement, keep_models, oriented, split_by_tuning
from testtask.train_before_test.settings import PretrainingCompute


def _rank_one(seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=12)
    loadings = rng.uniform(0.5, 2.0, size=5)
    offsets = rng.uniform(0, 1, size=5)
    matrix = np.outer(ability, loadings) + offsets
    return pd.DataFrame(matrix, index=[f"m{i}" for i in range(12)], columns=list("abcde")), ability


@pytest.mark.parametrize("standardize", [True, False])
def test_rank_one_matrix_has_all_variance_in_pc1(standardize):
    matrix, ability = _rank_one()
    ratios = explained_variance(matrix, standardize)
    assert ratios[0] == pytest.approx(1.0, abs=1e-12)
    assert ratios.sum() == pytest.approx(1.0)
    scores, loadings, share = pc1(matrix, standardize)
    assert share == pytest.approx(1.0, abs=1e-12)
    assert (loadings > 0).all()  # oriented: higher PC1 = better everywhere
    assert np.corrcoef(scores, ability)[0, 1] == pytest.approx(1.0)


def test_standardizing_equalises_benchmarks_of_different_spread():
    # Two uncorrelated benchmarks, one with 10x the spread: centring gives it ~all the variance,
    # standardising gives each half.
    x = np.array([1.0, -1.0, 1.0, -1.0])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    matrix = pd.DataFrame({"big": 10 * x, "small": y})
    assert explained_variance(matrix, standardize=False)[0] == pytest.approx(100 / 101)
    np.testing.assert_allclose(explained_variance(matrix, standardize=True), [0.5, 0.5])


def test_max_with_baseline_takes_the_better_regime_cell_by_cell():
    index, columns = ["m0", "m1", "m2"], ["a", "b", "c"]
    direct = pd.DataFrame([[0.9, 0.9, 0.1], [0.1, 0.1, 0.1], [0.1, 0.1, 0.1]], index=index, columns=columns)
    after = pd.DataFrame([[0.3, 0.2, 0.3], [0.2, 0.3, 0.1], [0.1, 0.1, 0.2]], index=index, columns=columns)
    out = max_with_baseline({"direct": direct, "tbt": after})
    assert out["direct"] is direct
    expected = [[0.9, 0.9, 0.3], [0.2, 0.3, 0.1], [0.1, 0.1, 0.2]]
    np.testing.assert_allclose(out["tbt"].to_numpy(), expected)
    # The max moves the explained variance: train-before-test alone is not what the max gives.
    assert explained_variance(out["tbt"], True)[0] != pytest.approx(explained_variance(after, True)[0])
    with pytest.raises(ValueError, match="does not cover"):
        max_with_baseline({"direct": direct, "tbt": after[["b", "a", "c"]]})


def test_pca_needs_two_models():
    with pytest.raises(ValueError, match="at least 2 models"):
        explained_variance(pd.DataFrame({"a": [1.0]}), True)


def test_compute_table_and_perfect_correlation_with_log_compute():
    section = {
        "source": "test",
        "models": {
            f"m{i}": {"name": f"M{i}", "params_b": 1.0, "tokens_b": 10.0**i, "flops_1e18": 10.0**i}
            for i in range(1, 5)
        },
    }
    table = compute_table(load(PretrainingCompute, section))
    assert table.loc["m2", "log10_flops"] == pytest.approx(20.0)
    pc = pd.Series({"m1": -3.0, "m2": -1.0, "m3": 1.0, "m4": 3.0, "not_in_table": 9.0})
    stats = correlate(pc, table)
    assert stats["n_models"] == 4
    assert stats["pearson_r_log10_flops"] == pytest.approx(1.0)
    assert stats["kendall_tau"] == pytest.approx(1.0)
    bad = {"source": "test", "models": {"m1": {"name": "M1", "params_b": 1.0, "tokens_b": 1.0}}}
    with pytest.raises(ConfigError, match=r"c\.models\.m1\.flops_1e18: missing, expected a number > 0"):
        load(PretrainingCompute, bad, "c")


def test_lower_bpb_means_better_after_orientation():
    models = ["a", "b", "c", "d", "google/gemma-x"]
    quality = pd.Series([1.0, 2.0, 3.0, 4.0, 5.0], index=models)
    bpb = pd.DataFrame({"wiki": 2.0 - 0.1 * quality, "arxiv": 1.0 - 0.2 * quality})
    down = pd.DataFrame({"task": quality})
    kept = keep_models(oriented(bpb, higher_is_better=False), ["google/gemma"])
    assert list(kept.index) == ["a", "b", "c", "d"]
    result = agreement(kept, down)
    assert result["mean_tau_with_downstream"] == pytest.approx(1.0)
    assert result["mean_tau_between_corpora"] == pytest.approx(1.0)
    assert result["tau_mean_perplexity_vs_mean_downstream"] == pytest.approx(1.0)
    assert int(result["n_models"].loc["wiki", "task"]) == 4
    # Without orientation the ranking would be read backwards.
    assert agreement(bpb, down)["mean_tau_with_downstream"] == pytest.approx(-1.0)


def test_split_by_tuning_suffixes():
    groups = split_by_tuning(
        ["q/Q-7B", "q/Q-7B-Chat", "l/L-Instruct", "g/g-2b-it"], ["-Chat", "-Instruct", "-it"]
    )
    assert groups == {"base": ["q/Q-7B"], "instruction_tuned": ["q/Q-7B-Chat", "l/L-Instruct", "g/g-2b-it"]}
