"""Sample the marginal §6.1 model with nutpie, the compiled kernel (`kernel.py`) passed to it as C callbacks.

No draw or gradient goes through Python (chains run in threads without the GIL, and a small fit saves ~15 µs of
call overhead per gradient). The binding follows `nutpie.compile_pymc`: `LogpFunc`/`ExpandFunc` over C function
addresses and a pointer to the data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from nutpie import _lib
from nutpie.sample import CompiledModel

from testtask.pretrain_on_test.hierarchical import ModelData, ModelSpec
from testtask.pretrain_on_test.kernel import Layout, callbacks, initial_point, priors_vector


@dataclass(frozen=True)
class KernelModel(CompiledModel):
    """A nutpie model whose log density and draw expansion are the compiled kernel."""

    buffer: np.ndarray
    layout: Layout
    names: list[str]
    shapes_: list[tuple[int, ...]]
    coords_: dict[str, Any]
    initial: Any

    @property
    def n_dim(self) -> int:
        return self.layout.ndim

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        return dict(zip(self.names, self.shapes_, strict=True))

    @property
    def coords(self) -> dict[str, Any]:
        return self.coords_

    def _make_model(self, init_mean):
        n_expanded = int(sum(int(np.prod(shape)) for shape in self.shapes_))
        buffer_address = self.buffer.ctypes.data
        logp_callback, expand_callback = callbacks()
        expand = _lib.ExpandFunc(self.n_dim, n_expanded, expand_callback.address, buffer_address, self)
        logp = _lib.LogpFunc(logp_callback.address, buffer_address, self)
        dim_sizes = {name: len(values) for name, values in self.coords_.items()}
        variables = _lib.PyVariable.new_variables(
            self.names, ["float64"] * len(self.names), self.shapes_, dim_sizes, self.dims
        )
        return _lib.PyMcModel(
            logp, expand, variables, self.n_dim, dim_sizes, self.coords_, self.initial, None
        )

    def _make_sampler(self, settings, init_mean, cores, progress_type, store):
        return _lib.PySampler.from_pymc(settings, cores, self._make_model(init_mean), progress_type, store)


def kernel_model(data: ModelData, spec: ModelSpec, hyper_only: bool = False) -> KernelModel:
    """The nutpie model of one fit of `spec` (resolved: `noncentered_t` and `collapse_s` decided); posterior
    variables are named as in the PyMC model."""
    noncentered, collapsed = bool(spec.noncentered_t), bool(spec.collapse_s)
    if not spec.subsample_effect and not (collapsed and data.shape[1] == 1):
        raise ValueError(
            "a model without the V term needs one subsample per task, s_j collapsed (resolve_spec)"
        )
    layout = Layout(data.shape, spec, noncentered, collapsed)
    n_j, n_k, n_i, _ = data.shape
    flags = [n_j, n_k, n_i, spec.interaction, noncentered, collapsed, hyper_only, spec.subsample_effect]
    flags.append(int(layout.scales))
    buffer = np.concatenate(
        [
            np.asarray(flags, dtype=np.float64),
            priors_vector(spec),
            np.ascontiguousarray(data.correct, dtype=np.float64).ravel(),
            np.ascontiguousarray(data.trials, dtype=np.float64).ravel(),
        ]
    )
    template = layout.expand(np.zeros(layout.ndim))
    if hyper_only:
        template = dict(list(template.items())[: 5 if spec.interaction else 4])
    dims = {"s": ("dataset",), "t": ("dataset",), "c": ("dataset", "subsample"), "t_offset": ("dataset",)}
    return KernelModel(
        dims={k: v for k, v in dims.items() if k in template},
        buffer=buffer,
        layout=layout,
        names=list(template),
        shapes_=[tuple(np.shape(v)) for v in template.values()],
        coords_={"dataset": np.arange(n_j), "subsample": np.arange(n_k)},
        # called from each chain's thread with its own seed, so a chain's start does not depend on the threads'
        # timing (a shared generator could swap two chains' starts between reruns)
        initial=lambda chain_seed: initial_point(data, layout, np.random.default_rng(chain_seed)),
    )


@dataclass(frozen=True)
class NutsSettings:
    """The sampler settings of one fit."""

    draws: int
    tune: int
    chains: int
    cores: int
    target_accept: float


def _run(model: KernelModel, seed: int, settings: NutsSettings, raw: bool):
    """`settings.chains` chains on up to `settings.cores` threads (the callbacks hold no GIL)."""
    import nutpie

    return nutpie.sample(
        model,
        draws=settings.draws,
        tune=settings.tune,
        chains=settings.chains,
        cores=max(1, min(settings.cores, settings.chains)),
        seed=seed,
        target_accept=settings.target_accept,
        progress_bar=False,
        save_warmup=False,
        return_raw_trace=raw,
    )


def sample(data: ModelData, spec: ModelSpec, seed: int, settings: NutsSettings):
    """Every posterior variable of one fit of `spec` (resolved), as one InferenceData."""
    return _run(kernel_model(data, spec), seed, settings, raw=False)


@dataclass
class Draws:
    """Posterior draws of a few scalars, (chain, draw) each, straight from nutpie's trace (no InferenceData)."""

    values: dict[str, np.ndarray]
    divergences: int


def sample_hyper(data: ModelData, spec: ModelSpec, seed: int, settings: NutsSettings) -> Draws:
    """μ, β and the σ's of one fit (`spec` resolved): for Figure 7's 1,000 slices an InferenceData of ~80
    variables would cost as much as sampling them."""
    model = kernel_model(data, spec, hyper_only=True)
    chain_draws, chain_stats = _run(model, seed, settings, raw=True).get_arrow_trace()
    kept = [~np.asarray(stats.column("tuning").to_numpy(), dtype=bool) for stats in chain_stats]
    values = {
        name: np.stack(
            [
                np.asarray(batch.column(name).to_numpy())[keep]
                for batch, keep in zip(chain_draws, kept, strict=True)
            ]
        )
        for name in model.names
    }
    divergent = sum(
        int(np.asarray(stats.column("diverging").to_numpy())[keep].sum())
        for stats, keep in zip(chain_stats, kept, strict=True)
    )
    return Draws(values=values, divergences=divergent)
