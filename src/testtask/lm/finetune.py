"""Fine-tuning through the transformers Trainer, every protocol element a recipe value (`settings.Recipe`).

conf/training_on_the_test_task/finetune/recipe.yaml is what the authors' code ran
(socialfoundations/training-on-the-test-task @ c357810, `experiments/train.py`, `data_utils.py`,
`jobs_train.py`); `protocol=paper_text` gives App. B.2's text instead; the table in
docs/protocols/training-on-the-test-task.md lists each element and its source. Above 10B parameters the
same code runs under DeepSpeed ZeRO-3 (`accelerate launch`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback

from testtask.io import atomic_write_text
from testtask.lm.hf import load_tokenizer
from testtask.lm.recipe_rules import (
    PRECISION_MEANING,
    gradient_accumulation,
    peak_learning_rate,
    resolve_precision,
)
from testtask.lm.settings import Lora, LossOn, Recipe, Side, recipe_record
from testtask.provenance import code_record
from testtask.schema import to_plain

log = logging.getLogger("testtask.finetune")

IGNORE = -100  # the label the loss skips
Example = tuple[str, str] | str


def world_size() -> int:
    """Processes training together; WORLD_SIZE (set by the launcher) before the process group is up."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1"))


class SaveAtSteps(TrainerCallback):
    """Checkpoints at the listed optimizer steps and every `every` steps (emergence, Figures 8/19)."""

    def __init__(self, steps: Sequence[int], every: int | None = None):
        self.steps = {int(s) for s in steps}
        self.every = int(every) if every else None

    def wanted(self, step: int) -> bool:
        return step in self.steps or bool(self.every and step > 0 and step % self.every == 0)

    def on_step_end(self, args, state, control, **kwargs):
        # The last step is saved too, so that a rerun of a finished run resumes at its end instead of redoing it.
        if self.wanted(state.global_step) or state.global_step == state.max_steps:
            control.should_save = True
        return control


@dataclass
class FinetuneResult:
    output_dir: Path
    steps: int
    losses: list[tuple[int, float]]
    checkpoints: list[int]
    precision: str | None = None  # one of PRECISIONS (None: a run recorded before precision was)
    batch: dict[str, int] | None = None  # per_device × accumulation × world_size = effective
    # what the run depended on (`_fingerprint`); identifies the weights it wrote
    fingerprint: str | None = None
    zero3_partition: dict[str, int] | None = None  # this rank's ZeRO-3 shard as loaded (`zero3_partition`)
    trained: dict[str, Any] | None = None  # what the live Trainer ran (`trained_with`): autocast, ZeRO stage

    @property
    def first_loss(self) -> float:
        return self.losses[0][1]

    @property
    def last_loss(self) -> float:
        return self.losses[-1][1]


def as_pair(example: Example) -> tuple[str, str]:
    """A plain string is a whole document: empty prompt, everything is completion."""
    if isinstance(example, str):
        return "", example
    prompt, completion = example
    return str(prompt), str(completion)


def _ids(tokenizer: Any, text: str) -> list[int]:
    # The tokenizer's own special tokens (BOS for Llama-type), as the authors tokenised (data_utils.py:47-48).
    return list(tokenizer(text)["input_ids"]) if text else []


def encode(tokenizer: Any, example: Example, recipe: Recipe) -> dict[str, list[int]]:
    """input_ids and labels of one example, unpadded: the prompt's length from tokenising it alone
    (data_utils.py:46-48), its labels -100 with `loss_on: completion` (data_utils.py:26), EOS appended,
    then cut from `truncation_side` (data_utils.py:29-30)."""
    prompt, completion = as_pair(example)
    ids = _ids(tokenizer, prompt + completion)
    masked = len(_ids(tokenizer, prompt)) if recipe.loss_on == LossOn.completion and prompt else 0
    masked = min(masked, len(ids))
    labels = [IGNORE] * masked + ids[masked:]
    eos = tokenizer.eos_token_id
    end_ids = [eos] if recipe.add_eos and eos is not None else []
    end_labels = [eos if recipe.train_eos else IGNORE] * len(end_ids)
    max_length = recipe.max_length
    if recipe.truncation_side == Side.left:
        ids, labels = (ids + end_ids)[-max_length:], (labels + end_labels)[-max_length:]
    else:
        keep = max_length - len(end_ids)  # the end of the text is cut, EOS still closes the sequence
        ids, labels = ids[:keep] + end_ids, labels[:keep] + end_labels
    return {"input_ids": ids, "labels": labels}


