"""Figures built from posterior fits of the §6.1 model: 3, 4, 5, 6, 7, 9, 10, 11, 12."""

from __future__ import annotations

import logging
import time
import zlib
from dataclasses import replace
from typing import Any

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pymc as pm
from tqdm.auto import tqdm

from testtask.context import Context, InputsUnavailable
from testtask.outputs import save_figure
from testtask.parallel import process_pool
from testtask.pretrain_on_test import accuracies, predictive
from testtask.pretrain_on_test.descriptive import load_collection
from testtask.pretrain_on_test.fits import configuration_data, fit_cached, plain, spec_from
from testtask.pretrain_on_test.hierarchical import TREATMENT, Fit, ModelData, build_marginal, resolve_spec
from testtask.pretrain_on_test.sampling import fit as fit_model
from testtask.pretrain_on_test.simulate import TruePars, simulate_long

log = logging.getLogger(__name__)
EFFECT_LABEL = {"boost": "pretraining boost (extra − base)", "bias": "evaluation bias (test − extra)"}
COLORS = {"boost": "tab:blue", "bias": "tab:orange"}


# --- fitting one configuration -------------------------------------------------------------------------------


def fit_panel(
    ctx: Context, frame: pd.DataFrame, effect: str, seed_offset: int = 0, **spec_overrides: Any
) -> dict:
    """Fit one (m, n, effect), draw the posterior predictive, and collect the numbers for the JSON sidecar."""
    data = configuration_data(frame, effect)
    spec = spec_from(ctx.cfg, **spec_overrides)
    fit = fit_cached(data, spec, ctx.sampler, ctx.seed + seed_offset, ctx.cache_dir)
    pred_cfg = plain(ctx.cfg.get("predictive", {})) or {}
    pp = predictive.simulate(
        fit,
        seed=ctx.seed + seed_offset + 1,
        max_draws=pred_cfg.get("max_draws"),
        workers=int(ctx.sampler.get("cores", 1)),
    )
    diag = fit.diagnostics()
    beta = diag[TREATMENT]
    panel = {
        "m": int(frame.m.iloc[0]),
        "n": int(frame.n.iloc[0]),
        "effect": effect,
        "lm_types": data.lm_types,
        "datasets": len(data.datasets),
        "subsamples": int(data.observed[:, :, 0].sum()),
        "average_difference": predictive.interval(pp.average, pred_cfg.get("hdi_prob", 0.89)),
        "beta": {k: beta[k] for k in ("mean", "sd", "hdi_89", "r_hat", "ess_bulk", "ess_tail")},
        "sigmas": {k: v for k, v in diag.items() if k != TREATMENT},
        "raw_mean_difference": pp.observed_average(),
        "divergences": fit.divergences,
        "fit_seconds": fit.seconds,
        "sampler": fit.sampler,
        "backend": spec.backend,
        "noncentered_t": fit.spec.noncentered_t,
    }
    return {"panel": panel, "fit": fit, "predictive": pp}


def _configs(frame: pd.DataFrame) -> list[tuple[int, int]]:
    return sorted({(int(m), int(n)) for m, n in zip(frame.m, frame.n, strict=True)})


def fit_collection(ctx: Context, role: str, effects: list[str] | None = None) -> list[dict]:
    frame = load_collection(ctx, role)
    effects = effects or list(ctx.cfg.get("effects", ["boost", "bias"]))
    jobs = [(m, n, e) for m, n in _configs(frame) for e in effects]
    results = []
    for m, n, effect in tqdm(jobs, desc=f"fits ({role})", unit="fit"):
        part = frame[(frame.m == m) & (frame.n == n)]
        # A seed per configuration, not per position in the job list, so figures share cached fits.
        result = fit_panel(
            ctx, part, effect, seed_offset=zlib.crc32(f"{role}/{m}/{n}/{effect}".encode()) % 100_000
        )
        log.info(
            "%s m=%d n=%d %s: beta %.3f (r_hat %.3f, ess %.0f), %.1f s",
            role,
            m,
            n,
            effect,
            result["panel"]["beta"]["mean"],
            result["panel"]["beta"]["r_hat"],
            result["panel"]["beta"]["ess_bulk"],
            result["panel"]["fit_seconds"],
        )
        results.append(result)
    return results


# --- drawing -------------------------------------------------------------------------------------------------


