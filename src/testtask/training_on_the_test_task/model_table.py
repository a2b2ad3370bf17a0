"""From the tidy results table to one row per model: score before and after fine-tuning, compute, cohort.

A model of the registry whose result is missing keeps its row, with NaN for the score and a `Gap` saying which
result is missing and why (config `absent_results`); `testtask.lm.scores.usable` leaves such rows out before a fit,
naming each.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from testtask.lm.models import ModelRegistry
from testtask.lm.results import AbsentResults
from testtask.lm.scores import BenchmarkSpec, before_after


def model_table(
    results: pd.DataFrame,
    registry: ModelRegistry,
    spec: BenchmarkSpec,
    *,
    cutoff: str,
    stage: str,
    use_max: bool,
    kinds: tuple[str, ...] = ("base",),
    group_by: str = "newer",
    absent: AbsentResults | None = None,
) -> pd.DataFrame:
    """One row per registry model of `kinds`: facts, `before`, `after`, `adjusted` (max(before, after) with
    `use_max`, the authors' choice: fine-tuning that hurts a model is not held against it; else `after`), `newer`,
    the 0/1 `group` of `group_by` ("newer", or "en_cn": EN+CN data), and the Gap of each missing score in
    `gap_before`, `gap_after`, `gap_adjusted` (None where the score is there)."""
    names = [name for name in registry.names() if registry.get(name).kind in kinds]
    scores = before_after(results, spec, names, stage=stage, use_max=use_max, absent=absent)
    rows = []
    for name, score in zip(names, scores.drop(columns="model").to_dict("records"), strict=True):
        info = registry.get(name)
        rows.append(
            {
                "model": name,
                "family": info.family,
                "language": info.language,
                "train_date": info.train_date,
                "params_b": info.params_b,
                "tokens_t": info.tokens_t,
                "compute": info.compute,
                "log_compute": float(np.log10(info.compute)),
                "newer": int(info.is_newer(cutoff)),
                **score,
            }
        )
    if not rows or scores["before"].isna().all():
        raise ValueError(f"{spec.key}: no results for models of kind {kinds}")
    table = pd.DataFrame(rows).sort_values("compute", kind="stable").reset_index(drop=True)
    if group_by == "newer":
        table["group"] = table["newer"]
    elif group_by == "en_cn":
        table["group"] = (table["language"] == "EN+CN").astype(int)
    else:
        raise ValueError(f"group_by must be 'newer' or 'en_cn', got {group_by!r}")
    return table
