"""Figures comparing models directly: gains from fine-tuning (2), families (6), Pareto frontiers (7),
MMLU rank shifts (17)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from testtask.context import Context
from testtask.errors import SettingUnusable
from testtask.lm.scores import Gap, excluded_records, usable
from testtask.outputs import save_figure
from testtask.training_on_the_test_task.cohort_figures import cohort_table
from testtask.training_on_the_test_task.inputs import SECTION
from testtask.training_on_the_test_task.panels import COLOURS, cohort_labels, compute_axes
from testtask.training_on_the_test_task.pareto import (
    compare_pareto_areas,
    pareto_frontier,
    staircase,
)
from testtask.training_on_the_test_task.ranking import rank_shifts, shift_summary
from testtask.training_on_the_test_task.settings import Settings

FAMILY_COLOURS = ("#009E73", "#CC79A7", "#E69F00", "#56B4E9")


def _base_numbers(ctx: Context, number: int) -> dict[str, Any]:
    return {"paper": ctx.paper, "figure": number, "source": ctx.source, "cutoff": _settings(ctx).cutoff}


def _settings(ctx: Context) -> Settings:
    return ctx.settings


def figure_2(ctx: Context) -> dict:
    """Gain from fine-tuning on task data (adjusted − before) against compute, by cohort."""
    keys = _settings(ctx).figure_2.benchmarks
    labels = cohort_labels(_settings(ctx).cutoff)
    fig, axes = plt.subplots(1, len(keys), figsize=(4.4 * len(keys), 3.4), squeeze=False)
    panels, excluded = [], []
    for ax, key in zip(axes.flat, keys, strict=True):
        spec, table = cohort_table(ctx, key)
        data, gaps = usable(table, "adjusted", f"figure 2 ({key})")
        excluded += gaps
        data = data.assign(gain=lambda t: t["adjusted"] - t["before"])
        record = {
            "benchmark": key,
            "label": spec.label,
            "n_models": int(len(data)),
            "excluded_models": excluded_records(gaps),
        }
        for group in (0, 1):
            part = data[data["group"] == group]
            ax.scatter(
                10 ** part["log_compute"],
                part["gain"],
                color=COLOURS[group],
                s=28,
                alpha=0.8,
                label=labels[group],
            )
            record[f"mean_gain_group_{group}"] = float(part["gain"].mean())
            record[f"median_gain_group_{group}"] = float(part["gain"].median())
        record["points"] = data[["model", "log_compute", "group", "before", "adjusted", "gain"]].to_dict(
            "records"
        )
        panels.append(record)
        ax.axhline(0, color="grey", lw=0.8)
        compute_axes(ax, spec.label, "Gain from fine-tuning (accuracy)")
    axes.flat[0].legend(frameon=False, fontsize=8)
    fig.tight_layout()
    numbers = {
        **_base_numbers(ctx, 2),
        "gain": "adjusted - before (adjusted = max(before, after))",
        "excluded_models": excluded_records(excluded),
        "panels": panels,
    }
    save_figure(fig, ctx.out_dir, "figure-2", numbers)
    return numbers


def figure_6(ctx: Context) -> dict:
    """Three model families before and after adjustment."""
    cfg = _settings(ctx).figure_6
    families = cfg.families
    keys = cfg.benchmarks
    fig, axes = plt.subplots(2, len(keys), figsize=(4.4 * len(keys), 6.6), squeeze=False)
    panels: list[dict[str, Any]] = []
    excluded: list[Gap] = []
    for col, key in enumerate(keys):
        spec, table = cohort_table(ctx, key)
        for row, column in enumerate(("before", "adjusted")):
            ax = axes[row, col]
            record: dict[str, Any] = {"benchmark": key, "adjusted": column == "adjusted", "families": {}}
            for colour, (label, prefix) in zip(FAMILY_COLOURS, families.items(), strict=False):
                members = table[table["model"].str.match(rf"^{prefix}-\d")]
                if members.empty:
                    raise SettingUnusable(
                        f"{SECTION}.figure_6.families.{label}",
                        prefix,
                        f"no model of this source is named '{prefix}-<size>' (e.g. pythia-410m for pythia)",
                        "give the family's model-name prefix",
                    )
                part, gaps = usable(members, column, f"figure 6 ({key}, {label}, {column})")
                excluded += gaps
                part = part.sort_values("compute")
                ax.plot(10 ** part["log_compute"], part[column], "o-", color=colour, label=label, ms=5)
                slope = float("nan")
                if len(part) >= 2:
                    slope = float(np.polyfit(part["log_compute"], part[column], 1)[0])
                record["families"][label] = {
                    "models": list(part["model"]),
                    "values": [float(v) for v in part[column]],
                    "log10_compute": [float(v) for v in part["log_compute"]],
                    "log_linear_slope": slope,
                    "excluded_models": excluded_records(gaps),
                }
            ax.axhline(spec.chance, color="grey", lw=0.8, ls=":")
            compute_axes(ax, f"{spec.label}{' (adjusted)' if column == 'adjusted' else ''}", "Accuracy")
            panels.append(record)
    axes[0, 0].legend(frameon=False, fontsize=8)
    fig.tight_layout()
    numbers = {**_base_numbers(ctx, 6), "excluded_models": excluded_records(excluded), "panels": panels}
    save_figure(fig, ctx.out_dir, "figure-6", numbers)
    return numbers


def figure_7(ctx: Context) -> dict:
    """Pareto frontiers (older models; all models) and the area of improvement, before and after adjustment."""
    keys = _settings(ctx).figure_7.benchmarks
    labels = cohort_labels(_settings(ctx).cutoff)
    fig, axes = plt.subplots(2, len(keys), figsize=(4.4 * len(keys), 6.6), squeeze=False)
    panels, comparisons, excluded = [], {}, []
    for col, key in enumerate(keys):
        spec, table = cohort_table(ctx, key)
        data, gaps = usable(table, "adjusted", f"figure 7 ({key})")
        excluded += gaps
        # `adjusted` already applies the configured use_max choice
        comparison = compare_pareto_areas(
            data["log_compute"],
            data["before"],
            data["adjusted"],
            data["group"].to_numpy() == 0,
            use_max=False,
        )
        comparisons[key] = comparison.to_dict()
        areas = {"before": comparison.area_unadjusted, "adjusted": comparison.area_adjusted}
        for row, column in enumerate(("before", "adjusted")):
            ax = axes[row, col]
            old = data[data["group"] == 0]
            area = areas[column]
            fx_all, fy_all = pareto_frontier(data["log_compute"], data[column])
            fx_old, fy_old = pareto_frontier(old["log_compute"], old[column])
            older = f"Frontier, {labels[0][0].lower()}{labels[0][1:]}"
            ax.step(10**fx_all, fy_all, where="post", color=COLOURS[1], lw=1.6, label="Frontier, all models")
            ax.step(10**fx_old, fy_old, where="post", color=COLOURS[0], lw=1.6, label=older)
            grid = np.linspace(min(fx_all.min(), fx_old.min()), max(fx_all.max(), fx_old.max()), 800)
            top = staircase(fx_all, fy_all, grid, np.nan)
            bottom = staircase(fx_old, fy_old, grid, np.nan)
            ax.fill_between(
                10**grid,
                bottom,
                top,
                where=top > bottom,
                color="#009E73",
                alpha=0.35,
                label="Area of improvement",
            )
            for group in (0, 1):
                part = data[data["group"] == group]
                ax.scatter(
                    10 ** part["log_compute"], part[column], s=18, color=COLOURS[group], alpha=0.6, zorder=3
                )
            title = f"{spec.label}{' (adjusted)' if column == 'adjusted' else ''}: area {area:.4f}"
            compute_axes(ax, title, "Accuracy")
            panels.append(
                {
                    "benchmark": key,
                    "adjusted": column == "adjusted",
                    "area": area,
                    "frontier_all": {"log10_compute": fx_all.tolist(), "accuracy": fy_all.tolist()},
                    "frontier_older": {"log10_compute": fx_old.tolist(), "accuracy": fy_old.tolist()},
                    "n_models": int(len(data)),
                    "excluded_models": excluded_records(gaps),
                }
            )
    axes[0, 0].legend(frameon=False, fontsize=7)
    fig.tight_layout()
    numbers = {
        **_base_numbers(ctx, 7),
        "area_units": "accuracy x decades of compute (log10 FLOPs)",
        "comparisons": comparisons,
        "excluded_models": excluded_records(excluded),
        "panels": panels,
    }
    save_figure(fig, ctx.out_dir, "figure-7", numbers)
    return numbers


def figure_17(ctx: Context) -> dict:
    """MMLU ranks before and after adjustment, one line per model."""
    key = _settings(ctx).figure_17.benchmark
    spec, table = cohort_table(ctx, key)
    data, gaps = usable(table, "adjusted", f"figure 17 ({key})")
    # `adjusted` already applies the configured use_max choice
    shifts = rank_shifts(
        data["model"].tolist(), data["before"].to_numpy(), data["adjusted"].to_numpy(), use_max=False
    )
    summary = shift_summary(shifts)
    newer = dict(zip(data["model"], data["group"], strict=True))
    fig, ax = plt.subplots(figsize=(5.2, 9.5))
    for row in shifts.itertuples():
        colour = COLOURS[int(newer[row.name])]
        ax.plot([0, 1], [row.rank_direct, row.rank_adjusted], "-o", color=colour, ms=3.5, lw=1, alpha=0.8)
        ax.text(-0.03, row.rank_direct, row.name, ha="right", va="center", fontsize=6.5)
        ax.text(1.03, row.rank_adjusted, row.name, ha="left", va="center", fontsize=6.5)
    ax.set_xlim(-0.6, 1.6)
    ax.invert_yaxis()
    ax.set_xticks([0, 1], ["Direct evaluation", "After fine-tuning on the test task"])
    ax.set_yticks([])
    ax.set_title(
        f"{spec.label} ranks: mean shift {summary['mean_shift']:.1f}, max {summary['max_shift']:.0f}",
        fontsize=10,
    )
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    numbers = {
        **_base_numbers(ctx, 17),
        "benchmark": key,
        **summary,
        "excluded_models": excluded_records(gaps),
        "ranks": shifts.to_dict("records"),
    }
    save_figure(fig, ctx.out_dir, "figure-17", numbers)
    return numbers
