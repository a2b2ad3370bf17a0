"""Overrides are validated when the config is composed, before anything is written (issue 14, finding 6).

The hostile-user findings, each reproduced here: the pretrain-on-test runner with `n=-5` failed inside numpy after
writing `cell.yaml`, and with `repetitions=-3` exited 0 saying all -3 repetitions were done; the analysis CLI's
`sampler.draws=-10` gave an OverflowError, `sampler.chains=0` an AttributeError, and a bad
`pretrain_on_test.model.backend` was caught only at fit time. The runner findings are driven through each
runner's Hydra entry (`main`, as `python experiments/<paper>/run.py` runs it), so they fail on behaviour, not on
an import. Then: every experiment preset, protocol preset and LM / fine-tuning data option composes to a config
that passes (every value of a preset's sweep included), and the known sets of testtask.config_checks equal the
constants of the code that consumes them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from testtask.paths import conf_dir

RUNNERS = {  # experiment folder -> (entry config, check function, paper key for testtask.runners.main)
    "pretrain_on_test": (
        "pretrain_on_test_run",
        "check_pretrain_on_test_run",
        "pretrain-on-test",
    ),
    "training_on_the_test_task": (
        "training_on_the_test_task_run",
        "check_training_on_the_test_task_run",
        "training-on-the-test-task",
    ),
    "train_before_test": (
        "train_before_test_run",
        "check_train_before_test_run",
        "train-before-test",
    ),
}


def checks():
    """The module under test, imported per test: the runner-entry tests below must fail on today's behaviour,
    not on a missing module."""
    from testtask import config_checks

    return config_checks


def compose_cfg(config: str, *overrides: str, hydra_config: bool = False):
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        return compose(config, overrides=list(overrides), return_hydra_config=hydra_config)


def analysis(*overrides: str):
    from testtask.pipeline import compose as cli_compose

    return cli_compose(list(overrides))


def violations(fn_name: str, cfg) -> list[str]:
    """The lines of the ConfigError `fn_name` raises on `cfg` ([] when it passes)."""
    cc = checks()
    try:
        getattr(cc, fn_name)(cfg)
    except cc.ConfigError as err:
        assert str(err).splitlines() == [f"invalid config: {v}" for v in err.violations]
        return err.violations
    return []


def run_entry(monkeypatch, paper: str, tmp_path: Path, *overrides: str) -> None:
    """The runner's Hydra entry as `python experiments/<paper>/run.py <overrides>` calls it, offline, with Hydra's
    own run folder and logging kept out of the way; HYDRA_FULL_ERROR lets the error through unchanged."""
    from testtask.runners import main

    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(var, "1")
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


# --- the findings ---------------------------------------------------------------------------------------------

POT_LOCAL = ["datasets=pypi_assets", "dataset=sms_spam", "device=cpu"]  # a local file data set: no network


def test_pretrain_on_test_runner_rejects_n_minus_5_before_writing_cell_yaml(monkeypatch, tmp_path):
    """Finding: `n=-5` failed inside numpy after writing cell.yaml."""
    results = tmp_path / "results"
    with pytest.raises(ValueError, match=r"(?m)^invalid config: n = -5: expected a positive integer$"):
        run_entry(
            monkeypatch,
            RUNNERS["pretrain_on_test"][2],
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
    results = tmp_path / "results"
    with pytest.raises(
        ValueError, match=r"(?m)^invalid config: repetitions = -3: expected a positive integer"
    ):
        run_entry(
            monkeypatch,
            RUNNERS["pretrain_on_test"][2],
            tmp_path,
            *POT_LOCAL,
            "repetitions=-3",
            f"results_dir={results}",
            f"assets_dir={tmp_path / 'assets'}",
        )
    assert written(tmp_path) == []


def test_training_on_the_test_task_runner_rejects_bad_recipe_before_loading_anything(monkeypatch, tmp_path):
    with pytest.raises(ValueError) as err:
        run_entry(
            monkeypatch,
            RUNNERS["training_on_the_test_task"][2],
            tmp_path,
            "stage=e9",
            "recipe.warmup_ratio=1.5",
            "recipe.batch_size=0",
            f"results_dir={tmp_path / 'results'}",
            f"checkpoints_dir={tmp_path / 'checkpoints'}",
        )
    lines = str(err.value).splitlines()
    assert "invalid config: stage = 'e9': expected base or one of stage_epochs (e1, e2, e3, e1+2)" in lines
    assert "invalid config: recipe.warmup_ratio = 1.5: expected a number in [0, 1) (or null)" in lines
    assert "invalid config: recipe.batch_size = 0: expected a positive integer" in lines
    assert written(tmp_path) == []


def test_train_before_test_runner_rejects_bad_sweep_before_loading_anything(monkeypatch, tmp_path):
    with pytest.raises(ValueError) as err:
        run_entry(
            monkeypatch,
            RUNNERS["train_before_test"][2],
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


# --- the runners' settings -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("runner", "overrides", "line"),
    [
        ("pretrain_on_test", ["m=0"], "m = 0: expected a positive integer"),
        ("pretrain_on_test", ["n=12.5"], "n = 12.5: expected a positive integer"),
        (
            "pretrain_on_test",
            ["repetitions=null", "n=501"],
            "repetitions = None: repetitions_by_n has no count for n = 501 (keys: n <= [100, 200, 500]); set repetitions",
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
            ["lm.per_task.enron_spam.classify.batch_size=0"],
            "lm.per_task.enron_spam.classify.batch_size = 0: expected a positive integer",
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
        ("training_on_the_test_task", ["recipe.epochs=0"], "recipe.epochs = 0: expected a positive integer"),
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
            "recipe.learning_rate_small = 0: expected a number > 0",
        ),
        (
            "training_on_the_test_task",
            ["recipe.precision=fp16"],
            "recipe.precision = 'fp16': expected one of bf16, bf16-mixed, fp32 (or null)",
        ),
        (
            "training_on_the_test_task",
            ["recipe.batch_size=62"],
            "recipe.batch_size = 62: expected a multiple of recipe.per_device_batch_size (4), so that gradient accumulation is a whole number of steps >= 1",
        ),
        (
            "training_on_the_test_task",
            ["recipe.batch_size=2"],
            "recipe.batch_size = 2: expected a multiple of recipe.per_device_batch_size (4), so that gradient accumulation is a whole number of steps >= 1",
        ),
        (
            "training_on_the_test_task",
            ["stage_epochs.e3=0"],
            "stage_epochs.e3 = 0: expected a positive integer",
        ),
        ("training_on_the_test_task", ["suite=v3"], "suite = 'v3': expected one of v1, v2"),
        (
            "training_on_the_test_task",
            ["batch_size=automatic"],
            "batch_size = 'automatic': expected a positive integer, auto or auto:N",
        ),
        (
            "training_on_the_test_task",
            ["trust_remote_code=always"],
            "trust_remote_code = 'always': expected one of true, false, authors (or null)",
        ),
        (
            "training_on_the_test_task",
            ["num_fewshot=-1"],
            "num_fewshot = -1: expected an integer >= 0 (or null)",
        ),
        (
            "training_on_the_test_task",
            ["finetune_data=gsm8kaux", "finetune_data.emergence.every=0"],
            "finetune_data.emergence.every = 0: expected a positive integer (or null)",
        ),
        (
            "training_on_the_test_task",
            ["distributed.num_processes=0"],
            "distributed.num_processes = 0: expected a positive integer",
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
            "recipe.batch_size = 12: expected a multiple of recipe.per_device_batch_size (8), so that gradient accumulation is a whole number of steps >= 1",
        ),
        (
            "train_before_test",
            ["recipe.warmup_ratio=-0.1"],
            "recipe.warmup_ratio = -0.1: expected a number in [0, 1) (or null)",
        ),
        (
            "train_before_test",
            ["recipe.precision=bf32"],
            "recipe.precision = 'bf32': expected one of bf16, bf16-mixed, fp32 (or null)",
        ),
        ("train_before_test", ["caps.train=0"], "caps.train = 0: expected a positive integer (or null)"),
        (
            "train_before_test",
            ["corpus_fractions=[0.8,0.2,0.1]"],
            "corpus_fractions = [0.8, 0.2, 0.1]: expected three fractions (train, validation, test) summing to at most 1",
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
        ("train_before_test", ["lora.r=0"], "lora.r = 0: expected a positive integer"),
        ("train_before_test", ["benchmark=arc_easyy"], None),
    ],
)
def test_runner_overrides_are_checked(runner, overrides, line):
    config, fn, _ = RUNNERS[runner]
    found = violations(fn, compose_cfg(config, *overrides))
    if line is None:  # a key of another mapping: the message names the key and lists the known ones
        key = overrides[-1].split("=")[0]
        assert len(found) == 1 and found[0].startswith(f"{key} = ") and ": expected a key of " in found[0]
    else:
        assert found == [line]


def test_an_unresolvable_interpolation_is_reported_not_raised():
    cfg = compose_cfg("pretrain_on_test_run", "experiment=pretrain_on_test/overtraining", "cell=m7_n7")
    assert violations("check_pretrain_on_test_run", cfg) == [
        f"{k}: could not be resolved (InterpolationKeyError: Interpolation key 'overtraining_cells.m7_n7.{k}' not found)"
        for k in ("m", "n")
    ]


# --- every preset passes -------------------------------------------------------------------------------------


def _presets() -> list[tuple[str, str]]:
    return [
        (runner, path.stem)
        for runner in RUNNERS
        for path in sorted((conf_dir() / "experiment" / runner).glob("*.yaml"))
    ]


def _swept(config: str, base: list[str]):
    """(description, config) of the jobs a preset's sweep runs: every swept parameter at its first value, then
    each value of each parameter in turn with the others at their first (a config group such as `lm` is
    recomposed, a plain key set on a copy)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    params = compose_cfg(config, *base, hydra_config=True).hydra.sweeper.params or {}
    values = {}
    for key, listed in params.items():
        override = parser.parse_override(f"{key}={listed}")
        values[key] = list(override.sweep_iterator()) if override.is_sweep_override() else [override.value()]
    groups = {k for k in values if (conf_dir() / k).is_dir()}

    def job(chosen: dict):
        cfg = compose_cfg(config, *base, *(f"{k}={v}" for k, v in chosen.items() if k in groups))
        OmegaConf.set_struct(cfg, False)
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
    config, fn, _ = RUNNERS[runner]
    bad = {}
    for what, cfg in _swept(config, [f"experiment={runner}/{preset}"]):
        found = violations(fn, cfg)
        if found:
            bad[what] = found
    assert bad == {}


