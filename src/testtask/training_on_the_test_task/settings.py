"""The analysis settings of `training-on-the-test-task`, read once from its config section
(conf/training_on_the_test_task/analysis.yaml, `training_on_the_test_task` in the composed config).

The YAML holds every default; `Settings.from_config` reads each value once, typed, and the figures, tables and
statistics read `ctx.settings` (the pipeline builds it through `PAPER.settings`). Nested sections are nested
frozen dataclasses; lists are tuples and mappings are read-only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, get_args

from omegaconf import DictConfig, ListConfig, OmegaConf

from testtask.lm.release import Release
from testtask.lm.scores import BenchmarkSpec, benchmark_specs
from testtask.training_on_the_test_task.regression import CeSearch, CovType, EmergenceSearch


def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig | ListConfig) else node


def _strs(node: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in node)


def _ints(node: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in node)


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class Adjustment:
    stage: str  # the fine-tuning stage that adjusts a score (folder e3/: 3 epochs)
    use_max: bool  # adjusted = max(score before, score after fine-tuning), per model; else the score after

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> Adjustment:
        return cls(stage=str(node["stage"]), use_max=bool(node["use_max"]))


@dataclass(frozen=True)
class Regression:
    cov_type: str  # standard errors of Eq. 1: cluster (by model family) | nonrobust | HC0-HC3
    alpha_level: float  # θ̂ in bold (and a table row significant) at this level
    c_e_search: str  # profile (grid + bounded refinement) | local (the authors' BFGS from c_e = 22)

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> Regression:
        cov_type, c_e_search = str(node["cov_type"]), str(node["c_e_search"])
        for name, value, known in (
            ("cov_type", cov_type, get_args(CovType)),
            ("c_e_search", c_e_search, get_args(CeSearch)),
        ):
            if value not in known:
                raise ValueError(
                    f"training_on_the_test_task.regression.{name} must be one of {known}: {value!r}"
                )
        return cls(cov_type=cov_type, alpha_level=float(node["alpha_level"]), c_e_search=c_e_search)


@dataclass(frozen=True)
class Benchmarks:
    """An output that draws some benchmarks (keys of `Settings.benchmarks`)."""

    benchmarks: tuple[str, ...]

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> Benchmarks:
        return cls(benchmarks=_strs(node["benchmarks"]))


@dataclass(frozen=True)
class Stages:
    """The stages whose best score makes one arm's cell of Figure 3, before and after adjustment."""

    unadjusted: tuple[str, ...]
    adjusted: tuple[str, ...]

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> Stages:
        return cls(unadjusted=_strs(node["unadjusted"]), adjusted=_strs(node["adjusted"]))

    def of(self, column: str) -> tuple[str, ...]:
        """The stages of column `unadjusted` or `adjusted`."""
        return {"unadjusted": self.unadjusted, "adjusted": self.adjusted}[column]


@dataclass(frozen=True)
class Figure3:
    """§3.1: older models at or above `min_compute` shuffled by random.Random(seed) and halved."""

    benchmarks: tuple[str, ...]
    min_compute: float
    seed: int
    control: Stages
    treatment: Stages
    labels: tuple[str, ...]  # (control, treatment)

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> Figure3:
        labels = _strs(node["labels"])
        if len(labels) != 2:
            raise ValueError(f"training_on_the_test_task.figure_3.labels needs 2 labels, got {list(labels)}")
        return cls(
            benchmarks=_strs(node["benchmarks"]),
            min_compute=float(node["min_compute"]),
            seed=int(node["seed"]),
            control=Stages.from_config(node["control"]),
            treatment=Stages.from_config(node["treatment"]),
            labels=labels,
        )

    def arm(self, name: str) -> Stages:
        """The stages of arm `control` or `treatment`."""
        return {"control": self.control, "treatment": self.treatment}[name]


@dataclass(frozen=True)
class Figure4:
    unadjusted: tuple[str, ...]  # cloze benchmarks
    reformulated: tuple[str, ...]  # their MMLU-style reformulations, pairwise

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> Figure4:
        return cls(unadjusted=_strs(node["unadjusted"]), reformulated=_strs(node["reformulated"]))


@dataclass(frozen=True)
class Figure6:
    benchmarks: tuple[str, ...]
    families: Mapping[str, str]  # label -> model-name prefix, in config order

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> Figure6:
        families = {str(k): str(v) for k, v in dict(node["families"]).items()}
        return cls(benchmarks=_strs(node["benchmarks"]), families=_frozen(families))


