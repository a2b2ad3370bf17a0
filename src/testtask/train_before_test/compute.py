"""Pretraining compute of the models whose token counts are public (Table 4 of the paper), and how PC1 relates
to it (Figure 7)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import kendalltau, pearsonr, spearmanr

COLUMNS = ("name", "params_b", "tokens_b", "flops_1e18")


def compute_table(cfg: Mapping[str, Any]) -> pd.DataFrame:
    """`pretraining_compute.models` of the config as a frame indexed by model id; ValueError naming a bad entry."""
    rows = {}
    for model, spec in cfg["pretraining_compute"]["models"].items():
        missing = [c for c in COLUMNS if c not in spec]
        if missing:
            raise ValueError(f"train_before_test.pretraining_compute.models.{model} lacks {missing}")
        flops = float(spec["flops_1e18"])
        if not flops > 0:
            raise ValueError(f"train_before_test.pretraining_compute.models.{model}.flops_1e18 must be > 0")
        rows[str(model)] = {c: spec[c] for c in COLUMNS}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table["log10_flops"] = np.log10(table["flops_1e18"].astype(float)) + 18.0
    return table


def correlate(pc1: pd.Series, table: pd.DataFrame) -> dict[str, Any]:
    """Correlation of PC1 scores with log10 pretraining FLOPs over the models in both."""
    models = [m for m in table.index if m in pc1.index]
    x = table.loc[models, "log10_flops"].to_numpy(dtype=float)
    y = pc1.loc[models].to_numpy(dtype=float)
    if len(models) < 3:
        return {
            "n_models": len(models),
            "pearson_r_log10_flops": None,
            "spearman_rho": None,
            "kendall_tau": None,
        }
    r, p = pearsonr(x, y)
    rho, _ = spearmanr(x, y)
    tau, _ = kendalltau(x, y)
    return {
        "n_models": len(models),
        "models": models,
        "pearson_r_log10_flops": float(r),
        "pearson_p": float(p),
        "spearman_rho": float(rho),
        "kendall_tau": float(tau),
    }