def tokenize(tokenizer: Any, examples: Sequence[Example], recipe: Recipe) -> list[dict[str, list[int]]]:
    """Every example encoded (see `encode`)."""
    return [encode(tokenizer, example, recipe) for example in examples]


class PadCollator:
    """Pads a batch to its longest sequence (or `max_length`), masking labels by position (EOS stays trained
    when pad == EOS); `attend_padding`: pads get attention 1, as the authors' collator (no attention_mask)."""

    def __init__(self, pad_id: int, recipe: Recipe, padding_side: str):
        self.pad_id = int(pad_id)
        self.length = recipe.max_length if recipe.pad_to_max_length else None
        self.attend_padding = recipe.attend_padding
        if padding_side not in set(Side):  # the tokenizer's own side may be anything
            raise ValueError(f"padding side must be 'left' or 'right', got {padding_side!r}")
        self.side = padding_side

    def __call__(self, features: Sequence[Mapping[str, Sequence[int]]]) -> dict[str, torch.Tensor]:
        width = max(len(f["input_ids"]) for f in features)
        width = max(width, self.length or 0)
        batch: dict[str, list[list[int]]] = {"input_ids": [], "labels": [], "attention_mask": []}
        for f in features:
            n = width - len(f["input_ids"])
            parts = {
                "input_ids": (list(f["input_ids"]), [self.pad_id] * n),
                "labels": (list(f["labels"]), [IGNORE] * n),
                "attention_mask": ([1] * len(f["input_ids"]), [int(self.attend_padding)] * n),
            }
            for key, (content, pad) in parts.items():
                batch[key].append(pad + content if self.side == "left" else content + pad)
        return {k: torch.tensor(v, dtype=torch.long) for k, v in batch.items()}


def uses_bf16(recipe: Recipe, device: str, parameters: float = 0.0, explicit: str | None = None) -> bool:
    """Whether the Trainer runs bf16 autocast (`--bf16`): for `bf16` and `bf16-mixed`."""
    return resolve_precision(recipe, device, parameters, explicit) != "fp32"


def weights_dtype(choice: str) -> torch.dtype:
    """The dtype the model is loaded (and its weights updated) in: bf16 only for pure `bf16`."""
    return torch.bfloat16 if choice == "bf16" else torch.float32


def deepspeed_config(recipe: Recipe) -> str | None:
    """`deepspeed`, else under `accelerate launch` with DeepSpeed `zero3_config` (from the repo root)."""
    from testtask.paths import resolve

    path = recipe.deepspeed
    if not path and os.environ.get("ACCELERATE_USE_DEEPSPEED", "false").lower() == "true":
        path = recipe.zero3_config
    return str(resolve(path)) if path else None


def deepspeed_arch_list(value: str) -> str:
    """`TORCH_CUDA_ARCH_LIST` without letter suffixes (`9.0a` -> `9.0`, `+PTX` kept), duplicates dropped:
    deepspeed 0.19.8's op builder takes `int()` of each part, so `9.0a` (some CUDA images) fails its build."""
    entries: list[str] = []
    for entry in value.replace(" ", ";").split(";"):
        cc, plus, ptx = entry.strip().partition("+")
        cc = re.sub(r"(?<=\d)[a-z]+(?=\.|$)", "", cc)
        if cc and cc not in entries and f"{cc}+PTX" not in entries:
            entries.append(cc + plus + ptx)
    return ";".join(entries)


