"""The experiment runners read their configs through typed schemas (`<paper>/runner/settings.py`, the shared
fine-tuning recipe and LoRA in `testtask/lm/settings.py`): every key declared once, every bad value refused with one
line naming the key, before anything is loaded or written.

The hostile-user findings, each reproduced through the runner's Hydra entry (`main`, as `python experiments/<paper>/
run.py` runs it): the pretrain-on-test runner with `n=-5` failed inside numpy after writing `cell.yaml`, and with
`repetitions=-3` exited 0 saying all -3 repetitions were done. Then: every key of every composed runner config
(every experiment preset and its sweep, every `lm=` and `finetune_data=` option, with and without
`protocol=paper_text`) is typed and passes, no schema field has a value in code, and the relations between keys
hold.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from testtask.paths import conf_dir
from testtask.schema import ConfigError, defaults_in_code, leaves, plain

RUNNERS = {  # experiment folder -> (entry config, paper key)
    "pretrain_on_test": ("pretrain_on_test_run", "pretrain-on-test"),
    "training_on_the_test_task": ("training_on_the_test_task_run", "training-on-the-test-task"),
    "train_before_test": ("train_before_test_run", "train-before-test"),
}


def compose(runner: str, *overrides: str, hydra_config: bool = False):
    """The runner's composed config (`hydra_config`: Hydra's node included, for a preset's sweep)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = hydra_compose(RUNNERS[runner][0], overrides=list(overrides), return_hydra_config=hydra_config)
    OmegaConf.set_struct(cfg, False)
    return cfg


def settings(runner: str, cfg):
    from testtask.runners import settings_of

    return settings_of(RUNNERS[runner][1], cfg)


def violations(runner: str, cfg) -> list[str]:
    """The lines of the ConfigError reading `cfg`'s typed settings raises ([] when they read)."""
    try:
        settings(runner, cfg)
    except ConfigError as err:
        assert str(err).splitlines() == [f"invalid config: {v}" for v in err.violations]
        return err.violations
    return []


def run_entry(monkeypatch, paper: str, tmp_path: Path, *overrides: str) -> None:
    """The runner's Hydra entry as `python experiments/<paper>/run.py <overrides>` calls it, offline, with Hydra's
    own run folder and logging kept out of the way; HYDRA_FULL_ERROR lets the error through unchanged."""
    from testtask.runners import main

    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")  # the hubs' own switches: tests/conftest.py
    argv = [
        "run.py",
        *overrides,
        f"hydra.run.dir={tmp_path / 'hydra'}",
        "hydra.output_subdir=null",
        "hydra/job_logging=none",
        "hydra/hydra_logging=none",
    ]
    monkeypatch.setattr(sys, "argv", argv)
    main(paper)


def written(tmp_path: Path) -> list[str]:
    """Files and folders below tmp_path other than Hydra's own (empty) run folder."""
    return sorted(
        str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if not p.is_relative_to(tmp_path / "hydra")
    )


# --- the findings, through each runner's entry --------------------------------------------------------------

POT_LOCAL = ["datasets=pypi_assets", "dataset=sms_spam", "device=cpu"]  # a local file data set: no network


def test_pretrain_on_test_runner_rejects_n_minus_5_before_writing_cell_yaml(monkeypatch, tmp_path):
    """Finding: `n=-5` failed inside numpy after writing cell.yaml."""
    results = tmp_path / "results"
    with pytest.raises(ValueError, match=r"(?m)^invalid config: n = -5: expected a positive integer$"):
        run_entry(
            monkeypatch,
            "pretrain-on-test",
            tmp_path,
            *POT_LOCAL,
            "n=-5",
            f"results_dir={results}",
            f"assets_dir={tmp_path / 'assets'}",
        )
    assert not list(results.rglob("cell.yaml"))
    assert written(tmp_path) == []


def test_pretrain_on_test_runner_rejects_repetitions_minus_3_instead_of_exiting_0(monkeypatch, tmp_path):
    """Finding: `repetitions=-3` exited 0 with "all -3 repetitions done"."""
    with pytest.raises(
        ValueError, match=r"(?m)^invalid config: repetitions = -3: expected a positive integer"
    ):
        run_entry(
            monkeypatch,
            "pretrain-on-test",
            tmp_path,
            *POT_LOCAL,
            "repetitions=-3",
            f"results_dir={tmp_path / 'results'}",
            f"assets_dir={tmp_path / 'assets'}",
        )
    assert written(tmp_path) == []


