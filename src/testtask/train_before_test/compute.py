"""Pretraining compute of the models whose token counts are public (Table 4 of the paper), and how PC1 relates
to it (Figure 7)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import kendalltau, pearsonr, spearmanr

from testtask.train_before_test.settings import PretrainingCompute


def compute_table(compute: PretrainingCompute) -> pd.DataFrame:
    """The models of `compute` (the settings' transcription of Table 4, checked when read) as a frame indexed by
    model id: name, params_b, tokens_b, flops_1e18 and log10_flops."""
    rows = {model: asdict(spec) for model, spec in compute.models.items()}
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
