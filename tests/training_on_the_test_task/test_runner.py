"""The training-on-the-test-task runner end to end on a tiny random Llama: fine-tune, checkpoints, lm-eval JSONs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from tests.fixtures.lm_eval_data import arc_rows, build_model, write_datasets, write_jsonl
from testtask.lm.results import load_results
from testtask.paths import conf_dir
from testtask.provenance import code_record
from testtask.training_on_the_test_task.runner.main import model_source, run, settings_of


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = compose("training_on_the_test_task_run", overrides=list(overrides))
    OmegaConf.set_struct(cfg, False)
    return cfg


def _typed(*overrides: str):
    """The runner's typed settings of the config composed with `overrides`."""
    return settings_of(_compose(*overrides))


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
    path, parameters = model_source(_typed("model=pythia-410m"))
    assert path == "EleutherAI/pythia-410m" and parameters == pytest.approx(0.41e9, rel=0.1)
    with pytest.raises(ValueError, match="model_path"):
        model_source(_typed("model=llama-7b"))


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
    finished = json.loads((root / "checkpoints" / "mmluaux" / "tiny" / "e3" / "finished.json").read_text())
    assert finished["code"] == code_record() and len(finished["code"]["commit"]) == 40  # the checkout's
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
    from testtask.training_on_the_test_task.runner.main import learning_rate, stage_folder

    assert learning_rate(_typed("model=pythia-410m")) is None  # the size rule applies (2e-5 below 10B)
    assert learning_rate(_typed("model=gemma-7b")) == 2e-6  # degraded at 2e-5 (App. B.2)
    assert learning_rate(_typed("model=gemma-7b", "learning_rate=6e-5")) == 6e-5
    assert stage_folder(_typed("stage=e1", "finetune_data=gsm8kaux")) == "e1/gsm8kaux"


def test_the_documented_short_finetune_data_override_selects_the_dataset():
    """`finetune_data=gsm8kaux` (the README's form) picks the group option; it used to replace the node by a
    string (AttributeError: 'str' object has no attribute 'name'). The long form still works."""
    from testtask.training_on_the_test_task.runner.main import stage_folder

    for override in (
        "finetune_data=gsm8kaux",
        "training_on_the_test_task/finetune_data@finetune_data=gsm8kaux",
    ):
        cfg = _compose("stage=e3", override)
        assert cfg.finetune_data.name == "gsm8kaux" and cfg.finetune_data.max_chars == 1700
        assert stage_folder(settings_of(cfg)) == "e3/gsm8kaux"
    assert _compose().finetune_data.name == "mmluaux"
    mini = _compose("experiment=training_on_the_test_task/cpu_mini", "finetune_data=mmluaux")
    assert (
        mini.finetune_data.name == "mmluaux"
        and _compose_sweep("experiment=training_on_the_test_task/cpu_mini").finetune_data.name == "mcaux"
    )


def _compose_sweep(*overrides: str):
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        return compose("training_on_the_test_task_run", overrides=list(overrides), return_hydra_config=True)


def test_sweeps_compose():
    lr = _compose_sweep("experiment=training_on_the_test_task/lr_sweep", "learning_rate=6e-5")
    assert lr.hydra.sweeper.params.learning_rate.split(",") == ["6e-5", "2e-5", "6e-6", "2e-6", "6e-7"]
    assert lr.evaluation_folder == "lr_sweep/6e-05/mmluaux" and lr.stage == "e3"
    paper = _compose_sweep("experiment=training_on_the_test_task/paper", "hydra/launcher=slurm")
    assert "SlurmLauncher" in paper.hydra.launcher._target_ and paper.hydra.launcher.gpus_per_node == 1


# App. B.2: < 10B on one GPU, 10B-30B on one 8-GPU node under ZeRO-3, > 30B on two nodes.
SIZE_CLASSES = {
    "paper": ((0, 10), 1, 1, None),
    "paper_1node": ((10, 30), 8, 1, "conf/accelerate/zero3_1node.yaml"),
    "paper_2nodes": ((30, 1000), 8, 2, "conf/accelerate/zero3_2nodes.yaml"),
}