def test_training_on_the_test_task_runner_rejects_bad_recipe_before_loading_anything(monkeypatch, tmp_path):
    def lines(*overrides: str) -> list[str]:
        with pytest.raises(ValueError) as err:
            run_entry(
                monkeypatch,
                "training-on-the-test-task",
                tmp_path,
                *overrides,
                f"results_dir={tmp_path / 'results'}",
                f"checkpoints_dir={tmp_path / 'checkpoints'}",
            )
        return str(err.value).splitlines()

    found = lines("recipe.warmup_ratio=1.5", "recipe.batch_size=0")
    assert "invalid config: recipe.warmup_ratio = 1.5: expected a number in [0, 1)" in found
    assert "invalid config: recipe.batch_size = 0: expected a positive integer" in found
    # relations between keys are read once every key has its type
    assert lines("stage=e9") == [
        "invalid config: stage = 'e9': expected base or one of stage_epochs (e1, e2, e3, e1+2)"
    ]
    assert written(tmp_path) == []


@pytest.mark.parametrize(
    ("paper", "overrides", "message"),
    [
        (
            "training-on-the-test-task",
            ["model=pythia-41m"],
            "model = 'pythia-41m': not a model of the registry (the config's `models`, and the user folder's "
            "models.yaml), and no model_path is given; did you mean pythia-410m?",
        ),
        (
            "training-on-the-test-task",
            ["model=student-x", "model_path=/nonexistent/model"],
            "model_path = '/nonexistent/model': no such folder",
        ),
        (
            "train-before-test",
            ["model=EleutherAI/pythia-70m-deduped", "model_path=/nonexistent/model", "benchmark=arc_easy"],
            "model_path = '/nonexistent/model': no such folder",
        ),
    ],
)
def test_an_unknown_model_or_a_missing_model_folder_is_one_line_before_anything_loads(
    monkeypatch, tmp_path, paper, overrides, message
):
    """Once a traceback about Hub repository names after the start-up (or `llama-1 has none`); now the setting,
    its value and what to give instead, and nothing written."""
    from testtask.errors import SettingUnusable

    places = [f"results_dir={tmp_path / 'results'}"]
    places += (
        [f"checkpoints_dir={tmp_path / 'checkpoints'}"]
        if paper == "training-on-the-test-task"
        else [f"work_dir={tmp_path / 'work'}"]
    )
    with pytest.raises(SettingUnusable) as err:
        run_entry(monkeypatch, paper, tmp_path, *overrides, *places)
    assert str(err.value).startswith(message), str(err.value)
    assert written(tmp_path) == []


