"""The model x task score matrices analysed: the published releases of other papers, read by their readers.

- train-before-test: `all_results.json` = {regime: {benchmark: {HF model id: score}}, regime_stderr: ...}.
  The three `*_2025` corpora are bits per byte (lower is better): excluded, or negated with `perplexity: flip`.
- training-on-the-test-task: lm-eval JSONs read by the shared reader that paper's analyses use too
  (`testtask.lm.release` with that paper's settings, from its context as the pipeline builds it,
  `testtask.lm.scores.before_after`), with the metric its config assigns to each benchmark; stage `base` (no
  fine-tuning) or `adjusted` (max of the score before and after its fine-tuning stage, the authors' adjustment).

Every matrix is complete (models lacking a used task are dropped, listed in `dropped_models` and logged) and
oriented higher-is-better. Every score is checked: a finite number within its metric's range, else an error naming
the file and the field. A cell may be missing only where the release has no score for the model (a model absent
from a train-before-test benchmark; a training-on-the-test-task result its config lists under `absent_results`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from testtask.context import Context, InputsUnavailable
from testtask.metric_ranges import problem
from testtask.proxy_tasks.settings import Matrix, Perplexity, Reader, Stage, TrainBeforeTestReader

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScoreMatrix:
    key: str
    label: str
    scores: pd.DataFrame  # models x tasks, higher is better
    stderr: pd.DataFrame | None  # same shape; None when the release has no standard errors
    source: str  # file or folder read, and regime / stage
    dropped_models: dict[str, list[str]] = field(default_factory=dict)  # model -> tasks it lacked
    notes: list[str] = field(default_factory=list)
    missing_reasons: list[dict[str, Any]] = field(default_factory=list)  # why a cell is missing, where known

    def describe(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "source": self.source,
            "n_models": int(self.scores.shape[0]),
            "tasks": list(self.scores.columns),
            "n_dropped_models": len(self.dropped_models),
            "dropped_models": self.dropped_models,
            "missing_reasons": self.missing_reasons,
            "has_stderr": self.stderr is not None,
            "notes": self.notes,
        }


def dropped_notes(panels: Sequence[Mapping[str, Any]]) -> list[str]:
    """What a figure says on itself about the models its panels were drawn without (`dropped_models` in their
    `matrix`: models lacking a score the panel needs)."""
    return [
        f"{p['matrix']['label']}: {p['matrix']['n_dropped_models']} model(s) left out, each lacking a score"
        for p in panels
        if p["matrix"].get("n_dropped_models")
    ]


def complete(
    key: str,
    label: str,
    scores: pd.DataFrame,
    stderr: pd.DataFrame | None,
    source: str,
    notes: list[str],
    missing_reasons: list[dict[str, Any]] | None = None,
) -> ScoreMatrix:
    """Drop models lacking any task (listed in `dropped_models` and logged); sort rows, keep the task order."""
    lacking = scores.isna()
    dropped = {m: [t for t in scores.columns if lacking.at[m, t]] for m in scores.index[lacking.any(axis=1)]}
    if dropped:
        log.warning("%s: %d model(s) lack a task and are dropped: %s", source, len(dropped), dropped)
    keep = scores.index[~lacking.any(axis=1)]
    scores = scores.loc[keep].sort_index()
    # object-dtype labels: pandas' Arrow-backed string indexes make the many small lookups of the
    # leave-one-model-out folds several times slower
    scores.index = pd.Index(scores.index.astype(str).tolist(), dtype=object, name="model")
    scores.columns = pd.Index(scores.columns.astype(str).tolist(), dtype=object, name="task")
    if stderr is not None:
        stderr = stderr.reindex(index=scores.index, columns=scores.columns)
    if len(scores) < 5:
        raise ValueError(f"{source}: only {len(scores)} models have every task of {list(scores.columns)}")
    return ScoreMatrix(key, label, scores, stderr, source, dropped, notes, list(missing_reasons or []))


def _score(value: Any, path: Path, field_name: str, metric: str) -> float:
    """A score: a finite number within the range of `metric` (none: finite only)."""
    why = problem(value, metric)
    if why == "not a number":
        raise ValueError(f"{path}: field {field_name} is not a number: {value!r}")
    if why is not None:
        raise ValueError(f"{path}: field {field_name} is {value!r}, {why}")
    return float(value)


def _stderr_value(value: Any, path: Path, field_name: str) -> float:
    """A standard error: a finite number >= 0, or missing ("N/A" as lm-eval writes it, or null) -> NaN."""
    if value is None or value == "N/A":
        return np.nan
    if problem(value, "") is not None or value < 0:
        raise ValueError(
            f"{path}: field {field_name} is {value!r}; a standard error must be a number >= 0 or 'N/A'"
        )
    return float(value)


def train_before_test(
    path: Path, key: str, label: str, regime: str, reader: TrainBeforeTestReader
) -> ScoreMatrix:
    """Matrix `key` (`label`): regime `regime` (`direct_eval` or `train_before_test`) of all_results.json at
    `path`, its perplexity corpora treated as `reader` (`Settings.train_before_test`) says."""
    if not path.is_file():
        raise InputsUnavailable(f"{path} does not exist")
    from testtask.lm.benchmarks import preset_metrics
    from testtask.paths import conf_dir

    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a UTF-8 JSON file ({err})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the top level must be an object, got {type(data).__name__}")
    metrics = preset_metrics(conf_dir() / "train_before_test" / "benchmarks")
    for field_name in (regime, f"{regime}_stderr"):
        if not isinstance(data.get(field_name), dict):
            raise ValueError(f"{path}: field {field_name!r} is missing or not a mapping; has {sorted(data)}")
    ppl, how = set(reader.perplexity_tasks), reader.perplexity
    notes = []
    cols, ses = {}, {}
    for bench, by_model in data[regime].items():
        if bench in ppl and how == Perplexity.exclude:
            continue
        if not isinstance(by_model, dict):
            raise ValueError(f"{path}: field {regime}.{bench} is not a mapping of model -> score")
        sign = -1.0 if bench in ppl else 1.0  # bits per byte: lower is better
        metric = metrics.get(bench, "")
        cols[bench] = {
            m: sign * _score(v, path, f"{regime}.{bench}.{m}", metric) for m, v in by_model.items()
        }
        se = data[f"{regime}_stderr"].get(bench, {})
        if not isinstance(se, dict):
            raise ValueError(f"{path}: field {regime}_stderr.{bench} is not a mapping of model -> stderr")
        ses[bench] = {m: _stderr_value(v, path, f"{regime}_stderr.{bench}.{m}") for m, v in se.items()}
    notes.append(
        f"perplexity corpora {sorted(ppl)}: "
        + ("excluded" if how == Perplexity.exclude else "negated bits per byte (no standard errors)")
    )
    scores = pd.DataFrame(cols)
    stderr = pd.DataFrame(ses).reindex(index=scores.index, columns=scores.columns)
    return complete(key, label, scores, stderr, f"{path} [{regime}]", notes)


def _stderr(results: pd.DataFrame, spec: Any, adjustment: str) -> pd.Series:
    """Standard errors of one benchmark; for an `entries_mean` metric, those of the benchmark's own entry."""
    rows = results[
        (results["benchmark"] == spec.file)
        & (results["metric"] == spec.metric)
        & (results["adjustment"] == adjustment)
        & (results["suite"] == spec.suite)
    ]
    if adjustment != "base":
        rows = rows[rows["finetune"] == spec.finetune]
    return rows.drop_duplicates("model").set_index("model")["stderr"]


