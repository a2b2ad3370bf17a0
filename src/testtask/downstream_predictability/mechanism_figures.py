"""Figures 5 and 6: why the chain loses the relation with compute — the mass on the incorrect choices.

- Figure 5: each (member, sample) as a point, for the metrics on either side of a transformation:
  p_vocab → p_choices, p_choices → accuracy, p_choices → Brier score. The JSON gives, per bin of the first
  metric, the spread of the second (how little one tells about the other).
- Figure 6: vocabulary mass on the correct choice against the mass on the incorrect choices (their sum, or each
  choice), coloured by compute; the JSON gives their correlation, the spread (orders of magnitude) of the
  incorrect mass at a given correct mass, and how the two move together across a family, per sample.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import pearsonr, spearmanr

from testtask.context import Context
from testtask.downstream_predictability.analysis import Analysis, TaskData, analyse, scale_compute
from testtask.downstream_predictability.correlations import paired, per_sample
from testtask.downstream_predictability.figure_common import (
    MARKERS,
    chosen_tasks,
    fixed_layout,
    header,
    member_styles,
    missing_notes,
)
from testtask.downstream_predictability.settings import Incorrect
from testtask.downstream_predictability.statistics import summarise
from testtask.outputs import save_figure

TRANSITIONS = (("p_vocab", "p_choices"), ("p_choices", "accuracy"), ("p_choices", "brier"))


def binned_spread(x: np.ndarray, y: np.ndarray, edges: np.ndarray) -> list[dict[str, Any]]:
    """Per bin of x (right edge included in the last bin): n and the quantiles of y."""
    which = np.clip(np.digitize(x, edges[1:-1], right=False), 0, len(edges) - 2)
    out = []
    for b in range(len(edges) - 1):
        ys = y[which == b]
        row: dict[str, Any] = {"lower": float(edges[b]), "upper": float(edges[b + 1]), "n": int(ys.size)}
        if ys.size:
            q = np.quantile(ys, [0.0, 0.25, 0.5, 0.75, 1.0])
            row |= {"min": q[0], "q25": q[1], "median": q[2], "q75": q[3], "max": q[4], "range": q[4] - q[0]}
        out.append(row)
    return out


def _rank_correlation(x: np.ndarray, y: np.ndarray) -> float | None:
    if x.size < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return None
    return float(spearmanr(x, y).statistic)


def _pooled(analysis: Analysis, task: str) -> list[tuple[int, TaskData]]:
    return [(i, f.tasks[task]) for i, f in enumerate(analysis.families) if task in f.tasks]


def _scatter_members(
    ax: plt.Axes, x: Any, y: Any, styles: list[tuple[Any, str]], family: int, legend: bool
) -> None:
    """One scatter per member (row k of `x` and `y`) in its colour, with the family's marker."""
    style = {"s": 6, "alpha": 0.6, "linewidths": 0, "marker": MARKERS[family % len(MARKERS)]}
    for (colour, label), xk, yk in zip(styles, x, y, strict=True):
        ax.scatter(xk, yk, color=colour, label=label if legend else None, **style)


def figure_5(ctx: Context) -> dict[str, Any]:
    fig5 = ctx.settings.figure_5
    analysis = analyse(ctx)
    tasks = chosen_tasks(analysis, list(fig5.tasks))
    rng = np.random.default_rng(ctx.seed)
    styles = member_styles(analysis)
    fig, axes = plt.subplots(len(tasks), 3, figsize=(12, 3.4 * len(tasks) + 1.0), squeeze=False)
    panels = []
    for row, task in enumerate(tasks):
        for col, (first, second) in enumerate(TRANSITIONS):
            ax = axes[row, col]
            xs, ys = [], []
            for fi, data in _pooled(analysis, task):
                x, y = data.quantities[first], data.quantities[second]
                jitter = rng.uniform(-0.04, 0.04, size=y.shape) if second == "accuracy" else 0.0
                _scatter_members(ax, x, y + jitter, styles[data.family], fi, row == col == 0)
                xs.append(x.ravel())
                ys.append(y.ravel())
            x, y = np.concatenate(xs), np.concatenate(ys)
            if first == "p_vocab":
                ax.set_xscale("log")
                lo, hi = np.log10(max(x.min(), 1e-300)), np.log10(max(x.max(), 1e-300))
                edges = 10 ** np.linspace(lo, hi if hi > lo else lo + 1, fig5.bins + 1)
            else:
                edges = np.linspace(0.0, 1.0, fig5.bins + 1)
            panel: dict[str, Any] = {
                "task": task,
                "x": first,
                "y": second,
                "n_points": int(x.size),
                "spearman": _rank_correlation(x, y),
                "bins": binned_spread(x, y, edges),
            }
            if second == "accuracy":
                above, below = x > 0.5, x < 0.5
                panel["accuracy_where_p_choices_above_half"] = float(y[above].mean()) if above.any() else None
                panel["accuracy_where_p_choices_below_half"] = float(y[below].mean()) if below.any() else None
                panel["n_p_choices_above_half"] = int(above.sum())
                ax.axvline(0.5, color="k", lw=0.6, ls=":")
            panels.append(panel)
            ax.set_xlabel(first.replace("_", " "))
            ax.set_ylabel(second.replace("_", " "))
            ax.set_title(f"{task}: {first} → {second}", fontsize=9)
            ax.grid(alpha=0.3, lw=0.5)
    fig.suptitle("Each transformation: how much the metric before tells about the metric after")
    fixed_layout(fig, left=0.7, right=0.2, top=0.6, bottom=1.3, hspace=0.45, wspace=0.25)
    fig.legend(loc="lower center", ncol=4, frameon=False, fontsize=8, markerscale=2)
    numbers = header(ctx, analysis, 5) | {"tasks": tasks, "panels": panels}
    save_figure(fig, ctx.out_dir, "figure-5", numbers, notes=missing_notes(analysis))
    return numbers