def start_deepspeed_distributed(recipe: Recipe, device: str) -> None:
    """Under a launcher with a DeepSpeed config, start DeepSpeed's process group before TrainingArguments:
    on the CPU the Trainer would leave DeepSpeed a world size of 1, failing its batch check."""
    if not deepspeed_config(recipe) or "WORLD_SIZE" not in os.environ:
        return
    arch = os.environ.get("TORCH_CUDA_ARCH_LIST")
    readable = deepspeed_arch_list(arch) if arch else arch
    if readable != arch:
        log.warning("TORCH_CUDA_ARCH_LIST %r read as %r for DeepSpeed's op builds", arch, readable)
        os.environ["TORCH_CUDA_ARCH_LIST"] = readable
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return
    import deepspeed

    deepspeed.init_distributed(dist_backend="nccl" if device.startswith("cuda") else "gloo")


def leave_process_group() -> None:
    """Destroy this rank's process group, if it joined one, before the process ends: PyTorch asks every rank to,
    and one left alive at exit can abort the rank ("terminate called without an active exception")."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def zero3_partition(model: Any) -> dict[str, int] | None:
    """This rank's ZeRO-3 shard (`ds_tensor` against `ds_numel`), or None for a model not partitioned."""
    params = list(model.parameters())
    if not params or not all(hasattr(p, "ds_tensor") for p in params):
        return None
    return {
        "world_size": world_size(),
        "local_elements": sum(int(p.ds_tensor.numel()) for p in params),
        "full_elements": sum(int(p.ds_numel) for p in params),
        "parameters": len(params),
    }


def trained_with(trainer: Any) -> dict[str, Any]:
    """What the live Trainer ran (not the recipe): autocast, DeepSpeed ZeRO stage, optimizer class."""
    mixed = str(getattr(trainer.accelerator, "mixed_precision", "no") or "no")
    engine = getattr(trainer, "deepspeed", None)
    optimizer = getattr(trainer.optimizer, "optimizer", trainer.optimizer)  # accelerate's wrapper, unwrapped
    return {
        "autocast": "fp32" if mixed == "no" else mixed,
        "zero_stage": int(engine.zero_optimization_stage()) if engine is not None else None,
        "optimizer": f"{type(optimizer).__module__}.{type(optimizer).__qualname__}" if optimizer else None,
    }


def warmup(recipe: Recipe) -> float:
    """`warmup_steps` when above 0, else `warmup_ratio` (the Trainer takes ceil(total × ratio))."""
    if recipe.warmup_steps:
        return recipe.warmup_steps
    return float(recipe.warmup_ratio)


def scheduler(recipe: Recipe) -> tuple[str, dict[str, Any]]:
    """The Trainer's scheduler name and kwargs; cosine_with_min_lr decays to `final_lr_fraction` of the peak."""
    name = recipe.lr_scheduler_type
    kwargs: dict[str, Any] = {}
    if name == "cosine_with_min_lr":
        kwargs["min_lr_rate"] = float(recipe.final_lr_fraction)
    return name, kwargs


def gradient_checkpointing(recipe: Recipe, parameters: float) -> bool:
    """`gradient_checkpointing` true/false, or null: only at or above `gradient_checkpointing_threshold`
    parameters (the authors flag exactly their ≥ 11B models, model_utils.py)."""
    if recipe.gradient_checkpointing is None:
        return parameters >= float(recipe.gradient_checkpointing_threshold)
    return recipe.gradient_checkpointing


