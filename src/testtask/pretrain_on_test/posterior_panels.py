"""Fit the §6.1 model to one (m, n, effect) configuration, or to every configuration of a collection, and
summarise each fit as a panel: the numbers the posterior figures (3–6, 9, 10) put in their JSON sidecars."""

from __future__ import annotations

import logging
import zlib
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from testtask import diagnostics
from testtask.context import Context
from testtask.pretrain_on_test import predictive
from testtask.pretrain_on_test.fits import configuration_data, fit_cached, spec_from
from testtask.pretrain_on_test.hierarchical import TREATMENT
from testtask.pretrain_on_test.inputs import load_collection

log = logging.getLogger(__name__)


def cell_name(ctx: Context, frame: pd.DataFrame, effect: str, where: str = "", **spec_overrides: Any) -> str:
    """A fit's cell as the diagnostics warning names it, e.g. "pretrain-on-test figure 3, few_shot m=50 n=50
    bias (LM types bert, gpt2)"."""
    parts = [f"{ctx.paper} {ctx.output or ''}".strip() + ",", where, f"m={int(frame.m.iloc[0])}"]
    parts += [f"n={int(frame.n.iloc[0])}", effect, *(f"{k}={v}" for k, v in spec_overrides.items())]
    parts.append(f"(LM types {', '.join(sorted(map(str, frame.lm_type.unique())))})")
    return " ".join(p for p in parts if p)


def fit_panel(
    ctx: Context,
    frame: pd.DataFrame,
    effect: str,
    seed_offset: int = 0,
    where: str = "",
    **spec_overrides: Any,
) -> dict:
    """Fit one (m, n, effect), draw the posterior predictive, and collect the numbers for the JSON sidecar.
    `where` (e.g. the collection's role) goes into the cell a failed diagnostics warning names."""
    data = configuration_data(frame, effect)
    spec = spec_from(ctx.settings, **spec_overrides)
    fit = fit_cached(data, spec, ctx.sampler, ctx.seed + seed_offset, ctx.cache_dir)
    pred = ctx.settings.predictive
    pp = predictive.simulate(
        fit,
        seed=ctx.seed + seed_offset + 1,
        max_draws=pred.max_draws,
        workers=ctx.sampler.cores,
    )
    diag = fit.diagnostics()
    beta = diag[TREATMENT]
    panel = {
        "m": int(frame.m.iloc[0]),
        "n": int(frame.n.iloc[0]),
        "effect": effect,
        "lm_types": data.lm_types,
        "datasets": len(data.datasets),
        # which tasks the fit pooled (an own dataset shows here)
        "dataset_names": [str(d) for d in data.datasets],
        "subsamples": int(data.observed[:, :, 0].sum()),
        "average_difference": predictive.interval(pp.average, pred.hdi_prob),
        "beta": {k: beta[k] for k in ("mean", "sd", "hdi_89", "r_hat", "ess_bulk", "ess_tail")},
        "sigmas": {k: v for k, v in diag.items() if k != TREATMENT},
        "raw_mean_difference": pp.observed_average(),
        "divergences": fit.divergences,
        "fit_seconds": fit.seconds,
        "from_cache": fit.from_cache,  # true: fit_seconds is the cached fit's original time, not this run's
        "sampler": fit.sampler,
        "backend": spec.backend,
        "noncentered_t": fit.spec.noncentered_t,
        **diagnostics.assess(
            cell_name(ctx, frame, effect, where, **spec_overrides), diag, fit.divergences, ctx.limits()
        ),
    }
    return {"panel": panel, "fit": fit, "predictive": pp}


def configurations(frame: pd.DataFrame) -> list[tuple[int, int]]:
    """The (m, n) pairs present in `frame`, sorted."""
    return sorted({(int(m), int(n)) for m, n in zip(frame.m, frame.n, strict=True)})


def fit_collection(ctx: Context, role: str, effects: list[str] | None = None) -> list[dict]:
    frame = load_collection(ctx, role)
    effects = effects or list(ctx.settings.effects)
    jobs = [(m, n, e) for m, n in configurations(frame) for e in effects]
    results = []
    for m, n, effect in tqdm(jobs, desc=f"fits ({role})", unit="fit"):
        part = frame[(frame.m == m) & (frame.n == n)]
        # A seed per configuration, not per position in the job list, so figures share cached fits.
        result = fit_panel(
            ctx,
            part,
            effect,
            seed_offset=zlib.crc32(f"{role}/{m}/{n}/{effect}".encode()) % 100_000,
            where=role,
        )
        seconds = result["panel"]["fit_seconds"]
        log.info(
            "%s m=%d n=%d %s: beta %.3f (r_hat %.3f, ess %.0f), %s",
            role,
            m,
            n,
            effect,
            result["panel"]["beta"]["mean"],
            result["panel"]["beta"]["r_hat"],
            result["panel"]["beta"]["ess_bulk"],
            f"from the cache (fitted in {seconds:.1f} s)"
            if result["panel"]["from_cache"]
            else f"{seconds:.1f} s",
        )
        results.append(result)
    return results
