"""Figure 1: relevance of every candidate task to the target under Pearson, Spearman and Kendall correlation.

As the paper's Figure 1, over all models of each matrix, in the configured normalised space. The JSON also
holds the correlations of the feature-normalised scores (equivalently the raw scores: the feature step is affine
per task), which keep each model's overall level that the sample step removes.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from testtask.context import Context
from testtask.outputs import save_figure
from testtask.proxy_tasks.consistency import top_tasks
from testtask.proxy_tasks.correlation import correlate
from testtask.proxy_tasks.inputs import check_target, matrix_and_settings, settings_dict
from testtask.proxy_tasks.matrices import dropped_notes
from testtask.proxy_tasks.normalise import Normaliser
from testtask.proxy_tasks.settings import Metric, Normalisation

COLOURS = {"pearson": "#0072B2", "spearman": "#E69F00", "kendall": "#009E73"}


def relevance_table(
    scores: pd.DataFrame, target: str, normalisation: Normalisation, metrics: tuple[Metric, ...]
) -> pd.DataFrame:
    """Candidates x metrics: correlation with the target after `normalisation`, over all models."""
    candidates = [c for c in scores.columns if c != target]
    p = Normaliser.fit(scores, candidates, normalisation).transform(scores).values
    y, x = p[target].to_numpy(), p[candidates].to_numpy()
    return pd.DataFrame({m: correlate(y, x, m) for m in metrics}, index=candidates)


def figure_1(ctx: Context) -> dict:
    out = ctx.settings.figure_1
    target = out.target
    keys = list(out.matrices)
    loaded = [matrix_and_settings(ctx, key) for key in keys]
    for matrix, _ in loaded:  # every matrix checked before any is analysed
        check_target(matrix, target, "figure_1.target")
    panels = []
    tables = []
    for matrix, settings in loaded:
        rel = relevance_table(matrix.scores, target, settings.normalisation, settings.metrics)
        rel_feature = relevance_table(matrix.scores, target, Normalisation.feature, settings.metrics)
        tables.append(rel)
        panels.append(
            {
                "matrix": matrix.describe(),
                "target": target,
                "normalisation": settings.normalisation,
                "relevance": {m: rel[m].to_dict() for m in settings.metrics},
                "top_t": settings.top_t,
                "top": {m: [rel.index[i] for i in top_tasks(rel[m].to_numpy(), settings.top_t)] for m in rel},
                "relevance_feature_normalised": {m: rel_feature[m].to_dict() for m in settings.metrics},
                "settings": settings_dict(settings),
            }
        )
    height = max(len(t) for t in tables) * 0.28 + 1.2
    fig, axes = plt.subplots(1, len(keys), figsize=(4.6 * len(keys), height), squeeze=False)
    for ax, rel, panel in zip(axes.flat, tables, panels, strict=True):
        order = rel.sort_values(rel.columns[-1]).index  # by the last metric (Kendall by default)
        pos = np.arange(len(order))
        width = 0.8 / len(rel.columns)
        for i, metric in enumerate(rel.columns):
            ax.barh(
                pos + (i - (len(rel.columns) - 1) / 2) * width,
                rel.loc[order, metric],
                height=width,
                color=COLOURS.get(metric),
                label=metric.capitalize(),
            )
        ax.set_yticks(pos, order, fontsize=7)
        ax.axvline(0, color="grey", lw=0.8)
        ax.axvline(ctx.settings.method.eps_c, color="grey", lw=0.8, ls="--")
        ax.set_title(panel["matrix"]["label"], fontsize=9)
        ax.set_xlabel(f"Relevance to {target} ({panel['normalisation']} normalised)")
        ax.grid(alpha=0.25, lw=0.5, axis="x")
    axes.flat[0].legend(frameon=False, fontsize=7, loc="lower right")
    fig.tight_layout()
    numbers = {
        "paper": ctx.paper,
        "figure": 1,
        "source": ctx.source,
        "what": "correlation across all models of each candidate task with the target (the paper's Figure 1)",
        "relevance_threshold_eps_c": ctx.settings.method.eps_c,
        "panels": panels,
    }
    save_figure(fig, ctx.out_dir, "figure-1", numbers, notes=dropped_notes(panels))
    return numbers
