"""Figure 8 (Appendix F): the correlation between BERT's and GPT-2's subsample-level differences, observed and
under permuted pairings."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats

from testtask.context import Context, InputsUnavailable
from testtask.outputs import save_figure
from testtask.pretrain_on_test.correlation import bert_gpt2_correlations, permuted_correlations
from testtask.pretrain_on_test.differences import summary
from testtask.pretrain_on_test.inputs import collection_names, load_collection


def _density(ax: plt.Axes, values: np.ndarray, grid: np.ndarray, **style: Any) -> None:
    """Gaussian KDE of finite `values` on `grid` (skipped when there is nothing to smooth)."""
    values = values[np.isfinite(values)]
    if values.size > 1 and np.ptp(values) > 0:
        ax.plot(grid, stats.gaussian_kde(values)(grid), **style)


def _correlation_axes(ax: plt.Axes, title: str) -> None:
    ax.axvline(0, color="0.3", lw=0.8, ls="--", zorder=0)
    ax.set_xlim(-1, 1)
    ax.set_xlabel("Spearman correlation, BERT vs GPT-2 (per m, n, task)")
    ax.set_title(title, fontsize=11)
    ax.grid(alpha=0.3)


def _observed_panel(ax: plt.Axes, observed: dict[str, pd.DataFrame], grid: np.ndarray) -> None:
    colors = {"bias": "tab:red", "boost": "tab:green"}
    bins = np.linspace(-1, 1, 21)
    for effect, frame in observed.items():
        values = frame["spearman"].to_numpy(dtype=float)
        finite = values[np.isfinite(values)]
        ax.hist(finite, bins=bins, density=True, alpha=0.25, color=colors[effect])
        _density(
            ax, values, grid, color=colors[effect], lw=2, label=f"{effect} (mean {np.mean(finite):+.3f})"
        )
    ax.set_ylabel("density")
    ax.legend(loc="upper left", fontsize=9)
    _correlation_axes(ax, "(a) observed: row k of BERT paired with row k of GPT-2")


def _null_panel(
    ax: plt.Axes, label: str, effect: str, observed: pd.DataFrame, nulls: pd.DataFrame, grid
) -> None:
    for i, (_, frame) in enumerate(nulls.groupby("permutation", sort=True)):
        _density(
            ax,
            frame["spearman"].to_numpy(dtype=float),
            grid,
            color="0.55",
            lw=1,
            alpha=0.8,
            label="permuted pairs" if i == 0 else None,
        )
    _density(ax, observed["spearman"].to_numpy(dtype=float), grid, color="black", lw=2.2, label="observed")
    ax.legend(loc="upper left", fontsize=9)
    n_perm = nulls["permutation"].nunique()
    _correlation_axes(ax, f"({label}) {effect}: {n_perm} nulls, GPT-2 subsamples permuted")


def figure_8(ctx: Context) -> dict:
    """Appendix F, Figure 8: (a) observed correlations of bias and boost; (b) bias nulls; (c) boost nulls."""
    data = load_collection(ctx, "few_shot")
    n_permutations = ctx.settings.figure_8.permutations
    effects = {"b": "bias", "c": "boost"}
    observed = {effect: bert_gpt2_correlations(data, effect) for effect in ("bias", "boost")}
    if observed["bias"].empty:
        raise InputsUnavailable("Figure 8 needs both bert and gpt2 results for some (m, n, task)")
    nulls = {
        effect: permuted_correlations(data, effect, n_permutations, seed=ctx.seed + offset)
        for offset, effect in enumerate(("bias", "boost"))
    }
    grid = np.linspace(-1, 1, 401)
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8), sharex=True, sharey=True)
    _observed_panel(axes[0], observed, grid)
    for ax, (label, effect) in zip(axes[1:], effects.items(), strict=True):
        _null_panel(ax, label, effect, observed[effect], nulls[effect], grid)
    fig.suptitle(
        "Distribution of the correlation between BERT and GPT-2 across all m, n and tasks", fontsize=13
    )
    fig.tight_layout()
    numbers = {
        "collection": collection_names(ctx)["few_shot"],
        "method": "Spearman correlation of subsample-level differences, BERT row k paired with GPT-2 row k, "
        "per (m, n, task); nulls permute GPT-2's rows within each (m, n, task)",
        "panels": {
            "a": {effect: _observed_numbers(frame) for effect, frame in observed.items()},
            **{label: _null_numbers(effect, nulls[effect]) for label, effect in effects.items()},
        },
        "panel_choice": "(a) observed bias and boost correlations; (b) bias nulls; (c) boost nulls",
        "permutations": n_permutations,
        "seed": ctx.seed,
    }
    save_figure(fig, ctx.out_dir, "figure-8", numbers)
    return numbers


def _observed_numbers(frame: pd.DataFrame) -> dict:
    values = frame["spearman"].to_numpy(dtype=float)
    return {
        **summary(values),
        "n_groups": len(frame),
        "n_undefined": int(np.isnan(values).sum()),
        "correlations": frame[["m", "n", "dataset", "n_subsamples", "spearman"]].to_dict(orient="records"),
    }


def _null_numbers(effect: str, nulls: pd.DataFrame) -> dict:
    return {
        "effect": effect,
        "permutations": [
            {
                "permutation": int(p),
                **summary(frame["spearman"].to_numpy(dtype=float)),
                "correlations": frame["spearman"].tolist(),
            }
            for p, frame in nulls.groupby("permutation", sort=True)
        ],
    }