def training_arguments(
    recipe: Recipe,
    *,
    output_dir: Path,
    learning_rate: float,
    device: str,
    seed: int,
    parameters: float = 0.0,
    precision: str | None = None,
) -> Any:
    """The Trainer's arguments; per-device × accumulation × processes is the recipe's `batch_size`."""
    from transformers import TrainingArguments

    cuda = device.startswith("cuda")
    per_device = recipe.per_device_batch_size
    name, kwargs = scheduler(recipe)
    if recipe.epochs is None:
        raise ValueError("the recipe's epochs are null: the runner sets them for each run")
    return TrainingArguments(
        output_dir=str(output_dir),
        num_train_epochs=float(recipe.epochs),
        max_steps=recipe.max_steps or -1,  # -1: the Trainer's "no cap"
        per_device_train_batch_size=per_device,
        gradient_accumulation_steps=gradient_accumulation(recipe.batch_size, per_device, world_size()),
        learning_rate=learning_rate,
        optim=recipe.optim,
        adam_beta1=float(recipe.adam_beta1),
        adam_beta2=float(recipe.adam_beta2),
        adam_epsilon=float(recipe.adam_epsilon),
        weight_decay=float(recipe.weight_decay),
        max_grad_norm=float(recipe.max_grad_norm),
        warmup_steps=warmup(recipe),
        lr_scheduler_type=name,
        lr_scheduler_kwargs=kwargs,
        bf16=uses_bf16(recipe, device, parameters, precision),
        activation_checkpointing=gradient_checkpointing(recipe, parameters),
        deepspeed=deepspeed_config(recipe),
        use_cpu=not cuda,
        seed=seed,
        data_seed=seed,
        logging_steps=recipe.logging_steps,
        logging_first_step=True,
        save_strategy="no",  # SaveAtSteps asks for every checkpoint
        save_total_limit=recipe.save_total_limit,
        report_to=[],
        disable_tqdm=not recipe.progress,
    )


def _checkpoints(output_dir: Path) -> list[Path]:
    found = [p for p in output_dir.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.split("-")[-1]))


def _resumable(output_dir: Path) -> Path | None:
    """The newest checkpoint with trainer_state.json (written last: one without it was cut short)."""
    for checkpoint in reversed(_checkpoints(output_dir)):
        if (checkpoint / "trainer_state.json").is_file():
            return checkpoint
        log.warning("%s has no trainer_state.json (cut short while saving): not resuming from it", checkpoint)
    return None


def padding_side(recipe: Recipe, tokenizer: Any) -> str:
    """`padding_side` left/right, or null for the tokenizer's own side (right when it has none)."""
    return str(recipe.padding_side or tokenizer.padding_side or Side.right)


def attention(recipe: Recipe, device: str, precision: str = "bf16") -> str | None:
    """`attn_implementation`; `auto`: FlashAttention-2 on sm >= 80 when installed (train.py:48-63), never
    for fp32 (its kernels take only fp16/bf16 inputs)."""
    choice = recipe.attn_implementation
    if choice != "auto":
        return choice or None
    if precision == "fp32" or not device.startswith("cuda") or torch.cuda.get_device_capability(0)[0] < 8:
        return None
    import importlib.util

    return "flash_attention_2" if importlib.util.find_spec("flash_attn") else None


def _load_model(
    model_name: str,
    *,
    device: str,
    parameters: float,
    recipe: Recipe,
    trust_remote_code: bool,
    lora: Lora | None,
    adapter: str | Path | None,
    precision: str | None = None,
    model_kwargs: Mapping[str, Any] | None = None,
) -> Any:
    from transformers import AutoModelForCausalLM

    chosen = resolve_precision(recipe, device, parameters, precision)
    model = AutoModelForCausalLM.from_pretrained(
        model_name,
        dtype=weights_dtype(chosen),
        trust_remote_code=trust_remote_code,
        attn_implementation=attention(recipe, device, chosen),
        **dict(model_kwargs or {}),
    )
    if not (lora and lora.enabled):
        return model
    from peft import LoraConfig, PeftModel, get_peft_model

    if adapter:  # continue training an adapter (stage e1+2 on top of e1's LoRA)
        return PeftModel.from_pretrained(model, str(adapter), is_trainable=True)
    targets = lora.target_modules
    return get_peft_model(
        model,
        LoraConfig(
            r=lora.r,
            lora_alpha=lora.alpha,
            lora_dropout=float(lora.dropout),
            target_modules=targets if targets is None or isinstance(targets, str) else list(targets),
            task_type="CAUSAL_LM",
        ),
    )