def test_the_paper_sweep_sends_each_model_where_it_fits():
    from testtask.lm.models import ModelRegistry

    registry = ModelRegistry.load()
    seen, names = [], set()
    for experiment, ((low, high), gpus, nodes, accelerate) in SIZE_CLASSES.items():
        cfg = _compose_sweep(f"experiment=training_on_the_test_task/{experiment}")
        launcher = cfg.hydra.launcher
        assert "SlurmLauncher" in launcher._target_
        assert (launcher.gpus_per_node, launcher.nodes, launcher.tasks_per_node) == (gpus, nodes, 1)
        assert cfg.distributed.accelerate_config == accelerate
        if accelerate:  # one process per GPU of the job, started by the runner under accelerate
            assert cfg.distributed.num_processes == gpus * nodes and cfg.distributed.num_machines == nodes
        models = cfg.hydra.sweeper.params.model.split(",")
        assert all(low <= registry.get(m).params_b < high for m in models), experiment
        assert cfg.hydra.sweeper.params.stage == "base,e3"
        assert cfg.hydra.sweeper.params.finetune_data == "mmluaux,gsm8kaux"
        seen += models
        names.add(launcher.name)
    assert len(seen) == len(set(seen)) == 52
    assert set(seen) == {n for n in registry.names("base") if registry.get(n).hf_repo}
    assert len(names) == 3 and "main" not in names  # SLURM job names say which class
    assert all(n.startswith("training_on_the_test_task") for n in names)


def test_accelerate_commands_for_one_and_two_nodes(tmp_path):
    from testtask.paths import repo_root
    from testtask.training_on_the_test_task.runner import main as runner

    job = tmp_path / "job.yaml"
    one = runner.accelerate_command(_typed("experiment=training_on_the_test_task/paper_1node"), job, env={})
    assert one[1:4] == ["-m", "accelerate.commands.launch", "--config_file"]
    assert one[4] == str(repo_root() / "conf" / "accelerate" / "zero3_1node.yaml")
    assert one[one.index("--num_processes") + 1] == "8" and "--machine_rank" not in one
    assert one[-5:] == ["-m", "testtask.runners", "training-on-the-test-task", "--train-job", str(job)]
    env = {"SLURM_NODEID": "1", "SLURM_JOB_NODELIST": "gpu[012-013]"}
    two = runner.accelerate_command(_typed("experiment=training_on_the_test_task/paper_2nodes"), job, env=env)
    flags = dict(zip(two[3:-5:2], two[4:-5:2], strict=True))
    assert flags["--num_processes"] == "16" and flags["--num_machines"] == "2"
    assert flags["--machine_rank"] == "1" and flags["--main_process_ip"] == "gpu012"
    assert flags["--config_file"].endswith("zero3_2nodes.yaml")
    cfg = _typed("experiment=training_on_the_test_task/paper_1node")
    assert runner.distributed_launch_needed(cfg, env={})
    assert not runner.distributed_launch_needed(cfg, env={"WORLD_SIZE": "8"})  # already launched by hand
    assert not runner.distributed_launch_needed(_typed(), env={})


def test_accelerate_config_comments_name_keys_that_exist():
    """The comments of conf/accelerate/*.yaml name runner keys; each must exist in the composed config."""
    import re

    from testtask.paths import conf_dir

    cfg = _compose()
    for path in sorted((conf_dir() / "accelerate").glob("*.yaml")):
        comments = " ".join(line for line in path.read_text().splitlines() if line.lstrip().startswith("#"))
        keys = re.findall(r"\b((?:recipe|distributed|finetune)\.[a-z_][a-z0-9_.]*[a-z0-9_])", comments)
        assert keys, path
        for key in keys:
            assert OmegaConf.select(cfg, key, default="<missing>") != "<missing>", f"{path.name}: {key}"


