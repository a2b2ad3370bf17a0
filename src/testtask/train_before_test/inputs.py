"""Read and check `all_results.json`: {regime field: {benchmark: {model id: value}}} for scores and standard errors.

The authors' release and our runner write the same layout. Scores must be finite numbers within the range of
the benchmark's metric (the metric each benchmark is run with, conf/train_before_test/benchmarks/*.yaml: accuracy
in [0, 1], CoLA's MCC in [-1, 1], bits per byte >= 0); standard errors are finite numbers >= 0 or missing (lm-eval's
`"N/A"` as the release and our runner write it for the perplexity corpora, or null), which become NaN. A model
absent from a benchmark is kept as NaN: each analysis says whether it uses pairwise-complete or common models, and
names the models it leaves out.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from testtask.context import Context, InputsUnavailable
from testtask.errors import InputError
from testtask.io import unique_keys_hook
from testtask.metric_ranges import problem
from testtask.sources import OverlayConflict
from testtask.train_before_test.settings import Regime

SECTION = "train_before_test"  # the config section of this paper's settings, as messages name its keys
MISSING_STDERR = ("N/A",)  # lm-eval's mark for a standard error it did not compute (null counts too)


class ResultsFormatError(InputError, ValueError):
    """`all_results.json` does not have the expected structure; the message names the file and the field."""


@dataclass
class Results:
    """Scores and standard errors per regime: DataFrames indexed by model id, one column per benchmark."""

    path: Path  # the file read; with source=published+results, the release's
    scores: dict[str, pd.DataFrame]
    stderr: dict[str, pd.DataFrame]
    regimes: dict[str, Regime] = field(default_factory=dict)
    laid_over: tuple[Path, ...] = ()  # the runs' files laid over `path` (source=published+results)

    @property
    def files(self) -> list[Path]:
        """Every file the scores were read from."""
        return [self.path, *self.laid_over]

    def benchmarks(self) -> set[str]:
        """Benchmarks present in every regime's scores."""
        sets = [set(frame.columns) for frame in self.scores.values()]
        return set.intersection(*sets) if sets else set()


def benchmark_metrics() -> dict[str, str]:
    """Benchmark -> the lm-eval metric it is run with (every preset of conf/train_before_test/benchmarks).

    A benchmark the presets give different metrics is left out (its scores are only checked to be finite)."""
    from testtask.lm.benchmarks import preset_metrics
    from testtask.paths import conf_dir

    return preset_metrics(conf_dir() / "train_before_test" / "benchmarks")


