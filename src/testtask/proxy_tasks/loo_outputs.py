"""Leave-one-model-out prediction of a target from its proxies: figure `loo` (panels) and table `loo` (every
task of each matrix as the target in turn), each beside the mean-of-tasks and best-single-proxy baselines."""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from testtask.context import Context
from testtask.outputs import save_figure, save_numbers, save_table
from testtask.parallel import process_pool
from testtask.proxy_tasks.evaluate import lomo_numbers
from testtask.proxy_tasks.inputs import (
    SettingError,
    check_fits,
    check_target,
    ensembles_for,
    labels,
    matrix_and_settings,
    settings_dict,
)
from testtask.proxy_tasks.matrices import ScoreMatrix, dropped_notes
from testtask.proxy_tasks.predict import leave_one_model_out
from testtask.proxy_tasks.robustness import variance_ratio
from testtask.proxy_tasks.selection import fit_proxies
from testtask.proxy_tasks.settings import AllTargets, Method

log = logging.getLogger(__name__)

ROBUSTNESS_LABELS = {
    "none": "no robustness step (f(R) = 1, no eps_R filter)",
    "stderr_proxy": (
        "stderr proxy: R = between-model score variance / mean squared published standard error "
        "(evaluation noise stands in for the paper's random-seed ensemble)"
    ),
    "ensembles": "variance ratio of the ensemble score table (robustness.ensembles_file)",
}
PREDICTION = (
    "leave one model out; on the other models: two-step normalisation (per-model statistics over candidate tasks "
    "only), Algorithm 1 + relevance + robustness + thresholds + sigmoid weights, combined proxy score "
    "x = sum W_i p_i, OLS of the target's normalised score on x; the held-out model's prediction is mapped back "
    "through its own per-model statistics and the target's mean and spread"
)


def lomo_job(
    scores: pd.DataFrame,
    stderr: pd.DataFrame | None,
    target: str,
    settings: Method,
    seed: int,
    ensembles: pd.DataFrame | None,
    ensemble_labels: dict[str, str],
    n_boot: int,
) -> dict[str, Any]:
    """LOMO numbers of one (matrix, target), with the selection fitted on all models for reporting; plain
    arguments only, so that table `loo` can run targets in worker processes."""
    start = time.perf_counter()
    lomo = leave_one_model_out(
        scores, target, settings, seed, stderr=stderr, ensembles=ensembles, ensemble_labels=ensemble_labels
    )
    numbers = lomo_numbers(lomo, np.random.default_rng([seed, 1]), n_boot)
    ratio = variance_ratio(ensembles, ensemble_labels) if ensembles is not None else None
    full = fit_proxies(
        scores, target, settings, np.random.default_rng([seed, 0]), stderr=stderr, ensemble_ratio=ratio
    )
    numbers["all_models_selection"] = full.to_dict()
    numbers["seconds"] = time.perf_counter() - start
    return numbers


def _job_args(ctx: Context, matrix: ScoreMatrix, settings: Method, target: str) -> tuple:
    return (
        matrix.scores,
        matrix.stderr,
        target,
        settings,
        ctx.seed,
        ensembles_for(ctx, settings),
        labels(ctx),
        ctx.settings.evaluation.bootstrap,
    )


def _common(ctx: Context, settings: Method) -> dict[str, Any]:
    return {
        "paper": ctx.paper,
        "source": ctx.source,
        "prediction": PREDICTION,
        "baselines": {
            "mean_of_tasks": "OLS of the target's feature-normalised score on the mean feature-normalised score "
            "of all candidate tasks",
            "best_single": "the most relevant candidate alone (weight 1), through the proxy pipeline",
        },
        "robustness": ROBUSTNESS_LABELS[settings.robustness],
        "errors_in": "the target's own score units (a fraction for accuracy-type benchmarks)",
        "seed": ctx.seed,
    }


# Figure loo's predictions against the actual scores: (column, legend name, marker style), drawn in this order
SERIES = (
    ("mean_of_tasks", "mean of tasks", {"s": 14, "color": "#999999", "alpha": 0.8}),
    ("best_single", "best single proxy", {"s": 10, "color": "#E69F00", "alpha": 0.7, "marker": "^"}),
    ("proxy", "proxy tasks", {"s": 18, "color": "#0072B2"}),
)


def figure_loo(ctx: Context) -> dict:
    panels, loaded, settings = [], [], None
    for i, entry in enumerate(ctx.settings.figure_loo.panels):  # every panel checked before any is fitted
        matrix, settings = matrix_and_settings(ctx, entry.matrix)
        check_target(matrix, entry.target, f"figure_loo.panels[{i}].target")
        check_fits(ctx, matrix, settings)
        loaded.append((matrix, settings, entry.target))
    for matrix, settings, target in loaded:
        numbers = lomo_job(*_job_args(ctx, matrix, settings, target))
        panels.append({"matrix": matrix.describe(), "settings": settings_dict(settings), **numbers})
        log.info(
            "%s / %s: LOMO MAE proxy %.4f, mean of tasks %.4f, best single %.4f",
            matrix.key,
            target,
            numbers["errors"]["proxy"]["mae"],
            numbers["errors"]["mean_of_tasks"]["mae"],
            numbers["errors"]["best_single"]["mae"],
        )
    cols = min(2, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 4.2 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels, strict=False):
        pred = pd.DataFrame(panel["predictions"])
        err = panel["errors"]
        for column, name, style in SERIES:
            ax.scatter(pred["actual"], pred[column], **style, label=f"{name} (MAE {err[column]['mae']:.3f})")
        values = pred[["actual", "proxy", "mean_of_tasks", "best_single"]].to_numpy()
        lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
        ax.set_title(
            f"{panel['matrix']['label']}\ntarget {panel['target']}, {panel['n_models']} models", fontsize=8
        )
        ax.set_xlabel("actual score")
        ax.set_ylabel("predicted (leave one model out)")
        ax.legend(frameon=False, fontsize=7, loc="upper left")
        ax.grid(alpha=0.25, lw=0.5)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.tight_layout()
    numbers = {"figure": "loo", **_common(ctx, settings), "panels": panels}
    save_figure(fig, ctx.out_dir, "figure-loo", numbers, notes=dropped_notes(panels))
    return numbers


