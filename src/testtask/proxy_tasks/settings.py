"""The analysis settings of proxy-tasks: the schema of the `proxy_tasks` config section.

Each key is declared here once, with its type and allowed values; its value is in conf/proxy_tasks/analysis.yaml,
and a student's own CSV matrices join `matrices` from the user folder's matrices.yaml (`user_matrices.py`). The
pipeline reads the section once (`testtask.schema.load`); `Settings.method` gathers what the method reads (a
`Method`: thresholds, Algorithm 1's parameters, modes), passed to the selection and the leave-one-model-out fits
(also in worker processes) and written into the sidecars; `method_for(key)` adds the overrides of matrix `key`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Annotated, Any

from testtask.schema import (
    Choice,
    Name,
    Number,
    PositiveInt,
    Probability,
    Problem,
    Text,
    UnitInterval,
    all_of,
    int_at_least,
    non_empty,
    one_of,
    require,
    section,
)


class Normalisation(Choice):
    """Section 3.1: per task over models, then per model over the candidate tasks (the paper), per task only, or
    none (normalise.Normaliser)."""

    two_step = "two_step"
    feature = "feature"
    none = "none"


class Metric(Choice):
    """A correlation metric Algorithm 1 compares (correlation.correlate)."""

    pearson = "pearson"
    spearman = "spearman"
    kendall = "kendall"


class Auto(Choice):
    """`auto`: Algorithm 1 chooses the metric per fit."""

    auto = "auto"


MetricOrAuto = Annotated[Auto | Metric, Text("auto or one of pearson, spearman, kendall")]


class RobustnessMode(Choice):
    """Section 3.2's R: no robustness step, the published standard errors' stand-in, or ensemble score tables."""

    none = "none"
    stderr_proxy = "stderr_proxy"
    ensembles = "ensembles"


class IfNone(Choice):
    """When no candidate passes the thresholds: the most relevant one alone, or an error."""

    best_single = "best_single"
    error = "error"


class Reader(Choice):
    """What a matrix reads (matrices.load_matrix): another paper's release, or a CSV score matrix of one's own."""

    train_before_test = "train_before_test"
    training_on_the_test_task = "training_on_the_test_task"
    csv = "csv"


class Stage(Choice):
    """A training-on-the-test-task matrix: base models, or the max of before and after fine-tuning."""

    base = "base"
    adjusted = "adjusted"


class Perplexity(Choice):
    """train-before-test's bits-per-byte corpora: left out, or negated (lower is better)."""

    exclude = "exclude"
    flip = "flip"


@section
class Matrix:
    """One entry of `matrices`: a score matrix, its reader's keys and its overrides of the method's settings."""

    label: Name
    reader: Reader
    # reader train_before_test: the field of all_results.json (direct_eval | train_before_test)
    regime: Name | None
    stage: Stage | None  # reader training_on_the_test_task
    benchmarks: non_empty(Name) | None  # reader training_on_the_test_task: keys of that paper's benchmarks
    file: Name | None  # reader csv: the score CSV (relative to the repository root, or absolute)
    # reader csv: its standard errors, a CSV of the same shape (null: none), as `file`
    stderr_file: Name | None
    top_t: PositiveInt | None  # null: consistency.top_t
    n_models: int_at_least(3) | None  # null: consistency.n_models
    robustness: RobustnessMode | None  # null: robustness.mode

    def __post_init__(self) -> None:
        needed, optional = READER_KEYS[self.reader]
        others = {key for keys in READER_KEYS.values() for key in (*keys[0], *keys[1])} - {*needed, *optional}
        require(
            *(
                Problem(key, None, f"a value with reader {self.reader}")
                for key in needed
                if getattr(self, key) is None
            ),
            *(
                Problem(key, getattr(self, key), f"null with reader {self.reader}")
                for key in (f.name for f in fields(self))
                if key in others and getattr(self, key) is not None
            ),
        )

    def tasks(self) -> list[str] | None:
        """The matrix's tasks where the config lists them (reader training_on_the_test_task), else None."""
        return [str(b) for b in self.benchmarks] if self.reader == Reader.training_on_the_test_task else None


