"""The schema of the shared fine-tuning (`testtask.lm.finetune`) and lm-eval scoring settings, for every
runner that uses them; the values are in YAML. transformers' optimizer and scheduler names are checked against
the installed transformers, read only when a value is checked, so this module stays light."""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, Strict
from pydantic_core import PydanticCustomError

from testtask.schema import (
    Choice,
    Flag,
    Name,
    NonNegativeInt,
    NonNegativeNumber,
    PositiveInt,
    PositiveNumber,
    Problem,
    Text,
    UnitInterval,
    non_empty,
    number,
    require,
    section,
    to_plain,
)


class FinetunePrecision(Choice):
    """What a fine-tuning run trains in on a GPU (on the CPU: fp32 unless given explicitly)."""

    bf16 = "bf16"  # bf16 weights and AdamW state, bf16 autocast (the authors' --bf16 on a bf16-loaded model)
    bf16_mixed = "bf16-mixed"  # fp32 master weights and AdamW state, bf16 autocast
    fp32 = "fp32"  # fp32 weights, state and compute


class LossOn(Choice):
    """Which tokens are trained: the completion (labels -100 on the prompt) or the whole document."""

    completion = "completion"
    all = "all"


class Suite(Choice):
    """Which evaluations a result belongs to: Open LLM Leaderboard v1-era tasks (`v1`, evaluations/) or v2 (`v2`,
    the release's new_evals/ folder; testtask.lm.results_layout)."""

    v1 = "v1"
    v2 = "v2"


class Side(Choice):
    """A side of a token sequence (truncation, padding)."""

    left = "left"
    right = "right"


# Where transformers declares each set of names: (module, enum class).
_NAMES = {
    "optim": ("transformers.training_args", "OptimizerNames"),
    "scheduler": ("transformers.trainer_utils", "SchedulerType"),
}


@functools.cache
def transformers_names(kind: str) -> tuple[str, ...]:
    """Optimizer (`optim`) or scheduler (`scheduler`) names the installed transformers accepts, read from the
    enum's source (importing it loads torch), else from the imported enum."""
    module, enum = _NAMES[kind]
    # A top-level package's spec is found without importing the package.
    package = importlib.util.find_spec("transformers")
    if package is not None and package.submodule_search_locations:
        source = Path(package.submodule_search_locations[0], *module.split(".")[1:]).with_suffix(".py")
        tree = ast.parse(source.read_text(encoding="utf-8")) if source.is_file() else ast.Module(body=[])
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == enum:
                values = [
                    item.value.value
                    for item in node.body
                    if isinstance(item, ast.Assign)
                    and isinstance(item.value, ast.Constant)
                    and isinstance(item.value.value, str)
                ]
                if values:
                    return tuple(values)
    return tuple(member.value for member in getattr(importlib.import_module(module), enum))


def _known(kind: str, words: str) -> Any:
    def check(value: str) -> str:
        if value not in transformers_names(kind):
            raise PydanticCustomError("transformers_name", words)
        return value

    return AfterValidator(check)


_OPTIMIZER = "an optimizer name of transformers' OptimizerNames"
_SCHEDULER = "a scheduler name of transformers' SchedulerType"
Optimizer = Annotated[str, Strict(), _known("optim", _OPTIMIZER), Text(_OPTIMIZER)]
Scheduler = Annotated[str, Strict(), _known("scheduler", _SCHEDULER), Text(_SCHEDULER)]


def _eval_batch_size(value: int | str) -> int | str:
    ok = value >= 1 if isinstance(value, int) else re.fullmatch(r"auto(:[1-9][0-9]*)?", value) is not None
    if not ok:
        raise PydanticCustomError("batch_size", "lm-eval batch size")
    return value


_BATCH = "a positive integer, auto or auto:N"
# lm-eval's `batch_size`: a number of documents, `auto` (the largest that fits) or `auto:N` (N recomputations)
EvalBatchSize = Annotated[
    Annotated[int, Strict()] | Annotated[str, Strict()], AfterValidator(_eval_batch_size), Text(_BATCH)
]
# lm-eval's `limit`: documents per task, or a fraction of each task's documents
Limit = Annotated[PositiveInt | number(0, 1), Text("a positive integer (documents) or a fraction in (0, 1)")]
# Modules that get adapters: a peft name or pattern (`all-linear`) or a list of module names
TargetModules = Annotated[
    Name | non_empty(Name), Text("a module name or pattern (all-linear) or a list of them")
]
# keyword arguments passed on to a library (from_pretrained, lm-eval's `hf` model): scalar values
Kwargs = Annotated[
    dict[str, bool | int | float | str | None], Text("a mapping of keyword arguments (scalar values)")
]


