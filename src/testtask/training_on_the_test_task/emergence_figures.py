"""Figures 8 (MMLU) and 19 (GSM8K): emergence and log-linear fits of older models along fine-tuning checkpoints."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from testtask.context import Context, InputsUnavailable
from testtask.errors import SettingUnusable
from testtask.lm.scores import (
    Gap,
    check_gaps,
    excluded_records,
    lookup,
)
from testtask.outputs import save_figure
from testtask.training_on_the_test_task.inputs import (
    SECTION,
    check_cutoff,
    check_kinds,
    present,
    registry,
    results,
)
from testtask.training_on_the_test_task.panels import COLOURS
from testtask.training_on_the_test_task.regression import fit_emergence, fit_log_linear
from testtask.training_on_the_test_task.settings import Regression, Settings

MIN_MODELS = 4  # the fewest models a checkpoint's fits are drawn for

C_E_METHODS = {
    "profile": "least squares, profile over c_e",
    "local": "least squares, local BFGS search from c_e = 22",
    "pwlf": "the authors' pwlf fit: its objective SSE + 2|Σe| + 2|Σ(ln C − min ln C)e| over c_e in the range",
}


def checkpoint_scores(ctx: Context, key: str) -> tuple[Any, pd.DataFrame, list[Gap]]:
    """Scores of older models (within the emergence compute window) at step 0 (base) and every checkpoint,
    and the Gap of each (model, checkpoint) missing: such a model is left out of that checkpoint's fit."""
    settings: Settings = ctx.settings
    spec = settings.benchmark(key)
    scores = results(ctx)
    reg = registry(ctx)
    cfg = settings.emergence
    cutoff = settings.cutoff
    kinds = settings.model_kinds
    steps = scores.loc[
        (scores["adjustment"] == "intermediate") & (scores["finetune"] == spec.finetune), "step"
    ].dropna()
    if steps.empty:
        raise InputsUnavailable(f"no intermediate/{spec.finetune} checkpoints in this source")
    check_kinds(ctx)
    check_cutoff(ctx, cutoff)
    older = [
        name
        for name in reg.names()
        if reg.get(name).kind in kinds
        and not reg.get(name).is_newer(cutoff)
        and cfg.min_compute < reg.get(name).compute < cfg.max_compute
    ]
    check_window(ctx, older)
    absent = settings.release.absent
    checkpoints = [("base", None)] + [("intermediate", int(s)) for s in sorted(steps.unique())]
    rows, gaps = [], []
    for stage, step in checkpoints:
        values, missing = lookup(scores, spec, stage, older, absent, step=step)
        gaps += missing.values()
        for name, value in values.dropna().items():
            info = reg.get(name)
            rows.append(
                {
                    "model": name,
                    "family": info.family,
                    "step": step or 0,
                    "examples": (step or 0) * cfg.batch_size,
                    "log_compute": float(np.log10(info.compute)),
                    "score": float(value),
                }
            )
    gaps = check_gaps(gaps, f"{spec.key} checkpoints of older models")
    return spec, pd.DataFrame(rows), gaps


def check_window(ctx: Context, older: list[str]) -> None:
    """SettingUnusable when fewer than MIN_MODELS older models with results lie in the emergence compute window
    (`older`: those the window keeps)."""
    cfg, reg = ctx.settings.emergence, registry(ctx)
    cutoff = ctx.settings.cutoff
    kept = [name for name in present(ctx) if name in older]
    if len(kept) >= MIN_MODELS:
        return
    computes = sorted(reg.get(name).compute for name in present(ctx) if not reg.get(name).is_newer(cutoff))
    setting, value = "max_compute", cfg.max_compute
    if len(computes) >= MIN_MODELS and cfg.min_compute >= computes[-MIN_MODELS]:
        setting, value = "min_compute", cfg.min_compute
    raise SettingUnusable(
        f"{SECTION}.emergence.{setting}",
        value,
        f"{len(kept)} older model(s) of this source have compute in ({cfg.min_compute:.3g}, "
        f"{cfg.max_compute:.3g}) FLOPs and a fit needs {MIN_MODELS} (the older models: "
        f"{computes[0]:.3g} to {computes[-1]:.3g} FLOPs)",
        "widen the window of emergence.min_compute and emergence.max_compute",
    )


def _fits(spec, data: pd.DataFrame, regression: Regression, c_e_search: str) -> list[dict[str, Any]]:
    out = []
    for step, part in data.groupby("step"):
        if len(part) < MIN_MODELS:
            continue
        hinge = fit_emergence(
            part["log_compute"],
            part["score"],
            None,
            chance=spec.chance,
            cov_type=regression.cov_type,
            c_e_search=c_e_search,
        )
        linear = fit_log_linear(part["log_compute"], part["score"])
        out.append(
            {
                "step": int(step),
                "examples": int(part["examples"].iloc[0]),
                "n_models": int(len(part)),
                "c_e_log10": hinge.c_e,
                "c_e_flops": float(10**hinge.c_e),
                "alpha": hinge.alpha,
                "hinge_r2": hinge.r2,
                "log_linear_r2": linear.r2,
                "log_linear_slope": linear.slope,
                "log_linear_intercept": linear.intercept,
                "_hinge": hinge,
                "_linear": linear,
            }
        )
    return out