@dataclass(frozen=True)
class Emergence:
    """Figures 8 and 19: older models at fine-tuning checkpoints."""

    batch_size: int  # examples = step x batch size
    min_compute: float  # fits restricted to min_compute < C < max_compute (FLOPs)
    max_compute: float
    c_e_search: str  # pwlf (the authors' pwlf objective) | profile | local (least squares of Eq. 1 without θ)

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> Emergence:
        c_e_search = str(node["c_e_search"])
        if c_e_search not in get_args(EmergenceSearch):
            raise ValueError(
                f"training_on_the_test_task.emergence.c_e_search must be one of {get_args(EmergenceSearch)}: "
                f"{c_e_search!r}"
            )
        return cls(
            batch_size=int(node["batch_size"]),
            min_compute=float(node["min_compute"]),
            max_compute=float(node["max_compute"]),
            c_e_search=c_e_search,
        )


@dataclass(frozen=True)
class Checkpoints:
    """An emergence figure (8, 19): one benchmark, the checkpoints drawn."""

    benchmark: str
    steps: tuple[int, ...]

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> Checkpoints:
        return cls(benchmark=str(node["benchmark"]), steps=_ints(node["steps"]))


@dataclass(frozen=True)
class OneBenchmark:
    benchmark: str

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> OneBenchmark:
        return cls(benchmark=str(node["benchmark"]))


@dataclass(frozen=True)
class AtStep:
    """Figure 14 and Table 5: older models at fine-tuning checkpoint `step`."""

    benchmarks: tuple[str, ...]
    step: int

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> AtStep:
        return cls(benchmarks=_strs(node["benchmarks"]), step=int(node["step"]))


@dataclass(frozen=True)
class Figure20:
    benchmarks: tuple[str, ...]
    kinds: tuple[str, ...]  # registry sections drawn (instruct and chat models)

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> Figure20:
        return cls(benchmarks=_strs(node["benchmarks"]), kinds=_strs(node["kinds"]))


@dataclass(frozen=True)
class Table5:
    benchmarks: tuple[str, ...]
    step: int  # fine-tuned older models at this checkpoint
    xgboost: Mapping[str, Any]  # extra XGBoost parameters

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> Table5:
        params = _plain(node["xgboost"]) or {}
        return cls(benchmarks=_strs(node["benchmarks"]), step=int(node["step"]), xgboost=_frozen(params))


@dataclass(frozen=True)
class FigureMini:
    """The CPU mini-replication's before/after panel."""

    finetune: str  # fine-tuning data folder (evaluations/<stage>/<finetune>/)
    stage: str
    benchmarks: Mapping[str, str]  # benchmark -> metric (lm-eval key), in config order
    brier: tuple[str, ...]  # benchmarks also drawn by Brier score

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> FigureMini:
        benchmarks = {str(k): str(v) for k, v in dict(node["benchmarks"]).items()}
        return cls(
            finetune=str(node["finetune"]),
            stage=str(node["stage"]),
            benchmarks=_frozen(benchmarks),
            brier=_strs(node["brier"]),
        )


@dataclass(frozen=True)
class PaperGpuHours:
    finetune: float  # the paper's own totals (H100 hours, all of its experiments)
    evaluation: float


@dataclass(frozen=True)
class Plan:
    """`action=plan` (plan.py): the jobs of the runner's paper sweeps and their compute estimate."""

    experiments: tuple[str, ...]  # the sweeps (conf/experiment/...), by App. B.2's size classes
    models: tuple[str, ...] | None  # only these models (None: every model of the sweeps)
    runner_overrides: tuple[str, ...]  # Hydra overrides of the runner config, applied to every job
    train_tflops: float  # achieved training TFLOP/s per GPU (assumed)
    eval_tflops: float  # achieved lm-eval TFLOP/s per GPU (assumed)
    finetune_examples: Mapping[str, float]  # training examples per epoch, per finetune dataset
    tokens_per_example: float | Mapping[str, float] | None  # None: recipe.max_length when padded to it
    eval_tokens: Mapping[str, float]  # tokens lm-eval forwards per benchmark and model
    paper_gpu_hours: PaperGpuHours

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> Plan:
        models, per_example = node["models"], node["tokens_per_example"]
        if per_example is not None:
            per_example = (
                _frozen({str(k): float(v) for k, v in per_example.items()})
                if isinstance(per_example, Mapping)
                else float(per_example)
            )
        hours = node["paper_gpu_hours"]
        return cls(
            experiments=_strs(node["experiments"]),
            models=_strs(models) if models else None,
            runner_overrides=_strs(node["runner_overrides"] or []),
            train_tflops=float(node["train_tflops"]),
            eval_tflops=float(node["eval_tflops"]),
            finetune_examples=_frozen({str(k): float(v) for k, v in node["finetune_examples"].items()}),
            tokens_per_example=per_example,
            eval_tokens=_frozen({str(k): float(v) for k, v in (node["eval_tokens"] or {}).items()}),
            paper_gpu_hours=PaperGpuHours(
                finetune=float(hours["finetune"]), evaluation=float(hours["evaluation"])
            ),
        )


