"""Shared training mechanics: Trainer arguments from an LM config stage (no defaults here), training and timing."""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from testtask.lm.hf import DeviceError, pick_device  # noqa: F401 -- re-exported for the runners
from testtask.pretrain_on_test.runner.settings import Stage, StagePrecision

log = logging.getLogger("testtask.runner")


def training_arguments(
    hp: Stage,
    *,
    device: str,
    seed: int,
    output_dir: str,
    show_progress: bool,
    gradient_checkpointing: bool,
) -> Any:
    from transformers import TrainingArguments

    cuda = device.startswith("cuda")
    return TrainingArguments(
        output_dir=output_dir,
        num_train_epochs=float(hp.epochs),
        per_device_train_batch_size=hp.batch_size,
        gradient_accumulation_steps=hp.gradient_accumulation_steps,
        learning_rate=float(hp.learning_rate),
        weight_decay=float(hp.weight_decay),
        warmup_steps=float(hp.warmup_ratio),  # a float in [0, 1) is a ratio of all steps
        lr_scheduler_type=hp.lr_scheduler,
        max_grad_norm=float(hp.max_grad_norm),
        # the stage's precision on every device: torch autocasts to bf16 (and fp16) on the CPU as on CUDA
        bf16=hp.precision == StagePrecision.bf16,
        fp16=hp.precision == StagePrecision.fp16,
        activation_checkpointing=gradient_checkpointing,
        optim=hp.optim,  # bitsandbytes' paged 8-bit AdamW runs on the CPU too (bitsandbytes >= 0.49)
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
    optim: str = ""  # the Trainer's `optim` name
    optimizer: dict[str, Any] | None = None  # describe_optimizer: class, 8-bit and paged states
    precision: str = ""  # trainer_precision: the autocast the Trainer's accelerator ran
    quantization: dict[str, Any] | None = None  # describe_quantization: the 4-bit layers as they trained

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")

    def as_dict(self, prefix: str) -> dict[str, Any]:
        return {
            f"{prefix}_seconds": self.seconds,
            f"{prefix}_loss": self.loss,
            f"{prefix}_tokens": self.tokens,
            f"{prefix}_positions": self.positions,
            f"{prefix}_tokens_per_second": self.tokens_per_second,
            f"{prefix}_optim": self.optim,
            **{f"{prefix}_optimizer_{k}": v for k, v in (self.optimizer or {}).items()},
            f"{prefix}_precision": self.precision,
            **{f"{prefix}_quantization_{k}": v for k, v in (self.quantization or {}).items()},
        }


def trainer_precision(trainer: Any) -> str:
    """The precision the Trainer trained in, read from its accelerator (what autocast ran), not from the config:
    `bf16`, `fp16`, or `fp32` (no autocast)."""
    mixed = str(getattr(trainer.accelerator, "mixed_precision", "no") or "no")
    return "fp32" if mixed == "no" else mixed


def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def describe_quantization(model: Any) -> dict[str, Any]:
    """The model's bitsandbytes 4-bit layers as they are: their count and the sorted distinct values of each
    layer's quant state."""
    try:
        from bitsandbytes.nn import Linear4bit
    except ImportError:  # no bitsandbytes: nothing can be 4-bit
        layers = []
    else:  # bitsandbytes' own layers (peft's LoRA wrappers of them share the class name, not the class)
        layers = [m for m in model.modules() if isinstance(m, Linear4bit)]
    states = [getattr(m.weight, "quant_state", None) for m in layers]

    def distinct(values) -> list[Any]:
        return sorted(set(values), key=str)

    return {
        "layers": len(layers),
        "quant_type": distinct(getattr(st, "quant_type", None) for st in states),
        "double_quant": distinct(bool(getattr(st, "nested", False)) for st in states),
        "compute_dtype": distinct(_dtype_name(m.compute_dtype) for m in layers),
        "weight_storage": distinct(_dtype_name(m.weight.dtype) for m in layers),
    }


PAGED_MIN_ELEMENTS = 100_000  # bitsandbytes.optim.optimizer.Optimizer8bit.get_state_buffer: `p.numel() < 1e5`


def describe_optimizer(optimizer: Any) -> dict[str, Any]:
    """What actually stepped: the optimizer's class and its states' storage: `eight_bit` (bitsandbytes keeps 32-bit
    states below 4,096 elements) and `paged` of the `pageable` ones (CUDA parameters of >= 100,000 elements)."""
    import torch

    inner = getattr(optimizer, "optimizer", optimizer)  # accelerate wraps the torch/bitsandbytes optimizer
    kind = type(inner)
    first = {  # parameter -> its first moment state (bitsandbytes' state1, torch's exp_avg)
        param: state
        for param, st in inner.state.items()
        if isinstance(st, dict) and isinstance(state := st.get("state1", st.get("exp_avg")), torch.Tensor)
    }
    return {
        "class": f"{kind.__module__}.{kind.__qualname__}",
        "states": len(first),
        "eight_bit": sum(t.dtype == torch.uint8 for t in first.values()),
        "pageable": sum(p.device.type == "cuda" and p.numel() >= PAGED_MIN_ELEMENTS for p in first),
        "paged": sum(bool(getattr(t, "is_paged", False)) for t in first.values()),
        "paging_requested": bool(getattr(inner, "is_paged", False)),
    }


def qlora_record(
    quantization: dict[str, Any], optimizer: dict[str, Any], precision: str | None
) -> dict[str, Any]:
    """One training stage's recipe as the QLoRA check reads it (preflight's verify_qlora)."""
    return {
        **{k: quantization.get(k) for k in ("quant_type", "double_quant", "compute_dtype", "weight_storage")},
        "linear4bit_layers": quantization.get("layers", 0),
        "precision": precision,
        "optimizer": optimizer.get("class"),
        "paging_requested": optimizer.get("paging_requested"),
        "optimizer_states": optimizer.get("states", 0),
        "optimizer_8bit_states": optimizer.get("eight_bit", 0),
        "optimizer_paged_states": optimizer.get("paged", 0),
        "optimizer_pageable_states": optimizer.get("pageable", 0),
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
    hp: Stage,
    *,
    device: str,
    seed: int,
    show_progress: bool,
    gradient_checkpointing: bool,
    callbacks: Sequence[Any] = (),
) -> TrainStats:
    """Train `model` in place on tokenized `features` with the transformers Trainer; `callbacks`: more Trainer
    callbacks (the GPU bench's step timer)."""
    from transformers import Trainer

    counting = _Counting(collate)
    with tempfile.TemporaryDirectory(prefix="testtask-train-") as tmp:
        args = training_arguments(
            hp,
            device=device,
            seed=seed,
            output_dir=tmp,
            show_progress=show_progress,
            gradient_checkpointing=gradient_checkpointing,
        )
        trainer = Trainer(
            model=model,
            args=args,
            train_dataset=list(features),
            data_collator=counting,
            callbacks=list(callbacks),
        )
        start = time.perf_counter()
        out = trainer.train()
        seconds = time.perf_counter() - start
    return TrainStats(
        seconds=seconds,
        loss=float(out.training_loss),
        tokens=counting.tokens,
        positions=counting.positions,
        optim=str(getattr(args.optim, "value", args.optim)),
        optimizer=describe_optimizer(trainer.optimizer),
        precision=trainer_precision(trainer),
        quantization=describe_quantization(model),
    )
