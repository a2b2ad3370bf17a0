"""Rank shifts between direct and adjusted MMLU rankings (Figure 17, Appendix F).

The paper: training on the test task "significantly alters model rankings on MMLU, with an average shift of 4.8
ranks and a maximum shift of 16 ranks": the absolute difference of each model's ranks by direct and by adjusted
score. The Figure 17 cell is not in the authors' notebook (as for Figure 7, `pareto`); their code does settle:

* model set: the models scored both directly and after fine-tuning — `process_pre_post_adjustment` in
  `notebooks/utils.py` keeps the intersection of the two score dictionaries (here: the caller's rows);
* adjusted score: max(direct, fine-tuned) (`use_max=True`, the default of `process_pre_post_adjustment` and the
  setting of the notebook's third cell). On the authors' mirrored evaluations (53 models, 3-epoch fine-tuning)
  this gives a mean shift of 4.3 and a maximum of 14 ranks; without the max, 4.6 and 18. Neither reproduces
  4.8 / 16 exactly, so the model set or MMLU aggregate behind Figure 17 likely differs slightly.

Not settled by the authors' code: ties. They are ranked with `tie_method="min"` (competition ranking
"1, 2, 2, 4": tied models share the best of their ranks); the paper's scores have no ties, so this never matters
there. Any method of `pandas.Series.rank` may be chosen instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

SHIFT_COLUMNS = ["name", "rank_direct", "rank_adjusted", "shift"]
_TIE_METHODS = ("average", "min", "max", "first", "dense")


def _scores(values: ArrayLike, what: str, n: int) -> np.ndarray:
    """Validate one score vector: 1-d, `n` entries, finite."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be a 1-d array, got shape {arr.shape}")
    if arr.size != n:
        raise ValueError(f"{what} has {arr.size} entries but there are {n} names")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} contains NaN or infinite values")
    return arr


def rank_shifts(
    names: Sequence[str],
    score_direct: ArrayLike,
    score_adjusted: ArrayLike,
    *,
    use_max: bool,
    tie_method: str = "min",
) -> pd.DataFrame:
    """Per-model ranks (1 = highest score) before and after adjustment and the absolute shift, sorted by
    `rank_direct` (ties by name). `use_max` (the authors' default) adjusts to max(direct, adjusted); `tie_method`
    goes to `pandas.Series.rank` (ranks are integers except with "average")."""

    labels = [str(name) for name in names]
    if not labels:
        raise ValueError("no models given")
    if len(set(labels)) != len(labels):
        raise ValueError("names must be unique")
    if tie_method not in _TIE_METHODS:
        raise ValueError(f"tie_method must be one of {_TIE_METHODS}, got {tie_method!r}")
    direct = _scores(score_direct, "score_direct", len(labels))
    adjusted = _scores(score_adjusted, "score_adjusted", len(labels))
    if use_max:
        adjusted = np.maximum(direct, adjusted)
    rank_direct = pd.Series(direct).rank(ascending=False, method=tie_method).to_numpy()
    rank_adjusted = pd.Series(adjusted).rank(ascending=False, method=tie_method).to_numpy()
    if tie_method != "average":
        rank_direct, rank_adjusted = rank_direct.astype(int), rank_adjusted.astype(int)
    table = pd.DataFrame(
        {
            "name": labels,
            "rank_direct": rank_direct,
            "rank_adjusted": rank_adjusted,
            "shift": np.abs(rank_direct - rank_adjusted),
        }
    )
    return table.sort_values(["rank_direct", "name"], kind="stable").reset_index(drop=True)


def shift_summary(shifts: pd.DataFrame) -> dict[str, Any]:
    """Mean and maximum absolute rank shift, and the number of models (the paper: 4.8 and 16)."""
    if "shift" not in shifts.columns:
        raise ValueError(
            f"shifts must have a 'shift' column (as rank_shifts returns), got {list(shifts.columns)}"
        )
    values = shifts["shift"].to_numpy(dtype=float)
    if values.size == 0:
        raise ValueError("shifts is empty")
    if not np.all(np.isfinite(values)):
        raise ValueError("shift column contains NaN or infinite values")
    peak = float(values.max())
    return {
        "mean_shift": float(values.mean()),
        "max_shift": int(peak) if peak.is_integer() else peak,
        "n_models": int(values.size),
    }
