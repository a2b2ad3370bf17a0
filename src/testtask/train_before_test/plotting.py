"""Drawing helpers shared by this paper's figures: tau heat maps on a common colour scale."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd


def shared_range(matrices: Sequence[pd.DataFrame], vmax: float = 1.0) -> tuple[float, float]:
    """(vmin, vmax) for panels compared by eye: vmin = min(0, lowest finite entry of any panel)."""
    lows = [
        np.nanmin(m.to_numpy(dtype=float)) for m in matrices if np.isfinite(m.to_numpy(dtype=float)).any()
    ]
    return min([0.0, *lows]), float(vmax)


def heatmap(
    ax: plt.Axes,
    matrix: pd.DataFrame,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    vmin: float,
    vmax: float,
    cmap: str,
    annotate: bool = False,
    separators: Sequence[int] = (),
    fontsize: float = 6.5,
):
    """Draw `matrix` on `ax`; lines after the row/column positions in `separators` (category boundaries)."""
    values = matrix.to_numpy(dtype=float)
    image = ax.imshow(values, vmin=vmin, vmax=vmax, cmap=cmap, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(col_labels)), col_labels, rotation=90, fontsize=fontsize)
    ax.set_yticks(range(len(row_labels)), row_labels, fontsize=fontsize)
    for s in separators:
        if values.shape[0] == values.shape[1]:
            ax.axhline(s - 0.5, color="black", lw=0.8)
        ax.axvline(s - 0.5, color="black", lw=0.8)
    if annotate:
        for i in range(values.shape[0]):
            for j in range(values.shape[1]):
                if np.isfinite(values[i, j]):
                    ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=fontsize - 2)
    return image


def category_boundaries(benchmarks: Sequence[str], category_of) -> list[int]:
    """Positions where a new category starts (the first excluded)."""
    return [
        i for i in range(1, len(benchmarks)) if category_of(benchmarks[i]) != category_of(benchmarks[i - 1])
    ]
