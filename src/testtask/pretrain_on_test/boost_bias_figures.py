"""The posterior distributions of the boost and the bias: Figures 3 (few-shot, §7), 4 (task-level bias, eq. 12),
5 (GPT-2 pretrained for 2 epochs, §8) and 6 (zero-shot Mistral-7B, §9)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from testtask import schema
from testtask.context import Context, InputsUnavailable
from testtask.outputs import save_figure
from testtask.pretrain_on_test import predictive
from testtask.pretrain_on_test.fits import plain
from testtask.pretrain_on_test.inputs import (
    ACCURACY_DIFFERENCE,
    LOG_ODDS,
    lm_label,
    lm_names,
    missing_paper_m,
)
from testtask.pretrain_on_test.permutation import paired_differences
from testtask.pretrain_on_test.posterior_panels import fit_collection, fit_record, posterior_collection
from testtask.pretrain_on_test.settings import LmTypeFit
from testtask.signs import sign

EFFECT_LABEL = {"boost": "pretraining boost (extra − base)", "bias": "evaluation bias (test − extra)"}
COLORS = {"boost": "tab:blue", "bias": "tab:orange"}
UNITS = {  # of the panels' numbers (Figures 3, 5, 6)
    "average_difference": ACCURACY_DIFFERENCE,
    "raw_mean_difference": ACCURACY_DIFFERENCE,
    "beta": LOG_ODDS,
    "sigmas": LOG_ODDS,
}


def lm_types_read(results: list[dict]) -> list[str]:
    """The LM types the fits of `results` read, sorted (what titles and legends name)."""
    return sorted({str(lm) for r in results for lm in r["panel"]["lm_types"]})


def fitted_how(results: list[dict], fit: str) -> str:
    """How the fits of `results` took the LM types they read: "pooled", "side by side", or "" for one LM type."""
    if len(lm_types_read(results)) < 2:
        return ""
    return "pooled" if fit == LmTypeFit.pooled else "side by side"


def how_read(results: list[dict], fit: str) -> str:
    """The LM types read and how they were fitted, as a title says it: "BERT and GPT-2 pooled"."""
    return " ".join(part for part in (lm_names(lm_types_read(results)), fitted_how(results, fit)) if part)


def lm_colors(lm_types: list[str]) -> dict[str, str]:
    """A colour per LM type of a side-by-side figure, in the order given."""
    palette = plt.get_cmap("tab10").colors
    return {lm: palette[i % len(palette)] for i, lm in enumerate(lm_types)}


def _violins(ax: plt.Axes, draws: list, positions: Any, width: float, color: str, alpha: float) -> None:
    parts = ax.violinplot(
        draws, positions=positions, orientation="horizontal", showextrema=False, widths=width
    )
    for body in parts["bodies"]:
        body.set_facecolor(color)
        body.set_alpha(alpha)


def _violin_panel(ax: plt.Axes, results: list[dict], effect: str, title: str, every: list[str]) -> None:
    """One violin per fit of `effect` (one per n: the LM types pooled); a fit that read fewer LM types than the
    figure (`every`) names its own under its n."""
    chosen = [r for r in results if r["panel"]["effect"] == effect]
    positions = np.arange(len(chosen))
    draws = [100 * r["predictive"].average for r in chosen]
    if draws:
        _violins(ax, draws, positions, 0.8, COLORS[effect], 0.45)
    _intervals(ax, positions, chosen, effect, title)
    labels = [
        f"n = {r['panel']['n']}"
        + (f"\n({lm_names(r['panel']['lm_types'])})" if sorted(r["panel"]["lm_types"]) != every else "")
        for r in chosen
    ]
    ax.set_yticks(positions, labels)


def _intervals(ax: plt.Axes, positions: np.ndarray, chosen: list[dict], effect: str, title: str) -> None:
    """Each fit's 89% HDI (bar), posterior mean (dot) and observed mean (x) at its position; the axes' labels."""
    for pos, r in zip(positions, chosen, strict=True):
        lo, hi = r["panel"]["average_difference"]["hdi_89"]
        ax.hlines(pos, 100 * lo, 100 * hi, color="k", lw=2)
        ax.plot(100 * r["panel"]["average_difference"]["mean"], pos, "ko", ms=4)
        ax.plot(100 * r["panel"]["raw_mean_difference"], pos, "x", color="tab:red", ms=6)
    ax.axvline(0, color="grey", lw=1, ls="--")
    ax.set_xlabel(f"{EFFECT_LABEL[effect]}, accuracy points")
    ax.set_title(title)


def _side_by_side_panel(
    ax: plt.Axes, results: list[dict], effect: str, title: str, colors: dict[str, str]
) -> None:
    """Per n, one violin per LM type's own fit, side by side in the LM types' colours."""
    chosen = [r for r in results if r["panel"]["effect"] == effect]
    ns = sorted({r["panel"]["n"] for r in chosen})
    width = 0.8 / max(1, len(colors))
    offset = {lm: (i - (len(colors) - 1) / 2) * width for i, lm in enumerate(colors)}
    positions = np.array(
        [ns.index(r["panel"]["n"]) + offset[r["panel"]["lm_types"][0]] for r in chosen], dtype=float
    )
    for pos, r in zip(positions, chosen, strict=True):
        _violins(ax, [100 * r["predictive"].average], [pos], width, colors[r["panel"]["lm_types"][0]], 0.55)
    _intervals(ax, positions, chosen, effect, title)
    ax.set_yticks(np.arange(len(ns)), [f"n = {n}" for n in ns])


def average_difference_figure(
    results: list[dict], suptitle: str, by: str = "m", fit: str = LmTypeFit.pooled
) -> plt.Figure:
    """Rows: effects; columns: one per value of `by` (m, or a variant label). `fit = side_by_side`: each panel
    shows every LM type's own fit per n, with a legend of the LM types read."""
    effects = list(dict.fromkeys(r["panel"]["effect"] for r in results))
    columns = list(dict.fromkeys(r["panel"][by] for r in results))
    side_by_side = fit == LmTypeFit.side_by_side
    height = 2.0 + 1.1 * len(results) / max(1, len(columns) * len(effects)) * len(effects)
    if side_by_side:  # a row per n, however many LM types share it
        rows = max(len({r["panel"]["n"] for r in results if r["panel"][by] == value}) for value in columns)
        height = 2.0 + 1.1 * rows * len(effects)
    fig, axes = plt.subplots(len(effects), len(columns), figsize=(5.2 * len(columns), height), squeeze=False)
    every = lm_types_read(results)
    colors = lm_colors(every)
    for row, effect in enumerate(effects):
        for col, value in enumerate(columns):
            subset = [r for r in results if r["panel"][by] == value]
            label = f"m = {value}" if by == "m" else str(value)
            title = f"{label}: {effect}"
            own = lm_types_read(subset)
            if own != every:  # a column that read fewer LM types than the figure says which
                title += f" ({lm_names(own)})"
            if side_by_side:
                _side_by_side_panel(axes[row, col], subset, effect, title, colors)
            else:
                _violin_panel(axes[row, col], subset, effect, title, every)
    if side_by_side:
        # top to bottom as the violins of an n stand; outside the panels, which it would cover
        handles = [Patch(facecolor=colors[lm], alpha=0.55, label=lm_label(lm)) for lm in reversed(every)]
        axes[0, -1].legend(
            handles=handles, title="LM type", fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1)
        )
    fig.suptitle(
        suptitle + "\n(violin: eq. 11 posterior predictive; bar: 89% HDI; x: observed mean)", fontsize=10
    )
    fig.tight_layout()
    return fig


