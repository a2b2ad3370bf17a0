"""A release of lm-eval results, read through an analysis config: the model registry, the results the source
lacks, and the tidy table of results (read once per process).

`Release.from_config` reads training-on-the-test-task's analysis config (`models`, `model_values`,
`absent_results`, `evaluations_dir`) once, into typed settings (that paper's `Settings.release`); `results` reads
the tables of a source of that paper (its data root): its analyses read their inputs here, and proxy-tasks reads
that paper's release the same way (with that paper's context, from the pipeline).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, ListConfig, OmegaConf

from testtask.context import InputsUnavailable
from testtask.lm.models import ModelRegistry
from testtask.lm.results import AbsentResults, load_results
from testtask.lm.results_layout import ResultFile, discover
from testtask.sources import OverlayConflict

log = logging.getLogger(__name__)


@lru_cache(maxsize=8)
def _registry(models_json: str, values: str) -> ModelRegistry:
    reg = ModelRegistry.from_config(json.loads(models_json))
    if values == "authors":
        return reg.with_authors_values()
    if values != "paper":
        raise ValueError(
            f"training_on_the_test_task.model_values must be 'paper' or 'authors', got {values!r}"
        )
    return reg


def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig | ListConfig) else node


@dataclass(frozen=True)
class Release:
    """How a release of lm-eval results is read, from an analysis config section, checked once."""

    evaluations_dir: str  # below the source's data root
    # `model_values=paper`: D and train dates of Appendix B.1; `authors`: those of the authors' analysis code
    registry: ModelRegistry
    absent: AbsentResults  # the results the config lists as genuinely missing from the source, checked
    key: str  # the registry and absent_results configs as JSON: the results table is cached by it

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> Release:
        models = _plain(section["models"])
        models = dict(models) if isinstance(models, Mapping) else models
        models_json = json.dumps(models, sort_keys=True)
        reg = _registry(models_json, str(section["model_values"]))
        listed = _plain(section["absent_results"])
        absent = AbsentResults.from_config(
            listed, known_model=lambda name: name in reg, where="training_on_the_test_task.absent_results"
        )
        key = json.dumps([models_json, json.dumps(listed, sort_keys=True)])
        return cls(str(section["evaluations_dir"]), reg, absent, key)


_CACHE: dict[tuple[str, float, str], pd.DataFrame] = {}
_CACHED_ROOTS = 2  # a release and the run laid over it (source=published+results) stay loaded together


def results(data_root: Path, release: Release, source: str, overlay: Path | None = None) -> pd.DataFrame:
    """The tidy results table of a source (`data_root`, named `source` in messages); InputsUnavailable when the
    evaluations folder is absent.

    Every value is checked (results.load_results); a value missing or NaN is an error unless `absent_results`
    lists that result. `overlay` (source=published+results): a run's root whose results are added to those of
    `data_root`; a result in both is an OverlayConflict naming both files."""
    if overlay is None:
        return _one_root(data_root, release, source)
    conflicts(data_root / release.evaluations_dir, overlay / release.evaluations_dir)
    tables = [_one_root(data_root, release, source), _one_root(overlay, release, source, laid_over=True)]
    return pd.concat(tables, ignore_index=True)


def conflicts(published: Path, run: Path) -> None:
    """OverlayConflict for the first result (model, benchmark, stage, fine-tune, suite, step, learning rate) that
    both evaluations folders hold: the layout places each result at one relative path, so classify both trees."""
    if not (published.is_dir() and run.is_dir()):
        return
    seen = {_identity(rf): rf.path for rf in discover(published)}
    for rf in discover(run):
        if _identity(rf) in seen:
            what = f"result (model {rf.model}, benchmark {rf.benchmark}, {_stage(rf)})"
            raise OverlayConflict(what, seen[_identity(rf)], rf.path)


def _identity(rf: ResultFile) -> tuple:
    return (rf.model, rf.benchmark, rf.adjustment, rf.finetune, rf.suite, rf.step, rf.learning_rate)


def _stage(rf: ResultFile) -> str:
    parts = [rf.adjustment] + [p for p in (rf.finetune, rf.suite) if p]
    if rf.step is not None:
        parts.append(f"step {rf.step}")
    if rf.learning_rate is not None:
        parts.append(f"learning rate {rf.learning_rate:g}")
    return ", ".join(parts)


def _one_root(data_root: Path, release: Release, source: str, laid_over: bool = False) -> pd.DataFrame:
    """One root's table. A run `laid_over` a release must name registry models only: its model unknown is a
    ResultsError naming the file, not a quiet skip."""
    root = data_root / release.evaluations_dir
    if not root.is_dir():
        raise InputsUnavailable(f"{root} does not exist (source={source})")
    reg = release.registry
    # Figures built in one process share the table; a changed registry, or a file added, removed or replaced
    # (results are written atomically, by rename) reloads it: that changes a folder's mtime, cheaper to scan
    # than every file's.
    stamp = max(os.stat(folder).st_mtime for folder, _, _ in os.walk(root))
    key = (str(root), stamp, release.key)
    if key not in _CACHE:
        files = discover(root)
        if files and not laid_over and not any(f.model in reg for f in files):
            # e.g. the CPU mini-replication: its model is not one of the paper's, so only figure-mini uses it.
            raise InputsUnavailable(f"{root}: no result file names a model of the paper's registry")
        while len(_CACHE) >= _CACHED_ROOTS:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = load_results(
            root, known_model=lambda name: name in reg, progress=False, absent=release.absent
        )
    return _CACHE[key]