def _violin_panel(ax: plt.Axes, results: list[dict], effect: str, title: str) -> None:
    chosen = [r for r in results if r["panel"]["effect"] == effect]
    positions = np.arange(len(chosen))
    draws = [100 * r["predictive"].average for r in chosen]
    if draws:
        parts = ax.violinplot(
            draws, positions=positions, orientation="horizontal", showextrema=False, widths=0.8
        )
        for body in parts["bodies"]:
            body.set_facecolor(COLORS[effect])
            body.set_alpha(0.45)
    for pos, r in zip(positions, chosen, strict=True):
        lo, hi = r["panel"]["average_difference"]["hdi_89"]
        ax.hlines(pos, 100 * lo, 100 * hi, color="k", lw=2)
        ax.plot(100 * r["panel"]["average_difference"]["mean"], pos, "ko", ms=4)
        ax.plot(100 * r["panel"]["raw_mean_difference"], pos, "x", color="tab:red", ms=6)
    ax.axvline(0, color="grey", lw=1, ls="--")
    ax.set_yticks(positions, [f"n = {r['panel']['n']}" for r in chosen])
    ax.set_xlabel(f"{EFFECT_LABEL[effect]}, accuracy points")
    ax.set_title(title)


def average_difference_figure(results: list[dict], suptitle: str, by: str = "m") -> plt.Figure:
    """Rows: effects; columns: one per value of `by` (m, or a variant label)."""
    effects = list(dict.fromkeys(r["panel"]["effect"] for r in results))
    columns = list(dict.fromkeys(r["panel"][by] for r in results))
    fig, axes = plt.subplots(
        len(effects),
        len(columns),
        figsize=(
            5.2 * len(columns),
            2.0 + 1.1 * len(results) / max(1, len(columns) * len(effects)) * len(effects),
        ),
        squeeze=False,
    )
    for row, effect in enumerate(effects):
        for col, value in enumerate(columns):
            subset = [r for r in results if r["panel"][by] == value]
            label = f"m = {value}" if by == "m" else str(value)
            _violin_panel(axes[row, col], subset, effect, f"{label}: {effect}")
    fig.suptitle(
        suptitle + "\n(violin: eq. 11 posterior predictive; bar: 89% HDI; x: observed mean)", fontsize=10
    )
    fig.tight_layout()
    return fig


def _sidecar(ctx: Context, results: list[dict], started: float, **extra: Any) -> dict:
    return {
        "paper": ctx.paper,
        "source": ctx.source,
        "sampler": plain(ctx.sampler),
        "model": plain(ctx.cfg["model"]),
        "panels": [r["panel"] for r in results],
        "total_seconds": time.perf_counter() - started,
        **extra,
    }


def figure_3(ctx: Context) -> dict:
    """Eq. 11 distributions of the boost and the bias for every (m, n), LM types pooled."""
    started = time.perf_counter()
    results = fit_collection(ctx, "few_shot")
    fig = average_difference_figure(results, "Figure 3: average accuracy differences (BERT and GPT-2 pooled)")
    numbers = _sidecar(ctx, results, started)
    save_figure(fig, ctx.out_dir, "figure-3", numbers)
    return numbers


def figure_4(ctx: Context) -> dict:
    """Eq. 12 per-task bias distributions for tasks whose average bias reaches the threshold anywhere."""
    started = time.perf_counter()
    threshold = float(ctx.cfg["figure_4"]["threshold"])
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
    selected = sorted(table.loc[table["mean"] >= threshold, "dataset"].unique())
    shown = table[table.dataset.isin(selected)]
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
    fig.suptitle(f"Figure 4: task-level evaluation bias (eq. 12) for tasks reaching +{100 * threshold:.0f}%")
    fig.tight_layout()
    numbers = {
        "paper": ctx.paper,
        "source": ctx.source,
        "threshold": threshold,
        "selected_tasks": selected,
        "selected_lm_types": sorted(table.loc[table["mean"] >= threshold, "lm_type"].unique()),
        "tasks": shown.drop(columns="draws").to_dict(orient="records"),
        "all_task_means": table.drop(columns="draws").to_dict(orient="records"),
        "total_seconds": time.perf_counter() - started,
    }
    save_figure(fig, ctx.out_dir, "figure-4", numbers)
    return numbers