def figure_6(ctx: Context) -> dict[str, Any]:
    fig6 = ctx.settings.figure_6
    analysis = analyse(ctx)
    tasks = chosen_tasks(analysis, list(fig6.tasks))
    mode = fig6.incorrect
    method = ctx.settings.focus.method
    styles = member_styles(analysis)
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.3 * len(tasks), 4.8), squeeze=False)
    panels = []
    ln10 = np.log(10.0)
    for ax, task in zip(axes[0], tasks, strict=True):
        xs, ys, co_moves, incorrect_trend = [], [], [], []
        for fi, data in _pooled(analysis, task):
            correct = data.quantities["log_p_vocab"] / ln10  # (K, n) log10 p_vocab(correct)
            if mode == Incorrect.sum:
                incorrect = data.log_incorrect_sum / ln10
                x = correct
            else:
                incorrect = data.log_incorrect_each / ln10  # (K, n, C), NaN at the gold and absent choices
                x = np.broadcast_to(correct[..., None], incorrect.shape)
            keep = np.isfinite(x) & np.isfinite(incorrect)
            shown = (
                [xk[m] for xk, m in zip(x, keep, strict=True)],
                [ik[m] for ik, m in zip(incorrect, keep, strict=True)],
            )
            _scatter_members(ax, *shown, styles[data.family], fi, ax is axes[0, 0])
            xs.append(x[keep])
            ys.append(incorrect[keep])
            co_moves.append(paired(data.quantities["log_p_vocab"], data.log_incorrect_sum, method))
            scaled = scale_compute(data.compute, analysis.settings["compute_scale"])
            incorrect_trend.append(per_sample(scaled, data.log_incorrect_sum, method))
        x, y = np.concatenate(xs), np.concatenate(ys)
        lo, hi = float(x.min()), float(x.max())
        edges = np.linspace(lo, hi if hi > lo else lo + 1.0, fig6.bins + 1)
        together = np.concatenate([c.values[c.defined] for c in co_moves])
        trend = np.concatenate([c.values[c.defined] for c in incorrect_trend])
        panels.append(
            {
                "task": task,
                "incorrect": mode,
                "n_points": int(x.size),
                "spearman_log_masses": _rank_correlation(x, y),
                "pearson_log_masses": float(pearsonr(x, y).statistic)
                if x.size > 2 and np.ptp(x) and np.ptp(y)
                else None,
                "bins_log10_correct": binned_spread(x, y, edges),
                "per_sample_co_movement": {
                    "what": f"per-sample {method} correlation over members of log p_vocab(correct) and log of the "
                    "summed mass on incorrect choices",
                    **summarise(together),
                    "n_undefined": int(sum((~c.defined).sum() for c in co_moves)),
                },
                "per_sample_incorrect_mass_vs_compute": {
                    "what": f"per-sample {method} correlation of the summed incorrect mass with compute",
                    **summarise(trend),
                    "n_undefined": int(sum((~c.defined).sum() for c in incorrect_trend)),
                },
            }
        )
        ax.set_xlabel("log10 p_vocab(correct)")
        ax.set_ylabel(
            "log10 p_vocab(incorrect" + (" choices, summed)" if mode == Incorrect.sum else " choice)")
        )
        ax.set_title(task, fontsize=10)
        ax.grid(alpha=0.3, lw=0.5)
    fig.legend(loc="lower center", ncol=4, frameon=False, fontsize=8, markerscale=2)
    fixed_layout(fig, left=0.7, right=0.2, top=0.6, bottom=1.2, wspace=0.3)
    fig.suptitle("Vocabulary mass on the correct choice and on the incorrect choices")
    numbers = header(ctx, analysis, 6) | {"tasks": tasks, "method": method, "panels": panels}
    save_figure(fig, ctx.out_dir, "figure-6", numbers, notes=missing_notes(analysis))
    return numbers
