"""The train-before-test runner's settings: the schema of conf/train_before_test_run.yaml as composed (its groups
`train_before_test/{benchmarks,models,recipe}`, the experiment presets and the protocol preset).

Each key is declared here once, with its type and allowed values; its value is in YAML. The recipe and LoRA keys are
the shared fine-tuning's (`testtask.lm.settings`). A benchmark's spec (`benchmarks.<name>`) gives the keys that
differ from `benchmark_defaults`. `runners.py` loads the composed config once (`testtask.schema.load`), before Hydra
starts and again first thing in each job, and the runner reads the typed `Settings`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pydantic import model_validator

from testtask.lm.settings import EvalBatchSize, Kwargs, Lora, Recipe
from testtask.schema import (
    AnyText,
    Choice,
    Flag,
    Name,
    NonNegativeInt,
    PositiveInt,
    PositiveNumber,
    Probability,
    Problem,
    non_empty,
    one_of,
    partial,
    require,
    section,
    violations,
)
from testtask.settings import Protocol


class ChatTemplate(Choice):
    """Which prompt variants a model is tried with (App. A.2)."""

    auto = "auto"  # the chat template too for instruction-tuned models that have one
    plain = "plain"
    chat = "chat"
    both = "both"


class TrainingText(Choice):
    """How a training document becomes text (runner/texts.py)."""

    authors = "authors"  # doc_to_text + separator + gold answer, no description (the authors' data_utils.py)
    lm_eval = "lm_eval"  # lm-eval's own zero-shot request


class SplitRule(Choice):
    """How carves and caps are drawn (runner/splits.py)."""

    authors = "authors"  # the authors' np.random.seed permutations and int() sizes
    streams = "streams"  # our seeded streams, one per purpose


class Keep(Choice):
    """The LoRA checkpoints kept once a cell is finished."""

    all = "all"
    best = "best"
    none = "none"


@section
class Caps:
    """Documents of each set of a benchmark (a seeded subset when it has more); null: no cap."""

    train: PositiveInt | None
    validation: PositiveInt | None
    test: PositiveInt | None


PARTS = tuple(f.name for f in dataclasses.fields(Caps))  # a benchmark's three document sets, in this order


@section
class TextFormat:
    """How a training document becomes text (runner/texts.py)."""

    format: TrainingText
    separator: AnyText  # between prompt and answer
    join_answers: AnyText | None  # several reference answers joined by this; null: the first only
    system_prompt: AnyText | None  # the chat variant's system turn
    no_system_for: list[Name]  # model ids (substring, any case) whose chat has no system turn

    def system_for(self, model: str) -> str | None:
        """The system turn for `model` (main.py:100 tests `"gemma" in base_model.lower()`)."""
        if any(pattern.lower() in str(model).lower() for pattern in self.no_system_for):
            return None
        return self.system_prompt or None


@section
class CorpusSource:
    """Where a perplexity corpus's documents come from: `load_dataset(path, name, split=split)[text]`."""

    path: Name | None  # a Hugging Face dataset id; null: none named (local_data must give a copy)
    name: Name | None  # its configuration
    split: Name
    text: Name  # the column scored
    where: dict[str, list[Any]] | None  # column -> kept values; null: every document


@section
class Benchmark:
    """A benchmark (an lm-eval task with its splits) or a perplexity corpus (a `source`, cut by corpus_fractions)."""

    task: Name  # the lm-eval task
    train: Name | None  # dataset splits; a corpus has none (its parts are saved as train / validation / test)
    validation: Name | None  # null: carved out of train
    test: Name | None
    metric: Name  # the reported lm-eval metric
    filter: Name  # its lm-eval filter: the results key is `<metric>,<filter>`
    higher_is_better: Flag
    validation_is_test: Flag  # validation documents from the test split (the authors' MedMCQA)
    source: CorpusSource | None  # a perplexity corpus's documents

    def __post_init__(self) -> None:
        require(self._corpus() if self.source is not None else self._benchmark())

    def _corpus(self) -> list[Problem]:
        problems = [
            Problem(part, getattr(self, part), "null: a corpus is cut into its parts by corpus_fractions")
            for part in PARTS
            if getattr(self, part) is not None
        ]
        if self.validation_is_test:
            problems.append(Problem("validation_is_test", True, "false: a corpus is split 8:1:1"))
        return problems

    def _benchmark(self) -> list[Problem]:
        problems = [
            Problem(part, None, "a split of the task's dataset (or a `source`: a corpus)")
            for part in ("train", "test")
            if getattr(self, part) is None
        ]
        if self.validation_is_test and self.validation is not None:
            problems.append(
                Problem(
                    "validation", self.validation, "null: validation_is_test takes it from the test split"
                )
            )
        if not self.validation_is_test and self.validation is not None and self.validation == self.test:
            problems.append(
                Problem(
                    "validation",
                    self.validation,
                    "a split other than {test}: null carves validation out of train (or validation_is_test: "
                    "true selects on test documents, as the authors' code does for MedMCQA)",
                )
            )
        if self.train is not None and self.train in (self.validation, self.test):
            problems.append(Problem("train", self.train, "a split other than {validation} and {test}"))
        return problems


