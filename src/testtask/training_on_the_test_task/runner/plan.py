"""`testtask action=plan paper=training-on-the-test-task` (`make plan-training-on-the-test-task`): the paper
sweep's jobs before any GPU hour is spent on them.

One line per (model, stage[, finetune data]) of the sweeps in `plan.experiments` (the paper sweep split by App.
B.2's size classes, conf/experiment/training_on_the_test_task/paper*.yaml), each composed exactly as the runner
composes it: parameters, the GPUs and nodes its SLURM launcher asks for, precision, per-device batch x gradient
accumulation x ranks = effective batch (the accumulation from `testtask.lm.recipe_rules.gradient_accumulation`,
which fine-tuning applies), peak learning rate, remote code, and an estimate of its GPU-hours. The plan's settings are
`training_on_the_test_task.plan` (conf/training_on_the_test_task/analysis.yaml); its `runner_overrides` are Hydra
overrides of the runner's config, each quoted as it holds `=`:

    testtask action=plan paper=training-on-the-test-task training_on_the_test_task.plan.measured.use=false
        training_on_the_test_task.plan.train_tflops=400
        "training_on_the_test_task.plan.runner_overrides=['recipe.per_device_batch_size=2']"   (one command)

The estimate is arithmetic, not a measurement: training FLOPs = 6 x N x tokens, with tokens = optimizer steps x 64
x tokens per example (`recipe.max_length` when every example is padded to it, as the authors' collator does, else
`plan.tokens_per_example`) and the example counts of `plan.finetune_examples`; evaluation FLOPs = 2 x N x the
tokens lm-eval forwards (`plan.eval_tokens` per benchmark, also for each emergence checkpoint the stage
evaluates); both divided by an achieved throughput per GPU: measured by `make gpu-bench` where its JSON
(`plan.measured.dir`, results/gpu-bench/<gpu>.json) has the step `plan.measured.train_step` / `eval_step`, else the
assumed `plan.train_tflops`, `plan.eval_tflops`; the report says which file and step, or that it assumed.
Activation checkpointing (>= 10B) adds about a third to the training FLOPs and is not counted.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from testtask.training_on_the_test_task.settings import Plan

ENTRY = "training_on_the_test_task_run"


@dataclass(frozen=True)
class Job:
    experiment: str
    launcher: str  # the SLURM job name (hydra.launcher.name)
    model: str
    stage: str
    params_b: float
    gpus: int  # GPUs the job holds (gpus_per_node x nodes)
    nodes: int
    remote_code: bool
    revision: str | None
    eval_tokens: float
    eval_gpu_hours: float
    timeout_min: int | None
    # the training's; the defaults are a base job's (evaluation only)
    finetune: str | None = None  # base is shared by both finetune datasets
    ranks: int = 1  # training processes (1 unless the job trains under accelerate)
    zero3: bool = False
    precision: str | None = None
    per_device: int | None = None
    accumulation: int | None = None
    learning_rate: float | None = None
    train_tokens: float = 0.0
    train_gpu_hours: float = 0.0

    @property
    def effective_batch(self) -> int | None:
        if self.per_device is None or self.accumulation is None:
            return None
        return self.per_device * self.accumulation * self.ranks

    @property
    def wall_hours(self) -> float:
        """Estimated job length: training spread over its ranks, then evaluation in one process."""
        return self.train_gpu_hours / self.ranks + self.eval_gpu_hours

    @property
    def held_gpu_hours(self) -> float:
        """GPU-hours the job reserves: its wall time times the GPUs it holds."""
        return self.wall_hours * self.gpus


@dataclass(frozen=True)
class Throughput:
    """Achieved TFLOP/s per GPU for training and for lm-eval, and where each number comes from."""

    train_tflops: float
    eval_tflops: float
    train_source: str
    eval_source: str


def _bench_files(settings: Plan) -> list[Any]:
    from pathlib import Path

    from testtask.errors import SettingUnusable
    from testtask.paths import resolve

    measured = settings.measured
    folder = resolve(measured.dir)
    if measured.file is not None:
        path = folder / measured.file
        if not path.is_file():
            raise SettingUnusable(
                "training_on_the_test_task.plan.measured.file",
                measured.file,
                f"no such file in {folder}",
                "run `make gpu-bench` on a GPU, or set it to null",
            )
        return [path]
    return sorted(Path(p) for p in folder.glob("*.json")) if folder.is_dir() else []


def _measured_step(settings: Plan, step: str) -> tuple[float, str] | None:
    """(achieved TFLOP/s, where from) of the first GPU bench file with a passed `step`, else None."""
    from testtask.paths import in_repo

    for path in _bench_files(settings):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if record.get("device") != "cuda":  # a CPU run (--cpu) says nothing about a GPU
            continue
        for entry in record.get("steps") or []:
            numbers = entry.get("numbers") or {}
            tflops = numbers.get("achieved_tflops")
            if entry.get("name") == step and entry.get("status") == "passed" and tflops and tflops > 0:
                gpu = (record.get("gpu") or {}).get("name", "?")
                mfu = numbers.get("mfu")
                return float(tflops), (
                    f"measured: {in_repo(path)}, step {step} ({gpu}, {numbers.get('architecture')} shape"
                    + (f" at {numbers['layers']} layers" if numbers.get("layers") else "")
                    + (f", MFU {mfu:.2f}" if mfu else "")
                    + f", {record.get('created', '?')}; applied to every model and size class)"
                )
    return None


def throughput(settings: Plan) -> Throughput:
    """The measured throughput of `settings.measured` where a GPU bench file has it, else the assumed one."""
    measured = settings.measured
    rates = {}
    for key, step in (("train", measured.train_step), ("eval", measured.eval_step)):
        why = f"no GPU bench file with a passed {step} step in {measured.file or measured.dir}"
        if not measured.use:
            why = "plan.measured.use is false"
        found = _measured_step(settings, step) if measured.use else None
        assumed = getattr(settings, f"{key}_tflops")
        if found is not None:  # an assumed rate given on the command line would otherwise pass unnoticed
            found = (
                found[0],
                f"{found[1]}; plan.{key}_tflops = {assumed:g} is not used (plan.measured.use=false uses it)",
            )
        rates[key] = found or (assumed, f"assumed: plan.{key}_tflops ({why})")
    return Throughput(rates["train"][0], rates["eval"][0], rates["train"][1], rates["eval"][1])


def compose(overrides: Sequence[str] = ()) -> DictConfig:
    """The runner's config with `overrides`, hydra node included (launcher, sweeper params)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.initialize import get_gh_backup, restore_gh_from_backup

    from testtask.paths import conf_dir

    # Inside the `testtask` command Hydra is initialised already (for conf/config.yaml): set it aside, compose the
    # runner's config as the runner would, and put it back.
    running = get_gh_backup()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
            cfg = hydra_compose(ENTRY, overrides=list(overrides), return_hydra_config=True)
    finally:
        if running is not None:
            restore_gh_from_backup(running)
    OmegaConf.set_struct(cfg, False)
    from testtask import user_files
    from testtask.training_on_the_test_task.runner.settings import USER_FILES

    user_files.apply(cfg, USER_FILES)  # the plan sees the user's own models as the runner does
    return cfg


