"""Figures 2–4: distributions of per-sample score–compute correlations and their statistics.

- Figure 2: for one benchmark, quantity (log p_vocab) and correlation (Spearman): the distribution over samples
  of the correlations (left) and its complementary CDF (right); top row schematic distributions, bottom row data.
- Figure 3: the complementary CDFs along the chain (A log p_vocab, B p_choices, C Brier, D accuracy).
- Figure 4: the four statistics of every (family, benchmark, quantity), one column per correlation method (the
  paper's Figure 4 and Appendix Figures 7–9), and whether the paper's ordering of the quantities holds.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import beta

from testtask.context import Context
from testtask.downstream_predictability.analysis import analyse
from testtask.downstream_predictability.chain import LABELS
from testtask.downstream_predictability.figure_common import (
    MARKERS,
    ccdf_grid,
    family_colours,
    fixed_layout,
    focus_task,
    header,
    missing_notes,
    step_ccdf,
)
from testtask.downstream_predictability.settings import Comparison, Settings
from testtask.downstream_predictability.statistics import STATISTIC_LABELS, STATISTICS, ccdf
from testtask.outputs import save_figure


def _distribution(result: Any, grid: np.ndarray, bins: int) -> dict[str, Any]:
    counts, edges = np.histogram(result.usable, bins=bins, range=(-1.0, 1.0))
    n = max(result.usable.size, 1)
    return {
        "summary": result.summary,
        "histogram": {"edges": edges, "percent": 100.0 * counts / n},
        "ccdf": {"grid": grid, "values": ccdf(result.usable, grid)},
    }


def figure_2(ctx: Context) -> dict[str, Any]:
    settings: Settings = ctx.settings
    fig2 = settings.figure_2
    analysis = analyse(ctx)
    grid = ccdf_grid(settings.grid_points)
    method, quantity, bins = settings.focus.method, fig2.quantity, fig2.bins
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    schematic = []
    c = np.linspace(-1.0, 1.0, 401)
    for spec in fig2.schematic:
        a, b = spec.a, spec.b
        density = beta.pdf((c + 1.0) / 2.0, a, b) / 2.0  # Beta on [0, 1] stretched onto [-1, 1]
        survival = beta.sf((c + 1.0) / 2.0, a, b)
        axes[0, 0].plot(c, density, label=spec.label)
        axes[0, 1].plot(c, survival, label=spec.label)
        mean = 2.0 * a / (a + b) - 1.0
        schematic.append({"label": spec.label, "a": a, "b": b, "mean": mean, "auc_ccdf": mean + 1.0})
    axes[0, 0].set_ylabel("density (schematic)")
    axes[0, 1].set_ylabel("1 − CDF")
    axes[0, 0].legend(frameon=False, fontsize=8)
    panels = {}
    for colour, data in zip(family_colours(len(analysis.families)), analysis.families, strict=True):
        name = data.family.name
        task = focus_task(data, settings.focus.task)
        result = analysis.result(name, task, quantity, method)
        panels[name] = {"task": task, **_distribution(result, grid, bins)}
        hist = panels[name]["histogram"]
        centres = (hist["edges"][:-1] + hist["edges"][1:]) / 2
        width = 2.0 / bins / max(len(analysis.families), 1)
        offset = (list(panels).index(name) - (len(analysis.families) - 1) / 2) * width
        label = f"{data.family.label} ({task})"
        axes[1, 0].bar(centres + offset, hist["percent"], width=width, color=colour, label=label)
        step_ccdf(axes[1, 1], result.usable, color=colour, label=data.family.label)
    axes[1, 0].set_ylabel("% of samples")
    axes[1, 1].set_ylabel("1 − CDF")
    axes[1, 0].legend(frameon=False, fontsize=7)
    for ax in axes.ravel():
        ax.set_xlim(-1.05, 1.05)
        ax.grid(alpha=0.3, lw=0.5)
    for ax in axes[1]:
        ax.set_xlabel(f"per-sample {method} correlation between FLOPs and {LABELS[quantity]}")
    fig.suptitle(f"Distributions of score–compute correlations ({LABELS[quantity]}, {method})")
    fixed_layout(fig, left=0.7, right=0.2, top=0.5, bottom=0.6, hspace=0.25, wspace=0.2)
    numbers = header(ctx, analysis, 2) | {
        "quantity": quantity,
        "method": method,
        "schematic": schematic,
        "panels": panels,
    }
    save_figure(fig, ctx.out_dir, "figure-2", numbers, notes=missing_notes(analysis))
    return numbers


def figure_3(ctx: Context) -> dict[str, Any]:
    settings: Settings = ctx.settings
    analysis = analyse(ctx)
    grid = ccdf_grid(settings.grid_points)
    method = settings.focus.method
    quantities = list(settings.figure_3.quantities)
    fig, axes = plt.subplots(1, len(quantities), figsize=(3.6 * len(quantities), 4.3), sharey=True)
    axes = np.atleast_1d(axes)
    panels: dict[str, dict[str, Any]] = {q: {} for q in [*quantities, "p_vocab"]}
    for colour, data in zip(family_colours(len(analysis.families)), analysis.families, strict=True):
        name = data.family.name
        task = focus_task(data, settings.focus.task)
        for letter, (ax, quantity) in zip("ABCDEFGH", zip(axes, quantities, strict=True), strict=False):
            result = analysis.result(name, task, quantity, method)
            panels[quantity][name] = {"task": task, "panel": letter, **_distribution(result, grid, 20)}
            step_ccdf(ax, result.usable, color=colour, label=data.family.label)
            ax.set_title(f"{letter}  {LABELS[quantity]}", fontsize=10)
            if quantity == "log_p_vocab":  # Eq. 2 is monotone: rank correlations of p_vocab are identical
                vocab = analysis.result(name, task, "p_vocab", method)
                panels["p_vocab"][name] = {"task": task, "panel": letter, **_distribution(vocab, grid, 20)}
                step_ccdf(
                    ax, vocab.usable, color=colour, ls="--", lw=0.9, label=f"{data.family.label}: p_vocab"
                )
    for ax in axes:
        ax.set_xlim(-1.05, 1.05)
        ax.set_xlabel(f"per-sample {method} correlation")
        ax.grid(alpha=0.3, lw=0.5)
    axes[0].set_ylabel("1 − CDF (fraction of samples above)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=2, frameon=False, fontsize=8)
    fig.suptitle("Complementary CDFs of score–compute correlations along the chain")
    fixed_layout(fig, left=0.7, right=0.2, top=0.6, bottom=1.3, wspace=0.08)
    numbers = header(ctx, analysis, 3) | {"method": method, "quantities": quantities, "panels": panels}
    save_figure(fig, ctx.out_dir, "figure-3", numbers, notes=missing_notes(analysis))
    return numbers


def _compare(x: float, op: Comparison, y: float, tolerance: float) -> bool:
    """`x op y` where values within `tolerance` count as equal (a correlation of 1 computed two ways may differ
    in the last digits): `>=` holds for them, `>` does not."""
    if op == Comparison.at_least:
        return x >= y - tolerance
    if op == Comparison.above:
        return x > y + tolerance
    raise ValueError(f"ordering operator must be > or >=, got {op!r}")


def ordering_checks(table: list[dict[str, Any]], ordering: list, tolerance: float) -> dict[str, Any]:
    """For each consecutive pair of the paper's ordering, in how many (family, task, method, statistic) it holds."""
    index = {(r["family"], r["task"], r["method"], r["quantity"]): r for r in table}
    keys = sorted({(r["family"], r["task"], r["method"]) for r in table})
    out = {}
    for left, op, right in ordering:
        holds, total, rows = 0, 0, []
        for family, task, method in keys:
            a, b = index.get((family, task, method, left)), index.get((family, task, method, right))
            if a is None or b is None:
                continue
            for stat in STATISTICS:
                x, y = a[stat], b[stat]
                if x is None or y is None or np.isnan(x) or np.isnan(y):
                    continue
                ok = _compare(float(x), op, float(y), tolerance)
                holds += ok
                total += 1
                rows.append(
                    {"family": family, "task": task, "method": method, "statistic": stat, "holds": ok}
                )
        out[f"{left} {op} {right}"] = {"n_holds": holds, "n": total, "cases": rows}
    return out


