"""The score matrix's principal components: Figure 6 (explained variance, all models), Figure 7 (PC1 against
pretraining compute), Figure 8 (explained variance, one family) and Figure 11 (PC1 score of every model)."""

from __future__ import annotations

import logging
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from testtask.context import Context, InputsUnavailable
from testtask.outputs import save_figure
from testtask.train_before_test.compute import compute_table, correlate
from testtask.train_before_test.pca import complete_rows, explained_variance, max_with_baseline, pc1
from testtask.train_before_test.prepare import Prepared, base_numbers, prepare

log = logging.getLogger(__name__)

REGIME_COLOURS = ("#999999", "#D55E00")
MODEL_POLICY = "common models: PCA uses the models scored on every analysed benchmark in both regimes"


def incomplete_models(prep: Prepared) -> dict[str, list[str]]:
    """Model -> the `regime:benchmark` cells it lacks, for models PCA leaves out (logged)."""
    lacking: dict[str, list[str]] = {}
    for key in prep.regimes:
        frame = prep.downstream(key)
        for model, row in frame.isna().iterrows():
            lacking.setdefault(str(model), []).extend(f"{key}:{b}" for b in frame.columns[row.to_numpy()])
    lacking = {m: cells for m, cells in sorted(lacking.items()) if cells}
    if lacking:
        log.warning("%s: PCA leaves out %d incomplete model(s): %s", prep.results.path, len(lacking), lacking)
    return lacking


def common_matrices(prep: Prepared, prefix: str = "") -> dict[str, pd.DataFrame]:
    """Per regime, the models x benchmarks matrix over models complete in both regimes (ids starting `prefix`);
    the others are named by incomplete_models."""
    frames = {key: complete_rows(prep.downstream(key), prep.benchmarks) for key in prep.regimes}
    models = sorted(set.intersection(*(set(f.index) for f in frames.values())))
    models = [m for m in models if str(m).startswith(prefix)]
    if len(models) < 3:
        named = f" starting {prefix!r} (train_before_test.pca.case_study.model_prefix)" if prefix else ""
        raise InputsUnavailable(
            f"only {len(models)} models{named} are complete in both regimes; a PCA needs 3"
        )
    return {key: frame.loc[models] for key, frame in frames.items()}


def _pca_settings(ctx: Context, prep: Prepared) -> dict[str, Any]:
    standardize = ctx.settings.pca.standardize
    return {
        "standardize": standardize,
        "preprocessing": "each benchmark z-scored across models" if standardize else "each benchmark centred",
        "model_policy": MODEL_POLICY,
        "excluded_models": incomplete_models(prep),
    }


def _variance_figure(ctx: Context, number: int, prefix: str, title: str, take_max: bool = False) -> dict:
    prep = prepare(ctx)
    matrices = common_matrices(prep, prefix)
    if take_max:
        matrices = max_with_baseline(matrices)
    standardize = ctx.settings.pca.standardize
    shown = ctx.settings.pca.n_components
    ratios = {key: explained_variance(m, standardize) for key, m in matrices.items()}
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    width = 0.8 / len(ratios)
    for i, (key, ratio) in enumerate(ratios.items()):
        k = min(shown, len(ratio))
        xs = np.arange(1, k + 1) + (i - (len(ratios) - 1) / 2) * width
        ax.bar(xs, ratio[:k], width, color=REGIME_COLOURS[i % 2], label=prep.regimes[key].label)
        for x, r in zip(xs, ratio[:k], strict=True):
            ax.text(x, r + 0.01, f"{r:.2f}", ha="center", fontsize=7)
    ax.set_xticks(range(1, shown + 1), [f"PC{i}" for i in range(1, shown + 1)])
    ax.set_ylabel("Explained variance ratio")
    ax.set_ylim(0, 1.05)
    models = list(next(iter(matrices.values())).index)
    ax.set_title(f"{title} ({len(models)} models)", fontsize=10)
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    numbers = {
        **base_numbers(ctx, prep, "figure", number),
        **_pca_settings(ctx, prep),
        "model_prefix": prefix or None,
        "max_with_baseline": take_max,
        "models": models,
        "n_models": len(models),
        "benchmarks": prep.benchmarks,
        "n_components_shown": shown,
        "pc1_share": {k: float(r[0]) for k, r in ratios.items()},
        "first_components_cumulative": {k: float(r[:shown].sum()) for k, r in ratios.items()},
        "explained_variance_ratio": {k: r.tolist() for k, r in ratios.items()},
    }
    save_figure(fig, ctx.out_dir, f"figure-{number}", numbers)
    return numbers