def sweep_values(cfg: DictConfig, key: str) -> list[str]:
    """The values the experiment sweeps `key` over (hydra.sweeper.params), else the config's single value."""
    params = cfg.hydra.get("sweeper", {}).get("params") or {}
    if key in params:
        return [v.strip() for v in str(params[key]).split(",") if v.strip()]
    value = cfg.finetune_data.name if key == "finetune_data" else cfg.get(key)
    return [str(value)]


def _precision(recipe: Any, parameters: float) -> str:
    """What finetune trains in on a GPU (its own rule)."""
    from testtask.lm.recipe_rules import resolve_precision

    return str(resolve_precision(recipe, "cuda", parameters))


def default_settings() -> Plan:
    """The plan settings of conf/training_on_the_test_task/analysis.yaml (`training_on_the_test_task.plan`), checked
    against their schema."""
    from testtask.paths import conf_dir
    from testtask.schema import load

    path = conf_dir() / "training_on_the_test_task" / "analysis.yaml"
    return load(Plan, OmegaConf.load(path).plan, "training_on_the_test_task.plan")


def _tokens_per_example(settings: Plan, recipe: Any, finetune: str) -> float:
    table = settings.tokens_per_example
    if table is not None:
        return float(table[finetune] if isinstance(table, Mapping) else table)
    if recipe.pad_to_max_length:
        return float(recipe.max_length)
    raise ValueError(
        "recipe.pad_to_max_length is false: give plan.tokens_per_example (mean tokens per example, per dataset)"
    )


def _eval_tokens(settings: Plan, benchmarks: Sequence[str]) -> float:
    table = settings.eval_tokens
    missing = [b for b in benchmarks if b not in table]
    if missing:
        raise ValueError(f"plan.eval_tokens has no estimate for benchmark(s) {missing}")
    return sum(table[b] for b in benchmarks)


