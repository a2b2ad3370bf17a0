"""Figure 12 (Appendix E.1): recovering a null and a non-null β from data simulated from the §6.1 model."""

from __future__ import annotations

import dataclasses
from typing import Any

import matplotlib.pyplot as plt

from testtask import diagnostics
from testtask.context import Context
from testtask.outputs import save_figure
from testtask.pretrain_on_test.fits import fit_checked, spec_from
from testtask.pretrain_on_test.hierarchical import TREATMENT, Fit, ModelData
from testtask.pretrain_on_test.simulate import TruePars, simulate_long


def recover(ctx: Context, beta: float, seed: int) -> tuple[Fit, dict]:
    shape = ctx.settings.figure_12
    long = simulate_long(
        TruePars(beta=beta),
        datasets=shape.datasets,
        subsamples=shape.subsamples,
        n=shape.n,
        lm_types=shape.lm_types,
        seed=seed,
    )
    data = ModelData.from_long(long)
    outcome = fit_checked(
        data, spec_from(ctx.settings), ctx.sampler, seed, ctx.cache_dir, ctx.limits(), ctx.settings.refit
    )
    fit = outcome.kept
    every = fit.diagnostics()
    d = every[TREATMENT]
    lo, hi = d["hdi_89"]
    cell = f"{ctx.paper} {ctx.output or 'figure 12'}, simulated data with true beta={beta}"
    return fit, {
        "true_beta": beta,
        **d,
        "covers_truth": bool(lo <= beta <= hi),
        "excludes_zero": bool(lo > 0 or hi < 0),
        "divergences": fit.divergences,
        "noncentered_t": fit.spec.noncentered_t,
        "target_accept": outcome.attempt.target_accept,
        "refit": outcome.record(lambda f: {"seconds": f.seconds, "from_cache": f.from_cache}),
        **diagnostics.assess(cell, every, fit.divergences, ctx.limits()),
    }


def figure_12(ctx: Context) -> dict:
    """Simulation recovery of a null and a non-null β: posterior and trace."""
    shape = ctx.settings.figure_12
    fig, axes = plt.subplots(2, 2, figsize=(10, 6))
    numbers: dict[str, Any] = {"paper": ctx.paper, "shape": dataclasses.asdict(shape), "panels": []}
    for row, beta in enumerate((shape.null_beta, shape.effect_beta)):
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
