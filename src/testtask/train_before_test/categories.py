"""Mean ranking agreement within and between benchmark categories (Figure 3 of the paper)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd


def category_means(tau: pd.DataFrame, categories: dict[str, list[str]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(category x category mean tau, number of benchmark pairs behind each entry).

    Diagonal: mean over pairs of distinct benchmarks within the category (NaN for a one-benchmark category).
    Off-diagonal: mean over every (benchmark of one, benchmark of the other) pair. Benchmarks absent from `tau`
    are left out."""
    keys = list(categories)
    members = {k: [b for b in categories[k] if b in tau.index] for k in keys}
    means = pd.DataFrame(np.nan, index=keys, columns=keys)
    counts = pd.DataFrame(0, index=keys, columns=keys)
    for a in keys:
        for b in keys:
            if a == b:
                pairs = list(itertools.combinations(members[a], 2))
            else:
                pairs = list(itertools.product(members[a], members[b]))
            values = [tau.loc[x, y] for x, y in pairs]
            values = [v for v in values if np.isfinite(v)]
            counts.loc[a, b] = len(values)
            if values:
                means.loc[a, b] = float(np.mean(values))
    return means, counts
