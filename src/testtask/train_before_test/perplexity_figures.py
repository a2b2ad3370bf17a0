"""Perplexity agreement: Figure 4 (perplexity vs downstream rankings within each regime) and Figure 5 (perplexity
before fine-tuning vs downstream after it, base and instruction-tuned models apart)."""

from __future__ import annotations

import logging
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from testtask.context import Context, InputsUnavailable
from testtask.outputs import save_figure
from testtask.train_before_test.layout import present_corpora
from testtask.train_before_test.perplexity import agreement, keep_models, oriented, split_by_tuning
from testtask.train_before_test.plotting import heatmap, shared_range
from testtask.train_before_test.prepare import Prepared, base_numbers, prepare

log = logging.getLogger(__name__)

MODEL_POLICY = (
    "pairwise-complete over the models not excluded from perplexity: each (corpus, benchmark) pair uses every "
    "model with both values; the mean-vs-mean tau uses models with every corpus and every benchmark"
)


def _frames(ctx: Context, prep: Prepared, regime: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(corpora oriented higher = better, downstream scores), without the excluded models."""
    corpora = present_corpora(prep.results, prep.layout)
    exclude = list(ctx.settings.perplexity.exclude_model_prefixes)
    ppl = oriented(prep.results.scores[regime][corpora], prep.layout.corpora_higher_is_better)
    ppl = keep_models(ppl.dropna(how="all"), exclude)
    down = keep_models(prep.downstream(regime), exclude)
    return ppl, down


def models_without_perplexity(ctx: Context, prep: Prepared) -> dict[str, Any]:
    """Models of the file with no value on any present corpus (left out of every perplexity tau), per regime,
    logged; on the release these are the Gemma models, which `exclude_model_prefixes` drops anyway."""
    corpora = present_corpora(prep.results, prep.layout)
    exclude = list(ctx.settings.perplexity.exclude_model_prefixes)
    out: dict[str, Any] = {}
    for key in prep.regimes:
        frame = prep.results.scores[key][corpora]
        lacking = sorted(str(m) for m in frame.index[frame.isna().all(axis=1)])
        unexpected = [m for m in lacking if not any(m.startswith(p) for p in exclude)]
        out[key] = {"count": len(lacking), "models": lacking, "not_excluded_by_prefix": unexpected}
        if lacking:
            log.warning(
                "%s [%s]: %d model(s) have no perplexity value and are left out of Figures 4-5: %s%s",
                prep.results.path,
                key,
                len(lacking),
                ", ".join(lacking),
                f" (not covered by exclude_model_prefixes: {', '.join(unexpected)})" if unexpected else "",
            )
    return out


def _settings(ctx: Context, prep: Prepared, ppl: pd.DataFrame) -> dict[str, Any]:
    return {
        "corpora": list(ppl.columns),
        "corpus_metric": "bits per byte, "
        + ("higher" if prep.layout.corpora_higher_is_better else "lower")
        + " is better (oriented before tau)",
        "excluded_model_prefixes": list(ctx.settings.perplexity.exclude_model_prefixes),
        "models_without_perplexity": models_without_perplexity(ctx, prep),
        "model_policy": MODEL_POLICY,
        "benchmarks": prep.benchmarks,
    }


def _summary(result: dict) -> dict[str, Any]:
    return {
        "mean_tau_between_corpora": result["mean_tau_between_corpora"],
        "mean_tau_with_downstream": result["mean_tau_with_downstream"],
        "tau_mean_perplexity_vs_mean_downstream": result["tau_mean_perplexity_vs_mean_downstream"],
        "n_models_means": result["n_models_means"],
        "n_models_range": [
            int(result["n_models"].to_numpy().min()),
            int(result["n_models"].to_numpy().max()),
        ],
        "tau_between_corpora": result["tau_between_corpora"].to_dict(orient="index"),
        "tau_with_downstream": result["tau_with_downstream"].to_dict(orient="index"),
    }


def figure_4(ctx: Context) -> dict:
    """Tau of each perplexity corpus with the other corpora and the 24 benchmarks, per regime."""
    prep = prepare(ctx)
    panels, matrices = {}, {}
    for key in prep.regimes:
        ppl, down = _frames(ctx, prep, key)
        result = agreement(ppl, down, ctx.settings.kendall_decimals)
        panels[key] = _summary(result)
        matrices[key] = pd.concat([result["tau_between_corpora"], result["tau_with_downstream"]], axis=1)
    vmin, vmax = shared_range(list(matrices.values()), ctx.settings.heatmap.vmax)
    fig, axes = plt.subplots(2, 1, figsize=(12, 5.4))
    for ax, (key, matrix) in zip(axes, matrices.items(), strict=True):
        rows = [prep.layout.label(c) for c in matrix.index]
        cols = [prep.layout.label(c) for c in matrix.columns]
        cmap = ctx.settings.heatmap.cmap
        image = heatmap(ax, matrix, rows, cols, vmin, vmax, cmap, annotate=True, separators=[len(rows)])
        ax.tick_params(labelbottom=ax is axes[-1])  # both panels share their columns
        p = panels[key]
        ax.set_title(
            f"{prep.regimes[key].label}: perplexity-perplexity {p['mean_tau_between_corpora']:.2f}, "
            f"perplexity-downstream {p['mean_tau_with_downstream']:.2f}",
            fontsize=9,
        )
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="Kendall's tau")
    numbers = {
        **base_numbers(ctx, prep, "figure", 4),
        **_settings(ctx, prep, ppl),
        "panels": panels,
        "colour_scale": [vmin, vmax],
    }
    save_figure(fig, ctx.out_dir, "figure-4", numbers)
    return numbers


def figure_5(ctx: Context) -> dict:
    """Perplexity before fine-tuning (first regime) vs downstream after it (second), base and
    instruction-tuned models apart."""
    prep = prepare(ctx)
    before, after = list(prep.regimes)
    frames = {key: _frames(ctx, prep, key) for key in prep.regimes}
    ppl, down = frames[before][0], frames[after][1]
    suffixes = list(ctx.settings.instruction_tuned_suffixes)
    groups = split_by_tuning(list(ppl.index), suffixes)
    panels, matrices = {}, {}
    for group, models in groups.items():
        if len(models) < 3:
            raise InputsUnavailable(
                f"only {len(models)} {group} models have perplexity scores (instruction-tuned: an id ending in "
                f"one of train_before_test.instruction_tuned_suffixes, {', '.join(suffixes)}); the split needs 3"
            )
        result = agreement(ppl.loc[models], down.reindex(models), ctx.settings.kendall_decimals)
        panels[group] = {"models": models, **_summary(result)}
        # The same split within each regime, for reference.
        panels[group]["same_regime_mean_tau_with_downstream"] = {
            key: agreement(p.reindex(models), d.reindex(models), ctx.settings.kendall_decimals)[
                "mean_tau_with_downstream"
            ]
            for key, (p, d) in frames.items()
        }
        matrices[group] = result["tau_with_downstream"]
    vmin, vmax = shared_range(list(matrices.values()), ctx.settings.heatmap.vmax)
    fig, axes = plt.subplots(2, 1, figsize=(11, 4.6))
    for ax, (group, matrix) in zip(axes, matrices.items(), strict=True):
        rows = [prep.layout.label(c) for c in matrix.index]
        cols = [prep.layout.label(c) for c in matrix.columns]
        image = heatmap(ax, matrix, rows, cols, vmin, vmax, ctx.settings.heatmap.cmap, annotate=True)
        ax.tick_params(labelbottom=ax is axes[-1])  # both panels share their columns
        name = group.replace("_", "-")
        ax.set_title(
            f"{name} models ({len(groups[group])}): mean {panels[group]['mean_tau_with_downstream']:.2f}",
            fontsize=9,
        )
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="Kendall's tau")
    numbers = {
        **base_numbers(ctx, prep, "figure", 5),
        **_settings(ctx, prep, ppl),
        "perplexity_regime": before,
        "downstream_regime": after,
        "instruction_tuned_suffixes": list(ctx.settings.instruction_tuned_suffixes),
        "panels": panels,
        "colour_scale": [vmin, vmax],
    }
    save_figure(fig, ctx.out_dir, "figure-5", numbers)
    return numbers
