"""The GPU preflight's command line on a machine without CUDA: the refusal, the check list, the CPU subset's
JSON, a failing check recorded while the others run, and the 2-rank checks' comparison of the ranks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testtask.preflight import cli, registry, report
from testtask.preflight.checks import distributed
from testtask.preflight.registry import Check, Skip

REPO = Path(__file__).resolve().parents[1]
VERSIONS = ("torch", "transformers", "peft", "bitsandbytes", "lm_eval", "deepspeed")


def run_json(out: Path, *args: str) -> tuple[int, dict]:
    code = cli.main(["--cpu", "--out", str(out), *args])
    return code, json.loads((out / "cpu.json").read_text())


def by_name(data: dict) -> dict[str, dict]:
    return {c["name"]: c for c in data["checks"]}


def test_without_cuda_it_says_so_and_exits_2(tmp_path, monkeypatch, capsys):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert cli.main(["--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == cli.NO_CUDA
    assert "--cpu" in cli.NO_CUDA
    assert not list(tmp_path.iterdir())


def test_list_names_every_check_and_what_it_needs():
    """Through `python -m testtask.preflight` (the Makefile's command)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, "-m", "testtask.preflight", "--list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    names = list(registry.checks())
    for name in names:
        assert name in out
    for name in ("pot_zeroshot_padding", "pot_zeroshot_packing", "tott_finetune_bf16", "tott_lm_eval"):
        assert name in names
    assert "tbt_lora_cell" in names and "dist_tott_finetune" in names
    assert "needs 2 GPUs on CUDA (on the CPU: 2 gloo ranks)" in out and "needs a CUDA GPU" in out
    assert "CUDA only: paged optimizer states" in out
    assert len(out.strip().splitlines()) == len(names)


def test_cpu_subset_of_one_check_writes_the_json(tmp_path, capsys):
    code, data = run_json(tmp_path, "--only", "torch_device")
    assert code == 0
    assert data["complete"] is True and data["device"] == "cpu" and data["gpu"] is None
    assert data["selected"] == ["torch_device"] and data["all_checks"] is False
    assert [c["name"] for c in data["checks"]] == ["torch_device"]
    check = data["checks"][0]
    assert check["status"] == "passed" and check["seconds"] >= 0
    assert (
        check["numbers"]["device"] == "cpu" and check["numbers"]["loss_last"] < check["numbers"]["loss_first"]
    )
    assert set(VERSIONS) <= set(data["versions"]) and data["versions"]["torch"]
    assert data["summary"] == {"passed": 1, "failed": 0, "skipped": 0}
    assert data["total_seconds"] > 0 and "commit" in data["git"]
    lines = capsys.readouterr().out.splitlines()
    assert any("torch_device: started" in line for line in lines)
    assert any("torch_device: passed" in line for line in lines)


def test_a_failing_check_is_recorded_and_the_others_still_run(tmp_path, monkeypatch):
    def boom(ctx):
        print("some output before the failure")
        raise RuntimeError("boom from the test")

    def skip(ctx):
        raise Skip("not today")

    checks = registry.checks()
    injected = {
        "boom": Check("boom", boom, "raises"),
        "skipper": Check("skipper", skip, "skips itself"),
    }
    monkeypatch.setattr(registry, "REGISTRY", {**injected, **checks})  # first, so the others run after it
    code, data = run_json(tmp_path, "--only", "boom,skipper", "--only", "torch_device")
    assert code == 1
    assert [c["name"] for c in data["checks"]] == ["boom", "skipper", "torch_device"]
    outcome = by_name(data)
    assert outcome["boom"]["status"] == "failed"
    assert (
        "Traceback" in outcome["boom"]["error"]
        and "RuntimeError: boom from the test" in outcome["boom"]["error"]
    )
    assert "some output before the failure" in outcome["boom"]["output"]
    assert outcome["skipper"]["status"] == "skipped" and outcome["skipper"]["reason"] == "not today"
    assert outcome["torch_device"]["status"] == "passed"
    assert data["summary"] == {"passed": 1, "failed": 1, "skipped": 1}


# What only CUDA can show, each with its reason: the GPU's own bf16 kernels, paged optimizer memory, NCCL between
# GPUs, FlashAttention-2. Everything else runs under --cpu.
CUDA_ONLY = {
    ("cuda_bf16", registry.WHOLE),
    ("bitsandbytes_nf4", "paged optimizer states"),
    ("pot_zeroshot_padding", "paged optimizer states"),
    ("pot_zeroshot_packing", "paged optimizer states"),
    ("tott_finetune_bf16", "FlashAttention-2"),
    ("tott_finetune_bf16_mixed", "FlashAttention-2"),
    ("dist_tott_finetune", "NCCL on 2 GPUs"),
    ("dist_tbt_epochs", "NCCL on 2 GPUs"),
    ("zero3_tott_finetune", "NCCL between GPUs"),
}


def test_only_what_needs_cuda_itself_is_cuda_only(tmp_path):
    """The CPU run skips only the check that needs CUDA altogether; its JSON lists every check or part of a check
    that only CUDA can show, with the reason, whichever checks ran."""
    code, data = run_json(tmp_path, "--only", "cuda_bf16")
    assert code == 0
    outcome = by_name(data)["cuda_bf16"]
    assert outcome["status"] == "skipped" and outcome["reason"].startswith("needs a CUDA GPU")
    assert outcome["runs_on"] == "cuda-only"
    assert {(c["check"], c["part"]) for c in data["cuda_only"]} == CUDA_ONLY
    assert all(len(c["reason"]) > 40 for c in data["cuda_only"])
    # one check needs CUDA altogether; the two-rank, bf16 and bitsandbytes checks run on the CPU
    assert [n for n, item in registry.checks().items() if "cuda" in item.needs] == ["cuda_bf16"]


def test_a_check_that_needs_cuda_says_why():
    with pytest.raises(ValueError, match="gives the reason"):
        Check("gpu", lambda ctx: None, "a GPU check without its reason", needs=frozenset({"cuda"}))
    with pytest.raises(ValueError, match="needs its reason"):
        Check("part", lambda ctx: None, "a part without a reason", cuda_only={"paging": " "})


def test_two_rank_checks_need_two_gpus_only_on_cuda(tmp_path):
    from testtask.preflight.runner import Context, unmet_need

    dist = registry.checks()["dist_tbt_epochs"]
    assert unmet_need(dist, Context(device="cpu", work=tmp_path)) is None  # two gloo ranks
    assert unmet_need(dist, Context(device="cuda", work=tmp_path, gpus=1)).startswith("needs 2 GPUs")
    assert unmet_need(dist, Context(device="cuda", work=tmp_path, gpus=2)) is None


def test_bitsandbytes_nf4_round_trip_and_8bit_state_run_on_the_cpu(tmp_path):
    code, data = run_json(tmp_path, "--only", "bitsandbytes_nf4")
    outcome = by_name(data)["bitsandbytes_nf4"]
    assert code == 0, outcome.get("error")
    numbers = outcome["numbers"]
    assert (numbers["quant_type"], numbers["double_quant"], numbers["adamw8bit_state_dtype"]) == (
        "nf4",
        True,
        "uint8",
    )
    assert numbers["nf4_relative_error"] < 0.2 and numbers["paging_checked"] is False


@pytest.mark.parametrize("dropped", [False, True])
def test_the_bf16_fine_tune_runs_on_the_cpu_and_fails_when_bf16_is_dropped(tmp_path, monkeypatch, dropped):
    """tott_finetune_bf16 passes bf16 through on the CPU and reads what ran (the Trainer's autocast, the trained
    weights' dtype); a Trainer whose bf16 flag is dropped, as the CPU once did, fails it."""
    from testtask.lm import finetune

    if dropped:
        monkeypatch.setattr(finetune, "uses_bf16", lambda *args, **kwargs: False)
    code, data = run_json(tmp_path, "--only", "tott_finetune_bf16")
    outcome = by_name(data)["tott_finetune_bf16"]
    if not dropped:
        assert code == 0, outcome.get("error")
        assert (outcome["numbers"]["autocast"], outcome["numbers"]["weight_dtype"]) == ("bf16", "bfloat16")
        return
    assert code == 1 and outcome["status"] == "failed"
    assert "precision=bf16 on cpu ran fp32 autocast on bfloat16 weights" in outcome["error"]


@pytest.mark.slow  # a QLoRA zero-shot repetition through the command line (~100 s on 2 busy cores)
def test_the_preflight_reports_fp4_instead_of_nf4_as_failed(tmp_path, monkeypatch):
    from tests.pretrain_on_test.test_runner import fp4_instead_of_nf4

    fp4_instead_of_nf4(monkeypatch)
    code, data = run_json(tmp_path, "--only", "pot_zeroshot_padding")
    outcome = by_name(data)["pot_zeroshot_padding"]
    assert code == 1 and outcome["status"] == "failed"
    assert "quant_type=['fp4'] (the recipe's ['nf4'])" in outcome["error"]


@pytest.mark.slow  # two ZeRO ranks through torchrun (~2 min on 2 busy cores)
def test_the_zero3_check_fails_under_another_zero_stage(tmp_path, monkeypatch):
    from testtask.preflight.checks import zero3

    config = json.loads((REPO / zero3.ZERO3_CONFIG).read_text())
    config["zero_optimization"] = {
        k: v for k, v in config["zero_optimization"].items() if not k.startswith("stage3")
    } | {"stage": 2}
    stage2 = tmp_path / "zero2.json"
    stage2.write_text(json.dumps(config))
    monkeypatch.setitem(zero3.RUN, "deepspeed", str(stage2))
    code, data = run_json(tmp_path / "out", "--only", "zero3_tott_finetune")
    outcome = by_name(data)["zero3_tott_finetune"]
    assert code == 1 and outcome["status"] == "failed"
    assert "trained under ZeRO stage 2, the authors' config is stage 3" in outcome["error"]


@pytest.mark.slow  # ~60 s on 2 busy cores; the same code paths run in the fast suite through the runners' tests
def test_qlora_and_zero3_checks_run_for_real_on_the_cpu(tmp_path):
    """The CPU subset runs the authors' QLoRA (NF4 storage, bf16, bitsandbytes' paged 8-bit AdamW, whose paging itself
    is CUDA memory: a cuda-only part) and ZeRO-3 (two gloo ranks, each holding half of every parameter, a
    consolidated save); ~40 s."""
    code, data = run_json(tmp_path, "--only", "pot_zeroshot_packing,zero3_tott_finetune")
    outcome = by_name(data)
    assert code == 0, {n: c.get("error") for n, c in outcome.items()}
    qlora = outcome["pot_zeroshot_packing"]
    assert qlora["runs_on"] == "cpu" and qlora["numbers"]["quantization"] == "nf4"
    assert qlora["numbers"]["weight_storage"] == ["uint8"] and qlora["numbers"]["linear4bit_layers"] > 0
    assert qlora["numbers"]["optimizer"] == "bitsandbytes.optim.adamw.AdamW"
    assert qlora["numbers"]["optimizer_8bit_states"] > 0 and qlora["numbers"]["optimizer_paged_states"] == 0
    assert qlora["numbers"]["precision"] == "bf16" and qlora["numbers"]["double_quant"] is True
    zero3 = outcome["zero3_tott_finetune"]["numbers"]
    assert zero3["ranks"] == 2 and zero3["backend"] == "gloo" and zero3["zero_stage"] == 3
    assert all(2 * local == full for local, full in zero3["partition_local_of_full"])
    assert zero3["precision"] == "bf16-mixed" and zero3["autocast"] == "bf16"
    # DeepSpeed's bf16 mode saves bf16 weights: updates below bf16's resolution leave some weights as they were
    assert zero3["fraction_of_weights_changed"] > 0.1


def test_unknown_check_is_a_usage_error(tmp_path, capsys):
    assert cli.main(["--cpu", "--out", str(tmp_path), "--only", "nope"]) == 2
    assert "unknown check(s) nope" in capsys.readouterr().err
    assert not (tmp_path / "cpu.json").exists()


def test_file_names():
    assert report.slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    assert report.file_name({"name": "NVIDIA H200", "count": 1}, "cuda") == "nvidia-h200.json"
    assert report.file_name({"name": "NVIDIA H200", "count": 2}, "cuda") == "nvidia-h200-x2.json"
    assert report.file_name(None, "cpu") == "cpu.json"


def test_precisions_are_asked_of_the_recipe_rules(monkeypatch):
    from testtask.lm import finetune, recipe_rules
    from testtask.preflight.checks import training_on_the_test_task as tott

    assert tott.supported_precisions() == ("bf16", "bf16-mixed", "fp32")
    monkeypatch.setattr(recipe_rules, "PRECISIONS", ("bf16", "fp32"))
    assert tott.supported_precisions() == ("bf16", "fp32")
    monkeypatch.delattr(recipe_rules, "PRECISIONS")

    def old_rule(recipe, device, parameters=0.0):
        if recipe["precision"] not in ("bf16", "fp32"):
            raise ValueError("recipe precision must be 'bf16' or 'fp32'")
        return recipe["precision"] == "bf16"

    monkeypatch.setattr(finetune, "uses_bf16", old_rule)
    assert tott.supported_precisions() == ("bf16", "fp32")


def _rank(rank: int, sequences: list[str], steps: int = 2) -> dict:
    return {"rank": rank, "world_size_env": 2, "world_size": 2, "steps": steps, "losses": [[steps, 1.0]],
            "sequences": sequences}  # fmt: skip


def test_two_rank_comparison():
    spec = {"mode": "tott", "device": "cpu", "recipe": {"batch_size": 8, "per_device_batch_size": 2}}
    ours = [_rank(0, [f"a{i}" for i in range(8)]), _rank(1, [f"b{i}" for i in range(8)])]
    numbers = distributed.verify(spec, ours)
    assert numbers["effective_batch"] == 8 and numbers["disjoint"] is True
    doubled = [_rank(0, [f"a{i}" for i in range(16)]), _rank(1, [f"b{i}" for i in range(16)])]
    with pytest.raises(AssertionError, match="16 sequences per optimizer step"):
        distributed.verify(spec, doubled)  # the accumulation computed for one process under torchrun
    shared = [_rank(0, [f"a{i}" for i in range(8)]), _rank(1, [f"a{i}" for i in range(8)])]
    with pytest.raises(AssertionError, match="more than one rank"):
        distributed.verify(spec, shared)


@pytest.mark.slow
def test_the_whole_cpu_subset_passes(tmp_path):
    """Every check that runs on a CPU, through the runners' code (about 2 minutes on 2 busy cores)."""
    code, data = run_json(tmp_path)
    failed = {c["name"]: c["error"] for c in data["checks"] if c["status"] == "failed"}
    assert code == 0 and not failed, failed
    outcome = by_name(data)
    assert outcome["pot_zeroshot_packing"]["numbers"]["training_sequences"] == 3  # 24 texts, 8 per pack
    assert outcome["tott_finetune_fp32"]["numbers"]["weight_dtype"] == "float32"
    assert {name for name, c in outcome.items() if c["status"] == "passed"} == {
        name for name, item in registry.checks().items() if "cuda" not in item.needs
    }
    for name in ("tott_finetune_bf16", "tott_finetune_bf16_mixed"):
        assert outcome[name]["numbers"]["precision"] == name.removeprefix("tott_finetune_").replace("_", "-")
    for name in ("dist_tott_finetune", "dist_tbt_epochs"):
        assert outcome[name]["numbers"]["backend"] == "gloo" and outcome[name]["numbers"]["ranks"] == 2


def _qlora_observed(**changes):
    from testtask.preflight.checks.pretrain_on_test import QLORA

    return {**QLORA, "linear4bit_layers": 4, "optimizer_states": 28, "optimizer_8bit_states": 14, **changes}


def test_paging_is_required_only_of_the_states_bitsandbytes_pages():
    """bitsandbytes pages the states of CUDA parameters of >= 100,000 elements only: a tiny model's LoRA adapters
    keep ordinary states on a GPU too, and the check must not call that a broken recipe; a pageable state left
    unpaged is one."""
    from testtask.preflight.checks.pretrain_on_test import verify_qlora

    on_cuda = {"paging_checked": True}
    verify_qlora(_qlora_observed(**on_cuda, optimizer_pageable_states=0, optimizer_paged_states=0))
    verify_qlora(_qlora_observed(**on_cuda, optimizer_pageable_states=3, optimizer_paged_states=3))
    with pytest.raises(AssertionError, match="1 of the 3 optimizer states bitsandbytes pages"):
        verify_qlora(_qlora_observed(**on_cuda, optimizer_pageable_states=3, optimizer_paged_states=1))


def test_the_optimizer_record_counts_only_cuda_states_of_pageable_size_as_pageable():
    import bitsandbytes as bnb
    import torch

    from testtask.pretrain_on_test.runner.training import PAGED_MIN_ELEMENTS, describe_optimizer

    big, small = torch.nn.Parameter(torch.zeros(PAGED_MIN_ELEMENTS)), torch.nn.Parameter(torch.zeros(8192))
    optimizer = bnb.optim.PagedAdamW8bit([big, small], lr=1e-3)
    for p in (big, small):
        p.grad = torch.ones_like(p)
    optimizer.step()
    record = describe_optimizer(optimizer)
    assert record["states"] == 2 and record["eight_bit"] == 2 and record["paging_requested"]
    assert record["pageable"] == 0 and record["paged"] == 0  # on the CPU nothing is paged, nor pageable