def _sidecar(ctx: Context, results: list[dict], started: float, title: str, **extra: Any) -> dict:
    return {
        "paper": ctx.paper,
        "source": ctx.source,
        "sampler": plain(ctx.sampler),
        "model": dataclasses.asdict(ctx.settings.model),
        "panels": [r["panel"] for r in results],
        "total_seconds": time.perf_counter() - started,
        **extra,
        # what the figure read and how (`pretrain_on_test.lm_types`), and the title written from it
        "lm_types_read": lm_types_read(results),
        "lm_types_setting": schema.to_plain(ctx.settings.lm_types),
        "title": title,
        "units": UNITS,
    }


def figure_3(ctx: Context) -> dict:
    """Eq. 11 distributions of the boost and the bias for every (m, n): the LM types read
    (`pretrain_on_test.lm_types.read`) pooled in one fit per panel, or fitted and drawn side by side."""
    started = time.perf_counter()
    fit = ctx.settings.lm_types.fit
    results = fit_collection(ctx, "few_shot")
    title = f"Figure 3: average accuracy differences ({how_read(results, fit)})"
    fig = average_difference_figure(results, title, fit=fit)
    absent = missing_paper_m(r["panel"]["m"] for r in results)
    notes = [f"m = {m} not in the data: its panels are absent" for m in absent]
    numbers = _sidecar(ctx, results, started, title, **({"missing": notes} if notes else {}))
    save_figure(fig, ctx.out_dir, "figure-3", numbers, notes=notes)
    return numbers


