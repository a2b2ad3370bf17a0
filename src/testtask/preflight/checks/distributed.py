"""The 2-rank checks: `torchrun --standalone --nproc_per_node=2` of a small fine-tune, on two GPUs (NCCL) or,
with `--cpu`, as two CPU processes (gloo). The ranks must see disjoint sequences that make the recipe's
effective batch, not twice it (`dist_tott_finetune`), and agree with the epoch arithmetic, a checkpoint per
epoch (`dist_tbt_epochs`)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from testtask.preflight import data as fixtures
from testtask.preflight import models
from testtask.preflight.registry import check

RANKS = 2
TIMEOUT_S = 300
PAIRS = {"tott": 16, "tbt": 24}
# One whole epoch (a run cut by max_steps lets the data loader collate one batch ahead): 16 pairs, 2 per device ×
# 2 accumulation × 2 ranks = 8 per optimizer step, 2 steps.
TOTT_RUN = {"epochs": 1, "max_steps": None, "batch_size": 8, "per_device_batch_size": 2}
TBT_RUN = {
    "batch_size": 8,
    "per_device_batch_size": 2,
    "max_length": 64,
    "logging_steps": 1,
    "progress": False,
}
TBT_EPOCHS = 2
TBT_LORA = {"enabled": True, "r": 8, "alpha": 32, "dropout": 0.1, "target_modules": None}
NCCL_REASON = (
    "NCCL collectives between two GPUs, one rank per GPU: the CPU run shows the same batch and epoch arithmetic "
    "over gloo"
)


def _model(ctx) -> Path:
    def build():
        pairs = fixtures.arc_pairs(max(PAIRS.values()))
        texts = [p + c for p, c in pairs] + [fixtures.MC_PROMPT_TEXT]
        return models.build("llama", ctx.folder("dist-llama"), texts, models.SMALL)

    return ctx.cached("dist-llama", build)


def spec_for(ctx, mode: str, out: Path) -> dict[str, Any]:
    from testtask.preflight.checks.training_on_the_test_task import conf_values, recipe

    model = _model(ctx)
    spec: dict[str, Any] = {
        "mode": mode,
        "model": str(model),
        "pairs": [list(p) for p in fixtures.arc_pairs(PAIRS[mode])],
        "device": ctx.device,
        "out": str(out),
    }
    if mode == "tott":
        spec.update(recipe=recipe(**TOTT_RUN), parameters=models.parameter_count(model))
    else:
        tbt_recipe = {**conf_values("train_before_test", "recipe", "paper.yaml"), **TBT_RUN}
        spec.update(recipe=tbt_recipe, learning_rate=1e-3, epochs=TBT_EPOCHS, lora=TBT_LORA)
    return spec


def _environment() -> dict[str, str]:
    """The parent's environment, with this package importable in the ranks."""
    import testtask

    env = dict(os.environ)
    src = str(Path(testtask.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("DS_BUILD_OPS", "0")  # DeepSpeed builds an op when first used (JIT), never at import
    return env


def run_ranks(spec: dict[str, Any], ranks: int = RANKS, timeout: float = TIMEOUT_S) -> list[dict[str, Any]]:
    """Run the worker under torchrun; the ranks' records (a RuntimeError with the output's tail on failure)."""
    env = _environment()
    if not str(spec["device"]).startswith("cuda"):
        env["DS_ACCELERATOR"] = "cpu"  # DeepSpeed's CPU accelerator (gloo), whatever GPUs the machine has
    out = Path(spec["out"])
    out.mkdir(parents=True, exist_ok=True)
    spec_path = out / "spec.json"
    spec_path.write_text(json.dumps(spec))
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={ranks}",
        "-m",
        "testtask.preflight.worker",
        str(spec_path),
    ]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired as error:
        raise RuntimeError(f"torchrun did not finish in {timeout:.0f} s (a hung collective?)") from error
    records, errors = [], []
    for rank in range(ranks):
        path = out / f"rank{rank}.json"
        if not path.is_file():
            errors.append(f"rank {rank} wrote no record")
            continue
        record = json.loads(path.read_text())
        records.append(record)
        if record.get("error"):
            errors.append(f"rank {rank} failed:\n{record['error']}")
    if proc.returncode != 0 or errors:
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise RuntimeError(
            f"torchrun exited {proc.returncode}; "
            + "\n".join(errors)[-4000:]
            + f"\n--- output tail ---\n{tail}"
        )
    return records


def verify(spec: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """The ranks agree on the steps, see their own data, and together make the recipe's effective batch."""
    recipe = spec["recipe"]
    worlds = {r.get("world_size", r["world_size_env"]) for r in records}
    if worlds != {len(records)}:
        raise AssertionError(f"ranks report world sizes {sorted(worlds)}, expected {len(records)}")
    steps = {r["steps"] for r in records}
    if len(steps) != 1:
        raise AssertionError(f"ranks ran different numbers of optimizer steps: {sorted(steps)}")
    total_steps = steps.pop()
    seen = [r["sequences"] for r in records]
    effective = sum(map(len, seen)) / total_steps
    if effective != int(recipe["batch_size"]):
        raise AssertionError(
            f"{effective:g} sequences per optimizer step over {len(records)} ranks, the recipe's effective batch "
            f"is {recipe['batch_size']} (per-device {recipe['per_device_batch_size']})"
        )
    numbers: dict[str, Any] = {
        "ranks": len(records),
        "backend": records[0].get("backend"),
        "steps": total_steps,
        "effective_batch": effective,
        "sequences_per_rank": [len(s) for s in seen],
        "loss_last": records[0]["losses"][-1][1] if records[0]["losses"] else math.nan,
    }
    if spec["device"].startswith("cuda"):
        devices = sorted(r.get("cuda_device") for r in records)
        if len(set(devices)) != len(records):
            raise AssertionError(f"ranks share GPUs: {devices}")
        numbers["cuda_devices"] = devices
    batch = records[0].get("batch")  # finetune's own arithmetic, where it records it
    if batch:
        if batch.get("world_size") != len(records):
            raise AssertionError(f"finetune computed its batch for {batch.get('world_size')} processes")
        numbers["accumulation"] = batch.get("accumulation")
    if spec["mode"] == "tott":
        shared = set(seen[0]).intersection(*map(set, seen[1:]))
        if shared:
            raise AssertionError(
                f"{len(shared)} sequences were trained on by more than one rank in one epoch"
            )
        numbers["disjoint"] = True
    else:
        from testtask.train_before_test.runner.training import steps_per_epoch

        per_step = int(recipe["per_device_batch_size"]) * len(records)
        accumulation = int(recipe["batch_size"]) // per_step
        expected = steps_per_epoch(
            len(spec["pairs"]), int(recipe["per_device_batch_size"]), accumulation, len(records)
        )
        per_epoch = {r["steps_per_epoch"] for r in records}
        if per_epoch != {expected}:
            raise AssertionError(f"steps per epoch {sorted(per_epoch)}, expected {expected}")
        wanted = {str(e): f"checkpoint-{e * expected}" for e in range(1, int(spec["epochs"]) + 1)}
        for r in records:
            if r["checkpoints"] != wanted:
                raise AssertionError(
                    f"rank {r['rank']} found checkpoints {r['checkpoints']}, expected {wanted}"
                )
        numbers["steps_per_epoch"] = expected
    return numbers


def launch(ctx, mode: str) -> dict[str, Any]:
    spec = spec_for(ctx, mode, ctx.folder(f"dist-{mode}"))
    return verify(spec, run_ranks(spec))


@check(
    "dist_tott_finetune",
    "2 ranks (torchrun; NCCL on GPUs, gloo on the CPU): the B.2 recipe's effective batch and disjoint data per rank",
    needs=["2gpu"],
    cuda_only={"NCCL on 2 GPUs": NCCL_REASON},
)
def dist_tott_finetune(ctx) -> dict[str, Any]:
    return launch(ctx, "tott")


@check(
    "dist_tbt_epochs",
    "2 ranks (torchrun; NCCL on GPUs, gloo on the CPU): train-before-test's epoch checkpoints under LoRA",
    needs=["2gpu"],
    cuda_only={"NCCL on 2 GPUs": NCCL_REASON},
)
def dist_tbt_epochs(ctx) -> dict[str, Any]:
    return launch(ctx, "tbt")
