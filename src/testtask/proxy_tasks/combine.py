"""Thresholds and sigmoid weights that turn relevance and robustness into one proxy predictor (Section 3.3).

Candidates with relevance C_i < eps_C or robustness R_i < eps_R are discarded. The rest score
S_i = C_i * f(R_i) with the sigmoid f(x) = 1 / (1 + exp(-k x)), which keeps the order of the variance ratios
while bounding extreme ones; the highest-scoring tasks (at most `max_proxies`) form the proxy set and their
weights are W_i = S_i / sum_j S_j. The combined proxy score of a model is sum_i W_i p_i.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from testtask.proxy_tasks.settings import IfNone


def sigmoid(x: np.ndarray | pd.Series | float, k: float) -> np.ndarray | pd.Series | float:
    """f(x) = 1 / (1 + exp(-k x))."""
    return 1.0 / (1.0 + np.exp(-k * x))


REASONS = ("relevance below threshold", "robustness below threshold", "not consistently in the top t")


def weights_arrays(
    relevance: np.ndarray,
    robustness: np.ndarray | None,
    consistent: np.ndarray | None,
    *,
    eps_c: float,
    eps_r: float,
    k: float,
    max_proxies: int | None,
    if_none: IfNone,
) -> tuple[np.ndarray, np.ndarray, bool, list[str]]:
    """Indices of the kept candidates (highest S first), their weights W, whether the fallback was used, and
    why each candidate was dropped ('' when kept)."""
    rel = np.asarray(relevance, dtype=float)
    f = np.ones_like(rel) if robustness is None else sigmoid(np.asarray(robustness, dtype=float), k)
    score = rel * f
    with np.errstate(invalid="ignore"):
        fails = [
            ~(rel >= eps_c),
            np.zeros(len(rel), bool)
            if robustness is None
            else ~(np.asarray(robustness) >= eps_r),  # NaN fails
            np.zeros(len(rel), bool) if consistent is None else ~np.asarray(consistent, dtype=bool),
        ]
    reasons = [next((REASONS[j] for j in range(3) if fails[j][i]), "") for i in range(len(rel))]
    passed = np.flatnonzero(~(fails[0] | fails[1] | fails[2]))
    ranked = passed[np.argsort(-score[passed], kind="stable")]
    if max_proxies is not None and len(ranked) > max_proxies:
        for i in ranked[max_proxies:]:
            reasons[i] = f"outside the {max_proxies} highest scores"
        ranked = ranked[:max_proxies]
    if len(ranked) == 0 or score[ranked].sum() <= 0:
        if if_none != IfNone.best_single:
            raise ValueError("no candidate task passed the relevance and robustness thresholds")
        best = int(np.argmax(np.where(np.isnan(rel), -np.inf, rel)))
        return np.array([best]), np.array([1.0]), True, reasons
    return ranked, score[ranked] / score[ranked].sum(), False, reasons


@dataclass(frozen=True)
class Selection:
    """One selection of proxies: every candidate's scores and why it was kept or dropped, and the weights."""

    table: pd.DataFrame  # candidates: relevance, robustness, f_robustness, score, reason, kept, weight
    weights: pd.Series  # selected task -> W_i (sums to 1)
    fallback: bool  # True when no candidate passed and the most relevant one was used alone

    def to_dict(self) -> dict:
        return {
            "weights": {k: float(v) for k, v in self.weights.items()},
            "fallback": self.fallback,
            "candidates": self.table.reset_index(names="task").to_dict(orient="records"),
        }


def select_proxies(
    relevance: pd.Series,
    robustness: pd.Series | None,
    *,
    eps_c: float,
    eps_r: float,
    k: float,
    max_proxies: int | None,
    if_none: IfNone,
    consistent: pd.Series | None = None,
) -> Selection:
    """Filter by thresholds (and by `consistent`, a boolean per task, when given), weight by S_i = C_i f(R_i);
    `robustness` None: no robustness step (f = 1, no eps_R filter). When nothing passes: `if_none`."""
    tasks = relevance.index
    rob = None if robustness is None else robustness.reindex(tasks).to_numpy(float)
    cons = None if consistent is None else consistent.reindex(tasks).fillna(False).to_numpy(bool)
    kept, w, fallback, reasons = weights_arrays(
        relevance.to_numpy(float),
        rob,
        cons,
        eps_c=eps_c,
        eps_r=eps_r,
        k=k,
        max_proxies=max_proxies,
        if_none=if_none,
    )
    f = np.ones(len(tasks)) if rob is None else sigmoid(rob, k)
    weights = pd.Series(w, index=tasks[kept], name="weight")
    table = pd.DataFrame(
        {
            "relevance": relevance.to_numpy(float),
            "robustness": np.full(len(tasks), np.nan) if rob is None else rob,
            "f_robustness": f,
            "score": relevance.to_numpy(float) * f,
            "reason": reasons,
        },
        index=tasks,
    )
    table["kept"] = table.index.isin(weights.index)
    table["weight"] = weights.reindex(tasks).fillna(0.0).to_numpy()
    return Selection(table=table, weights=weights, fallback=fallback)
