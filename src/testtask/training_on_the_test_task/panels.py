"""One scatter-and-fit panel of accuracy against pretraining compute, two cohorts coloured, Eq. 1 fitted.

Most figures of the paper are grids of such panels (Figures 1, 3, 4, 5, 11-16, 18, 20); each panel's
numbers go to the figure's JSON sidecar as one record of `panels`.
"""

from __future__ import annotations

import calendar
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from testtask.lm.scores import BenchmarkSpec, Gap, excluded_records, usable
from testtask.training_on_the_test_task.regression import EmergenceFit, fit_emergence
from testtask.training_on_the_test_task.settings import Regression

# Colour-blind-safe pair (Okabe-Ito blue and vermillion): group 0 and group 1 of a panel.
COLOURS = ("#0072B2", "#D55E00")


def cutoff_words(cutoff: str) -> str:
    year, month = cutoff.split("-")
    return f"{calendar.month_name[int(month)]} {year}"


def cohort_labels(cutoff: str) -> tuple[str, str]:
    words = cutoff_words(cutoff)
    return (f"Trained before {words}", f"Trained after {words}")


def compute_axes(ax: plt.Axes, title: str, ylabel: str, **title_style: Any) -> None:
    """Log pretraining compute on x, the title and y label, a light grid."""
    ax.set_xscale("log")
    ax.set_title(title, **title_style)
    ax.set_xlabel("Pretraining compute (FLOPs)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.25, lw=0.5)


@dataclass
class Panel:
    """Data of one panel: `table` has log_compute, group (0/1), family and the score in `column`.

    Rows without a score in `column` are left out of the fit once, here: each is logged and listed in
    `excluded` (from the table's `gap_<column>`); one config does not list as absent is an error."""

    spec: BenchmarkSpec
    table: pd.DataFrame
    column: str  # before | after | adjusted | any score column
    title: str
    labels: tuple[str, str]
    adjusted: bool
    extra: dict[str, Any] = field(default_factory=dict)  # more keys for the JSON record
    excluded: list[Gap] = field(init=False, default_factory=list)
    _data: pd.DataFrame = field(init=False, repr=False)

    def __post_init__(self) -> None:
        what = f"{self.spec.key} panel {self.title!r} ({self.column})"
        self._data, self.excluded = usable(self.table, self.column, what)

    def data(self) -> pd.DataFrame:
        return self._data


def fit_panel(panel: Panel, regression: Regression) -> EmergenceFit:
    """Eq. 1 on the panel's rows, with the standard errors and c_e search of `regression`."""
    cov_type = regression.cov_type
    data = panel.data()
    return fit_emergence(
        data["log_compute"].to_numpy(),
        data[panel.column].to_numpy(),
        data["group"].to_numpy(),
        chance=panel.spec.chance,
        groups=data["family"].to_numpy() if cov_type == "cluster" else None,
        cov_type=cov_type,
        c_e_search=regression.c_e_search,
    )


def theta_text(fit: EmergenceFit, alpha_level: float) -> tuple[str, bool]:
    bold = fit.theta_p < alpha_level
    return f"θ̂ = {fit.theta:.3f} (SE {fit.theta_se:.3f})", bold


def draw_panel(ax: plt.Axes, panel: Panel, fit: EmergenceFit | None, alpha_level: float) -> None:
    """Scatter both groups, the fitted Eq. 1 curve per group over its compute range, θ̂ in the corner."""
    data = panel.data()
    for group in (0, 1):
        part = data[data["group"] == group]
        if part.empty:
            continue
        ax.scatter(
            10 ** part["log_compute"],
            part[panel.column],
            s=28,
            alpha=0.75,
            color=COLOURS[group],
            edgecolor="white",
            linewidth=0.4,
            label=panel.labels[group],
            zorder=3,
        )
        if fit is not None:
            grid = np.linspace(part["log_compute"].min(), part["log_compute"].max(), 200)
            ax.plot(10**grid, fit.predict(grid, np.full_like(grid, group)), color=COLOURS[group], lw=1.8)
    compute_axes(
        ax, panel.title, panel.spec.label if "Brier" in panel.spec.label else "Accuracy", fontsize=10
    )
    if fit is not None:
        text, bold = theta_text(fit, alpha_level)
        box = {"facecolor": "white", "alpha": 0.8, "edgecolor": "none", "pad": 1.5}
        weight = "bold" if bold else "normal"
        ax.text(0.03, 0.96, text, transform=ax.transAxes, va="top", fontsize=9, fontweight=weight, bbox=box)


def panel_record(panel: Panel, fit: EmergenceFit | None) -> dict[str, Any]:
    """The JSON record of one panel: the fit (θ̂, SE, p, α, c_e, R²) and the points behind it."""
    data = panel.data()
    record: dict[str, Any] = {
        "benchmark": panel.spec.key,
        "label": panel.spec.label,
        "metric": panel.spec.metric_key,
        "score": panel.column,
        "adjusted": panel.adjusted,
        "title": panel.title,
        "groups": list(panel.labels),
        "chance": panel.spec.chance,
        "n_models": int(len(data)),
        "n_group_1": int(data["group"].sum()),
        "excluded_models": excluded_records(panel.excluded),
        **panel.extra,
    }
    if fit is not None:
        fitted = fit.to_dict()
        record.update(
            {k: fitted[k] for k in ("theta", "theta_se", "theta_p", "alpha", "c_e", "r2")}, fit=fitted
        )
        spread = float(data[panel.column].max() - data[panel.column].min())
        # Appendix E: θ̂ relative to the gap between the best and the worst model of the panel.
        record["relative_difference"] = float(fit.theta / spread) if spread > 0 else None
    record["points"] = [
        {
            "model": row.model,
            "log10_compute": float(row.log_compute),
            "group": int(row.group),
            "value": float(getattr(row, panel.column)),
        }
        for row in data.itertuples()
    ]
    return record


def draw_grid(
    panels: Sequence[Panel],
    ncols: int,
    regression: Regression,
    size: tuple[float, float] = (4.2, 3.3),
    suptitle: str | None = None,
) -> tuple[plt.Figure, list[dict[str, Any]]]:
    """Fit and draw every panel on a grid (θ̂ in bold where significant at `regression.alpha_level`); returns the
    figure and the panels' JSON records."""
    nrows = int(np.ceil(len(panels) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), squeeze=False)
    records = []
    for ax, panel in zip(axes.flat, panels, strict=False):
        fit = fit_panel(panel, regression)
        draw_panel(ax, panel, fit, regression.alpha_level)
        records.append(panel_record(panel, fit))
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False, bbox_to_anchor=(0.5, -0.02))
    if suptitle:
        fig.suptitle(suptitle, fontsize=11)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig, records
