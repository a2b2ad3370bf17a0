"""Table 5 discriminator, Figure 7 Pareto area and Figure 17 rank shifts of training-on-the-test-task."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, balanced_accuracy_score

from testtask.training_on_the_test_task.discriminator import (
    AUTHORS_XGB_PARAMS,
    DiscriminatorResult,
    loo_balanced_accuracy,
)
from testtask.training_on_the_test_task.pareto import (
    ParetoComparison,
    compare_pareto_areas,
    frontier_area_between,
    pareto_frontier,
)
from testtask.training_on_the_test_task.ranking import SHIFT_COLUMNS, rank_shifts, shift_summary

# ---------------------------------------------------------------- discriminator (Table 5)


def test_separable_classes_are_discriminated_perfectly() -> None:
    rng = np.random.default_rng(0)
    compute = np.r_[rng.normal(21.0, 0.3, 15), rng.normal(24.0, 0.3, 15)]
    accuracy = rng.uniform(0.2, 0.8, 30)  # noise column: the label depends on compute only
    labels = np.r_[np.zeros(15), np.ones(15)].astype(int)
    result = loo_balanced_accuracy(np.c_[compute, accuracy], labels)
    assert result.balanced_accuracy == 1.0
    assert result.predictions == labels.tolist()
    assert (result.n, result.n_positive) == (30, 15)


@pytest.mark.parametrize("seed", [0, 1])
def test_labels_independent_of_features_score_near_chance(seed: int) -> None:
    # A classifier that saw the held-out row (no real leave-one-out) would fit these random labels almost
    # perfectly; honest leave-one-out stays near 0.5 (it tends to fall below: removing a row shifts the
    # training class balance against it).
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(60, 2))
    labels = rng.integers(0, 2, size=60)
    result = loo_balanced_accuracy(features, labels, seed=seed)
    assert 0.25 <= result.balanced_accuracy <= 0.75
    assert result.n_positive == int(labels.sum())


def test_balanced_accuracy_on_imbalanced_classes_uses_pooled_predictions() -> None:
    # 12 older models, 5 newer ones, one newer model hidden among the older ones.
    x = np.r_[np.arange(12.0), 100.0, 101.0, 102.0, 103.0, 5.5]
    labels = np.r_[np.zeros(12), np.ones(5)].astype(int)
    result = loo_balanced_accuracy(x[:, None], labels)
    predictions = np.asarray(result.predictions)
    assert predictions.shape == labels.shape
    assert result.balanced_accuracy == pytest.approx(balanced_accuracy_score(labels, predictions))
    recall_pos = np.mean(predictions[labels == 1] == 1)
    recall_neg = np.mean(predictions[labels == 0] == 0)
    assert result.balanced_accuracy == pytest.approx((recall_pos + recall_neg) / 2)
    # The hidden newer model is missed, so balanced and plain accuracy differ on these imbalanced classes.
    assert predictions[-1] == 0
    assert result.balanced_accuracy != pytest.approx(accuracy_score(labels, predictions))


def test_bool_labels_and_one_dimensional_features_are_accepted() -> None:
    x = np.r_[np.linspace(0, 1, 6), np.linspace(5, 6, 6)]
    labels = np.r_[np.zeros(6), np.ones(6)].astype(bool)
    assert loo_balanced_accuracy(x, labels).balanced_accuracy == 1.0


def test_authors_defaults_can_be_overridden() -> None:
    assert AUTHORS_XGB_PARAMS == {"tree_method": "exact", "base_score": 0.5}
    # Newer models in the middle of the compute range: one depth-1 stump cannot carve out the middle band,
    # the default ensemble can, so the keyword arguments must reach XGBClassifier.
    x = np.r_[np.arange(0, 8), np.arange(30, 38), np.arange(15, 23)].astype(float)
    labels = np.r_[np.zeros(16), np.ones(8)].astype(int)
    default = loo_balanced_accuracy(x[:, None], labels)
    stump = loo_balanced_accuracy(x[:, None], labels, n_estimators=1, max_depth=1)
    assert default.balanced_accuracy == 1.0
    assert stump.balanced_accuracy < 1.0


def test_discriminator_result_to_dict_is_json_ready() -> None:
    result = DiscriminatorResult(balanced_accuracy=0.5, n=4, n_positive=2, predictions=[0, 1, 1, 0])
    assert json.loads(json.dumps(result.to_dict())) == {
        "balanced_accuracy": 0.5,
        "n": 4,
        "n_positive": 2,
        "predictions": [0, 1, 1, 0],
    }


@pytest.mark.parametrize(
    ("features", "labels", "message"),
    [
        (np.zeros((5, 2)), np.array([0, 1, 0, 1]), "rows"),
        (np.array([[0.0, 1.0], [np.nan, 1.0], [2.0, 1.0], [3.0, 1.0]]), np.array([0, 0, 1, 1]), "NaN"),
        (np.zeros((4, 2)), np.array([0, 2, 0, 2]), "binary"),
        (np.zeros((4, 2)), np.array([0.0, np.nan, 1.0, 1.0]), "NaN"),
        (np.zeros((4, 2)), np.array([0, 0, 0, 1]), "at least 2"),
        (np.zeros((2, 2, 2)), np.array([0, 1]), "1-d or 2-d"),
    ],
)
def test_discriminator_rejects_bad_input(features: np.ndarray, labels: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        loo_balanced_accuracy(features, labels)


# ---------------------------------------------------------------- Pareto frontier and area (Figure 7)


def test_pareto_frontier_of_hand_made_points() -> None:
    log_compute = [3.0, 1.0, 2.0, 4.0, 5.0, 2.0]
    accuracy = [0.5, 0.3, 0.2, 0.5, 0.7, 0.4]
    # By compute: (1, .3) (2, .4) (2, .2) (3, .5) (4, .5) (5, .7); the (2, .2) tie and the (4, .5) plateau
    # are not vertices.
    x, y = pareto_frontier(log_compute, accuracy)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0, 5.0])
    np.testing.assert_array_equal(y, [0.3, 0.4, 0.5, 0.7])


def test_pareto_frontier_with_decreasing_accuracy_keeps_the_first_point() -> None:
    x, y = pareto_frontier([1.0, 2.0, 3.0], [0.9, 0.5, 0.1])
    np.testing.assert_array_equal(x, [1.0])
    np.testing.assert_array_equal(y, [0.9])


# Older models: frontier 1 on [0, 2), 2 from 2. All models add (1, 2) and (3, 3): frontier 1 on [0, 1),
# 2 on [1, 3), 3 from 3. The gap is 1 on [1, 2) and on [3, 4].
OLD_X, OLD_Y = np.array([0.0, 2.0]), np.array([1.0, 2.0])
ALL_X, ALL_Y = np.r_[OLD_X, 1.0, 3.0, 4.0], np.r_[OLD_Y, 2.0, 3.0, 2.5]


def test_area_between_known_staircases() -> None:
    assert frontier_area_between(ALL_X, ALL_Y, OLD_X, OLD_Y) == pytest.approx(2.0)
    assert frontier_area_between(ALL_X, ALL_Y, OLD_X, OLD_Y, x_range=(0.5, 3.5)) == pytest.approx(1.5)
    assert frontier_area_between(ALL_X, ALL_Y, OLD_X, OLD_Y, x_range=(2.0, 3.0)) == pytest.approx(0.0)


def test_identical_frontiers_have_zero_area() -> None:
    assert frontier_area_between(OLD_X, OLD_Y, OLD_X, OLD_Y) == 0.0
    # Extra models below the frontier do not move it.
    dominated_x, dominated_y = np.r_[OLD_X, 1.5, 3.0], np.r_[OLD_Y, 0.5, 1.9]
    assert frontier_area_between(dominated_x, dominated_y, OLD_X, OLD_Y, x_range=(0.0, 3.0)) == 0.0


def test_baseline_fills_the_older_frontier_left_of_its_first_model() -> None:
    all_x, all_y = np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0])
    old_x, old_y = np.array([1.0]), np.array([2.0])
    # Default baseline = lowest accuracy of all models (1.0): gap 0 on [0, 1), 0 on [1, 2).
    assert frontier_area_between(all_x, all_y, old_x, old_y) == pytest.approx(0.0)
    assert frontier_area_between(all_x, all_y, old_x, old_y, baseline=0.0) == pytest.approx(1.0)


def test_compare_pareto_areas_ratio_and_use_max() -> None:
    log_compute = ALL_X
    older = np.array([True, True, False, False, False])
    unadjusted = ALL_Y  # area 2 (see above)
    # Adjusted: older models catch up to (2, 3) and the newer (3, 3) adds nothing: only [1, 2) keeps a gap
    # of 2 - 1 = 1.
    adjusted = np.array([1.0, 3.0, 2.0, 3.0, 2.5])
    result = compare_pareto_areas(log_compute, unadjusted, adjusted, older, use_max=True)
    assert isinstance(result, ParetoComparison)
    assert result.area_unadjusted == pytest.approx(2.0)
    assert result.area_adjusted == pytest.approx(1.0)
    assert result.ratio == pytest.approx(2.0)
    # use_max keeps the larger of the two scores, so a fine-tuned score below the base one is ignored.
    lowered = adjusted.copy()
    lowered[2] = 0.0
    assert compare_pareto_areas(
        log_compute, unadjusted, lowered, older, use_max=True
    ).area_adjusted == pytest.approx(1.0)
    no_max = compare_pareto_areas(log_compute, unadjusted, lowered, older, use_max=False)
    assert no_max.area_adjusted == pytest.approx(0.0)
    assert no_max.ratio == float("inf")
    assert no_max.to_dict() == {"area_unadjusted": pytest.approx(2.0), "area_adjusted": 0.0, "ratio": None}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: pareto_frontier([1.0, 2.0], [0.5]), "entries"),
        (lambda: pareto_frontier([1.0, np.nan], [0.5, 0.6]), "NaN"),
        (lambda: pareto_frontier([], []), "no models"),
        (lambda: frontier_area_between([1.0, 2.0], [0.1, 0.2], [1.0], [0.1, 0.2]), "older models"),
        (lambda: frontier_area_between([1.0, 2.0], [0.1, np.inf], [1.0], [0.1]), "NaN or infinite"),
        (lambda: frontier_area_between([1.0, 2.0], [0.1, 0.2], [1.0], [0.1], x_range=(3.0, 1.0)), "x_range"),
        (lambda: compare_pareto_areas([1.0, 2.0], [0.1, 0.2], [0.1, 0.2], [True], use_max=True), "is_older"),
        (
            lambda: compare_pareto_areas([1.0, 2.0], [0.1, 0.2], [0.1, 0.2], [False, False], use_max=True),
            "no model",
        ),
    ],
)
def test_pareto_rejects_bad_input(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


# ---------------------------------------------------------------- rank shifts (Figure 17)


def test_rank_shifts_of_a_known_permutation() -> None:
    names = ["A", "B", "C", "D"]
    direct = [0.9, 0.8, 0.7, 0.6]  # ranks A1 B2 C3 D4
    adjusted = [0.5, 0.95, 0.85, 0.75]  # ranks B1 C2 D3 A4 (no max: A's adjusted score is lower)
    table = rank_shifts(names, direct, adjusted, use_max=False)
    assert list(table.columns) == SHIFT_COLUMNS
    assert table["name"].tolist() == names  # sorted by direct rank
    assert table["rank_direct"].tolist() == [1, 2, 3, 4]
    assert table["rank_adjusted"].tolist() == [4, 1, 2, 3]
    assert table["shift"].tolist() == [3, 1, 1, 1]
    assert shift_summary(table) == {"mean_shift": 1.5, "max_shift": 3, "n_models": 4}


def test_rank_shifts_sorts_by_direct_rank_whatever_the_input_order() -> None:
    table = rank_shifts(["low", "high", "mid"], [0.1, 0.9, 0.5], [0.1, 0.9, 0.5], use_max=True)
    assert table["name"].tolist() == ["high", "mid", "low"]
    assert table["shift"].tolist() == [0, 0, 0]


def test_ties_share_the_best_rank_by_default() -> None:
    names = ["A", "B", "C", "D"]
    direct = [0.9, 0.8, 0.7, 0.6]
    adjusted = [0.5, 0.9, 0.8, 0.7]  # with the default use_max, A keeps 0.9 and ties B
    table = rank_shifts(names, direct, adjusted, use_max=True).set_index("name")
    assert table["rank_adjusted"].to_dict() == {"A": 1, "B": 1, "C": 3, "D": 4}
    assert table["shift"].to_dict() == {"A": 0, "B": 1, "C": 0, "D": 0}
    averaged = rank_shifts(names, direct, adjusted, use_max=True, tie_method="average").set_index("name")
    assert averaged["rank_adjusted"].to_dict() == {"A": 1.5, "B": 1.5, "C": 3.0, "D": 4.0}
    assert shift_summary(averaged.reset_index())["max_shift"] == 0.5


def test_ties_in_direct_rank_are_ordered_by_name() -> None:
    table = rank_shifts(["b", "a", "c"], [0.5, 0.5, 0.1], [0.5, 0.5, 0.9], use_max=True)
    assert table["name"].tolist() == ["a", "b", "c"]
    assert table["rank_direct"].tolist() == [1, 1, 3]
    assert table["rank_adjusted"].tolist() == [2, 2, 1]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"names": ["A", "B"], "score_direct": [0.1, 0.2, 0.3], "score_adjusted": [0.1, 0.2]}, "entries"),
        ({"names": ["A", "B"], "score_direct": [0.1, 0.2], "score_adjusted": [0.1, np.nan]}, "NaN"),
        ({"names": ["A", "A"], "score_direct": [0.1, 0.2], "score_adjusted": [0.1, 0.2]}, "unique"),
        ({"names": [], "score_direct": [], "score_adjusted": []}, "no models"),
        (
            {"names": ["A"], "score_direct": [0.1], "score_adjusted": [0.1], "tie_method": "random"},
            "tie_method",
        ),
    ],
)
def test_rank_shifts_rejects_bad_input(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rank_shifts(**kwargs, use_max=True)


def test_shift_summary_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="'shift' column"):
        shift_summary(pd.DataFrame({"name": ["A"]}))
    with pytest.raises(ValueError, match="empty"):
        shift_summary(pd.DataFrame({"shift": []}))