def finetune(
    model_name: str,
    texts: Sequence[Example],
    output_dir: str | Path,
    recipe: Recipe,
    *,
    parameters: float,
    learning_rate: float | None = None,
    device: str = "cpu",
    seed: int = 0,
    lora: Lora | None = None,
    trust_remote_code: bool = False,
    adapter: str | Path | None = None,
    precision: str | None = None,
    model_kwargs: Mapping[str, Any] | None = None,
    callbacks: Sequence[Any] = (),
) -> FinetuneResult:
    """Fine-tune `model_name` on `texts` into `output_dir/final`, the run's record in finished.json.
    Every process of a launcher calls this with the same arguments."""
    from transformers import Trainer, set_seed

    output_dir = Path(output_dir)
    final = output_dir / "final"
    lr = peak_learning_rate(recipe, parameters, learning_rate)
    fingerprint = _fingerprint(model_name, texts, recipe, lr, seed, lora, adapter, precision, model_kwargs)
    done = output_dir / "finished.json"
    if done.is_file():
        record = json.loads(done.read_text())
        if record.get("fingerprint") == fingerprint:
            log.info("%s is finished (%d steps); not retraining", output_dir, record["steps"])
            return _result(output_dir, record)
    set_seed(seed)
    chosen = resolve_precision(recipe, device, parameters, precision)
    # TrainingArguments before the model: under ZeRO-3 the model is then loaded sharded (zero.Init), train.py:257,267.
    # They also start torch.distributed under torchrun; the accumulation was computed from WORLD_SIZE before that.
    start_deepspeed_distributed(recipe, device)
    args = training_arguments(
        recipe,
        output_dir=output_dir,
        learning_rate=lr,
        device=device,
        seed=seed,
        parameters=parameters,
        precision=chosen,
    )
    batch = {
        "per_device": int(args.per_device_train_batch_size),
        "accumulation": int(args.gradient_accumulation_steps),
        "world_size": int(args.world_size),
    }
    batch["effective"] = batch["per_device"] * batch["accumulation"] * batch["world_size"]
    if batch["effective"] != recipe.batch_size:  # WORLD_SIZE disagreed with the process group
        raise RuntimeError(
            f"effective batch {batch['per_device']} × {batch['accumulation']} × {batch['world_size']} processes = "
            f"{batch['effective']}, the recipe's batch_size is {recipe.batch_size}"
        )
    # `model_kwargs`: more from_pretrained arguments (a pinned `revision`, the registry's `model_args`); the
    # tokenizer is read at the same revision.
    revision = (model_kwargs or {}).get("revision")
    tokenizer = load_tokenizer(model_name, trust_remote_code=trust_remote_code, revision=revision)
    model = _load_model(
        model_name,
        device=device,
        parameters=parameters,
        recipe=recipe,
        trust_remote_code=trust_remote_code,
        lora=lora,
        adapter=adapter,
        precision=chosen,
        model_kwargs=model_kwargs,
    )
    partition = zero3_partition(model)  # loaded sharded under ZeRO-3: each rank holds 1/world_size
    if partition:
        log.info(
            "ZeRO-3: this rank holds %d of %d parameter elements (%d ranks)",
            partition["local_elements"],
            partition["full_elements"],
            partition["world_size"],
        )
    features = tokenize(tokenizer, texts, recipe)
    callbacks = [SaveAtSteps(recipe.save_steps or [], recipe.save_every), *callbacks]
    collate = PadCollator(tokenizer.pad_token_id, recipe, padding_side(recipe, tokenizer))
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=features,
        data_collator=collate,
        processing_class=tokenizer,  # every checkpoint carries the tokenizer, so lm-eval can load it (train.py:304)
        callbacks=callbacks,
    )
    resume = _resumable(output_dir)
    if resume:
        log.info("resuming %s from %s", output_dir, resume.name)
    started = time.perf_counter()
    trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    # this process's training (a resumed run's earlier processes not included)
    seconds = time.perf_counter() - started
    trainer.save_model(str(final))
    main = trainer.is_world_process_zero()
    trained = trained_with(trainer)
    if main:
        tokenizer.save_pretrained(str(final))
    trainer.accelerator.wait_for_everyone()  # every rank lists the same checkpoints and sees the final model
    losses = [(int(e["step"]), float(e["loss"])) for e in trainer.state.log_history if "loss" in e]
    steps = int(trainer.state.global_step)
    log.info(
        "%s: %d steps at peak lr %.1e (%s, batch %d × %d × %d), loss %.3f -> %.3f",
        output_dir,
        steps,
        lr,
        chosen,
        batch["per_device"],
        batch["accumulation"],
        batch["world_size"],
        *(losses[0][1], losses[-1][1]) if losses else (math.nan, math.nan),
    )
    record = {
        "fingerprint": fingerprint,
        "steps": steps,
        "losses": losses,
        "checkpoints": [int(p.name.split("-")[-1]) for p in _checkpoints(output_dir)],
        "learning_rate": lr,
        "model": str(model_name),
        "adapter": str(adapter) if adapter else None,
        "precision": chosen,
        "precision_meaning": PRECISION_MEANING[chosen],
        "weights_dtype": str(weights_dtype(chosen)).removeprefix("torch."),
        "deepspeed": args.deepspeed,
        "zero3_partition": partition,  # the main rank's shard, as loaded (null without ZeRO-3)
        "trained": trained,  # autocast, ZeRO stage and optimizer as the live Trainer ran them
        "device": device,
        "batch": batch,
        "resumed_from": resume.name if resume else None,  # the checkpoint continued (null: from step 0)
        "seed": seed,
        "max_steps": args.max_steps if args.max_steps and args.max_steps > 0 else None,  # null: by epochs
        "train_seconds": round(seconds, 1),  # since `resumed_from` where set
        "code": code_record(),  # the checkout's commit; not in the fingerprint, so a new commit resumes
    }
    if main:
        atomic_write_text(done, json.dumps(record) + "\n")
    trainer.accelerator.wait_for_everyone()
    return _result(output_dir, record)


