"""Compile the numba code of the §6.1 fits into numba's on-disk cache ahead of use: `make install` calls
`precompile()`, so that neither a fresh clone's first posterior figure nor each test worker compiles it (10-13 s
on 2 cores, once per process until the cache holds it).

What is compiled is what a fit runs: nutpie's two C callbacks (`kernel.callbacks`, whose compilation also caches
the kernel functions they call) and the posterior predictive loop (`predictive._draw`) on the contiguous arrays
`predictive.simulate` hands it.
"""

from __future__ import annotations

import time

import numpy as np

from testtask.pretrain_on_test import kernel, predictive


def precompile() -> float:
    """Compile (or load from numba's cache) everything a fit runs; returns the seconds it took."""
    start = time.perf_counter()
    kernel.callbacks()
    n_draws, n_j, n_k, n_i = 2, 2, 2, 2
    trials = np.full((n_j, n_k, n_i, 2), 10, dtype=np.int64)
    t, alpha = np.zeros((n_draws, n_j)), np.zeros((n_draws, n_i))
    predictive._draw_block(np.zeros((n_draws, n_j, n_k)), t, alpha, trials, seed=0)
    return time.perf_counter() - start