@section
class Lora:
    """LoRA adapters (peft LoraConfig) instead of full fine-tuning, when `enabled`."""

    enabled: Flag
    r: PositiveInt
    alpha: PositiveInt
    dropout: number(0, 1, low_open=False)
    target_modules: TargetModules | None  # null: peft's default for the architecture


@section
class Recipe:
    """The fine-tuning recipe of `testtask.lm.finetune`: data to tokens, optimisation, precision, checkpoints."""

    epochs: PositiveInt | None  # null: the runner sets it for each run
    max_steps: PositiveInt | None  # a cap on the optimizer steps (tests, smoke runs); null: none
    batch_size: PositiveInt  # effective: per_device × gradient accumulation × processes
    per_device_batch_size: PositiveInt
    max_length: PositiveInt  # context, tokens
    # --- data → tokens
    loss_on: LossOn
    add_eos: Flag
    train_eos: Flag
    truncation_side: Side
    pad_to_max_length: Flag
    attend_padding: Flag
    padding_side: Side | None  # null: the tokenizer's
    # a transformers name, `auto` (FlashAttention-2 where it runs), null: default
    attn_implementation: Name | None
    # --- optimisation
    # peak lr below large_model_threshold parameters (the size rule)
    learning_rate_small: PositiveNumber | None
    # at or above it; null (both): the runner gives the learning rate
    learning_rate_large: PositiveNumber | None
    large_model_threshold: PositiveNumber | None
    learning_rate_overrides: dict[str, PositiveNumber] | None  # model -> peak lr, over the size rule
    optim: Optimizer
    adam_beta1: number(0, 1, low_open=False)
    adam_beta2: number(0, 1, low_open=False)
    adam_epsilon: PositiveNumber
    weight_decay: NonNegativeNumber
    max_grad_norm: NonNegativeNumber
    lr_scheduler_type: Scheduler
    final_lr_fraction: UnitInterval  # cosine_with_min_lr's floor, × the peak
    warmup_steps: NonNegativeInt | None  # > 0: that many steps; null or 0: warmup_ratio of the steps
    warmup_ratio: number(0, 1, low_open=False)
    precision: FinetunePrecision
    precision_large: FinetunePrecision | None  # at or above large_model_threshold; null: `precision`
    gradient_checkpointing: Flag | None  # null: at or above gradient_checkpointing_threshold parameters
    gradient_checkpointing_threshold: PositiveNumber | None
    deepspeed: Name | None  # a DeepSpeed json for every run
    zero3_config: Name | None  # under `accelerate launch` with DeepSpeed
    # --- checkpoints
    save_steps: list[PositiveInt] | None  # optimizer steps to checkpoint at
    save_every: PositiveInt | None  # and every k steps
    save_total_limit: PositiveInt | None
    logging_steps: PositiveInt
    progress: Flag

    def __post_init__(self) -> None:
        size_rule = (self.learning_rate_small, self.learning_rate_large)
        require(
            None
            if self.batch_size % self.per_device_batch_size == 0
            else Problem(
                "batch_size",
                self.batch_size,
                "a multiple of {per_device_batch_size} "
                f"({self.per_device_batch_size}), so that gradient accumulation is a whole number of steps >= 1",
            ),
            None
            if all(x is None for x in size_rule) or all(x is not None for x in size_rule)
            else Problem(
                "learning_rate_small",
                self.learning_rate_small,
                "a number > 0 together with {learning_rate_large}, or both null",
            ),
            None
            if (self.learning_rate_small is None and self.precision_large is None)
            or self.large_model_threshold is not None
            else Problem(
                "large_model_threshold",
                None,
                "a number > 0: {learning_rate_small} or {precision_large} applies from this size",
            ),
            None
            if self.gradient_checkpointing is not None or self.gradient_checkpointing_threshold is not None
            else Problem(
                "gradient_checkpointing_threshold",
                None,
                "a number > 0 while {gradient_checkpointing} is null (checkpointing from this size)",
            ),
        )


# Keys the recipe declared for training-on-the-test-task alone before train-before-test's recipe stated every key:
# records (finetune's fingerprint in finished.json, train-before-test's cell settings) leave them out when null,
# so that a run recorded before they were declared still matches.
RECORDED_WHEN_SET = (
    "attn_implementation",
    "learning_rate_small",
    "learning_rate_large",
    "large_model_threshold",
    "learning_rate_overrides",
    "precision_large",
    "gradient_checkpointing_threshold",
    "zero3_config",
)


def recipe_record(recipe: Recipe) -> dict[str, Any]:
    """The recipe as records write it: every key, in the recipe's order, but those of RECORDED_WHEN_SET at null."""
    return {k: v for k, v in to_plain(recipe).items() if not (k in RECORDED_WHEN_SET and v is None)}
