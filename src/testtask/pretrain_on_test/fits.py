"""Fit the §6.1 model to one configuration of raw results, with an on-disk cache of posteriors.

A fit is keyed by its data, model spec, sampler settings and seed; each file stores its key and the model code's
version (`cache_entry`), and one that does not match is refitted.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import arviz as az
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from testtask import diagnostics, schema
from testtask.io import atomic_save
from testtask.pretrain_on_test import accuracies, cache_entry, refit
from testtask.pretrain_on_test.hierarchical import Fit, ModelData, ModelSpec, resolve_spec
from testtask.pretrain_on_test.sampling import fit
from testtask.pretrain_on_test.settings import Refit, Settings

log = logging.getLogger(__name__)


def plain(cfg: Any) -> Any:
    """Sampler settings as a plain mapping (typed settings, a config node or a mapping already)."""
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return schema.to_plain(cfg)
    return OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else cfg


def fit_key(data: ModelData, spec: ModelSpec, sampler: dict, seed: int) -> str:
    """The posterior cache key of one fit: the data it saw, the model, the sampler settings and the seed."""
    h = hashlib.sha256()
    h.update(data.correct.tobytes())
    h.update(data.trials.tobytes())
    h.update(json.dumps([data.datasets, data.lm_types], sort_keys=True).encode())
    # collapse_s re-parameterises the same posterior of every cached quantity (c, t, α, β, σ's) and came after
    # the caches it would otherwise invalidate, so it is left out of the key; so is subsample_effect at its
    # default (the V term present), which every cache before it fitted.
    model = {
        k: v
        for k, v in dataclasses.asdict(spec).items()
        if k != "collapse_s" and not (k == "subsample_effect" and v)
    }
    h.update(json.dumps(model, sort_keys=True, default=str).encode())
    sampling = {k: sampler[k] for k in ("name", "draws", "tune", "chains", "target_accept") if k in sampler}
    h.update(json.dumps([sampling, seed], sort_keys=True).encode())
    return h.hexdigest()[:20]


def _read_cache(path: Path, key: str) -> az.InferenceData | None:
    """The cached posterior at `path`, or None when there is none, it cannot be read or it does not prove it holds
    the fit `key` of today's model code (such an entry is reported, removed and fitted again)."""
    if not path.is_file():
        return None
    try:
        idata = az.from_netcdf(path)
        idata.posterior.load()  # read the draws now, so a damaged file fails here and not in a figure
    except Exception as err:  # noqa: BLE001 - netCDF/HDF5 raise many types; any unreadable cache is refitted
        log.warning(
            "cached posterior %s is unreadable (%s: %s); removing it and fitting again",
            path,
            type(err).__name__,
            err,
        )
        path.unlink(missing_ok=True)
        return None
    problem = cache_entry.mismatch(idata.attrs, key)
    if problem is not None:
        log.warning(
            "cached posterior %s is not the fit asked for: %s; removing it and fitting again", path, problem
        )
        path.unlink(missing_ok=True)
        return None
    return idata


def fit_cached(data: ModelData, spec: ModelSpec, sampler: Any, seed: int, cache_dir: Path | None) -> Fit:
    """The fit of `data` under `spec`, `sampler` and `seed`: read from `cache_dir`, else sampled and cached."""
    sampler = dict(plain(sampler))
    key = fit_key(data, spec, sampler, seed)
    path = Path(cache_dir) / f"{key}.nc" if cache_dir else None
    idata = _read_cache(path, key) if path is not None else None
    if idata is not None:
        seconds = float(idata.attrs.get("fit_seconds", float("nan")))
        log.info("reusing cached posterior %s", path.name)
        resolved = resolve_spec(data, spec) if spec.backend == "marginal" else spec
        return Fit(
            idata=idata, data=data, spec=resolved, seconds=seconds, sampler=sampler["name"], from_cache=True
        )
    result = fit(data, spec, sampler, seed)
    if path is not None:
        result.idata.attrs["fit_seconds"] = result.seconds
        result.idata.attrs.update(cache_entry.stamp(key))
        # Uncompressed: posterior draws are doubles that zlib cannot shrink (the file is as large either way),
        # and compressing them took longer than fitting the smaller configurations.
        atomic_save(path, lambda tmp: result.idata.to_netcdf(str(tmp), compress=False))
    return result


def fit_checked(
    data: ModelData,
    spec: ModelSpec,
    sampler: Any,
    seed: int,
    cache_dir: Path | None,
    limits: diagnostics.Thresholds,
    policy: Refit,
) -> refit.Outcome[Fit]:
    """The fit of `data`, refitted as `policy` says while it fails its diagnostics (`refit.py`); each attempt is a
    cached fit under its own settings, so a cache key holds exactly the fit it names."""
    sampler = dict(plain(sampler))
    attempts = refit.ladder(data, spec, sampler, policy)
    first = attempts[0]

    def run(attempt: refit.Attempt) -> Fit:
        if attempt == first:  # the configured fit, keyed as configured (`auto` included)
            return fit_cached(data, spec, sampler, seed, cache_dir)
        explicit = spec
        if attempt.noncentered_t is not None:
            explicit = dataclasses.replace(spec, noncentered_t=attempt.noncentered_t)
        return fit_cached(
            data, explicit, {**sampler, "target_accept": attempt.target_accept}, seed, cache_dir
        )

    def check(result: Fit) -> list[diagnostics.Failure]:
        return diagnostics.failures(result.diagnostics(), result.divergences, limits)

    outcome = refit.healthiest(attempts, run, check)
    if outcome.refitted:
        log.info(
            "refitted a fit that failed its diagnostics: %s; kept attempt %d",
            "; ".join(
                f"noncentered_t={a.noncentered_t} target_accept={a.target_accept}: "
                f"{', '.join(f.text() for f in found) or 'ok'}"
                for a, found in outcome.tried
            ),
            outcome.index,
        )
    return outcome


def configuration_data(frame: pd.DataFrame, effect: str, counts: str) -> ModelData:
    """The §6.1 model's data of one configuration's accuracies, counted by rule `counts` (`accuracies.model_counts`)."""
    return ModelData.from_long(accuracies.paired_long(frame, effect, counts))


def spec_from(settings: Settings, **overrides: Any) -> ModelSpec:
    """The configured model (`settings.model`), with `overrides` (e.g. interaction=False) replaced."""
    return dataclasses.replace(settings.model, **overrides)