def reached_threshold(data: pd.DataFrame, threshold: float, strict: bool) -> pd.DataFrame:
    """The (m, n, LM type, task) cells whose observed average bias exceeds `threshold` (`strict`, the authors' `>`)
    or reaches it (≥, the text's "at least"), as the authors pick Figure 4's tasks (analysis/dataset_level.ipynb:
    `accuracies_grouped.filter(evaluation_bias_mean > big_bias)`); within the zero rule's tolerance counts as equal."""
    frame = data[["m", "n", "lm_type", "dataset"]].copy()
    frame["bias"] = paired_differences(data, "bias").to_numpy()
    means = frame.groupby(["m", "n", "lm_type", "dataset"], as_index=False)["bias"].mean()
    above = np.array([sign(v - threshold) for v in means["bias"]])
    return means[above > 0 if strict else above >= 0].reset_index(drop=True)


def figure_4(ctx: Context) -> dict:
    """Eq. 12 per-task bias distributions of the tasks, and LM types, whose observed average bias reached the
    threshold in some configuration (the authors' selection: `reached_threshold`)."""
    started = time.perf_counter()
    settings = ctx.settings.figure_4
    threshold = settings.threshold
    reached = reached_threshold(posterior_collection(ctx, "few_shot"), threshold, settings.strict)
    selected = sorted(reached["dataset"].unique())
    selected_lm_types = sorted(reached["lm_type"].unique())
    results = fit_collection(ctx, "few_shot", effects=["bias"])
    rows = []
    for r in results:
        pp, data = r["predictive"], r["predictive"].data
        for j, task in enumerate(data.datasets):
            for i, lm in enumerate(data.lm_types):
                draws = pp.per_task[:, j, i]
                if np.isnan(draws).all():
                    continue
                rows.append(
                    {
                        "m": r["panel"]["m"],
                        "n": r["panel"]["n"],
                        "lm_type": lm,
                        "dataset": task,
                        "draws": draws,
                        **predictive.interval(draws),
                    }
                )
    table = pd.DataFrame(rows)
    shown = table[table.dataset.isin(selected) & table.lm_type.isin(selected_lm_types)]
    fig, axes = plt.subplots(
        1, max(1, len(selected)), figsize=(3.2 * max(1, len(selected)), 4.5), squeeze=False, sharex=True
    )
    for ax, task in zip(axes[0], selected, strict=False):
        sub = shown[shown.dataset == task].sort_values(["lm_type", "m", "n"])
        labels = [f"{lm} m={m} n={n}" for lm, m, n in zip(sub.lm_type, sub.m, sub.n, strict=True)]
        parts = ax.violinplot([100 * d for d in sub.draws], orientation="horizontal", showextrema=False)
        for body in parts["bodies"]:
            body.set_alpha(0.4)
        ax.set_yticks(np.arange(1, len(sub) + 1), labels, fontsize=7)
        ax.axvline(0, color="grey", ls="--", lw=1)
        ax.axvline(100 * threshold, color="tab:red", ls=":", lw=1)
        ax.set_title(task, fontsize=9)
        ax.set_xlabel("bias, accuracy points")
    if not selected:
        axes[0, 0].text(
            0.5, 0.5, f"no task reaches {100 * threshold:.0f}%", ha="center", transform=axes[0, 0].transAxes
        )
    fig.suptitle(
        f"Figure 4: task-level evaluation bias (eq. 12) of the tasks whose observed average bias "
        f"{'exceeds' if settings.strict else 'reaches'} +{100 * threshold:.0f}%"
    )
    fig.tight_layout()
    numbers = {
        "paper": ctx.paper,
        "source": ctx.source,
        "threshold": threshold,
        "strict": settings.strict,
        "selection": "observed average bias per (m, n, LM type, task), mean over subsamples of acc_test − acc_extra, "
        + ("> threshold" if settings.strict else "≥ threshold"),
        "selected_tasks": selected,
        "selected_lm_types": selected_lm_types,
        "reached": reached.rename(columns={"bias": "observed_mean"}).to_dict(orient="records"),
        "tasks": shown.drop(columns="draws").to_dict(orient="records"),
        "all_task_means": table.drop(columns="draws").to_dict(orient="records"),
        "fits": [fit_record(r["panel"]) for r in results],  # the bias fits eq. 12 is drawn from
        "total_seconds": time.perf_counter() - started,
        "units": {
            "threshold": ACCURACY_DIFFERENCE,
            "observed_mean": ACCURACY_DIFFERENCE,
            "mean": ACCURACY_DIFFERENCE,
            "hdi_89": ACCURACY_DIFFERENCE,
        },
    }
    save_figure(fig, ctx.out_dir, "figure-4", numbers)
    return numbers


