"""Algorithm 1 (sampling consistency): which correlation metric ranks the candidate tasks most stably.

For each metric c_i: the ranking of candidates by relevance to the baseline task T_b over all m models is the
baseline ranking; k subsets of n models give k sampled rankings. The baseline consistency index s_i is the mean
overlap ratio |top_t(baseline) & top_t(sample)| / t, the sampling consistency index r_i the mean overlap ratio
over the k(k-1)/2 pairs of sampled rankings. A metric with s_i >= s_j and r_i > r_j for every other j is the
most robust; when none dominates, a configured fallback is used (the paper's own final choice is Kendall).

The same k subsets serve every metric (a paired comparison; the paper draws them inside its metric loop).
The subsets also give each task's frequency in the sampled top t: our extension (the paper uses Algorithm 1
only to choose the metric) that lets the selection keep only proxies that are consistently among the most
relevant, and drop one whose correlation holds only in some subsets of models.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from testtask.proxy_tasks.correlation import correlate, correlate_batch


def top_tasks(relevance: np.ndarray, t: int) -> np.ndarray:
    """Indices of the `t` most relevant tasks (NaN last; ties keep column order)."""
    order = np.argsort(-np.where(np.isnan(relevance), -np.inf, relevance), kind="stable")
    return order[:t]


@dataclass(frozen=True)
class Consistency:
    metrics: tuple[str, ...]
    tasks: tuple[str, ...]  # candidate tasks, in column order
    s: dict[str, float]  # baseline consistency index per metric
    r: dict[str, float]  # sampling consistency index per metric
    baseline_top: dict[str, list[str]]  # top-t tasks over all models, most relevant first, per metric
    frequency: dict[str, np.ndarray]  # per metric: share of subsets whose top t holds each task
    n_models: int
    samples: int
    top_t: int

    @property
    def top_frequency(self) -> pd.DataFrame:
        """Tasks x metrics: share of the k subsets whose top t holds the task."""
        return pd.DataFrame(self.frequency, index=list(self.tasks))

    def choose(self, fallback: str) -> tuple[str, str]:
        """The metric Algorithm 1 deems most robust, and why: ('dominates' | 'fallback')."""
        for m in self.metrics:
            others = [o for o in self.metrics if o != m]
            if all(self.s[m] >= self.s[o] and self.r[m] > self.r[o] for o in others):
                return m, "dominates"
        if fallback not in self.metrics:
            raise ValueError(f"fallback metric {fallback!r} is not among {self.metrics}")
        return fallback, "fallback"

    def to_dict(self) -> dict:
        return {
            "s": self.s,
            "r": self.r,
            "baseline_top": self.baseline_top,
            "top_frequency": {
                m: dict(zip(self.tasks, map(float, f), strict=True)) for m, f in self.frequency.items()
            },
            "n_models": self.n_models,
            "samples": self.samples,
            "top_t": self.top_t,
        }


def consistency_arrays(
    x: np.ndarray,
    y: np.ndarray,
    tasks: tuple[str, ...] | list[str],
    metrics: tuple[str, ...] | list[str],
    n_models: int,
    samples: int,
    top_t: int,
    rng: np.random.Generator,
) -> Consistency:
    """Algorithm 1 over candidate scores `x` (models x tasks) and target scores `y` (models,)."""
    m, n_tasks = x.shape
    if not 2 < n_models <= m:
        raise ValueError(f"Algorithm 1 needs 2 < n <= m models per subset, got n={n_models}, m={m}")
    if not 0 < top_t <= n_tasks:
        raise ValueError(f"top t must be in 1..{n_tasks} (candidate tasks), got {top_t}")
    if samples < 2:
        raise ValueError(f"Algorithm 1 needs k >= 2 subsets, got {samples}")
    subsets = np.stack([rng.choice(m, size=n_models, replace=False) for _ in range(samples)])
    xs, ys = x[subsets], y[subsets]  # (k, n, T), (k, n)
    s, r, base_top, freq = {}, {}, {}, {}
    pairs = np.triu_indices(samples, k=1)
    rows = np.arange(samples)[:, None]
    for metric in metrics:
        base = top_tasks(correlate(y, x, metric), top_t)  # in rank order
        rel = correlate_batch(ys, xs, metric)
        order = np.argsort(-np.where(np.isnan(rel), -np.inf, rel), axis=1, kind="stable")[:, :top_t]
        tops = np.zeros((samples, n_tasks), dtype=bool)
        tops[rows, order] = True
        s[metric] = float(tops[:, base].sum(axis=1).mean() / top_t)
        overlap = tops.astype(int) @ tops.T.astype(int)  # |top_j1 & top_j2|
        r[metric] = float(overlap[pairs].mean() / top_t)
        base_top[metric] = [str(tasks[i]) for i in base]
        freq[metric] = tops.mean(axis=0)
    return Consistency(tuple(metrics), tuple(tasks), s, r, base_top, freq, n_models, samples, top_t)


def sampling_consistency(
    candidates: pd.DataFrame,
    target: pd.Series,
    metrics: tuple[str, ...] | list[str],
    n_models: int,
    samples: int,
    top_t: int,
    rng: np.random.Generator,
) -> Consistency:
    """Algorithm 1 over the models of `candidates` (models x tasks) and `target` (same models)."""
    return consistency_arrays(
        candidates.to_numpy(float),
        target.loc[candidates.index].to_numpy(float),
        [str(c) for c in candidates.columns],
        metrics,
        n_models,
        samples,
        top_t,
        rng,
    )
