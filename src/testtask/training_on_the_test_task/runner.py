"""Hydra entry of the training-on-the-test-task runner: fine-tune then evaluate (lm-eval), as the authors' code did
(socialfoundations/training-on-the-test-task@c357810); `protocol=training_on_the_test_task/paper_text` gives the
paper's text where it differs (docs/protocols/training-on-the-test-task.md).

Stages: base (no training), e1 / e2 / e3 (1, 2, 3 epochs), e1+2 (the e1 model trained 2 more epochs with a fresh
schedule). Stages in `emergence_stages` (e3) also save the finetune data's emergence checkpoints and evaluate them.

python experiments/training_on_the_test_task/run.py model=pythia-1.4b stage=e3 finetune_data=mmluaux
python experiments/training_on_the_test_task/run.py -m model=pythia-410m,pythia-1b stage=base,e3 hydra/launcher=slurm
accelerate launch --config_file conf/accelerate/zero3_1node.yaml experiments/training_on_the_test_task/run.py \
    model=llama-2-13b    # DeepSpeed ZeRO-3 with conf/deepspeed/zero3_authors.json (named by the accelerate config)
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from testtask.hf import pick_device
from testtask.paths import conf_dir, resolve

log = logging.getLogger("testtask.tott_runner")


def model_source(cfg: DictConfig) -> tuple[str, float]:
    """What to load (local path or Hub id) and the parameter count that picks the learning rate."""
    from testtask.training_on_the_test_task.models import ModelRegistry

    registry = ModelRegistry.from_config(cfg.models)
    info = registry.get(str(cfg.model)) if cfg.model in registry.names() else None
    path = cfg.get("model_path") or (info.hf_repo if info else None)
    if not path:
        raise ValueError(
            f"model {cfg.model!r}: no model_path given and the registry has no hf_repo for it "
            "(llama-1 has none: pass model_path=<a conversion>)"
        )
    parameters = float(info.params_b) * 1e9 if info else float(cfg.get("parameters") or 0)
    return str(path), parameters


def learning_rate(cfg: DictConfig) -> float | None:
    """An explicit `learning_rate` (the B.3 sweep), else the model's override, else None (the size rule)."""
    if cfg.get("learning_rate") is not None:
        return float(cfg.learning_rate)
    overrides = cfg.recipe.get("learning_rate_overrides") or {}
    return float(overrides[cfg.model]) if cfg.model in overrides else None


def stage_folder(cfg: DictConfig) -> str:
    """Where below `evaluations/` the results go: base/, <stage>/<finetune>/, or an explicit folder (lr_sweep)."""
    if cfg.get("evaluation_folder"):
        return str(cfg.evaluation_folder)
    if str(cfg.get("suite", "v1")) == "v2":  # the authors' layout for Leaderboard v2 runs (after e3 only)
        return "new_evals/base" if cfg.stage == "base" else f"new_evals/{cfg.finetune_data.name}"
    return "base" if cfg.stage == "base" else f"{cfg.stage}/{cfg.finetune_data.name}"


def fewshot(cfg: DictConfig) -> int | dict[str, int] | None:
    """One count for all tasks (`num_fewshot`), else the leaderboard v1 counts of the tasks evaluated."""
    if cfg.get("num_fewshot") is not None:
        return int(cfg.num_fewshot)
    table = {str(k): int(v) for k, v in (cfg.get("fewshot_by_task") or {}).items()}
    chosen = {b: table[b] for b in cfg.benchmarks if b in table}
    return chosen or None


def _trained(base: str, folder: Path, lora: bool) -> tuple[str, dict[str, str]]:
    """What lm-eval loads for a fine-tuned model saved in `folder`: the base model with that folder's adapter
    (LoRA; each checkpoint has its own adapter), else the folder's full weights."""
    return (base, {"peft": str(folder)}) if lora else (str(folder), {})


def trust_remote_code(cfg: DictConfig, path: str) -> bool:
    """`trust_remote_code`, or null: true unless the model's key or path names one of `trust_remote_code_except`
    (the authors: true except falcon, jobs_eval.py:30-31; train.py:29,36 loads falcon with its native class)."""
    if cfg.get("trust_remote_code") is not None:
        return bool(cfg.trust_remote_code)
    names = f"{cfg.model} {path}".lower()
    return not any(str(x).lower() in names for x in cfg.get("trust_remote_code_except") or [])


def add_bos_token(cfg: DictConfig, path: str, remote: bool) -> bool:
    """`add_bos_token`, or null: the authors' lm-eval fork's rule, BOS only for the model types listed in
    `add_bos_token_model_types` (gemma; RicardoDominguez/lm-evaluation-harness@sft huggingface.py:101,271-272)."""
    from testtask.training_on_the_test_task.evaluation import model_type

    if cfg.get("add_bos_token") is not None:
        return bool(cfg.add_bos_token)
    return model_type(path, trust_remote_code=remote) in set(cfg.get("add_bos_token_model_types") or [])


def eval_model_args(cfg: DictConfig, path: str) -> dict[str, Any]:
    """lm-eval `hf` model_args besides `pretrained` (lm_eval.sh:8, jobs_eval.py:29-31)."""
    remote = trust_remote_code(cfg, path)
    return {"trust_remote_code": remote, "add_bos_token": add_bos_token(cfg, path, remote)}


@dataclass(frozen=True)
class Trained:
    work: Path  # checkpoints_dir/<finetune>/<model>/<stage>
    result: Any  # FinetuneResult
    emergence: list[int]  # checkpoint steps of the emergence schedule


