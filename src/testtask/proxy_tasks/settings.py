"""The analysis settings of proxy-tasks, read once from the `proxy_tasks` config section
(conf/proxy_tasks/analysis.yaml, where every default is; `PAPER.settings` builds them for the pipeline: `ctx.settings`).

- `Settings.method` (`Method`): what the method reads (thresholds, Algorithm 1's parameters, modes), passed to the
  selection and the leave-one-model-out fits (also in worker processes) and written into the sidecars;
- `Settings.matrices`: the score matrices, key -> a read-only mapping of its reader's fields;
- `Settings.train_before_test`: how the train-before-test reader reads that paper's release;
- `Settings.ensembles`, `Settings.evaluation`, `Settings.outputs`: ensemble inputs, the bootstrap, and each
  figure's and table's own settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from testtask.proxy_tasks.correlation import METRICS
from testtask.proxy_tasks.normalise import MODES

ROBUSTNESS_MODES = ("none", "stderr_proxy", "ensembles")
READERS = ("train_before_test", "training_on_the_test_task")  # matrices.load_matrix
STAGES = ("base", "adjusted")  # matrices.training_on_the_test_task
PERPLEXITY = ("exclude", "flip")  # matrices.train_before_test


def _strs(node: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in node)


@dataclass(frozen=True)
class Method:
    normalisation: str  # two_step (the paper) | feature | none
    metrics: tuple[str, ...]  # correlation metrics compared by Algorithm 1
    metric: str  # auto (Algorithm 1 chooses) or one of `metrics`
    fallback_metric: str  # used when no metric dominates in Algorithm 1
    eps_c: float  # relevance threshold
    n_models: int  # Algorithm 1: models per subset (n)
    samples: int  # Algorithm 1: subsets (k)
    top_t: int  # Algorithm 1: top tasks of interest (t)
    min_top_frequency: float  # our extension: keep proxies in the sampled top t at least this often (0: off)
    robustness: str  # none | stderr_proxy | ensembles
    eps_r: float  # robustness threshold
    sigmoid_k: float  # k of f(x) = 1 / (1 + exp(-k x))
    max_proxies: int | None  # size of the final proxy set (None: top_t)
    if_none_selected: str  # best_single | error

    def __post_init__(self) -> None:
        if self.normalisation not in MODES:
            raise ValueError(f"proxy_tasks.normalisation must be one of {MODES}, got {self.normalisation!r}")
        unknown = [m for m in self.metrics if m not in METRICS]
        if unknown or not self.metrics:
            raise ValueError(f"proxy_tasks.relevance.metrics must be among {METRICS}, got {self.metrics}")
        if self.metric != "auto" and self.metric not in self.metrics:
            raise ValueError(
                f"proxy_tasks.relevance.metric must be auto or in {self.metrics}: {self.metric!r}"
            )
        if self.robustness not in ROBUSTNESS_MODES:
            raise ValueError(
                f"proxy_tasks.robustness.mode must be one of {ROBUSTNESS_MODES}: {self.robustness!r}"
            )
        if self.if_none_selected not in ("best_single", "error"):
            raise ValueError(f"proxy_tasks.combination.if_none_selected: {self.if_none_selected!r}")

    @property
    def proxies_cap(self) -> int:
        return self.top_t if self.max_proxies is None else int(self.max_proxies)

    def with_(self, **changes: Any) -> Method:
        return replace(self, **changes)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> Method:
        """The method's settings of `cfg` (the proxy_tasks config)."""
        rel, cons, rob, comb = cfg["relevance"], cfg["consistency"], cfg["robustness"], cfg["combination"]
        max_proxies = comb["max_proxies"]
        return cls(
            normalisation=str(cfg["normalisation"]),
            metrics=_strs(rel["metrics"]),
            metric=str(rel["metric"]),
            fallback_metric=str(rel["fallback_metric"]),
            eps_c=float(rel["threshold"]),
            n_models=int(cons["n_models"]),
            samples=int(cons["samples"]),
            top_t=int(cons["top_t"]),
            min_top_frequency=float(cons["min_top_frequency"]),
            robustness=str(rob["mode"]),
            eps_r=float(rob["threshold"]),
            sigmoid_k=float(rob["sigmoid_k"]),
            max_proxies=None if max_proxies is None else int(max_proxies),
            if_none_selected=str(comb["if_none_selected"]),
        )

    def for_matrix(self, matrix: Mapping[str, Any]) -> Method:
        """These settings with the overrides of one `proxy_tasks.matrices` entry (`top_t`, `n_models`,
        `robustness`)."""
        return self.with_(
            n_models=int(matrix.get("n_models", self.n_models)),
            top_t=int(matrix.get("top_t", self.top_t)),
            robustness=str(matrix.get("robustness", self.robustness)),
        )