@section
class ModelRow:
    """A model of the paper's table: its Hub id and whether it is instruction-tuned."""

    id: Name
    instruct: Flag


def with_defaults(entry: Any, defaults: Any) -> Any:
    """A benchmark entry as its spec reads it: `benchmark_defaults` under the entry's own keys."""
    if not isinstance(entry, Mapping):
        return entry
    return {**(defaults if isinstance(defaults, Mapping) else {}), **entry}


# Every benchmark gives its task and metric; `benchmark_defaults` holds the value of each other key an entry leaves out
_OWN = ("task", "metric")
BenchmarkDefaults = partial(
    Benchmark, required=[f for f in Benchmark.__dataclass_fields__ if f not in _OWN], exclude=_OWN
)

# Recipe keys the runner sets for each fine-tuning run (runner/training.py): null in the recipe, not in its records
PER_RUN = ("epochs", "max_steps", "save_steps", "save_every", "save_total_limit")


@section
class Settings:
    """The composed config of one train-before-test job (Hydra's own `hydra` node aside)."""

    run: Name  # results/train-before-test/<run>/
    model: Name  # Hugging Face id: what all_results.json is keyed by
    model_path: Name | None  # a local folder to load instead
    instruct: Flag | None  # null: the models table's flag
    chat_template: ChatTemplate
    benchmark: Name  # a key of `benchmarks`
    texts: TextFormat
    chat_recipe: partial(Recipe)  # the recipe keys that differ for the chat variant
    learning_rates: non_empty(PositiveNumber)
    epochs: PositiveInt
    fallback_to_base: Flag  # no improvement on validation: the base model's result is reported
    caps: Caps
    validation_fraction: Probability  # carved out of train when a benchmark has no validation split
    split_rule: SplitRule
    corpus_fractions: non_empty(Probability)  # train, validation, test parts of a perplexity corpus
    lora: Lora
    num_fewshot: NonNegativeInt
    bootstrap_iters: NonNegativeInt  # lm-eval's standard errors
    seed: NonNegativeInt  # which documents
    training_seed: NonNegativeInt  # the Trainer's seed
    device: Name  # auto | cpu | cuda[:k]
    model_args: Kwargs  # lm-eval's hf model arguments
    eager_attention_for: list[Name]  # model ids scored with eager attention
    batch_size: EvalBatchSize
    max_batch_size: PositiveInt | None
    include_paths: list[Name]  # extra lm-eval task folders
    local_data: dict[str, Name]  # benchmark -> local copy of its dataset
    log_samples: Flag
    keep_checkpoints: Keep
    progress: Flag
    threads: PositiveInt | None  # torch CPU threads; null: torch's default
    results_dir: Name
    work_dir: Name
    tiny_root: Name | None  # the `tiny` preset's fixture folder
    protocol: Protocol
    benchmarks: dict[str, Benchmark]
    benchmark_defaults: BenchmarkDefaults
    models: list[ModelRow]
    recipe: Recipe

    @model_validator(mode="before")
    @classmethod
    def _benchmark_defaults(cls, data: Any) -> Any:
        if not isinstance(data, Mapping) or not isinstance(data.get("benchmarks"), Mapping):
            return data
        defaults = data.get("benchmark_defaults")
        if violations(BenchmarkDefaults, defaults)[1]:  # said for benchmark_defaults, not for every benchmark
            return {**data, "benchmarks": {}}
        benchmarks = {k: with_defaults(v, defaults) for k, v in data["benchmarks"].items()}
        return {**data, "benchmarks": benchmarks}

    def __post_init__(self) -> None:
        fractions = self.corpus_fractions
        require(
            one_of("benchmark", self.benchmark, self.benchmarks, "a key of {benchmarks}"),
            None
            if len(fractions) == 3 and sum(fractions) <= 1 + 1e-9
            else Problem(
                "corpus_fractions",
                fractions,
                "three fractions (train, validation, test) summing to at most 1",
            ),
            [
                Problem(f"recipe.{key}", getattr(self.recipe, key), "null: the runner sets it for each run")
                for key in PER_RUN
                if getattr(self.recipe, key) is not None
            ],
        )

    def local_folders(self) -> dict[str, tuple[str, str]]:
        """Setting key -> (the local folder it names, what to do where it is absent), checked before a job imports
        anything (runners.precheck)."""
        from testtask.lm.local_folders import DEFAULT_HINT
        from testtask.paths import resolve

        if not self.model_path:
            return {}
        path = resolve(self.model_path)
        hint = DEFAULT_HINT
        if self.tiny_root is not None and path.is_relative_to(resolve(self.tiny_root)):  # an action writes it
            hint = "write the tiny fixture first: testtask action=tiny-data paper=train-before-test"
        return {"model_path": (str(path), hint)}

    def is_instruct(self) -> bool:
        """`instruct` when given, else the models table's flag, else False (a model outside the table)."""
        if self.instruct is not None:
            return self.instruct
        return next((row.instruct for row in self.models if row.id == self.model), False)