def figure_4(ctx: Context) -> dict[str, Any]:
    fig4 = ctx.settings.figure_4
    analysis = analyse(ctx)
    quantities = list(fig4.quantities)
    methods = analysis.settings["methods"]
    tasks = analysis.tasks()
    table = [
        {"family": r.family, "task": r.task, "quantity": r.quantity, "method": r.method, **r.summary}
        for r in analysis.results
        if r.quantity in quantities
    ]
    fig, axes = plt.subplots(
        len(STATISTICS),
        len(methods),
        figsize=(4.2 * len(methods) + 1.5, 2.4 * len(STATISTICS) + 1.2),
        sharex=True,
        squeeze=False,
    )
    colours = dict(
        zip(quantities, plt.get_cmap("viridis")(np.linspace(0.05, 0.9, len(quantities))), strict=True)
    )
    families = [f.family.name for f in analysis.families]
    index = {(r["family"], r["task"], r["quantity"], r["method"]): r for r in table}
    x = np.arange(len(tasks))
    for col, method in enumerate(methods):
        for row, stat in enumerate(STATISTICS):
            ax = axes[row, col]
            for qi, quantity in enumerate(quantities):
                for fi, family in enumerate(families):
                    ys = [index.get((family, t, quantity, method), {}).get(stat, np.nan) for t in tasks]
                    offset = (qi - (len(quantities) - 1) / 2) * 0.12
                    label = LABELS[quantity] + (f" · {family}" if len(families) > 1 else "")
                    marker = MARKERS[fi % len(MARKERS)]
                    ax.scatter(x + offset, ys, color=colours[quantity], marker=marker, s=16, label=label)
            ax.grid(alpha=0.3, lw=0.5)
            if row == 0:
                ax.set_title(f"{method} correlations", fontsize=10)
            if col == 0:
                ax.set_ylabel(STATISTIC_LABELS[stat], fontsize=8)
    for ax in axes[-1]:
        ax.set_xticks(x, tasks, rotation=60, ha="right", fontsize=7)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 5), frameon=False, fontsize=8)
    fig.suptitle("Statistics of score–compute correlation distributions by benchmark and metric")
    fixed_layout(fig, left=0.8, right=0.15, top=0.7, bottom=2.7, hspace=0.12, wspace=0.18)
    means = {}
    for family in families:
        for method in methods:
            for quantity in quantities:
                rows = [
                    r
                    for r in table
                    if (r["family"], r["method"], r["quantity"]) == (family, method, quantity)
                ]
                means[f"{family}|{method}|{quantity}"] = {
                    stat: float(np.nanmean([np.nan if r[stat] is None else r[stat] for r in rows]))
                    for stat in STATISTICS
                } | {
                    "n_undefined": int(sum(r["n_undefined"] for r in rows)),
                    "n_samples": int(sum(r["n_samples"] for r in rows)),
                }
    numbers = header(ctx, analysis, 4) | {
        "statistics": list(STATISTICS),
        "quantities": quantities,
        "tasks": tasks,
        "rows": table,
        "mean_over_tasks": means,
        "ordering_tolerance": fig4.tolerance,
        "ordering": ordering_checks(table, [list(o) for o in fig4.ordering], fig4.tolerance),
    }
    save_figure(fig, ctx.out_dir, "figure-4", numbers, notes=missing_notes(analysis))
    return numbers