# A matrix entry's fields and how each is typed; `label` and `reader` are required, the rest depend on the reader.
MATRIX_FIELDS: dict[str, Any] = {
    "label": str,
    "reader": str,
    "regime": str,  # train_before_test: the field of all_results.json (direct_eval | train_before_test)
    "stage": str,  # training_on_the_test_task: base | adjusted
    "benchmarks": _strs,  # training_on_the_test_task: keys of that paper's benchmarks
    "top_t": int,  # overrides of the method's settings for this matrix
    "n_models": int,
    "robustness": str,
}
READER_FIELDS = {"train_before_test": ("regime",), "training_on_the_test_task": ("stage", "benchmarks")}


def matrix_entry(key: str, node: Mapping[str, Any]) -> Mapping[str, Any]:
    """One `proxy_tasks.matrices` entry as a read-only mapping of typed values; ValueError naming a bad field."""
    where = f"proxy_tasks.matrices.{key}"
    unknown = [str(k) for k in node if k not in MATRIX_FIELDS]
    if unknown:
        raise ValueError(f"{where} has unknown field(s) {unknown}; known: {', '.join(MATRIX_FIELDS)}")
    for name in ("label", "reader"):
        if name not in node:
            raise ValueError(f"{where}.{name} is missing")
    reader = str(node["reader"])
    if reader not in READERS:
        raise ValueError(
            f"{where}.reader must be train_before_test or training_on_the_test_task, got {reader!r}"
        )
    missing = [name for name in READER_FIELDS[reader] if name not in node]
    if missing:
        raise ValueError(f"{where} (reader {reader}) lacks {missing}")
    entry = {str(k): MATRIX_FIELDS[str(k)](v) for k, v in node.items()}
    if reader == "training_on_the_test_task" and entry["stage"] not in STAGES:
        raise ValueError(f"{where}.stage must be base or adjusted, got {entry['stage']!r}")
    if "robustness" in entry and entry["robustness"] not in ROBUSTNESS_MODES:
        raise ValueError(f"{where}.robustness must be one of {ROBUSTNESS_MODES}: {entry['robustness']!r}")
    return MappingProxyType(entry)


@dataclass(frozen=True)
class TrainBeforeTestReader:
    """How matrices of reader `train_before_test` read that paper's release."""

    file: str  # below train-before-test's data root (all_results.json)
    perplexity_tasks: tuple[str, ...]  # bits-per-byte corpora (lower is better)
    perplexity: str  # exclude | flip (negated bits per byte; they have no standard errors)

    def __post_init__(self) -> None:
        if self.perplexity not in PERPLEXITY:
            raise ValueError(
                f"proxy_tasks.train_before_test.perplexity must be exclude or flip, got {self.perplexity!r}"
            )

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> TrainBeforeTestReader:
        return cls(
            file=str(node["file"]),
            perplexity_tasks=_strs(node["perplexity_tasks"]),
            perplexity=str(node["perplexity"]),
        )


@dataclass(frozen=True)
class Ensembles:
    """Ensemble score tables (robustness.mode=ensembles, Table 5)."""

    file: str | None  # robustness.ensembles_file: CSV relative to the repository root (None: none given)
    labels: Mapping[str, str]  # robustness.ensemble_labels: role (data, noise) -> ensemble name

    @classmethod
    def from_config(cls, robustness: Mapping[str, Any]) -> Ensembles:
        path = robustness["ensembles_file"]
        labels = {str(k): str(v) for k, v in robustness["ensemble_labels"].items()}
        return cls(file=str(path) if path else None, labels=MappingProxyType(labels))