def figure_5(ctx: Context) -> dict:
    """§8: GPT-2 pretrained for 2 epochs."""
    started = time.perf_counter()
    results = fit_collection(ctx, "overtrained")
    fig = average_difference_figure(results, "Figure 5: GPT-2 pretrained for 2 epochs instead of 1 (§8)")
    numbers = _sidecar(ctx, results, started)
    save_figure(fig, ctx.out_dir, "figure-5", numbers)
    return numbers


def figure_6(ctx: Context) -> dict:
    """§9: zero-shot QLoRA on Mistral-7B, padding (left) and packing (right), whichever are present."""
    started = time.perf_counter()
    results, missing = [], []
    for role, label in (("zero_shot", "padding"), ("zero_shot_packing", "packing")):
        try:
            for r in fit_collection(ctx, role):
                r["panel"]["variant"] = label
                results.append(r)
        except InputsUnavailable as err:
            missing.append(f"{label}: {err}")
    if not results:
        raise InputsUnavailable("; ".join(missing))
    fig = average_difference_figure(results, "Figure 6: zero-shot Mistral-7B QLoRA (§9)", by="variant")
    numbers = _sidecar(ctx, results, started, missing=missing)
    save_figure(fig, ctx.out_dir, "figure-6", numbers)
    return numbers


# --- §10 meta-analysis ---------------------------------------------------------------------------------------