def job(
    cfg: DictConfig,
    settings: Plan,
    experiment: str,
    model: str,
    stage: str,
    finetune: str | None,
    run: Any = None,
    rates: Throughput | None = None,
) -> Job:
    """The plan line of one job (runner config `cfg`, its typed settings `run` when read already, plan
    `settings`, the throughput `rates` when found already), computed with the runner's own functions and
    the recipe rules fine-tuning applies (no torch: `testtask.lm.recipe_rules`)."""
    from testtask.lm import recipe_rules
    from testtask.training_on_the_test_task.runner import main as runner

    run = dataclasses.replace(runner.settings_of(cfg) if run is None else run, model=model, stage=stage)
    launcher = cfg.hydra.launcher
    nodes = int(launcher.get("nodes") or 1)
    gpus = int(launcher.get("gpus_per_node") or 0) * nodes
    path, n = runner.model_source(run)
    rates = throughput(settings) if rates is None else rates
    eval_tflops = rates.eval_tflops * 1e12
    evaluations = _eval_tokens(settings, list(run.benchmarks))
    common = {
        "experiment": experiment,
        "launcher": str(launcher.get("name") or ""),
        "model": model,
        "stage": stage,
        "params_b": n / 1e9,
        "gpus": gpus,
        "nodes": nodes,
        "remote_code": runner.trust_remote_code(run, path),
        "revision": runner.load_kwargs(run).get("revision"),
        "timeout_min": int(launcher.timeout_min) if launcher.get("timeout_min") else None,
    }
    if stage == "base":
        return Job(**common, eval_tokens=evaluations, eval_gpu_hours=2 * n * evaluations / eval_tflops / 3600)
    recipe, spec = runner.stage_recipe(run, stage)
    dist = run.distributed
    distributed = bool(dist.accelerate_config)
    ranks = dist.num_processes if distributed else 1
    if ranks > max(gpus, 1):
        raise ValueError(f"{experiment}: {ranks} training processes but the launcher holds {gpus} GPUs")
    per_device = recipe.per_device_batch_size
    batch = recipe.batch_size
    try:
        accumulation = recipe_rules.gradient_accumulation(batch, per_device, ranks)
    except ValueError as err:  # a per-device batch of the overrides that this model's launcher cannot divide
        from testtask.errors import SettingUnusable

        raise SettingUnusable(
            "training_on_the_test_task.plan.runner_overrides",
            list(settings.runner_overrides),
            f"{model} ({experiment}, {ranks} training processes): {err}",
            f"pick a recipe.per_device_batch_size that divides {batch} / {ranks}",
        ) from None
    zero3 = bool(recipe.deepspeed) or (
        distributed and "zero3" in str(dist.accelerate_config) and bool(recipe.zero3_config)
    )
    examples = settings.finetune_examples[finetune]
    steps = math.ceil(examples / batch) * recipe.epochs
    if recipe.max_steps:
        steps = min(steps, recipe.max_steps)
    tokens = steps * batch * _tokens_per_example(settings, recipe, finetune)
    train_hours = 6 * n * tokens / (rates.train_tflops * 1e12) / 3600
    if spec:  # the emergence checkpoints this stage saves and evaluates
        checkpoints = len(recipe_rules.emergence_schedule(spec.steps, spec.every, steps))
        evaluations += checkpoints * _eval_tokens(settings, list(spec.benchmarks))
    return Job(
        **common,
        finetune=finetune,
        ranks=ranks,
        zero3=zero3,
        precision=_precision(recipe, n),
        per_device=per_device,
        accumulation=accumulation,
        learning_rate=recipe_rules.peak_learning_rate(recipe, n, runner.learning_rate(run)),
        train_tokens=tokens,
        train_gpu_hours=train_hours,
        eval_tokens=evaluations,
        eval_gpu_hours=2 * n * evaluations / eval_tflops / 3600,
    )


