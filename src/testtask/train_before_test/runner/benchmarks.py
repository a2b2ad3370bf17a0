"""Benchmark specifications (conf/train_before_test/benchmarks/*.yaml): which lm-eval task, splits and metric.

Each entry names the lm-eval `task`, the dataset splits that hold the `train`, `validation` and `test`
documents (`validation: null` carves validation out of train), and the reported `metric` with its lm-eval
`filter` (the results key is `<metric>,<filter>`), higher or lower is better.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_REQUIRED = ("task", "train", "test", "metric")
_OPTIONAL = {"validation": None, "filter": "none", "higher_is_better": True}


class SpecError(ValueError):
    pass


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

    @property
    def metric_key(self) -> str:
        return f"{self.metric},{self.filter}"

    @property
    def stderr_key(self) -> str:
        return f"{self.metric}_stderr,{self.filter}"

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_config(cls, name: str, entry: Mapping[str, Any]) -> BenchmarkSpec:
        where = f"benchmark {name!r} (conf/train_before_test/benchmarks)"
        if not isinstance(entry, Mapping):
            raise SpecError(f"{where}: expected a mapping, got {type(entry).__name__}")
        unknown = set(entry) - set(_REQUIRED) - set(_OPTIONAL)
        if unknown:
            raise SpecError(f"{where}: unknown field(s) {sorted(unknown)}")
        missing = [k for k in _REQUIRED if not entry.get(k)]
        if missing:
            raise SpecError(f"{where}: missing field(s) {missing}")
        values = {**_OPTIONAL, **dict(entry)}
        if values["validation"] is not None and values["validation"] == values["test"]:
            raise SpecError(
                f"{where}: validation and test name the same split {values['test']!r}; "
                "set validation: null to carve validation out of train"
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
        )


def lookup(benchmarks: Mapping[str, Any], name: str) -> BenchmarkSpec:
    if name not in benchmarks:
        raise SpecError(f"benchmark {name!r} has no specification; known: {sorted(benchmarks)}")
    return BenchmarkSpec.from_config(name, benchmarks[name])
