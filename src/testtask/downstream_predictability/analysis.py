"""From a family's samples to per-sample score–compute correlations and their statistics.

`family_tasks` aligns every task's documents across the members and computes the chain for each member;
`correlation_results` correlates each quantity with compute, per document, for each correlation method;
`analyse(ctx)` does both for every configured family whose samples are present.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from testtask.context import Context, InputsUnavailable
from testtask.downstream_predictability.chain import chain, normalised_loglik
from testtask.downstream_predictability.correlations import Correlations, per_sample
from testtask.downstream_predictability.family import Family, load_family, task_files
from testtask.downstream_predictability.inputs import SamplesError, TaskSamples, read_samples
from testtask.downstream_predictability.settings import (
    ComputeScale,
    FamilySpec,
    Normalisation,
    Quantity,
    Settings,
)
from testtask.downstream_predictability.statistics import summarise, usable
from testtask.errors import SettingUnusable

# the config section of this paper's settings, as messages name its keys
SECTION = "downstream_predictability"

log = logging.getLogger(__name__)


@dataclass
class TaskData:
    """One task of one family: the chain's quantities per member (rows, ordered by compute) and document."""

    family: str
    task: str
    compute: np.ndarray  # (K,) FLOPs
    doc_ids: np.ndarray  # (n,)
    quantities: dict[str, np.ndarray]  # quantity -> (K, n)
    log_incorrect_sum: np.ndarray  # (K, n) log of the vocabulary mass on the incorrect choices
    log_incorrect_each: np.ndarray  # (K, n, C) per incorrect choice, NaN elsewhere
    n_docs_dropped: int  # documents not logged by every member
    lm_eval_check: dict[str, Any] = field(default_factory=dict)


@dataclass
class FamilyData:
    family: Family
    tasks: dict[str, TaskData]
    tasks_incomplete: list[str]  # tasks not logged by every member


def _check_alignment(first: TaskSamples, other: TaskSamples, rows_a: np.ndarray, rows_b: np.ndarray) -> None:
    """The same documents, gold answers and number of choices in two members' files."""
    for a, b in zip(rows_a, rows_b, strict=True):
        ha, hb = first.doc_hash[a], other.doc_hash[b]
        if ha is not None and hb is not None and ha != hb:
            raise SamplesError(
                f"{other.path}: field `doc_hash` of doc_id {first.doc_ids[a]} differs from {first.path}"
            )
    if np.any(first.target[rows_a] != other.target[rows_b]):
        raise SamplesError(f"{other.path}: field `target` differs from {first.path} for the same doc_id")
    if np.any(first.n_choices[rows_a] != other.n_choices[rows_b]):
        raise SamplesError(f"{other.path}: number of choices differs from {first.path} for the same doc_id")


def _lm_eval_check(
    samples: TaskSamples, rows: np.ndarray, values: dict[str, np.ndarray], norm: Normalisation
) -> dict:
    """How our accuracy and Brier score agree with the per-document metrics lm-eval logged."""
    out: dict[str, Any] = {}
    acc_key = {Normalisation.none: "acc", Normalisation.chars: "acc_norm"}.get(norm)
    if acc_key and acc_key in samples.logged:
        logged = samples.logged[acc_key][rows]
        ok = ~np.isnan(logged)
        out[acc_key] = {"n": int(ok.sum()), "n_agree": int(np.sum(logged[ok] == values["accuracy"][ok]))}
    if norm == Normalisation.none and "brier_score" in samples.logged:
        logged = samples.logged["brier_score"][rows]
        ok = ~np.isnan(logged)
        diff = np.abs(logged[ok] - values["brier"][ok])
        out["brier_score"] = {"n": int(ok.sum()), "max_abs_diff": float(diff.max()) if diff.size else None}
    return out


