"""Figure 7 (§10): would the conclusions hold without repeated subsampling? The bias model is refitted on random
de-replicated slices (one subsample per task) and the posterior means of β are summarised."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from testtask import diagnostics, schema
from testtask.context import Context, InputsUnavailable
from testtask.io import atomic_write_json
from testtask.outputs import save_figure
from testtask.pretrain_on_test import cache_entry, kernel_sampler, refit
from testtask.pretrain_on_test.fits import configuration_data, fit_key, plain, spec_from
from testtask.pretrain_on_test.hierarchical import TREATMENT, ModelData, ModelSpec, resolve_spec
from testtask.pretrain_on_test.inputs import LOG_ODDS, SHARE, load_collection
from testtask.pretrain_on_test.posterior_panels import configurations
from testtask.pretrain_on_test.sampling import fit as fit_model
from testtask.pretrain_on_test.settings import Refit

log = logging.getLogger(__name__)


def slice_data(
    frame: pd.DataFrame, slices: int, rng: np.random.Generator, counts: str, per_lm_type: bool = False
) -> list[ModelData]:
    """`slices` de-replicated data sets: per task, one subsample drawn uniformly, the same k for every LM type; with
    `per_lm_type`, one per (task, LM type), as the authors' `meta.py` `_down_sample` does. Cut from the data array:
    a data frame per slice took longer to build than fitting the slice."""
    full = configuration_data(frame, "bias", counts)
    candidates = [part.subsample.unique() for _, part in frame.groupby("dataset")]
    assert [str(d) for d, _ in frame.groupby("dataset")] == full.datasets  # the same task order
    tasks = np.arange(len(candidates))
    lms = np.arange(len(full.lm_types))
    out = []
    for _ in range(slices):
        if per_lm_type:
            k = np.array(
                [[rng.choice(_observed(full, j, lm, c)) for lm in lms] for j, c in enumerate(candidates)]
            )
            correct = full.correct[tasks[:, None], k, lms[None, :]][:, None]
            trials = full.trials[tasks[:, None], k, lms[None, :]][:, None]
        else:
            k = np.array([rng.choice(c) for c in candidates])
            correct, trials = full.correct[tasks, k][:, None], full.trials[tasks, k][:, None]
        lm_present = trials.sum(axis=(0, 1, 3)) > 0  # an LM type absent from every picked subsample drops out
        out.append(
            ModelData(
                correct[:, :, lm_present],
                trials[:, :, lm_present],
                full.datasets,
                [lm for lm, keep in zip(full.lm_types, lm_present, strict=True) if keep],
                np.ones(len(tasks), dtype=int),
            )
        )
    return out


def _observed(full: ModelData, task: int, lm: int, candidates: np.ndarray) -> np.ndarray:
    """The subsamples of `task` that LM type `lm` has (all candidates where it has none, so the draw is kept)."""
    have = [k for k in candidates if full.trials[task, k, lm].sum() > 0]
    return np.asarray(have) if have else candidates


@dataclass(frozen=True)
class SliceFit:
    """What Figure 7 keeps of one slice fit; `refit`: every attempt (`refit.Outcome.record`), None without a refit."""

    mean: float
    hdi_low: float
    hdi_high: float
    r_hat: float
    ess_bulk: float
    divergences: int
    noncentered_t: bool | None
    target_accept: float
    refit: dict | None


def _summarise(beta: np.ndarray, divergences: int, attempt: refit.Attempt) -> SliceFit:
    """`beta`: (chain, draw) draws of β. One chain (the authors' slice fits) has no between-chain r̂: its two halves
    stand in as chains (split r̂)."""
    lo, hi = az.hdi(beta.ravel(), hdi_prob=0.89)
    halves = beta.shape[1] // 2
    chains = beta[:, : 2 * halves].reshape(2, halves) if beta.shape[0] == 1 else beta
    return SliceFit(
        mean=float(beta.mean()),
        hdi_low=float(lo),
        hdi_high=float(hi),
        r_hat=float(az.rhat(chains)),
        ess_bulk=float(az.ess(beta, method="bulk")),
        divergences=int(divergences),
        noncentered_t=attempt.noncentered_t,
        target_accept=attempt.target_accept,
        refit=None,
    )


def _sample_slice(data: ModelData, spec: ModelSpec, sampler: dict, seed: int) -> SliceFit:
    """One slice fit: β's draws straight from nutpie's trace (one thread per fit), else through the general `fit`."""
    resolved = resolve_spec(data, spec) if spec.backend == "marginal" else spec
    attempt = refit.first_attempt(resolved, sampler)
    if sampler["name"] == "nutpie" and spec.backend == "marginal":
        settings = kernel_sampler.NutsSettings(
            draws=int(sampler["draws"]),
            tune=int(sampler["tune"]),
            chains=int(sampler["chains"]),
            cores=1,
            target_accept=float(sampler.get("target_accept", 0.8)),
        )
        draws = kernel_sampler.sample_hyper(data, resolved, seed, settings)
        return _summarise(draws.values[TREATMENT], draws.divergences, attempt)
    result = fit_model(data, spec, {**sampler, "cores": 1}, seed)
    return _summarise(result.idata.posterior[TREATMENT].values, result.divergences, attempt)


def _slice_failures(fit: SliceFit, limits: diagnostics.Thresholds) -> list[diagnostics.Failure]:
    """A slice fit's failed diagnostics, of β (the only parameter a slice keeps)."""
    return diagnostics.failures(
        {TREATMENT: {"r_hat": fit.r_hat, "ess_bulk": fit.ess_bulk}}, fit.divergences, limits
    )


def _fit_slice(
    data: ModelData,
    spec: ModelSpec,
    sampler: dict,
    seed: int,
    limits: diagnostics.Thresholds,
    policy: Refit,
) -> SliceFit:
    """One slice fit, refitted as `policy` says while it fails its diagnostics (`refit.py`)."""
    attempts = refit.ladder(data, spec, sampler, policy)

    def run(attempt: refit.Attempt) -> SliceFit:
        tried = spec
        if attempt.noncentered_t is not None and attempt.noncentered_t != attempts[0].noncentered_t:
            tried = dataclasses.replace(spec, noncentered_t=attempt.noncentered_t)
        return _sample_slice(data, tried, {**sampler, "target_accept": attempt.target_accept}, seed)

    outcome = refit.healthiest(attempts, run, lambda fit: _slice_failures(fit, limits))
    if not outcome.refitted:
        return outcome.kept
    return dataclasses.replace(outcome.kept, refit=outcome.record())


def _cache_entry(
    ctx: Context, jobs: list[tuple[ModelData, int]], spec: ModelSpec, sampler: dict
) -> tuple[Path, str] | None:
    """Where a panel's slice fits are cached, and its key: its fits' cache keys, the diagnostics limits and the
    refit policy."""
    if ctx.cache_dir is None:
        return None
    h = hashlib.sha256()
    for data, seed in jobs:
        h.update(fit_key(data, spec, sampler, seed).encode())
    policy = [dataclasses.asdict(ctx.limits()), schema.to_plain(ctx.settings.refit)]
    h.update(json.dumps(policy, sort_keys=True).encode())
    key = h.hexdigest()
    return Path(ctx.cache_dir) / f"figure-7-slices-{key[:20]}.json", key


def _read_panel(path: Path, key: str) -> dict | None:
    """The cached panel at `path` if it proves it holds `key` under today's model code; else None, the file removed
    with a warning."""
    if not path.is_file():
        return None
    try:
        cached = json.loads(path.read_text())
        problem = cache_entry.mismatch(cached, key)
    except (ValueError, AttributeError) as err:  # truncated JSON, or JSON that is not an object
        problem = f"it is unreadable ({type(err).__name__}: {err})"
    if problem is not None:
        log.warning("cached slice fits %s are not the panel asked for: %s; fitting again", path, problem)
        path.unlink(missing_ok=True)
        return None
    return cached


def _run_slices(ctx: Context, jobs: list[tuple[ModelData, int]], spec: ModelSpec, sampler: dict, label: str):
    """Fit every slice, `sampler.cores` at a time in threads (the kernel holds no GIL); a finished panel is cached."""
    entry = _cache_entry(ctx, jobs, spec, sampler)
    cached = _read_panel(*entry) if entry is not None else None
    if cached is not None:
        log.info("%s: %d slice fits from the cache (fitted in %.0f s)", label, len(jobs), cached["seconds"])
        return [SliceFit(**row) for row in cached["fits"]], cached["seconds"], True
    started = time.perf_counter()
    workers = max(1, int(sampler.get("cores", 1)))
    limits, policy = ctx.limits(), ctx.settings.refit
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_fit_slice, data, spec, sampler, seed, limits, policy) for data, seed in jobs]
        fits = [future.result() for future in tqdm(futures, desc=label, unit="slice")]
    seconds = time.perf_counter() - started
    if entry is not None:
        path, key = entry
        stored = {**cache_entry.stamp(key), "seconds": seconds, "fits": [dataclasses.asdict(f) for f in fits]}
        atomic_write_json(path, stored)
    return fits, seconds, False


