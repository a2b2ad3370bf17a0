"""The training-on-the-test-task runner (started by `testtask.runners`): fine-tune then evaluate (lm-eval), as the authors' code did
(socialfoundations/training-on-the-test-task@c357810); `protocol=paper_text` gives the
paper's text where it differs (docs/protocols/training-on-the-test-task.md).

Stages: base (no training), e1 / e2 / e3 (1, 2, 3 epochs), e1+2 (the e1 model trained 2 more epochs with a fresh
schedule). Stages in `emergence_stages` (e3) also save the finetune data's emergence checkpoints and evaluate them.

Loading: the model registry (conf/training_on_the_test_task/models/paper.yaml) says per model whether it needs
remote code (`trust_remote_code`, off unless the entry says so), which Hub commit to load (`revision`) and any extra
from_pretrained / lm-eval arguments (`model_args`, `eval_model_args`); the run config can override each.

Several GPUs: with `distributed.accelerate_config` set (the paper sweep's >= 10B classes), the job runs the
fine-tuning as `accelerate launch --config_file <it> -m testtask.runners training-on-the-test-task --train-job
<job.yaml>` (ZeRO-3, one process per GPU, on every node of the job), then evaluates in its own process on the first
node. Launched by hand under `accelerate launch` instead, the whole runner runs in every process.

python experiments/training_on_the_test_task/run.py model=pythia-1.4b stage=e3 finetune_data=gsm8kaux
python experiments/training_on_the_test_task/run.py -m model=pythia-410m,pythia-1b stage=base,e3 hydra/launcher=slurm_1gpu
python experiments/training_on_the_test_task/run.py experiment=training_on_the_test_task/paper_1node   # 8 GPUs, ZeRO-3
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import inspect
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from testtask import runners
from testtask.io import file_lock
from testtask.lm.local_folders import check_local_folders
from testtask.lm.settings import Recipe
from testtask.paths import repo_root, resolve
from testtask.training_on_the_test_task.runner.settings import (
    BASE,
    USER_FILES,
    Emergence,
    RemoteCode,
    Settings,
    Suite,
)

log = logging.getLogger("testtask.tott_runner")
PAPER = "training-on-the-test-task"

__all__ = ["USER_FILES", "run", "settings_of", "train_job"]


def settings_of(cfg: DictConfig) -> Settings:
    """The runner's typed settings of a composed config (own models merged in first)."""
    return runners.settings_of(PAPER, cfg)


_FIXED_REGISTRY: Any = None  # set by fixed_registry()


@contextlib.contextmanager
def fixed_registry(registry: Any) -> Iterator[None]:
    """Within the block, read models from `registry` instead of rebuilding it from each config's `models` (the
    plan evaluates hundreds of job configs composed from one registry)."""
    global _FIXED_REGISTRY
    previous, _FIXED_REGISTRY = _FIXED_REGISTRY, registry
    try:
        yield
    finally:
        _FIXED_REGISTRY = previous


def registry_entry(settings: Settings) -> Any:
    """The registry's ModelInfo of `settings.model`, or None for a model outside the registry."""
    from testtask.lm.models import ModelRegistry

    registry = _FIXED_REGISTRY
    if registry is None:
        registry = ModelRegistry.from_models(settings.models)
    return registry.get(settings.model) if settings.model in registry else None


def model_source(settings: Settings) -> tuple[str, float]:
    """What to load (local path or Hub id) and the parameter count that picks the learning rate."""
    from testtask.errors import SettingUnusable
    from testtask.lm.models import ModelRegistry

    info = registry_entry(settings)
    if info is None and not settings.model_path:
        names = (_FIXED_REGISTRY or ModelRegistry.from_models(settings.models)).names()
        close = difflib.get_close_matches(str(settings.model), names, n=1)
        raise SettingUnusable(
            "model",
            settings.model,
            "not a model of the registry (the config's `models`, and the user folder's models.yaml), and no "
            "model_path is given",
            (f"did you mean {close[0]}? " if close else "")
            + "name a registered model, or give model_path=<a local folder or Hub id>",
        )
    path = settings.model_path or info.hf_repo
    if not path:
        raise SettingUnusable(
            "model_path",
            None,
            f"the registry has no hf_repo for model {settings.model!r} (llama-1 has none)",
            "pass model_path=<a conversion>",
        )
    # a model outside the registry without `parameters`: counted as small (the size rule's small rate)
    parameters = float(info.params_b) * 1e9 if info else float(settings.parameters or 0)
    return str(path), parameters


