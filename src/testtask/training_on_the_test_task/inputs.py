"""This paper's inputs: the tidy table of lm-eval results of a release or of our runs (`testtask.lm.release`), and
the checks that the source can serve the settings: a setting it cannot (a cutoff no model passes, a stage it
lacks) is a `SettingUnusable` naming the key and what to change, before any fit fails on it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from testtask.context import Context, InputsUnavailable
from testtask.errors import SettingUnusable
from testtask.lm import release
from testtask.lm.models import ModelRegistry
from testtask.lm.scores import BenchmarkSpec

# the config section of this paper's settings, as messages name its keys
SECTION = "training_on_the_test_task"


def results(ctx: Context) -> pd.DataFrame:
    """The tidy results table of `ctx`'s source (InputsUnavailable when its evaluations folder is absent); with
    source=published+results, the release's and the run's results together. Read once per output: checking
    that the tree is unchanged walks all of its folders, and a figure asks for the table once per panel."""
    if "results" not in ctx.memo:
        ctx.memo["results"] = release.results(
            ctx.data_root, ctx.settings.release, ctx.source, ctx.overlay_root
        )
    return ctx.memo["results"]


def where(ctx: Context) -> str:
    """The evaluations folders `ctx` reads, for messages."""
    return " + ".join(str(root / ctx.settings.release.evaluations_dir) for root in ctx.roots())


def registry(ctx: Context) -> ModelRegistry:
    """The model registry as `ctx`'s source sees it: an own model without a result there is left out."""
    return ctx.settings.release.registry_for(results(ctx), where(ctx))


def present(ctx: Context, kinds: Sequence[str] | None = None) -> list[str]:
    """The registry models of `kinds` (default: `model_kinds`) with at least one result in `ctx`'s source."""
    reg, scores = registry(ctx), results(ctx)
    kinds = tuple(kinds or ctx.settings.model_kinds)
    found = set(scores["model"])
    return [name for name in reg.names() if reg.get(name).kind in kinds and name in found]


def check_benchmark(ctx: Context, spec: BenchmarkSpec) -> None:
    """InputsUnavailable naming the benchmark's key when the source holds no result file of it."""
    scores = results(ctx)
    if not (scores["benchmark"] == spec.file).any():
        files = ", ".join(sorted(set(scores["benchmark"])))
        raise InputsUnavailable(
            f"no results of benchmark {spec.key} ({SECTION}.benchmarks.{spec.key}.file = {spec.file!r}) under "
            f"{where(ctx)}; it has {files}: draw those, or add the benchmark's results to the source"
        )


def check_kinds(ctx: Context) -> None:
    """SettingUnusable when no model of `model_kinds` has a result in the source."""
    kinds = list(ctx.settings.model_kinds)
    if present(ctx, kinds):
        return
    reg, found = registry(ctx), set(results(ctx)["model"])
    has = sorted({reg.get(name).kind for name in reg.names() if name in found})
    raise SettingUnusable(
        f"{SECTION}.model_kinds",
        kinds,
        f"no model of these registry sections has a result in {where(ctx)}",
        f"choose among the sections it has results of: {', '.join(has) or 'none'}",
    )


def check_cutoff(ctx: Context, cutoff: str) -> None:
    """SettingUnusable when `cutoff` puts every model of the source in one cohort (θ of Eq. 1 compares two)."""
    settings = ctx.settings
    reg = registry(ctx)
    dates = sorted(reg.get(name).train_date for name in present(ctx))
    if not dates or dates[0] < cutoff <= dates[-1]:
        return
    key, value = f"{SECTION}.cutoff", cutoff
    if cutoff != settings.cutoff and cutoff in settings.robustness_cutoffs:
        key, value = f"{SECTION}.robustness_cutoffs", list(settings.robustness_cutoffs)
    side = "older" if cutoff > dates[-1] else "newer"
    change = (
        f"choose a month after {dates[0]} and no later than {dates[-1]}"
        if dates[0] < dates[-1]
        else "the cohorts need models trained before and after it: add such models' results to the source "
        "(e.g. SOURCE=published+results)"
    )
    raise SettingUnusable(
        key,
        value,
        f"{cutoff} puts every model of this source in the {side} cohort (train dates {dates[0]} to "
        f"{dates[-1]}), so the cohorts cannot be compared",
        change,
    )


def check_stage(ctx: Context) -> None:
    """SettingUnusable when the source holds no result of the adjustment's fine-tuning stage."""
    stage = ctx.settings.adjustment.stage
    stages = set(results(ctx)["adjustment"])
    if not stage or stage in stages:
        return
    raise SettingUnusable(
        f"{SECTION}.adjustment.stage",
        stage,
        f"{where(ctx)} holds no result of this stage (its stages: {', '.join(sorted(stages))})",
        "name a fine-tuning stage it has, or add that stage's results to the source",
    )
