"""The GPU bench's settings schema (values in conf/gpu_bench/paper.yaml; tiny.yaml: the CPU preset's
changes)."""

from __future__ import annotations

from pathlib import Path

from testtask.schema import (
    AnyText,
    Flag,
    Int,
    Name,
    NonNegativeInt,
    Number,
    PositiveInt,
    PositiveNumber,
    Problem,
    load,
    non_empty,
    require,
    section,
)

PRESETS = ("paper", "tiny")
# A value of a published model configuration (config.json): a number, a name or a flag.
ConfigValue = Flag | Int | Number | AnyText


@section
class Steps:
    warmup: NonNegativeInt  # run, not timed
    measured: PositiveInt  # timed


@section
class ZeroShot:
    architecture: Name
    padding_lm: Name  # conf/lm/<name>.yaml
    packing_lm: Name
    scoring_texts: PositiveInt


@section
class FewShot:
    bert: Name  # an architecture
    gpt2: Name


@section
class PretrainOnTest:
    zero_shot: ZeroShot
    few_shot: FewShot


@section
class Finetune:
    architecture: Name
    layers: PositiveInt | None  # null: the architecture's own
    precision: Name  # one of finetune.PRECISIONS (checked where the recipe is read)
    recipe: dict[Name, ConfigValue]  # recipe keys changed for the bench (the tiny preset's smaller batch)


@section
class LmEval:
    architecture: Name
    layers: PositiveInt | None
    benchmark: Name
    documents: PositiveInt
    num_fewshot: NonNegativeInt
    question_words: PositiveInt


@section
class TrainingOnTheTestTask:
    finetune: Finetune
    lm_eval: LmEval


@section
class Peak:
    match: Name  # a substring of the device name (case-insensitive)
    tflops: PositiveNumber  # dense BF16 tensor-core peak
    source: AnyText


@section
class Settings:
    preset: Name
    out: Name  # folder of the JSON (relative to the repository root, or absolute)
    scratch: Name | None  # folder for the random checkpoints (null: the system's temporary folder)
    seed: NonNegativeInt
    steps: Steps
    text_words: PositiveInt
    architectures: dict[Name, dict[Name, ConfigValue]]
    pretrain_on_test: PretrainOnTest
    training_on_the_test_task: TrainingOnTheTestTask
    peak_bf16_tflops: non_empty(Peak)

    def __post_init__(self) -> None:
        known = list(self.architectures)
        used = {
            "pretrain_on_test.zero_shot.architecture": self.pretrain_on_test.zero_shot.architecture,
            "pretrain_on_test.few_shot.bert": self.pretrain_on_test.few_shot.bert,
            "pretrain_on_test.few_shot.gpt2": self.pretrain_on_test.few_shot.gpt2,
            "training_on_the_test_task.finetune.architecture": self.training_on_the_test_task.finetune.architecture,
            "training_on_the_test_task.lm_eval.architecture": self.training_on_the_test_task.lm_eval.architecture,
        }
        require(
            Problem(key, value, f"one of the architectures ({', '.join(known)})")
            for key, value in used.items()
            if value not in self.architectures
        )
        require(
            Problem(f"architectures.{name}.model_type", config.get("model_type"), "a transformers model type")
            for name, config in self.architectures.items()
            if not isinstance(config.get("model_type"), str)
        )


def preset_file(preset: str) -> Path:
    from testtask.paths import conf_dir

    return conf_dir() / "gpu_bench" / f"{preset}.yaml"


def load_settings(preset: str, overrides: list[str] | tuple[str, ...] = ()) -> Settings:
    """The typed settings of `preset` with `key=value` overrides; a ConfigError naming every bad key
    otherwise."""
    from omegaconf import OmegaConf

    from testtask.schema import ConfigError

    if preset not in PRESETS:
        raise ConfigError([f"preset = {preset!r}: expected one of {', '.join(PRESETS)}"])
    node = OmegaConf.load(preset_file("paper"))
    if preset != "paper":
        node = OmegaConf.merge(node, OmegaConf.load(preset_file(preset)))
    bad = [item for item in overrides if "=" not in item]
    if bad:
        raise ConfigError([f"{item!r}: an override is key=value" for item in bad])
    if overrides:
        node = OmegaConf.merge(node, OmegaConf.from_dotlist(list(overrides)))
    return load(Settings, node, "gpu_bench")