def learning_rate(settings: Settings) -> float | None:
    """An explicit `learning_rate` (the B.3 sweep), else the model's override, else None (the size rule)."""
    if settings.learning_rate is not None:
        return float(settings.learning_rate)
    overrides = settings.recipe.learning_rate_overrides or {}
    return float(overrides[settings.model]) if settings.model in overrides else None


def stage_folder(settings: Settings) -> str:
    """Where below `evaluations/` the results go: base/, <stage>/<finetune>/, or an explicit folder (lr_sweep)."""
    if settings.evaluation_folder:
        return settings.evaluation_folder
    name = settings.finetune_data.name
    if settings.suite == Suite.v2:  # the authors' layout for Leaderboard v2 runs (after e3 only)
        return "new_evals/base" if settings.stage == BASE else f"new_evals/{name}"
    return "base" if settings.stage == BASE else f"{settings.stage}/{name}"


def fewshot(settings: Settings) -> int | dict[str, int] | None:
    """One count for all tasks (`num_fewshot`), else the leaderboard v1 counts of the tasks evaluated."""
    if settings.num_fewshot is not None:
        return settings.num_fewshot
    table = settings.fewshot_by_task
    chosen = {b: table[b] for b in settings.benchmarks if b in table}
    return chosen or None


def trust_remote_code(settings: Settings, path: str) -> bool:
    """Whether to run the repository's own code (tokenizer, model). `trust_remote_code`: null (default) = the
    registry entry's flag, off unless the entry says so (and off for models outside the registry); true/false
    force it; `authors` = the authors' rule, true unless the model's key or path names one of
    `trust_remote_code_except` (true except falcon, jobs_eval.py:30-31; train.py:29,36 loads falcon natively)."""
    choice = settings.trust_remote_code
    if choice is None:
        info = registry_entry(settings)
        return bool(info is not None and info.trust_remote_code)
    if choice == RemoteCode.authors:
        names = f"{settings.model} {path}".lower()
        return not any(x.lower() in names for x in settings.trust_remote_code_except)
    return bool(choice)


def load_kwargs(settings: Settings) -> dict[str, Any]:
    """from_pretrained keyword arguments of the model to load (training and lm-eval), besides trust_remote_code:
    `revision` (the run's, else the registry entry's when its hf_repo is loaded; never a branch name: the
    settings' and the registry's checks) and `model_args` (the entry's, then the run's)."""
    info = registry_entry(settings)
    from_registry = info is not None and not settings.model_path
    revision = settings.revision or (info.revision if from_registry else None)
    args = {**(info.model_args if info is not None else {}), **(settings.model_args or {})}
    return {**({"revision": str(revision)} if revision else {}), **args}


def add_bos_token(settings: Settings, path: str, remote: bool) -> bool:
    """`add_bos_token`, or null: the authors' lm-eval fork's rule, BOS only for the model types listed in
    `add_bos_token_model_types` (gemma; RicardoDominguez/lm-evaluation-harness@sft huggingface.py:101,271-272)."""
    from testtask.lm.evaluation import model_type

    if settings.add_bos_token is not None:
        return settings.add_bos_token
    return model_type(path, trust_remote_code=remote) in set(settings.add_bos_token_model_types)