def plan(settings: Plan | None = None) -> tuple[list[Job], Plan]:
    """Every job of the `settings.experiments` sweeps (base once per model), and the plan settings (None: those of
    conf/training_on_the_test_task/analysis.yaml; their `runner_overrides` apply to every runner config)."""
    from testtask.lm.models import ModelRegistry
    from testtask.training_on_the_test_task.runner.main import fixed_registry, settings_of

    settings = default_settings() if settings is None else settings
    overrides = list(settings.runner_overrides)
    wanted = set(settings.models) if settings.models else None
    jobs: list[Job] = []
    rates = throughput(settings)
    with fixed_registry(ModelRegistry.from_config(compose(overrides).models)):
        for experiment in settings.experiments:
            cfg = compose([f"experiment={experiment}", *overrides])
            for finetune in sweep_values(cfg, "finetune_data"):
                data = cfg
                if finetune != cfg.finetune_data.name:
                    data = compose([f"experiment={experiment}", f"finetune_data={finetune}", *overrides])
                typed = settings_of(data)  # read once; each job changes its model and stage
                for model in sweep_values(cfg, "model"):
                    if wanted is not None and model not in wanted:
                        continue
                    for stage in sweep_values(cfg, "stage"):
                        if stage == "base" and any(j.model == model and j.stage == "base" for j in jobs):
                            continue  # launched once per finetune dataset; the second run finds the files
                        ft = None if stage == "base" else finetune
                        jobs.append(job(data, settings, str(experiment), model, stage, ft, typed, rates))
    return jobs, settings


def _row(job: Job) -> list[str]:
    batch = (
        "—"
        if job.effective_batch is None
        else f"{job.per_device}x{job.accumulation}x{job.ranks}={job.effective_batch}"
    )
    wall = f"{job.wall_hours:.1f}"
    if job.timeout_min and job.wall_hours * 60 > job.timeout_min:
        wall += "!"
    return [
        job.model,
        job.stage,
        job.finetune or "—",
        f"{job.params_b:g}",
        f"{job.gpus} ({job.nodes})",
        "ZeRO-3" if job.zero3 else "—",
        job.precision or "—",
        batch,
        "—" if job.learning_rate is None else f"{job.learning_rate:.0e}",
        "yes" if job.remote_code else "no",
        f"{job.train_gpu_hours:.1f}",
        f"{job.eval_gpu_hours:.1f}",
        wall,
        job.launcher,
    ]


HEADER = [
    "model",
    "stage",
    "data",
    "N (B)",
    "GPUs (nodes)",
    "sharding",
    "precision",
    "batch: per-device x accum x ranks",
    "peak lr",
    "remote code",
    "train GPU-h",
    "eval GPU-h",
    "wall h",
    "SLURM job",
]


def report(jobs: Sequence[Job], settings: Plan, rates: Throughput | None = None) -> str:
    """The plan as text: the throughput and where it comes from, the assumptions (plan `settings`), one line per
    job, and the totals beside the paper's."""
    rates = throughput(settings) if rates is None else rates
    rows = [HEADER, *(_row(j) for j in jobs)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    lines = [
        "Training on the test task: the paper sweep by App. B.2 size class (estimates, not measurements)",
        f"  sweeps: {', '.join(str(e) for e in settings.experiments)}",
        f"  throughput per GPU: training {rates.train_tflops:.4g} TFLOP/s (6·N·tokens; {rates.train_source})",
        f"                      lm-eval {rates.eval_tflops:.4g} TFLOP/s (2·N·tokens; {rates.eval_source})",
        "  training tokens = steps x 64 x tokens per example (recipe.max_length when padded to it); examples: "
        + ", ".join(f"{k} {float(v):,.0f}" for k, v in settings.finetune_examples.items()),
        "",
    ]
    for i, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[k]) for k, cell in enumerate(row)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    train = sum(j.train_gpu_hours for j in jobs)
    evaluation = sum(j.eval_gpu_hours for j in jobs)
    held = sum(j.held_gpu_hours for j in jobs)
    trained = [j for j in jobs if j.effective_batch is not None]
    batches = sorted({j.effective_batch for j in trained})
    paper = settings.paper_gpu_hours
    over = [j for j in jobs if j.timeout_min and j.wall_hours * 60 > j.timeout_min]
    lines += [
        "",
        f"{len(jobs)} jobs ({len(trained)} fine-tuning, {len(jobs) - len(trained)} base evaluations; the sweeps "
        "launch base once per finetune dataset, and a second base task of a model exits at once: it finds the "
        "result files, or the first task's lock while that evaluates); "
        f"effective batch {', '.join(str(b) for b in batches)}",
        f"estimated GPU-hours: fine-tuning {train:,.0f}, evaluation {evaluation:,.0f} (compute at the throughput "
        f"above); held by the jobs (wall time x GPUs held) {held:,.0f}",
        f"the paper (all of its experiments: e1/e2/e3, learning-rate sweep, checkpoints): about "
        f"{float(paper.finetune):,.0f} H100 hours of fine-tuning and {float(paper.evaluation):,.0f} of evaluation",
    ]
    if over:
        lines.append(
            f"{len(over)} job(s) marked ! run longer than their launcher's timeout_min; they are requeued "
            "(max_num_timeout) and resume from their last checkpoint"
        )
    return "\n".join(lines)