def emergence_figure(ctx: Context, number: int) -> dict:
    settings: Settings = ctx.settings
    cfg = {8: settings.figure_8, 19: settings.figure_19}[number]
    spec, data, gaps = checkpoint_scores(ctx, cfg.benchmark)
    fits = _fits(spec, data, settings.regression, settings.emergence.c_e_search)
    by_step = {f["step"]: f for f in fits}
    shown = [s for s in cfg.steps if s in by_step]
    if not shown:
        raise SettingUnusable(
            f"{SECTION}.figure_{number}.steps",
            list(cfg.steps),
            f"no checkpoint of these has results of {MIN_MODELS} older models to fit",
            f"choose among the steps that have: {', '.join(map(str, sorted(by_step))) or 'none'}",
        )
    ncols = len(shown) + 1
    fig, axes = plt.subplots(2, ncols, figsize=(3.3 * ncols, 6.4), squeeze=False)
    for col, step in enumerate(shown):
        part = data[data["step"] == step]
        fit = by_step[step]
        grid = np.linspace(part["log_compute"].min(), part["log_compute"].max(), 200)
        for row, model_fit, label in (
            (0, fit["_hinge"], f"$c_e$ = {fit['c_e_flops']:.1e}"),
            (1, fit["_linear"], f"$R^2$ = {fit['log_linear_r2']:.2f}"),
        ):
            ax = axes[row, col]
            ax.scatter(10 ** part["log_compute"], part["score"], s=20, color=COLOURS[0], alpha=0.75)
            ax.plot(10**grid, model_fit.predict(grid), color="black", lw=1.6)
            if row == 0:
                ax.axvline(fit["c_e_flops"], color="grey", ls=":", lw=1)
            ax.set_xscale("log")
            ax.set_title(
                f"Task examples: {fit['examples'] // 1000}k" if step else "Task examples: 0", fontsize=9
            )
            ax.text(0.04, 0.95, label, transform=ax.transAxes, va="top", fontsize=9)
            ax.set_xlabel("Pretraining compute (FLOPs)", fontsize=8)
            ax.grid(alpha=0.25, lw=0.5)
        axes[0, col].set_ylabel(f"{spec.label} accuracy (Eq. 1 fit)" if col == 0 else "")
        axes[1, col].set_ylabel(f"{spec.label} accuracy (log-linear fit)" if col == 0 else "")
    examples = np.array([f["examples"] for f in fits])
    x = np.where(examples > 0, examples, np.nan)
    axes[0, -1].plot(examples, [f["c_e_flops"] for f in fits], "o-", color=COLOURS[1])
    axes[0, -1].set_yscale("log")
    axes[0, -1].set_ylabel("Point of emergence $c_e$ (FLOPs)")
    axes[1, -1].plot(examples, [f["log_linear_r2"] for f in fits], "o-", color=COLOURS[1])
    axes[1, -1].set_ylabel("$R^2$ of log-linear fit")
    linthresh = float(np.nanmin(x)) if np.isfinite(np.nanmin(x)) else 1.0
    for ax in axes[:, -1]:
        # symlog keeps step 0 (the base models) on the same axis as the checkpoints
        ax.set_xscale("symlog", linthresh=linthresh)
        ax.set_xlim(0, examples.max() * 1.5)
        ax.set_xlabel("Fine-tuning examples", fontsize=8)
        ax.grid(alpha=0.25, lw=0.5)
    fig.tight_layout()
    records = [
        {
            **{k: v for k, v in f.items() if not k.startswith("_")},
            "excluded_models": excluded_records(g for g in gaps if (g.step or 0) == f["step"]),
        }
        for f in fits
    ]
    numbers = {
        "paper": ctx.paper,
        "figure": number,
        "source": ctx.source,
        "benchmark": spec.key,
        "cohort": f"trained before {settings.cutoff}",
        "compute_window": [settings.emergence.min_compute, settings.emergence.max_compute],
        "c_e_method": (
            f"Eq. 1 without the cohort term ({C_E_METHODS[settings.emergence.c_e_search]}), log10 FLOPs"
        ),
        "log_linear": "OLS of accuracy on log10 compute with intercept; centred R²",
        "steps_shown": shown,
        "excluded_models": excluded_records(gaps),
        "checkpoints": records,
    }
    save_figure(fig, ctx.out_dir, f"figure-{number}", numbers)
    return numbers


def figure_8(ctx: Context) -> dict:
    return emergence_figure(ctx, 8)


def figure_19(ctx: Context) -> dict:
    return emergence_figure(ctx, 19)
