"""Figures made of Eq. 1 panels: two cohorts on accuracy-vs-compute axes, θ̂ per panel.

Figures 1, 3, 4, 5, 9, 11-16, 18 and 20. Each builder takes a Context and writes
`figures/training-on-the-test-task/figure-N.{png,pdf,json}` with one JSON record per panel.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from testtask.context import Context, InputsUnavailable
from testtask.errors import SettingUnusable
from testtask.lm.scores import (
    BenchmarkSpec,
    Gap,
    check_gaps,
    excluded_records,
    lookup,
    select,
)
from testtask.outputs import save_figure
from testtask.training_on_the_test_task.inputs import (
    SECTION,
    check_benchmark,
    check_cutoff,
    check_kinds,
    check_stage,
    registry,
    results,
)
from testtask.training_on_the_test_task.model_table import model_table
from testtask.training_on_the_test_task.panels import Panel, cohort_labels, cutoff_words, draw_grid
from testtask.training_on_the_test_task.settings import Settings


def _settings(ctx: Context) -> Settings:
    return ctx.settings


def cohort_table(
    ctx: Context,
    key: str,
    cutoff: str | None = None,
    group_by: str = "newer",
    kinds: Sequence[str] | None = None,
) -> tuple[BenchmarkSpec, pd.DataFrame]:
    """Per-model scores of one benchmark before and after the adjustment, cohort in `group`."""
    settings = _settings(ctx)
    spec = settings.benchmark(key)
    scores = results(ctx)
    check_benchmark(ctx, spec)
    if kinds is None:
        check_kinds(ctx)
    check_stage(ctx)
    if group_by == "newer":
        check_cutoff(ctx, cutoff or settings.cutoff)
    table = model_table(
        scores,
        registry(ctx),
        spec,
        cutoff=cutoff or settings.cutoff,
        stage=settings.adjustment.stage,
        use_max=settings.adjustment.use_max,
        kinds=tuple(kinds or settings.model_kinds),
        group_by=group_by,
        absent=settings.release.absent,
    )
    return spec, table


def _excluded(records: list[dict], gaps: Sequence[Gap] = ()) -> list[dict]:
    """Every model some fit of the figure left out (the panels' `excluded_models`, plus `gaps`), once each."""
    unique = {json.dumps(r, sort_keys=True): r for rec in records for r in rec.get("excluded_models", [])}
    unique.update({json.dumps(r, sort_keys=True): r for r in excluded_records(gaps)})
    return [unique[k] for k in sorted(unique)]


def _save(
    ctx: Context, number: int, fig, records: list[dict], gaps: Sequence[Gap] = (), **extra: Any
) -> dict:
    numbers = {
        "paper": ctx.paper,
        "figure": number,
        "source": ctx.source,
        "cutoff": _settings(ctx).cutoff,
        "cov_type": _settings(ctx).regression.cov_type,
        "r2_reported": "uncentred R² of the no-intercept fit of A − r (as statsmodels reports it)",
        **extra,
        "excluded_models": _excluded(records, gaps),
        "panels": records,
    }
    save_figure(fig, ctx.out_dir, f"figure-{number}", numbers)
    return numbers


def _grid(ctx: Context, panels: list[Panel], ncols: int) -> tuple[Any, list[dict]]:
    return draw_grid(panels, ncols, _settings(ctx).regression)


def before_after_figure(
    ctx: Context,
    number: int,
    keys: Sequence[str],
    cutoff: str | None = None,
    group_by: str = "newer",
    labels: tuple[str, str] | None = None,
    kinds: Sequence[str] | None = None,
) -> dict:
    """Row 1: benchmarks before adjustment; row 2: after fine-tuning on the test task (Figures 1, 11-13, 15, 16, 20)."""
    cutoff = cutoff or _settings(ctx).cutoff
    labels = labels or cohort_labels(cutoff)
    tables = [cohort_table(ctx, key, cutoff, group_by, kinds) for key in keys]
    panels = [
        Panel(spec, table, column, f"{spec.label}{' (adjusted)' if adjusted else ''}", labels, adjusted)
        for column, adjusted in (("before", False), ("adjusted", True))
        for spec, table in tables
    ]
    fig, records = _grid(ctx, panels, ncols=len(keys))
    return _save(ctx, number, fig, records, cutoff=cutoff, group_by=group_by)


def figure_1(ctx: Context) -> dict:
    return before_after_figure(ctx, 1, _settings(ctx).figure_1.benchmarks)


def figure_11(ctx: Context) -> dict:
    settings = _settings(ctx)
    return before_after_figure(ctx, 11, settings.figure_1.benchmarks, cutoff=settings.robustness_cutoffs[0])


def figure_12(ctx: Context) -> dict:
    settings = _settings(ctx)
    return before_after_figure(ctx, 12, settings.figure_1.benchmarks, cutoff=settings.robustness_cutoffs[1])


def figure_13(ctx: Context) -> dict:
    labels = ("Trained primarily on EN data", "Trained on EN+CN data")
    return before_after_figure(ctx, 13, _settings(ctx).figure_13.benchmarks, group_by="en_cn", labels=labels)


def figure_15(ctx: Context) -> dict:
    return before_after_figure(ctx, 15, _settings(ctx).figure_15.benchmarks)


def figure_16(ctx: Context) -> dict:
    return before_after_figure(ctx, 16, _settings(ctx).figure_16.benchmarks)


def figure_20(ctx: Context) -> dict:
    cfg = _settings(ctx).figure_20
    kinds = cfg.kinds
    reg = registry(ctx)
    present = {name for name in results(ctx)["model"].unique() if reg.get(name).kind in kinds}
    if not present:
        raise InputsUnavailable(
            "no instruct/chat model results in this source: the authors' release holds base models only, "
            "so Figure 20 (Appendix G) cannot be drawn from it; run the evaluation runners on the "
            "instruct models of the registry to produce it"
        )
    return before_after_figure(ctx, 20, cfg.benchmarks, kinds=kinds)


def figure_4(ctx: Context) -> dict:
    """ARC and HellaSwag: cloze (standard), MMLU-style, MMLU-style after fine-tuning on MMLU auxiliary data."""
    cfg = _settings(ctx).figure_4
    labels = cohort_labels(_settings(ctx).cutoff)
    panels = []
    for cloze_key, mc_key in zip(cfg.unadjusted, cfg.reformulated, strict=True):
        spec_c, table_c = cohort_table(ctx, cloze_key)
        spec_m, table_m = cohort_table(ctx, mc_key)
        panels += [
            Panel(spec_c, table_c, "before", f"{spec_c.label}", labels, False),
            Panel(spec_m, table_m, "before", f"{spec_m.label}", labels, False),
            Panel(spec_m, table_m, "adjusted", f"{spec_m.label}, adjusted", labels, True),
        ]
    fig, records = _grid(ctx, panels, ncols=3)
    return _save(ctx, 4, fig, records)


def single_row_figure(ctx: Context, number: int, keys: Sequence[str], ncols: int) -> dict:
    labels = cohort_labels(_settings(ctx).cutoff)
    panels = []
    for key in keys:
        spec, table = cohort_table(ctx, key)
        panels.append(Panel(spec, table, "before", spec.label, labels, False))
    fig, records = _grid(ctx, panels, ncols=ncols)
    return _save(ctx, number, fig, records)


def figure_5(ctx: Context) -> dict:
    """MMLU with multiple-choice prompts, with cloze prompts, and scored by Brier score."""
    return single_row_figure(ctx, 5, _settings(ctx).figure_5.benchmarks, ncols=3)


def figure_18(ctx: Context) -> dict:
    """ARC and HellaSwag: cloze, MMLU-style, MMLU-style by Brier score (rows: ARC, HellaSwag)."""
    return single_row_figure(ctx, 18, _settings(ctx).figure_18.benchmarks, ncols=3)


def split_control_treatment(
    table: pd.DataFrame, min_compute: float, seed: int
) -> tuple[list[str], list[str]]:
    """§3.1 split of older models: shuffle those with compute ≥ min_compute (names sorted, then
    Python's `random.Random(seed)`), first half → control, second half → treatment; the rest → control."""
    eligible = sorted(table.loc[table["compute"] >= min_compute, "model"])
    small = sorted(table.loc[table["compute"] < min_compute, "model"])
    random.Random(seed).shuffle(eligible)
    half = len(eligible) // 2
    return eligible[:half] + small, eligible[half:]


def _stage_max(
    results: pd.DataFrame, spec: BenchmarkSpec, stages: Sequence[str], names: Sequence[str], absent
) -> tuple[pd.Series, list[Gap]]:
    """Per model of `names`, the best score over `stages` (NaN unless the model has every stage), and the
    Gap of each stage a model lacks."""
    series, gaps = [], []
    for stage in stages:
        values, missing = lookup(results, spec, stage, names, absent)
        series.append(values)
        gaps += missing.values()
    frame = pd.concat(series, axis=1)
    best = frame.max(axis=1, skipna=False) if spec.higher_is_better else frame.min(axis=1, skipna=False)
    return best, gaps


def figure_3(ctx: Context) -> dict:
    """Control (older models) vs treatment (older models fine-tuned one epoch), before and after adjustment."""
    settings = _settings(ctx)
    cfg = settings.figure_3
    scores = results(ctx)
    reg = registry(ctx)
    cutoff = settings.cutoff
    arm_names, columns = ("control", "treatment"), ("unadjusted", "adjusted")
    stages = {s for arm in arm_names for col in columns for s in cfg.arm(arm).of(col)}
    missing = sorted(s for s in stages if not (scores["adjustment"] == s).any())
    if missing:  # a source may lack them (our runs of e3 only): `figures` skips Figure 3
        raise InputsUnavailable(
            f"fine-tuning stages {missing} not in this source ({SECTION}.figure_3.control and .treatment name "
            f"the stages of each arm; the source has {', '.join(sorted(set(scores['adjustment'])))})"
        )
    panels_by_col: dict[str, list[Panel]] = {"unadjusted": [], "adjusted": []}
    arms: dict[tuple[str, str, str], pd.Series] = {}
    # Only older models with every stage of both arms, for every benchmark, can be assigned either way; one
    # split serves all benchmarks. An older model lacking a stage is left out of every panel (named, and
    # allowed only where config lists the result as absent).
    check_kinds(ctx)
    check_cutoff(ctx, cutoff)
    older = [
        n for n in reg.names() if reg.get(n).kind in settings.model_kinds and not reg.get(n).is_newer(cutoff)
    ]
    absent = settings.release.absent
    lacking: dict[tuple, Gap] = {}
    for key in cfg.benchmarks:
        spec = settings.benchmark(key)
        for arm in arm_names:
            for col in columns:
                arms[key, arm, col], found = _stage_max(scores, spec, cfg.arm(arm).of(col), older, absent)
                lacking.update({(g.model, g.benchmark, g.stage): g for g in found})
    gaps = check_gaps(lacking.values(), "figure 3 (pool of older models)")
    names = sorted(set(older) - {g.model for g in gaps})
    table = pd.DataFrame({"model": names, "compute": [reg.get(n).compute for n in names]})
    control, treatment = split_control_treatment(table, cfg.min_compute, cfg.seed)
    if not control or not treatment:
        computes = sorted(table["compute"])
        raise SettingUnusable(
            f"{SECTION}.figure_3.min_compute",
            cfg.min_compute,
            f"the {'treatment' if not treatment else 'control'} arm is empty: of the {len(table)} older models "
            f"with every stage (compute {computes[0]:.3g} to {computes[-1]:.3g} FLOPs), "
            f"{sum(c >= cfg.min_compute for c in computes)} are at or above it and are halved",
            "choose a compute that leaves at least two older models at or above it",
        )
    members = {"control": control, "treatment": treatment}
    info = {name: reg.get(name) for names in members.values() for name in names}
    for key in cfg.benchmarks:
        spec = settings.benchmark(key)
        for col in columns:
            rows = [
                {
                    "model": name,
                    "family": info[name].family,
                    "compute": info[name].compute,
                    "log_compute": float(np.log10(info[name].compute)),
                    "group": group,
                    "score": float(arms[key, arm, col][name]),
                }
                for group, arm in enumerate(arm_names)
                for name in members[arm]
            ]
            title = f"{spec.label}{', adjusted' if col == 'adjusted' else ''}"
            panels_by_col[col].append(
                Panel(spec, pd.DataFrame(rows), "score", title, cfg.labels, col == "adjusted")
            )
    panels = panels_by_col["unadjusted"] + panels_by_col["adjusted"]
    fig, records = _grid(ctx, panels, ncols=len(cfg.benchmarks))
    rule = (
        f"older (train date < {cutoff}) models with every stage for every benchmark (the others: excluded_models); "
        f"compute >= {cfg.min_compute:.3g} "
        f"shuffled by random.Random({cfg.seed}) after sorting, first half control, second half treatment"
    )
    stage_choice = {arm: {col: list(cfg.arm(arm).of(col)) for col in columns} for arm in arm_names}
    splits = {arm: sorted(names) for arm, names in members.items()}
    return _save(ctx, 3, fig, records, gaps, split_rule=rule, splits=splits, stages=stage_choice)


def older_finetuned_scores(
    ctx: Context, spec: BenchmarkSpec, table: pd.DataFrame, step: int, key: str
) -> tuple[np.ndarray, list[Gap | None]]:
    """Per row of a cohort table: older models at fine-tuning checkpoint `step` (the setting `key`), newer
    models as they are (Figure 14, Table 5), and the Gap of each row without a score (None where it has one)."""
    scores = results(ctx)
    if select(scores, spec, "intermediate", step=step).empty:
        steps = checkpoint_steps(scores, spec)
        if not steps:
            raise InputsUnavailable(
                f"no intermediate/{spec.finetune} checkpoints of {spec.file} in this source"
            )
        raise SettingUnusable(
            f"{SECTION}.{key}",
            step,
            f"the source has no checkpoint step_{step} of {spec.file} fine-tuned on {spec.finetune}",
            f"choose one of its steps: {', '.join(map(str, steps))}",
        )
    older = list(table.loc[table["newer"] == 0, "model"])
    tuned, missing = lookup(scores, spec, "intermediate", older, _settings(ctx).release.absent, step=step)
    newer = table["newer"].to_numpy() == 1
    values = np.where(newer, table["before"], table["model"].map(tuned))
    gaps = [
        before if is_newer else missing.get(name)
        for name, is_newer, before in zip(table["model"], newer, table["gap_before"], strict=True)
    ]
    return values.astype(float), gaps


def checkpoint_steps(scores: pd.DataFrame, spec: BenchmarkSpec) -> list[int]:
    """The intermediate checkpoints of `spec`'s benchmark (fine-tuned on its data) the source holds."""
    rows = scores[
        (scores["adjustment"] == "intermediate")
        & (scores["finetune"] == spec.finetune)
        & (scores["benchmark"] == spec.file)
    ]
    return sorted(int(step) for step in rows["step"].dropna().unique())


def figure_14(ctx: Context) -> dict:
    """Older models after `step` fine-tuning steps (64,000 examples) against newer models as they are."""
    settings = _settings(ctx)
    cfg = settings.figure_14
    step = cfg.step
    batch = settings.emergence.batch_size
    cutoff = settings.cutoff
    labels = (
        f"Trained before {cutoff_words(cutoff)}, fine-tuned ({step * batch:,} examples)",
        cohort_labels(cutoff)[1],
    )
    panels = []
    for key in cfg.benchmarks:
        spec, table = cohort_table(ctx, key)
        scores, gaps = older_finetuned_scores(ctx, spec, table, step, "figure_14.step")
        table = table.assign(score=scores, gap_score=gaps)
        panels.append(
            Panel(spec, table, "score", spec.label, labels, False, {"step": step, "examples": step * batch})
        )
    fig, records = _grid(ctx, panels, ncols=len(panels))
    return _save(ctx, 14, fig, records)


def figure_9(ctx: Context) -> dict:
    """Learning-rate sweep (Appendix B.3): adjusted scores with the original learning rates (left) and with
    newer models at the best learning rate of the sweep (right). Read from `<evaluations>/lr_sweep/<lr>/...`."""
    settings = _settings(ctx)
    scores = results(ctx)
    if not (scores["adjustment"] == "lr_sweep").any():
        root = ctx.data_root / settings.release.evaluations_dir / "lr_sweep"
        raise InputsUnavailable(
            f"no learning-rate sweep results ({root}): the sweep of Appendix B.3 is not in the authors' release; "
            "Figure 9 is drawn from sweep results in this layout (lr_sweep/<lr>/<finetune>/<model>-<bench>.json)"
        )
    key = settings.figure_9.benchmark
    spec, table = cohort_table(ctx, key)
    best = select(scores, spec, "lr_sweep")
    swept = table["model"].map(best)
    table = table.assign(
        swept=np.where(
            (table["group"] == 1) & swept.notna(),
            np.fmax(table["adjusted"], swept.fillna(-np.inf)),
            table["adjusted"],
        ),
        gap_swept=table["gap_adjusted"],
    )
    labels = cohort_labels(settings.cutoff)
    rates = sorted(scores.loc[scores["adjustment"] == "lr_sweep", "learning_rate"].dropna().unique())
    panels = [
        Panel(spec, table, "adjusted", f"{spec.label}, original learning rates", labels, True),
        Panel(
            spec,
            table,
            "swept",
            f"{spec.label}, newer models at their best learning rate",
            labels,
            True,
            {"n_newer_swept": int(((table["group"] == 1) & swept.notna()).sum())},
        ),
    ]
    fig, records = _grid(ctx, panels, ncols=2)
    return _save(ctx, 9, fig, records, learning_rates=[float(r) for r in rates])