def _targets(targets: AllTargets | list[str], matrix: ScoreMatrix) -> list[str]:
    """The targets of table `loo` in `matrix`: every task (`targets: all`) or those listed that it has."""
    if targets == AllTargets.all:
        return list(matrix.scores.columns)
    return [t for t in targets if t in matrix.scores.columns]


def _check_targets(targets: AllTargets | list[str], matrices: list[ScoreMatrix]) -> None:
    """Each listed target is a task of at least one of the table's matrices (a matrix skips those it lacks)."""
    if targets == AllTargets.all:
        return
    for target in targets:
        if not any(target in m.scores.columns for m in matrices):
            tasks = "; ".join(f"{m.key}: {', '.join(m.scores.columns)}" for m in matrices)
            raise SettingError(
                f"proxy_tasks.table_loo.targets = {list(targets)}: {target!r} is a task of none of "
                f"proxy_tasks.table_loo.matrices ({tasks})"
            )


def table_loo(ctx: Context) -> dict:
    out = ctx.settings.table_loo
    jobs, settings = [], None
    loaded = [(key, *matrix_and_settings(ctx, key)) for key in out.matrices]
    for _, matrix, method in loaded:  # every matrix checked before any is fitted
        check_fits(ctx, matrix, method)
    _check_targets(out.targets, [matrix for _, matrix, _ in loaded])
    labels_of = {key: matrix.label for key, matrix, _ in loaded}
    for key, matrix, settings in loaded:
        for target in _targets(out.targets, matrix):
            jobs.append((key, target, _job_args(ctx, matrix, settings, target)))
    workers = out.workers
    if workers > 1 and len(jobs) > 1:
        pool = process_pool(workers)
        futures = [pool.submit(lomo_job, *args) for _, _, args in jobs]
        results = [f.result() for f in futures]
    else:
        results = [lomo_job(*args) for _, _, args in jobs]
    rows, details = [], []
    for (key, target, _), numbers in zip(jobs, results, strict=True):
        err, vs = numbers["errors"], numbers["proxy_vs"]
        freq = numbers["proxy_set"]["frequency"]
        top = sorted(freq, key=lambda t: -freq[t]["share_folds"])[:3]
        rows.append(
            {
                "matrix": key,
                "target": target,
                "models": numbers["n_models"],
                "MAE proxy": err["proxy"]["mae"],
                "MAE mean of tasks": err["mean_of_tasks"]["mae"],
                "MAE best single": err["best_single"]["mae"],
                "diff vs mean [95% CI]": (
                    f"{vs['mean_of_tasks']['mae_difference']:+.4f} "
                    f"[{vs['mean_of_tasks']['ci_low']:+.4f}, {vs['mean_of_tasks']['ci_high']:+.4f}]"
                ),
                "tau proxy": err["proxy"]["kendall_tau"],
                "tau mean": err["mean_of_tasks"]["kendall_tau"],
                "proxies (mean)": numbers["proxy_set"]["mean_size"],
                "most chosen": ", ".join(f"{t} {freq[t]['share_folds']:.2f}" for t in top),
            }
        )
        numbers.pop("predictions")  # the figure keeps per-model predictions; the table keeps summaries
        details.append({"matrix": key, "label": labels_of[key], **numbers})
    log.info("table loo: %d (matrix, target) pairs with %d worker(s)", len(jobs), workers)
    frame = pd.DataFrame(rows)
    save_table(frame, ctx.out_dir, "table-loo")
    summary = {}
    for key in out.matrices:
        part = frame[frame["matrix"] == key]
        summary[str(key)] = {
            "targets": int(len(part)),
            "proxy_beats_mean_of_tasks": int((part["MAE proxy"] < part["MAE mean of tasks"]).sum()),
            "proxy_beats_best_single": int((part["MAE proxy"] < part["MAE best single"]).sum()),
            "median_mae_ratio_proxy_over_mean": float(
                (part["MAE proxy"] / part["MAE mean of tasks"]).median()
            ),
        }
    numbers = {
        "table": "loo",
        **_common(ctx, settings),
        "settings": settings_dict(settings) if settings else None,
        # what each matrix was read from (an own CSV by its SHA-256 in `notes`), as the figures record it
        "matrices": {str(key): matrix.describe() for key, matrix, _ in loaded},
        "summary": summary,
        "rows": details,
    }
    save_numbers(ctx.out_dir / "table-loo.json", numbers)
    return numbers
