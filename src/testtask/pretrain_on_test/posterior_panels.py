"""Fit the §6.1 model to one (m, n, effect) configuration, or to every configuration of a collection, and
summarise each fit as a panel: the numbers the posterior figures (3–6, 9, 10) put in their JSON sidecars."""

from __future__ import annotations

import logging
import zlib
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from testtask import diagnostics
from testtask.context import Context, InputsUnavailable
from testtask.pretrain_on_test import predictive
from testtask.pretrain_on_test.fits import configuration_data, fit_checked, spec_from
from testtask.pretrain_on_test.hierarchical import TREATMENT
from testtask.pretrain_on_test.inputs import collection_folders, collection_names, load_collection
from testtask.pretrain_on_test.settings import LmTypeFit

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
    """Fit one (m, n, effect), draw the posterior predictive, and collect the numbers for the JSON sidecar."""
    data = configuration_data(frame, effect, ctx.settings.counts)
    spec = spec_from(ctx.settings, **spec_overrides)
    outcome = fit_checked(
        data, spec, ctx.sampler, ctx.seed + seed_offset, ctx.cache_dir, ctx.limits(), ctx.settings.refit
    )
    fit = outcome.kept
    pred = ctx.settings.predictive
    pp = predictive.simulate_cached(
        fit,
        seed=ctx.seed + seed_offset + 1,
        max_draws=pred.max_draws,
        workers=ctx.sampler.cores,
        cache_dir=ctx.cache_dir,
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
        # every attempt's (a refitted fit ran several, `refit`); from the cache: their original times
        "fit_seconds": sum(f.seconds for f in outcome.results),
        "from_cache": all(f.from_cache for f in outcome.results),
        "sampler": fit.sampler,
        "backend": spec.backend,
        "noncentered_t": fit.spec.noncentered_t,  # of the kept fit
        "target_accept": outcome.attempt.target_accept,  # of the kept fit
        "refit": outcome.record(lambda f: {"seconds": f.seconds, "from_cache": f.from_cache}),
        **diagnostics.assess(
            cell_name(ctx, frame, effect, where, **spec_overrides), diag, fit.divergences, ctx.limits()
        ),
    }
    return {"panel": panel, "fit": fit, "predictive": pp}


def fit_record(panel: dict) -> dict:
    """What a figure that draws on a fit records of its health, for the report and `analysis/fit_diagnostics.py`."""
    keys = ("m", "n", "effect", "lm_types", "divergences", "noncentered_t", "target_accept", "refit")
    keys += (diagnostics.OK, diagnostics.FAILURES)
    return {k: panel[k] for k in keys}


def configurations(frame: pd.DataFrame) -> list[tuple[int, int]]:
    """The (m, n) pairs present in `frame`, sorted."""
    return sorted({(int(m), int(n)) for m, n in zip(frame.m, frame.n, strict=True)})


def posterior_collection(ctx: Context, role: str) -> pd.DataFrame:
    """Collection `role`'s accuracies with the LM types of `settings.lm_types.read` (None: all)."""
    frame = load_collection(ctx, role)
    wanted = ctx.settings.lm_types.read
    if wanted is None:
        return frame
    present = sorted(map(str, frame.lm_type.unique()))
    lacking = [lm for lm in wanted if lm not in present]
    if lacking:
        name = collection_names(ctx)[role]
        where = ", ".join(str(folder) for folder in collection_folders(ctx, name))
        raise InputsUnavailable(
            f"pretrain_on_test.lm_types.read = [{', '.join(wanted)}]: {name} ({where}) has no "
            f"{', '.join(lacking)}; its LM types are {', '.join(present)}: name some of them, or null for all"
        )
    return frame[frame.lm_type.isin(wanted)].reset_index(drop=True)


def fit_groups(ctx: Context, part: pd.DataFrame) -> list[pd.DataFrame]:
    """The fits of one (m, n): the LM types pooled in one (`lm_types.fit = pooled`), or one per LM type."""
    if ctx.settings.lm_types.fit == LmTypeFit.pooled:
        return [part]
    return [part[part.lm_type == lm] for lm in sorted(part.lm_type.unique())]


def fit_collection(ctx: Context, role: str, effects: list[str] | None = None) -> list[dict]:
    """Every (m, n, effect) of collection `role` fitted (`fit_panel`), in (m, n, effect, LM type) order."""
    frame = posterior_collection(ctx, role)
    effects = effects or list(ctx.settings.effects)
    jobs = [
        (m, n, e, group)
        for m, n in configurations(frame)
        for e in effects
        for group in fit_groups(ctx, frame[(frame.m == m) & (frame.n == n)])
    ]
    results = []
    for m, n, effect, part in tqdm(jobs, desc=f"fits ({role})", unit="fit"):
        # A seed per configuration, not per position in the job list, so figures share cached fits (and one LM
        # type fitted on its own is the pooled fit of a collection that holds only it).
        result = fit_panel(
            ctx,
            part,
            effect,
            seed_offset=zlib.crc32(f"{role}/{m}/{n}/{effect}".encode()) % 100_000,
            where=role,
        )
        seconds = result["panel"]["fit_seconds"]
        log.info(
            "%s m=%d n=%d %s (%s): beta %.3f (r_hat %.3f, ess %.0f), %s",
            role,
            m,
            n,
            effect,
            ", ".join(result["panel"]["lm_types"]),
            result["panel"]["beta"]["mean"],
            result["panel"]["beta"]["r_hat"],
            result["panel"]["beta"]["ess_bulk"],
            f"from the cache (fitted in {seconds:.1f} s)"
            if result["panel"]["from_cache"]
            else f"{seconds:.1f} s",
        )
        results.append(result)
    return results
