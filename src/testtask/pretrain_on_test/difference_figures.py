"""Figures 13–20 (Appendix D.2): per task, the distributions of the boost and the bias for each LM type at one
(m, n); Figures 13–16 are m = 50, Figures 17–20 m = 100, each for n = 50, 100, 200, 500."""

from __future__ import annotations

from collections.abc import Callable

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import to_rgba
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from testtask.context import Context, InputsUnavailable
from testtask.outputs import save_figure
from testtask.pretrain_on_test.differences import summary, with_differences
from testtask.pretrain_on_test.inputs import collection_names, lm_label, load_collection

FIGURE_NUMBERS = {
    (m, n): 13 + 4 * i + j for i, m in enumerate((50, 100)) for j, n in enumerate((50, 100, 200, 500))
}
LM_COLORS = {"bert": "tab:blue", "gpt2": "tab:orange"}
EFFECT_TITLES = {
    "boost": r"Pretraining boost: $\mathrm{acc}_\mathrm{extra} - \mathrm{acc}_\mathrm{base}$",
    "bias": r"Evaluation bias: $\mathrm{acc}_\mathrm{test} - \mathrm{acc}_\mathrm{extra}$",
}


def _boxplot(ax: plt.Axes, values: list[np.ndarray], positions: np.ndarray, color: str) -> None:
    """Horizontal box plots (whiskers at the 5th and 95th percentiles; points are drawn separately)."""
    style = {
        "positions": positions,
        "widths": 0.32,
        "whis": (5, 95),
        "showfliers": False,
        "patch_artist": True,
        "boxprops": {"facecolor": to_rgba(color, 0.35), "edgecolor": color},
        "medianprops": {"color": "black", "lw": 1.2},
        "whiskerprops": {"color": color},
        "capprops": {"color": color},
    }
    try:
        ax.boxplot(values, orientation="horizontal", **style)
    except TypeError:  # matplotlib < 3.10 has no `orientation`
        ax.boxplot(values, vert=False, **style)


def _difference_panel(
    ax: plt.Axes, data: pd.DataFrame, effect: str, datasets: list[str], lm_types: list[str]
):
    rng = np.random.default_rng(0)  # jitter only; fixed so that reruns draw the same picture
    y = np.arange(len(datasets))[::-1]  # first dataset at the top
    # First LM type on top within each task's band.
    offsets = np.linspace(0.2, -0.2, len(lm_types)) if len(lm_types) > 1 else np.zeros(1)
    for lm_type, offset in zip(lm_types, offsets, strict=True):
        per_lm = data[data["lm_type"] == lm_type]
        values = [per_lm.loc[per_lm["dataset"] == d, effect].to_numpy(dtype=float) for d in datasets]
        keep = [i for i, v in enumerate(values) if v.size]
        color = LM_COLORS.get(lm_type, "tab:gray")
        _boxplot(ax, [values[i] for i in keep], y[keep] + offset, color)
        for i in keep:
            jitter = rng.uniform(-0.07, 0.07, values[i].size)
            ax.plot(values[i], y[i] + offset + jitter, "o", ms=1.8, color=color, alpha=0.35, mew=0)
        means = [values[i].mean() for i in keep]
        ax.plot(means, y[keep] + offset, "D", ms=4, mfc="white", mec="black", mew=0.8, zorder=5)
    ax.axvline(0, color="black", lw=1, zorder=0)
    ax.set_yticks(y, datasets)
    ax.set_ylim(-0.7, len(datasets) - 0.3)
    ax.xaxis.set_major_formatter(PercentFormatter(xmax=1, decimals=0))
    ax.set_xlabel("accuracy difference (percentage points)")
    ax.set_title(EFFECT_TITLES[effect], fontsize=12)
    ax.grid(axis="x", alpha=0.3)
    for boundary in y[:-1] - 0.5:
        ax.axhline(boundary, color="0.9", lw=0.6, zorder=0)


