"""Benchmark specifications (conf/train_before_test/benchmarks/*.yaml): which lm-eval task, splits and metric.

A downstream benchmark names the lm-eval `task`, the dataset splits that hold the `train`, `validation` and `test`
documents (`validation: null` carves validation out of train), and the reported `metric` with its lm-eval
`filter` (the results key is `<metric>,<filter>`), higher or lower is better. `validation_is_test: true` takes
the validation documents from the test split, as the authors' code does for MedMCQA (its lm-eval task names
`validation` as both splits): an option, never our default, since it selects checkpoints on test documents.

A perplexity corpus (§3.3) has a `source` instead of splits: one split of a dataset (a Hugging Face id, or a
local copy through `local_data`) whose `text` column holds the documents, optionally filtered by `where`
(column -> allowed values). The runner splits it 8:1:1 into train / validation / test (`corpus_fractions`) and
its lm-eval task (`lm_eval_tasks/`) scores rolling log-likelihood in bits per byte, lower is better.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from testtask.errors import InputError

_REQUIRED = ("task", "metric")
_SPLITS_REQUIRED = ("train", "test")
_OPTIONAL = {
    "validation": None,
    "filter": "none",
    "higher_is_better": True,
    "validation_is_test": False,
    "source": None,
}
_SOURCE_KEYS = {"path": None, "name": None, "split": "train", "text": "text", "where": None}
# The splits a corpus's lm-eval task reads (lm_eval_tasks/*_2025.yaml): the 8:1:1 parts are saved under them.
CORPUS_SPLITS = {"train": "train", "validation": "validation", "test": "test"}


class SpecError(InputError, ValueError):
    pass


@dataclass(frozen=True)
class CorpusSource:
    """Where a perplexity corpus's documents come from: `load_dataset(path, name, split=split)[text]`."""

    path: str | None
    name: str | None = None
    split: str = "train"
    text: str = "text"
    where: dict[str, list[Any]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_config(cls, where_from: str, entry: Mapping[str, Any]) -> CorpusSource:
        if not isinstance(entry, Mapping):
            raise SpecError(f"{where_from}: source must be a mapping, got {type(entry).__name__}")
        unknown = set(entry) - set(_SOURCE_KEYS)
        if unknown:
            raise SpecError(f"{where_from}: unknown source field(s) {sorted(unknown)}")
        values = {**_SOURCE_KEYS, **dict(entry)}
        where = values["where"] or {}
        if not isinstance(where, Mapping):
            raise SpecError(f"{where_from}: source.where must map column -> allowed values")
        return cls(
            path=None if values["path"] is None else str(values["path"]),
            name=None if values["name"] is None else str(values["name"]),
            split=str(values["split"]),
            text=str(values["text"]),
            where={str(k): list(v) if isinstance(v, list | tuple) else [v] for k, v in where.items()},
        )


@dataclass(frozen=True)
class BenchmarkSpec:
    name: str
    task: str
    train: str
    validation: str | None
    test: str
    metric: str
    filter: str = "none"
    higher_is_better: bool = True
    validation_is_test: bool = False
    source: CorpusSource | None = None

    @property
    def metric_key(self) -> str:
        return f"{self.metric},{self.filter}"

    @property
    def stderr_key(self) -> str:
        return f"{self.metric}_stderr,{self.filter}"

    @property
    def is_corpus(self) -> bool:
        return self.source is not None

    def as_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["source"] = None if self.source is None else self.source.as_dict()
        return out

    @classmethod
    def from_config(cls, name: str, entry: Mapping[str, Any]) -> BenchmarkSpec:
        where = f"benchmark {name!r} (conf/train_before_test/benchmarks)"
        if not isinstance(entry, Mapping):
            raise SpecError(f"{where}: expected a mapping, got {type(entry).__name__}")
        unknown = set(entry) - {*_REQUIRED, *_SPLITS_REQUIRED, *_OPTIONAL}
        if unknown:
            raise SpecError(f"{where}: unknown field(s) {sorted(unknown)}")
        corpus = entry.get("source") is not None
        required = _REQUIRED if corpus else (*_REQUIRED, *_SPLITS_REQUIRED)
        missing = [k for k in required if not entry.get(k)]
        if missing:
            raise SpecError(f"{where}: missing field(s) {missing}")
        values = {**_OPTIONAL, **(CORPUS_SPLITS if corpus else {}), **dict(entry)}
        if corpus:
            return cls._corpus(name, where, values)
        if values["validation_is_test"]:
            if values["validation"] is not None:
                raise SpecError(
                    f"{where}: validation_is_test takes validation from the test split; set validation: null"
                )
        elif values["validation"] is not None and values["validation"] == values["test"]:
            raise SpecError(
                f"{where}: validation and test name the same split {values['test']!r}; "
                "set validation: null to carve validation out of train (or validation_is_test: true to select "
                "on test documents, as the authors' code does for MedMCQA)"
            )
        if values["train"] in (values["validation"], values["test"]):
            raise SpecError(f"{where}: train split {values['train']!r} is also a validation or test split")
        return cls(
            name=name,
            task=str(values["task"]),
            train=str(values["train"]),
            validation=None if values["validation"] is None else str(values["validation"]),
            test=str(values["test"]),
            metric=str(values["metric"]),
            filter=str(values["filter"]),
            higher_is_better=bool(values["higher_is_better"]),
            validation_is_test=bool(values["validation_is_test"]),
        )

    @classmethod
    def _corpus(cls, name: str, where: str, values: Mapping[str, Any]) -> BenchmarkSpec:
        if values["validation_is_test"]:
            raise SpecError(f"{where}: a corpus is split 8:1:1; validation_is_test does not apply")
        return cls(
            name=name,
            task=str(values["task"]),
            train=str(values["train"]),
            validation=str(values["validation"]),
            test=str(values["test"]),
            metric=str(values["metric"]),
            filter=str(values["filter"]),
            higher_is_better=bool(values["higher_is_better"]),
            source=CorpusSource.from_config(where, values["source"]),
        )


def lookup(benchmarks: Mapping[str, Any], name: str) -> BenchmarkSpec:
    if name not in benchmarks:
        raise SpecError(f"benchmark {name!r} has no specification; known: {sorted(benchmarks)}")
    return BenchmarkSpec.from_config(name, benchmarks[name])
