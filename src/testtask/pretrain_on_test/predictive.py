"""Posterior predictive average differences: eq. 11 (over LM types, tasks, subsamples) and eq. 12 (per task).

Drawn from the linear predictor, without the draws × observations InferenceData that made the authors' step take
30 minutes.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import logging
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import arviz as az
import numba
import numpy as np

from testtask.io import atomic_save
from testtask.pretrain_on_test import cache_entry
from testtask.pretrain_on_test.hierarchical import Fit, ModelData, identified_draws

log = logging.getLogger(__name__)


@dataclass
class PredictiveDifferences:
    average: np.ndarray  # (draws,) eq. 11
    per_task: np.ndarray  # (draws, dataset, lm_type) eq. 12
    task_accuracy: np.ndarray  # (draws, dataset, lm_type, arm): predicted mean accuracy per task
    data: ModelData

    def _observed_difference(self) -> np.ndarray:
        d = self.data
        return (d.correct[..., 1] - d.correct[..., 0]) / np.maximum(d.trials[..., 0], 1)

    def observed_average(self) -> float:
        return float(self._observed_difference()[self.data.observed].mean())

    def observed_per_task(self) -> np.ndarray:
        """(dataset, lm_type) mean observed difference; NaN where a task has no data for an LM type."""
        mask = self.data.observed
        with np.errstate(invalid="ignore"):
            return (self._observed_difference() * mask).sum(axis=1) / mask.sum(axis=1)

    def observed_task_accuracy(self) -> np.ndarray:
        d = self.data
        mask = d.observed[..., None]
        acc = d.correct / np.maximum(d.trials, 1)
        with np.errstate(invalid="ignore"):
            return (acc * mask).sum(axis=1) / mask.sum(axis=1)


@numba.njit(cache=True, nogil=True)
def _draw(c, t, alpha, trials, rng, average, per_task, task_acc):
    """Binomial draws for every posterior draw and observed cell, reduced on the fly (no draws × cells array).

    `rng` is a NumPy Generator (one per thread): ~10× faster than numba's legacy `np.random.binomial`.
    """
    n_d, n_j, n_k = c.shape
    n_i = alpha.shape[1]
    for d in range(n_d):
        total, cells = 0.0, 0
        for j in range(n_j):
            for i in range(n_i):
                sums = np.zeros(2)
                count = 0
                for k in range(n_k):
                    if trials[j, k, i, 0] == 0:
                        continue
                    count += 1
                    for arm in range(2):
                        eta = c[d, j, k] + alpha[d, i] + (arm - 0.5) * t[d, j]
                        n = trials[j, k, i, arm]
                        sums[arm] += rng.binomial(n, 1.0 / (1.0 + np.exp(-eta))) / n
                if count == 0:
                    per_task[d, j, i] = np.nan
                    task_acc[d, j, i, 0] = np.nan
                    task_acc[d, j, i, 1] = np.nan
                    continue
                per_task[d, j, i] = (sums[1] - sums[0]) / count
                task_acc[d, j, i, 0] = sums[0] / count
                task_acc[d, j, i, 1] = sums[1] / count
                total += sums[1] - sums[0]
                cells += count
        average[d] = total / cells


def _draw_block(c: np.ndarray, t: np.ndarray, alpha: np.ndarray, trials: np.ndarray, seed: int):
    n_d, (n_j, _, n_i, _) = c.shape[0], trials.shape
    average = np.empty(n_d)
    per_task = np.empty((n_d, n_j, n_i))
    task_acc = np.empty((n_d, n_j, n_i, 2))
    _draw(c, t, alpha, trials, np.random.default_rng(seed), average, per_task, task_acc)
    return average, per_task, task_acc


def simulate(fit: Fit, seed: int, max_draws: int | None = None, workers: int = 1) -> PredictiveDifferences:
    """Draw Ŷ_ijkl ~ Binomial(n, λ_ijkl) for every posterior draw and observed cell; reduce to eqs. 11 and 12.
    The draws are split into `workers` blocks, each in its own thread and seed: the result depends on both."""
    data = fit.data
    c, t, alpha = identified_draws(fit, max_draws)
    trials = data.trials.astype(np.int64)
    blocks = [b for b in np.array_split(np.arange(c.shape[0]), max(1, workers)) if len(b)]
    seeds = [(seed + 7919 * idx) % 2**32 for idx in range(len(blocks))]
    if len(blocks) == 1:
        parts = [_draw_block(c, t, alpha, trials, seeds[0])]
    else:
        # `_draw` releases the GIL (nogil) and numba keeps a generator per thread, so threads run the blocks in
        # parallel without copying the draws (tens of MB per fit) into worker processes.
        with ThreadPoolExecutor(max_workers=len(blocks)) as pool:
            futures = [
                pool.submit(_draw_block, c[b], t[b], alpha[b], trials, s)
                for b, s in zip(blocks, seeds, strict=True)
            ]
            parts = [f.result() for f in futures]
    average, per_task, task_acc = (np.concatenate(arrays) for arrays in zip(*parts, strict=True))
    return PredictiveDifferences(average=average, per_task=per_task, task_accuracy=task_acc, data=data)


@functools.cache
def _code_version() -> str:
    """A hash of the code that turns a posterior into predictive draws: an edit to it invalidates cached ones."""
    h = hashlib.sha256()
    for part in (_draw.py_func, _draw_block, simulate, identified_draws):
        h.update(inspect.getsource(part).encode())
    return h.hexdigest()[:16]


def predictive_key(fit: Fit, seed: int, max_draws: int | None, workers: int) -> str | None:
    """The cache key of `simulate(fit, seed, max_draws, workers)`; None for a fit not from the posterior cache."""
    attrs = fit.idata.attrs
    if cache_entry.KEY not in attrs:
        return None
    stored = [str(attrs[cache_entry.KEY]), str(attrs.get(cache_entry.VERSION)), seed, max_draws, workers]
    h = hashlib.sha256(json.dumps([*stored, _code_version()]).encode())
    return h.hexdigest()[:20]


FIELDS = ("average", "per_task", "task_accuracy")


def simulate_cached(
    fit: Fit, seed: int, max_draws: int | None, workers: int, cache_dir: Path | None
) -> PredictiveDifferences:
    """`simulate`, read from `cache_dir` when it holds this fit's predictive draws under the same settings, computed
    and stored there otherwise."""
    key = predictive_key(fit, seed, max_draws, workers) if cache_dir is not None else None
    if key is None:
        return simulate(fit, seed, max_draws, workers)
    path = Path(cache_dir) / f"{key}.predictive.npz"
    if path.is_file():
        try:
            with np.load(path) as stored:
                if str(stored["key"]) == key:
                    log.info("reusing cached posterior predictive %s", path.name)
                    return PredictiveDifferences(**{f: stored[f] for f in FIELDS}, data=fit.data)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:  # truncated or foreign: draw again
            log.warning("cached posterior predictive %s is unreadable (%s); drawing again", path, err)
    result = simulate(fit, seed, max_draws, workers)
    arrays = {f: getattr(result, f) for f in FIELDS}

    def save(tmp: Path) -> None:
        with tmp.open("wb") as handle:  # a file object: given a path without `.npz`, numpy would append one
            np.savez(handle, key=np.array(key), **arrays)

    atomic_save(path, save)
    return result


def interval(draws: np.ndarray, prob: float = 0.89) -> dict[str, float | list[float]]:
    """Posterior mean and highest-density interval of a 1-D array of draws."""
    draws = np.asarray(draws, dtype=float)
    lo, hi = az.hdi(draws, hdi_prob=prob)
    return {"mean": float(draws.mean()), f"hdi_{round(prob * 100)}": [float(lo), float(hi)]}