@dataclass(frozen=True)
class Evaluation:
    bootstrap: int  # resamples of models for the interval of MAE(baseline) - MAE(proxy)
    ci_level: float

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> Evaluation:
        return cls(bootstrap=int(node["bootstrap"]), ci_level=float(node["ci_level"]))


@dataclass(frozen=True)
class Figure1:
    target: str
    matrices: tuple[str, ...]


@dataclass(frozen=True)
class Table3:
    target: str
    matrices: tuple[str, ...]
    configs: tuple[tuple[int, int], ...]  # (n, k)
    top_t: int  # the paper's t; matrices with fewer than 2t candidates use their own top_t
    repeats: int


@dataclass(frozen=True)
class Table5:
    ensembles: str  # the paper's Table 4 ensembles, YAML relative to conf/


@dataclass(frozen=True)
class Panel:
    matrix: str
    target: str


@dataclass(frozen=True)
class TableLoo:
    matrices: tuple[str, ...]
    targets: tuple[str, ...] | None  # None: every task of each matrix (`targets: all`)
    workers: int  # processes running targets side by side (1: in this process)


@dataclass(frozen=True)
class Outputs:
    figure_1: Figure1
    table_3: Table3
    table_5: Table5
    table_robustness: tuple[str, ...]  # its matrices
    figure_loo: tuple[Panel, ...]
    table_loo: TableLoo

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> Outputs:
        f1, t3, loo = cfg["figure_1"], cfg["table_3"], cfg["table_loo"]
        configs = []
        for i, pair in enumerate(t3["configs"]):
            if len(pair) != 2:
                raise ValueError(f"proxy_tasks.table_3.configs[{i}] must be [n, k], got {list(pair)}")
            configs.append((int(pair[0]), int(pair[1])))
        targets = loo["targets"]
        return cls(
            figure_1=Figure1(target=str(f1["target"]), matrices=_strs(f1["matrices"])),
            table_3=Table3(
                target=str(t3["target"]),
                matrices=_strs(t3["matrices"]),
                configs=tuple(configs),
                top_t=int(t3["top_t"]),
                repeats=int(t3["repeats"]),
            ),
            table_5=Table5(ensembles=str(cfg["table_5"]["ensembles"])),
            table_robustness=_strs(cfg["table_robustness"]["matrices"]),
            figure_loo=tuple(
                Panel(matrix=str(p["matrix"]), target=str(p["target"])) for p in cfg["figure_loo"]["panels"]
            ),
            table_loo=TableLoo(
                matrices=_strs(loo["matrices"]),
                targets=None if str(targets) == "all" else _strs(targets),
                workers=int(loo["workers"]),
            ),
        )


@dataclass(frozen=True)
class Settings:
    method: Method
    matrices: Mapping[str, Mapping[str, Any]]  # key -> its entry (read-only, typed), in config order
    train_before_test: TrainBeforeTestReader
    ensembles: Ensembles
    evaluation: Evaluation
    outputs: Outputs

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> Settings:
        """Settings of `cfg` (the proxy_tasks config), read once (the pipeline builds them: `ctx.settings`)."""
        return cls(
            method=Method.from_config(cfg),
            matrices=MappingProxyType({str(k): matrix_entry(str(k), v) for k, v in cfg["matrices"].items()}),
            train_before_test=TrainBeforeTestReader.from_config(cfg["train_before_test"]),
            ensembles=Ensembles.from_config(cfg["robustness"]),
            evaluation=Evaluation.from_config(cfg["evaluation"]),
            outputs=Outputs.from_config(cfg),
        )

    def matrix(self, key: str) -> Mapping[str, Any]:
        """Entry `key` of `proxy_tasks.matrices` (KeyError naming the known ones)."""
        if key not in self.matrices:
            raise KeyError(f"proxy_tasks.matrices has no {key!r}; known: {', '.join(self.matrices)}")
        return self.matrices[key]

    def method_for(self, key: str) -> Method:
        """The method's settings with matrix `key`'s overrides (`top_t`, `n_models`, `robustness`)."""
        return self.method.for_matrix(self.matrix(key))
