"""Repeated subsampling (§4, App. B): disjoint `extra`, `train` and `test` index sets per repetition.

The random stream depends on (seed, dataset, m, n, repetition) only, so repetition k is the same subsample for
every LM type (the analysis pairs rows across LM types by k).

`train` is stratified: int(m/K) texts per class in the authors' code (kddubey/pretrain-on-test@80fd183:
src/pretrain_on_test/experiment.py:40-52); exactly m rows with `proportional`, the paper's text ("contains m
observations"). `extra` and `test` are kept in draw order, as the authors' `train_test_split` shuffles them
(experiment.py:74-79) and the zero-shot packer fills packs in that order.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from testtask.errors import InputError
from testtask.pretrain_on_test.runner.settings import Stratification


class SubsampleError(InputError, ValueError):
    pass


@dataclass(frozen=True)
class Subsample:
    extra: np.ndarray  # n unlabeled texts for pretraining (the independent control), in draw order
    train: np.ndarray  # labeled texts, stratified so that every class appears
    test: np.ndarray  # n labeled texts, not stratified, in draw order

    def as_dict(self) -> dict[str, list[int]]:
        return {k: getattr(self, k).tolist() for k in ("extra", "train", "test")}


def rng_for(seed: int, dataset: str, m: int, n: int, repetition: int) -> np.random.Generator:
    entropy = [int(seed), zlib.crc32(dataset.encode()), int(m), int(n), int(repetition)]
    return np.random.default_rng(np.random.SeedSequence(entropy))


def training_seed(seed: int, repetition: int) -> int:
    """A 31-bit seed for weight init, dropout and batch order of repetition k (the same for every LM type)."""
    return int(np.random.SeedSequence([int(seed), int(repetition)]).generate_state(1)[0] >> 1)


def _check_sizes(class_sizes: np.ndarray, counts: np.ndarray, m: int) -> np.ndarray:
    over = counts > class_sizes
    if over.any():
        raise SubsampleError(f"classes {np.flatnonzero(over).tolist()} are too small for a stratified m={m}")
    return counts


def balanced_floor_counts(class_sizes: np.ndarray, m: int) -> np.ndarray:
    """int(m/K) per class, as the authors' `_stratified_sample`: train has floor(m/K)·K rows, maybe fewer than m."""
    k = len(class_sizes)
    per_class = m // k
    if per_class < 1:
        raise SubsampleError(
            f"m={m} is smaller than the number of classes ({k}); int(m/K) would draw no text per class"
        )
    return _check_sizes(class_sizes, np.full(k, per_class, dtype=int), m)


def proportional_counts(class_sizes: np.ndarray, m: int) -> np.ndarray:
    """Exactly m draws: one per class, the rest proportional to class size (largest remainder)."""
    k = len(class_sizes)
    if m < k:
        raise SubsampleError(
            f"m={m} is smaller than the number of classes ({k}); stratification needs m >= k"
        )
    if (class_sizes < 1).any():
        raise SubsampleError("every class needs at least one example to stratify")
    counts = np.ones(k, dtype=int)
    share = (m - k) * class_sizes / class_sizes.sum()
    counts += np.floor(share).astype(int)
    remainder = share - np.floor(share)
    for i in np.argsort(-remainder, kind="stable")[: m - counts.sum()]:
        counts[i] += 1
    return _check_sizes(class_sizes, counts, m)


def stratified_counts(class_sizes: np.ndarray, m: int, stratification: Stratification | str) -> np.ndarray:
    """Per-class draws of train under `stratification` (balanced_floor | proportional)."""
    class_sizes = np.asarray(class_sizes)
    if stratification == Stratification.balanced_floor:
        return balanced_floor_counts(class_sizes, m)
    if stratification == Stratification.proportional:
        return proportional_counts(class_sizes, m)
    raise SubsampleError(f"stratification must be one of {', '.join(Stratification)}, got {stratification!r}")


def draw(
    labels: np.ndarray,
    m: int,
    n: int,
    *,
    seed: int,
    dataset: str,
    repetition: int,
    stratification: Stratification | str,
) -> Subsample:
    """Draw repetition `repetition`'s subsample from a dataset whose labels are `labels` (0..K-1)."""
    labels = np.asarray(labels)
    if len(labels) < m + 2 * n:
        raise SubsampleError(f"dataset {dataset!r} has {len(labels)} rows; m + 2n = {m + 2 * n} are needed")
    rng = rng_for(seed, dataset, m, n, repetition)
    num_classes = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=num_classes)
    counts = stratified_counts(sizes, m, stratification)
    train = np.concatenate(
        [rng.choice(np.flatnonzero(labels == c), size=counts[c], replace=False) for c in range(num_classes)]
    )
    rng.shuffle(train)
    rest = np.setdiff1d(np.arange(len(labels)), train)
    picked = rng.choice(rest, size=2 * n, replace=False)  # a random order, kept: packs follow it
    return Subsample(extra=picked[:n], train=train, test=picked[n:])