@pytest.mark.parametrize("paper", ["training-on-the-test-task", "train-before-test"])
def test_a_missing_model_folder_is_reported_before_torch_is_imported(tmp_path, paper):
    """The command line's check finds the folder missing, so the error comes in about a second, not after the
    runner's imports (torch, transformers, lm-eval: ~4 s on 2 cores)."""
    extra = "benchmark=arc_easy" if paper == "train-before-test" else "stage=base"
    code = (
        "import sys\n"
        "from testtask.errors import SettingUnusable\n"
        "from testtask.runners import main\n"
        "try:\n"
        f"    main({paper!r}, ['model=student-x', 'model_path={tmp_path / 'absent'}', {extra!r}])\n"
        "except SettingUnusable as err:\n"
        "    print('torch' in sys.modules, err)\n"
    )
    env = {**os.environ, "HYDRA_FULL_ERROR": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.stdout.startswith(f"False model_path = '{tmp_path / 'absent'}': no such folder"), (
        done.stdout + done.stderr
    )


def test_the_tiny_presets_absent_fixture_names_the_command_that_writes_it(monkeypatch, tmp_path, capsys):
    """The tiny preset's model folder is written by an action: the error names it; `--cfg job` only prints the
    config, so it does not ask for the folder."""
    from testtask.errors import SettingUnusable
    from testtask.runners import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    args = ["experiment=train_before_test/tiny", f"tiny_root={tmp_path / 'absent'}"]
    with pytest.raises(SettingUnusable, match="first: testtask action=tiny-data paper=train-before-test$"):
        main("train-before-test", args)
    main("train-before-test", [*args, "--cfg", "job"])
    assert "task: tbt_tiny" in capsys.readouterr().out


def test_train_before_test_runner_rejects_bad_sweep_before_loading_anything(monkeypatch, tmp_path):
    with pytest.raises(ValueError) as err:
        run_entry(
            monkeypatch,
            "train-before-test",
            tmp_path,
            "epochs=0",
            "learning_rates=[]",
            "validation_fraction=1.2",
            f"results_dir={tmp_path / 'results'}",
            f"work_dir={tmp_path / 'work'}",
        )
    lines = str(err.value).splitlines()
    assert "invalid config: epochs = 0: expected a positive integer" in lines
    assert "invalid config: learning_rates = []: expected a non-empty list, each item a number > 0" in lines
    assert "invalid config: validation_fraction = 1.2: expected a number in (0, 1)" in lines
    assert written(tmp_path) == []


@pytest.mark.parametrize(
    ("paper", "overrides", "line"),
    [
        ("pretrain-on-test", ["n=-5", "m=0"], "m = 0: expected a positive integer"),
        # an experiment preset's sweep: checked as its first job
        (
            "pretrain-on-test",
            ["experiment=pretrain_on_test/cpu_mini", "stratification=random"],
            "stratification = 'random': expected one of balanced_floor, proportional",
        ),
        ("training-on-the-test-task", ["stage=e9"], "stage = 'e9': expected base or one of stage_epochs"),
        (
            "train-before-test",
            ["benchmark=arc_easyy"],
            "benchmark = 'arc_easyy': expected a key of benchmarks",
        ),
        ("train-before-test", ["epochz=3"], "epochz: unknown key (did you mean epochs?)"),
        # a misspelled experiment is an error naming the presets, never the default single job
        (
            "training-on-the-test-task",
            ["experiment=training_on_the_test_task/papr"],
            "experiment = 'training_on_the_test_task/papr': expected one of training_on_the_test_task/cpu_mini, ",
        ),
        # a cluster sweep with Hydra's own settings and a multirun flag: checked before anything is submitted
        (
            "training-on-the-test-task",
            [
                "-m",
                "experiment=training_on_the_test_task/paper",
                "hydra.launcher.partition=gpu",
                "recipe.precision=fp8",
            ],
            "recipe.precision = 'fp8': expected one of bf16, bf16-mixed, fp32",
        ),
        (
            "pretrain-on-test",
            ["experiment=pretrain_on_test/paper", "hydra/launcher=slurm", "stratification=foo"],
            "stratification = 'foo': expected one of balanced_floor, proportional",
        ),
        (
            "train-before-test",
            ["experiment=train_before_test/tiny", "epcohs=2"],
            "epcohs: unknown key (did you mean epochs?)",
        ),
        # a sweep on the command line: its first value checked like any override
        ("train-before-test", ["-m", "epochs=0,2"], "epochs = 0: expected a positive integer"),
    ],
)
def test_a_command_line_of_overrides_is_refused_before_hydra_starts(
    monkeypatch, tmp_path, paper, overrides, line
):
    """`python experiments/<paper>/run.py <overrides>`: the command line is checked before Hydra makes its run
    folder; every bad key at once, one line each."""
    from testtask.runners import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    with pytest.raises(ConfigError) as err:
        main(paper, overrides)
    assert any(v.startswith(line) for v in err.value.violations), err.value.violations
    assert list(tmp_path.iterdir()) == []  # no outputs/ nor multirun/ folder


def test_a_bad_override_is_one_error_line_without_traceback(monkeypatch, tmp_path, capsys):
    from testtask.runners import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    with pytest.raises(SystemExit) as exit_:
        main("pretrain-on-test", ["n=-5"])
    assert str(exit_.value) == "error: invalid config: n = -5: expected a positive integer"


# --- each setting's type, allowed values and relations --------------------------------------------------------


@pytest.mark.parametrize(
    ("runner", "overrides", "line"),
    [
        ("pretrain_on_test", ["m=0"], "m = 0: expected a positive integer"),
        ("pretrain_on_test", ["n=12.5"], "n = 12.5: expected a positive integer"),
        (
            "pretrain_on_test",
            ["repetitions=null", "n=501"],
            "repetitions = None: expected a count: repetitions_by_n has none for n = 501 (keys: n <= "
            "[100, 200, 500]); set repetitions",
        ),
        (
            "pretrain_on_test",
            ["task=speed"],
            "task = 'speed': expected one of cell, packing_speed, contamination",
        ),
        ("pretrain_on_test", ["dataset=ag_newz"], None),  # the message lists every dataset; checked below
        (
            "pretrain_on_test",
            ["stratification=random"],
            "stratification = 'random': expected one of balanced_floor, proportional",
        ),
        (
            "pretrain_on_test",
            ["m=3", "dataset=ag_news"],
            "m = 3: expected at least the 4 classes of dataset 'ag_news'",
        ),
        (
            "pretrain_on_test",
            ["lm.pretrain.batch_size=0"],
            "lm.pretrain.batch_size = 0: expected a positive integer",
        ),
        ("pretrain_on_test", ["lm.classify.epochs=0"], "lm.classify.epochs = 0: expected a number > 0"),
        (
            "pretrain_on_test",
            ["lm.pretrain.max_length=-1"],
            "lm.pretrain.max_length = -1: expected a positive integer",
        ),
        (
            "pretrain_on_test",
            ["lm.classify.learning_rate=0"],
            "lm.classify.learning_rate = 0: expected a number > 0",
        ),
        (
            "pretrain_on_test",
            ["lm.pretrain.warmup_ratio=1"],
            "lm.pretrain.warmup_ratio = 1: expected a number in [0, 1)",
        ),
        (
            "pretrain_on_test",
            ["lm.pretrain.gradient_accumulation_steps=0"],
            "lm.pretrain.gradient_accumulation_steps = 0: expected a positive integer",
        ),
        (
            "pretrain_on_test",
            ["lm.classify.precision=fp8"],
            "lm.classify.precision = 'fp8': expected one of fp32, bf16, fp16",
        ),
        (
            "pretrain_on_test",
            ["lm.pretrain.optim=adam"],
            "lm.pretrain.optim = 'adam': expected an optimizer name of transformers' OptimizerNames",
        ),
        (
            "pretrain_on_test",
            ["lm.classify.lr_scheduler=linearr"],
            "lm.classify.lr_scheduler = 'linearr': expected a scheduler name of transformers' SchedulerType",
        ),
        ("pretrain_on_test", ["lm.objective=mask"], "lm.objective = 'mask': expected one of mlm, clm"),
        (
            "pretrain_on_test",
            ["lm.protocol=one_shot"],
            "lm.protocol = 'one_shot': expected one of few_shot, zero_shot",
        ),
        (
            "pretrain_on_test",
            ["lm.per_task.enron_spam.classify.batch_size=0"],
            "lm.per_task.enron_spam.classify.batch_size = 0: expected a positive integer",
        ),
        (
            "pretrain_on_test",
            ["+lm.per_task.enron_spam.clasify.epochs=1"],
            "lm.per_task.enron_spam.clasify: unknown key (did you mean classify?); the keys here are pretrain, "
            "classify",
        ),
        (
            "pretrain_on_test",
            ["lm=mistral_qlora", "lm.quantization=nf8"],
            "lm.quantization = 'nf8': expected one of nf4, none",
        ),
        (
            "pretrain_on_test",
            ["lm=mistral_qlora", "lm.pack_size=0"],
            "lm.pack_size = 0: expected a positive integer",
        ),
        (
            "pretrain_on_test",
            ["lm=mistral_qlora", "lm.lora.dropout=1.0"],
            "lm.lora.dropout = 1.0: expected a number in [0, 1)",
        ),
        (
            "pretrain_on_test",
            ["lm=mistral_qlora", "lm.prediction=max_logprob"],
            "lm.prediction = 'max_logprob': expected one of mean_logprob, sum_logprob",
        ),
        (
            "pretrain_on_test",
            ["lm=mistral_qlora", "lm.prompt.query='### Text:'"],
            "lm.prompt.query = '### Text:': expected a template with {text}",
        ),
        (
            "pretrain_on_test",
            ["task=contamination", "lm=bert"],
            "lm.protocol = 'few_shot': expected zero_shot (task=contamination pretrains a causal LM on prompts)",
        ),
        (
            "pretrain_on_test",
            ["contamination.num_shards=1"],
            "contamination.num_shards = 1: expected an integer >= 2",
        ),
        ("pretrain_on_test", ["contamination.ddof=2"], "contamination.ddof = 2: expected 0 or 1"),
        ("pretrain_on_test", ["contamination.ddof=true"], "contamination.ddof = True: expected 0 or 1"),
        (
            "pretrain_on_test",
            ["+datasets.ag_news.key=x"],
            "datasets.ag_news.key = 'x': expected no key: an entry's key is its name ('ag_news')",
        ),
        (
            "pretrain_on_test",
            ["datasets.ag_news.revision=main"],
            "datasets.ag_news.revision = 'main': expected a commit hash (not a branch) or null",
        ),
        (
            "pretrain_on_test",
            ["dataset_defaults.format=xml"],
            "dataset_defaults.format = 'xml': expected one of csv, tsv, trec",
        ),
        (
            "pretrain_on_test",
            ["experiment=pretrain_on_test/overtraining", "cell=m7_n7"],
            "m: could not be resolved (InterpolationKeyError: Interpolation key 'overtraining_cells.m7_n7.m' "
            "not found)",
        ),
        (
            "training_on_the_test_task",
            ["recipe.epochs=0"],
            "recipe.epochs = 0: expected a positive integer (or null)",
        ),
        (
            "training_on_the_test_task",
            ["recipe.per_device_batch_size=-4"],
            "recipe.per_device_batch_size = -4: expected a positive integer",
        ),
        (
            "training_on_the_test_task",
            ["recipe.max_length=0"],
            "recipe.max_length = 0: expected a positive integer",
        ),
        (
            "training_on_the_test_task",
            ["learning_rate=-2e-5"],
            "learning_rate = -2e-05: expected a number > 0 (or null)",
        ),
        (
            "training_on_the_test_task",
            ["recipe.learning_rate_small=0"],
            "recipe.learning_rate_small = 0: expected a number > 0 (or null)",
        ),
        (
            "training_on_the_test_task",
            ["recipe.learning_rate_small=null", "recipe.learning_rate_large=null"],
            "recipe.learning_rate_small = None: expected a number > 0: with learning_rate null, the recipe's size "
            "rule picks the learning rate",
        ),
        (
            "training_on_the_test_task",
            ["recipe.learning_rate_large=null"],
            "recipe.learning_rate_small = 2e-05: expected a number > 0 together with recipe.learning_rate_large, "
            "or both null",
        ),
        (
            "training_on_the_test_task",
            ["recipe.large_model_threshold=null"],
            "recipe.large_model_threshold = None: expected a number > 0: recipe.learning_rate_small or "
            "recipe.precision_large applies from this size",
        ),
        (
            "training_on_the_test_task",
            ["recipe.gradient_checkpointing_threshold=null"],
            "recipe.gradient_checkpointing_threshold = None: expected a number > 0 while "
            "recipe.gradient_checkpointing is null (checkpointing from this size)",
        ),
        (
            "training_on_the_test_task",
            ["recipe.precision=fp16"],
            "recipe.precision = 'fp16': expected one of bf16, bf16-mixed, fp32",
        ),
        (
            "training_on_the_test_task",
            ["recipe.loss_on=prompt"],
            "recipe.loss_on = 'prompt': expected one of completion, all",
        ),
        (
            "training_on_the_test_task",
            ["recipe.truncation_side=middle"],
            "recipe.truncation_side = 'middle': expected one of left, right",
        ),
        (
            "training_on_the_test_task",
            ["recipe.optim=adamw"],
            "recipe.optim = 'adamw': expected an optimizer name of transformers' OptimizerNames",
        ),
        (
            "training_on_the_test_task",
            ["recipe.batch_size=62"],
            "recipe.batch_size = 62: expected a multiple of recipe.per_device_batch_size (4), so that gradient "
            "accumulation is a whole number of steps >= 1",
        ),
        (
            "training_on_the_test_task",
            ["recipe.batch_size=2"],
            "recipe.batch_size = 2: expected a multiple of recipe.per_device_batch_size (4), so that gradient "
            "accumulation is a whole number of steps >= 1",
        ),
        (
            "training_on_the_test_task",
            ["stage_epochs.e3=0"],
            "stage_epochs.e3 = 0: expected a positive integer",
        ),
        (
            "training_on_the_test_task",
            ["+stage_init.e2=e4"],
            "stage_init.e2 = 'e4': expected a key of stage_epochs (e1, e2, e3, e1+2)",
        ),
        ("training_on_the_test_task", ["suite=v3"], "suite = 'v3': expected one of v1, v2"),
        (
            "training_on_the_test_task",
            ["batch_size=automatic"],
            "batch_size = 'automatic': expected a positive integer, auto or auto:N",
        ),
        (
            "training_on_the_test_task",
            ["limit=1.5"],
            "limit = 1.5: expected a positive integer (documents) or a fraction in (0, 1) (or null)",
        ),
        (
            "training_on_the_test_task",
            ["trust_remote_code=always"],
            "trust_remote_code = 'always': expected true, false or authors (or null)",
        ),
        (
            "training_on_the_test_task",
            ["num_fewshot=-1"],
            "num_fewshot = -1: expected an integer >= 0 (or null)",
        ),
        (
            "training_on_the_test_task",
            ["revision=main"],
            "revision = 'main': expected a commit hash (not a branch) or null",
        ),
        (
            "training_on_the_test_task",
            ["finetune_data=gsm8kaux", "finetune_data.emergence.every=0"],
            "finetune_data.emergence.every = 0: expected a positive integer (or null)",
        ),
        (
            "training_on_the_test_task",
            ["finetune_data.sources=[{format:arc}]"],
            "finetune_data.sources[0] = {'format': 'arc'}: expected exactly one of path, json or disk",
        ),
        (
            "training_on_the_test_task",
            ["finetune_data.sources=[{format:arc,path:x}]"],
            "finetune_data.sources[0] = {'format': 'arc', 'path': 'x'}: expected a split beside the Hub dataset's "
            "path",
        ),
        (
            "training_on_the_test_task",
            ["finetune_data.sources=[{format:cloze,json:x}]"],
            "finetune_data.sources = [{'format': 'cloze', 'json': 'x'}]: expected a non-empty list, each item a "
            "mapping with some of the keys format, path, name, split, json, disk, limit",
        ),
        (
            "training_on_the_test_task",
            ["distributed.num_processes=0"],
            "distributed.num_processes = 0: expected a positive integer",
        ),
        (
            "training_on_the_test_task",
            ["distributed.num_processes=3", "distributed.num_machines=2"],
            "distributed.num_processes = 3: expected a multiple of distributed.num_machines (the same processes "
            "per node)",
        ),
        (
            "training_on_the_test_task",
            ["distributed.main_process_port=70000"],
            "distributed.main_process_port = 70000: expected a port in 1..65535",
        ),
        ("training_on_the_test_task", ["lora.alpha=0.5"], "lora.alpha = 0.5: expected a positive integer"),
        (
            "training_on_the_test_task",
            ["models.base.pythia-70m.params_b=-1"],
            "models.base.pythia-70m.params_b = -1: expected a number > 0",
        ),
        (
            "train_before_test",
            ["learning_rates=[2e-5,0]"],
            "learning_rates = [2e-05, 0]: expected a non-empty list, each item a number > 0",
        ),
        ("train_before_test", ["recipe.max_length=0"], "recipe.max_length = 0: expected a positive integer"),
        (
            "train_before_test",
            ["recipe.batch_size=12"],
            "recipe.batch_size = 12: expected a multiple of recipe.per_device_batch_size (8), so that gradient "
            "accumulation is a whole number of steps >= 1",
        ),
        (
            "train_before_test",
            ["recipe.warmup_ratio=-0.1"],
            "recipe.warmup_ratio = -0.1: expected a number in [0, 1)",
        ),
        (
            "train_before_test",
            ["recipe.precision=bf32"],
            "recipe.precision = 'bf32': expected one of bf16, bf16-mixed, fp32",
        ),
        (
            "train_before_test",
            ["recipe.epochs=3"],
            "recipe.epochs = 3: expected null: the runner sets it for each run",
        ),
        ("train_before_test", ["caps.train=0"], "caps.train = 0: expected a positive integer (or null)"),
        (
            "train_before_test",
            ["+caps.tests=10"],
            "caps.tests: unknown key (did you mean test?)",
        ),
        (
            "train_before_test",
            ["corpus_fractions=[0.8,0.2,0.1]"],
            "corpus_fractions = [0.8, 0.2, 0.1]: expected three fractions (train, validation, test) summing to at "
            "most 1",
        ),
        (
            "train_before_test",
            ["corpus_fractions=[0.8,0.1]"],
            "corpus_fractions = [0.8, 0.1]: expected three fractions (train, validation, test) summing to at most 1",
        ),
        (
            "train_before_test",
            ["split_rule=random"],
            "split_rule = 'random': expected one of authors, streams",
        ),
        (
            "train_before_test",
            ["keep_checkpoints=last"],
            "keep_checkpoints = 'last': expected one of all, best, none",
        ),
        (
            "train_before_test",
            ["chat_template=yes"],
            "chat_template = 'yes': expected one of auto, plain, chat, both",
        ),
        ("train_before_test", ["texts.format=raw"], "texts.format = 'raw': expected one of authors, lm_eval"),
        ("train_before_test", ["lora.r=0"], "lora.r = 0: expected a positive integer"),
        (
            "train_before_test",
            ["chat_recipe.add_eos=maybe"],
            "chat_recipe.add_eos = 'maybe': expected true or false",
        ),
        (
            "train_before_test",
            ["+chat_recipe.add_eoss=false"],
            "chat_recipe.add_eoss: unknown key (did you mean add_eos?)",
        ),
        (
            "train_before_test",
            ["benchmarks.medmcqa.validation=validation"],
            "benchmarks.medmcqa.validation = 'validation': expected a split other than benchmarks.medmcqa.test: null "
            "carves validation out of train (or validation_is_test: true selects on test documents, as the "
            "authors' code does for MedMCQA)",
        ),
        (
            "train_before_test",
            ["+benchmarks.arc_easy.validation_is_test=true"],
            "benchmarks.arc_easy.validation = 'validation': expected null: validation_is_test takes it from the "
            "test split",
        ),
        (
            "train_before_test",
            ["+benchmarks.wiki_2025.validation_is_test=true"],
            "benchmarks.wiki_2025.validation_is_test = True: expected false: a corpus is split 8:1:1",
        ),
        ("train_before_test", ["benchmark=arc_easyy"], None),
    ],
)
def test_runner_overrides_are_checked(runner, overrides, line):
    found = violations(runner, compose(runner, *overrides))
    if line is None:  # a key of another mapping: the message names the key and lists the known ones
        key = overrides[-1].split("=")[0]
        assert len(found) == 1 and found[0].startswith(f"{key} = ") and ": expected a key of " in found[0]
    elif line.endswith("?)"):  # an unknown key: the line goes on to list the keys there are
        assert len(found) == 1 and found[0].startswith(line), found
    else:
        assert line in found and all(
            f == line or "could not be resolved" in f or ": missing" in f for f in found
        ), found


def test_an_own_dataset_joins_the_registry_the_settings_read(tmp_path):
    """conf/user/datasets.example.yaml, copied to a user folder, is a dataset of the runner's typed settings, its
    keys not given taken from dataset_defaults."""
    import shutil

    user = tmp_path / "user"
    user.mkdir()
    shutil.copy(conf_dir() / "user" / "datasets.example.yaml", user / "datasets.yaml")
    typed = settings("pretrain_on_test", compose("pretrain_on_test", f"user_dir={user}", "dataset=mytopics"))
    spec = typed.spec
    assert (spec.key, spec.source, spec.format, spec.label) == ("mytopics", "file", "csv", "topic")
    assert spec.path == str(user / "data" / "mytopics.csv")  # relative to the file's folder
    assert (spec.split, spec.keep, spec.text_separator) == ("train", {}, "\n")  # dataset_defaults


# --- every composed config is typed, and passes -----------------------------------------------------------------


def _options(group: str) -> list[str]:
    return sorted(p.stem for p in (conf_dir() / group).glob("*.yaml"))


def _presets() -> list[tuple[str, str]]:
    return [
        (runner, path.stem)
        for runner in RUNNERS
        for path in sorted((conf_dir() / "experiment" / runner).glob("*.yaml"))
    ]


def _first_of_sweep(runner: str, overrides: list[str]) -> list[str]:
    from testtask.runners import _first_of_sweep

    return _first_of_sweep(overrides, RUNNERS[runner][0])


COMPOSED = [
    *(
        (runner, [f"experiment={runner}/{preset}", *protocol])
        for runner, preset in _presets()
        for protocol in ([], ["protocol=paper_text"])
    ),
    *(
        ("pretrain_on_test", [f"lm={lm}", *protocol])
        for lm in _options("lm")
        for protocol in ([], ["protocol=paper_text"])
    ),
    *(
        ("training_on_the_test_task", [f"finetune_data={d}", *protocol])
        for d in _options("finetune_data")
        for protocol in ([], ["protocol=paper_text"])
    ),
    *(
        (
            "train_before_test",
            ["train_before_test/benchmarks@benchmarks=tiny", "benchmark=tbt_tiny", *protocol],
        )
        for protocol in ([], ["protocol=paper_text"])
    ),
    *((runner, protocol) for runner in RUNNERS for protocol in ([], ["protocol=paper_text"])),
]


@pytest.mark.parametrize(
    ("runner", "overrides"), COMPOSED, ids=lambda x: x if isinstance(x, str) else " ".join(x)
)
def test_every_key_of_every_composed_runner_config_is_typed_and_passes(runner, overrides):
    """Every experiment preset (its sweep's first job), every `lm=` and `finetune_data=` option, with and without
    the paper_text preset: each leaf of the composed config has a declared type, and the config reads."""
    from testtask.pipeline import HYDRA
    from testtask.runners import _runner

    cfg = compose(runner, *overrides, *_first_of_sweep(runner, overrides))
    assert violations(runner, cfg) == []
    schema = _runner(RUNNERS[runner][1]).settings
    untyped = [
        key for key, declared in leaves(schema, plain(cfg, exclude=(HYDRA,))).items() if declared is None
    ]
    assert untyped == []


@pytest.mark.parametrize("runner", RUNNERS)
def test_no_setting_has_a_value_in_code(runner):
    from testtask.runners import _runner

    assert defaults_in_code(_runner(RUNNERS[runner][1]).settings) == []


def _swept(runner: str, base: list[str]):
    """(description, config) of the jobs a preset's sweep runs: every swept parameter at its first value, then
    each value of each parameter in turn with the others at their first (a config group such as `lm` is
    recomposed, a plain key set on a copy)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    params = compose(runner, *base, hydra_config=True).hydra.sweeper.params or {}
    values = {}
    for key, listed in params.items():
        override = parser.parse_override(f"{key}={listed}")
        values[key] = list(override.sweep_iterator()) if override.is_sweep_override() else [override.value()]
    groups = {k for k in values if (conf_dir() / k).is_dir()}

    def job(chosen: dict):
        cfg = compose(runner, *base, *(f"{k}={v}" for k, v in chosen.items() if k in groups))
        for k, v in chosen.items():
            if k not in groups:
                OmegaConf.update(cfg, k, v)
        return cfg

    first = {k: v[0] for k, v in values.items()}
    common = job(first)
    yield "first values", common
    for key, options in values.items():
        for value in options[1:]:
            if key in groups:
                yield f"{key}={value}", job({**first, key: value})
            else:  # set in place: each job is checked before the next is made
                OmegaConf.update(common, key, value)
                yield f"{key}={value}", common
        if key not in groups:
            OmegaConf.update(common, key, first[key])


@pytest.mark.parametrize(("runner", "preset"), _presets())
def test_every_experiment_preset_and_its_sweep_values_pass(runner, preset):
    bad = {}
    for what, cfg in _swept(runner, [f"experiment={runner}/{preset}"]):
        found = violations(runner, cfg)
        if found:
            bad[what] = found
    assert bad == {}


@pytest.mark.parametrize(
    "lm", [lm for lm in _options("lm") if compose("pretrain_on_test", f"lm={lm}").lm.protocol == "few_shot"]
)
def test_the_paper_text_classification_context_reaches_every_few_shot_lm(lm):
    """App. A's 256-token classification context is the few-shot LMs' (conf/pretrain_on_test_run/protocol/lm/):
    every few-shot LM gets it under protocol=paper_text; a zero-shot LM has no classification stage."""
    assert compose("pretrain_on_test", f"lm={lm}", "protocol=paper_text").lm.classify.max_length == 256
    assert compose("pretrain_on_test", f"lm={lm}").lm.classify.max_length != 256


# --- the shared recipe, its records, and what the schema modules import -------------------------------------------


def test_transformers_names_are_checked_without_importing_transformers_with_the_schemas():
    """The runners' schemas import nothing heavy: transformers is imported only when an optimizer or scheduler
    name is checked."""
    code = (
        "import sys\n"
        "import testtask.lm.settings, testtask.pretrain_on_test.runner.settings\n"
        "import testtask.training_on_the_test_task.runner.settings, testtask.train_before_test.runner.settings\n"
        "heavy = [m for m in ('transformers', 'torch') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# train-before-test's recipe before it stated the shared recipe's every key, in its order
TBT_RECORDED = [
    "batch_size", "per_device_batch_size", "max_length", "loss_on", "add_eos", "train_eos", "truncation_side",
    "pad_to_max_length", "attend_padding", "padding_side", "optim", "adam_beta1", "adam_beta2", "adam_epsilon",
    "weight_decay", "max_grad_norm", "lr_scheduler_type", "final_lr_fraction", "warmup_steps", "warmup_ratio",
    "precision", "gradient_checkpointing", "deepspeed", "logging_steps", "progress",
]  # fmt: skip


def test_train_before_test_records_keep_the_recipe_keys_they_had():
    """The shared recipe declares keys train-before-test leaves at null; its cell records (all_results.json's
    settings) and finetune's fingerprint keep the keys they had, in their order, so finished cells and runs still
    match."""
    from testtask.lm.settings import recipe_record
    from testtask.train_before_test.runner.settings import PER_RUN

    typed = settings("train_before_test", compose("train_before_test"))
    assert [k for k in recipe_record(typed.recipe) if k not in PER_RUN] == TBT_RECORDED


@pytest.mark.parametrize(
    "overrides", [[], ["protocol=paper_text"], ["experiment=training_on_the_test_task/cpu_mini"]]
)
def test_training_on_the_test_task_fingerprints_read_the_recipe_as_written(overrides):
    """training-on-the-test-task's recipe states every key; finetune's fingerprint reads it as the YAML writes it
    (the same keys, and the same JSON numbers), so finished runs still match."""
    import json

    from testtask.lm.settings import recipe_record

    cfg = compose(
        "training_on_the_test_task", *overrides, *_first_of_sweep("training_on_the_test_task", overrides)
    )
    written = OmegaConf.to_container(cfg.recipe, resolve=True)
    typed = settings("training_on_the_test_task", cfg)
    assert json.dumps(recipe_record(typed.recipe), sort_keys=True) == json.dumps(written, sort_keys=True)