def stage_recipe(cfg: DictConfig, stage: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The recipe of a stage (its epochs; the emergence checkpoints when the stage is in `emergence_stages`)
    and the emergence settings that apply (None when none)."""
    recipe = {**OmegaConf.to_container(cfg.recipe, resolve=True), "epochs": int(cfg.stage_epochs[stage])}
    spec = cfg.finetune_data.get("emergence")
    if stage not in (cfg.get("emergence_stages") or []) or not spec:
        return recipe, None
    spec = OmegaConf.to_container(spec, resolve=True)
    recipe["save_steps"] = sorted({*(recipe.get("save_steps") or []), *spec.get("steps", [])})
    recipe["save_every"] = spec.get("every") or recipe.get("save_every")
    return recipe, spec


def train_stage(
    cfg: DictConfig, stage: str, path: str, parameters: float, device: str, examples: list
) -> Trained:
    """Fine-tune one stage. A stage in `stage_init` (e1+2: e1) first makes sure that stage is trained (a
    finished run is found, not redone), then starts from its final weights (or adapter) with a fresh optimizer
    and schedule, as the authors' README runs e1+2 (jobs_train.py --base_model_dir models/e1/)."""
    from testtask.training_on_the_test_task.finetune import emergence_schedule, finetune

    if stage not in cfg.stage_epochs:
        raise ValueError(f"stage must be base or one of {list(cfg.stage_epochs)}, got {stage!r}")
    work = resolve(cfg.checkpoints_dir) / str(cfg.finetune_data.name) / str(cfg.model) / stage
    lora = bool(cfg.lora.enabled)
    model, adapter = path, None
    init = (cfg.get("stage_init") or {}).get(stage)
    if init:
        previous = train_stage(cfg, str(init), path, parameters, device, examples).work / "final"
        model, adapter = (path, previous) if lora else (str(previous), None)
    recipe, spec = stage_recipe(cfg, stage)
    log.info(
        "fine-tuning %s (%s) on %d %s examples -> %s",
        model,
        stage,
        len(examples),
        cfg.finetune_data.name,
        work,
    )
    result = finetune(
        model,
        examples,
        work,
        recipe,
        parameters=parameters,
        learning_rate=learning_rate(cfg),
        device=device,
        seed=int(cfg.seed),
        lora=OmegaConf.to_container(cfg.lora, resolve=True),
        trust_remote_code=trust_remote_code(cfg, path),
        adapter=adapter,
    )
    steps = emergence_schedule(spec.get("steps", []), spec.get("every"), result.steps) if spec else []
    return Trained(work, result, [s for s in steps if s in result.checkpoints])


def training_examples(cfg: DictConfig) -> list:
    """(prompt, completion) pairs of the configured finetune data (filter and shuffle from its config)."""
    from testtask.training_on_the_test_task.task_data import build_texts

    data = cfg.finetune_data
    return build_texts(
        OmegaConf.to_container(data.sources, resolve=True),
        max_chars=data.get("max_chars"),
        shuffle_seed=data.get("shuffle_seed"),
    )


def run(cfg: DictConfig) -> dict[str, Any]:
    from testtask.training_on_the_test_task.evaluation import evaluate

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    device = pick_device(str(cfg.device))
    path, parameters = model_source(cfg)
    results = resolve(cfg.results_dir)
    base_args = eval_model_args(cfg, path)
    eval_kwargs = {
        "results_dir": results,
        "model_name": str(cfg.model),
        "num_fewshot": fewshot(cfg),
        "limit": cfg.limit,
        "batch_size": cfg.batch_size,
        "device": device,
        "local_data": {k: resolve(v) for k, v in (cfg.local_data or {}).items()},
        "model_args": base_args,
        "task_variants": dict(cfg.get("task_variants") or {}),
    }
    out: dict[str, Any] = {"model": str(cfg.model), "stage": str(cfg.stage)}
    model_to_evaluate = path
    if cfg.stage != "base":
        stage = str(cfg.stage)
        trained = train_stage(cfg, stage, path, parameters, device, training_examples(cfg))
        result, work, lora = trained.result, trained.work, bool(cfg.lora.enabled)
        out["finetune"] = {
            "steps": result.steps,
            "first_loss": result.first_loss,
            "last_loss": result.last_loss,
        }
        folder = f"intermediate/{cfg.finetune_data.name}/evals/{cfg.model}"
        spec = cfg.finetune_data.get("emergence")
        for step in trained.emergence:  # the authors' emergence evaluations (train.py:96-107,158-177)
            model, extra = _trained(path, work / f"checkpoint-{step}", lora)
            evaluate(
                model,
                list(spec.benchmarks),
                stage=f"{folder}/step_{step}",
                **{
                    **eval_kwargs,
                    "num_fewshot": spec.get("num_fewshot"),
                    "model_args": {**base_args, **extra},
                },
            )
        if cfg.evaluate_checkpoints:
            wanted = cfg.get("evaluate_steps")
            for step in [s for s in result.checkpoints if wanted is None or s in wanted]:
                model, extra = _trained(path, work / f"checkpoint-{step}", lora)
                evaluate(
                    model,
                    list(cfg.benchmarks),
                    stage=f"{folder}/step_{step}",
                    **{**eval_kwargs, "model_args": {**base_args, **extra}},
                )
        model_to_evaluate, extra = _trained(path, work / "final", lora)
        eval_kwargs["model_args"] = {**base_args, **extra}
    files = evaluate(model_to_evaluate, list(cfg.benchmarks), stage=stage_folder(cfg), **eval_kwargs)
    out["files"] = {k: str(v) for k, v in files.items()}
    return out


@hydra.main(version_base=None, config_path=str(conf_dir()), config_name="training_on_the_test_task_run")
def _main(cfg: DictConfig) -> None:
    run(cfg)


def main() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    _main()


if __name__ == "__main__":
    main()
