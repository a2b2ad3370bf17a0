"""Shared training mechanics: Trainer arguments from an LM config stage, training and timing.

Every optimisation setting is read from the config stage (`lm.pretrain` or `lm.classify`); none has a default
here, so a config that omits one fails with the key's name instead of silently running a recipe nobody chose.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from testtask.errors import InputError
from testtask.lm.hf import DeviceError, pick_device  # noqa: F401 -- re-exported for the runners

log = logging.getLogger("testtask.runner")

REQUIRED = (
    "epochs",
    "batch_size",
    "gradient_accumulation_steps",
    "learning_rate",
    "weight_decay",
    "warmup_ratio",
    "lr_scheduler",
    "max_grad_norm",
    "optim",
    "precision",
)
PRECISIONS = ("fp32", "bf16", "fp16")


class ConfigError(InputError, KeyError):
    pass


def _require(hp: Mapping[str, Any]) -> None:
    missing = [k for k in REQUIRED if k not in hp]
    if missing:
        raise ConfigError(f"the LM config stage lacks {missing}; every optimisation setting must be set")
    if str(hp["precision"]) not in PRECISIONS:
        raise ConfigError(f"precision must be one of {PRECISIONS}, got {hp['precision']!r}")


def needs_cuda(optim: str) -> bool:
    """bitsandbytes optimizers (paged / 8-bit) run on CUDA only."""
    return optim.startswith("paged_") or "8bit" in optim


def effective_optim(hp: Mapping[str, Any], device: str) -> str:
    """The optimizer to use on `device`: `optim`, or `optim_fallback` (logged) where `optim` needs CUDA."""
    optim = str(hp["optim"])
    if device.startswith("cuda") or not needs_cuda(optim):
        return optim
    fallback = hp.get("optim_fallback")
    if not fallback:
        raise DeviceError(
            f"optim={optim} needs bitsandbytes on a CUDA GPU and the device is {device}; set "
            "lm.pretrain.optim=adamw_torch (or lm.pretrain.optim_fallback) to train on CPU"
        )
    log.warning(
        "optim=%s needs a CUDA GPU; on %s the optimizer is optim_fallback=%s", optim, device, fallback
    )
    return str(fallback)


def training_arguments(
    hp: Mapping[str, Any], *, device: str, seed: int, output_dir: str, show_progress: bool
) -> Any:
    from transformers import TrainingArguments

    _require(hp)
    cuda = device.startswith("cuda")
    precision = str(hp["precision"])  # half precision only on CUDA; CPU training is fp32
    return TrainingArguments(
        output_dir=output_dir,
        num_train_epochs=float(hp["epochs"]),
        per_device_train_batch_size=int(hp["batch_size"]),
        gradient_accumulation_steps=int(hp["gradient_accumulation_steps"]),
        learning_rate=float(hp["learning_rate"]),
        weight_decay=float(hp["weight_decay"]),
        warmup_steps=float(hp["warmup_ratio"]),  # a float in [0, 1) is a ratio of all steps
        lr_scheduler_type=str(hp["lr_scheduler"]),
        max_grad_norm=float(hp["max_grad_norm"]),
        bf16=cuda and precision == "bf16",
        fp16=cuda and precision == "fp16",
        activation_checkpointing=bool(hp.get("gradient_checkpointing", False)),
        optim=effective_optim(hp, device),
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
    optim: str = ""  # the optimizer that ran (optim, or optim_fallback off CUDA)

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
            f"{prefix}_optim": self.optim,
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
        seconds=seconds,
        loss=float(out.training_loss),
        tokens=counting.tokens,
        positions=counting.positions,
        optim=str(getattr(args.optim, "value", args.optim)),
    )
