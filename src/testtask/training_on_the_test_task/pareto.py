"""Pareto frontier of accuracy against pretraining compute and the "area of improvement" of Figure 7 (§4.2).

The frontier at compute x is the best accuracy of any model with compute ≤ x, a staircase. The area of improvement
integrates, over log10 compute, the all-models frontier minus that of the models trained before the cut-off; the
paper reports that it shrinks "by a sixfold" once scores are adjusted.

The authors' Figure 7 cell is not in their `notebooks/figures.ipynb` (socialfoundations/training-on-the-test-task;
mostly embedded images), so the definitions were checked against the paper on their released evaluations
(mirrored in `shared/data`):

* staircase (running maximum) frontier integrated over log10 compute, over the compute range of all models:
  unadjusted / adjusted area = 5.5 (MMLU) and 5.3 (GSM8K) with the adjusted score max(base, fine-tuned) of
  `process_pre_post_adjustment(use_max=True)` (`notebooks/utils.py`, applied in the notebook's third cell),
  6.0 for MMLU with the fine-tuned score alone — the paper's "sixfold". Raw (linear) compute gives 2.8 / 3.8 and
  straight lines between Pareto points 1.3 / 7.4, so both are rejected;
* compute is 6·N·D FLOPs (`compute_compute`) and "older" means dated before November 2023 (`color_rule`,
  threshold '2311'); both are the caller's inputs here.

Not settled by the authors' code: the value of a frontier to the left of its first model. It only matters when
the older models do not include the smallest one (never the case in the paper's data, where Pythia-70M is
older); `baseline` sets it and defaults to the lowest accuracy among all models.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from testtask.io import to_jsonable


def _pair(x: ArrayLike, y: ArrayLike, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Validate one (log compute, accuracy) set: equal-length, non-empty, finite 1-d arrays."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(
            f"{what}: compute and accuracy must be 1-d arrays, got shapes {x.shape} and {y.shape}"
        )
    if x.shape != y.shape:
        raise ValueError(f"{what}: compute has {x.size} entries but accuracy has {y.size}")
    if x.size == 0:
        raise ValueError(f"{what}: no models given")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError(f"{what}: compute or accuracy contains NaN or infinite values")
    return x, y


def pareto_frontier(log_compute: ArrayLike, accuracy: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Staircase vertices (x, y) of the best accuracy reachable at compute ≤ x: the Pareto-optimal models by
    compute, each strictly above every model with no more compute (a tie in compute counts once, at its best)."""
    x, y = _pair(log_compute, accuracy, "pareto_frontier")
    # Sort by compute, and by accuracy descending within equal compute, so the best of a tie comes first.
    order = np.lexsort((-y, x))
    x, y = x[order], y[order]
    best_before = np.maximum.accumulate(np.r_[-np.inf, y[:-1]])
    vertex = y > best_before
    return x[vertex], y[vertex]


def staircase(xv: np.ndarray, yv: np.ndarray, at: np.ndarray, baseline: float) -> np.ndarray:
    """Frontier with vertices (xv, yv) evaluated at `at`; `baseline` left of the first vertex."""
    idx = np.searchsorted(xv, at, side="right") - 1
    return np.where(idx >= 0, yv[np.clip(idx, 0, None)], baseline)


def frontier_area_between(
    log_compute_all: ArrayLike,
    acc_all: ArrayLike,
    log_compute_old: ArrayLike,
    acc_old: ArrayLike,
    *,
    x_range: tuple[float, float] | None = None,
    baseline: float | None = None,
) -> float:
    """Signed area between the all-models and the older-models frontiers, integrated exactly over log10 compute in
    `x_range` (default: all models' range); ≥ 0 when the older models are a subset of all models."""
    xa, ya = _pair(log_compute_all, acc_all, "all models")
    xo, yo = _pair(log_compute_old, acc_old, "older models")
    if x_range is None:
        lo, hi = float(xa.min()), float(xa.max())
    else:
        bounds = np.asarray(x_range, dtype=float)
        if bounds.shape != (2,) or not np.all(np.isfinite(bounds)) or bounds[0] > bounds[1]:
            raise ValueError(f"x_range must be two finite numbers (lower ≤ upper), got {x_range}")
        lo, hi = float(bounds[0]), float(bounds[1])
    floor = float(ya.min()) if baseline is None else float(baseline)
    if not math.isfinite(floor):
        raise ValueError(f"baseline must be finite, got {baseline}")
    va, vo = pareto_frontier(xa, ya), pareto_frontier(xo, yo)
    # Both frontiers are constant between consecutive breakpoints, so evaluate at each left edge.
    edges = np.unique(np.r_[va[0], vo[0], lo, hi])
    edges = edges[(edges >= lo) & (edges <= hi)]
    left, width = edges[:-1], np.diff(edges)
    gap = staircase(*va, left, floor) - staircase(*vo, left, floor)
    return float(np.sum(gap * width))


@dataclass(frozen=True)
class ParetoComparison:
    """Area of improvement before and after adjustment; ratio = unadjusted / adjusted (the paper's "sixfold")."""

    area_unadjusted: float
    area_adjusted: float
    ratio: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (non-finite numbers as None)."""
        return to_jsonable(asdict(self))


def compare_pareto_areas(
    log_compute: ArrayLike,
    acc_unadjusted: ArrayLike,
    acc_adjusted: ArrayLike,
    is_older: ArrayLike,
    *,
    use_max: bool,
    x_range: tuple[float, float] | None = None,
    baseline: float | None = None,
) -> ParetoComparison:
    """Figure 7's areas of improvement with unadjusted and with adjusted accuracies (one row per model), and their
    ratio: +inf when the adjusted area is 0, NaN when both are. `use_max` (the authors' default) adjusts to
    max(unadjusted, adjusted)."""
    x, raw = _pair(log_compute, acc_unadjusted, "unadjusted")
    _, adj = _pair(log_compute, acc_adjusted, "adjusted")
    older = np.asarray(is_older)
    if older.shape != x.shape or older.dtype.kind not in "biu" or not np.isin(older, (0, 1)).all():
        raise ValueError(f"is_older must be a boolean array with one entry per model, got {older!r}")
    older = older.astype(bool)
    if not older.any():
        raise ValueError("is_older marks no model: the older-models frontier is empty")
    if use_max:
        adj = np.maximum(raw, adj)
    areas = [
        frontier_area_between(x, acc, x[older], acc[older], x_range=x_range, baseline=baseline)
        for acc in (raw, adj)
    ]
    if areas[1] != 0:
        ratio = areas[0] / areas[1]
    else:
        ratio = math.nan if areas[0] == 0 else math.copysign(math.inf, areas[0])
    return ParetoComparison(*areas, ratio)
