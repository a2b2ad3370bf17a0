"""Appendix C of *Training on the test task*: direct and indirect effects of model recency (Eq. 2–6).

Compute enters through the piecewise log-linear f(C, α) of Eq. 2 with knots at c_1 = 0, 10^22 and 10^23 FLOPs:

* Eq. 5 (Table 4): A|do(T=t) = f(C, α) + ψ N + η' + ε        ψ: direct effect N → A
* Eq. 6 (Table 3): A − A|do(T=t) = f(C, β') + φ' N + b + ε'   φ': indirect effect N → T → A

What the authors' released analysis does (``socialfoundations/training-on-the-test-task``:
``notebooks/regress_utils.py``, ``regress_seg``; ``notebooks/figures.ipynb``, the "Tables for the causal
interpretation" cells):

* Both tables come from ``regress_seg``: statsmodels OLS of the outcome on a constant, N and the three columns
  min(log10 C, 22), clip(log10 C − 22, 0, 1), max(0, log10 C − 23): a *continuous* piecewise-linear function
  of log10 C (slope per segment), not the literal indicator product log C · [C > c_i] of Eq. 2, which jumps
  at each knot. ``basis="segments"`` (default) is the authors' version, ``basis="indicator"`` the literal one.
* Standard errors are statsmodels' default ``nonrobust`` with t-distribution p-values; R² is the ordinary
  (centred) R² of that regression with an intercept.
* The outcomes are A (before) and A|do(T=t) = max(A, accuracy after fine-tuning)
  (``process_pre_post_adjustment(..., use_max=True)`` in ``notebooks/utils.py``); that clipping belongs to
  whoever prepares ``adjusted_accuracy`` and is not applied here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from testtask.training_on_the_test_task.regression import JsonDict, as_indicator, as_vector, fit_ols
from testtask.training_on_the_test_task.settings import CovType

DEFAULT_KNOTS: tuple[float | None, ...] = (None, 22.0, 23.0)
Basis = Literal["segments", "indicator"]


def piecewise_features(
    log_compute: Sequence[float] | np.ndarray,
    knots: Sequence[float | None] = DEFAULT_KNOTS,
    *,
    basis: Basis = "segments",
    intercept: bool = True,
) -> np.ndarray:
    """Design columns of Eq. 2, f(C, α) = α_0 + Σ_i α_i · (term i), so that f = features @ α.

    `knots` are c_1 < c_2 < … in log10 FLOPs; a leading ``None`` is c_1 = 0 FLOPs (the first term is always on).
    Columns: [1 (if `intercept`), term_1, …, term_m] with, for ``basis="segments"`` (the authors' code, a
    continuous piecewise-linear function), term_i = clip(log C − c_i, 0, c_{i+1} − c_i), the first one unclipped
    below when c_1 is None (so it is min(log C, c_2)), the last one unclipped above; and for
    ``basis="indicator"`` (Eq. 2 as printed) term_i = log C · [log C > c_i].
    """
    x = as_vector("log_compute", log_compute)
    knots = list(knots)
    if not knots:
        raise ValueError("knots must hold at least one entry")
    if any(k is None for k in knots[1:]):
        raise ValueError("only the first knot may be None (c_1 = 0 FLOPs)")
    finite = [float(k) for k in knots if k is not None]
    if np.any(np.diff(finite) <= 0):
        raise ValueError(f"knots must be strictly increasing, got {knots}")

    columns = []
    for i, knot in enumerate(knots):
        upper = None if i + 1 == len(knots) else float(knots[i + 1])
        if basis == "indicator":
            on = np.ones_like(x, dtype=bool) if knot is None else x > knot
            columns.append(x * on)
        elif basis == "segments":
            # A None knot leaves the first segment unclipped below, i.e. measured from log C = 0 (C = 1 FLOP).
            term = x if knot is None else np.maximum(x - knot, 0.0)
            if upper is not None:
                term = np.minimum(term, upper - (0.0 if knot is None else knot))
            columns.append(term)
        else:
            raise ValueError(f"unknown basis {basis!r}")
    if intercept:
        columns.insert(0, np.ones_like(x))
    return np.column_stack(columns)


@dataclass(frozen=True)
class EffectFit(JsonDict):
    """Coefficient on N of Eq. 5 or 6, with its SE, p-value, confidence interval and the regression's R²."""

    coef: float
    se: float
    p: float
    r2: float
    n: int
    se_type: str
    ci: tuple[float, float] = (float("nan"), float("nan"))
    n_clusters: int = 0


