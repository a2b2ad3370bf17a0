"""Model checks of Appendix E.1: Figure 9 (calibration of posterior-predicted task accuracies), Figure 10 (the fit
with and without the task × treatment term W) and Figure 11 (the prior predictive under two priors for β)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pymc as pm

from testtask.context import Context
from testtask.outputs import save_figure
from testtask.pretrain_on_test import accuracies, predictive
from testtask.pretrain_on_test.fits import configuration_data, spec_from
from testtask.pretrain_on_test.hierarchical import Fit, build_marginal, resolve_spec
from testtask.pretrain_on_test.inputs import ACCURACY, ACCURACY_DIFFERENCE, LOG_ODDS, SHARE, load_collection
from testtask.pretrain_on_test.posterior_panels import configurations, fit_panel, fit_record
from testtask.pretrain_on_test.settings import Reference


def reference_configuration(ctx: Context, reference: Reference) -> pd.DataFrame:
    """The few-shot data at the (m, n) a check figure uses: `reference`'s, else the closest present."""
    few = load_collection(ctx, "few_shot")
    want = (reference.m, reference.n)
    present = configurations(few)
    m, n = (
        want if want in present else min(present, key=lambda mn: (abs(mn[1] - want[1]), abs(mn[0] - want[0])))
    )
    return few[(few.m == m) & (few.n == n)]


def substitution_notes(reference: Reference, frame: pd.DataFrame) -> list[str]:
    """What the figure says on itself (and in its JSON's `notes`) when drawn at another (m, n) than the paper's."""
    m, n = int(frame.m.iloc[0]), int(frame.n.iloc[0])
    if (m, n) == (reference.m, reference.n):
        return []
    return [f"m = {reference.m}, n = {reference.n} (the paper's) not in the data: drawn at m = {m}, n = {n}"]


def _calibration_units(observed: str) -> dict[str, str]:
    return {
        "mean_abs_error": f"{observed}: {ACCURACY_DIFFERENCE if observed != 'accuracy' else ACCURACY}",
        "coverage_89": SHARE,
        "beta": LOG_ODDS,
    }


def _calibration_axes(ax: plt.Axes, observed: np.ndarray, draws: np.ndarray, title: str) -> dict:
    mean = np.nanmean(draws, axis=0)
    lo, hi = np.nanquantile(draws, 0.055, axis=0), np.nanquantile(draws, 0.945, axis=0)
    ok = ~np.isnan(observed)
    ax.errorbar(
        100 * observed[ok],
        100 * mean[ok],
        yerr=100 * np.vstack([mean[ok] - lo[ok], hi[ok] - mean[ok]]),
        fmt="o",
        ms=3,
        alpha=0.7,
        elinewidth=0.8,
    )
    edge = [
        100 * np.nanmin([observed[ok].min(), lo[ok].min()]),
        100 * np.nanmax([observed[ok].max(), hi[ok].max()]),
    ]
    ax.plot(edge, edge, "k--", lw=1)
    ax.set_xlabel("observed, accuracy points")
    ax.set_ylabel("posterior predicted")
    ax.set_title(title, fontsize=9)
    covered = (observed[ok] >= lo[ok]) & (observed[ok] <= hi[ok])
    return {
        "points": int(ok.sum()),
        "coverage_89": float(covered.mean()),
        "mean_abs_error": float(np.abs(mean[ok] - observed[ok]).mean()),
    }


def _configuration(ctx: Context, frame: Any) -> dict[str, Any]:
    """The sidecar header of a figure drawn on one (m, n) configuration."""
    return {"paper": ctx.paper, "source": ctx.source, "m": int(frame.m.iloc[0]), "n": int(frame.n.iloc[0])}


def _save(ctx: Context, fig: plt.Figure, name: str, numbers: dict, notes: list[str]) -> dict:
    if notes:
        numbers["notes"] = notes
    save_figure(fig, ctx.out_dir, name, numbers, notes=notes)
    return numbers


def figure_9(ctx: Context) -> dict:
    """Calibration of posterior-predicted task accuracies (one point per task and LM type)."""
    frame = reference_configuration(ctx, ctx.settings.figure_9)
    notes = substitution_notes(ctx.settings.figure_9, frame)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
    numbers: dict[str, Any] = {**_configuration(ctx, frame), "panels": []}
    for ax, effect in zip(axes, ("boost", "bias"), strict=True):
        r = fit_panel(ctx, frame, effect)
        pp = r["predictive"]
        obs = pp.observed_task_accuracy()[..., 1].ravel()
        draws = pp.task_accuracy[..., 1].reshape(pp.task_accuracy.shape[0], -1)
        stats = _calibration_axes(ax, obs, draws, f"{effect}: treatment-arm task accuracy")
        numbers["panels"].append(
            {"effect": effect, **stats, "beta": r["panel"]["beta"], "fit": fit_record(r["panel"])}
        )
    fig.suptitle(f"Figure 9: calibration of predicted task accuracies (m={numbers['m']}, n={numbers['n']})")
    fig.tight_layout()
    numbers["units"] = _calibration_units("accuracy")
    return _save(ctx, fig, "figure-9", numbers, notes)


