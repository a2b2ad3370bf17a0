"""`make bench-vs-authors`: one configuration of Figure 3 fitted the authors' way and ours, side by side.

The authors' way: the §6.1 formula in bambi, PyMC's default NUTS on one core, then bambi's posterior predictive
(`Model.predict(kind="response")`) reduced to eq. 11. Ours: the marginal model on the compiled kernel (nutpie) and
our streaming posterior predictive. Same data, priors and draws.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import arviz as az
import numpy as np
import pandas as pd
import pytensor

from testtask.context import Context
from testtask.io import atomic_write_json
from testtask.pretrain_on_test import predictive
from testtask.pretrain_on_test.bench import machine
from testtask.pretrain_on_test.fits import configuration_data, plain, spec_from
from testtask.pretrain_on_test.hierarchical import TREATMENT, ModelData, build_bambi
from testtask.pretrain_on_test.inputs import load_collection
from testtask.pretrain_on_test.sampling import fit


def _interval_mcse(average: np.ndarray, chains: int, prob: float = 0.89) -> list[float]:
    """Monte Carlo standard errors of the two ends of the `prob` interval of `average` (chain-major draws), taken
    as quantiles: how far two samplers' intervals may differ by the draws alone."""
    draws = np.asarray(average).reshape(chains, -1)
    tail = (1 - prob) / 2
    return [float(az.mcse(draws, method="quantile", prob=p)) for p in (tail, 1 - tail)]


def _beta_row(
    method: str, posterior_beta: np.ndarray, seconds_fit: float, seconds_pp: float, average: np.ndarray
) -> dict[str, Any]:
    """`posterior_beta`: (chain, draw); `average`: eq. 11's average difference, one value per posterior draw, in
    the same chain-major order."""
    hdi = predictive.interval(average)
    mcse = _interval_mcse(average, posterior_beta.shape[0])
    return {
        "method": method,
        # Unrounded, for the ratios: a small configuration's fit can round to 0.0 s.
        "seconds": {"fit": seconds_fit, "predictive": seconds_pp},
        "fit_s": round(seconds_fit, 1),
        "predictive_s": round(seconds_pp, 1),
        "total_s": round(seconds_fit + seconds_pp, 1),
        "beta_mean": round(float(posterior_beta.mean()), 4),
        "beta_sd": round(float(posterior_beta.std()), 4),
        "r_hat": round(float(az.rhat(posterior_beta)), 3),
        "ess_bulk": round(float(az.ess(posterior_beta, method="bulk"))),
        "avg_diff_pts": round(100 * hdi["mean"], 2),
        "avg_diff_hdi89_pts": [round(100 * bound, 2) for bound in hdi["hdi_89"]],
        "avg_diff_hdi89_mcse_pts": [round(100 * se, 3) for se in mcse],
    }


def _authors(data: ModelData, ctx: Context, sampler: dict, seed: int) -> dict[str, Any]:
    long = data.to_long()
    model = build_bambi(long, spec_from(ctx.settings, backend="bambi"))
    start = time.perf_counter()
    idata = model.fit(
        draws=int(sampler["draws"]),
        tune=int(sampler["tune"]),
        chains=int(sampler["chains"]),
        cores=1,
        random_seed=seed,
        progressbar=bool(sampler.get("progressbar", False)),
    )
    seconds_fit = time.perf_counter() - start
    start = time.perf_counter()
    model.predict(idata, kind="response", inplace=True, random_seed=seed + 1)
    y_hat = idata.posterior_predictive[model.response_component.response.name].values  # (chain, draw, row)
    seconds_pp = time.perf_counter() - start
    # eq. 11: the average over (task, subsample, LM type) of (Ŷ_treatment − Ŷ_control) / n, per draw.
    sign = np.where(long["treatment"].to_numpy() == 1, 1.0, -1.0) / long["trials"].to_numpy()
    average = ((y_hat * sign).sum(axis=-1) / (len(long) / 2)).reshape(-1)
    beta = idata.posterior[TREATMENT].values
    return _beta_row("authors: bambi + PyMC NUTS, 1 core", beta, seconds_fit, seconds_pp, average) | {
        "divergences": int(idata.sample_stats["diverging"].sum())
    }


def _ours(data: ModelData, ctx: Context, sampler: dict, seed: int) -> dict[str, Any]:
    start = time.perf_counter()
    result = fit(data, spec_from(ctx.settings), sampler, seed)
    seconds_fit = time.perf_counter() - start
    start = time.perf_counter()
    pp = predictive.simulate(result, seed=seed + 1, workers=int(sampler.get("cores", 1)))
    seconds_pp = time.perf_counter() - start
    cores = int(sampler.get("cores", 1))
    beta = result.idata.posterior[TREATMENT].values
    return _beta_row(
        f"ours: marginal kernel + nutpie, {cores} core{'s' if cores > 1 else ''}",
        beta,
        seconds_fit,
        seconds_pp,
        pp.average,
    ) | {"divergences": result.divergences}


def bench_vs_authors(ctx: Context, config: Any) -> dict[str, Any]:
    """The `bench-vs-authors` action: both methods on `bench.vs_authors` (m, n, effect), printed and saved."""
    options = ctx.settings.bench.vs_authors
    frame = load_collection(ctx, "few_shot", m=int(options.m), n=int(options.n))
    data = configuration_data(frame, str(options.effect), ctx.settings.counts)
    sampler = {**plain(ctx.sampler), "progressbar": False}
    rows = [_authors(data, ctx, sampler, ctx.seed), _ours(data, ctx, sampler, ctx.seed)]
    if int(sampler.get("cores", 1)) > 1:  # ours on the authors' one core too, so the ratio is not only cores
        rows.append(_ours(data, ctx, {**sampler, "cores": 1}, ctx.seed))
    table = pd.DataFrame(rows).drop(columns="seconds")
    authors, ours = rows[0]["seconds"], rows[1]["seconds"]
    ratio = sum(authors.values()) / sum(ours.values())
    fit_ratio = authors["fit"] / ours["fit"]
    one_core = authors["fit"] / rows[-1]["seconds"]["fit"]
    blas = pytensor.config.blas__ldflags or None  # the authors' way runs its Gemv in Python without one
    print(table.to_markdown(index=False))
    print(
        f"\nm={options.m} n={options.n} {options.effect} ({data.shape[0]} tasks, {int(data.observed[:, :, 0].sum())} "
        f"subsample × LM cells), {sampler['chains']} chains x {sampler['draws']} draws after {sampler['tune']} "
        f"tuning steps both ways: ours is {fit_ratio:.0f}x faster per fit ({one_core:.0f}x on one core), "
        f"{ratio:.0f}x with the posterior predictive.\nmachine: {machine()}; PyTensor's BLAS: "
        f"{blas or 'none (its matrix-vector products run in Python)'}; {time.strftime('%Y-%m-%d')}"
    )
    result = {
        "configuration": {"m": int(options.m), "n": int(options.n), "effect": str(options.effect)},
        "sampler": {k: sampler.get(k) for k in ("draws", "tune", "chains", "cores", "target_accept")},
        "model": dataclasses.asdict(spec_from(ctx.settings)),
        "rows": rows,
        "speedup_fit": fit_ratio,
        "speedup_total": ratio,
        "speedup_fit_one_core": one_core,
        "machine": machine(),
        "pytensor_blas_ldflags": blas,
        "date": time.strftime("%Y-%m-%d"),
    }
    atomic_write_json(ctx.out_dir / "bench-vs-authors.json", result)
    return result
