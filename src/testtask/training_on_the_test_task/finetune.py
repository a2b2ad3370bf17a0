"""Fine-tuning on the test task with the App. B.2 recipe, through the transformers Trainer.

AdamW (β1 0.9, β2 0.95, ε 1e-8), 50 warm-up steps then cosine decay to 10% of the peak, effective batch 64,
weight decay 0.1, gradient clipping 1.0, context 600 tokens, peak learning rate 2e-5 below 10B parameters and
2e-6 above (a model may override it), bf16 on GPU. Checkpoints are saved at the configured steps (for the
emergence figures) and at the end; a rerun resumes from the newest checkpoint. Above 10B parameters the same
code runs under DeepSpeed ZeRO-3 via `accelerate launch` (configs in `conf/accelerate/`, `conf/deepspeed/`).
Full-parameter by default; `lora.enabled` trains LoRA adapters instead (the CPU mini-replication).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback

from testtask.hf import load_tokenizer
from testtask.io import atomic_write_text

log = logging.getLogger("testtask.finetune")


def peak_learning_rate(recipe: Mapping[str, Any], parameters: float, override: float | None = None) -> float:
    """2e-5 below the size threshold (10B), 2e-6 at or above it, unless the model's entry overrides it."""
    if override is not None:
        return float(override)
    small, large = float(recipe["learning_rate_small"]), float(recipe["learning_rate_large"])
    return large if parameters >= float(recipe["large_model_threshold"]) else small


def gradient_accumulation(batch_size: int, per_device: int, world_size: int = 1) -> int:
    """Steps of accumulation that give the effective batch size; it must divide evenly."""
    per_step = per_device * world_size
    if batch_size % per_step:
        raise ValueError(
            f"batch size {batch_size} is not a multiple of per-device {per_device} × {world_size} devices"
        )
    return batch_size // per_step


class SaveAtSteps(TrainerCallback):
    """Asks for a checkpoint at each listed optimizer step (e.g. the emergence checkpoints of Figures 8/19)."""

    def __init__(self, steps: Sequence[int]):
        self.steps = {int(s) for s in steps}

    def on_step_end(self, args, state, control, **kwargs):
        # The last step is saved too, so that a rerun of a finished run resumes at its end instead of redoing it.
        if state.global_step in self.steps or state.global_step == state.max_steps:
            control.should_save = True
        return control


@dataclass
class FinetuneResult:
    output_dir: Path
    steps: int
    losses: list[tuple[int, float]]
    checkpoints: list[int]

    @property
    def first_loss(self) -> float:
        return self.losses[0][1]

    @property
    def last_loss(self) -> float:
        return self.losses[-1][1]


def tokenize(tokenizer: Any, texts: Sequence[str], max_length: int) -> list[dict[str, list[int]]]:
    """Each document is one sequence (truncated to the context), ending with EOS so answers terminate."""
    eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
    out = []
    for text in texts:
        ids = tokenizer(text, add_special_tokens=True, truncation=True, max_length=max_length - len(eos))[
            "input_ids"
        ]
        ids = list(ids) + eos
        out.append({"input_ids": ids, "attention_mask": [1] * len(ids)})
    return out


def training_arguments(
    recipe: Mapping[str, Any], *, output_dir: Path, learning_rate: float, device: str, seed: int
) -> Any:
    from transformers import TrainingArguments

    cuda = device.startswith("cuda")
    per_device = int(recipe["per_device_batch_size"])
    world = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
    return TrainingArguments(
        output_dir=str(output_dir),
        num_train_epochs=float(recipe["epochs"]),
        max_steps=int(recipe.get("max_steps") or -1),
        per_device_train_batch_size=per_device,
        gradient_accumulation_steps=gradient_accumulation(int(recipe["batch_size"]), per_device, world),
        learning_rate=learning_rate,
        adam_beta1=float(recipe["adam_beta1"]),
        adam_beta2=float(recipe["adam_beta2"]),
        adam_epsilon=float(recipe["adam_epsilon"]),
        weight_decay=float(recipe["weight_decay"]),
        max_grad_norm=float(recipe["max_grad_norm"]),
        warmup_steps=int(recipe["warmup_steps"]),
        lr_scheduler_type="cosine_with_min_lr",
        lr_scheduler_kwargs={"min_lr_rate": float(recipe["final_lr_fraction"])},
        bf16=cuda and bool(recipe.get("bf16", True)),
        activation_checkpointing=bool(recipe.get("gradient_checkpointing", False)),
        deepspeed=str(recipe["deepspeed"]) if recipe.get("deepspeed") else None,
        use_cpu=not cuda,
        seed=seed,
        data_seed=seed,
        logging_steps=int(recipe.get("logging_steps", 10)),
        logging_first_step=True,
        save_strategy="steps" if recipe.get("save_every") else "no",
        save_steps=int(recipe.get("save_every") or 500),
        save_total_limit=recipe.get("save_total_limit"),
        report_to=list(recipe.get("report_to", [])),
        disable_tqdm=not bool(recipe.get("progress", True)),
    )


