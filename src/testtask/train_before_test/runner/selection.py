"""The validation curve of a cell and the checkpoint it selects.

A point is one scored model: the base model (epoch 0, no learning rate) or the checkpoint after `epoch` epochs at
`learning_rate`, each in a prompt `variant` (plain, or the chat template for instruction-tuned models). The best
point has the highest validation score (the lowest when the metric is lower-is-better); ties go to the earliest
point in the curve's order, which lists the base model first: when fine-tuning does not improve on validation,
the pre-fine-tuning result is reported, as the paper does (App. A.2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Point:
    variant: str
    learning_rate: float | None  # None: the base model
    epoch: int  # 0: the base model
    score: float  # validation score
    step: int = 0
    file: str = ""

    @property
    def is_base(self) -> bool:
        return self.learning_rate is None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _key(point: Point, higher_is_better: bool) -> float:
    if point.score is None or math.isnan(point.score):
        return -math.inf  # an undefined score never wins
    return point.score if higher_is_better else -point.score


def best(points: Sequence[Point], higher_is_better: bool = True) -> Point:
    """The best point; the first one among equals."""
    if not points:
        raise ValueError("no validation scores to select from")
    chosen = points[0]
    for point in points[1:]:
        if _key(point, higher_is_better) > _key(chosen, higher_is_better):
            chosen = point
    return chosen


def base_points(points: Sequence[Point]) -> list[Point]:
    return [p for p in points if p.is_base]