SHOWN_SLICES = 5  # failing slices a warning lists by number; the sidecar has them all


def _check_slices(
    cell: str, fits: list[SliceFit], limits: diagnostics.Thresholds
) -> list[list[diagnostics.Failure]]:
    """Each slice fit's failed diagnostics; one warning per panel names the failing slices (not one per slice)."""
    checked = [_slice_failures(f, limits) for f in fits]
    failing = [(i, found) for i, found in enumerate(checked) if found]
    if failing:
        shown = "; ".join(
            f"slice {i}: {', '.join(f.text() for f in found)}" for i, found in failing[:SHOWN_SLICES]
        )
        more = f"; and {len(failing) - SHOWN_SLICES} more" if len(failing) > SHOWN_SLICES else ""
        log.warning(
            "fit diagnostics failed for %s: %d of %d slice fits: %s%s",
            cell,
            len(failing),
            len(fits),
            shown,
            more,
        )
    return checked


def meta_analysis(ctx: Context, frame: pd.DataFrame, slices: int, band: float, seed: int) -> dict:
    """Refit the bias model on `slices` random slices with one subsample per task; summarise β's posterior means."""
    settings = ctx.settings.figure_7
    sampler = {
        **plain(ctx.sampler),
        "draws": settings.draws,
        "tune": settings.tune,
        "chains": settings.chains,
        "progressbar": False,
    }
    spec = spec_from(
        ctx.settings, interaction=settings.interaction, subsample_effect=settings.subsample_effect
    )
    data = slice_data(
        frame,
        slices,
        np.random.default_rng(seed),
        ctx.settings.counts,
        per_lm_type=settings.draw == "per_lm_type",
    )
    jobs = [(one, seed + idx) for idx, one in enumerate(data)]
    label = f"meta m={frame.m.iloc[0]} n={frame.n.iloc[0]}"
    fits, seconds, from_cache = _run_slices(ctx, jobs, spec, sampler, label)
    means_arr = np.array([f.mean for f in fits])
    excludes_zero = np.array([f.hdi_low > 0 or f.hdi_high < 0 for f in fits])
    r_hat = np.array([f.r_hat for f in fits])
    ess = np.array([f.ess_bulk for f in fits])
    divergences = np.array([f.divergences for f in fits])
    outside = np.abs(means_arr) >= band
    lm_types = ", ".join(sorted(map(str, frame.lm_type.unique())))
    cell = f"{ctx.paper} {ctx.output or 'figure 7'}, {label} bias (LM types {lm_types})"
    checked = _check_slices(cell, fits, ctx.limits())
    refitted = [found for f, found in zip(fits, checked, strict=True) if f.refit is not None]
    if refitted:
        log.info(
            "%s: %d slice fits refitted after failing their diagnostics, %d of them then passing",
            cell,
            len(refitted),
            sum(not found for found in refitted),
        )
    return {
        "m": int(frame.m.iloc[0]),
        "n": int(frame.n.iloc[0]),
        "lm_types": sorted(frame.lm_type.unique()),
        "slices": slices,
        "band": band,
        "share_outside_band": float(outside.mean()),
        "share_hdi_excludes_zero": float(excludes_zero.mean()),
        "share_outside_band_with_hdi_excluding_zero": float(np.mean(excludes_zero[outside]))
        if outside.any()
        else None,
        # Monte Carlo error of the share: the slices are independent draws of the de-replication.
        "share_outside_band_se": float(np.sqrt(outside.mean() * (1 - outside.mean()) / slices)),
        "posterior_means": means_arr,
        "diagnostics": {
            "worst_r_hat": float(r_hat.max()),
            "min_ess_bulk": float(ess.min()),
            "slices_r_hat_over_1_01": int((r_hat > 1.01).sum()),
            "divergences": int(divergences.sum()),
            "slices_with_divergences": int((divergences > 0).sum()),
            "per_slice": {
                "r_hat": r_hat,
                "ess_bulk": ess,
                "divergences": divergences,
                diagnostics.OK: [not found for found in checked],
                # what each kept fit ran with (None: no t_j to choose), and how many attempts it took
                "noncentered_t": [f.noncentered_t for f in fits],
                "target_accept": [f.target_accept for f in fits],
                "attempts": [len(f.refit["attempts"]) if f.refit else 1 for f in fits],
            },
        },
        # the slices refitted after failing their diagnostics, each with every attempt (`refit.py`)
        "refits": {
            "slices_refitted": len(refitted),
            "refitted_and_passing": sum(not found for found in refitted),
            "slices": [{"slice": i, **f.refit} for i, f in enumerate(fits) if f.refit is not None],
        },
        diagnostics.OK: not any(checked),
        diagnostics.FAILURES: [
            {"slice": i, **failure}
            for i, found in enumerate(checked)
            for failure in diagnostics.record(found)[diagnostics.FAILURES]
        ],
        "sampler": {k: sampler.get(k) for k in ("name", "draws", "tune", "chains", "target_accept")},
        "seconds": seconds,
        "from_cache": from_cache,
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
        result = meta_analysis(ctx, part, settings.slices, settings.band, ctx.seed)
        panels.append({"label": "few-shot (BERT, GPT-2)", **result})
    except InputsUnavailable as err:
        notes.append(str(err))
    try:
        zero = load_collection(ctx, "zero_shot")
        m, n = configurations(zero)[-1]
        part = zero[(zero.m == m) & (zero.n == n)]
        result = meta_analysis(ctx, part, settings.slices, settings.band_zero_shot, ctx.seed + 7)
        panels.append({"label": "zero-shot (Mistral-7B)", **result})
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