def figure_10(ctx: Context) -> dict:
    """Task-level differences with and without the W interaction: without it, the model underfits."""
    frame = reference_configuration(ctx, ctx.settings.figure_10)
    notes = substitution_notes(ctx.settings.figure_10, frame)
    fig, axes = plt.subplots(2, 2, figsize=(10, 9))
    numbers: dict[str, Any] = {**_configuration(ctx, frame), "panels": []}
    for row, effect in enumerate(("boost", "bias")):
        for col, interaction in enumerate((True, False)):
            r = fit_panel(ctx, frame, effect, interaction=interaction)
            pp = r["predictive"]
            obs = pp.observed_per_task().ravel()
            draws = pp.per_task.reshape(pp.per_task.shape[0], -1)
            stats = _calibration_axes(
                axes[row, col], obs, draws, f"{effect}, {'with' if interaction else 'without'} W"
            )
            numbers["panels"].append(
                {
                    "effect": effect,
                    "interaction": interaction,
                    **stats,
                    "beta": r["panel"]["beta"],
                    "fit": fit_record(r["panel"]),
                }
            )
    fig.suptitle("Figure 10: per-task differences (eq. 12) with and without the task × treatment term")
    fig.tight_layout()
    numbers["units"] = _calibration_units("accuracy difference")
    return _save(ctx, fig, "figure-10", numbers, notes)


def _bambi_default_treatment_prior(frame: pd.DataFrame, counts: str) -> dict:
    """The prior bambi chooses for β when none is given (its automatic scaling for binomial models)."""
    import bambi as bmb

    long = accuracies.paired_long(frame, "bias", counts)
    long["treatment"] = long["treatment"].astype(float)
    model = bmb.Model("p(correct, trials) ~ 1 + treatment", long, family="binomial")
    prior = model.components[model.family.likelihood.parent].common_terms["treatment"].prior
    return {"name": prior.name, **{k: float(v) for k, v in prior.args.items()}}


def figure_11(ctx: Context) -> dict:
    """Prior predictive of eq. 11 under β ~ N(0, 1) and under bambi's default prior for β."""
    frame = reference_configuration(ctx, ctx.settings.figure_11)
    notes = substitution_notes(ctx.settings.figure_11, frame)
    data = configuration_data(frame, "bias", ctx.settings.counts)
    default = _bambi_default_treatment_prior(frame, ctx.settings.counts)
    draws = ctx.settings.figure_11.draws
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    numbers: dict[str, Any] = {**_configuration(ctx, frame), "bambi_default_prior": default, "panels": []}
    priors = (
        ("β ~ N(0, 1)", 1.0),
        (f"bambi default: N(0, {default.get('sigma', float('nan')):.2f})", default.get("sigma", 1.0)),
    )
    for ax, (label, sigma) in zip(axes, priors, strict=True):
        base = resolve_spec(data, spec_from(ctx.settings, backend="marginal"))
        spec = replace(base, priors=replace(base.priors, treatment_sigma=float(sigma)))
        with build_marginal(data.shape, spec):
            prior = pm.sample_prior_predictive(draws=draws, random_seed=ctx.seed)
        fake = Fit(
            idata=az.InferenceData(posterior=prior.prior), data=data, spec=spec, seconds=0.0, sampler="prior"
        )
        pp = predictive.simulate(fake, seed=ctx.seed)
        acc = pp.task_accuracy[..., 1].ravel()
        ax.hist(100 * pp.average, bins=50, alpha=0.6, label="average difference (eq. 11)")
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("prior predictive average bias, accuracy points")
        numbers["panels"].append(
            {
                "prior": label,
                "treatment_sigma": float(sigma),
                "average_difference_quantiles": np.quantile(pp.average, [0.05, 0.25, 0.5, 0.75, 0.95]),
                "task_accuracy_quantiles": np.nanquantile(acc, [0.05, 0.25, 0.5, 0.75, 0.95]),
                "share_abs_average_difference_above_10pts": float(np.mean(np.abs(pp.average) > 0.10)),
            }
        )
    fig.suptitle(f"Figure 11: prior predictive (m={numbers['m']}, n={numbers['n']})")
    fig.tight_layout()
    numbers["units"] = {
        "treatment_sigma": LOG_ODDS,
        "average_difference_quantiles": ACCURACY_DIFFERENCE,
        "task_accuracy_quantiles": "fraction (0.01 = 1 percentage point)",
        "share_abs_average_difference_above_10pts": f"{SHARE} of prior draws with |average difference| > 0.10",
    }
    return _save(ctx, fig, "figure-11", numbers, notes)