def task_data(family: Family, task: str, files: list, settings: Settings) -> TaskData:
    """Read one task's file of every member, keep the documents all members logged, compute the chain."""
    delimiter = settings.target_delimiter
    norm = settings.normalisation
    samples = [read_samples(path, delimiter) for path in files]
    common = samples[0].doc_ids
    for s in samples[1:]:
        common = np.intersect1d(common, s.doc_ids)
    if common.size == 0:
        raise SamplesError(f"task {task}: no doc_id is logged by every member of {family.name}")
    rows = []
    for s in samples:
        position = {int(doc): i for i, doc in enumerate(s.doc_ids)}
        rows.append(np.array([position[int(doc)] for doc in common], dtype=int))
    for s, r in zip(samples[1:], rows[1:], strict=True):
        _check_alignment(samples[0], s, rows[0], r)
    width = max(s.loglik.shape[1] for s in samples)
    stacked = np.full((len(samples), common.size, width), np.nan)
    for k, (s, r) in enumerate(zip(samples, rows, strict=True)):
        ll = normalised_loglik(s, norm)[r]
        stacked[k, :, : ll.shape[1]] = ll
    values = chain(stacked, samples[0].target[rows[0]])
    check: dict[str, Any] = {}
    for member, s, r, k in zip(family.members, samples, rows, range(len(samples)), strict=True):
        member_values = {q: values[q][k] for q in ("accuracy", "brier")}
        check[member.name] = _lm_eval_check(s, r, member_values, norm)
    dropped = max(s.doc_ids.size for s in samples) - common.size
    return TaskData(
        family=family.name,
        task=task,
        compute=np.array([m.compute for m in family.members]),
        doc_ids=common,
        quantities={q.value: values[q] for q in Quantity},
        log_incorrect_sum=values["log_p_vocab_incorrect_sum"],
        log_incorrect_each=values["log_p_vocab_incorrect_each"],
        n_docs_dropped=int(dropped),
        lm_eval_check=check,
    )


