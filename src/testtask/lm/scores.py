"""One benchmark's scores from the tidy results table (`testtask.lm.results`), and the results missing and why
(a `Gap`; `usable` is the one place rows are left out before a fit, and it refuses a gap config does not
list)."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from testtask.lm.results import (
    CONFIG,
    ENTRIES_MEAN,
    AbsentResults,
    ResultsError,
    entries_lacking,
)
from testtask.lm.settings import Suite
from testtask.schema import Choice, Flag, Name, UnitInterval, section

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)


class Aggregate(Choice):
    """A benchmark's score: the entry named like it (`own`, lm-eval's group aggregate) or the mean over every
    `results` entry (`entries_mean`, as the authors averaged MMLU)."""

    own = "own"
    entries_mean = ENTRIES_MEAN


@section
class Benchmark:
    """How one benchmark is scored (config: `training_on_the_test_task.benchmarks.<key>`)."""

    label: Name
    file: Name  # benchmark name in result file names
    metric: Name  # lm-eval metric key, e.g. "acc,none"
    aggregate: Aggregate
    chance: UnitInterval  # r of Eq. 1
    finetune: Name  # fine-tuning data that adjusts it: mmluaux | gsm8kaux
    suite: Suite
    higher_is_better: Flag

    @property
    def metric_key(self) -> str:
        """The metric's name in the tidy results table (testtask.lm.results)."""
        return self.metric if self.aggregate == Aggregate.own else f"{self.metric}|{ENTRIES_MEAN}"


@section
class BenchmarkSpec(Benchmark):
    """A configured benchmark with its key (`Settings.benchmark(key)`)."""

    key: Name

    @classmethod
    def of(cls, key: str, benchmark: Benchmark) -> BenchmarkSpec:
        return cls(key=key, **{f.name: getattr(benchmark, f.name) for f in fields(Benchmark)})


def select(
    results: pd.DataFrame,
    spec: BenchmarkSpec,
    adjustment: str = "base",
    finetune: str | None = None,
    step: int | None = None,
) -> pd.Series:
    """Scores of one benchmark at one adjustment (and checkpoint), indexed by model."""
    rows = _rows(results, spec, adjustment, finetune or spec.finetune, step)
    rows = rows[rows["metric"] == spec.metric_key]
    if adjustment == "lr_sweep":
        # one score per model: the best over the swept learning rates
        values = rows.groupby("model")["value"]
        return (values.max() if spec.higher_is_better else values.min()).rename(spec.key)
    if rows["model"].duplicated().any():
        dup = rows[rows["model"].duplicated(keep=False)]
        raise ValueError(f"{spec.key}: several results for one model: {sorted(set(dup['file']))[:4]}")
    return rows.set_index("model")["value"].rename(spec.key)


@dataclass(frozen=True)
class Gap:
    """A result an analysis looked for and the source lacks (no file, or a value config lists as absent)."""

    model: str
    benchmark: str  # benchmark name as in result files
    stage: str  # base | e1 | e2 | e1+2 | e3 | intermediate
    finetune: str | None
    suite: str
    step: int | None
    reason: str | None  # why (config absent_results); None: config does not list it
    present_file: str | None = None  # a file that is there but lacks `missing_field`: always an error
    missing_field: str | None = None

    @property
    def where(self) -> str:
        """The file that would hold the result, relative to the evaluations folder."""
        if self.stage == "intermediate":
            return f"intermediate/{self.finetune}/evals/{self.model}/step_{self.step}/{self.benchmark}.json"
        name = f"{self.model}-{self.benchmark}.json"
        if self.suite == "v2":
            return f"new_evals/{'base' if self.stage == 'base' else self.finetune}/{name}"
        return f"base/{name}" if self.stage == "base" else f"{self.stage}/{self.finetune}/{name}"

    def record(self) -> dict[str, Any]:
        """The JSON record of a model left out: model, benchmark, stage, file, reason."""
        record = {**asdict(self), "file": self.where}
        del record["present_file"], record["missing_field"]
        return record


def _rows(
    results: pd.DataFrame, spec: BenchmarkSpec, stage: str, finetune: str | None, step: int | None
) -> pd.DataFrame:
    """The rows of this benchmark and stage (whatever their metric)."""
    rows = results[
        (results["benchmark"] == spec.file)
        & (results["adjustment"] == stage)
        & (results["suite"] == spec.suite)
    ]
    if stage != "base":
        rows = rows[rows["finetune"] == finetune]
    if step is not None:
        rows = rows[rows["step"] == step]
    return rows


def _missing_field(spec: BenchmarkSpec, path: str) -> str:
    """The field `spec` reads that the file at `path` lacks, as an error message names it."""
    if spec.aggregate != ENTRIES_MEAN:
        return f"results.{spec.file}.{spec.metric}"
    lacking = entries_lacking(Path(path), spec.metric) or ["<an entry>"]
    return ", ".join(f"results.{entry}.{spec.metric}" for entry in lacking[:3]) + (
        f" (and {len(lacking) - 3} more entries)" if len(lacking) > 3 else ""
    )