# reader -> (the keys it needs, the keys it may leave null); any other reader's key must be null
READER_KEYS: dict[Reader, tuple[tuple[str, ...], tuple[str, ...]]] = {
    Reader.train_before_test: (("regime",), ()),
    Reader.training_on_the_test_task: (("stage", "benchmarks"), ()),
    Reader.csv: (("file",), ("stderr_file",)),
}


@section
class TrainBeforeTestReader:
    """How matrices of reader `train_before_test` read that paper's release."""

    file: Name  # below train-before-test's data root (all_results.json)
    perplexity_tasks: list[Name]  # bits-per-byte corpora (lower is better)
    perplexity: Perplexity


@section
class Relevance:
    metrics: non_empty(Metric)  # correlation metrics compared by Algorithm 1
    metric: MetricOrAuto  # auto (Algorithm 1 chooses) or one of `metrics`
    fallback_metric: Metric  # used when no metric dominates in Algorithm 1
    threshold: Number  # eps_C

    def __post_init__(self) -> None:
        require(
            None
            if self.metric == Auto.auto
            else one_of("metric", self.metric, self.metrics, "auto or one of {metrics}"),
            one_of("fallback_metric", self.fallback_metric, self.metrics, "one of {metrics}"),
        )


@section
class Consistency:
    """Algorithm 1."""

    n_models: int_at_least(3)  # n: models per subset (Algorithm 1: 2 < n)
    samples: int_at_least(2)  # k: subsets
    top_t: PositiveInt  # t: top tasks of interest
    # our extension: keep proxies in the sampled top t at least this often (0: off)
    min_top_frequency: UnitInterval


@section
class Robustness:
    mode: RobustnessMode
    threshold: Number  # eps_R
    sigmoid_k: Number  # k of f(x) = 1 / (1 + exp(-k x))
    ensembles_file: Name | None  # CSV for mode=ensembles (relative to the repository root)
    ensemble_labels: dict[str, Name]  # role (data, noise) -> ensemble name

    def __post_init__(self) -> None:
        missing = self.mode == RobustnessMode.ensembles and self.ensembles_file is None
        require(Problem("ensembles_file", None, "a file with {mode}=ensembles") if missing else None)


@section
class Combination:
    max_proxies: PositiveInt | None  # size of the final proxy set (null: the matrix's top_t)
    if_none_selected: IfNone


@section
class Evaluation:
    bootstrap: PositiveInt  # resamples of models for the interval of MAE(baseline) - MAE(proxy)
    ci_level: Probability


@section
class Figure1:
    target: Name
    matrices: list[Name]


ConsistencyConfig = Annotated[
    tuple[int_at_least(3), int_at_least(2)], Text("a pair [n, k] of integers, n >= 3 and k >= 2")
]


@section
class Table3:
    target: Name
    matrices: list[Name]
    configs: list[ConsistencyConfig]  # (n, k)
    top_t: PositiveInt  # the paper's t; matrices with fewer than 2t candidates use their own top_t
    repeats: PositiveInt


@section
class Table5:
    ensembles: Name  # the paper's Table 4 ensembles, YAML relative to conf/


@section
class TableRobustness:
    matrices: list[Name]


@section
class Panel:
    matrix: Name
    target: Name


@section
class FigureLoo:
    panels: list[Panel]


class AllTargets(Choice):
    """`all`: every task of each matrix is the target in turn."""

    all = "all"


@section
class TableLoo:
    matrices: list[Name]
    targets: Annotated[AllTargets | list[Name], Text("all or a list of task names")]
    workers: PositiveInt  # processes running targets side by side (1: in this process)