def _result(output_dir: Path, record: Mapping[str, Any]) -> FinetuneResult:
    """The result a finished.json record describes."""
    return FinetuneResult(
        output_dir,
        record["steps"],
        [tuple(x) for x in record["losses"]],
        record["checkpoints"],
        record.get("precision"),
        record.get("batch"),
        record["fingerprint"],
        record.get("zero3_partition"),
        record.get("trained"),
    )


def _fingerprint(
    model_name: str,
    texts: Sequence[Example],
    recipe: Recipe,
    lr: float,
    seed: int,
    lora: Lora | None,
    adapter: str | Path | None = None,
    precision: str | None = None,
    model_kwargs: Mapping[str, Any] | None = None,
) -> str:
    """What a finished run depends on; a rerun with the same fingerprint returns the stored result."""
    digest = hashlib.sha256()
    for example in texts:
        prompt, completion = as_pair(example)
        # A plain string and ("", string) train the same way; the separator keeps the split in the hash.
        digest.update(prompt.encode() + b"\x1f" + completion.encode() if prompt else completion.encode())
        digest.update(b"\0")
    settings = {
        "model": model_name,
        "recipe": recipe_record(recipe),
        "lr": lr,
        "seed": seed,
        "lora": to_plain(lora) if lora is not None else {},
        "adapter": str(adapter) if adapter else None,
    }
    if precision is not None:  # an explicit precision (absent otherwise, so earlier fingerprints still match)
        settings["precision"] = precision
    if model_kwargs:  # a revision or model arguments load different weights
        settings["model_kwargs"] = dict(model_kwargs)
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return digest.hexdigest()