def lookup(
    results: pd.DataFrame,
    spec: BenchmarkSpec,
    stage: str,
    models: Sequence[str],
    absent: AbsentResults,
    finetune: str | None = None,
    step: int | None = None,
) -> tuple[pd.Series, dict[str, Gap]]:
    """Scores of `models` at one stage (NaN where missing) and a Gap for each model without one."""
    series = select(results, spec, stage, finetune, step)
    values = series.reindex(list(models))
    tuned = None if stage == "base" else (finetune or spec.finetune)
    rows = _rows(results, spec, stage, tuned, step)
    files = dict(zip(rows["model"], rows["file"], strict=True))  # the files there, whatever their metrics
    gaps = {}
    for name, value in values.items():
        if np.isfinite(value):
            continue
        reason = absent.reason(name, spec.file, stage, tuned, step)
        gap = Gap(name, spec.file, stage, tuned, spec.suite, step, reason)
        if name in files and name not in series.index:  # the file is there without the metric
            field = _missing_field(spec, files[name])
            gap = Gap(name, spec.file, stage, tuned, spec.suite, step, None, files[name], field)
        gaps[name] = gap
    return values, gaps


def _unlisted_message(what: str, gaps: Sequence[Gap]) -> str:
    shown = ", ".join(g.where for g in gaps[:8]) + (f" and {len(gaps) - 8} more" if len(gaps) > 8 else "")
    return (
        f"{what}: {len(gaps)} result(s) missing and not listed under absent_results in {CONFIG}: {shown}. "
        "List one there (model, benchmark, stage, reason) only if the source genuinely lacks it."
    )


_SAID: set[tuple[str, str]] = set()  # (model, reason) of the gaps already logged as warnings in this process


def check_gaps(gaps: Iterable[Gap], what: str) -> list[Gap]:
    """The gaps of one fit, each logged (a warning the first time a model is left out for a reason, DEBUG after);
    ResultsError for a file lacking the field read or an unlisted gap."""
    gaps = list(gaps)
    broken = [g for g in gaps if g.present_file is not None]
    if broken:
        listed = "; ".join(f"{g.present_file}: field '{g.missing_field}' is missing" for g in broken[:5])
        raise ResultsError(f"{what}: {listed}")
    unlisted = [g for g in gaps if g.reason is None]
    if unlisted:
        raise ResultsError(_unlisted_message(what, unlisted))
    by_model: dict[tuple[str, str], list[str]] = {}
    for gap in gaps:
        by_model.setdefault((gap.model, str(gap.reason)), []).append(gap.where)
    for (model, reason), files in by_model.items():
        # A listed gap recurs in every panel and output that reads the model: said once per command, at DEBUG after
        if (model, reason) in _SAID:
            log.debug("%s: leaving out %s (no %s): %s", what, model, ", ".join(files), reason)
            continue
        _SAID.add((model, reason))
        log.warning(
            "%s: leaving out %s (no %s): %s (said once; each output's sidecar lists what it left out, excluded_models)",
            what,
            model,
            ", ".join(files),
            reason,
        )
    return gaps


def usable(table: pd.DataFrame, column: str, what: str) -> tuple[pd.DataFrame, list[Gap]]:
    """Rows of `table` with a score in `column`, and the Gap (`gap_<column>`) of each row without one."""
    import pandas as pd  # here, not at the top: checking a config must not load pandas

    lacking = table[column].isna().to_numpy()
    recorded = table[f"gap_{column}"] if f"gap_{column}" in table else pd.Series(None, index=table.index)
    gaps = []
    for model, gap in zip(table.loc[lacking, "model"], recorded[lacking], strict=True):
        if not isinstance(gap, Gap):
            raise ResultsError(f"{what}: model {model} has no {column} score and no recorded reason")
        gaps.append(gap)
    return table[~lacking], check_gaps(gaps, what)


def excluded_records(gaps: Iterable[Gap]) -> list[dict[str, Any]]:
    """JSON records of the models left out, each result once, in a stable order."""
    unique = {(g.model, g.benchmark, g.stage, g.finetune, g.step): g for g in gaps}
    return [unique[k].record() for k in sorted(unique, key=lambda k: tuple(str(x) for x in k))]


BEFORE_AFTER_COLUMNS = ["model", "before", "after", "adjusted", "gap_before", "gap_after", "gap_adjusted"]


def before_after(
    results: pd.DataFrame,
    spec: BenchmarkSpec,
    models: Sequence[str],
    *,
    stage: str,
    use_max: bool,
    absent: AbsentResults | None = None,
) -> pd.DataFrame:
    """One row per model: `before` (no fine-tuning), `after` (fine-tuning `stage`; empty: none configured),
    `adjusted` and the Gap of each missing score. `adjusted` is max(before, after) with `use_max` (the
    authors' choice: fine-tuning that hurts a model is not held against it), else `after`."""
    import pandas as pd  # here, not at the top: checking a config must not load pandas

    absent = absent if absent is not None else AbsentResults()
    names = list(models)
    before, before_gaps = lookup(results, spec, "base", names, absent)
    if stage:
        after, after_gaps = lookup(results, spec, stage, names, absent)
    else:
        after = pd.Series(math.nan, index=names)
        reason = "no fine-tuning stage is configured (adjustment.stage)"
        after_gaps = {n: Gap(n, spec.file, "", spec.finetune, spec.suite, None, reason) for n in names}
    rows = []
    for name in names:
        score, post = before[name], after[name]
        if np.isnan(score) or np.isnan(post):
            adjusted = np.nan
        elif use_max:
            adjusted = max(score, post) if spec.higher_is_better else min(score, post)
        else:
            adjusted = post
        rows.append(
            {
                "model": name,
                "before": float(score),
                "after": float(post),
                "adjusted": float(adjusted),
                "gap_before": before_gaps.get(name),
                "gap_after": after_gaps.get(name),
                "gap_adjusted": before_gaps.get(name) or after_gaps.get(name),
            }
        )
    return pd.DataFrame(rows, columns=BEFORE_AFTER_COLUMNS)