@dataclass(frozen=True)
class Method:
    """What the method reads, gathered from the settings (`Settings.method`); written into the sidecars."""

    normalisation: Normalisation
    metrics: tuple[Metric, ...]  # correlation metrics compared by Algorithm 1
    metric: Auto | Metric  # auto (Algorithm 1 chooses) or one of `metrics`
    fallback_metric: Metric  # used when no metric dominates in Algorithm 1
    eps_c: float  # relevance threshold
    n_models: int  # Algorithm 1: models per subset (n)
    samples: int  # Algorithm 1: subsets (k)
    top_t: int  # Algorithm 1: top tasks of interest (t)
    min_top_frequency: float  # our extension: keep proxies in the sampled top t at least this often (0: off)
    robustness: RobustnessMode
    eps_r: float  # robustness threshold
    sigmoid_k: float  # k of f(x) = 1 / (1 + exp(-k x))
    max_proxies: int | None  # size of the final proxy set (None: top_t)
    if_none_selected: IfNone

    @property
    def uses_algorithm_1(self) -> bool:
        """Whether a selection draws Algorithm 1's subsets (to choose the metric, or for the top-t filter)."""
        return self.metric == Auto.auto or self.min_top_frequency > 0

    @property
    def proxies_cap(self) -> int:
        return self.top_t if self.max_proxies is None else int(self.max_proxies)

    def with_(self, **changes: Any) -> Method:
        return replace(self, **changes)

    def for_matrix(self, matrix: Matrix) -> Method:
        """These settings with the overrides of one `matrices` entry (`top_t`, `n_models`, `robustness`)."""
        overrides = {"top_t": matrix.top_t, "n_models": matrix.n_models, "robustness": matrix.robustness}
        return self.with_(**{key: value for key, value in overrides.items() if value is not None})


MATRIX_LISTS = ("figure_1", "table_3", "table_robustness", "table_loo")  # the outputs that name matrices


@section
class Settings:
    """The `proxy_tasks` section of the analysis config."""

    matrices: dict[str, Matrix]  # key -> its entry, in config order
    train_before_test: TrainBeforeTestReader
    normalisation: Normalisation
    relevance: Relevance
    consistency: Consistency
    robustness: Robustness
    combination: Combination
    evaluation: Evaluation
    figure_1: Figure1
    table_3: Table3
    table_5: Table5
    table_robustness: TableRobustness
    figure_loo: FigureLoo
    table_loo: TableLoo

    def __post_init__(self) -> None:
        known = list(self.matrices)
        require(
            *(
                all_of(f"{name}.matrices", getattr(self, name).matrices, known, "keys of {matrices}")
                for name in MATRIX_LISTS
            ),
            *(
                one_of(f"figure_loo.panels[{i}].matrix", panel.matrix, known, "a key of {matrices}")
                for i, panel in enumerate(self.figure_loo.panels)
            ),
        )
        # a target the config can see is not a task of its matrix (the other readers' tasks are in the data:
        # inputs.check_target, once the matrix is read)
        targets = [
            (f"figure_loo.panels[{i}].target", p.target, [p.matrix])
            for i, p in enumerate(self.figure_loo.panels)
        ]
        targets += [
            (f"{name}.target", getattr(self, name).target, getattr(self, name).matrices)
            for name in ("figure_1", "table_3")
        ]
        require(
            *(
                one_of(where, target, tasks, f"one of {{matrices}}.{key}.benchmarks")
                for where, target, keys in targets
                for key in keys
                if (tasks := self.matrices[key].tasks()) is not None
            )
        )

    @property
    def method(self) -> Method:
        """The method's settings (without a matrix's overrides)."""
        rel, cons, rob, comb = self.relevance, self.consistency, self.robustness, self.combination
        return Method(
            normalisation=self.normalisation,
            metrics=tuple(rel.metrics),
            metric=rel.metric,
            fallback_metric=rel.fallback_metric,
            eps_c=rel.threshold,
            n_models=cons.n_models,
            samples=cons.samples,
            top_t=cons.top_t,
            min_top_frequency=cons.min_top_frequency,
            robustness=rob.mode,
            eps_r=rob.threshold,
            sigmoid_k=rob.sigmoid_k,
            max_proxies=comb.max_proxies,
            if_none_selected=comb.if_none_selected,
        )

    def matrix(self, key: str) -> Matrix:
        """Entry `key` of `matrices` (KeyError naming the known ones)."""
        if key not in self.matrices:
            raise KeyError(f"proxy_tasks.matrices has no {key!r}; known: {', '.join(self.matrices)}")
        return self.matrices[key]

    def method_for(self, key: str) -> Method:
        """The method's settings with matrix `key`'s overrides (`top_t`, `n_models`, `robustness`)."""
        return self.method.for_matrix(self.matrix(key))
