"""Ranking agreement between the 24 downstream benchmarks: Figure 2 (tau heat maps), Figure 3 (category means),
Figures 9-10 (annotated detail), and their significance-tie counterparts, Figures 12-15 (Appendix C.2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from testtask.context import Context
from testtask.outputs import save_figure, save_table
from testtask.train_before_test.agreement import (
    compare_regimes,
    kendall_matrix,
    mean_off_diagonal,
    mean_with_others,
    rounded,
)
from testtask.train_before_test.categories import category_means
from testtask.train_before_test.plotting import category_boundaries, heatmap, shared_range
from testtask.train_before_test.prepare import Prepared, base_numbers, missing_notes, model_counts, prepare
from testtask.train_before_test.ties import signs, tie_aware_matrix, z_value

MODEL_POLICY = "pairwise-complete: each pair of benchmarks uses every model scored on both (as the authors' analysis does)"
KINDS = {
    "kendall": "Kendall's tau-b of the raw scores (ties only where scores are equal)",
    "significance_ties": "Kendall's tau-b with ties where two models' scores do not differ significantly",
}


# (kind, benchmarks, tie settings) -> (the Results object they were computed from, matrices)
_TAU_CACHE: dict[tuple, tuple[object, dict[str, pd.DataFrame]]] = {}


def tau_matrices(ctx: Context, prep: Prepared, kind: str) -> dict[str, pd.DataFrame]:
    """Benchmark x benchmark tau per regime (`kind`: kendall or significance_ties), computed once per process
    for the same results and settings (Figures 2, 9 and 10 share theirs)."""
    key = (kind, tuple(prep.benchmarks), ctx.settings.ties, ctx.settings.kendall_decimals)
    cached = _TAU_CACHE.get(key)
    if cached is None or cached[0] is not prep.results:  # results re-read (file changed): recompute
        _TAU_CACHE[key] = (prep.results, _compute_tau_matrices(ctx, prep, kind))
    return _TAU_CACHE[key][1]


def _compute_tau_matrices(ctx: Context, prep: Prepared, kind: str) -> dict[str, pd.DataFrame]:
    out = {}
    for key in prep.regimes:
        if kind == "kendall":
            matrix, _ = kendall_matrix(prep.downstream(key), prep.benchmarks)
            out[key] = rounded(matrix, ctx.settings.kendall_decimals)
        elif kind == "significance_ties":
            z = z_value(ctx.settings.ties.confidence)
            rule = ctx.settings.ties.rule
            out[key] = tie_aware_matrix(prep.downstream(key), prep.stderr(key), prep.benchmarks, z, rule)
        else:
            raise ValueError(f"unknown agreement kind {kind!r}; known: {list(KINDS)}")
    return out


def _ties_settings(ctx: Context, prep: Prepared) -> dict[str, Any]:
    """The tie rule, z, and per benchmark the share of model pairs tied and of missing standard errors."""
    confidence = ctx.settings.ties.confidence
    z, rule = z_value(confidence), ctx.settings.ties.rule
    shares: dict[str, dict[str, float]] = {}
    missing_se: dict[str, int] = {}
    for key in prep.regimes:
        scores, se = prep.downstream(key), prep.stderr(key)
        shares[key] = {}
        for b in prep.benchmarks:
            models = scores[b].dropna().index
            s = signs(scores.loc[models, b].to_numpy(), se[b].reindex(models).to_numpy(), z, rule)
            shares[key][b] = float((s == 0).mean())
        missing_se[key] = int(se.reindex(scores.index).isna().to_numpy()[scores.notna().to_numpy()].sum())
    return {
        "confidence": confidence,
        "z": z,
        "rule": rule,
        "test": "|x_i - x_j| <= z * sqrt(se_i^2 + se_j^2) -> tied",
        "missing_stderr_counted_as_zero": missing_se,
        "tied_pair_share": shares,
        "mean_tied_pair_share": {k: float(pd.Series(v).mean()) for k, v in shares.items()},
    }


def _matrix_json(matrix: pd.DataFrame) -> dict[str, dict[str, float]]:
    return matrix.to_dict(orient="index")


def agreement_numbers(ctx: Context, prep: Prepared, kind: str, number: int) -> tuple[dict, dict]:
    """(JSON numbers of a Figure-2-like comparison, tau matrices)."""
    taus = tau_matrices(ctx, prep, kind)
    first, second = list(prep.regimes)
    numbers: dict[str, Any] = {
        **base_numbers(ctx, prep, "figure", number),
        "statistic": KINDS[kind],
        "model_policy": MODEL_POLICY,
        "models": model_counts(prep),
        "benchmarks": prep.benchmarks,
        "categories": {k: [b for b in v if b in prep.benchmarks] for k, v in prep.layout.categories.items()},
    }
    for key in prep.regimes:
        numbers[f"mean_kendall_{key}"] = mean_off_diagonal(taus[key])
    numbers.update(compare_regimes(taus[first], taus[second]))
    numbers["comparison"] = f"pairs where {second} agrees strictly more than {first}"
    numbers["mean_with_others"] = {k: mean_with_others(t).to_dict() for k, t in taus.items()}
    numbers["matrices"] = {k: _matrix_json(t) for k, t in taus.items()}
    if kind == "significance_ties":
        numbers["ties"] = _ties_settings(ctx, prep)
        plain = tau_matrices(ctx, prep, "kendall")
        numbers["mean_kendall_without_ties"] = {k: mean_off_diagonal(t) for k, t in plain.items()}
    return numbers, taus


def _heatmaps(ctx: Context, number: int, kind: str) -> dict:
    prep = prepare(ctx)
    numbers, taus = agreement_numbers(ctx, prep, kind, number)
    labels = [prep.layout.label(b) for b in prep.benchmarks]
    cuts = category_boundaries(prep.benchmarks, prep.layout.category_of)
    vmin, vmax = shared_range(list(taus.values()), ctx.settings.heatmap.vmax)
    fig, axes = plt.subplots(1, 2, figsize=(14.5, 6.2))
    fig.subplots_adjust(wspace=0.32)  # room for the right panel's row labels
    for ax, (key, tau) in zip(axes, taus.items(), strict=True):
        image = heatmap(ax, tau, labels, labels, vmin, vmax, ctx.settings.heatmap.cmap, separators=cuts)
        ax.set_title(f"{prep.regimes[key].label} (mean {numbers[f'mean_kendall_{key}']:.2f})")
    label = "Kendall's tau" + (" (significance ties)" if kind != "kendall" else "")
    fig.colorbar(image, ax=list(axes), shrink=0.8, label=label)
    numbers["colour_scale"] = [vmin, vmax]
    save_figure(fig, ctx.out_dir, f"figure-{number}", numbers, notes=missing_notes(prep))
    return numbers


def _category_figure(ctx: Context, number: int, kind: str) -> dict:
    prep = prepare(ctx)
    taus = tau_matrices(ctx, prep, kind)
    cats = prep.layout.categories
    means = {k: category_means(t, cats) for k, t in taus.items()}
    vmin, vmax = shared_range([m for m, _ in means.values()], ctx.settings.heatmap.vmax)
    keys, cmap = list(cats), ctx.settings.heatmap.cmap
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.4))
    for ax, (key, (mean, _)) in zip(axes, means.items(), strict=True):
        image = heatmap(ax, mean, keys, keys, vmin, vmax, cmap, annotate=True, fontsize=9)
        ax.set_title(prep.regimes[key].label)
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="mean Kendall's tau")
    counts = next(iter(means.values()))[1]  # benchmark pairs per cell: the same in both regimes
    cells = [(a, b) for i, a in enumerate(keys) for b in keys[i:]]  # each unordered pair of categories once
    rows = [
        {
            "category_a": a,
            "category_b": b,
            "kind": "intra" if a == b else "inter",
            "n_pairs": int(counts.loc[a, b]),
            **{key: mean.loc[a, b] for key, (mean, _) in means.items()},
        }
        for a, b in cells
    ]
    save_table(pd.DataFrame(rows), ctx.out_dir, f"figure-{number}", floatfmt=".3f")
    numbers = {
        **base_numbers(ctx, prep, "figure", number),
        "statistic": KINDS[kind],
        "model_policy": MODEL_POLICY,
        "categories": {k: {"name": prep.layout.category_names[k], "benchmarks": v} for k, v in cats.items()},
        "intra_category": {k: {c: m.loc[c, c] for c in keys} for k, (m, _) in means.items()},
        "matrices": {k: _matrix_json(m) for k, (m, _) in means.items()},
        "n_pairs": _matrix_json(counts),
        # Unweighted means over categories (intra) and over category pairs (inter), NaN cells left out.
        "mean_intra": {
            k: float(pd.Series([m.loc[c, c] for c in keys]).mean()) for k, (m, _) in means.items()
        },
        "mean_inter": {
            k: float(pd.Series([m.loc[a, b] for a, b in cells if a != b]).mean())
            for k, (m, _) in means.items()
        },
        "colour_scale": [vmin, vmax],
    }
    save_figure(fig, ctx.out_dir, f"figure-{number}", numbers, notes=missing_notes(prep))
    return numbers


def _detail(ctx: Context, number: int, kind: str, regime_index: int) -> dict:
    """One regime's full tau matrix, annotated (the appendix's detailed version of Figure 2 or 12)."""
    prep = prepare(ctx)
    key = list(prep.regimes)[regime_index]
    tau = tau_matrices(ctx, prep, kind)[key]
    labels = [prep.layout.label(b) for b in prep.benchmarks]
    cuts = category_boundaries(prep.benchmarks, prep.layout.category_of)
    vmin, vmax = shared_range([tau], ctx.settings.heatmap.vmax)
    cmap = ctx.settings.heatmap.cmap
    fig, ax = plt.subplots(figsize=(11, 9.5))
    image = heatmap(ax, tau, labels, labels, vmin, vmax, cmap, annotate=True, separators=cuts, fontsize=8)
    ax.set_title(f"{prep.regimes[key].label}: {KINDS[kind]}", fontsize=10)
    fig.colorbar(image, ax=ax, shrink=0.8)
    numbers = {
        **base_numbers(ctx, prep, "figure", number),
        "regime": key,
        "statistic": KINDS[kind],
        "model_policy": MODEL_POLICY,
        "benchmarks": prep.benchmarks,
        "mean_kendall": mean_off_diagonal(tau),
        "mean_with_others": mean_with_others(tau).to_dict(),
        "matrix": _matrix_json(tau),
    }
    save_figure(fig, ctx.out_dir, f"figure-{number}", numbers)
    return numbers


def _figure(number: int, draw: Callable[..., dict], *args: Any, doc: str) -> Callable[[Context], dict]:
    def build(ctx: Context) -> dict:
        return draw(ctx, number, *args)

    build.__name__ = f"figure_{number}"
    build.__doc__ = doc
    return build


TIES = "significance_ties"
figure_2 = _figure(2, _heatmaps, "kendall", doc="Kendall's tau of every benchmark pair, in both regimes.")
figure_3 = _figure(3, _category_figure, "kendall", doc="Mean tau within and between the Table 1 categories.")
figure_9 = _figure(9, _detail, "kendall", 0, doc="Figure 2's direct-evaluation matrix with every value.")
figure_10 = _figure(10, _detail, "kendall", 1, doc="Figure 2's train-before-test matrix with every value.")
# Appendix C.2: Kendall's tau-b counting non-significant differences as ties
figure_12 = _figure(12, _heatmaps, TIES, doc="Figure 2 with significance ties (Appendix C.2).")
figure_13 = _figure(13, _category_figure, TIES, doc="Figure 3 with significance ties.")
figure_14 = _figure(14, _detail, TIES, 0, doc="Figure 12's direct-evaluation matrix with every value.")
figure_15 = _figure(15, _detail, TIES, 1, doc="Figure 12's train-before-test matrix with every value.")
