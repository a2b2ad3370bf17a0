"""Hydra entry of the training-on-the-test-task runner: fine-tune (App. B.2) then evaluate (lm-eval).

python experiments/training_on_the_test_task/run.py model=pythia-1.4b stage=e3 finetune_data=mmluaux
python experiments/training_on_the_test_task/run.py -m model=pythia-410m,pythia-1b stage=base,e3 hydra/launcher=slurm
accelerate launch --config_file conf/accelerate/zero3_1node.yaml experiments/training_on_the_test_task/run.py \
    model=llama-2-13b recipe.deepspeed=conf/deepspeed/zero3.json
"""

from __future__ import annotations

import logging
import os
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


def run(cfg: DictConfig) -> dict[str, Any]:
    from testtask.training_on_the_test_task.evaluation import evaluate
    from testtask.training_on_the_test_task.finetune import finetune
    from testtask.training_on_the_test_task.task_data import build_texts

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    device = pick_device(str(cfg.device))
    path, parameters = model_source(cfg)
    results = resolve(cfg.results_dir)
    eval_kwargs = {
        "results_dir": results,
        "model_name": str(cfg.model),
        "num_fewshot": fewshot(cfg),
        "limit": cfg.limit,
        "batch_size": cfg.batch_size,
        "device": device,
        "local_data": {k: resolve(v) for k, v in (cfg.local_data or {}).items()},
    }
    out: dict[str, Any] = {"model": str(cfg.model), "stage": str(cfg.stage)}
    model_to_evaluate = path
    if cfg.stage != "base":
        if str(cfg.stage) not in cfg.stage_epochs:
            raise ValueError(f"stage must be base or one of {list(cfg.stage_epochs)}, got {cfg.stage!r}")
        recipe = {
            **OmegaConf.to_container(cfg.recipe, resolve=True),
            "epochs": int(cfg.stage_epochs[str(cfg.stage)]),
        }
        work = resolve(cfg.checkpoints_dir) / str(cfg.finetune_data.name) / str(cfg.model) / str(cfg.stage)
        texts = build_texts(OmegaConf.to_container(cfg.finetune_data.sources, resolve=True))
        log.info("fine-tuning %s on %d %s documents -> %s", path, len(texts), cfg.finetune_data.name, work)
        result = finetune(
            path,
            texts,
            work,
            recipe,
            parameters=parameters,
            learning_rate=learning_rate(cfg),
            device=device,
            seed=int(cfg.seed),
            lora=OmegaConf.to_container(cfg.lora, resolve=True),
        )
        out["finetune"] = {
            "steps": result.steps,
            "first_loss": result.first_loss,
            "last_loss": result.last_loss,
        }
        if cfg.evaluate_checkpoints:
            wanted = cfg.get("evaluate_steps")
            for step in [s for s in result.checkpoints if wanted is None or s in wanted]:
                stage = f"intermediate/{cfg.finetune_data.name}/evals/{cfg.model}/step_{step}"
                model, extra = _trained(path, work / f"checkpoint-{step}", bool(cfg.lora.enabled))
                evaluate(model, list(cfg.benchmarks), stage=stage, model_args=extra, **eval_kwargs)
        model_to_evaluate, extra = _trained(path, work / "final", bool(cfg.lora.enabled))
        eval_kwargs["model_args"] = extra
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
