"""Which documents of a benchmark are trained on, validated on and tested on: carving and capping, seeded.

A benchmark without a validation split gets one carved from its training split (the paper: a random 20%); a
perplexity corpus is cut into train / validation / test (the paper: 8:1:1). Each of the three sets is then
capped (the paper: 50,000 / 1,000 / 10,000) by a seeded random subset. Two rules draw them (`split_rule`):

- `authors` (default): the authors' draws, socialfoundations/lm-harmony@88bc5c3: a carve is
  `np.random.seed(seed); order = np.random.permutation(n)` cut into parts of `int(fraction * n)` documents
  (zarth_utils/nn_utils.py:302-312, called at data_utils.py:162-164), and a cap re-seeds the global generator
  and keeps `permutation(len)[:cap]` (data_utils.py:179-201), in the permuted order. With the same dataset order
  the same documents are chosen.
- `streams`: every draw has its own stream derived from (seed, purpose), sizes are rounded, and a capped subset
  keeps the source order.

Either way changing one cap leaves the other sets unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from testtask.errors import InputError
from testtask.train_before_test.runner.settings import PARTS, SplitRule

_STREAMS = {"carve": 0, "train": 1, "validation": 2, "test": 3}


class SplitError(InputError, ValueError):
    pass


def _rng(seed: int, purpose: str) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed), _STREAMS[purpose]]))


def carve(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, validation) positions of a random `fraction` split of range(n), both sorted and disjoint."""
    if not 0.0 < fraction < 1.0:
        raise SplitError(f"validation_fraction must lie strictly between 0 and 1, got {fraction}")
    if n < 2:
        raise SplitError(f"cannot carve a validation set out of {n} training document(s)")
    size = min(max(int(round(fraction * n)), 1), n - 1)
    order = _rng(seed, "carve").permutation(n)
    return np.sort(order[size:]), np.sort(order[:size])


def _legacy_permutation(n: int, seed: int) -> np.ndarray:
    """`np.random.seed(seed); np.random.permutation(n)` without touching numpy's global generator."""
    return np.random.RandomState(int(seed)).permutation(int(n))


def carve_authors(n: int, fractions: Sequence[float], seed: int) -> list[np.ndarray]:
    """Parts of range(n) of `int(fraction * n)` documents each, cut from one seeded permutation (the authors'
    `random_split`); the rounding leaves up to len(fractions) - 1 documents out."""
    if any(f <= 0 for f in fractions) or not math.isclose(sum(fractions), 1.0):
        raise SplitError(f"split fractions must be positive and sum to 1, got {list(fractions)}")
    order = _legacy_permutation(n, seed)
    parts, start = [], 0
    for fraction in fractions:
        end = start + int(fraction * n)
        parts.append(order[start:end])
        start = end
    if any(len(p) == 0 for p in parts):
        raise SplitError(f"cannot split {n} document(s) into non-empty parts of {list(fractions)}")
    return parts


def cap_authors(indices: np.ndarray, limit: int | None, seed: int) -> np.ndarray:
    """`indices` itself when it has at most `limit` entries, else `indices[permutation(len)[:limit]]` seeded
    afresh with `seed`, as the authors cap each set."""
    indices = np.asarray(indices, dtype=np.int64)
    if limit is None or len(indices) <= int(limit):
        return indices
    if int(limit) < 1:
        raise SplitError(f"a cap must be at least 1, got {limit}")
    return indices[_legacy_permutation(len(indices), seed)[: int(limit)]]


def cap(indices: np.ndarray, limit: int | None, seed: int, purpose: str) -> np.ndarray:
    """`indices` itself when it has at most `limit` entries (or no limit), else a seeded subset in source order."""
    indices = np.asarray(indices, dtype=np.int64)
    if limit is None or len(indices) <= int(limit):
        return indices
    if int(limit) < 1:
        raise SplitError(f"cap for {purpose} must be at least 1, got {limit}")
    chosen = _rng(seed, purpose).choice(len(indices), size=int(limit), replace=False)
    return indices[np.sort(chosen)]


@dataclass(frozen=True)
class SplitPlan:
    """Positions into the source splits: `validation` indexes the training split when `carved`."""

    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray
    carved: bool
    available: dict[str, int]  # sizes before the caps (after carving)

    def counts(self) -> dict[str, dict[str, int]]:
        return {s: {"available": int(self.available[s]), "used": len(getattr(self, s))} for s in PARTS}


def _capped(
    parts: Mapping[str, np.ndarray], caps: Mapping[str, int | None], seed: int, rule: SplitRule, carved: bool
) -> SplitPlan:
    if rule == SplitRule.authors:
        chosen = {s: cap_authors(parts[s], caps.get(s), seed) for s in PARTS}
    else:
        chosen = {s: cap(parts[s], caps.get(s), seed, s) for s in PARTS}
    return SplitPlan(**chosen, carved=carved, available={s: len(parts[s]) for s in PARTS})


def plan(
    n_train: int,
    n_validation: int | None,
    n_test: int,
    caps: Mapping[str, int | None],
    *,
    validation_fraction: float,
    seed: int,
    rule: str = "authors",
) -> SplitPlan:
    """The documents of each set; `n_validation=None` carves validation out of train first."""
    if n_validation is None:
        if rule == SplitRule.authors:
            if not 0.0 < validation_fraction < 1.0:
                raise SplitError(
                    f"validation_fraction must lie strictly between 0 and 1, got {validation_fraction}"
                )
            train, validation = carve_authors(n_train, (1.0 - validation_fraction, validation_fraction), seed)
        else:
            train, validation = carve(n_train, validation_fraction, seed)
    else:
        train, validation = np.arange(n_train), np.arange(n_validation)
    parts = {"train": train, "validation": validation, "test": np.arange(n_test)}
    return _capped(parts, caps, seed, rule, carved=n_validation is None)


def plan_corpus(
    n: int, fractions: Sequence[float], caps: Mapping[str, int | None], *, seed: int, rule: str = "authors"
) -> SplitPlan:
    """Train / validation / test positions of a corpus of `n` documents cut by `fractions` (the paper: 8:1:1),
    then capped; all three index the one source split."""
    if len(fractions) != 3:
        raise SplitError(f"corpus_fractions must give train, validation and test, got {list(fractions)}")
    if rule == SplitRule.authors:
        train, validation, test = carve_authors(n, fractions, seed)
    else:
        order = _rng(seed, "carve").permutation(n)
        sizes = [int(f * n) for f in fractions]
        train, validation, test = (
            np.sort(order[a : a + k]) for a, k in zip((0, sizes[0], sizes[0] + sizes[1]), sizes, strict=True)
        )
    return _capped({"train": train, "validation": validation, "test": test}, caps, seed, rule, carved=True)