def _effect(
    log_compute: Any,
    outcome: np.ndarray,
    newer: Any,
    groups: Any,
    cov_type: CovType,
    knots: Sequence[float | None],
    basis: Basis,
    use_t: bool,
    ci_level: float,
) -> EffectFit:
    """OLS of `outcome` on [1, f-terms of Eq. 2, N]; the N coefficient and the centred R²."""
    n = len(outcome)
    x = as_vector("log_compute", log_compute)
    if len(x) != n:
        raise ValueError(f"log_compute has {len(x)} entries but the outcome has {n}")
    N = as_indicator("newer", newer, n)
    F = piecewise_features(x, knots, basis=basis, intercept=True)
    empty = [i for i in range(1, F.shape[1]) if not np.any(F[:, i] != 0)]
    if empty:
        raise ValueError(f"no model falls in the compute segment(s) {empty} of knots {list(knots)}")
    X = np.column_stack([F, N])
    results, se_type, n_clusters = fit_ols(outcome, X, groups, cov_type=cov_type, use_t=use_t)
    ci = np.asarray(results.conf_int(alpha=1.0 - ci_level))[-1]
    return EffectFit(
        coef=float(np.asarray(results.params)[-1]),
        se=float(np.asarray(results.bse)[-1]),
        p=float(np.asarray(results.pvalues)[-1]),
        # The design has a constant, so statsmodels' rsquared is the centred one the authors report.
        r2=float(results.rsquared),
        n=n,
        se_type=se_type,
        ci=(float(ci[0]), float(ci[1])),
        n_clusters=n_clusters,
    )


def direct_effect(
    log_compute: Sequence[float] | np.ndarray,
    adjusted_accuracy: Sequence[float] | np.ndarray,
    newer: Sequence[float] | np.ndarray,
    groups: Any = None,
    *,
    cov_type: CovType = "nonrobust",
    knots: Sequence[float | None] = DEFAULT_KNOTS,
    basis: Basis = "segments",
    use_t: bool = True,
    ci_level: float = 0.95,
) -> EffectFit:
    """ψ of Eq. 5 (Table 4): N's coefficient when regressing A|do(T=t) on f(C, α) and N.

    Defaults are the authors': ``cov_type="nonrobust"``, t p-values, the continuous ``"segments"`` basis with
    knots (0 FLOPs, 1e22, 1e23), centred R². ``cov_type="cluster"`` with `groups` clusters by model family.
    """
    y = as_vector("adjusted_accuracy", adjusted_accuracy)
    return _effect(log_compute, y, newer, groups, cov_type, knots, basis, use_t, ci_level)


def indirect_effect(
    log_compute: Sequence[float] | np.ndarray,
    accuracy: Sequence[float] | np.ndarray,
    adjusted_accuracy: Sequence[float] | np.ndarray,
    newer: Sequence[float] | np.ndarray,
    groups: Any = None,
    *,
    cov_type: CovType = "nonrobust",
    knots: Sequence[float | None] = DEFAULT_KNOTS,
    basis: Basis = "segments",
    use_t: bool = True,
    ci_level: float = 0.95,
) -> EffectFit:
    """φ' of Eq. 6 (Table 3): N's coefficient when regressing A − A|do(T=t) on f(C, β') and N.

    Defaults are the authors' (see :func:`direct_effect`).
    """
    a = as_vector("accuracy", accuracy)
    adj = as_vector("adjusted_accuracy", adjusted_accuracy)
    if len(a) != len(adj):
        raise ValueError(f"accuracy has {len(a)} entries but adjusted_accuracy has {len(adj)}")
    return _effect(log_compute, a - adj, newer, groups, cov_type, knots, basis, use_t, ci_level)
