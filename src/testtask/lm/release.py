"""A release of lm-eval results, read through an analysis config (`ReleaseSettings`): the model registry, the
results the source lacks, and the tidy table of results, read once per process (`results`).
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from testtask.context import InputsUnavailable
from testtask.lm.models import Kind, ModelRegistry, Models
from testtask.lm.results import ANY, Absence, AbsentResults, load_results
from testtask.lm.results_layout import ResultFile, discover
from testtask.schema import Choice, Name, Problem, require, section, to_plain
from testtask.sources import OverlayConflict

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)


class ModelValues(Choice):
    """Which N, D and train dates the registry gives: those of the authors' analysis code (notebooks/utils.py,
    which produced the published numbers) or of the paper's Appendix B.1."""

    paper = "paper"
    authors = "authors"


_REGISTRIES: dict[tuple[str, str], ModelRegistry] = {}


def _registry(models: Models, models_json: str, values: ModelValues) -> ModelRegistry:
    """The registry of `models` with `values`, built once per registry config and choice."""
    key = (models_json, str(values))
    if key not in _REGISTRIES:
        registry = ModelRegistry.from_models(models)
        _REGISTRIES[key] = registry.with_authors_values() if values == ModelValues.authors else registry
    return _REGISTRIES[key]


@section
class ReleaseSettings:
    """The keys of an analysis section that say how a release of lm-eval results is read."""

    evaluations_dir: Name  # below the source's data root
    model_values: ModelValues
    # the model registry (conf/training_on_the_test_task/models/paper.yaml, and the user's own)
    models: Models
    absent_results: list[Absence]  # the only licence to leave a model out (analysis.yaml says how)

    def __post_init__(self) -> None:
        require(self.relations())

    def relations(self) -> list[Problem]:
        """An `absent_results` entry that names a model the registry does not have."""
        known = {name for kind in Kind for name in self.models.section(kind)}
        problems = []
        for i, absence in enumerate(self.absent_results):
            unknown = [m for m in absence.models if m != ANY and m not in known]
            if unknown:
                problems.append(
                    Problem(
                        f"absent_results[{i}].model",
                        absence.model,
                        f"models of the registry {{models}} ({', '.join(unknown)} not in it)",
                    )
                )
        return problems

    @functools.cached_property
    def release(self) -> Release:
        """How the release is read, built once per settings object."""
        return Release.of(self)


@dataclass(frozen=True)
class Release:
    """How a release of lm-eval results is read: its typed settings' registry and absent results, checked once."""

    evaluations_dir: str  # below the source's data root
    # `model_values=paper`: D and train dates of Appendix B.1; `authors`: those of the authors' analysis code
    registry: ModelRegistry
    absent: AbsentResults  # the results the config lists as genuinely missing from the source
    key: str  # the registry and absent_results settings as JSON: the results table is cached by it
    own: dict[str, str]  # the models only a user file added -> that file (`Models.own`)

    def registry_for(self, table: pd.DataFrame, where: str) -> ModelRegistry:
        """The registry as a source (its results `table`, from `where`) sees it: an own model without a result
        there is left out, said once per source (the user's model: its absence is no missing result)."""
        present = set(table["model"])
        lacking = sorted(name for name in self.own if name not in present)
        if not lacking:
            return self.registry
        said = (tuple(lacking), where)
        if said not in _SAID:
            _SAID.add(said)
            files = sorted({self.own[name] for name in lacking})
            log.info(
                "own model%s %s (%s) %s no results in %s: left out of its analyses",
                "s" if len(lacking) > 1 else "",
                ", ".join(lacking),
                ", ".join(files),
                "have" if len(lacking) > 1 else "has",
                where,
            )
        return self.registry.without(lacking)

    @classmethod
    def of(cls, settings: ReleaseSettings) -> Release:
        models_json = json.dumps(to_plain(settings.models), sort_keys=True)
        registry = _registry(settings.models, models_json, settings.model_values)
        listed = json.dumps(to_plain(settings.absent_results), sort_keys=True)
        return cls(
            settings.evaluations_dir,
            registry,
            AbsentResults(settings.absent_results),
            json.dumps([models_json, listed]),
            dict(settings.models.own),
        )


