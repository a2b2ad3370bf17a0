"""The analysis settings of training-on-the-test-task: the schema of the `training_on_the_test_task` config section.

Values are in conf/training_on_the_test_task/analysis.yaml and the registry it composes (the paper's text, where
it differs from the authors' code, in protocol/paper_text.yaml). The keys of how the release is read are
testtask.lm.release.ReleaseSettings', which this section extends (`ctx.settings.release` is the reader).
"""

from __future__ import annotations

from typing import Annotated, Any

import annotated_types as at

from testtask.lm.models import Kind, Month
from testtask.lm.release import ReleaseSettings
from testtask.lm.scores import Aggregate, Benchmark, BenchmarkSpec
from testtask.schema import (
    AnyText,
    Choice,
    Flag,
    Int,
    Name,
    NonNegativeInt,
    NonNegativeNumber,
    PositiveInt,
    PositiveNumber,
    Probability,
    Problem,
    Text,
    all_of,
    non_empty,
    one_of,
    section,
)


class CovType(Choice):
    """Standard errors of Eq. 1: clustered by model family (§2.2's text), classical OLS (the authors' code) or
    heteroscedasticity-robust."""

    cluster = "cluster"
    nonrobust = "nonrobust"
    HC0 = "HC0"
    HC1 = "HC1"
    HC2 = "HC2"
    HC3 = "HC3"


class CeSearch(Choice):
    """How Eq. 1's c_e is found: the least-squares fit's global minimum (`profile`: a grid refined by a bounded
    optimiser) or the authors' BFGS from c_e = 22 (`local`)."""

    profile = "profile"
    local = "local"


class EmergenceSearch(Choice):
    """c_e of Eq. 1 without θ (Figures 8, 19): the authors' pwlf objective (`pwlf`), or least squares (`profile`,
    `local` as in CeSearch)."""

    pwlf = "pwlf"
    profile = "profile"
    local = "local"


Pair = Annotated[list[Name], at.MinLen(2), at.MaxLen(2), Text("a list of two non-empty strings")]
MonthPair = Annotated[list[Month], at.MinLen(2), at.MaxLen(2), Text("a list of two 'YYYY-MM' months")]
Kinds = Annotated[list[Kind], at.MinLen(1), Text(f"a non-empty list, each item one of {', '.join(Kind)}")]


@section
class Adjustment:
    stage: Name  # the fine-tuning stage that adjusts a score (folder e3/: 3 epochs)
    use_max: Flag  # adjusted = max(score before, score after fine-tuning), per model; else the score after


@section
class Regression:
    cov_type: CovType
    alpha_level: Probability  # θ̂ in bold (and a table row significant) at this level
    c_e_search: CeSearch


@section
class Benchmarks:
    """An output that draws some benchmarks (keys of `Settings.benchmarks`)."""

    benchmarks: list[Name]


@section
class Stages:
    """The stages whose best score makes one arm's cell of Figure 3, before and after adjustment."""

    unadjusted: non_empty(Name)
    adjusted: non_empty(Name)

    def of(self, column: str) -> list[str]:
        """The stages of column `unadjusted` or `adjusted`."""
        return {"unadjusted": self.unadjusted, "adjusted": self.adjusted}[column]


@section
class Figure3:
    """§3.1: older models at or above `min_compute` shuffled by random.Random(seed) and halved."""

    benchmarks: list[Name]
    min_compute: PositiveNumber
    seed: Int
    control: Stages
    treatment: Stages
    labels: Pair  # (control, treatment)

    def arm(self, name: str) -> Stages:
        """The stages of arm `control` or `treatment`."""
        return {"control": self.control, "treatment": self.treatment}[name]


@section
class Figure4:
    unadjusted: list[Name]  # cloze benchmarks
    reformulated: list[Name]  # their MMLU-style reformulations, pairwise


@section
class Figure6:
    benchmarks: list[Name]
    families: dict[str, Name]  # label -> model-name prefix, in config order


@section
class Emergence:
    """Figures 8 and 19: older models at fine-tuning checkpoints."""

    batch_size: PositiveInt  # examples = step x batch size
    min_compute: NonNegativeNumber  # fits restricted to min_compute < C < max_compute (FLOPs)
    max_compute: PositiveNumber
    c_e_search: EmergenceSearch


@section
class Checkpoints:
    """An emergence figure (8, 19): one benchmark, the checkpoints drawn."""

    benchmark: Name
    steps: list[NonNegativeInt]


@section
class OneBenchmark:
    benchmark: Name


@section
class AtStep:
    """Figure 14 and Table 5: older models at fine-tuning checkpoint `step`."""

    benchmarks: list[Name]
    step: PositiveInt


@section
class Figure20:
    benchmarks: list[Name]
    kinds: Kinds  # registry sections drawn (instruct and chat models)


@section
class Table5:
    benchmarks: list[Name]
    step: PositiveInt  # fine-tuned older models at this checkpoint
    xgboost: dict[str, Any]  # extra XGBoost parameters


@section
class FigureMini:
    """The CPU mini-replication's before/after panel."""

    finetune: Name  # fine-tuning data folder (evaluations/<stage>/<finetune>/)
    stage: Name
    benchmarks: dict[str, Name]  # benchmark -> metric (lm-eval key), in config order
    brier: list[Name]  # benchmarks also drawn by Brier score


@section
class PaperGpuHours:
    finetune: NonNegativeNumber  # the paper's own totals (H100 hours, all of its experiments)
    evaluation: NonNegativeNumber


