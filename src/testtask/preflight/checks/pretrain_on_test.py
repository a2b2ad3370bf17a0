"""Pretrain-on-test: the zero-shot protocol (QLoRA NF4 on a GPU; plain LoRA on the CPU) with padding and with
packing, and the few-shot protocol on tiny BERT and GPT-2, through the runner's own code.

The settings are the runner's: `conf/pretrain_on_test_run.yaml` composed with `lm=mistral_qlora` (or
`mistral_qlora_packing`, `bert`, `gpt2`) and overrides that point the model at a tiny random one and shrink the
cell (m, n, epochs); the protocol object is the one `cell.make_protocol` builds and one repetition's
`protocol.run` is what a cell runs per repetition.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from testtask.preflight import data as fixtures
from testtask.preflight import models
from testtask.preflight.registry import check

ZERO_SHOT = {"m": 3, "n": 24}  # padding: 2 steps of 16 per pretraining; packing: 3 packs of 8, batch 1
FEW_SHOT = {"m": 6, "n": 12}
FEW_SHOT_FAST = [
    "lm.pretrain.epochs=1",
    "lm.classify.epochs=1",
    "lm.pretrain.batch_size=4",
    "lm.classify.batch_size=4",
    "lm.classify.eval_batch_size=8",
    "lm.pretrain.max_length=32",
    "lm.classify.max_length=32",
]


def compose(*overrides: str):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    from testtask.paths import conf_dir

    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = hydra_compose("pretrain_on_test_run", overrides=list(overrides))
    OmegaConf.set_struct(cfg, False)
    return cfg


def _data(ctx) -> tuple[Path, dict]:
    def build():
        folder = ctx.folder("pot-data")
        return folder, fixtures.write_classification(folder)

    return ctx.cached("pot-data", build)


def _model(ctx, kind: str) -> Path:
    def build():
        texts = [*fixtures.classification_frame()["text"], fixtures.PROMPT_TEXT]
        size = models.SMALL if kind == "llama" else models.TINY
        return models.build(kind, ctx.folder(f"pot-{kind}"), texts, size)

    return ctx.cached(f"pot-{kind}", build)


def run_repetition(
    ctx, lm_name: str, kind: str, cell: dict[str, int], *overrides: str
) -> tuple[Any, dict, dict]:
    """One repetition of a cell with `lm=<lm_name>` on the tiny `kind` model: (protocol, accuracies, record)."""
    from testtask.pretrain_on_test.runner import subsample
    from testtask.pretrain_on_test.runner.cell import make_protocol
    from testtask.pretrain_on_test.runner.datasets import load_dataset
    from testtask.runners import settings_of

    folder, spec_config = _data(ctx)
    cfg = compose(
        f"lm={lm_name}",
        f"lm.model={_model(ctx, kind)}",
        f"dataset={fixtures.DATASET}",
        f"m={cell['m']}",
        f"n={cell['n']}",
        f"device={ctx.device}",
        f"assets_dir={folder}",
        "show_step_progress=false",
        *overrides,
    )
    cfg.datasets[fixtures.DATASET] = spec_config  # the fixture joins the registry, as an own dataset would
    settings = settings_of("pretrain-on-test", cfg)
    spec, lm = settings.spec, settings.lm_for_task()
    data = load_dataset(spec, folder)
    seed = settings.seed
    sub = subsample.draw(
        data["label"].to_numpy(),
        cell["m"],
        cell["n"],
        seed=seed,
        dataset=spec.key,
        repetition=0,
        stratification=settings.stratification,
    )
    protocol = make_protocol(lm, spec, ctx.device, False)
    acc, record = protocol.run(data, sub, subsample.training_seed(seed, 0))
    for name, value in acc.items():
        if not 0.0 <= value <= 1.0:
            raise AssertionError(f"acc_{name} = {value} is not an accuracy")
    for key, value in record.items():
        if key.endswith("_loss") and not math.isfinite(value):
            raise AssertionError(f"{key} is {value}")
    return protocol, acc, record


def _four_bit_layers(model: Any) -> tuple[int, set[str]]:
    """bitsandbytes `Linear4bit` layers of `model` and the storage dtypes of their weights (uint8: packed NF4)."""
    layers = [m for m in model.modules() if type(m).__name__ == "Linear4bit"]
    return len(layers), {str(m.weight.dtype).removeprefix("torch.") for m in layers}


def zero_shot(ctx, mode: str) -> dict[str, Any]:
    """The authors' QLoRA recipe (NF4, paged 8-bit AdamW) on the device: on the CPU as on a GPU."""
    lm_name = "mistral_qlora_packing" if mode == "packing" else "mistral_qlora"
    protocol, acc, record = run_repetition(ctx, lm_name, "llama", ZERO_SHOT)
    quantization = str(protocol.lm.quantization)
    four_bit, storage = _four_bit_layers(protocol.model)
    trained_four_bit, _ = _four_bit_layers(protocol.training_model)
    if quantization != "nf4":
        raise AssertionError(f"lm={lm_name} should quantize to nf4, has quantization={quantization}")
    if not four_bit or not trained_four_bit or storage != {"uint8"}:
        raise AssertionError(
            f"NF4 is off: {four_bit} scoring and {trained_four_bit} training Linear4bit layers, "
            f"weights stored as {sorted(storage)} (packed NF4 is uint8)"
        )
    optim = record["pretrain_extra_optim"]
    prefix = "pretrain_extra_optimizer_"  # TrainStats.as_dict's keys of describe_optimizer
    optimizer = {k.removeprefix(prefix): v for k, v in record.items() if k.startswith(prefix)}
    if optim != protocol.lm.pretrain.optim:
        raise AssertionError(f"the optimizer should be {protocol.lm.pretrain.optim}, ran {optim}")
    if optim == "paged_adamw_8bit" and not (
        optimizer.get("class", "").startswith("bitsandbytes.")
        and optimizer.get("paging_requested")
        and optimizer.get("eight_bit", 0) > 0
    ):
        raise AssertionError(f"optim=paged_adamw_8bit, yet the optimizer that stepped is {optimizer}")
    sequences = len(protocol.pretraining_features(["x"] * ZERO_SHOT["n"]))
    return {
        "quantization": quantization,
        "linear4bit_layers": four_bit,
        "weight_storage": sorted(storage),
        "optim": optim,
        "optimizer": optimizer.get("class"),
        "optimizer_states": optimizer.get("states"),
        "optimizer_8bit_states": optimizer.get("eight_bit"),
        # paged (CUDA unified memory) states: parameters of >= 100,000 elements on CUDA; none on the CPU
        "optimizer_paged_states": optimizer.get("paged"),
        "precision": str(protocol.lm.pretrain.precision) if ctx.cuda else "fp32",
        "training_sequences": sequences,
        "tokens_per_second": record["pretrain_test_tokens_per_second"],
        "positions_per_second": record["pretrain_test_positions"] / record["pretrain_test_seconds"],
        "tokens_per_second_extra": record["pretrain_extra_tokens_per_second"],
        "loss_extra": record["pretrain_extra_loss"],
        "loss_test": record["pretrain_test_loss"],
        **{f"acc_{name}": value for name, value in acc.items()},
    }


