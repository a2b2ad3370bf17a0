"""LoRA fine-tuning for a fixed number of epochs with a checkpoint at the end of each, through
`lm.finetune` (transformers Trainer + peft; a rerun resumes from the newest checkpoint and
a finished run is found by its fingerprint).

`finetune` checkpoints at listed optimizer steps, so the epoch boundaries are computed the way the Trainer counts
steps (`steps_per_epoch`) and checked against the checkpoints it wrote. Under torchrun the processes split each
epoch's batches (accelerate's sharding) and the accumulation divides the batch by WORLD_SIZE, read before the
Trainer starts torch.distributed; tests/test_distributed.py runs it on two processes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from testtask.errors import InputError
from testtask.lm.finetune import finetune, gradient_accumulation, world_size
from testtask.lm.settings import Lora, Recipe


class CheckpointError(InputError, RuntimeError):
    pass


def steps_per_epoch(examples: int, per_device: int, accumulation: int, world_size: int = 1) -> int:
    """Optimizer steps in one epoch: batches per process (the last one partial), grouped by accumulation."""
    if examples < 1:
        raise ValueError("no training examples")
    batches = math.ceil(math.ceil(examples / per_device) / world_size)
    return max(math.ceil(batches / accumulation), 1)


@dataclass(frozen=True)
class EpochRun:
    checkpoints: dict[int, Path]  # epoch -> checkpoint folder (a LoRA adapter)
    steps_per_epoch: int
    losses: list[tuple[int, float]]
    precision: str | None = None  # what finetune trained in (finished.json records it too)

    def step(self, epoch: int) -> int:
        return epoch * self.steps_per_epoch


def train_epochs(
    model: str,
    texts: Sequence[tuple[str, str] | str],
    output_dir: Path,
    recipe: Recipe,
    *,
    learning_rate: float,
    epochs: int,
    lora: Lora,
    device: str,
    seed: int,
) -> EpochRun:
    """Fine-tune `model` on `texts` ((prompt, completion) pairs or whole documents) for `epochs` epochs at
    `learning_rate`; one checkpoint per epoch."""
    per_device = recipe.per_device_batch_size
    world = world_size()  # from WORLD_SIZE: torch.distributed is not up before the Trainer starts it
    accumulation = gradient_accumulation(recipe.batch_size, per_device, world)
    per_epoch = steps_per_epoch(len(texts), per_device, accumulation, world)
    steps = [per_epoch * e for e in range(1, int(epochs) + 1)]
    plan = dataclasses.replace(
        recipe,
        epochs=int(epochs),
        max_steps=None,
        save_steps=steps,
        save_every=None,
        save_total_limit=None,  # every epoch's checkpoint is a candidate
    )
    result = finetune(
        model,
        list(texts),
        output_dir,
        plan,
        parameters=0.0,  # the explicit learning rate applies; the size rule of finetune is not used
        learning_rate=float(learning_rate),
        device=device,
        seed=int(seed),
        lora=lora,
    )
    folders = {e: Path(output_dir) / f"checkpoint-{s}" for e, s in enumerate(steps, 1)}
    missing = sorted(s for s in steps if s not in result.checkpoints)
    if missing or result.steps != steps[-1]:
        raise CheckpointError(
            f"{output_dir}: expected a checkpoint at the end of each epoch (steps {steps}, {per_epoch} per epoch "
            f"for {len(texts)} texts), the Trainer ran {result.steps} steps and saved {result.checkpoints}"
        )
    return EpochRun(folders, per_epoch, [tuple(x) for x in result.losses], result.precision)