def _checkpoints(output_dir: Path) -> list[Path]:
    found = [p for p in output_dir.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.split("-")[-1]))


def finetune(
    model_name: str,
    texts: Sequence[str],
    output_dir: str | Path,
    recipe: Mapping[str, Any],
    *,
    parameters: float,
    learning_rate: float | None = None,
    device: str = "cpu",
    seed: int = 0,
    lora: Mapping[str, Any] | None = None,
) -> FinetuneResult:
    """Fine-tune `model_name` on `texts`; the final model (or adapter) lands in `output_dir/final`."""
    from transformers import (
        AutoModelForCausalLM,
        DataCollatorForLanguageModeling,
        Trainer,
        set_seed,
    )

    output_dir = Path(output_dir)
    final = output_dir / "final"
    lr = peak_learning_rate(recipe, parameters, learning_rate)
    fingerprint = _fingerprint(model_name, texts, recipe, lr, seed, lora)
    done = output_dir / "finished.json"
    if done.is_file():
        record = json.loads(done.read_text())
        if record.get("fingerprint") == fingerprint:
            log.info("%s is finished (%d steps); not retraining", output_dir, record["steps"])
            return FinetuneResult(
                output_dir, record["steps"], [tuple(x) for x in record["losses"]], record["checkpoints"]
            )
    set_seed(seed)
    tokenizer = load_tokenizer(model_name)
    dtype = torch.bfloat16 if device.startswith("cuda") and recipe.get("bf16", True) else torch.float32
    model = AutoModelForCausalLM.from_pretrained(model_name, dtype=dtype)
    if lora and lora.get("enabled"):
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(
            model,
            LoraConfig(
                r=int(lora["r"]),
                lora_alpha=int(lora["alpha"]),
                lora_dropout=float(lora["dropout"]),
                target_modules=lora.get("target_modules", "all-linear"),
                task_type="CAUSAL_LM",
            ),
        )
    features = tokenize(tokenizer, texts, int(recipe["max_length"]))
    args = training_arguments(recipe, output_dir=output_dir, learning_rate=lr, device=device, seed=seed)
    callbacks = [SaveAtSteps(recipe.get("save_steps") or [])]
    collate = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    trainer = Trainer(
        model=model, args=args, train_dataset=features, data_collator=collate, callbacks=callbacks
    )
    resume = _checkpoints(output_dir)
    if resume:
        log.info("resuming %s from %s", output_dir, resume[-1].name)
    trainer.train(resume_from_checkpoint=str(resume[-1]) if resume else None)
    trainer.save_model(str(final))
    tokenizer.save_pretrained(str(final))
    losses = [(int(e["step"]), float(e["loss"])) for e in trainer.state.log_history if "loss" in e]
    steps = int(trainer.state.global_step)
    log.info(
        "%s: %d steps at peak lr %.1e, loss %.3f -> %.3f",
        output_dir,
        steps,
        lr,
        *(losses[0][1], losses[-1][1]) if losses else (math.nan, math.nan),
    )
    result = FinetuneResult(
        output_dir, steps, losses, [int(p.name.split("-")[-1]) for p in _checkpoints(output_dir)]
    )
    record = {
        "fingerprint": fingerprint,
        "steps": steps,
        "losses": losses,
        "checkpoints": result.checkpoints,
        "learning_rate": lr,
    }
    atomic_write_text(done, json.dumps(record) + "\n")
    return result


def _fingerprint(
    model_name: str, texts: Sequence[str], recipe: Mapping[str, Any], lr: float, seed: int, lora: Any
) -> str:
    """What a finished run depends on; a rerun with the same fingerprint returns the stored result."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode())
        digest.update(b"\0")
    settings = {"model": model_name, "recipe": dict(recipe), "lr": lr, "seed": seed, "lora": dict(lora or {})}
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return digest.hexdigest()
