"""Tables 3-5: indirect and direct effects of model recency (Appendix C) and the discriminator test (D.3)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from testtask.context import Context
from testtask.lm.scores import excluded_records, usable
from testtask.outputs import save_numbers, save_table
from testtask.training_on_the_test_task.cohort_figures import cohort_table, older_finetuned_scores
from testtask.training_on_the_test_task.discriminator import loo_balanced_accuracy
from testtask.training_on_the_test_task.mediation import direct_effect, indirect_effect
from testtask.training_on_the_test_task.settings import Settings


def _effects_table(ctx: Context, number: int, which: str) -> dict[str, Any]:
    settings: Settings = ctx.settings
    keys = {3: settings.table_3, 4: settings.table_4}[number].benchmarks
    rows, details, excluded = [], {}, []
    for key in keys:
        spec, table = cohort_table(ctx, key)
        data, gaps = usable(table, "adjusted", f"table {number} ({key})")
        excluded += gaps
        args = (data["log_compute"].to_numpy(),)
        if which == "indirect":
            fit = indirect_effect(
                *args, data["before"].to_numpy(), data["adjusted"].to_numpy(), data["newer"].to_numpy()
            )
        else:
            fit = direct_effect(*args, data["adjusted"].to_numpy(), data["newer"].to_numpy())
        details[key] = {**fit.to_dict(), "excluded_models": excluded_records(gaps)}
        rows.append(
            {
                "benchmark": spec.label,
                "coef": fit.coef,
                "se": fit.se,
                "p": fit.p,
                "significant": bool(fit.p < settings.regression.alpha_level),
                "r2": fit.r2,
                "n_models": fit.n,
            }
        )
    frame = pd.DataFrame(rows).rename(columns={"coef": "phi_prime" if which == "indirect" else "psi"})
    save_table(frame, ctx.out_dir, f"table-{number}", floatfmt=".3f")
    numbers = {
        "paper": ctx.paper,
        "table": number,
        "source": ctx.source,
        "effect": "indirect N -> T -> A (Eq. 6)" if which == "indirect" else "direct N -> A (Eq. 5)",
        "outcome": "accuracy - adjusted accuracy" if which == "indirect" else "adjusted accuracy",
        "knots_log10_flops": [22.0, 23.0],
        "se_type": "classical OLS (the authors' choice)",
        "excluded_models": excluded_records(excluded),
        "rows": details,
    }
    save_numbers(ctx.out_dir / f"table-{number}.json", numbers)
    return numbers


def table_3(ctx: Context) -> dict[str, Any]:
    """Indirect effect φ' of recency mediated by test-task training (Eq. 6)."""
    return _effects_table(ctx, 3, "indirect")


def table_4(ctx: Context) -> dict[str, Any]:
    """Direct effect ψ of recency on adjusted accuracy (Eq. 5)."""
    return _effects_table(ctx, 4, "direct")


def table_5(ctx: Context) -> dict[str, Any]:
    """Leave-one-out balanced accuracy of XGBoost telling newer from older models by (compute, accuracy)."""
    cfg = ctx.settings.table_5
    step = cfg.step
    params = dict(cfg.xgboost)
    details, excluded = {}, []
    comparisons = ("Older models vs newer models", "Fine-tuned, older models vs newer models")
    cells: dict[str, dict[str, float]] = {c: {} for c in comparisons}
    for key in cfg.benchmarks:
        spec, table = cohort_table(ctx, key)
        tuned, tuned_gaps = older_finetuned_scores(ctx, spec, table, step, "table_5.step")
        variants = {
            comparisons[0]: table.assign(score=table["before"], gap_score=table["gap_before"]),
            comparisons[1]: table.assign(score=tuned, gap_score=tuned_gaps),
        }
        for label, variant in variants.items():
            data, gaps = usable(variant, "score", f"table 5 ({key}: {label})")
            excluded += gaps
            features = data[["log_compute", "score"]].to_numpy()
            result = loo_balanced_accuracy(features, data["newer"].to_numpy(), seed=ctx.seed, **params)
            cells[label][spec.label] = result.balanced_accuracy
            details[f"{key}: {label}"] = {
                **result.to_dict(),
                "models": list(data["model"]),
                "excluded_models": excluded_records(gaps),
            }
    frame = pd.DataFrame([{"discriminator_test": label, **cells[label]} for label in comparisons])
    save_table(frame, ctx.out_dir, "table-5", floatfmt=".3f")
    numbers = {
        "paper": ctx.paper,
        "table": 5,
        "source": ctx.source,
        "features": ["log10 pretraining compute", "benchmark score"],
        "fine_tuned_step": step,
        "chance": 0.5,
        "excluded_models": excluded_records(excluded),
        "rows": details,
    }
    save_numbers(ctx.out_dir / "table-5.json", numbers)
    return numbers