def _slice_frame(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """One subsample per task (the same k for every LM type, as k is the same subsample)."""
    picks = []
    for _, part in frame.groupby("dataset"):
        k = rng.choice(part.subsample.unique())
        chosen = part[part.subsample == k].copy()
        chosen["subsample"] = 0
        picks.append(chosen)
    return pd.concat(picks, ignore_index=True)


def _slice_beta(data: ModelData, spec, sampler: dict, seed: int) -> np.ndarray:
    """β draws of one de-replicated slice, all chains in this process (slices run side by side instead)."""
    return fit_model(data, spec, {**sampler, "cores": 1}, seed).idata.posterior[TREATMENT].values.ravel()


def meta_analysis(ctx: Context, frame: pd.DataFrame, slices: int, band: float, seed: int) -> dict:
    """Refit the bias model on `slices` random slices with one subsample per task; summarise β's posterior means."""
    cfg = ctx.cfg["figure_7"]
    sampler = {
        **plain(ctx.sampler),
        "draws": int(cfg["draws"]),
        "tune": int(cfg["tune"]),
        "progressbar": False,
    }
    rng = np.random.default_rng(seed)
    spec = spec_from(ctx.cfg)
    jobs = [(configuration_data(_slice_frame(frame, rng), "bias"), seed + idx) for idx in range(slices)]
    pool = process_pool(max(1, int(sampler.get("cores", 1))))
    futures = [pool.submit(_slice_beta, data, spec, sampler, job_seed) for data, job_seed in jobs]
    means, excludes_zero = [], []
    label = f"meta m={frame.m.iloc[0]} n={frame.n.iloc[0]}"
    for future in tqdm(futures, desc=label, unit="slice"):
        beta = future.result()
        lo, hi = az.hdi(beta, hdi_prob=0.89)
        means.append(float(beta.mean()))
        excludes_zero.append(bool(lo > 0 or hi < 0))
    means_arr = np.asarray(means)
    outside = np.abs(means_arr) >= band
    return {
        "m": int(frame.m.iloc[0]),
        "n": int(frame.n.iloc[0]),
        "lm_types": sorted(frame.lm_type.unique()),
        "slices": slices,
        "band": band,
        "share_outside_band": float(outside.mean()),
        "share_hdi_excludes_zero": float(np.mean(excludes_zero)),
        "share_outside_band_with_hdi_excluding_zero": float(np.mean(np.asarray(excludes_zero)[outside]))
        if outside.any()
        else None,
        "posterior_means": means_arr,
    }


def figure_7(ctx: Context) -> dict:
    """§10: posterior mean of β over de-replicated slices (one subsample per task)."""
    started = time.perf_counter()
    cfg = ctx.cfg["figure_7"]
    panels, notes = [], []
    try:
        few = load_collection(ctx, "few_shot")
        want = (int(cfg["m"]), int(cfg["n"]))
        present = _configs(few)
        chosen = want if want in present else max(present, key=lambda mn: (mn[1] == want[1], mn[0], mn[1]))
        if chosen != want:
            notes.append(f"few-shot m={want[0]}, n={want[1]} not present; used m={chosen[0]}, n={chosen[1]}")
        part = few[(few.m == chosen[0]) & (few.n == chosen[1])]
        panels.append(
            {
                "label": "few-shot (BERT, GPT-2)",
                **meta_analysis(ctx, part, int(cfg["slices"]), float(cfg["band"]), ctx.seed),
            }
        )
    except InputsUnavailable as err:
        notes.append(str(err))
    try:
        zero = load_collection(ctx, "zero_shot")
        m, n = _configs(zero)[-1]
        part = zero[(zero.m == m) & (zero.n == n)]
        panels.append(
            {
                "label": "zero-shot (Mistral-7B)",
                **meta_analysis(ctx, part, int(cfg["slices"]), float(cfg["band_zero_shot"]), ctx.seed + 7),
            }
        )
    except InputsUnavailable as err:
        notes.append(str(err))
    if not panels:
        raise InputsUnavailable("; ".join(notes))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        values = np.sort(panel["posterior_means"])
        ax.step(values, np.arange(1, len(values) + 1) / len(values), where="post")
        for edge in (-panel["band"], panel["band"]):
            ax.axvline(edge, color="tab:red", ls="--", lw=1)
        ax.set_xlabel("posterior mean of β (bias, log-odds)")
        ax.set_ylabel("cumulative share of slices")
        ax.set_title(
            f"{panel['label']}, m={panel['m']} n={panel['n']}\n"
            f"{100 * panel['share_outside_band']:.0f}% outside ±{panel['band']}",
            fontsize=9,
        )
    fig.suptitle("Figure 7: conclusions without repeated subsampling (§10)")
    fig.tight_layout()
    numbers = {
        "paper": ctx.paper,
        "source": ctx.source,
        "panels": panels,
        "notes": notes,
        "total_seconds": time.perf_counter() - started,
    }
    save_figure(fig, ctx.out_dir, "figure-7", numbers)
    return numbers


# --- model checks (Appendix E.1) -----------------------------------------------------------------------------


def reference_configuration(ctx: Context, key: str) -> pd.DataFrame:
    """The (m, n) a check figure uses: the configured one, else the closest present (noted in the JSON)."""
    few = load_collection(ctx, "few_shot")
    want = (int(ctx.cfg[key]["m"]), int(ctx.cfg[key]["n"])) if key in ctx.cfg else (100, 200)
    present = _configs(few)
    m, n = (
        want if want in present else min(present, key=lambda mn: (abs(mn[1] - want[1]), abs(mn[0] - want[0])))
    )
    return few[(few.m == m) & (few.n == n)]


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


def figure_9(ctx: Context) -> dict:
    """Calibration of posterior-predicted task accuracies (one point per task and LM type)."""
    frame = reference_configuration(ctx, "figure_9")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
    numbers: dict[str, Any] = {
        "paper": ctx.paper,
        "source": ctx.source,
        "m": int(frame.m.iloc[0]),
        "n": int(frame.n.iloc[0]),
        "panels": [],
    }
    for ax, effect in zip(axes, ("boost", "bias"), strict=True):
        r = fit_panel(ctx, frame, effect)
        pp = r["predictive"]
        obs = pp.observed_task_accuracy()[..., 1].ravel()
        draws = pp.task_accuracy[..., 1].reshape(pp.task_accuracy.shape[0], -1)
        stats = _calibration_axes(ax, obs, draws, f"{effect}: treatment-arm task accuracy")
        numbers["panels"].append({"effect": effect, **stats, "beta": r["panel"]["beta"]})
    fig.suptitle(f"Figure 9: calibration of predicted task accuracies (m={numbers['m']}, n={numbers['n']})")
    fig.tight_layout()
    save_figure(fig, ctx.out_dir, "figure-9", numbers)
    return numbers


def figure_10(ctx: Context) -> dict:
    """Task-level differences with and without the W interaction: without it, the model underfits."""
    frame = reference_configuration(ctx, "figure_10")
    fig, axes = plt.subplots(2, 2, figsize=(10, 9))
    numbers: dict[str, Any] = {
        "paper": ctx.paper,
        "source": ctx.source,
        "m": int(frame.m.iloc[0]),
        "n": int(frame.n.iloc[0]),
        "panels": [],
    }
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
                {"effect": effect, "interaction": interaction, **stats, "beta": r["panel"]["beta"]}
            )
    fig.suptitle("Figure 10: per-task differences (eq. 12) with and without the task × treatment term")
    fig.tight_layout()
    save_figure(fig, ctx.out_dir, "figure-10", numbers)
    return numbers