def test_remote_code_revision_and_model_args_come_from_the_registry():
    """trust_remote_code per registry entry (off unless it says so; `authors` = theirs: all but falcon);
    revision and model_args passed to lm-eval; lm-eval-only args (parallelize) only there."""
    from testtask.training_on_the_test_task.runner import main as runner

    def remote(*overrides):
        cfg = _typed(*overrides)
        return runner.trust_remote_code(cfg, runner.model_source(cfg)[0])

    assert remote("model=baichuan-7b") and remote("model=skywork-13b") and remote("model=internlm2-base-20b")
    assert not remote("model=pythia-70m") and not remote("model=falcon-7b")
    assert not remote("model=tiny", "model_path=/some/folder")  # outside the registry: off
    assert remote("model=pythia-70m", "trust_remote_code=authors")  # the authors: every model ...
    assert not remote("model=falcon-7b", "trust_remote_code=authors")  # ... except falcon
    assert remote("model=pythia-70m", "trust_remote_code=true")
    with pytest.raises(ValueError, match="expected true, false or authors"):
        remote("model=pythia-70m", "trust_remote_code=maybe")

    args = runner.eval_model_args(_typed("model=pythia-70m", "add_bos_token=false"), "EleutherAI/pythia-70m")
    assert args == {"trust_remote_code": False, "add_bos_token": False}  # nothing pinned, nothing extra
    cfg = _typed(
        "model=llama-2-70b",
        "add_bos_token=false",
        "revision=0123abc",
        "model_args={attn_implementation: sdpa}",
    )
    assert runner.load_kwargs(cfg) == {"revision": "0123abc", "attn_implementation": "sdpa"}
    assert runner.eval_model_args(cfg, "meta-llama/Llama-2-70b-hf") == {
        "trust_remote_code": False,
        "add_bos_token": False,
        "revision": "0123abc",
        "attn_implementation": "sdpa",
        "parallelize": True,  # the registry's eval_model_args (the authors' evaluation of this model)
    }
    pinned = _compose("model=pythia-70m")
    pinned.models.base["pythia-70m"].revision = "feedbeef"
    assert runner.load_kwargs(settings_of(pinned)) == {"revision": "feedbeef"}
    pinned.model_path = "/a/local/copy"  # the registry's pin is for its hf_repo, not for another path
    assert runner.load_kwargs(settings_of(pinned)) == {}
    with pytest.raises(ValueError, match="revision = 'main': expected a commit hash"):
        runner.load_kwargs(_typed("model=pythia-70m", "revision=main"))


def test_training_gets_the_remote_code_flag_and_the_loading_arguments(monkeypatch, tmp_path):
    from testtask.lm import finetune
    from testtask.lm.finetune import FinetuneResult
    from testtask.training_on_the_test_task.runner import main as runner

    seen = []

    def fake(path, texts, work, recipe, *, model_kwargs=None, **kw):
        seen.append((path, kw["trust_remote_code"], model_kwargs))
        return FinetuneResult(work, 1, [(1, 1.0)], [])

    monkeypatch.setattr(finetune, "finetune", fake)
    examples = [("q", " a")]
    cfg = _typed("model=baichuan-7b", "stage=e1", f"checkpoints_dir={tmp_path}", "revision=0123abc")
    runner.train_stage(cfg, "e1", "baichuan-inc/Baichuan-7B", 7e9, "cpu", examples)
    assert seen[-1] == ("baichuan-inc/Baichuan-7B", True, {"revision": "0123abc"})
    runner.train_stage(
        _typed("model=pythia-70m", f"checkpoints_dir={tmp_path}"), "e1", "p", 7e7, "cpu", examples
    )
    assert seen[-1] == ("p", False, None)  # nothing to pass: finetune's signature is not asked
    # A finetune() that cannot take them fails loudly instead of loading another revision.
    monkeypatch.setattr(finetune, "finetune", lambda path, texts, work, recipe, *, trust_remote_code, parameters,
                        learning_rate, device, seed, lora, adapter: None)  # fmt: skip
    with pytest.raises(ValueError, match="model_kwargs"):
        runner.train_stage(cfg, "e1", "baichuan-inc/Baichuan-7B", 7e9, "cpu", examples)


