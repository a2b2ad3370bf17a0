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
    assert "needs 2 GPUs" in out and "needs a CUDA GPU" in out
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


def test_gpu_checks_are_skipped_on_the_cpu(tmp_path):
    code, data = run_json(tmp_path, "--only", "cuda_bf16,bitsandbytes_nf4,tott_finetune_bf16,dist_tbt_epochs")
    assert code == 0
    outcome = by_name(data)
    assert {c["status"] for c in outcome.values()} == {"skipped"}
    assert outcome["bitsandbytes_nf4"]["reason"].startswith("needs a CUDA GPU")
    assert outcome["dist_tbt_epochs"]["reason"].startswith("needs 2 GPUs")
    assert {c["runs_on"] for c in outcome.values()} == {"cuda-only"}
    # the JSON lists the whole cuda-only remainder, whichever checks ran
    assert set(data["cuda_only"]) == {n for n, item in registry.checks().items() if item.needs}
    assert {"cuda_bf16", "bitsandbytes_nf4", "dist_tott_finetune"} <= set(data["cuda_only"])
    assert not {"pot_zeroshot_padding", "zero3_tott_finetune"} & set(data["cuda_only"])


@pytest.mark.slow  # ~60 s on 2 busy cores; the same code paths run in the fast suite through the runners' tests
def test_qlora_and_zero3_checks_run_for_real_on_the_cpu(tmp_path):
    """The CPU subset runs the authors' QLoRA (NF4 storage, bitsandbytes' paged 8-bit AdamW, whose paging itself is
    CUDA memory: bitsandbytes_nf4, cuda-only) and ZeRO-3 (two gloo ranks, each holding half of every parameter, a
    consolidated save); ~40 s."""
    code, data = run_json(tmp_path, "--only", "pot_zeroshot_packing,zero3_tott_finetune")
    outcome = by_name(data)
    assert code == 0, {n: c.get("error") for n, c in outcome.items()}
    qlora = outcome["pot_zeroshot_packing"]
    assert qlora["runs_on"] == "cpu" and qlora["numbers"]["quantization"] == "nf4"
    assert qlora["numbers"]["weight_storage"] == ["uint8"] and qlora["numbers"]["linear4bit_layers"] > 0
    assert qlora["numbers"]["optimizer"] == "bitsandbytes.optim.adamw.AdamW"
    assert qlora["numbers"]["optimizer_8bit_states"] > 0 and qlora["numbers"]["optimizer_paged_states"] == 0
    zero3 = outcome["zero3_tott_finetune"]["numbers"]
    assert zero3["ranks"] == 2 and zero3["backend"] == "gloo"
    assert all(2 * local == full for local, full in zero3["partition_local_of_full"])
    assert zero3["fraction_of_weights_changed"] > 0.5


def test_unknown_check_is_a_usage_error(tmp_path, capsys):
    assert cli.main(["--cpu", "--out", str(tmp_path), "--only", "nope"]) == 2
    assert "unknown check(s) nope" in capsys.readouterr().err
    assert not (tmp_path / "cpu.json").exists()


def test_file_names():
    assert report.slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    assert report.file_name({"name": "NVIDIA H200", "count": 1}, "cuda") == "nvidia-h200.json"
    assert report.file_name({"name": "NVIDIA H200", "count": 2}, "cuda") == "nvidia-h200-x2.json"
    assert report.file_name(None, "cpu") == "cpu.json"


def test_precisions_are_asked_of_the_finetune_module(monkeypatch):
    from testtask.lm import finetune
    from testtask.preflight.checks import training_on_the_test_task as tott

    monkeypatch.setattr(finetune, "PRECISIONS", ("bf16", "fp32"), raising=False)
    assert tott.supported_precisions() == ("bf16", "fp32")
    monkeypatch.delattr(finetune, "PRECISIONS")

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
        name for name, item in registry.checks().items() if not item.needs
    }
