"""`testtask action=plan paper=training-on-the-test-task` (`make plan-training-on-the-test-task`): every job of the
paper sweep with its resources and batch arithmetic, computed with the runner's and finetune's own functions, and a
GPU-hour estimate beside the paper's."""

from __future__ import annotations

import dataclasses

import pytest

from tests.training_on_the_test_task.conftest import REMOTE_CODE
from testtask.lm.models import ModelRegistry
from testtask.training_on_the_test_task.runner import plan


@pytest.fixture(scope="module")
def sweep():
    return plan.plan()


def test_every_sweep_model_is_planned_with_an_effective_batch_of_64(sweep):
    jobs, _ = sweep
    registry = ModelRegistry.load()
    assert {j.model for j in jobs} == {n for n in registry.names("base") if registry.get(n).hf_repo}
    assert len({j.model for j in jobs}) == 52
    trained = [j for j in jobs if j.stage != "base"]
    assert len(trained) == 52 * 2 and {j.finetune for j in trained} == {"mmluaux", "gsm8kaux"}
    assert all(j.effective_batch == 64 for j in trained)
    assert all(j.train_gpu_hours > 0 and j.eval_gpu_hours > 0 for j in trained)


def test_models_of_10b_and_more_train_under_zero3_on_8_or_16_gpus(sweep):
    jobs, _ = sweep
    for j in jobs:
        if j.params_b < 10:
            assert (j.gpus, j.nodes, j.ranks, j.zero3) == (1, 1, 1, False), j
        elif j.stage != "base":
            assert j.zero3 and j.ranks == j.gpus and (j.gpus, j.nodes) in {(8, 1), (16, 2)}, j
            assert (j.gpus == 16) == (j.params_b > 30)
            assert j.precision in {"bf16-mixed", "bf16", "fp32"} and j.learning_rate == 2e-6
    assert len({j.launcher for j in jobs}) == 3


def test_the_remote_code_models_say_so(sweep):
    jobs, _ = sweep
    remote = {j.model for j in jobs if j.remote_code}
    assert remote == REMOTE_CODE  # every planned model whose repository ships code, and no other
    assert not {"falcon-7b", "falcon-11b", "pythia-70m", "llama-2-70b", "qwen2-7b"} & remote


def test_the_report_has_a_line_per_job_and_the_papers_totals(sweep):
    jobs, settings = sweep
    text = plan.report(jobs, settings)
    lines = text.splitlines()
    for j in jobs:
        assert any(line.split()[:3] == [j.model, j.stage, j.finetune or "—"] for line in lines), j
    assert "4x16x1=64" in text and "4x2x8=64" in text and "4x1x16=64" in text
    assert "10,000 H100 hours of fine-tuning and 400 of evaluation" in text
    assert "effective batch 64" in text


def _settings(**changes):
    """The default plan settings (typed, frozen) with `changes` (checked against the schema again), at the assumed
    throughput (a committed GPU bench file would otherwise replace train_tflops)."""
    default = plan.default_settings()
    assumed = dataclasses.replace(default.measured, use=False)
    return dataclasses.replace(default, **{"measured": assumed, **changes})


def test_overrides_change_the_arithmetic_not_the_effective_batch():
    models = ["pythia-70m", "llama-2-70b"]
    runner = ["recipe.per_device_batch_size=2"]
    jobs, _ = plan.plan(_settings(models=models, runner_overrides=runner, train_tflops=600))
    trained = {j.model: j for j in jobs if j.stage == "e3" and j.finetune == "mmluaux"}
    assert (trained["pythia-70m"].per_device, trained["pythia-70m"].accumulation) == (2, 32)
    assert (trained["llama-2-70b"].accumulation, trained["llama-2-70b"].ranks) == (2, 16)
    assert all(j.effective_batch == 64 for j in jobs if j.stage != "base")
    default = {
        j.model: j
        for j in plan.plan(_settings(models=models, runner_overrides=runner))[0]
        if j.stage == "e3" and j.finetune == "mmluaux"
    }
    assert trained["pythia-70m"].train_gpu_hours == pytest.approx(default["pythia-70m"].train_gpu_hours / 2)
    # 6·N·tokens: 3 epochs of ceil(99,842 / 64) steps of 64 examples of 600 tokens (padded) at 600 TFLOP/s
    tokens = 3 * 1561 * 64 * 600
    assert trained["pythia-70m"].train_tokens == tokens
    assert trained["pythia-70m"].train_gpu_hours == pytest.approx(6 * 0.07e9 * tokens / 600e12 / 3600)


def test_the_plan_action_prints_the_report_with_the_configs_settings(tmp_path, capsys):
    """`testtask action=plan paper=training-on-the-test-task` with `training_on_the_test_task.plan.*` overrides,
    runner overrides among them, prints what `plan.report` gives for the same settings."""
    from testtask.pipeline import compose, run

    keys = "training_on_the_test_task.plan"
    cfg = compose(
        [
            "action=plan",
            "paper=training-on-the-test-task",
            f"data.dest={tmp_path / 'published'}",
            f"figures_dir={tmp_path / 'figures'}",
            f"{keys}.models=[pythia-70m,llama-2-70b]",
            f"{keys}.train_tflops=600",
            f"{keys}.measured.use=false",
            f"{keys}.runner_overrides=['recipe.per_device_batch_size=2']",
        ]
    )
    text = run(cfg)
    out = capsys.readouterr().out
    assert out.rstrip("\n") == text
    assert "pythia-70m" in out and "llama-2-70b" in out and "qwen2-7b" not in out
    assert "training 600 TFLOP/s" in out and "2x32x1=64" in out and "2x2x16=64" in out
    jobs, settings = plan.plan(
        _settings(
            models=["pythia-70m", "llama-2-70b"],
            train_tflops=600,
            runner_overrides=["recipe.per_device_batch_size=2"],
        )
    )
    assert text == plan.report(jobs, settings)


def test_a_per_device_batch_a_launcher_cannot_divide_names_the_model_and_the_setting():
    from testtask.errors import SettingUnusable

    runner = ["recipe.per_device_batch_size=8"]  # 64 / (8 x 16) for llama-2-70b's 16 training processes
    with pytest.raises(SettingUnusable) as err:
        plan.plan(_settings(models=["pythia-70m", "llama-2-70b"], runner_overrides=runner))
    message = str(err.value)
    assert message.startswith(
        "training_on_the_test_task.plan.runner_overrides = ['recipe.per_device_batch_size=8']"
    )
    assert "llama-2-70b" in message and "16 training processes" in message and "divides 64 / 16" in message


def test_an_assumed_rate_beside_a_measured_one_says_it_is_not_used(tmp_path):
    """With a GPU bench file the plan uses its measured rate; a `plan.train_tflops` given beside it is named as
    unused (it once changed nothing without a word)."""
    import json

    bench = tmp_path / "gpu-bench"
    bench.mkdir()
    step = {"name": "tott_finetune", "status": "passed", "numbers": {"achieved_tflops": 400.0}}
    (bench / "gpu.json").write_text(json.dumps({"device": "cuda", "gpu": {"name": "GPU"}, "steps": [step]}))
    settings = _settings(train_tflops=123)
    measured = dataclasses.replace(settings.measured, use=True, dir=str(bench), file=None)
    rates = plan.throughput(dataclasses.replace(settings, measured=measured))
    assert rates.train_tflops == 400.0
    assert "plan.train_tflops = 123 is not used (plan.measured.use=false uses it)" in rates.train_source
