"""The sharded likelihood comparison test of Oren et al. (2024), *Proving test set contamination in black-box
language models* (ICLR 2024), which §9.2 of the paper runs on the `test` text-label pairs.

Under the null (the model never saw the data set in its canonical order) every order of the examples is as likely
as the canonical one. Per contiguous shard i the canonical order's log-likelihood ℓ_i is compared with the mean over
P random permutations, and the differences d_i = ℓ_i − mean_j ℓ_ij go into a one-sided t-test. As in the authors'
code (tatsu-lab/test_set_contamination@56e2257, compute_sharded_comparison_test.py; our code is our own): the first
(N mod k) shards hold ⌈N/k⌉ examples, the rest ⌊N/k⌋; a shard's sequence is its examples' token ids concatenated;
permutations are uniform; t = mean(d) / std(d) · √k with ddof = 0 and p = 1 − F_{t, k−1}(t).

Identical sequences are scored once (with the §9.2 shards of two examples, 50 permutations need two forward passes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from testtask.errors import InputError

Score = Callable[[list[list[int]]], Sequence[float]]


class ContaminationTestError(InputError, ValueError):
    """Settings or inputs the test cannot run with (the message names the setting)."""


@dataclass(frozen=True)
class ShardedTest:
    """The test's settings: `num_shards` (k), `permutations` per shard (P), `ddof` of the std in the t-statistic."""

    num_shards: int
    permutations: int
    ddof: int = 0

    def __post_init__(self) -> None:
        if self.num_shards < 2:
            raise ContaminationTestError(
                f"num_shards = {self.num_shards}: the t-test needs at least 2 shards"
            )
        if self.permutations < 1:
            raise ContaminationTestError(f"permutations = {self.permutations}: expected at least 1")
        if self.ddof not in (0, 1):
            raise ContaminationTestError(f"ddof = {self.ddof}: expected 0 (Oren et al.'s code) or 1")


@dataclass(frozen=True)
class ShardStatistics:
    """Per shard: its size, the canonical order's log-likelihood and each permutation's."""

    sizes: np.ndarray  # (k,)
    canonical: np.ndarray  # (k,)
    permuted: np.ndarray  # (k, P)
    sequences_scored: int  # distinct sequences passed to `score`

    @property
    def differences(self) -> np.ndarray:
        """d_i = ℓ_i − mean_j ℓ_ij."""
        return self.canonical - self.permuted.mean(axis=1)


@dataclass(frozen=True)
class TestResult:
    p_value: float
    t: float
    mean_difference: float
    std_difference: float
    shards: int
    degenerate: bool  # every difference equal (std 0): t and p undefined (NaN), as in the authors' code

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def shard_sizes(num_examples: int, num_shards: int) -> np.ndarray:
    """Contiguous shard sizes: the first (N mod k) shards one example larger (Oren et al.'s code)."""
    if num_examples < num_shards:
        raise ContaminationTestError(
            f"num_shards = {num_shards} exceeds the {num_examples} examples; every shard needs an example"
        )
    base, extra = divmod(num_examples, num_shards)
    return np.array([base + (i < extra) for i in range(num_shards)], dtype=int)


def draw_orders(sizes: np.ndarray, permutations: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Per shard, `permutations` uniform random orders of its examples (rows of shard-local indices)."""
    return [np.array([rng.permutation(int(s)) for _ in range(permutations)], dtype=int) for s in sizes]


def sharded_statistics(
    examples: Sequence[Sequence[int]],
    score: Score,
    test: ShardedTest,
    rng: np.random.Generator,
) -> ShardStatistics:
    """Log-likelihoods of every shard's canonical order and of `test.permutations` random orders of it."""
    sizes = shard_sizes(len(examples), test.num_shards)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    orders = draw_orders(sizes, test.permutations, rng)
    keys: dict[tuple[int, ...], int] = {}  # a shard order as global example indices -> its row in `sequences`
    sequences: list[list[int]] = []

    def key_of(start: int, order: Sequence[int]) -> int:
        key = tuple(int(start + i) for i in order)
        if key not in keys:
            keys[key] = len(sequences)
            sequences.append([token for index in key for token in examples[index]])
        return keys[key]

    canonical_rows = [key_of(s, range(size)) for s, size in zip(starts, sizes, strict=True)]
    permuted_rows = [[key_of(s, o) for o in shard] for s, shard in zip(starts, orders, strict=True)]
    scores = np.asarray(score(sequences), dtype=float)
    if scores.shape != (len(sequences),) or not np.all(np.isfinite(scores)):
        raise ContaminationTestError(
            f"score returned {scores.shape} values (finite: {bool(np.all(np.isfinite(scores)))}) "
            f"for {len(sequences)} sequences; expected one finite log-likelihood each"
        )
    return ShardStatistics(
        sizes=sizes,
        canonical=scores[canonical_rows],
        permuted=scores[np.array(permuted_rows)],
        sequences_scored=len(sequences),
    )


def combine(differences: np.ndarray, ddof: int = 0) -> TestResult:
    """One-sided t-test of mean(d) > 0 over the shards (Oren et al.'s combination)."""
    d = np.asarray(differences, dtype=float)
    k = len(d)
    if k < 2:
        raise ContaminationTestError(f"{k} shard differences: the t-test needs at least 2")
    mean, std = float(d.mean()), float(d.std(ddof=ddof))
    if std == 0.0:
        return TestResult(math.nan, math.nan, mean, std, k, degenerate=True)
    t = mean / std * math.sqrt(k)
    return TestResult(float(stats.t.sf(t, df=k - 1)), t, mean, std, k, degenerate=False)


def run_test(
    examples: Sequence[Sequence[int]], score: Score, test: ShardedTest, seed: int
) -> tuple[TestResult, ShardStatistics]:
    """The whole test on tokenized examples in canonical order, permutations drawn from `seed`."""
    statistics = sharded_statistics(examples, score, test, np.random.default_rng(seed))
    return combine(statistics.differences, test.ddof), statistics
