"""A ZeRO-3 fine-tune killed mid-run resumes from its last DeepSpeed checkpoint, on two CPU ranks.

The training-on-the-test-task runner launches its fine-tuning the way a cluster job does (`accelerate launch` with
`conf/accelerate/zero3_1node.yaml`, two processes, DeepSpeed's CPU accelerator and gloo), three times on the tiny
random Llama: once uninterrupted; once killed (each rank sends itself SIGKILL at the end of optimizer step
KILL_AFTER, after the checkpoint of step SAVE_AT was written and before any later one: tests/fixtures/preempt); then
the same command again, which finds that checkpoint and resumes from it (`finetune`'s resume path: the Trainer's
`resume_from_checkpoint`, loading DeepSpeed's ZeRO-3 partitioned weights and optimizer states).

Stage e2 on 24 examples at batch 8 is 6 optimizer steps, 3 per epoch; the checkpoint at step 2 is inside the first
epoch, so the resumed run skips part of an epoch's batches and then crosses into the second. Checked: the killed
launch fails and leaves the checkpoint with both ranks' ZeRO-3 shards and nothing after it; the rerun says it
resumed from that checkpoint and runs only the steps after it; every step's loss and the final consolidated weights
equal the uninterrupted run's (tolerances below; measured differences: 0). The DeepSpeed config is the one
tests/training_on_the_test_task/test_zero3.py uses (tests/fixtures/zero3.py). Slow: three launches
and two lm-eval runs, 171 s on two cores busy with other jobs, 102 s of CPU time in all (so over 50 s on two idle
cores).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest
import torch

from tests.fixtures.lm_eval_data import arc_rows, build_model, write_datasets, write_jsonl
from tests.fixtures.zero3 import cpu_zero3_config
from tests.training_on_the_test_task.test_runner import _config
from testtask.training_on_the_test_task.runner.main import run

pytest.importorskip("deepspeed")
if not (torch.distributed.is_available() and torch.distributed.is_gloo_available()):
    pytest.skip("torch.distributed with the gloo backend is not available", allow_module_level=True)

pytestmark = pytest.mark.slow

HOOK = Path(__file__).resolve().parents[1] / "fixtures" / "preempt"  # its sitecustomize.py
STEPS = 6  # 24 examples, batch 8, 2 epochs
SAVE_AT = 2
KILL_AFTER = 4
# Exact: the resumed steps are the same fp32 computation on the same ranks, from the checkpoint's exact fp32 weight
# and Adam partitions, scheduler state and data position; any difference is something the resume did not restore.
LOSS_TOLERANCE = 0.0  # absolute, per logged step
WEIGHT_TOLERANCE = 0.0  # absolute, per element of the consolidated final weights


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _steps_run(prefix: Path) -> list[list[int]]:
    """Per rank, the optimizer steps one launch completed (tests/fixtures/preempt writes them)."""
    files = [Path(f"{prefix}.rank{rank}") for rank in range(2)]
    return [[int(x) for x in f.read_text().split()] if f.is_file() else [] for f in files]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("zero3_resume")
    local = write_datasets(root / "data")
    train = write_jsonl(root / "train" / "arc_train.jsonl", arc_rows(24, offset=60))
    model = build_model(root / "tiny-llama", root / "data")
    zero3_config = cpu_zero3_config(root / "zero3_trainer_schedule.json")

    def config(name: str):
        return _config(
            root,
            local,
            train,
            model,
            "stage=e2",
            f"recipe.save_steps=[{SAVE_AT}]",
            "recipe.max_steps=null",
            "recipe.batch_size=8",  # 2 per device x 2 accumulation x 2 ranks
            "recipe.per_device_batch_size=2",
            "recipe.precision=fp32",
            "distributed.accelerate_config=conf/accelerate/zero3_1node.yaml",
            "distributed.num_processes=2",
            f"distributed.main_process_port={_free_port()}",
            f"recipe.zero3_config={zero3_config}",
            f"checkpoints_dir={root / name / 'checkpoints'}",
            f"results_dir={root / name / 'results'}",
        )

    mp = pytest.MonkeyPatch()
    mp.setenv("DS_ACCELERATOR", "cpu")  # DeepSpeed's CPU accelerator in the launched ranks (gloo)
    mp.delenv("WORLD_SIZE", raising=False)
    mp.delenv("SLURM_NODEID", raising=False)
    src = str(Path(__file__).resolve().parents[2] / "src")  # the ranks import this checkout's testtask
    mp.setenv("PYTHONPATH", os.pathsep.join([str(HOOK), src, *filter(None, [os.environ.get("PYTHONPATH")])]))
    out: dict = {"root": root, "model": model}
    try:
        mp.setenv("TESTTASK_TEST_STEP_LOG", str(root / "steps-uninterrupted"))
        out["uninterrupted"] = run(config("uninterrupted"))
        out["uninterrupted_steps"] = _steps_run(root / "steps-uninterrupted")

        cfg = config("preempted")
        mp.setenv("TESTTASK_TEST_STEP_LOG", str(root / "steps-killed"))
        mp.setenv("TESTTASK_TEST_KILL_AFTER_STEP", str(KILL_AFTER))
        with pytest.raises(subprocess.CalledProcessError) as killed:
            run(cfg)
        out["killed_returncode"] = killed.value.returncode
        out["killed_steps"] = _steps_run(root / "steps-killed")
        work = root / "preempted" / "checkpoints" / "mmluaux" / "tiny" / "e2"
        out["after_kill"] = sorted(p.name for p in work.iterdir())
        out["after_kill_checkpoint"] = sorted(
            str(p.relative_to(work)) for p in (work / f"checkpoint-{SAVE_AT}").rglob("*") if p.is_file()
        )

        mp.delenv("TESTTASK_TEST_KILL_AFTER_STEP")
        mp.setenv("TESTTASK_TEST_STEP_LOG", str(root / "steps-resumed"))
        out["resumed"] = run(cfg)  # the same command again
        out["resumed_steps"] = _steps_run(root / "steps-resumed")
    finally:
        mp.undo()
    for name in ("uninterrupted", "preempted"):
        work = root / name / "checkpoints" / "mmluaux" / "tiny" / "e2"
        out[f"{name}_work"] = work
        out[f"{name}_record"] = json.loads((work / "finished.json").read_text())
    return out


def weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors"))
    assert [f.name for f in files] == ["model.safetensors"], files  # one consolidated file, no shards
    return load_file(str(files[0]))


def test_the_kill_lands_after_the_checkpoint_and_before_the_end(runs):
    assert runs["killed_returncode"] != 0
    # both ranks ran to the kill and no further
    assert runs["killed_steps"] == [list(range(1, KILL_AFTER + 1))] * 2
    # the job's config, the checkpoint of step SAVE_AT and nothing else: no later checkpoint, no final model
    assert runs["after_kill"] == ["accelerate-job-node0.yaml", f"checkpoint-{SAVE_AT}"]
    files = runs["after_kill_checkpoint"]
    # DeepSpeed's ZeRO-3 checkpoint: each rank's partition of the weights and of Adam's state
    for rank in range(2):
        assert any(f"zero_pp_rank_{rank}_" in f and "optim_states" in f for f in files), files
        assert any(f"zero_pp_rank_{rank}_" in f and "model_states" in f for f in files), files


def test_the_rerun_resumes_from_the_checkpoint_and_runs_only_the_steps_after_it(runs):
    assert runs["preempted_record"]["resumed_from"] == f"checkpoint-{SAVE_AT}"
    assert runs["uninterrupted_record"]["resumed_from"] is None
    assert runs["resumed_steps"] == [list(range(SAVE_AT + 1, STEPS + 1))] * 2
    assert runs["uninterrupted_steps"] == [list(range(1, STEPS + 1))] * 2
    assert runs["preempted_record"]["steps"] == runs["uninterrupted_record"]["steps"] == STEPS


def test_the_resumed_run_has_the_uninterrupted_runs_losses_and_weights(runs):
    ref, resumed = runs["uninterrupted_record"]["losses"], runs["preempted_record"]["losses"]
    assert [s for s, _ in ref] == [s for s, _ in resumed] == list(range(1, STEPS + 1))
    differences = [abs(a - b) for (_, a), (_, b) in zip(ref, resumed, strict=True)]
    assert max(differences) <= LOSS_TOLERANCE, differences
    one = weights(runs["uninterrupted_work"] / "final")
    two = weights(runs["preempted_work"] / "final")
    base = weights(runs["model"])
    assert set(one) == set(two) == set(base)
    assert any(not torch.equal(one[k], base[k]) for k in base)  # trained
    gap = max(float((one[k] - two[k]).abs().max()) for k in one)
    assert gap <= WEIGHT_TOLERANCE, gap
