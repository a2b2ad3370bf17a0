"""Choose and weight the proxies of a target task from the models at hand (Sections 3.1-3.3 in sequence).

1. two-step normalisation fitted on these models (target excluded from the per-model statistics);
2. Algorithm 1 on the normalised candidates picks the correlation metric (or a configured one is used) and
   gives each task's frequency in the sampled top t;
3. relevance C_i = that metric's correlation of each candidate with the target across the models;
4. robustness R_i from ensembles, from the standard-error proxy, or none;
5. thresholds and S_i = C_i f(R_i) weights (combine.weights_arrays).

`select` works on arrays (the leave-one-model-out loop calls it once per fold); `fit_proxies` wraps it for a
labelled score matrix and returns the tables that the figures report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from testtask.proxy_tasks.combine import Selection, select_proxies, weights_arrays
from testtask.proxy_tasks.consistency import Consistency, consistency_arrays
from testtask.proxy_tasks.correlation import correlate
from testtask.proxy_tasks.normalise import Normaliser
from testtask.proxy_tasks.robustness import stderr_ratio
from testtask.proxy_tasks.settings import Auto, Method, RobustnessMode


@dataclass(frozen=True)
class ArraySelection:
    metric: str
    metric_rule: str  # dominates | fallback | configured
    consistency: Consistency | None
    relevance: np.ndarray  # per candidate, chosen metric
    consistent: np.ndarray | None  # per candidate: often enough in the sampled top t (None: filter off)
    kept: np.ndarray  # candidate positions of the proxies, highest S first
    weights: np.ndarray  # W of the kept proxies
    fallback: bool


def robustness_values(
    settings: Method, x: np.ndarray, se: np.ndarray | None, ensemble_ratio: np.ndarray | None
) -> np.ndarray | None:
    """R per candidate column of `x` for the configured mode (None: mode none)."""
    if settings.robustness == RobustnessMode.none:
        return None
    if settings.robustness == RobustnessMode.stderr_proxy:
        if se is None:
            raise ValueError("robustness.mode=stderr_proxy needs standard errors; this matrix has none")
        return stderr_ratio(x, se)[2]
    if ensemble_ratio is None:
        raise ValueError("robustness.mode=ensembles needs robustness.ensembles_file (ensemble score table)")
    return ensemble_ratio


def _limits(settings: Method) -> dict[str, Any]:
    """The thresholds and caps of step 5, as combine.weights_arrays and combine.select_proxies take them."""
    return {
        "eps_c": settings.eps_c,
        "eps_r": settings.eps_r,
        "k": settings.sigmoid_k,
        "max_proxies": settings.proxies_cap,
        "if_none": settings.if_none_selected,
    }


def select(
    p_cand: np.ndarray,
    p_target: np.ndarray,
    tasks: list[str] | tuple[str, ...],
    settings: Method,
    rng: np.random.Generator,
    robustness: np.ndarray | None,
) -> ArraySelection:
    """Steps 2, 3 and 5 on normalised candidate scores (models x candidates) and target scores (models,)."""
    consistency = None
    if settings.uses_algorithm_1:
        consistency = consistency_arrays(
            p_cand,
            p_target,
            tasks,
            settings.metrics,
            settings.n_models,
            settings.samples,
            settings.top_t,
            rng,
        )
    if settings.metric == Auto.auto:
        metric, rule = consistency.choose(settings.fallback_metric)
    else:
        metric, rule = settings.metric, "configured"
    relevance = correlate(p_target, p_cand, metric)
    consistent = None
    if settings.min_top_frequency > 0:
        consistent = consistency.frequency[metric] >= settings.min_top_frequency
    kept, weights, fallback, _ = weights_arrays(relevance, robustness, consistent, **_limits(settings))
    return ArraySelection(metric, rule, consistency, relevance, consistent, kept, weights, fallback)


@dataclass(frozen=True)
class ProxyFit:
    target: str
    metric: str
    metric_rule: str  # dominates | fallback | configured
    consistency: Consistency | None
    relevance: pd.Series  # chosen metric, per candidate
    selection: Selection

    def to_dict(self) -> dict:
        return {
            "target": self.target,
            "metric": self.metric,
            "metric_rule": self.metric_rule,
            "consistency": None if self.consistency is None else self.consistency.to_dict(),
            "selection": self.selection.to_dict(),
        }


def fit_proxies(
    scores: pd.DataFrame,
    target: str,
    settings: Method,
    rng: np.random.Generator,
    stderr: pd.DataFrame | None = None,
    ensemble_ratio: pd.DataFrame | None = None,
) -> ProxyFit:
    """Select and weight proxies of `target` from `scores` (models x tasks, complete; target a column)."""
    if target not in scores.columns:
        raise KeyError(f"target task {target!r} is not a column of the score matrix")
    candidates = [str(c) for c in scores.columns if c != target]
    normed = Normaliser.fit(scores, candidates, settings.normalisation).transform(scores).values
    se = None if stderr is None else stderr.reindex(index=scores.index, columns=candidates).to_numpy(float)
    ens = None if ensemble_ratio is None else ensemble_ratio["ratio"].reindex(candidates).to_numpy(float)
    rob = robustness_values(settings, scores[candidates].to_numpy(float), se, ens)
    sel = select(normed[candidates].to_numpy(), normed[target].to_numpy(), candidates, settings, rng, rob)
    relevance = pd.Series(sel.relevance, index=candidates)
    consistent = None if sel.consistent is None else pd.Series(sel.consistent, candidates)
    rob_series = None if rob is None else pd.Series(rob, index=candidates)
    selection = select_proxies(relevance, rob_series, consistent=consistent, **_limits(settings))
    return ProxyFit(target, sel.metric, sel.metric_rule, sel.consistency, relevance, selection)