_SAID: set[tuple[tuple[str, ...], str]] = set()  # the own models said left out, by source: one line each

_CACHE: dict[tuple[str, float, str], pd.DataFrame] = {}
_CACHED_ROOTS = 2  # a release and the run laid over it (source=published+results) stay loaded together


def results(data_root: Path, release: Release, source: str, overlay: Path | None = None) -> pd.DataFrame:
    """The tidy results table of a source (`data_root`; InputsUnavailable without its evaluations folder).
    `overlay`: a run's root whose results are added (source=published+results); a result in both conflicts."""
    import pandas as pd  # here, not at the top: checking a config must not load pandas

    published = data_root / release.evaluations_dir
    if overlay is None:
        return _one_root(published, release, source)
    run = overlay / release.evaluations_dir
    stamps = {root: _stamp(root) for root in (published, run) if root.is_dir()}  # one walk per tree and call
    conflicts(published, run, stamps)
    tables = [
        _one_root(published, release, source, stamps),
        _one_root(run, release, source, stamps, laid_over=True),
    ]
    return pd.concat(tables, ignore_index=True)


# pairs of trees found free of conflicts, with their stamps: a figure reads one table per benchmark
_NO_CONFLICTS: set[tuple[str, float, str, float]] = set()


def conflicts(published: Path, run: Path, stamps: Mapping[Path, float] | None = None) -> None:
    """OverlayConflict for the first result both evaluations folders hold; checked again only when either tree
    changed (`stamps`: the trees' `_stamp`s, when the caller has them)."""
    if not (published.is_dir() and run.is_dir()):
        return
    stamps = stamps or {root: _stamp(root) for root in (published, run)}
    key = (str(published), stamps[published], str(run), stamps[run])
    if key in _NO_CONFLICTS:
        return
    seen = {_identity(rf): rf.path for rf in discover(published)}
    for rf in discover(run):
        if _identity(rf) in seen:
            what = f"result (model {rf.model}, benchmark {rf.benchmark}, {_stage(rf)})"
            raise OverlayConflict(what, seen[_identity(rf)], rf.path)
    _NO_CONFLICTS.add(key)


def _stamp(root: Path) -> float:
    """The newest mtime of `root`'s folders. Results are written atomically (by rename), so a file added, removed
    or replaced changes a folder's mtime, which is cheaper to scan than every file's."""
    return max(os.stat(folder).st_mtime for folder, _, _ in os.walk(root))


def _identity(rf: ResultFile) -> tuple:
    return (rf.model, rf.benchmark, rf.adjustment, rf.finetune, rf.suite, rf.step, rf.learning_rate)


def _stage(rf: ResultFile) -> str:
    parts = [rf.adjustment] + [p for p in (rf.finetune, rf.suite) if p]
    if rf.step is not None:
        parts.append(f"step {rf.step}")
    if rf.learning_rate is not None:
        parts.append(f"learning rate {rf.learning_rate:g}")
    return ", ".join(parts)


def _one_root(
    root: Path,
    release: Release,
    source: str,
    stamps: Mapping[Path, float] | None = None,
    laid_over: bool = False,
) -> pd.DataFrame:
    """One evaluations folder's table; a run `laid_over` a release must name registry models only."""
    if not root.is_dir():
        raise InputsUnavailable(
            f"{root} does not exist (source={source}; the folder is evaluations_dir = {release.evaluations_dir!r})"
        )
    reg = release.registry
    # Figures built in one process share the table; a changed registry or tree (`_stamp`) reloads it.
    stamp = stamps[root] if stamps and root in stamps else _stamp(root)
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
