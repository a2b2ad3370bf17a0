"""Task-level hypothesis tests of §6.3 (eqs. 13–14) and the task counts quoted in §7–§9.

Per (collection, m, n, lm_type, dataset), the paired differences d_k of the subsamples get a one-sided sign-flip
permutation test of H0: E[d] = 0 against H1: E[d] > 0; p-values are adjusted with Benjamini–Hochberg per
(collection, m, n, lm_type), as the paper tests "for each setting of m, n, and the LM type".
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from statsmodels.stats.multitest import multipletests

from testtask.pretrain_on_test.accuracies import EFFECTS
from testtask.signs import ZERO_TOLERANCE

FAMILY = ["collection", "m", "n", "lm_type"]
TASK = [*FAMILY, "dataset"]
TEST_COLUMNS = [*TASK, "n_subsamples", "mean_difference", "p_value", "p_adjusted", "significant"]
# Relative slack when comparing permuted statistics with the observed one, so that float round-off never
# breaks a tie (with integer count differences, as task_tests passes, all sums are exact anyway).
_TIE_TOLERANCE = 1e-9
# Sign patterns drawn per batch: bounds memory at about this × K floats.
_BATCH = 4096


def paired_differences(data: pd.DataFrame, effect: str) -> pd.Series:
    """Per-subsample accuracy difference (treatment_correct − control_correct) / n of `effect`."""
    return count_differences(data, effect) / data["n"]


def count_differences(data: pd.DataFrame, effect: str) -> pd.Series:
    """Per-subsample difference in correct predictions, treatment − control (an integer)."""
    if effect not in EFFECTS:
        raise ValueError(f"effect must be one of {sorted(EFFECTS)}, got {effect!r}")
    control, treatment = EFFECTS[effect]
    return (data[f"{treatment}_correct"] - data[f"{control}_correct"]).rename(effect)


def _exceedances(signs: np.ndarray, d: np.ndarray, observed: float) -> int:
    """How many rows of ±1 `signs` give a sum of signed `d` at least `observed`."""
    slack = _TIE_TOLERANCE * max(1.0, float(np.abs(d).sum()))
    return int(np.count_nonzero(signs @ d >= observed - slack))


def sign_flip_pvalue(
    d: ArrayLike, permutations: int = 10_000, rng: np.random.Generator | None = None
) -> float:
    """One-sided p-value of H1: E[d] > 0 from flipping the signs of the paired differences `d`.

    With 2^K ≤ `permutations` all patterns are enumerated; otherwise p = (1 + #{stat ≥ observed}) / (1 + P) over P
    random patterns, never 0 (Phipson & Smyth, 2010). The sum orders sign patterns as the mean does.
    """
    d = np.asarray(d, dtype=float)
    if d.ndim != 1 or d.size == 0:
        raise ValueError(f"d must be a non-empty 1-d array, got shape {d.shape}")
    if permutations < 1:
        raise ValueError(f"permutations must be positive, got {permutations}")
    observed = float(d.sum())
    size = d.size
    if size < 63 and 2**size <= permutations:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=size)))
        return _exceedances(signs, d, observed) / 2**size
    rng = rng if rng is not None else np.random.default_rng()
    hits, left = 0, permutations
    while left > 0:
        batch = min(left, _BATCH)
        signs = np.where(rng.random((batch, size)) < 0.5, -1.0, 1.0)
        hits += _exceedances(signs, d, observed)
        left -= batch
    return (1 + hits) / (1 + permutations)


def benjamini_hochberg(p_values: ArrayLike, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """BH-adjusted p-values and rejections at false discovery rate `alpha` (statsmodels' fdr_bh)."""
    p_values = np.asarray(p_values, dtype=float)
    if p_values.size == 0:
        return p_values.copy(), np.zeros(0, dtype=bool)
    reject, adjusted, _, _ = multipletests(p_values, alpha=alpha, method="fdr_bh")
    return adjusted, reject


def _task_seed(seed: int, key: tuple) -> np.random.Generator:
    """A generator for one task: depends on `seed` and the task only, not on which other tasks are tested."""
    digest = zlib.crc32("/".join(str(part) for part in key).encode())
    return np.random.default_rng([int(seed), digest])


def task_tests(
    data: pd.DataFrame,
    effect: str = "bias",
    permutations: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """The test of eqs. 13–14 for every task, BH-adjusted within each (collection, m, n, lm_type)."""
    frame = data[TASK].copy()
    frame["counts"] = count_differences(data, effect).to_numpy()
    rows = []
    for key, group in frame.groupby(TASK, sort=True):
        counts = group["counts"].to_numpy(dtype=float)
        n = int(key[TASK.index("n")])
        rows.append(
            {
                **dict(zip(TASK, key, strict=True)),
                "n_subsamples": counts.size,
                "mean_difference": counts.mean() / n,
                "p_value": sign_flip_pvalue(counts, permutations, _task_seed(seed, (effect, *key))),
            }
        )
    tests = pd.DataFrame(rows, columns=TEST_COLUMNS[:-2])
    tests["p_adjusted"] = np.nan
    tests["significant"] = False
    for _, family in tests.groupby(FAMILY, sort=False):
        adjusted, reject = benjamini_hochberg(family["p_value"].to_numpy(), alpha)
        tests.loc[family.index, "p_adjusted"] = adjusted
        tests.loc[family.index, "significant"] = reject
    tests["significant"] = tests["significant"].astype(bool)
    return tests[TEST_COLUMNS]


def task_averages(data: pd.DataFrame) -> pd.DataFrame:
    """Per (collection, dataset): boost and bias averaged over every (m, n, lm_type) present, configurations with
    equal weight (as the authors' `analysis/dataset_level.ipynb`)."""
    frame = data[TASK].copy()
    for effect in EFFECTS:
        frame[effect] = paired_differences(data, effect).to_numpy()
    per_configuration = frame.groupby(TASK, sort=True)[list(EFFECTS)].mean()
    averages = per_configuration.groupby(level=["collection", "dataset"]).mean()
    averages["n_configurations"] = per_configuration.groupby(level=["collection", "dataset"]).size()
    return averages.reset_index()


def _collection_counts(averages: pd.DataFrame) -> dict:
    """The §7 statements for one collection's task averages."""
    negative_boost = averages[averages["boost"] < -ZERO_TOLERANCE].sort_values("boost")
    positive_bias = averages[averages["bias"] > ZERO_TOLERANCE].sort_values("bias", ascending=False)
    negative_bias = averages[averages["bias"] < -ZERO_TOLERANCE].sort_values("bias")
    worst = averages.loc[averages["bias"].abs().idxmax()]
    return {
        "n_tasks": len(averages),
        "n_configurations": sorted(set(averages["n_configurations"].astype(int))),
        "negative_boost": {
            "count": len(negative_boost),
            "tasks": negative_boost["dataset"].tolist(),
            "values": negative_boost["boost"].tolist(),
            "all_greater_than_minus_1pct": bool((negative_boost["boost"] > -0.01).all()),
        },
        "positive_bias": {"count": len(positive_bias), "tasks": positive_bias["dataset"].tolist()},
        "negative_bias": {"count": len(negative_bias), "tasks": negative_bias["dataset"].tolist()},
        "zero_bias": {"count": int((averages["bias"].abs() < ZERO_TOLERANCE).sum())},
        "max_abs_bias": {"value": float(abs(worst["bias"])), "task": worst["dataset"]},
        "all_abs_bias_below_1pct": bool((averages["bias"].abs() < 0.01).all()),
    }


def _test_counts(tests: pd.DataFrame) -> dict:
    """p-value counts of one collection's task tests (the "all p-values > 0.5" of §8–§9)."""
    return {
        "n_tests": len(tests),
        "n_families": int(tests.groupby(FAMILY).ngroups),
        "p_value_gt_half": int((tests["p_value"] > 0.5).sum()),
        "p_adjusted_gt_half": int((tests["p_adjusted"] > 0.5).sum()),
        "significant": int(tests["significant"].sum()),
        "significant_tasks": tests.loc[tests["significant"], TASK].to_dict(orient="records"),
        "min_p_value": float(tests["p_value"].min()),
        "min_p_adjusted": float(tests["p_adjusted"].min()),
    }


def section7_counts(
    data: pd.DataFrame, tests: pd.DataFrame | None = None, permutations: int = 10_000, seed: int = 0
) -> dict:
    """Per collection: the task counts of §7 and p-value counts of the bias `tests` (computed when not given)."""
    if tests is None:
        tests = task_tests(data, "bias", permutations=permutations, seed=seed)
    averages = task_averages(data)
    counts = {}
    for collection, per_collection in averages.groupby("collection", sort=True):
        counts[collection] = {
            **_collection_counts(per_collection),
            "tests": _test_counts(tests[tests["collection"] == collection]),
        }
    return counts
