"""Benchmark specifications (conf/train_before_test/benchmarks/*.yaml): which lm-eval task, splits and metric.

The keys are those of `settings.Benchmark`. `validation_is_test: true` takes the validation documents from the
test split, as the authors' code does for MedMCQA (its lm-eval task names `validation` as both splits): an option,
never our default, since it selects checkpoints on test documents. A perplexity corpus (§3.3) has a `source`
instead of splits (`corpora.py`), cut 8:1:1 into train / validation / test (`corpus_fractions`); its lm-eval task
(`lm_eval_tasks/`) scores rolling log-likelihood in bits per byte, lower is better.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from testtask import schema
from testtask.errors import InputError
from testtask.paths import conf_dir
from testtask.train_before_test.runner.settings import (
    Benchmark,
    BenchmarkDefaults,
    CorpusSource,
    with_defaults,
)

__all__ = ["CORPUS_SPLITS", "BenchmarkSpec", "CorpusSource", "SpecError", "lookup", "spec_of"]

# The splits a corpus's lm-eval task reads (lm_eval_tasks/*_2025.yaml): the 8:1:1 parts are saved under them.
CORPUS_SPLITS = {"train": "train", "validation": "validation", "test": "test"}


class SpecError(InputError, ValueError):
    pass


@dataclass(frozen=True)
class BenchmarkSpec:
    """A benchmark as the cell runs it: its typed spec (`settings.Benchmark`) under its name, a corpus's parts
    named by CORPUS_SPLITS."""

    name: str
    task: str
    train: str
    validation: str | None
    test: str
    metric: str
    filter: str
    higher_is_better: bool
    validation_is_test: bool
    source: CorpusSource | None

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
        out["source"] = None if self.source is None else corpus_record(self.source)
        return out

    @classmethod
    def of(cls, name: str, spec: Benchmark) -> BenchmarkSpec:
        fields = {key: getattr(spec, key) for key in Benchmark.__dataclass_fields__}
        return cls(name=name, **{**fields, **(CORPUS_SPLITS if spec.source is not None else {})})


def corpus_record(source: CorpusSource) -> dict[str, Any]:
    """A corpus source as the cell's settings record it (`where`: {} for every document)."""
    return {**schema.to_plain(source), "where": filters(source)}


def filters(source: CorpusSource) -> dict[str, list[Any]]:
    """Column -> kept values ({}: every document)."""
    return {str(k): list(v) for k, v in (source.where or {}).items()}


@functools.cache
def _shipped_defaults() -> dict[str, Any]:
    from omegaconf import OmegaConf

    node = OmegaConf.load(conf_dir() / "train_before_test_run.yaml").benchmark_defaults
    return schema.load(BenchmarkDefaults, node, "benchmark_defaults")


def spec_of(name: str, entry: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> BenchmarkSpec:
    """The spec of benchmark `name` from its entry (the keys it gives) over `defaults` (those of the runner's
    config, conf/train_before_test_run.yaml, unless given); ConfigError naming every bad key."""
    defaults = _shipped_defaults() if defaults is None else defaults
    typed = schema.load(Benchmark, with_defaults(schema.plain(entry), defaults), f"benchmarks.{name}")
    return BenchmarkSpec.of(name, typed)


def lookup(benchmarks: Mapping[str, Benchmark], name: str) -> BenchmarkSpec:
    """The spec of `name` among the typed `benchmarks` (settings.benchmarks)."""
    if name not in benchmarks:
        raise SpecError(f"benchmark {name!r} has no specification; known: {sorted(benchmarks)}")
    return BenchmarkSpec.of(name, benchmarks[name])