def _complete(per_member: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(the tasks every member logged, every task some member logged), each sorted."""
    all_tasks = sorted(set().union(*per_member))
    return [t for t in all_tasks if all(t in files for files in per_member)], all_tasks


def logged_tasks(family: Family) -> list[str]:
    """The tasks every member of `family` logged, sorted."""
    return _complete([task_files(m, family.model) for m in family.members])[0]


def family_tasks(family: Family, settings: Settings) -> FamilyData:
    """Every task logged by all members of `family` (restricted to `settings.tasks` when that lists some)."""
    per_member = [task_files(m, family.model) for m in family.members]
    complete, all_tasks = _complete(per_member)
    wanted = list(settings.tasks)
    chosen = [t for t in complete if not wanted or t in wanted]
    tasks = {t: task_data(family, t, [files[t] for files in per_member], settings) for t in chosen}
    return FamilyData(family, tasks, sorted(set(all_tasks) - set(complete)))


@dataclass
class CorrelationResult:
    family: str
    task: str
    quantity: str
    method: str
    correlations: Correlations
    usable: np.ndarray  # the distribution the statistics summarise (undefined dropped or zeroed)
    summary: dict[str, Any]


def scale_compute(compute: np.ndarray, scale: ComputeScale) -> np.ndarray:
    """Compute as correlated: log10 FLOPs or FLOPs; only Pearson depends on it."""
    if scale == ComputeScale.log10:
        return np.log10(compute)
    if scale == ComputeScale.linear:
        return np.asarray(compute, dtype=float)
    raise ValueError(f"compute_scale must be log10 or linear, got {scale!r}")


def correlation_results(data: TaskData, settings: Settings) -> list[CorrelationResult]:
    """Per-sample correlations of every quantity with compute for every method, with their statistics.

    Quantities listed in `settings.negate` (the Brier score, lower is better) are negated first, so that a
    positive correlation always means the score improves with compute."""
    x = scale_compute(data.compute, settings.compute_scale)
    negate = set(settings.negate)
    policy = settings.undefined
    out = []
    for quantity in Quantity:
        y = -data.quantities[quantity] if quantity in negate else data.quantities[quantity]
        for method in settings.methods:
            corr = per_sample(x, y, method)
            values = usable(corr, policy)
            summary = summarise(values) | {
                "n_samples": int(corr.values.size),
                "n_defined": int(corr.defined.sum()),
                "n_undefined": int((~corr.defined).sum()),
                "n_undefined_constant": int(corr.constant.sum()),
                "n_undefined_non_finite": int(corr.non_finite.sum()),
            }
            out.append(
                CorrelationResult(data.family, data.task, quantity.value, method.value, corr, values, summary)
            )
    return out


@dataclass
class Analysis:
    families: list[FamilyData]
    results: list[CorrelationResult]
    settings: dict[str, Any]
    warnings: list[str]
    skipped_families: dict[str, str]

    def result(self, family: str, task: str, quantity: str, method: str) -> CorrelationResult:
        for r in self.results:
            if (r.family, r.task, r.quantity, r.method) == (family, task, quantity, method):
                return r
        raise KeyError((family, task, quantity, method))

    def tasks(self) -> list[str]:
        return sorted({t for f in self.families for t in f.tasks})


def settings_of(settings: Settings) -> dict[str, Any]:
    """The settings every figure's JSON names."""
    return {
        "normalisation": settings.normalisation,
        "compute_scale": settings.compute_scale,
        "negate": list(settings.negate),
        "undefined": settings.undefined,
        "methods": list(settings.methods),
    }


_CACHE: dict[str, Analysis] = {}


def _cache_key(ctx: Context, settings: Settings) -> str:
    """Settings, source and every samples file's path, size and mtime: a figure built after another one in the
    same process (`action=figures`, the notebook) reuses the analysis unless something changed."""
    files = []
    for spec in settings.families.values():
        root = ctx.paper_root(spec.paper) / spec.samples_dir
        if root.is_dir():
            files += [(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*.jsonl"))]
    return json.dumps([ctx.source, str(ctx.data_root), repr(settings), files], sort_keys=True, default=str)


def analyse(ctx: Context) -> Analysis:
    """Every configured family (or those in `families_used`) whose samples exist, for `ctx.source`."""
    if ctx.source == "published":
        raise InputsUnavailable(
            "the paper released no per-sample logs; build these figures from our runs with source=results"
        )
    settings: Settings = ctx.settings
    key = _cache_key(ctx, settings)
    if key not in _CACHE:
        _CACHE.clear()  # one analysis at a time is enough, and keeps memory flat across configurations
        _CACHE[key] = _analyse(ctx, settings)
    return _CACHE[key]


def _unusable_family(settings: Settings, source: str, name: str, why: str) -> SettingUnusable:
    """A family `families_used` names (asked for, not merely configured) that has nothing to analyse."""
    return SettingUnusable(
        f"{SECTION}.families_used",
        list(settings.families_used or []),
        f"family {name} has no samples to analyse for source={source} ({why})",
        f"fix {SECTION}.families.{name} (paper, samples_dir, model) or leave {name} out of families_used",
    )


def _check_tasks(settings: Settings, loaded: list[Family]) -> None:
    """SettingUnusable when `tasks` names a task no family's members all logged."""
    logged = sorted({task for family in loaded for task in logged_tasks(family)})
    unknown = [task for task in settings.tasks if task not in logged]
    if unknown:
        raise SettingUnusable(
            f"{SECTION}.tasks",
            list(settings.tasks),
            f"{', '.join(unknown)}: logged by every member of no family",
            f"name tasks the families logged ({', '.join(logged) or 'none'}), or [] for every task",
        )


def _analyse(ctx: Context, settings: Settings) -> Analysis:
    specs: dict[str, FamilySpec] = settings.families
    used = list(settings.families_used or specs)  # the schema checked that every name is a family
    chosen = settings.families_used is not None  # families asked for by name must have samples
    families, skipped, warnings = [], {}, []
    loaded: list[Family] = []
    for name in used:
        try:
            loaded.append(load_family(name, specs[name], ctx.paper_root))
        except InputsUnavailable as err:
            if chosen:
                raise _unusable_family(settings, ctx.source, name, str(err)) from None
            skipped[name] = str(err)
            log.warning("family %s skipped: %s", name, err)
    if settings.tasks:
        _check_tasks(settings, loaded)
    for family in loaded:
        name = family.name
        data = family_tasks(family, settings)
        if not data.tasks:
            if chosen:
                raise _unusable_family(settings, ctx.source, name, "no task is logged by every member")
            skipped[name] = "no task is logged by every member"
            continue
        families.append(data)
        k = len(family.members)
        if k < 3:
            warnings.append(
                f"family {name} has {k} members: every defined per-sample correlation is +1 or -1, so the "
                "distributions only count how many samples improve, worsen or stay put with compute"
            )
    skipped = {name: skipped[name] for name in used if name in skipped}  # in config order
    if not families:
        raise InputsUnavailable(f"no family has samples for source={ctx.source}: {skipped}")
    results = [r for f in families for t in f.tasks.values() for r in correlation_results(t, settings)]
    return Analysis(families, results, settings_of(settings), warnings, skipped)


def family_summary(data: FamilyData) -> dict[str, Any]:
    """What the JSON sidecars say about a family: members, compute and how it was obtained, tasks."""
    fam = data.family
    return {
        "label": fam.label,
        "n_members": len(fam.members),
        "members": [
            {
                "name": m.name,
                "compute_flops": m.compute,
                "log10_compute": float(np.log10(m.compute)),
                **m.compute_detail,
            }
            for m in fam.members
        ],
        "notes": fam.notes,
        "tasks": {
            t: {
                "n_samples": int(d.doc_ids.size),
                "n_docs_dropped": d.n_docs_dropped,
                "mean_accuracy": [float(v) for v in d.quantities["accuracy"].mean(axis=1)],
                "lm_eval_check": d.lm_eval_check,
            }
            for t, d in data.tasks.items()
        },
        "tasks_incomplete": data.tasks_incomplete,
    }
