"""Shared training mechanics: device choice, Trainer arguments, language-model pretraining and timing."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from testtask.hf import DeviceError, pick_device  # noqa: F401 -- re-exported for the runners


def training_arguments(
    hp: Mapping[str, Any], *, device: str, seed: int, output_dir: str, show_progress: bool
) -> Any:
    from transformers import TrainingArguments

    cuda = device.startswith("cuda")
    return TrainingArguments(
        output_dir=output_dir,
        num_train_epochs=float(hp["epochs"]),
        per_device_train_batch_size=int(hp["batch_size"]),
        gradient_accumulation_steps=int(hp.get("gradient_accumulation_steps", 1)),
        learning_rate=float(hp["learning_rate"]),
        weight_decay=float(hp.get("weight_decay", 0.0)),
        warmup_steps=float(hp.get("warmup_ratio", 0.0)),  # a float in [0, 1) is a ratio of all steps
        lr_scheduler_type=str(hp.get("lr_scheduler", "linear")),
        max_grad_norm=float(hp.get("max_grad_norm", 1.0)),
        bf16=cuda and str(hp.get("precision", "bf16")) == "bf16",
        fp16=cuda and str(hp.get("precision", "bf16")) == "fp16",
        activation_checkpointing=bool(hp.get("gradient_checkpointing", False)),
        optim=str(hp.get("optim", "adamw_torch")),
        use_cpu=not cuda,
        seed=seed,
        data_seed=seed,
        save_strategy="no",
        logging_strategy="no",
        report_to=[],
        disable_tqdm=not show_progress,
        dataloader_pin_memory=cuda,
    )


@dataclass
class TrainStats:
    seconds: float
    loss: float
    tokens: int  # tokens the model attended to (padding excluded)
    positions: int  # sequence positions processed, padding included

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")

    def as_dict(self, prefix: str) -> dict[str, float]:
        return {
            f"{prefix}_seconds": self.seconds,
            f"{prefix}_loss": self.loss,
            f"{prefix}_tokens": self.tokens,
            f"{prefix}_positions": self.positions,
            f"{prefix}_tokens_per_second": self.tokens_per_second,
        }


class _Counting:
    """A collator wrapper that counts real tokens and padded positions of every batch it builds."""

    def __init__(self, collate):
        self.collate = collate
        self.tokens = 0
        self.positions = 0

    def __call__(self, features):
        batch = self.collate(features)
        mask = batch.get("attention_mask")
        ids = batch["input_ids"]
        self.positions += int(ids.numel())
        self.tokens += int(mask.sum()) if mask is not None else int(ids.numel())
        return batch


def train(
    model: Any,
    features: Sequence[Mapping[str, Any]],
    collate: Any,
    hp: Mapping[str, Any],
    *,
    device: str,
    seed: int,
    show_progress: bool,
) -> TrainStats:
    """Train `model` in place on tokenized `features` with the transformers Trainer."""
    from transformers import Trainer

    counting = _Counting(collate)
    with tempfile.TemporaryDirectory(prefix="testtask-train-") as tmp:
        args = training_arguments(hp, device=device, seed=seed, output_dir=tmp, show_progress=show_progress)
        trainer = Trainer(model=model, args=args, train_dataset=list(features), data_collator=counting)
        start = time.perf_counter()
        out = trainer.train()
        seconds = time.perf_counter() - start
    return TrainStats(
        seconds=seconds, loss=float(out.training_loss), tokens=counting.tokens, positions=counting.positions
    )
