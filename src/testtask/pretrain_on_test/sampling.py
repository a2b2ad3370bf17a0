"""Sample the §6.1 model: one entry, `fit`, over the two backends and three samplers (apart from
`hierarchical.py`, which the compiled kernel imports, to avoid an import cycle)."""

from __future__ import annotations

import time
from typing import Any

import pymc as pm

from testtask.pretrain_on_test import kernel_sampler
from testtask.pretrain_on_test.hierarchical import (
    Fit,
    ModelData,
    ModelSpec,
    build_bambi,
    build_marginal,
    resolve_spec,
)
from testtask.pretrain_on_test.settings import Backend
from testtask.settings import SamplerName


def fit(data: ModelData, spec: ModelSpec, sampler: Any, seed: int) -> Fit:
    """Sample the posterior. `sampler` has name (nutpie|pymc|numpyro), draws, tune, chains, cores, ..."""
    name = sampler["name"]
    draws, tune, chains = int(sampler["draws"]), int(sampler["tune"]), int(sampler["chains"])
    cores = int(sampler.get("cores", 1))
    target_accept = float(sampler.get("target_accept", 0.8))
    progress = bool(sampler.get("progressbar", False))
    chain_method = {"chain_method": sampler.get("chain_method", "parallel")}
    kwargs: dict[str, Any] = {"nuts_sampler_kwargs": chain_method} if name == "numpyro" else {}
    start = time.perf_counter()
    if spec.backend == "bambi":
        model = build_bambi(data.to_long(), spec)
        idata = model.fit(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            inference_method=name,
            random_seed=seed,
            progressbar=progress,
            target_accept=target_accept,
            **kwargs,
        )
    elif spec.backend == "marginal":
        spec = resolve_spec(data, spec)
        if name == "nutpie":
            idata = kernel_sampler.sample(
                data, spec, seed, kernel_sampler.NutsSettings(draws, tune, chains, cores, target_accept)
            )
        elif name in {"pymc", "numpyro"}:
            with build_marginal(data.shape, spec):
                pm.set_data({"correct": data.correct.astype(float), "trials": data.trials.astype(float)})
                idata = pm.sample(
                    draws=draws,
                    tune=tune,
                    chains=chains,
                    cores=cores,
                    random_seed=seed,
                    target_accept=target_accept,
                    progressbar=progress,
                    nuts_sampler=name,
                    compute_convergence_checks=False,
                    **kwargs,
                )
        else:
            raise ValueError(f"unknown sampler {name!r}; choose one of {', '.join(SamplerName)}")
    else:
        raise ValueError(f"unknown model backend {spec.backend!r}; choose one of {', '.join(Backend)}")
    return Fit(idata=idata, data=data, spec=spec, seconds=time.perf_counter() - start, sampler=name)