def _difference_numbers(data: pd.DataFrame) -> list[dict]:
    rows = []
    for (dataset, lm_type), group in data.groupby(["dataset", "lm_type"], sort=True):
        for effect in ("boost", "bias"):
            stats_ = summary(group[effect].to_numpy())
            rows.append(
                {
                    "dataset": dataset,
                    "lm_type": lm_type,
                    "effect": effect,
                    "n_subsamples": stats_["n"],
                    "mean": stats_["mean"],
                    "sd": stats_["sd"],
                    **stats_["quantiles"],
                }
            )
    return rows


def difference_figure(ctx: Context, m: int, n: int, data: pd.DataFrame | None = None) -> dict:
    """One of Figures 13–20: per task, the distributions of boost and bias for each LM type at (m, n)."""
    number = FIGURE_NUMBERS.get((m, n))
    if number is None:
        raise ValueError(f"no figure of Appendix D.2 for m={m}, n={n}; known: {sorted(FIGURE_NUMBERS)}")
    if data is None:
        data = load_collection(ctx, "few_shot", m=m, n=n)
    data = with_differences(data[(data["m"] == m) & (data["n"] == n)])
    if data.empty:
        raise InputsUnavailable(f"no few-shot accuracies for m={m}, n={n}")
    datasets = sorted(data["dataset"].unique(), key=str.lower)
    lm_types = sorted(data["lm_type"].unique())
    fig, axes = plt.subplots(1, 2, figsize=(16, max(6.0, 0.42 * len(datasets) + 2)), sharey=True)
    for ax, effect in zip(axes, ("boost", "bias"), strict=True):
        _difference_panel(ax, data, effect, datasets, lm_types)
    handles = [
        Patch(facecolor=LM_COLORS.get(lm, "tab:gray"), alpha=0.6, label=lm_label(lm)) for lm in lm_types
    ]
    handles.append(Line2D([], [], ls="", marker="D", ms=5, mfc="white", mec="black", label="mean"))
    fig.legend(handles=handles, loc="upper right", ncol=len(handles), frameon=False, fontsize=11)
    fig.suptitle(f"Accuracy difference distributions\nm = {m} train, n = {n} test observations", fontsize=14)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    numbers = {
        "figure": number,
        "collection": collection_names(ctx)["few_shot"],
        "m": m,
        "n": n,
        "units": "accuracy (fraction); boost = acc_extra - acc_base, bias = acc_test - acc_extra",
        "box": "box = quartiles, whiskers = 5th and 95th percentiles, points = subsamples, diamond = mean",
        "stats": _difference_numbers(data),
    }
    save_figure(fig, ctx.out_dir, f"figure-{number}", numbers)
    return numbers


def difference_figures(ctx: Context) -> dict:
    """Figures 13–20 for every (m, n) of the few-shot collection that is present; keyed "figure-N"."""
    data = load_collection(ctx, "few_shot")
    written = {}
    for (m, n), number in sorted(FIGURE_NUMBERS.items(), key=lambda item: item[1]):
        if ((data["m"] == m) & (data["n"] == n)).any():
            written[f"figure-{number}"] = difference_figure(ctx, m, n, data)
    return written


def _figure_for(m: int, n: int) -> Callable[[Context], dict]:
    def build(ctx: Context) -> dict:
        return difference_figure(ctx, m, n)

    build.__name__ = f"figure_{FIGURE_NUMBERS[(m, n)]}"
    build.__doc__ = f"Figure {FIGURE_NUMBERS[(m, n)]}: difference distributions at m = {m}, n = {n}."
    return build


figure_13 = _figure_for(50, 50)
figure_14 = _figure_for(50, 100)
figure_15 = _figure_for(50, 200)
figure_16 = _figure_for(50, 500)
figure_17 = _figure_for(100, 50)
figure_18 = _figure_for(100, 100)
figure_19 = _figure_for(100, 200)
figure_20 = _figure_for(100, 500)
