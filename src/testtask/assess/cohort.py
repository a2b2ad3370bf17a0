"""Paper 000's verdict for one model: Figure 1's panels with the model marked, its residual against the older
models' fit before and after the adjustment, and θ̂ of the published cohort with and without it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from testtask.assess import residuals
from testtask.context import Context
from testtask.lm.scores import BenchmarkSpec
from testtask.training_on_the_test_task.cohort_figures import cohort_table
from testtask.training_on_the_test_task.panels import Panel, cohort_labels, draw_panel, fit_panel
from testtask.training_on_the_test_task.regression import EmergenceFit, fit_emergence

COLUMNS = (("before", "before adjustment"), ("adjusted", "after adjustment"))  # Figure 1's two rows
MARK = "#009E73"  # Okabe-Ito green: neither cohort's colour


def older_fit(panel: Panel, ctx: Context) -> EmergenceFit:
    """Eq. 1 without θ on the panel's older models (group 0): the scaling a model is measured against."""
    data = panel.data()
    older = data[data["group"] == 0]
    regression = ctx.settings.regression
    return fit_emergence(
        older["log_compute"].to_numpy(),
        older[panel.column].to_numpy(),
        None,
        chance=panel.spec.chance,
        groups=older["family"].to_numpy() if regression.cov_type == "cluster" else None,
        cov_type=regression.cov_type,
        c_e_search=regression.c_e_search,
    )


def _one(
    ctx: Context, spec: BenchmarkSpec, table: pd.DataFrame, row: pd.Series, column: str, level: float
) -> tuple[Panel, EmergenceFit, EmergenceFit, dict[str, Any]]:
    """One row of Figure 1 for one benchmark: the published panel, its Eq. 1 fit, the older fit, the numbers."""
    labels = cohort_labels(ctx.settings.cutoff)
    panel = Panel(spec, table, column, spec.label, labels, column != "before")
    fit, older = fit_panel(panel, ctx.settings.regression), older_fit(panel, ctx)
    record: dict[str, Any] = {"theta_without": residuals.theta(fit), "residual": None, "theta_with": None}
    score = float(row[column])
    if np.isfinite(score):
        record["residual"] = residuals.residual(
            older, float(row["log_compute"]), score, spec.higher_is_better, level
        ).to_dict()
        joined = pd.concat([table, row.to_frame().T], ignore_index=True)
        joined = joined.astype({"log_compute": float, "group": int, column: float})
        with_model = Panel(spec, joined, column, spec.label, labels, column != "before")
        record["theta_with"] = residuals.theta(fit_panel(with_model, ctx.settings.regression))
    return panel, fit, older, record


def verdicts(ctx: Context, model: str, others: Sequence[str], level: float) -> tuple[plt.Figure, list[dict]]:
    """Figure 1's grid with `model` marked, and one record per benchmark. `others`: the user's models, left out
    of the published cohort (each is judged against the release alone)."""
    keys = ctx.settings.figure_1.benchmarks
    fig, axes = plt.subplots(2, len(keys), figsize=(4.6 * len(keys), 7.0), squeeze=False)
    records = []
    for j, key in enumerate(keys):
        spec, table = cohort_table(ctx, key)
        row = table[table["model"] == model].iloc[0]
        published = table[~table["model"].isin([*others, model])].reset_index(drop=True)
        record: dict[str, Any] = {
            "benchmark": key,
            "label": spec.label,
            "metric": spec.metric_key,
            "newer": bool(row["newer"]),
            "log10_compute": float(row["log_compute"]),
        }
        for i, (column, words) in enumerate(COLUMNS):
            panel, fit, older, numbers = _one(ctx, spec, published, row, column, level)
            record[column] = numbers
            _draw(axes[i][j], panel, fit, older, row, column, f"{spec.label} ({words})", ctx)
        before, after = record["before"]["residual"], record["adjusted"]["residual"]
        record["removed"] = (
            residuals.removed(residuals.Residual(**before), residuals.Residual(**after), level).to_dict()
            if before and after
            else None
        )
        records.append(record)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, frameon=False, bbox_to_anchor=(0.5, -0.03))
    fig.suptitle(f"{model} among the published cohort (Figure 1 of Training on the test task)", fontsize=11)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig, records


def _draw(
    ax: plt.Axes,
    panel: Panel,
    fit: EmergenceFit,
    older: EmergenceFit,
    row: pd.Series,
    column: str,
    title: str,
    ctx: Context,
) -> None:
    """Figure 1's panel, the older models' fit dashed, the model a labelled star."""
    draw_panel(ax, panel, fit, ctx.settings.regression.alpha_level)
    data = panel.data()
    grid = np.linspace(data["log_compute"].min(), data["log_compute"].max(), 200)
    ax.plot(10**grid, older.predict(grid), color="0.35", lw=1.0, ls="--", label="Older models' fit (no θ)")
    score = float(row[column])
    if np.isfinite(score):
        x = 10 ** float(row["log_compute"])
        ax.scatter(
            [x], [score], marker="*", s=220, color=MARK, edgecolor="black", zorder=5, label=row["model"]
        )
        ax.annotate(str(row["model"]), (x, score), xytext=(6, 6), textcoords="offset points", fontsize=8)
    ax.set_title(title, fontsize=10)