@dataclass(frozen=True)
class MiniData:
    """`action=mini-data` (mini_data.py): the offline data of the CPU mini-replication."""

    assets: str  # the pip --target folder of the PyPI-shipped assets (relative to the repository root)
    out: str  # where the data goes (relative to the repository root, or absolute)
    docs_per_task: int  # evaluation questions per task
    fewshot_docs: int  # few-shot pool of ARC-Challenge and HellaSwag
    subjects: tuple[str, ...]  # MMLU subjects
    sources: tuple[str, ...]  # OLMES training-question sources of mcaux
    max_train_docs: int | None  # a seeded sample of this many training questions (None: all of them)
    seed: int

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> MiniData:
        max_docs = node["max_train_docs"]
        return cls(
            assets=str(node["assets"]),
            out=str(node["out"]),
            docs_per_task=int(node["docs_per_task"]),
            fewshot_docs=int(node["fewshot_docs"]),
            subjects=_strs(node["subjects"]),
            sources=_strs(node["sources"]),
            max_train_docs=None if max_docs is None else int(max_docs),
            seed=int(node["seed"]),
        )


@dataclass(frozen=True)
class Settings:
    release: Release  # evaluations_dir, the model registry (models, model_values), absent_results
    model_kinds: tuple[str, ...]  # registry sections analysed
    cutoff: str  # "YYYY-MM": cohort newer = train date >= cutoff
    robustness_cutoffs: tuple[str, ...]  # Figures 11 and 12 (Appendix D.1)
    adjustment: Adjustment
    benchmarks: Mapping[str, BenchmarkSpec]  # key -> how it is scored, in config order
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
    table_3: Benchmarks
    table_4: Benchmarks
    table_5: Table5
    figure_mini: FigureMini
    plan: Plan  # action=plan
    mini_data: MiniData  # action=mini-data

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> Settings:
        """Settings of `section` (the `training_on_the_test_task` config), each value read once."""
        cutoffs = _strs(section["robustness_cutoffs"])
        if len(cutoffs) != 2:
            raise ValueError(
                "training_on_the_test_task.robustness_cutoffs needs 2 cutoffs (Figures 11, 12), "
                f"got {list(cutoffs)}"
            )
        return cls(
            release=Release.from_config(section),
            model_kinds=_strs(section["model_kinds"]),
            cutoff=str(section["cutoff"]),
            robustness_cutoffs=cutoffs,
            adjustment=Adjustment.from_config(section["adjustment"]),
            benchmarks=_frozen(benchmark_specs(section["benchmarks"])),
            regression=Regression.from_config(section["regression"]),
            emergence=Emergence.from_config(section["emergence"]),
            figure_1=Benchmarks.from_config(section["figure_1"]),
            figure_2=Benchmarks.from_config(section["figure_2"]),
            figure_3=Figure3.from_config(section["figure_3"]),
            figure_4=Figure4.from_config(section["figure_4"]),
            figure_5=Benchmarks.from_config(section["figure_5"]),
            figure_6=Figure6.from_config(section["figure_6"]),
            figure_7=Benchmarks.from_config(section["figure_7"]),
            figure_8=Checkpoints.from_config(section["figure_8"]),
            figure_9=OneBenchmark.from_config(section["figure_9"]),
            figure_13=Benchmarks.from_config(section["figure_13"]),
            figure_14=AtStep.from_config(section["figure_14"]),
            figure_15=Benchmarks.from_config(section["figure_15"]),
            figure_16=Benchmarks.from_config(section["figure_16"]),
            figure_17=OneBenchmark.from_config(section["figure_17"]),
            figure_18=Benchmarks.from_config(section["figure_18"]),
            figure_19=Checkpoints.from_config(section["figure_19"]),
            figure_20=Figure20.from_config(section["figure_20"]),
            table_3=Benchmarks.from_config(section["table_3"]),
            table_4=Benchmarks.from_config(section["table_4"]),
            table_5=Table5.from_config(section["table_5"]),
            figure_mini=FigureMini.from_config(section["figure_mini"]),
            plan=Plan.from_config(section["plan"]),
            mini_data=MiniData.from_config(section["mini_data"]),
        )

    def benchmark(self, key: str) -> BenchmarkSpec:
        """How benchmark `key` is scored (KeyError naming the configured ones)."""
        if key not in self.benchmarks:
            raise KeyError(f"benchmark {key!r} is not configured; known: {', '.join(self.benchmarks)}")
        return self.benchmarks[key]
