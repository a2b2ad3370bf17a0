"""Per-subsample accuracy differences (boost, bias) from integer counts, in accuracy units, and their summaries."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from testtask.pretrain_on_test.permutation import paired_differences

QUANTILES = (5, 25, 50, 75, 95)


def with_differences(data: pd.DataFrame) -> pd.DataFrame:
    """`data` with columns boost and bias: per-subsample differences in accuracy units."""
    data = data.copy()
    for effect in ("boost", "bias"):
        data[effect] = paired_differences(data, effect).to_numpy()
    return data


def summary(values: np.ndarray) -> dict[str, Any]:
    """Mean, sd (ddof = 1), quantiles and count of finite `values`."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return {"n": 0, "mean": None, "sd": None, "quantiles": {}}
    quantiles = np.percentile(values, QUANTILES)
    return {
        "n": int(values.size),
        "mean": float(values.mean()),
        "sd": float(values.std(ddof=1)) if values.size > 1 else None,
        "quantiles": {f"q{q:02d}": float(v) for q, v in zip(QUANTILES, quantiles, strict=True)},
    }