def eval_model_args(settings: Settings, path: str) -> dict[str, Any]:
    """lm-eval `hf` model_args besides `pretrained` (lm_eval.sh:8, jobs_eval.py:29-31): remote code, BOS, then the
    loading arguments (revision, model_args) and the lm-eval-only ones (the entry's and the run's eval_model_args,
    e.g. parallelize=True for the 70B model, as the authors' evaluations record)."""
    remote = trust_remote_code(settings, path)
    info = registry_entry(settings)
    extra = {**(info.eval_model_args if info is not None else {}), **(settings.eval_model_args or {})}
    return {
        "trust_remote_code": remote,
        "add_bos_token": add_bos_token(settings, path, remote),
        **load_kwargs(settings),
        **extra,
    }


def _for_model(args: dict[str, Any], model: str, base: str) -> dict[str, Any]:
    """The base model's lm-eval args for `model`: a fine-tuned folder (not the Hub base) takes no Hub revision."""
    return args if model == base else {k: v for k, v in args.items() if k != "revision"}


@dataclass(frozen=True)
class Trained:
    work: Path  # checkpoints_dir/<finetune>/<model>/<stage>
    result: Any  # FinetuneResult
    emergence: list[int]  # checkpoint steps of the emergence schedule


def stage_recipe(settings: Settings, stage: str) -> tuple[Recipe, Emergence | None]:
    """The recipe of a stage (its epochs; the emergence checkpoints when the stage is in `emergence_stages`)
    and the emergence settings that apply (None when none)."""
    recipe = dataclasses.replace(settings.recipe, epochs=settings.stage_epochs[stage])
    spec = settings.finetune_data.emergence
    if stage not in (settings.emergence_stages or []) or not spec:
        return recipe, None
    recipe = dataclasses.replace(
        recipe,
        save_steps=sorted({*(recipe.save_steps or []), *spec.steps}),
        save_every=spec.every or recipe.save_every,
    )
    return recipe, spec


def train_stage(
    settings: Settings, stage: str, path: str, parameters: float, device: str, examples: list
) -> Trained:
    """Fine-tune one stage. A stage in `stage_init` (e1+2: e1) first makes sure that stage is trained (a
    finished run is found, not redone), then starts from its final weights (or adapter) with a fresh optimizer
    and schedule, as the authors' README runs e1+2 (jobs_train.py --base_model_dir models/e1/)."""
    from testtask.lm.finetune import finetune
    from testtask.lm.recipe_rules import emergence_schedule

    work = resolve(settings.checkpoints_dir) / settings.finetune_data.name / settings.model / stage
    lora = settings.lora.enabled
    model, adapter = path, None
    init = settings.stage_init.get(stage)
    if init:
        previous = train_stage(settings, init, path, parameters, device, examples).work / "final"
        model, adapter = (path, previous) if lora else (str(previous), None)
    recipe, spec = stage_recipe(settings, stage)
    loading = _for_model(load_kwargs(settings), model, path)
    log.info(
        "fine-tuning %s (%s) on %d %s examples -> %s",
        model,
        stage,
        len(examples),
        settings.finetune_data.name,
        work,
    )
    result = finetune(
        model,
        examples,
        work,
        recipe,
        parameters=parameters,
        learning_rate=learning_rate(settings),
        device=device,
        seed=settings.seed,
        lora=settings.lora,
        trust_remote_code=trust_remote_code(settings, path),
        adapter=adapter,
        **_finetune_loading(finetune, loading),
    )
    steps = emergence_schedule(spec.steps, spec.every, result.steps) if spec else []
    return Trained(work, result, [s for s in steps if s in result.checkpoints])


def _finetune_loading(finetune: Any, loading: dict[str, Any]) -> dict[str, Any]:
    """`model_kwargs=` for finetune() when there is something to pass (revision, model_args) and it takes them."""
    if not loading:
        return {}
    params = inspect.signature(finetune).parameters
    if "model_kwargs" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return {"model_kwargs": loading}
    raise ValueError(
        f"this finetune() cannot take from_pretrained arguments {sorted(loading)} (no model_kwargs parameter): "
        "unset revision/model_args for training, or load a local snapshot with model_path=..."
    )