def test_a_distributed_job_trains_under_accelerate_then_evaluates_once(setup, monkeypatch):
    """With distributed.accelerate_config the job writes its config, starts `accelerate launch ... --train-job`
    (here run in-process in place of the 8 processes) and evaluates the result itself; other nodes only train."""
    from testtask.lm import finetune
    from testtask.training_on_the_test_task.runner import main as runner

    root, local, train, model = setup
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("SLURM_NODEID", raising=False)
    launched, finished_before = [], []
    real = finetune.finetune

    def watch(path, texts, work, *args, **kwargs):
        finished_before.append((Path(work) / "finished.json").is_file())
        return real(path, texts, work, *args, **kwargs)

    def fake_launch(command):
        launched.append(command)
        assert command[-2] == "--train-job"
        runner.train_job(command[-1])  # what every accelerate process runs

    monkeypatch.setattr(finetune, "finetune", watch)
    monkeypatch.setattr(runner, "_launch", fake_launch)
    cfg = _config(
        root,
        local,
        train,
        model,
        "stage=e1",
        "recipe.save_steps=[]",
        "distributed.accelerate_config=conf/accelerate/zero3_1node.yaml",
        "distributed.num_processes=8",
        f"checkpoints_dir={root / 'checkpoints-distributed'}",
        f"results_dir={root / 'results-distributed'}",
    )
    out = run(cfg)
    assert len(launched) == 1 and "--num_processes" in launched[0]
    job = Path(launched[0][-1])
    assert job.is_file() and OmegaConf.load(job).stage == "e1"
    assert finished_before == [
        False,
        True,
    ]  # trained once (the launched processes); the job found it finished
    assert out["finetune"]["steps"] == 4 and Path(out["files"]["arc_challenge_mc"]).is_file()
    # A second node of the job trains (its accelerate processes) and leaves the evaluation to the first.
    monkeypatch.setenv("SLURM_NODEID", "1")
    monkeypatch.setattr(runner, "_launch", launched.append)
    assert run(cfg) == {"model": "tiny", "stage": "e1", "evaluated": False, "node": 1}


def test_main_dispatches_the_train_job_entry(monkeypatch):
    """`python -m testtask.runners training-on-the-test-task --train-job <job>` (what accelerate launch starts)
    reaches the runner's train_job, not Hydra."""
    from testtask import runners
    from testtask.training_on_the_test_task.runner import main as runner

    calls = []
    monkeypatch.setattr(runner, "train_job", calls.append)
    runners.main("training-on-the-test-task", ["--train-job", "/x/job.yaml"])
    assert calls == ["/x/job.yaml"]


def test_cpu_mini_preset_composes():
    cfg = _compose_sweep("experiment=training_on_the_test_task/cpu_mini")
    assert cfg.hydra.sweeper.params.stage == "base,e1"
    assert cfg.finetune_data.name == "mcaux" and cfg.lora.enabled and cfg.num_fewshot == 0
    assert len(cfg.benchmarks) == 12 and set(cfg.local_data) == set(cfg.benchmarks)
    assert cfg.results_dir == "results/training-on-the-test-task/cpu-mini"
    assert cfg.model_path == "assets/models/smollm2-135m"


def test_fewshot_counts_and_leaderboard_v2_layout():
    from testtask.training_on_the_test_task.runner.main import fewshot, stage_folder

    cfg = _typed("benchmarks=[mmlu,arc_challenge,hellaswag,gsm8k,winogrande]")
    assert fewshot(cfg) == {"mmlu": 5, "arc_challenge": 25, "hellaswag": 10, "gsm8k": 5}
    assert fewshot(_typed("num_fewshot=0")) == 0
    v2 = _typed("experiment=training_on_the_test_task/leaderboard_v2", "stage=e3")
    assert stage_folder(v2) == "new_evals/mmluaux" and "leaderboard_mmlu_pro_four" in v2.benchmarks
    assert stage_folder(_typed("experiment=training_on_the_test_task/leaderboard_v2", "stage=base")) == (
        "new_evals/base"
    )


