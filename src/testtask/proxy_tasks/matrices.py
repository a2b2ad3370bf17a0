"""The model x task score matrices analysed: the published releases of other papers, read by their readers.

- train-before-test: `all_results.json` = {regime: {benchmark: {HF model id: score}}, regime_stderr: ...}; its
  `*_2025` corpora are bits per byte (lower is better): excluded, or negated with `perplexity: flip`.
- training-on-the-test-task: lm-eval JSONs read by the shared reader that paper's analyses use too
  (`testtask.lm.release`, `testtask.lm.scores.before_after`, with that paper's settings and context), with the
  metric its config assigns to each benchmark; stage `base` (no fine-tuning) or `adjusted` (max of the score
  before and after its fine-tuning stage, the authors' adjustment).
- csv: a student's own score matrix (`user_matrices.py`): a header row, then per model its name and a score per
  task (higher is better; empty where it has none); standard errors, optionally, in a second CSV of that shape.

Every matrix is complete (models lacking a used task are dropped, listed in `dropped_models` and logged) and
oriented higher-is-better. Every score is a finite number within its metric's range, else an error naming the
file and the field (row, column). A cell may be missing only where the release has no score for the model (a model
absent from a train-before-test benchmark; a training-on-the-test-task result listed under `absent_results`).
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from testtask.context import Context, InputsUnavailable
from testtask.errors import InputError
from testtask.metric_ranges import problem
from testtask.paths import in_repo, resolve
from testtask.proxy_tasks.settings import Matrix, Perplexity, Reader, Stage, TrainBeforeTestReader

log = logging.getLogger(__name__)

MIN_MODELS = 5  # a matrix with fewer complete models is refused: too few for any correlation across models


class MatrixError(InputError, ValueError):
    """A score matrix that cannot be used; the message names the file and the row, column or field."""


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
    """What a figure says on itself about the models its panels were drawn without (their `dropped_models`)."""
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
    if len(scores) < MIN_MODELS:
        raise MatrixError(
            f"{source}: only {len(scores)} models have a score for every task of {list(scores.columns)}; the "
            f"analyses need at least {MIN_MODELS}"
        )
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
    notes = [
        f"perplexity corpora {sorted(ppl)}: "
        + ("excluded" if how == Perplexity.exclude else "negated bits per byte (no standard errors)")
    ]
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


@dataclass(frozen=True)
class _Table:
    """A CSV read as text: its path as shown, the task columns and, per model, its line number and cells."""

    name: str
    tasks: list[str]
    rows: dict[str, tuple[int, list[str]]]


def _read_table(path: Path, where: str) -> _Table:
    """The header and rows of a models x tasks CSV, its shape checked: named, unique models and tasks, one cell per
    task on every row. `where` says which setting to change when there is no such file."""
    name = in_repo(path)
    if not path.is_file():
        raise MatrixError(f"{name} does not exist: change {where}")
    try:
        # a byte-order mark, as spreadsheet programs write, is fine
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise MatrixError(f"{name}: not a UTF-8 text file ({err})") from None
    lines = list(csv.reader(text.splitlines()))
    numbered = [
        (i, [c.strip() for c in cells]) for i, cells in enumerate(lines, 1) if any(c.strip() for c in cells)
    ]
    if not numbered:
        raise MatrixError(
            f"{name}: empty; expected a header row (model, then one column per task) and a row per model"
        )
    (head_line, header), body = numbered[0], numbered[1:]
    tasks = header[1:]
    for col, task in enumerate(tasks, 2):
        if not task:
            raise MatrixError(f"{name}: line {head_line}, column {col} of the header has no task name")
        if tasks.index(task) + 2 != col:
            raise MatrixError(
                f"{name}: column {task!r} appears twice in the header (columns {tasks.index(task) + 2} and {col}); "
                "each task has one column"
            )
    if not tasks:
        raise MatrixError(
            f"{name}: the header has no task columns; expected the model column, then one per task"
        )
    rows: dict[str, tuple[int, list[str]]] = {}
    for line, cells in body:
        model = cells[0]
        if len(cells) != len(header):
            raise MatrixError(
                f"{name}: row {model!r} (line {line}) has {len(cells)} cells, the header {len(header)}; "
                "one per task after the model's name"
            )
        if not model:
            raise MatrixError(f"{name}: line {line} names no model in its first column")
        if model in rows:
            raise MatrixError(
                f"{name}: row {model!r} (line {line}) repeats the model of line {rows[model][0]}; each model has one row"
            )
        rows[model] = (line, cells[1:])
    return _Table(name, tasks, rows)


def _cells(table: _Table, what: str, low: float) -> pd.DataFrame:
    """The table's cells as numbers (models x tasks; an empty cell NaN): each finite and >= `low`, else an error
    naming the row and column."""
    values = {}
    for model, (line, cells) in table.rows.items():
        row = []
        for task, cell in zip(table.tasks, cells, strict=True):
            if cell == "":
                row.append(np.nan)
                continue
            try:
                value = float(cell)
            except ValueError:
                value = math.nan
            if not math.isfinite(value) or value < low:
                bound = "" if low == -math.inf else f" >= {low:g}"
                raise MatrixError(
                    f"{table.name}: row {model!r} (line {line}), column {task!r}: {cell!r} is not a {what}: expected "
                    f"a finite number{bound}, or an empty cell where the model has none"
                )
            row.append(value)
        values[model] = row
    return pd.DataFrame.from_dict(values, orient="index", columns=table.tasks)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def csv_matrix(key: str, entry: Matrix) -> ScoreMatrix:
    """Matrix `key` of reader csv: the scores of `entry.file` and, when given, the standard errors of
    `entry.stderr_file` (the same models and tasks); its label is `entry.label`, the student's own."""
    setting = f"proxy_tasks.matrices.{key}"
    path = resolve(entry.file)
    scores_table = _read_table(path, f"{setting}.file (`file` of {key} in the user folder's matrices.yaml)")
    if len(scores_table.tasks) < 2:
        raise MatrixError(
            f"{scores_table.name}: has one task column ({scores_table.tasks[0]!r}); the analyses need a target and at "
            "least one other task"
        )
    scores = _cells(scores_table, "score", -math.inf)
    for task in scores.columns:
        known = scores[task].dropna()
        if len(known) > 1 and known.nunique() == 1:
            raise MatrixError(
                f"{scores_table.name}: column {task!r} has the same score ({known.iloc[0]:g}) for every model: it "
                "cannot be normalised; drop the column"
            )
    notes = [f"scores: {scores_table.name} (SHA-256 {_sha256(path)})"]
    stderr = None
    if entry.stderr_file is not None:
        se_path = resolve(entry.stderr_file)
        se_table = _read_table(
            se_path, f"{setting}.stderr_file (`stderr_file` of {key} in the user folder's matrices.yaml)"
        )
        _same_shape(se_table, scores_table)
        stderr = _cells(se_table, "standard error", 0.0).reindex(index=scores.index, columns=scores.columns)
        notes.append(f"standard errors: {se_table.name} (SHA-256 {_sha256(se_path)})")
    return complete(key, entry.label, scores, stderr, scores_table.name, notes)


def _same_shape(se: _Table, scores: _Table) -> None:
    """The standard errors' CSV has the models and tasks of the scores' CSV (in any order), else an error naming
    the first row or column that differs."""
    for what, theirs, ours in (("column", se.tasks, scores.tasks), ("row", list(se.rows), list(scores.rows))):
        extra = [x for x in theirs if x not in ours]
        lacking = [x for x in ours if x not in theirs]
        if extra or lacking:
            found = (
                f"has {what} {extra[0]!r}, which {scores.name} has not"
                if extra
                else f"lacks {what} {lacking[0]!r}"
            )
            raise MatrixError(
                f"{se.name}: {found}; the standard errors' CSV must have the models (rows) and tasks (columns) of "
                f"{scores.name}"
            )


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
    if entry.reader == Reader.csv:
        return csv_matrix(key, entry)
    raise ValueError(f"proxy_tasks.matrices.{key}.reader must be one of {', '.join(Reader)}")
