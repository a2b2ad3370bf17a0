"""What a fine-tuning recipe (`settings.Recipe`) implies before anything trains: the peak learning rate by model
size, the gradient accumulation that gives the effective batch, the steps checkpointed for emergence, and the
precision a run trains in. Plain arithmetic, no torch: the plan of a paper sweep reads it without loading the
training stack (`testtask.lm.finetune` applies it)."""

from __future__ import annotations

from collections.abc import Sequence

from testtask.lm.settings import FinetunePrecision, Recipe


def peak_learning_rate(recipe: Recipe, parameters: float, override: float | None = None) -> float:
    """2e-5 below the size threshold (10B), 2e-6 at or above it, unless the model's entry overrides it."""
    if override is not None:
        return float(override)
    if recipe.learning_rate_small is None or recipe.learning_rate_large is None:
        raise ValueError("the recipe has no size rule (learning_rate_small/large): give the learning rate")
    small, large = float(recipe.learning_rate_small), float(recipe.learning_rate_large)
    return large if parameters >= float(recipe.large_model_threshold) else small


def gradient_accumulation(batch_size: int, per_device: int, world_size: int = 1) -> int:
    """Steps of accumulation that give the effective batch size; it must divide evenly."""
    per_step = per_device * world_size
    if batch_size % per_step:
        raise ValueError(
            f"batch size {batch_size} is not a multiple of per-device {per_device} × {world_size} devices"
        )
    return batch_size // per_step


def emergence_schedule(steps: Sequence[int], every: int | None, total: int) -> list[int]:
    """Optimizer steps to checkpoint at: the listed steps, then every `every` steps, up to `total`
    (train.py:96-107 and :125-132: a step of interest or a positive multiple of the multiplier)."""
    wanted = {int(s) for s in steps if 0 < int(s) <= total}
    if every:
        wanted |= set(range(int(every), total + 1, int(every)))
    return sorted(wanted)


PRECISIONS = tuple(p.value for p in FinetunePrecision)  # what a run can train in (the recipe's choice set)
PRECISION_MEANING = {
    "bf16": "bf16 weights and AdamW state, bf16 autocast (the authors' --bf16 on a bf16-loaded model)",
    "bf16-mixed": "fp32 master weights and AdamW state, bf16 autocast",
    "fp32": "fp32 weights, state and compute",
}


def resolve_precision(
    recipe: Recipe, device: str, parameters: float = 0.0, explicit: str | None = None
) -> str:
    """The run's precision: `explicit` on any device; else on a GPU `precision_large` at or above the
    threshold, else `precision`; fp32 on the CPU. The authors: `bf16` below 10B (bf16-loaded weights,
    train.py:35, jobs_train.py:99), `bf16-mixed` above (their `--bf16` under ZeRO-3: fp32 master weights)."""
    if explicit is not None:
        choice = explicit
    elif not device.startswith("cuda"):
        return "fp32"
    else:
        choice = recipe.precision
        large = recipe.precision_large
        if large and parameters >= float(recipe.large_model_threshold):
            choice = large
    if choice not in PRECISIONS:
        raise ValueError(f"recipe precision must be one of {', '.join(PRECISIONS)}, got {choice!r}")
    return str(choice)