TokensPerExample = Annotated[
    PositiveNumber | dict[str, PositiveNumber] | None,
    Text("a number > 0, a mapping finetune dataset -> a number > 0, or null"),
]


@section
class MeasuredThroughput:
    """Where the plan finds measured throughput (`make gpu-bench`'s JSON files) and which steps it takes."""

    use: Flag  # false: always the assumed train_tflops / eval_tflops
    dir: Name  # the bench's folder (relative to the repository root, or absolute)
    file: Name | None  # one file of `dir` by name (null: its GPU files, the first by name that has the step)
    train_step: Name  # the bench step whose achieved TFLOP/s stands for fine-tuning
    eval_step: Name  # and for lm-eval


@section
class Plan:
    """`action=plan` (runner/plan.py): the jobs of the runner's paper sweeps and their compute estimate."""

    experiments: non_empty(Name)  # the sweeps (conf/experiment/...), by App. B.2's size classes
    models: list[Name] | None  # only these models (null: every model of the sweeps)
    runner_overrides: list[AnyText]  # Hydra overrides of the runner config, applied to every job
    train_tflops: PositiveNumber  # achieved training TFLOP/s per GPU (assumed)
    eval_tflops: PositiveNumber  # achieved lm-eval TFLOP/s per GPU (assumed)
    finetune_examples: dict[str, PositiveNumber]  # training examples per epoch, per finetune dataset
    tokens_per_example: TokensPerExample  # null: recipe.max_length when padded to it
    eval_tokens: dict[str, PositiveNumber]  # tokens lm-eval forwards per benchmark and model
    paper_gpu_hours: PaperGpuHours
    measured: MeasuredThroughput  # measured throughput over the assumed one, where a bench file has it


@section
class MiniData:
    """`action=mini-data` (runner/mini_data.py): the offline data of the CPU mini-replication."""

    assets: Name  # the pip --target folder of the PyPI-shipped assets (relative to the repository root)
    out: Name  # where the data goes (relative to the repository root, or absolute)
    docs_per_task: PositiveInt  # evaluation questions per task
    fewshot_docs: NonNegativeInt  # few-shot pool of ARC-Challenge and HellaSwag
    subjects: non_empty(Name)  # MMLU subjects
    sources: non_empty(Name)  # OLMES training-question sources of mcaux
    max_train_docs: PositiveInt | None  # a seeded sample of this many training questions (null: all of them)
    seed: Int


# The outputs that draw benchmarks: each value must be a key of `benchmarks`.
_BENCHMARK_LISTS = (
    *(f"figure_{n}.benchmarks" for n in (1, 2, 3, 5, 6, 7, 13, 14, 15, 16, 18, 20)),
    "figure_4.unadjusted",
    "figure_4.reformulated",
    "relative_difference.benchmarks",
    *(f"table_{n}.benchmarks" for n in (3, 4, 5)),
)
_ONE_BENCHMARK = tuple(f"figure_{n}.benchmark" for n in (8, 9, 17, 19))


@section
class Settings(ReleaseSettings):
    """The `training_on_the_test_task` section of the analysis config (beside the release's keys, which
    ReleaseSettings declares)."""

    model_kinds: Kinds  # registry sections analysed
    cutoff: Month  # cohort newer = train date >= cutoff
    robustness_cutoffs: MonthPair  # Figures 11 and 12 (Appendix D.1)
    adjustment: Adjustment
    mmlu_aggregate: Aggregate  # the `aggregate` of the MMLU benchmarks (interpolated into `benchmarks`)
    benchmarks: dict[str, Benchmark]  # key -> how it is scored, in config order
    regression: Regression
    emergence: Emergence
    figure_1: Benchmarks
    figure_2: Benchmarks
    figure_3: Figure3
    figure_4: Figure4
    figure_5: Benchmarks
    figure_6: Figure6
    figure_7: Benchmarks
    figure_8: Checkpoints
    figure_9: OneBenchmark
    figure_13: Benchmarks
    figure_14: AtStep
    figure_15: Benchmarks
    figure_16: Benchmarks
    figure_17: OneBenchmark
    figure_18: Benchmarks
    figure_19: Checkpoints
    figure_20: Figure20
    relative_difference: Benchmarks  # Appendix E (every panel's sidecar computes it)
    table_3: Benchmarks
    table_4: Benchmarks
    table_5: Table5
    figure_mini: FigureMini
    plan: Plan  # action=plan
    mini_data: MiniData  # action=mini-data

    def relations(self) -> list[Problem]:
        """The release's relations, and every benchmark an output draws is a key of `benchmarks`."""
        known = list(self.benchmarks)
        problems = [all_of(path, self._at(path), known, "keys of {benchmarks}") for path in _BENCHMARK_LISTS]
        problems += [one_of(path, self._at(path), known, "a key of {benchmarks}") for path in _ONE_BENCHMARK]
        return [*super().relations(), *(p for p in problems if p is not None)]

    def _at(self, path: str) -> Any:
        node: Any = self
        for key in path.split("."):
            node = getattr(node, key)
        return node

    def benchmark(self, key: str) -> BenchmarkSpec:
        """How benchmark `key` is scored (KeyError naming the configured ones)."""
        if key not in self.benchmarks:
            raise KeyError(f"benchmark {key!r} is not configured; known: {', '.join(self.benchmarks)}")
        return BenchmarkSpec.of(key, self.benchmarks[key])
