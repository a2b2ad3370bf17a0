"""`figure-mini`: the CPU mini-replication's before/after panel (one small model, fine-tuned on task data).

Reads `evaluations/base/` and `evaluations/<stage>/<finetune>/` under the source root, without the paper's model
registry (the mini model is not one of the paper's 56). Each benchmark's score before and after fine-tuning, with
lm-eval's standard errors, and the Brier score of the multiple-choice tasks.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from testtask.context import Context, InputsUnavailable
from testtask.lm.results import load_results
from testtask.outputs import save_figure
from testtask.training_on_the_test_task.settings import Settings


def _value(
    table: pd.DataFrame, model: str, adjustment: str, benchmark: str, metric: str
) -> dict[str, Any] | None:
    """One benchmark's score; `mmlu_mc` / `mmlu_cloze` fall back to the mean over the per-subject results
    (`mmlu_<subject>_mc`) that a subset run writes (equal-sized subjects, so the plain mean is the pooled one)."""
    rows = table[
        (table["model"] == model) & (table["adjustment"] == adjustment) & (table["metric"] == metric)
    ]
    row = rows[rows["benchmark"] == benchmark]
    if not row.empty:
        return {"value": float(row["value"].iloc[0]), "stderr": float(row["stderr"].iloc[0])}
    prefix, _, suffix = benchmark.partition("_")
    subjects = (
        rows[rows["benchmark"].str.fullmatch(rf"{prefix}_[a-z_]+_{suffix}")] if suffix else rows.iloc[:0]
    )
    if subjects.empty:
        return None
    stderr = float(np.sqrt((subjects["stderr"] ** 2).sum()) / len(subjects))
    return {
        "value": float(subjects["value"].mean()),
        "stderr": stderr,
        "subjects": sorted(subjects["benchmark"]),
    }


def before_after(ctx: Context) -> dict[str, Any]:
    settings: Settings = ctx.settings
    cfg = settings.figure_mini
    root = ctx.data_root / settings.release.evaluations_dir
    if not root.is_dir():
        raise InputsUnavailable(f"{root} does not exist (source={ctx.source})")
    table = load_results(root)
    finetune, stage = cfg.finetune, cfg.stage
    tuned = table[(table["adjustment"] == stage) & (table["finetune"] == finetune)]
    if tuned.empty:
        raise InputsUnavailable(
            f"{root}: no {stage}/{finetune} results (the mini-replication's fine-tuned runs)"
        )
    table = table[(table["adjustment"] == "base") | (table.index.isin(tuned.index))]
    panels = []
    for model in sorted(tuned["model"].unique()):
        for benchmark, metric in cfg.benchmarks.items():
            for kind, key in (("score", metric), ("brier", "brier_score,none")):
                if kind == "brier" and benchmark not in cfg.brier:
                    continue
                before = _value(table, model, "base", benchmark, key)
                after = _value(table, model, stage, benchmark, key)
                if before is None or after is None:
                    continue
                panels.append(
                    {
                        "model": model,
                        "benchmark": benchmark,
                        "metric": key,
                        "kind": kind,
                        "before": before,
                        "after": after,
                        "difference": after["value"] - before["value"],
                    }
                )
    if not panels:
        raise InputsUnavailable(f"{root}: no benchmark has both a base and a {stage}/{finetune} result")
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [3, 2]})
    for ax, kind, ylabel in (
        (axes[0], "score", "accuracy"),
        (axes[1], "brier", "Brier score (lower is better)"),
    ):
        chosen = [p for p in panels if p["kind"] == kind]
        x = np.arange(len(chosen))
        for offset, which, colour in ((-0.2, "before", "tab:grey"), (0.2, "after", "tab:green")):
            ax.bar(
                x + offset,
                [p[which]["value"] for p in chosen],
                width=0.4,
                yerr=[p[which]["stderr"] for p in chosen],
                color=colour,
                label=f"{which} fine-tuning" if which == "before" else f"after {stage} on {finetune}",
                capsize=3,
            )
        ax.set_xticks(x, [p["benchmark"] for p in chosen], rotation=30, ha="right")
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3, lw=0.5)
    axes[0].axhline(0.25, color="k", lw=0.8, ls=":", label="chance (4 options)")
    axes[0].legend(frameon=False, fontsize=8)
    models = sorted({p["model"] for p in panels})
    fig.suptitle(f"CPU mini-replication: {', '.join(models)} before and after fine-tuning on the test task")
    fig.tight_layout()
    numbers = {
        "paper": ctx.paper,
        "figure": "mini",
        "source": ctx.source,
        "finetune": finetune,
        "stage": stage,
        "panels": panels,
    }
    save_figure(fig, ctx.out_dir, "figure-mini", numbers)
    return numbers
