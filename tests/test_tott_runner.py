"""The training-on-the-test-task runner end to end on a tiny random Llama: fine-tune, checkpoints, lm-eval JSONs."""

from __future__ import annotations

import json

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from tests.tott_fixtures import arc_rows, build_model, write_datasets, write_jsonl
from testtask.paths import conf_dir
from testtask.training_on_the_test_task.results import load_results
from testtask.training_on_the_test_task.runner import model_source, run


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = compose("training_on_the_test_task_run", overrides=list(overrides))
    OmegaConf.set_struct(cfg, False)
    return cfg


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("tott_runner")
    local = write_datasets(root / "data")
    train = write_jsonl(root / "train" / "arc_train.jsonl", arc_rows(16, offset=60))
    model = build_model(root / "tiny-llama", root / "data")
    return root, local, train, model


def _config(root, local, train, model, *extra):
    cfg = _compose(
        "model=tiny",
        f"model_path={model}",
        "parameters=1000000",
        "benchmarks=[arc_challenge_mc]",
        "num_fewshot=0",
        "batch_size=4",
        "device=cpu",
        "learning_rate=0.001",
        f"results_dir={root / 'results'}",
        f"checkpoints_dir={root / 'checkpoints'}",
        "recipe.max_steps=4",
        "recipe.batch_size=4",
        "recipe.per_device_batch_size=2",
        "recipe.max_length=128",
        "recipe.warmup_steps=1",
        "recipe.logging_steps=1",
        "recipe.progress=false",
        "recipe.gradient_checkpointing=false",
        "recipe.save_steps=[2]",
        *extra,
    )
    cfg.local_data = {"arc_challenge_mc": str(local["arc_challenge_mc"])}
    cfg.finetune_data.sources = [{"format": "arc", "json": str(train)}]
    return cfg


def test_registry_models_load_from_their_hub_repo():
    cfg = _compose("model=pythia-410m")
    path, parameters = model_source(cfg)
    assert path == "EleutherAI/pythia-410m" and parameters == pytest.approx(0.41e9, rel=0.1)
    cfg = _compose("model=llama-7b")
    with pytest.raises(ValueError, match="model_path"):
        model_source(cfg)


def test_base_and_fine_tuned_runs_write_the_published_layout(setup):
    root, local, train, model = setup
    base = run(_config(root, local, train, model, "stage=base"))
    tuned = run(_config(root, local, train, model, "stage=e3", "evaluate_checkpoints=true"))
    evaluations = root / "results" / "evaluations"
    assert base["files"]["arc_challenge_mc"] == str(evaluations / "base" / "tiny-arc_challenge_mc.json")
    assert tuned["files"]["arc_challenge_mc"] == str(
        evaluations / "e3" / "mmluaux" / "tiny-arc_challenge_mc.json"
    )
    assert (
        tuned["finetune"]["steps"] == 4 and tuned["finetune"]["last_loss"] < tuned["finetune"]["first_loss"]
    )
    for step in (2, 4):
        assert (
            evaluations
            / "intermediate"
            / "mmluaux"
            / "evals"
            / "tiny"
            / f"step_{step}"
            / "arc_challenge_mc.json"
        ).is_file()
    table = load_results(evaluations)
    acc = table[(table.benchmark == "arc_challenge_mc") & (table.metric == "acc,none")]
    assert set(acc.adjustment) == {"base", "e3", "intermediate"}
    assert sorted(acc[acc.adjustment == "intermediate"].step) == [2, 4]
    brier = json.loads((evaluations / "base" / "tiny-arc_challenge_mc.json").read_text())["results"]
    assert 0 <= brier["arc_challenge_mc"]["brier_score,none"] <= 2
    # Rerunning is free: fine-tuning and every evaluation are found finished.
    again = run(_config(root, local, train, model, "stage=e3", "evaluate_checkpoints=true"))
    assert again == tuned


def test_learning_rates_follow_appendix_b():
    """The paper's per-model overrides: the released e3 results of llama-3-8b, olmo-7b, gemma-7b load from the
    authors' `new-lr` folder, so the final runs used them (the code snapshot's model_utils.py still says 2e-5)."""
    from testtask.training_on_the_test_task.runner import learning_rate, stage_folder

    assert learning_rate(_compose("model=pythia-410m")) is None  # the size rule applies (2e-5 below 10B)
    assert learning_rate(_compose("model=gemma-7b")) == 2e-6  # degraded at 2e-5 (App. B.2)
    assert learning_rate(_compose("model=gemma-7b", "learning_rate=6e-5")) == 6e-5
    assert (
        stage_folder(_compose("stage=e1", "training_on_the_test_task/finetune_data@finetune_data=gsm8kaux"))
        == "e1/gsm8kaux"
    )