def test_lora_checkpoints_are_evaluated_with_their_own_adapter(tmp_path, monkeypatch):
    """With LoRA, lm-eval loads the base model plus each checkpoint's adapter (not the final one for all)."""
    from testtask.lm import evaluation, finetune
    from testtask.lm.finetune import FinetuneResult
    from testtask.training_on_the_test_task import task_data

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
    base = tmp_path / "base"  # a folder that exists (a missing one stops the job before it loads anything)
    base.mkdir()
    cfg = _compose(
        "model=tiny",
        f"model_path={base}",
        "parameters=1000000",
        "stage=e1",
        "evaluate_checkpoints=true",
        "lora.enabled=true",
        "add_bos_token=false",  # the empty base folder has no config to read the model type from
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
    flags = {"trust_remote_code": False, "add_bos_token": False}  # outside the registry: no remote code
    assert calls == [
        (str(base), "intermediate/mmluaux/evals/tiny/step_2", {**flags, "peft": str(work / "checkpoint-2")}),
        (str(base), "intermediate/mmluaux/evals/tiny/step_4", {**flags, "peft": str(work / "checkpoint-4")}),
        (str(base), "e1/mmluaux", {**flags, "peft": str(work / "final")}),
    ]


@pytest.mark.slow
def test_a_real_two_process_accelerate_launch_from_the_job(setup, tmp_path, monkeypatch):
    """The job's real `accelerate launch` on CPU: two torchrun processes (gloo) run `--train-job`, each with half
    the per-step batch (2 x 1 x 2 = 4), then the job evaluates the finished model once."""
    import socket

    root, local, train, model = setup
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("SLURM_NODEID", raising=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    accelerate = tmp_path / "cpu2.yaml"
    accelerate.write_text(
        "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nuse_cpu: true\nnum_machines: 1\n"
        "num_processes: 2\nmachine_rank: 0\nmixed_precision: 'no'\nrdzv_backend: static\nsame_network: true\n"
    )
    cfg = _config(
        root,
        local,
        train,
        model,
        "stage=e1",
        "recipe.save_steps=[]",
        f"distributed.accelerate_config={accelerate}",
        "distributed.num_processes=2",
        f"distributed.main_process_port={port}",
        f"checkpoints_dir={tmp_path / 'checkpoints'}",
        f"results_dir={tmp_path / 'results'}",
    )
    out = run(cfg)
    record = json.loads((tmp_path / "checkpoints" / "mmluaux" / "tiny" / "e1" / "finished.json").read_text())
    assert record["steps"] == 4 and out["finetune"]["steps"] == 4
    if "batch" in record:  # finetune records its batch arithmetic
        assert record["batch"]["world_size"] == 2 and record["batch"]["effective"] == 4
    assert Path(out["files"]["arc_challenge_mc"]).is_file()


def test_a_base_job_whose_model_another_job_is_evaluating_leaves_at_once(setup, tmp_path):
    """The paper's sweep starts a base job per fine-tuning set; in a SLURM array two may start together. The
    second, finding the first's lock held (here by another process), evaluates nothing; once the lock is free a
    base job evaluates."""
    import subprocess
    import sys

    root, local, train, model = setup
    results = tmp_path / "results"
    lock = results / "evaluations" / "base" / ".tiny.base.lock"
    lock.parent.mkdir(parents=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time; h = open(sys.argv[1], 'a'); fcntl.flock(h, fcntl.LOCK_EX); "
            "print('held', flush=True); time.sleep(60)",
            str(lock),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        skipped = run(_config(root, local, train, model, "stage=base", f"results_dir={results}"))
    finally:
        holder.kill()
        holder.wait()
    assert skipped["files"] == {} and skipped["evaluated_by"] == "another job"
    assert sorted(p.name for p in lock.parent.iterdir()) == [lock.name]  # no result file written
    done = run(_config(root, local, train, model, "stage=base", f"results_dir={results}"))
    assert done["files"]["arc_challenge_mc"] == str(lock.parent / "tiny-arc_challenge_mc.json")