def _number(value: Any, where: str, path: Path, allow_missing: bool, metric: str = "") -> float:
    """A score (`allow_missing` False: a finite number in the range of `metric`) or a standard error (a finite
    number >= 0, or "N/A"/null -> NaN)."""
    if value is None or (isinstance(value, str) and value.strip() in MISSING_STDERR):
        if allow_missing:
            return math.nan
        raise ResultsFormatError(f"{path}: '{where}' is missing ({value!r}); scores must be finite numbers")
    # bool is an int subclass; a true/false score is a writer's bug
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ResultsFormatError(f"{path}: '{where}' must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ResultsFormatError(f"{path}: '{where}' is not finite ({value!r})")
    if allow_missing and number < 0:
        raise ResultsFormatError(f"{path}: '{where}' is a negative standard error ({value!r})")
    why = None if allow_missing else problem(number, metric)
    if why is not None:
        raise ResultsFormatError(f"{path}: '{where}' is {value!r}, {why} (the metric of this benchmark)")
    return number


def _matrix(
    data: Mapping[str, Any],
    name: str,
    path: Path,
    allow_missing: bool,
    metrics: Mapping[str, str],
    setting: str = "",
) -> pd.DataFrame:
    """One field of the file as a models x benchmarks frame (NaN where a model is absent); `setting`: the config
    key that names the field, for the message when the file lacks it."""
    if name not in data:
        named = f"; {setting} names it: set it to one of those fields, or add the field to the file"
        raise ResultsFormatError(
            f"{path}: field '{name}' is missing (top-level fields: {sorted(data)}){named if setting else ''}"
        )
    block = data[name]
    if not isinstance(block, dict):
        raise ResultsFormatError(
            f"{path}: field '{name}' must map benchmark -> {{model: value}}, got {type(block).__name__}"
        )
    columns: dict[str, dict[str, float]] = {}
    for bench, per_model in block.items():
        if not isinstance(per_model, dict):
            raise ResultsFormatError(
                f"{path}: field '{name}.{bench}' must map model id -> value, got {type(per_model).__name__}"
            )
        metric = metrics.get(str(bench), "")
        columns[bench] = {
            str(model): _number(value, f"{name}.{bench}.{model}", path, allow_missing, metric)
            for model, value in per_model.items()
        }
    return pd.DataFrame(columns, dtype=float).sort_index()


def parse_results(
    data: Any, path: Path, regimes: dict[str, Regime], metrics: Mapping[str, str] | None = None
) -> Results:
    """Check the decoded JSON `data` (read from `path`) and split it into per-regime frames; `metrics`: benchmark
    -> lm-eval metric, whose range each score must lie in (None: benchmark_metrics())."""
    if not isinstance(data, dict):
        raise ResultsFormatError(f"{path}: the top level must be an object, got {type(data).__name__}")
    metrics = benchmark_metrics() if metrics is None else metrics
    scores = {
        key: _matrix(data, r.field, path, False, metrics, f"{SECTION}.regimes.{key}.field")
        for key, r in regimes.items()
    }
    stderr = {
        key: _matrix(data, r.stderr_field, path, True, metrics, f"{SECTION}.regimes.{key}.stderr_field")
        for key, r in regimes.items()
    }
    for key, r in regimes.items():
        extra = sorted(set(scores[key].columns) - set(stderr[key].columns))
        if extra:
            raise ResultsFormatError(
                f"{path}: field '{r.stderr_field}' lacks benchmarks {extra} of '{r.field}'"
            )
    return Results(path=path, scores=scores, stderr=stderr, regimes=regimes)


def load_results(path: Path, regimes: dict[str, Regime], metrics: Mapping[str, str] | None = None) -> Results:
    """Read `path`; InputsUnavailable when it does not exist, ResultsFormatError when it is malformed."""
    path = Path(path)
    if not path.is_file():
        raise InputsUnavailable(f"{path} does not exist")
    try:
        data = json.loads(
            path.read_bytes().decode("utf-8"), object_pairs_hook=unique_keys_hook(path, ResultsFormatError)
        )
    except UnicodeDecodeError as err:
        raise ResultsFormatError(f"{path}: not UTF-8 text (byte {err.start}: {err.reason})") from None
    except json.JSONDecodeError as err:
        raise ResultsFormatError(f"{path}: not valid JSON ({err})") from err
    return parse_results(data, path, regimes, metrics)


def overlay(release: Results, run: Results) -> Results:
    """`run`'s scores added to `release`'s (source=published+results): models and benchmarks of either, NaN
    where neither has a score; a (regime, benchmark, model) scored in both is an OverlayConflict naming both
    files. A run may leave a regime empty (`{}`), e.g. when it has no train-before-test scores."""
    scores, stderr = {}, {}
    for key, regime in release.regimes.items():
        ours, theirs = release.scores[key], run.scores[key]
        both = ours.notna().reindex_like(theirs).fillna(False).astype(bool) & theirs.notna()
        if both.to_numpy().any():
            model, bench = both.stack().loc[lambda hit: hit].index[0]
            what = f"score ({regime.field}.{bench}.{model})"
            raise OverlayConflict(what, release.path, run.path)
        scores[key] = ours.combine_first(theirs).sort_index()
        stderr[key] = release.stderr[key].combine_first(run.stderr[key]).sort_index()
    laid_over = (*release.laid_over, *run.files)
    return Results(release.path, scores, stderr, release.regimes, laid_over)


_CACHE: dict[tuple, Results] = {}


def _path(root: Path, ctx: Context) -> Path:
    path = root / ctx.settings.results_file
    if not path.is_file():
        raise InputsUnavailable(
            f"{path} does not exist (source={ctx.source}; the file is {SECTION}.results_file = "
            f"{ctx.settings.results_file!r})"
        )
    return path


def results(ctx: Context) -> Results:
    """The results file of `ctx`'s source, read once per process (re-read when a file changes); with
    source=published+results, the run's file laid over the release's (`overlay`)."""
    paths = [_path(root, ctx) for root in ctx.roots()]
    regimes = dict(ctx.settings.regimes)
    key = (
        tuple((str(p), os.stat(p).st_mtime) for p in paths),
        repr(sorted((k, r.field, r.stderr_field) for k, r in regimes.items())),
    )
    if key not in _CACHE:
        _CACHE.clear()
        loaded = [load_results(path, regimes) for path in paths]
        _CACHE[key] = loaded[0] if len(loaded) == 1 else overlay(*loaded)
    return _CACHE[key]