def _compose_sweep(*overrides: str):
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        return compose("training_on_the_test_task_run", overrides=list(overrides), return_hydra_config=True)


def test_sweeps_compose():
    from testtask.training_on_the_test_task.models import ModelRegistry

    lr = _compose_sweep("experiment=training_on_the_test_task/lr_sweep", "learning_rate=6e-5")
    assert lr.hydra.sweeper.params.learning_rate.split(",") == ["6e-5", "2e-5", "6e-6", "2e-6", "6e-7"]
    assert lr.evaluation_folder == "lr_sweep/6e-05/mmluaux" and lr.stage == "e3"
    paper = _compose_sweep("experiment=training_on_the_test_task/paper", "hydra/launcher=slurm")
    models = paper.hydra.sweeper.params.model.split(",")
    registry = ModelRegistry.load()
    assert set(models) == {n for n in registry.names("base") if registry.get(n).hf_repo} and len(models) == 52
    assert "SlurmLauncher" in paper.hydra.launcher._target_


def test_cpu_mini_preset_composes():
    cfg = _compose_sweep("experiment=training_on_the_test_task/cpu_mini")
    assert cfg.hydra.sweeper.params.stage == "base,e1"
    assert cfg.finetune_data.name == "mcaux" and cfg.lora.enabled and cfg.num_fewshot == 0
    assert len(cfg.benchmarks) == 12 and set(cfg.local_data) == set(cfg.benchmarks)
    assert cfg.results_dir == "results/training-on-the-test-task/cpu-mini"
    assert cfg.model_path == "assets/models/smollm2-135m"


def test_fewshot_counts_and_leaderboard_v2_layout():
    from testtask.training_on_the_test_task.runner import fewshot, stage_folder

    cfg = _compose("benchmarks=[mmlu,arc_challenge,hellaswag,gsm8k,winogrande]")
    assert fewshot(cfg) == {"mmlu": 5, "arc_challenge": 25, "hellaswag": 10, "gsm8k": 5}
    assert fewshot(_compose("num_fewshot=0")) == 0
    v2 = _compose_sweep("experiment=training_on_the_test_task/leaderboard_v2", "stage=e3")
    assert stage_folder(v2) == "new_evals/mmluaux" and "leaderboard_mmlu_pro_four" in v2.benchmarks
    assert (
        stage_folder(_compose("experiment=training_on_the_test_task/leaderboard_v2", "stage=base"))
        == "new_evals/base"
    )


def test_lora_checkpoints_are_evaluated_with_their_own_adapter(tmp_path, monkeypatch):
    """With LoRA, lm-eval loads the base model plus each checkpoint's adapter (not the final one for all)."""
    from testtask.training_on_the_test_task import evaluation, finetune, task_data
    from testtask.training_on_the_test_task.finetune import FinetuneResult

    calls = []
    monkeypatch.setattr(task_data, "build_texts", lambda sources, **kw: [("a", " b"), ("c", " d")])
    monkeypatch.setattr(
        finetune,
        "finetune",
        lambda path, texts, work, recipe, **kw: FinetuneResult(work, 4, [(1, 2.0), (4, 1.0)], [2, 4]),
    )
    monkeypatch.setattr(
        evaluation,
        "evaluate",
        lambda model, tasks, stage, model_args=None, **kw: calls.append((model, stage, model_args)) or {},
    )
    cfg = _compose(
        "model=tiny",
        "model_path=/base",
        "parameters=1000000",
        "stage=e1",
        "evaluate_checkpoints=true",
        "lora.enabled=true",
        "add_bos_token=false",  # /base has no config to read the model type from
        "device=cpu",
        f"checkpoints_dir={tmp_path}",
        f"results_dir={tmp_path / 'results'}",
    )
    run(cfg)
    work = tmp_path / "mmluaux" / "tiny" / "e1"
    calls_all = list(calls)
    calls.clear()
    cfg.evaluate_steps = [4]
    run(cfg)
    assert calls == calls_all[1:]  # only step 4, then the final adapter
    calls[:] = calls_all
    flags = {"trust_remote_code": True, "add_bos_token": False}
    assert calls == [
        ("/base", "intermediate/mmluaux/evals/tiny/step_2", {**flags, "peft": str(work / "checkpoint-2")}),
        ("/base", "intermediate/mmluaux/evals/tiny/step_4", {**flags, "peft": str(work / "checkpoint-4")}),
        ("/base", "e1/mmluaux", {**flags, "peft": str(work / "final")}),
    ]
