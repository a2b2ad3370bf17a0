"""One rank of the preflight's 2-rank checks (`torchrun ... -m testtask.preflight.worker SPEC.json`): it
trains as SPEC says (mode `tott`: `finetune`; `tbt`: `train_epochs`) and records the sequences its collator
batched, steps, losses and checkpoints, or the traceback, in `<out>/rank<k>.json`."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from testtask.io import atomic_write_json


def sequence_hash(ids: Sequence[int]) -> str:
    return hashlib.sha1(",".join(map(str, ids)).encode()).hexdigest()[:16]


def _record_batches(seen: list[str]) -> None:
    """Make finetune's collator note every sequence it batches on this rank."""
    from testtask.lm import finetune

    base = finetune.PadCollator

    class Recording(base):  # type: ignore[misc, valid-type]
        def __call__(self, features):
            seen.extend(sequence_hash(f["input_ids"]) for f in features)
            return super().__call__(features)

    finetune.PadCollator = Recording


def train(spec: dict[str, Any]) -> dict[str, Any]:
    from testtask.lm.finetune import finetune
    from testtask.lm.settings import Lora, Recipe
    from testtask.schema import load

    pairs = [tuple(p) for p in spec["pairs"]]
    out = Path(spec["out"]) / "run"
    recipe = load(Recipe, spec["recipe"], "recipe")  # the spec's plain recipe, typed as the runners read it
    if spec["mode"] == "tott":
        result = finetune(
            spec["model"],
            pairs,
            out,
            recipe,
            parameters=float(spec["parameters"]),
            device=spec["device"],
            seed=0,
            precision=spec.get("precision"),  # passed through (the recipe alone trains fp32 on the CPU)
        )
        return {
            "steps": result.steps,
            "losses": result.losses,
            "checkpoints": result.checkpoints,
            "batch": result.batch,
            "partition": result.zero3_partition,  # this rank's ZeRO-3 shard, under DeepSpeed
            "precision": result.precision,
            "trained": result.trained,  # the live Trainer's autocast, ZeRO stage, optimizer
        }
    if spec["mode"] == "tbt":
        from testtask.train_before_test.runner.training import train_epochs

        run = train_epochs(
            spec["model"],
            pairs,
            out,
            recipe,
            learning_rate=float(spec["learning_rate"]),
            epochs=int(spec["epochs"]),
            lora=load(Lora, spec["lora"], "lora"),
            device=spec["device"],
            seed=0,
        )
        return {
            "steps": run.step(int(spec["epochs"])),
            "steps_per_epoch": run.steps_per_epoch,
            "losses": run.losses,
            "checkpoints": {str(e): folder.name for e, folder in run.checkpoints.items()},
        }
    raise ValueError(f"mode must be tott or tbt, got {spec['mode']!r}")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m testtask.preflight.worker SPEC.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(args[0]).read_text())
    rank = int(os.environ.get("RANK", "0"))
    info: dict[str, Any] = {
        "rank": rank,
        "local_rank": int(os.environ.get("LOCAL_RANK", "0")),
        "world_size_env": int(os.environ.get("WORLD_SIZE", "1")),
    }
    seen: list[str] = []
    status = 0
    try:
        _record_batches(seen)
        info.update(train(spec))
        import torch

        if torch.distributed.is_available() and torch.distributed.is_initialized():
            info["world_size"] = torch.distributed.get_world_size()
            info["backend"] = str(torch.distributed.get_backend())
        if spec["device"].startswith("cuda"):
            info["cuda_device"] = torch.cuda.current_device()
    except Exception:  # noqa: BLE001 -- reported to the launching check
        info["error"] = traceback.format_exc()[-4000:]
        status = 1
    info["sequences"] = seen
    atomic_write_json(Path(spec["out"]) / f"rank{rank}.json", info)
    from testtask.lm.finetune import leave_process_group

    leave_process_group()
    return status


if __name__ == "__main__":
    raise SystemExit(main())
