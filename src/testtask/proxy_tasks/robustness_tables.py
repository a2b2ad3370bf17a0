"""Robustness tables: Table 5 recomputed from the paper's ensembles, and the stderr proxy on published matrices."""

from __future__ import annotations

import pandas as pd

from testtask.context import Context
from testtask.outputs import save_numbers, save_table
from testtask.proxy_tasks.combine import sigmoid
from testtask.proxy_tasks.inputs import labels, matrix_and_settings, paper_ensembles
from testtask.proxy_tasks.robustness import stderr_proxy, validate_ensembles, variance_ratio


def table_5(ctx: Context) -> dict:
    """sigma_r^2, sigma_d^2 and R = sigma_d^2 / sigma_r^2 from the paper's Table 4 scores, beside its Table 5."""
    relpath = ctx.settings.table_5.ensembles
    long, spec = paper_ensembles(ctx, relpath)
    long = validate_ensembles(long, labels(ctx), relpath)
    ratio = variance_ratio(long, labels(ctx))
    k = ctx.settings.method.sigmoid_k
    reported = pd.DataFrame.from_dict(dict(spec.get("paper_reported_table5") or {}), orient="index")
    frame = ratio.assign(f_ratio=sigmoid(ratio["ratio"], k))
    table = frame.reset_index(names="task")[["task", "var_noise", "var_data", "ratio", "f_ratio"]]
    for col in ("var_noise", "var_data", "ratio"):
        if col in reported:
            table[f"paper_{col}"] = table["task"].map(reported[col])
    save_table(table, ctx.out_dir, "table-5", floatfmt=".2f")
    numbers = {
        "paper": ctx.paper,
        "table": 5,
        "source": spec.get("source"),
        "what": "variance ratio R = var(data variability ensemble) / var(random noise ensemble), ddof=1",
        "sigmoid_k": k,
        "ensembles": {str(e): list(map(str, m)) for e, m in spec["ensembles"].items()},
        "rows": frame.to_dict(orient="index"),
        "paper_reported_table5": reported.to_dict(orient="index"),
        "note": "paper_* columns are the paper's Table 5 as printed, for comparison only",
    }
    save_numbers(ctx.out_dir / "table-5.json", numbers)
    return numbers


def table_robustness(ctx: Context) -> dict:
    """The stderr proxy of R per task of each published matrix, over all its models."""
    rows, details = [], {}
    k = ctx.settings.method.sigmoid_k
    for key in ctx.settings.table_robustness.matrices:
        matrix, _ = matrix_and_settings(ctx, key)
        if matrix.stderr is None:
            details[key] = {"matrix": matrix.describe(), "rows": None, "note": "no standard errors"}
            continue
        ratio = stderr_proxy(matrix.scores, matrix.stderr)
        ratio["f_ratio"] = sigmoid(ratio["ratio"], k)
        details[key] = {"matrix": matrix.describe(), "rows": ratio.to_dict(orient="index")}
        for task, r in ratio.iterrows():
            rows.append(
                {"matrix": key, "task": task, **r[["var_data", "var_noise", "ratio", "f_ratio"]].to_dict()}
            )
    save_table(pd.DataFrame(rows), ctx.out_dir, "table-robustness", floatfmt=".4g")
    numbers = {
        "paper": ctx.paper,
        "table": "robustness",
        "source": ctx.source,
        "robustness_mode": "stderr_proxy",
        "what": (
            "stand-in for the paper's R on matrices without training ensembles: var_data = variance of the task's "
            "score across the matrix's models (ddof=1), var_noise = mean squared published standard error "
            "(evaluation sampling noise only, no training-seed noise)"
        ),
        "threshold_eps_r": ctx.settings.method.eps_r,
        "sigmoid_k": k,
        "matrices": details,
    }
    save_numbers(ctx.out_dir / "table-robustness.json", numbers)
    return numbers