def _bambi_default_treatment_prior(frame: pd.DataFrame) -> dict:
    """The prior bambi chooses for β when none is given (its automatic scaling for binomial models)."""
    import bambi as bmb

    long = accuracies.paired_long(frame, "bias")
    long["treatment"] = long["treatment"].astype(float)
    model = bmb.Model("p(correct, trials) ~ 1 + treatment", long, family="binomial")
    prior = model.components[model.family.likelihood.parent].common_terms["treatment"].prior
    return {"name": prior.name, **{k: float(v) for k, v in prior.args.items()}}


def figure_11(ctx: Context) -> dict:
    """Prior predictive of eq. 11 under β ~ N(0, 1) and under bambi's default prior for β."""
    frame = reference_configuration(ctx, "figure_11")
    data = configuration_data(frame, "bias")
    default = _bambi_default_treatment_prior(frame)
    draws = int(ctx.cfg["figure_11"]["draws"])
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    numbers: dict[str, Any] = {
        "paper": ctx.paper,
        "source": ctx.source,
        "m": int(frame.m.iloc[0]),
        "n": int(frame.n.iloc[0]),
        "bambi_default_prior": default,
        "panels": [],
    }
    for ax, (label, sigma) in zip(
        axes,
        (
            ("β ~ N(0, 1)", 1.0),
            (f"bambi default: N(0, {default.get('sigma', float('nan')):.2f})", default.get("sigma", 1.0)),
        ),
        strict=True,
    ):
        base = resolve_spec(data, spec_from(ctx.cfg, backend="marginal"))
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
    save_figure(fig, ctx.out_dir, "figure-11", numbers)
    return numbers


def recover(ctx: Context, beta: float, seed: int) -> tuple[Fit, dict]:
    cfg = ctx.cfg["figure_12"]
    long = simulate_long(
        TruePars(beta=beta),
        datasets=int(cfg["datasets"]),
        subsamples=int(cfg["subsamples"]),
        n=int(cfg["n"]),
        lm_types=int(cfg["lm_types"]),
        seed=seed,
    )
    fit = fit_cached(ModelData.from_long(long), spec_from(ctx.cfg), ctx.sampler, seed, ctx.cache_dir)
    d = fit.diagnostics()[TREATMENT]
    lo, hi = d["hdi_89"]
    return fit, {
        "true_beta": beta,
        **d,
        "covers_truth": bool(lo <= beta <= hi),
        "excludes_zero": bool(lo > 0 or hi < 0),
        "divergences": fit.divergences,
    }


def figure_12(ctx: Context) -> dict:
    """Simulation recovery of a null and a non-null β: posterior and trace."""
    cfg = ctx.cfg["figure_12"]
    fig, axes = plt.subplots(2, 2, figsize=(10, 6))
    numbers: dict[str, Any] = {"paper": ctx.paper, "shape": plain(cfg), "panels": []}
    for row, beta in enumerate((float(cfg["null_beta"]), float(cfg["effect_beta"]))):
        fit, stats = recover(ctx, beta, ctx.seed + 100 + row)
        post = fit.idata.posterior[TREATMENT]
        for chain in post.chain.values:
            values = post.sel(chain=chain).values
            axes[row, 0].hist(values, bins=40, histtype="step")
            axes[row, 1].plot(values, lw=0.4)
        axes[row, 0].axvline(beta, color="k", ls="--")
        axes[row, 0].set_title(f"β true = {beta}: posterior per chain", fontsize=9)
        axes[row, 1].set_title(
            f"trace (r̂ {stats['r_hat']:.3f}, ESS {stats['ess_bulk']:.0f}, {stats['divergences']} divergences)",
            fontsize=9,
        )
        numbers["panels"].append(stats)
    fig.suptitle("Figure 12: recovering null and non-null effects from simulated data")
    fig.tight_layout()
    save_figure(fig, ctx.out_dir, "figure-12", numbers)
    return numbers