def pc1_by_regime(ctx: Context, prep: Prepared) -> dict[str, tuple[pd.Series, pd.Series, float]]:
    """PC1 scores, loadings and share per regime (all common models)."""
    standardize = ctx.settings.pca.standardize
    return {key: pc1(m, standardize) for key, m in common_matrices(prep).items()}


def figure_6(ctx: Context) -> dict:
    """Explained-variance ratios of the first principal components, all models."""
    return _variance_figure(ctx, 6, "", "All models")


def figure_8(ctx: Context) -> dict:
    """Explained-variance ratios for one model family (the case study: Qwen)."""
    case = ctx.settings.pca.case_study
    return _variance_figure(ctx, 8, case.model_prefix, f"{case.name} models", case.max_with_baseline)


def figure_7(ctx: Context) -> dict:
    """PC1 score against pretraining compute (models of Table 4), per regime."""
    prep = prepare(ctx)
    table = compute_table(ctx.settings.pretraining_compute)
    components = pc1_by_regime(ctx, prep)
    fig, axes = plt.subplots(1, len(components), figsize=(9.5, 3.6), sharey=False)
    panels = {}
    for ax, (i, (key, (scores, _loadings, share))) in zip(axes, enumerate(components.items()), strict=True):
        stats = correlate(scores, table)
        models = stats.get("models", [])
        if not models:
            raise InputsUnavailable(
                "no model of train_before_test.pretraining_compute.models (ids as in the results file) has "
                "PC1 scores"
            )
        ax.scatter(
            10 ** table.loc[models, "log10_flops"], scores.loc[models], color=REGIME_COLOURS[i % 2], s=22
        )
        ax.set_xscale("log")
        ax.set_xlabel("Pretraining compute (FLOPs)")
        ax.set_ylabel("PC1 score")
        r = stats["pearson_r_log10_flops"]
        ax.set_title(
            f"{prep.regimes[key].label}: r = {r:.2f}" if r is not None else prep.regimes[key].label,
            fontsize=10,
        )
        ax.grid(alpha=0.25, lw=0.5)
        panels[key] = {
            **stats,
            "pc1_share": share,
            "points": [
                {"model": m, "log10_flops": float(table.loc[m, "log10_flops"]), "pc1": float(scores.loc[m])}
                for m in models
            ],
        }
    fig.tight_layout()
    numbers = {
        **base_numbers(ctx, prep, "figure", 7),
        **_pca_settings(ctx, prep),
        "compute_source": ctx.settings.pretraining_compute.source,
        "pc1_sign": "oriented so that the PC1 loadings sum to a positive number (higher = better overall)",
        "correlation": "PC1 score vs log10 pretraining FLOPs (Pearson), and rank correlations",
        "panels": panels,
    }
    save_figure(fig, ctx.out_dir, "figure-7", numbers)
    return numbers


def figure_11(ctx: Context) -> dict:
    """PC1 score of every model, train-before-test (bars) with direct evaluation (points) for comparison."""
    prep = prepare(ctx)
    components = pc1_by_regime(ctx, prep)
    first, second = list(components)
    order = components[second][0].sort_values().index
    fig, ax = plt.subplots(figsize=(6.5, 0.16 * len(order) + 1.2))
    ys = np.arange(len(order))
    ax.barh(ys, components[second][0].loc[order], color=REGIME_COLOURS[1], label=prep.regimes[second].label)
    ax.scatter(
        components[first][0].loc[order], ys, color="black", s=10, zorder=3, label=prep.regimes[first].label
    )
    ax.set_yticks(ys, [str(m).split("/")[-1] for m in order], fontsize=6)
    ax.set_xlabel("PC1 score")
    ax.legend(frameon=False, fontsize=8, loc="lower right")
    fig.tight_layout()
    numbers = {
        **base_numbers(ctx, prep, "figure", 11),
        **_pca_settings(ctx, prep),
        "pc1_sign": "oriented so that the PC1 loadings sum to a positive number (higher = better overall)",
        "pc1_share": {k: c[2] for k, c in components.items()},
        "scores": {k: c[0].to_dict() for k, c in components.items()},
        "loadings": {k: c[1].to_dict() for k, c in components.items()},
    }
    save_figure(fig, ctx.out_dir, "figure-11", numbers)
    return numbers
