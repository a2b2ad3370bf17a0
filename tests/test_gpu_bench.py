"""`make gpu-bench` (python -m testtask.gpu_bench): the runners' real steps on random models of the published
architectures, timed per step, at tiny sizes on the CPU here (the same code a GPU runs at the papers' sizes); a
failing step is recorded beside the others; the training-on-the-test-task plan takes its throughput from a GPU
bench file and says so."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from tests.conftest import REPO
from testtask.gpu_bench import cli
from testtask.gpu_bench.settings import load_settings
from testtask.gpu_bench.steps import STEPS
from testtask.schema import ConfigError
from testtask.training_on_the_test_task.runner import plan

TRAINING = {name for name in STEPS if name not in {"pot_zeroshot_scoring", "tott_lm_eval"}}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-bench")
    code = cli.main(["--cpu", "preset=tiny", "--out", str(out)])
    return code, json.loads((out / "cpu.json").read_text())


def test_every_step_kind_runs_at_tiny_sizes_and_records_its_rates(tiny):
    code, record = tiny
    assert code == 0
    assert record["complete"] and record["device"] == "cpu" and record["preset"] == "tiny"
    assert [s["name"] for s in record["steps"]] == list(STEPS)
    assert record["summary"] == {"passed": len(STEPS), "failed": 0, "skipped": 0}
    assert record["versions"]["torch"] and record["git"]["commit"]
    assert record["settings"]["steps"] == {"warmup": 1, "measured": 2}
    assert record["settings"]["architectures"]["llama-2-7b"]["hidden_size"] == 64  # tiny.yaml over paper.yaml
    for step in record["steps"]:
        n = step["numbers"]
        assert n["kind"] == ("training" if step["name"] in TRAINING else "inference"), step["name"]
        assert n["measured_steps"] == 2 and len(n["steps"]) == 2 and len(n["warmup"]) == 1
        positions = sum(s["positions"] for s in n["steps"])
        seconds = sum(s["seconds"] for s in n["steps"])
        assert n["positions_per_second"] == pytest.approx(positions / seconds, rel=1e-3)  # rounded to 1 µs
        assert 0 < n["tokens_per_second"] <= n["positions_per_second"]
        factor = 6 if n["kind"] == "training" else 2
        assert n["achieved_tflops"] == pytest.approx(
            factor * n["parameters"] * positions / seconds / 1e12, rel=1e-3
        )
        assert n["mfu"] is None  # no peak for a CPU
    by = {s["name"]: s["numbers"] for s in record["steps"]}
    # the runners' recipes ran: QLoRA NF4 with bitsandbytes' 8-bit AdamW, packing 8 texts per sequence
    assert (
        by["pot_zeroshot_padding"]["quantization"] == "nf4"
        and by["pot_zeroshot_padding"]["linear4bit_layers"]
    )
    assert by["pot_zeroshot_padding"]["optimizer"]["class"].startswith("bitsandbytes.")
    assert by["pot_zeroshot_packing"]["lm"]["packing"] and by["pot_zeroshot_packing"]["texts"] == 3 * 8
    assert (
        by["pot_zeroshot_padding"]["positions_per_second"] > by["pot_zeroshot_padding"]["tokens_per_second"]
    )
    assert (
        by["tott_finetune"]["batch"]["effective"] == 4 and by["tott_finetune"]["recipe"]["max_length"] == 32
    )
    # every optimizer step of the fine-tune is 4 examples padded to 32 positions
    assert all(s["positions"] == 4 * 32 for s in by["tott_finetune"]["steps"])


def test_a_failing_step_is_recorded_and_the_others_still_run(tmp_path):
    code = cli.main(
        [
            "--cpu",
            "preset=tiny",
            "--out",
            str(tmp_path),
            "--only",
            "tott_lm_eval,pot_fewshot_bert_classify",
            "training_on_the_test_task.lm_eval.benchmark=no_such_benchmark",
        ]
    )
    record = json.loads((tmp_path / "cpu.json").read_text())
    assert code == 1 and record["complete"]
    status = {s["name"]: s["status"] for s in record["steps"]}
    assert status == {"pot_fewshot_bert_classify": "passed", "tott_lm_eval": "failed"}
    failed = next(s for s in record["steps"] if s["name"] == "tott_lm_eval")
    assert "no_such_benchmark" in failed["error"]
    passed = next(s for s in record["steps"] if s["name"] == "pot_fewshot_bert_classify")
    assert passed["numbers"]["tokens_per_second"] > 0


def test_a_bad_setting_is_reported_before_anything_runs(capsys):
    assert cli.main(["--cpu", "preset=tiny", "steps.measured=0"]) == 2
    assert "gpu_bench.steps.measured = 0: expected a positive integer" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="pretrain_on_test.few_shot.bert = 'roberta'"):
        load_settings("paper", ["pretrain_on_test.few_shot.bert=roberta"])


def test_no_bench_setting_has_a_default_in_code():
    from testtask import schema
    from testtask.gpu_bench.settings import Settings

    assert schema.defaults_in_code(Settings) == []


def test_the_paper_preset_holds_the_published_architectures():
    settings = load_settings("paper")
    mistral, llama = settings.architectures["mistral-7b-v0.1"], settings.architectures["llama-2-7b"]
    assert (mistral["hidden_size"], mistral["intermediate_size"], mistral["num_key_value_heads"]) == (
        4096,
        14336,
        8,
    )
    assert (llama["hidden_size"], llama["intermediate_size"], llama["num_hidden_layers"]) == (4096, 11008, 32)
    assert settings.architectures["bert-base-uncased"]["num_hidden_layers"] == 12
    assert settings.architectures["gpt2"]["n_embd"] == 768
    # the configurations give the published models' parameter counts (built on the meta device: no memory)
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM

    published = {
        "mistral-7b-v0.1": 7_241_732_096,
        "llama-2-7b": 6_738_415_616,
        "bert-base-uncased": 109_514_298,  # with its masked-LM head, as the few-shot pretraining builds it
        "gpt2": 124_439_808,
    }
    for name, count in published.items():
        fields = dict(settings.architectures[name])
        model_type = fields.pop("model_type")
        auto = AutoModelForMaskedLM if model_type == "bert" else AutoModelForCausalLM
        with torch.device("meta"):
            model = auto.from_config(AutoConfig.for_model(model_type, **fields))
        assert sum(p.numel() for p in model.parameters()) == count, name
    from testtask.gpu_bench.steps import peak

    assert peak(settings, "NVIDIA H100 80GB HBM3")["tflops"] == 989.0
    assert peak(settings, "NVIDIA H100 PCIe")["tflops"] == 756.0
    assert peak(settings, "NVIDIA H200")["tflops"] == 989.0
    assert peak(settings, "cpu") is None


def test_the_makefile_target_runs_the_bench():
    text = (REPO / "Makefile").read_text()
    assert re.search(
        r"^gpu-bench: install ##.*\n\t\$\(BIN\)/python -m testtask\.gpu_bench \$\(ARGS\)$", text, re.M
    )


def _with_dir(folder, **changes):
    """The default plan settings reading GPU bench files from `folder` (`changes`: more of plan.measured)."""
    default = plan.default_settings()
    return dataclasses.replace(
        default, measured=dataclasses.replace(default.measured, dir=str(folder), **changes)
    )


def test_the_plan_takes_its_throughput_from_a_gpu_bench_file_and_says_which(tiny, tmp_path):
    _, record = tiny
    gpu = {**record, "device": "cuda", "gpu": {"name": "NVIDIA H100 80GB HBM3"}}
    by = {s["name"]: s["numbers"] for s in gpu["steps"]}
    (tmp_path / "nvidia-h100-80gb-hbm3.json").write_text(json.dumps(gpu))
    rates = plan.throughput(_with_dir(tmp_path))
    assert rates.train_tflops == by["tott_finetune"]["achieved_tflops"]
    assert rates.eval_tflops == by["tott_lm_eval"]["achieved_tflops"]
    assert "nvidia-h100-80gb-hbm3.json, step tott_finetune" in rates.train_source
    assert rates.eval_source.startswith("measured:") and "step tott_lm_eval" in rates.eval_source
    # the GPU-hours follow: 6·N·tokens at the measured rate
    settings = dataclasses.replace(_with_dir(tmp_path), models=["pythia-70m"])
    jobs, _ = plan.plan(settings)
    job = next(j for j in jobs if j.stage == "e3" and j.finetune == "mmluaux")
    hours = 6 * job.params_b * 1e9 * job.train_tokens / (rates.train_tflops * 1e12) / 3600
    assert job.train_gpu_hours == pytest.approx(hours)
    assert "training-on-the-test-task" not in rates.train_source and "measured: " in plan.report(
        jobs, settings
    )


def test_the_plan_assumes_its_throughput_without_a_gpu_file(tiny, tmp_path):
    _, record = tiny
    (tmp_path / "cpu.json").write_text(json.dumps(record))  # a CPU run says nothing about a GPU
    settings = _with_dir(tmp_path)
    rates = plan.throughput(settings)
    assert (rates.train_tflops, rates.eval_tflops) == (settings.train_tflops, settings.eval_tflops)
    assert rates.train_source.startswith("assumed: plan.train_tflops (no GPU bench file")
    off = plan.throughput(_with_dir(tmp_path, use=False))
    assert off.train_source == "assumed: plan.train_tflops (plan.measured.use is false)"