def figure_5(ctx: Context) -> dict:
    """§8: GPT-2 pretrained for 2 epochs."""
    started = time.perf_counter()
    fit = ctx.settings.lm_types.fit
    results = fit_collection(ctx, "overtrained")
    names, how = lm_names(lm_types_read(results)), fitted_how(results, fit)
    title = f"Figure 5: {names} pretrained for 2 epochs instead of 1 (§8{'; ' + how if how else ''})"
    fig = average_difference_figure(results, title, fit=fit)
    numbers = _sidecar(ctx, results, started, title)
    save_figure(fig, ctx.out_dir, "figure-5", numbers)
    return numbers


def figure_6(ctx: Context) -> dict:
    """§9: zero-shot QLoRA on Mistral-7B, padding (left) and packing (right), whichever are present."""
    started = time.perf_counter()
    fit = ctx.settings.lm_types.fit
    results, missing, notes = [], [], []
    for role, label in (("zero_shot", "padding"), ("zero_shot_packing", "packing")):
        try:
            for r in fit_collection(ctx, role):
                r["panel"]["variant"] = label
                results.append(r)
        except InputsUnavailable as err:
            missing.append(f"{label}: {err}")
            folder = ctx.settings.collections.names()[role]
            notes.append(f"{label} ({folder}) not in the data: its panels are absent")
    if not results:
        raise InputsUnavailable("; ".join(missing))
    names, how = lm_names(lm_types_read(results)), fitted_how(results, fit)
    title = f"Figure 6: zero-shot {names} (§9{'; ' + how if how else ''})"
    fig = average_difference_figure(results, title, by="variant", fit=fit)
    numbers = _sidecar(ctx, results, started, title, missing=missing)
    save_figure(fig, ctx.out_dir, "figure-6", numbers, notes=notes)
    return numbers