TOTT = "training-on-the-test-task"


def training_on_the_test_task(ctx: Context, key: str, entry: Matrix) -> ScoreMatrix:
    """Benchmarks `entry.benchmarks` of the training-on-the-test-task models at stage base or adjusted, read with
    that paper's settings (its context, from the pipeline: its config with any overrides)."""
    from testtask.lm import release
    from testtask.lm.scores import before_after, excluded_records, usable

    tctx = ctx.context_of(TOTT)
    tott = tctx.settings  # training_on_the_test_task.settings.Settings (that paper's PAPER.settings)
    results = release.results(tctx.data_root, tott.release, tctx.source)  # InputsUnavailable when absent
    # own models (the user folder's) without a result in this source are left out, not missing results
    reg = tott.release.registry_for(results, str(tctx.data_root / tott.release.evaluations_dir))
    kinds = tott.model_kinds
    stage = entry.stage
    adj = tott.adjustment
    absent = tott.release.absent
    # the registry's models of these kinds, in order of pretraining compute (as that paper's model tables)
    models = sorted((n for n in reg.names() if reg.get(n).kind in kinds), key=lambda n: reg.get(n).compute)
    cols, ses, gaps = {}, {}, []
    for bench in entry.benchmarks:
        spec = tott.benchmark(str(bench))
        table = before_after(results, spec, models, stage=adj.stage, use_max=adj.use_max, absent=absent)
        if table.empty or table["before"].isna().all():
            raise ValueError(f"{spec.key}: no results for models of kind {kinds}")
        # a model without the score is dropped below (complete); here each gap is named, or refused unlisted
        gaps += usable(
            table, "before" if stage == Stage.base else "adjusted", f"proxy-tasks matrix {key} ({bench})"
        )[1]
        table = table.set_index("model")
        sign = 1.0 if spec.higher_is_better else -1.0
        before_se = _stderr(results, spec, "base").reindex(table.index)
        if stage == Stage.base:
            cols[spec.key] = sign * table["before"]
            ses[spec.key] = before_se
        else:
            after_se = _stderr(results, spec, adj.stage).reindex(table.index)
            cols[spec.key] = sign * table["adjusted"]
            # the standard error of whichever score the adjustment kept
            took_before = np.isclose(table["adjusted"], table["before"])
            ses[spec.key] = before_se.where(took_before, after_se)
    scores = pd.DataFrame(cols)
    stderr = pd.DataFrame(ses).reindex(index=scores.index, columns=scores.columns)
    notes = [
        f"model kinds {list(kinds)}; metric per benchmark from training_on_the_test_task.benchmarks",
        "standard errors of MMLU-style entries_mean metrics are those of the benchmark's own aggregate entry",
    ]
    if stage == Stage.adjusted:
        notes.append(f"adjusted = max(before, after {adj.stage}) with use_max={adj.use_max}")
    root = tctx.data_root / tott.release.evaluations_dir
    return complete(key, entry.label, scores, stderr, f"{root} [{stage}]", notes, excluded_records(gaps))


def load_matrix(ctx: Context, key: str) -> ScoreMatrix:
    """Matrix `key` of `proxy_tasks.matrices`, read by its configured reader."""
    settings = ctx.settings  # proxy_tasks.settings.Settings (PAPER.settings)
    entry = settings.matrix(key)  # KeyError naming the known ones
    if entry.reader == Reader.train_before_test:
        tbt = settings.train_before_test
        path = ctx.paper_root("train-before-test") / tbt.file
        return train_before_test(path, key, entry.label, entry.regime, tbt)
    if entry.reader == Reader.training_on_the_test_task:
        return training_on_the_test_task(ctx, key, entry)
    raise ValueError(f"proxy_tasks.matrices.{key}.reader must be one of {', '.join(Reader)}")
