"""Sample the §6.1 model: one entry, `fit`, over the two backends and three samplers.

It lives apart from the model definitions (`hierarchical.py`) because the fast path, the compiled kernel
(`kernel.py`), is built on those definitions: keeping the dispatch here leaves no import cycle between them.
"""

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
    start = time.perf_counter()
    if spec.backend == "bambi":
        model = build_bambi(data.to_long(), spec)
        kwargs = {"target_accept": target_accept}
        if name == "numpyro":
            kwargs["nuts_sampler_kwargs"] = {"chain_method": sampler.get("chain_method", "parallel")}
        idata = model.fit(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            inference_method=name,
            random_seed=seed,
            progressbar=progress,
            **kwargs,
        )
    elif spec.backend == "marginal":
        spec = resolve_spec(data, spec)
        values = {"correct": data.correct.astype(float), "trials": data.trials.astype(float)}
        if name == "nutpie":
            idata = kernel_sampler.sample(
                data, spec, seed, kernel_sampler.NutsSettings(draws, tune, chains, cores, target_accept)
            )
        elif name in {"pymc", "numpyro"}:
            model = build_marginal(data.shape, spec)
            kwargs: dict[str, Any] = {}
            if name == "numpyro":
                kwargs["nuts_sampler_kwargs"] = {"chain_method": sampler.get("chain_method", "parallel")}
            with model:
                pm.set_data(values)
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
