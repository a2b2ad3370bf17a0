"""Which documents of a benchmark are trained on, validated on and tested on: carving and capping, seeded.

A benchmark without a validation split gets one carved from its training split (the paper: a random 20%).
Each of the three sets is then capped (the paper: 50,000 / 1,000 / 10,000) by a seeded random subset, kept in the
source order. Every random draw has its own stream derived from (seed, purpose), so changing one cap leaves the
other sets unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

_STREAMS = {"carve": 0, "train": 1, "validation": 2, "test": 3}
SETS = ("train", "validation", "test")


class SplitError(ValueError):
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
        used = {"train": len(self.train), "validation": len(self.validation), "test": len(self.test)}
        return {s: {"available": int(self.available[s]), "used": int(used[s])} for s in SETS}


def plan(
    n_train: int,
    n_validation: int | None,
    n_test: int,
    caps: Mapping[str, int | None],
    *,
    validation_fraction: float,
    seed: int,
) -> SplitPlan:
    """The documents of each set; `n_validation=None` carves validation out of train first."""
    unknown = set(caps) - set(SETS)
    if unknown:
        raise SplitError(f"caps: unknown set(s) {sorted(unknown)}; expected {list(SETS)}")
    if n_validation is None:
        train, validation = carve(n_train, validation_fraction, seed)
    else:
        train, validation = np.arange(n_train), np.arange(n_validation)
    test = np.arange(n_test)
    available = {"train": len(train), "validation": len(validation), "test": len(test)}
    return SplitPlan(
        train=cap(train, caps.get("train"), seed, "train"),
        validation=cap(validation, caps.get("validation"), seed, "validation"),
        test=cap(test, caps.get("test"), seed, "test"),
        carved=n_validation is None,
        available=available,
    )