# --------------------------------------------------------------------------- several GPUs from one job


def distributed_launch_needed(settings: Settings, env: Any = None) -> bool:
    """True when this job should start the fine-tuning under `accelerate launch`: `distributed.accelerate_config`
    is set and this process is not already one of several (WORLD_SIZE unset or 1)."""
    env = os.environ if env is None else env
    return bool(settings.distributed.accelerate_config) and int(env.get("WORLD_SIZE", "1") or 1) == 1


def node_rank(env: Any = None) -> int:
    """This node's index in the SLURM job (SLURM_NODEID; 0 outside SLURM)."""
    env = os.environ if env is None else env
    return int(env.get("SLURM_NODEID", "0") or 0)


def main_process_ip(settings: Settings, env: Any = None) -> str:
    """`distributed.main_process_ip`, else the first host of the SLURM job (SLURM_JOB_NODELIST), else localhost."""
    env = os.environ if env is None else env
    if settings.distributed.main_process_ip:
        return settings.distributed.main_process_ip
    nodes = env.get("SLURM_JOB_NODELIST")
    if not nodes:
        return "127.0.0.1"
    from submitit.slurm.slurm import _parse_node_list

    return _parse_node_list(nodes)[0]


def accelerate_command(settings: Settings, job_file: Path, env: Any = None) -> list[str]:
    """`accelerate launch` of this runner's training entry (`--train-job`) with the job's distributed settings:
    all processes over all machines (a multiple of the machines: the settings' check), this node's rank, the
    first node as main process."""
    dist = settings.distributed
    processes, machines = dist.num_processes, dist.num_machines
    command = [sys.executable, "-m", "accelerate.commands.launch"]
    command += ["--config_file", str(resolve(dist.accelerate_config))]
    command += ["--num_processes", str(processes), "--num_machines", str(machines)]
    command += ["--main_process_port", str(dist.main_process_port)]
    if machines > 1:
        command += [
            "--machine_rank",
            str(node_rank(env)),
            "--main_process_ip",
            main_process_ip(settings, env),
        ]
    return [*command, *runners.command(PAPER, "--train-job", str(job_file))]


def launch_training(settings: Settings, config: DictConfig, stage: str) -> Path:
    """Write the job's resolved config (`config`, the composed config `settings` were read from) next to its
    checkpoints and run the stage's fine-tuning under `accelerate launch` (blocking; a failed launch fails the
    job). Returns the job file."""
    work = resolve(settings.checkpoints_dir) / settings.finetune_data.name / settings.model / stage
    work.mkdir(parents=True, exist_ok=True)
    job_file = work / f"accelerate-job-node{node_rank()}.yaml"
    job = OmegaConf.create(OmegaConf.to_container(config, resolve=True))
    job.stage = stage
    OmegaConf.save(job, job_file)
    command = accelerate_command(settings, job_file)
    log.info("training %s (%s) under accelerate: %s", settings.model, stage, " ".join(command))
    _launch(command)
    return job_file


def _launch(command: list[str]) -> None:
    """Run the launch command from the repository root (relative config paths); its failure fails the job."""
    env = {**os.environ, "TESTTASK_ROOT": str(repo_root())}
    subprocess.run(command, check=True, cwd=repo_root(), env=env)


