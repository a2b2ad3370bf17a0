"""Figure 7 (§10): would the conclusions hold without repeated subsampling? The bias model is refitted on random
de-replicated slices (one subsample per task) and the posterior means of β are summarised."""

from __future__ import annotations

import time

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from testtask.context import Context, InputsUnavailable
from testtask.outputs import save_figure
from testtask.parallel import process_pool
from testtask.pretrain_on_test.fits import configuration_data, plain, spec_from
from testtask.pretrain_on_test.hierarchical import TREATMENT, ModelData
from testtask.pretrain_on_test.inputs import LOG_ODDS, SHARE, load_collection
from testtask.pretrain_on_test.posterior_panels import configurations
from testtask.pretrain_on_test.sampling import fit as fit_model


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
    settings = ctx.settings.figure_7
    sampler = {
        **plain(ctx.sampler),
        "draws": settings.draws,
        "tune": settings.tune,
        "progressbar": False,
    }
    rng = np.random.default_rng(seed)
    spec = spec_from(ctx.settings)
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
    settings = ctx.settings.figure_7
    panels, notes = [], []
    try:
        few = load_collection(ctx, "few_shot")
        want = (settings.m, settings.n)
        present = configurations(few)
        chosen = want if want in present else max(present, key=lambda mn: (mn[1] == want[1], mn[0], mn[1]))
        if chosen != want:
            notes.append(f"few-shot m={want[0]}, n={want[1]} not present; used m={chosen[0]}, n={chosen[1]}")
        part = few[(few.m == chosen[0]) & (few.n == chosen[1])]
        panels.append(
            {
                "label": "few-shot (BERT, GPT-2)",
                **meta_analysis(ctx, part, settings.slices, settings.band, ctx.seed),
            }
        )
    except InputsUnavailable as err:
        notes.append(str(err))
    try:
        zero = load_collection(ctx, "zero_shot")
        m, n = configurations(zero)[-1]
        part = zero[(zero.m == m) & (zero.n == n)]
        panels.append(
            {
                "label": "zero-shot (Mistral-7B)",
                **meta_analysis(ctx, part, settings.slices, settings.band_zero_shot, ctx.seed + 7),
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
        "units": {
            "posterior_means": LOG_ODDS,
            "band": LOG_ODDS,
            "share_outside_band": f"{SHARE}; the panel titles show percent",
            "share_hdi_excludes_zero": SHARE,
            "share_outside_band_with_hdi_excluding_zero": SHARE,
        },
    }
    save_figure(fig, ctx.out_dir, "figure-7", numbers, notes=notes)
    return numbers