def _options(group: str) -> list[str]:
    return sorted(p.stem for p in (conf_dir() / group).glob("*.yaml"))


@pytest.mark.parametrize(
    ("runner", "override"),
    [
        *(("pretrain_on_test", f"lm={lm}") for lm in _options("lm")),
        *(("training_on_the_test_task", f"finetune_data={d}") for d in _options("finetune_data")),
        ("train_before_test", "train_before_test/benchmarks@benchmarks=tiny benchmark=tbt_tiny"),
        *((runner, f"protocol={runner}/{p}") for runner in RUNNERS for p in _options(f"protocol/{runner}")),
        *((runner, "experiment=null") for runner in RUNNERS),
    ],
)
def test_runner_defaults_and_options_pass(runner, override):
    config, fn, _ = RUNNERS[runner]
    overrides = [] if override == "experiment=null" else override.split()
    assert violations(fn, compose_cfg(config, *overrides)) == []


# --- the known sets are the code's ---------------------------------------------------------------------------


def test_known_sets_equal_the_constants_of_the_code_that_reads_them():
    from testtask.lm import finetune
    from testtask.pretrain_on_test.runner import training as pot_training
    from testtask.pretrain_on_test.runner import zeroshot
    from testtask.train_before_test.runner import cell as tbt_cell
    from testtask.train_before_test.runner import splits, texts

    cc = checks()
    pairs = {
        "POT_PRECISIONS": pot_training.PRECISIONS,
        "POT_PREDICTIONS": zeroshot.PREDICTIONS,
        "POT_SCORING": zeroshot.SCORING_TOKENIZATIONS,
        "FINETUNE_PRECISIONS": finetune.PRECISIONS,
        "TBT_TEXT_FORMATS": texts.FORMATS,
        "TBT_SPLIT_RULES": splits.RULES,
        "TBT_KEEP": tbt_cell.KEEP,
        "TBT_SETS": splits.SETS,
    }
    assert {k: tuple(getattr(cc, k)) for k in pairs} == {k: tuple(v) for k, v in pairs.items()}