def train_job(job_file: str | Path) -> Any:
    """The `--train-job` entry, run in every process that `accelerate launch` starts: fine-tune the stage of the
    saved job config (finetune() skips work a finished run already did)."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    settings = settings_of(OmegaConf.load(job_file))
    path, parameters = model_source(settings)
    from testtask.lm.finetune import leave_process_group
    from testtask.lm.hf import pick_device

    try:
        return train_stage(
            settings,
            settings.stage,
            path,
            parameters,
            pick_device(settings.device),
            training_examples(settings),
        )
    finally:
        leave_process_group()


def training_examples(settings: Settings) -> list:
    """(prompt, completion) pairs of the configured finetune data (filter and shuffle from its config)."""
    from testtask.training_on_the_test_task.task_data import build_texts

    data = settings.finetune_data
    return build_texts(data.sources, max_chars=data.max_chars, shuffle_seed=data.shuffle_seed)


def run(cfg: DictConfig) -> dict[str, Any]:
    # own models join the registry, then every setting is read, typed, before anything is loaded or written
    settings = settings_of(cfg)
    from testtask.lm.evaluation import evaluate
    from testtask.lm.hf import pick_device

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    device = pick_device(settings.device)
    path, parameters = model_source(settings)
    # before a job loads anything (a Hub id would fail on the repository's name); the command line's check too
    check_local_folders(settings.local_folders())
    results = resolve(settings.results_dir)
    base_args = eval_model_args(settings, path)
    eval_kwargs = {
        "results_dir": results,
        "model_name": settings.model,
        "num_fewshot": fewshot(settings),
        "limit": settings.limit,
        "batch_size": settings.batch_size,
        "device": device,
        "local_data": {k: resolve(v) for k, v in settings.local_data.items()},
        "model_args": base_args,
        "task_variants": dict(settings.task_variants),
        "overwrite": settings.overwrite_evaluations,
    }
    out: dict[str, Any] = {"model": settings.model, "stage": settings.stage}
    if settings.stage == BASE:
        # The paper's sweep has a base job per fine-tuning set, which a SLURM array may start at once: the first
        # evaluates, one started meanwhile leaves at once (a later one finds the result files and skips them).
        lock = results / "evaluations" / stage_folder(settings) / f".{settings.model}.base.lock"
        with file_lock(lock, wait=False) as held:
            if not held:
                log.info(
                    "%s: another job is evaluating the base model (%s); nothing to do here",
                    settings.model,
                    lock,
                )
                return {**out, "files": {}, "evaluated_by": "another job"}
            files = evaluate(path, list(settings.benchmarks), stage=stage_folder(settings), **eval_kwargs)
        return {**out, "files": {k: str(v) for k, v in files.items()}}
    if distributed_launch_needed(settings):
        launch_training(settings, cfg, settings.stage)
        if node_rank() != 0:  # the other nodes only train; the first node evaluates
            return {**out, "evaluated": False, "node": node_rank()}
    trained = train_stage(settings, settings.stage, path, parameters, device, training_examples(settings))
    result = trained.result
    out["finetune"] = {"steps": result.steps, "first_loss": result.first_loss, "last_loss": result.last_loss}

    def evaluate_saved(checkpoint: str, benchmarks: list[str], stage: str, **overrides: Any) -> Any:
        folder = trained.work / checkpoint  # LoRA: the base model with the folder's adapter, else its weights
        model, extra = (path, {"peft": str(folder)}) if settings.lora.enabled else (str(folder), {})
        # The weights are those of this training run: its fingerprint tells them from a retrained folder.
        own = {
            "model_args": {**_for_model(base_args, model, path), **extra},
            "model_fingerprint": f"{result.fingerprint}/{checkpoint}",
        }
        return evaluate(model, benchmarks, stage=stage, **{**eval_kwargs, **own, **overrides})

    folder = f"intermediate/{settings.finetune_data.name}/evals/{settings.model}"
    spec = settings.finetune_data.emergence
    for step in trained.emergence:  # the authors' emergence evaluations (train.py:96-107,158-177)
        evaluate_saved(
            f"checkpoint-{step}", list(spec.benchmarks), f"{folder}/step_{step}", num_fewshot=spec.num_fewshot
        )
    if settings.evaluate_checkpoints:
        wanted = settings.evaluate_steps
        for step in [s for s in result.checkpoints if wanted is None or s in wanted]:
            evaluate_saved(f"checkpoint-{step}", list(settings.benchmarks), f"{folder}/step_{step}")
    files = evaluate_saved("final", list(settings.benchmarks), stage_folder(settings))
    return {**out, "files": {k: str(v) for k, v in files.items()}}
