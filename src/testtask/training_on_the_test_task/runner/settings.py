"""The training-on-the-test-task runner's settings: the schema of conf/training_on_the_test_task_run.yaml as
composed (models, recipe, `finetune_data/`, experiment and protocol presets). The recipe and LoRA keys are the
shared fine-tuning's (`testtask.lm.settings`); `runners.py` loads the composed config once, before Hydra starts
and again first thing in each job.
"""

from __future__ import annotations

from typing import Annotated

import annotated_types as at
from pydantic import Strict

from testtask.lm.models import Models
from testtask.lm.settings import EvalBatchSize, Kwargs, Limit, Lora, Recipe, Suite
from testtask.schema import (
    Choice,
    Flag,
    Name,
    NonNegativeInt,
    PositiveInt,
    PositiveNumber,
    Problem,
    Text,
    all_of,
    non_empty,
    one_of,
    partial,
    require,
    section,
    to_plain,
)
from testtask.settings import Protocol

# Own registry entries (<user_dir>/models.yaml) join `models` before the config is typed (testtask.user_files)
USER_FILES = {"models.yaml": "testtask.lm.models:merge_user_models_into_runner"}
BASE = "base"  # the stage without fine-tuning


class RemoteCode(Choice):
    """`trust_remote_code: authors`: the authors' rule, true unless the model names one of
    `trust_remote_code_except`."""

    authors = "authors"


class SourceFormat(Choice):
    """How a fine-tuning source's rows become (prompt, completion) pairs (task_data.FORMATTERS)."""

    mmlu_auxiliary = "mmlu_auxiliary"
    metamath = "metamath"
    orca_math = "orca_math"
    arc = "arc"
    openbookqa = "openbookqa"


@section
class Source:
    """One source of fine-tuning documents: a Hub dataset (`path`, `name`, `split`), a `save_to_disk` folder
    (`disk`) or a JSON-lines file (`json`); `limit`: its first rows only."""

    format: SourceFormat
    path: Name
    name: Name | None  # the Hub dataset's configuration
    split: Name
    json: Name
    disk: Name
    limit: PositiveInt


_PLACES = ("path", "json", "disk")


@section
class Emergence:
    """Emergence checkpoints (Figures 8/19): saved at `steps` and every `every` steps, each evaluated."""

    steps: list[PositiveInt]
    every: PositiveInt | None
    benchmarks: non_empty(Name)
    num_fewshot: NonNegativeInt | None


@section
class FinetuneData:
    """The fine-tuning documents (conf/training_on_the_test_task/finetune_data/<name>.yaml)."""

    name: Name
    sources: non_empty(partial(Source, required=("format",)))
    max_chars: PositiveInt | None  # each example filtered to len(prompt) + len(completion) <= max_chars
    shuffle_seed: NonNegativeInt | None  # null: source order
    emergence: Emergence | None  # null: no emergence checkpoints

    def __post_init__(self) -> None:
        problems = []
        for i, source in enumerate(self.sources):
            places = [key for key in _PLACES if key in source]
            what = "exactly one of path, json or disk" if len(places) != 1 else None
            if places == ["path"] and "split" not in source:
                what = "a split beside the Hub dataset's path"
            if what:
                problems.append(Problem(f"sources[{i}]", to_plain(source), what))
        require(problems)


@section
class Distributed:
    """Fine-tuning on several GPUs from one job: `accelerate launch` with `accelerate_config`."""

    accelerate_config: Name | None  # e.g. conf/accelerate/zero3_1node.yaml; null: one process
    num_processes: PositiveInt  # over all machines
    num_machines: PositiveInt
    main_process_ip: Name | None  # null: the first host of SLURM_JOB_NODELIST (one machine: 127.0.0.1)
    main_process_port: Annotated[int, Strict(), at.Ge(1), at.Le(65535), Text("a port in 1..65535")]

    def __post_init__(self) -> None:
        if self.num_processes < self.num_machines or self.num_processes % self.num_machines:
            what = "a multiple of {num_machines} (the same processes per node)"
            require(Problem("num_processes", self.num_processes, what))


@section
class Settings:
    """The composed config of one training-on-the-test-task job (Hydra's own `hydra` node aside)."""

    model: Name  # a registry key, or the name of a model given by model_path
    user_dir: Name
    model_path: Name | None  # a local folder or Hub id to load instead of the entry's hf_repo
    revision: Name | None  # a Hub commit; null: the registry entry's
    model_args: Kwargs | None  # from_pretrained kwargs, over the entry's
    eval_model_args: Kwargs | None  # lm-eval `hf` model args only, over the entry's
    parameters: PositiveNumber | None  # parameter count of a model outside the registry
    stage: Name  # base, or a key of stage_epochs
    stage_epochs: dict[str, PositiveInt]
    stage_init: dict[str, Name]  # stage -> the stage whose final weights it continues from
    emergence_stages: list[Name] | None  # stages that save and evaluate the emergence checkpoints
    learning_rate: PositiveNumber | None  # null: recipe.learning_rate_overrides, else the recipe's size rule
    evaluation_folder: Name | None  # null: base/ or <stage>/<finetune>/ below evaluations/
    evaluate_checkpoints: Flag
    evaluate_steps: list[PositiveInt] | None  # null: every saved checkpoint
    overwrite_evaluations: Flag
    benchmarks: non_empty(Name)
    num_fewshot: NonNegativeInt | None  # null: fewshot_by_task, else the task's own default
    fewshot_by_task: dict[str, NonNegativeInt]
    suite: Suite
    limit: Limit | None  # documents per task (smoke runs); null: all
    batch_size: EvalBatchSize
    add_bos_token: Flag | None  # null: the authors' fork's rule (add_bos_token_model_types)
    add_bos_token_model_types: list[Name]
    # null: the entry's
    trust_remote_code: Annotated[bool | RemoteCode, Text("true, false or authors")] | None
    trust_remote_code_except: list[Name]
    task_variants: dict[str, Name]  # benchmark -> the task config evaluated under its name
    local_data: dict[str, Name]  # task -> local dataset folder
    lora: Lora
    mini_data: Name
    seed: NonNegativeInt
    device: Name  # auto | cpu | cuda[:k]
    distributed: Distributed
    results_dir: Name
    checkpoints_dir: Name
    protocol: Protocol
    models: Models
    recipe: Recipe
    finetune_data: FinetuneData

    def local_folders(self) -> dict[str, tuple[str, str]]:
        """Setting key -> (the local folder it names, what to do where it is absent), checked before a job imports
        anything (runners.precheck)."""
        from testtask.lm.local_folders import DEFAULT_HINT

        return {"model_path": (str(self.model_path), DEFAULT_HINT)} if self.model_path else {}

    def __post_init__(self) -> None:
        stages = list(self.stage_epochs)
        size_rule = self.recipe.learning_rate_small is not None
        require(
            None
            if self.stage == BASE or self.stage in stages
            else Problem("stage", self.stage, f"base or one of stage_epochs ({', '.join(stages)})"),
            all_of("stage_init", list(self.stage_init), stages, "keys of {stage_epochs}"),
            [
                problem
                for key, value in self.stage_init.items()
                if (problem := one_of(f"stage_init.{key}", value, stages, "a key of {stage_epochs}"))
            ],
            None
            if self.learning_rate is not None or size_rule
            else Problem(
                "recipe.learning_rate_small",
                None,
                "a number > 0: with {learning_rate} null, the recipe's size rule picks the learning rate",
            ),
            None
            if self.revision not in ("main", "master")
            else Problem("revision", self.revision, "a commit hash (not a branch) or null"),
        )