@check(
    "pot_zeroshot_padding",
    "pretrain-on-test zero-shot: QLoRA (NF4, paged 8-bit AdamW) pretraining + CAPPr scoring, padded prompts",
)
def pot_zeroshot_padding(ctx) -> dict[str, Any]:
    return zero_shot(ctx, "padding")


@check(
    "pot_zeroshot_packing",
    "pretrain-on-test zero-shot: QLoRA (NF4, paged 8-bit AdamW) pretraining + CAPPr scoring, packed texts",
)
def pot_zeroshot_packing(ctx) -> dict[str, Any]:
    return zero_shot(ctx, "packing")


def few_shot(ctx, kind: str) -> dict[str, Any]:
    _, acc, record = run_repetition(ctx, kind, kind, FEW_SHOT, *FEW_SHOT_FAST)
    return {
        **{f"acc_{name}": value for name, value in acc.items()},
        "pretrain_loss": record["pretrain_test_loss"],
        "classify_loss": record["classify_test_loss"],
        "pretrain_tokens_per_second": record["pretrain_test_tokens_per_second"],
        "classify_tokens_per_second": record["classify_test_tokens_per_second"],
    }


@check("pot_fewshot_bert", "pretrain-on-test few-shot on a tiny BERT: masked-LM pretraining + classifier")
def pot_fewshot_bert(ctx) -> dict[str, Any]:
    return few_shot(ctx, "bert")


@check("pot_fewshot_gpt2", "pretrain-on-test few-shot on a tiny GPT-2: causal-LM pretraining + classifier")
def pot_fewshot_gpt2(ctx) -> dict[str, Any]:
    return few_shot(ctx, "gpt2")
